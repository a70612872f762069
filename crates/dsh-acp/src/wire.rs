//! The byte streams under the JSON-RPC connection: [`serve_streams`] reads
//! the client's lines in bounded memory and answers the lines the
//! protocol crate cannot take itself, so that no input ends the
//! connection.
//!
//! - A line of valid UTF-8 up to the limit goes to the protocol crate as
//!   it is (which answers bad JSON with a parse error, `-32700`).
//! - A line that is not valid UTF-8 is answered here with a parse error
//!   (`-32700`, `id: null`) saying where the first invalid byte is.
//! - A line longer than the limit is dropped as it streams in (never held
//!   whole: only its first 4 KiB are kept) and answered with
//!   an invalid request (`-32600`, "Line too long") naming the limit. When
//!   those first bytes hold the request's top-level `"method"` and `"id"`
//!   (a request, not a response or a notification), the answer carries
//!   that id, so the client's request fails at once instead of waiting for
//!   ever; otherwise the id is `null`.
//!
//! Every line written to the output, the protocol crate's and these
//! answers, goes through one writer task, one whole line at a time.

use std::io;

use agent_client_protocol::Lines;
use dsh::Settings;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The default longest line `dsh acp` takes (64 MiB, without the newline);
/// `dsh acp --max-line-bytes` changes it.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Bytes read from the input at a time.
const CHUNK: usize = 64 * 1024;
/// Lines queued for the writer before senders wait.
const QUEUE: usize = 64;
/// Bytes kept of the start of a line over the limit, where its id is
/// looked for (a request's `"jsonrpc"`, `"id"` and `"method"` come first).
const HEAD_KEEP: usize = 4 * 1024;

/// Serves ACP ([`crate::serve`]) on a byte stream pair (`dsh acp`: stdin
/// and stdout), reading lines of at most `max_line_bytes` bytes (without
/// the newline) as described in the module docs. Returns when the client
/// closes `input` (or the connection fails), once every line the
/// connection produced is written and `output` flushed.
///
/// # Errors
/// Reading `input` or writing `output` failed, or the client broke the
/// protocol. Invalid UTF-8 and over-long lines are not errors: they are
/// answered and serving goes on.
pub async fn serve_streams<R, W>(
    settings: Settings,
    input: R,
    output: W,
    max_line_bytes: usize,
) -> Result<(), agent_client_protocol::Error>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<String>(QUEUE);
    let outgoing = futures_util::sink::unfold(tx.clone(), |tx, line: String| async move {
        tx.send(line).await.map_err(|_| writer_gone())?;
        Ok::<_, io::Error>(tx)
    });
    let incoming = incoming_lines(LineReader::new(input, max_line_bytes), tx);
    let served = crate::serve(settings, Lines::new(outgoing, incoming));
    // `join!` drops `served` when it ends, and with it the last sender: the
    // writer then drains the queue and returns.
    let (served, written) = tokio::join!(served, write_lines(rx, output));
    served?;
    written.map_err(agent_client_protocol::Error::into_internal_error)
}

fn writer_gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the output writer stopped")
}

/// Writes each queued line and a newline, flushing whenever the queue is
/// empty; ends when every sender is gone (then flushes and shuts `output`
/// down) or on the first write error.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut rx: mpsc::Receiver<String>,
    mut output: W,
) -> io::Result<()> {
    while let Some(line) = rx.recv().await {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        output.write_all(&bytes).await?;
        if rx.is_empty() {
            output.flush().await?;
        }
    }
    output.flush().await?;
    output.shutdown().await
}

/// The lines the protocol crate gets: valid ones pass, the others are
/// answered through `answers` (the writer's queue) and skipped.
fn incoming_lines<R>(
    reader: LineReader<R>,
    answers: mpsc::Sender<String>,
) -> impl futures_util::Stream<Item = io::Result<String>> + Send + 'static
where
    R: AsyncRead + Unpin + Send + 'static,
{
    futures_util::stream::unfold(Some((reader, answers)), |state| async move {
        let (mut reader, answers) = state?;
        loop {
            let answer = match reader.next().await {
                Ok(Read::Line(bytes)) => match String::from_utf8(bytes) {
                    Ok(line) => return Some((Ok(line), Some((reader, answers)))),
                    Err(e) => not_utf8(e.utf8_error().valid_up_to()),
                },
                Ok(Read::TooLong { len, head }) => too_long(len, reader.max, &head),
                Ok(Read::End) => return None,
                // The crate ends the connection on an input error;
                // nothing is read after it.
                Err(e) => return Some((Err(e), None)),
            };
            if answers.send(answer).await.is_err() {
                return Some((Err(writer_gone()), None));
            }
        }
    })
}

/// The answer to a line that is not UTF-8: a parse error like the one the
/// protocol crate gives a line that is not JSON.
fn not_utf8(valid_up_to: usize) -> String {
    tracing::warn!(target: "dsh_acp", "a line that is not UTF-8 was answered with a parse error");
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32700,
            "message": "Parse error",
            "data": {
                "message": format!(
                    "the line is not valid UTF-8 (invalid byte at offset {valid_up_to}); it was ignored"
                ),
            },
        },
    })
    .to_string()
}

/// The answer to a line over the limit, of `len` bytes, starting with
/// `head`: for the request's id when `head` shows the line is a request and
/// holds its id (see the module docs), else for `null`.
fn too_long(len: u64, max: usize, head: &[u8]) -> String {
    use dsh_protocol::jsonrpc::{has_top_level_key, leading_id};
    let id = if has_top_level_key(head, "method") {
        leading_id(head)
    } else {
        None
    };
    tracing::warn!(target: "dsh_acp", bytes = len, max, id = ?id, "a line over --max-line-bytes was discarded");
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32600,
            "message": "Line too long",
            "data": {
                "message": format!(
                    "a line of {len} bytes is over the limit of {max} bytes (dsh acp --max-line-bytes); it was discarded"
                ),
                "maxLineBytes": max,
            },
        },
    })
    .to_string()
}

/// What [`LineReader::next`] found.
#[derive(Debug, PartialEq, Eq)]
enum Read {
    /// A line of at most the limit, without its `\n` (or `\r\n`).
    Line(Vec<u8>),
    /// A line over the limit: its length in bytes and its first (at most
    /// [`HEAD_KEEP`]) bytes; the rest was not kept.
    TooLong {
        /// The whole line's length, without the newline.
        len: u64,
        /// The line's first bytes.
        head: Vec<u8>,
    },
    /// The end of the input.
    End,
}

/// Splits a byte stream into lines, holding at most `max` bytes of a line
/// (plus one read chunk, and the [`HEAD_KEEP`] bytes kept of a line over
/// `max`) whatever its length. A last line without a
/// newline counts as a line.
struct LineReader<R> {
    input: R,
    max: usize,
    chunk: Box<[u8]>,
    /// The unread part of `chunk`.
    start: usize,
    end: usize,
    /// The current line so far (while within the limit).
    line: Vec<u8>,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    fn new(input: R, max: usize) -> Self {
        LineReader {
            input,
            max,
            chunk: vec![0; CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            line: Vec::new(),
            eof: false,
        }
    }

    /// The next line.
    ///
    /// # Errors
    /// The input's read error.
    async fn next(&mut self) -> io::Result<Read> {
        // Some((length so far, first bytes)) while an over-long line is
        // being dropped.
        let mut dropping: Option<(u64, Vec<u8>)> = None;
        loop {
            if self.start == self.end {
                let n = if self.eof {
                    0
                } else {
                    self.input.read(&mut self.chunk).await?
                };
                if n == 0 {
                    self.eof = true;
                    if let Some((len, head)) = dropping {
                        return Ok(Read::TooLong { len, head });
                    }
                    if self.line.is_empty() {
                        return Ok(Read::End);
                    }
                    return Ok(Read::Line(self.take_line()));
                }
                self.start = 0;
                self.end = n;
            }
            let avail = &self.chunk[self.start..self.end];
            let (part, used, done) = match memchr::memchr(b'\n', avail) {
                Some(i) => (&avail[..i], i + 1, true),
                None => (avail, avail.len(), false),
            };
            match dropping.as_mut() {
                Some((len, _)) => *len += part.len() as u64,
                None if self.line.len() + part.len() > self.max => {
                    let len = (self.line.len() + part.len()) as u64;
                    // Keep the head; give the rest of the memory back now,
                    // not at the line's end.
                    let mut head = std::mem::take(&mut self.line);
                    head.truncate(HEAD_KEEP);
                    let room = HEAD_KEEP.saturating_sub(head.len());
                    head.extend_from_slice(&part[..part.len().min(room)]);
                    head.shrink_to_fit();
                    dropping = Some((len, head));
                }
                None => self.line.extend_from_slice(part),
            }
            self.start += used;
            if done {
                return Ok(match dropping {
                    Some((len, head)) => Read::TooLong { len, head },
                    None => Read::Line(self.take_line()),
                });
            }
        }
    }

    /// The current line without a trailing `\r`; the buffer starts afresh
    /// (a long line's memory is not kept for the next).
    fn take_line(&mut self) -> Vec<u8> {
        let mut line = std::mem::take(&mut self.line);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn all(input: &[u8], max: usize) -> Vec<Read> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        loop {
            match reader.next().await.unwrap() {
                Read::End => return out,
                r => out.push(r),
            }
        }
    }

    #[tokio::test]
    async fn lines_split_and_bound() {
        let big = vec![b'x'; 3 * CHUNK + 7];
        let mut input = b"a\r\nbb\n".to_vec();
        input.extend_from_slice(&big);
        input.extend_from_slice(b"\n\nccc");
        assert_eq!(
            all(&input, 4).await,
            [
                Read::Line(b"a".to_vec()),
                Read::Line(b"bb".to_vec()),
                Read::TooLong {
                    len: big.len() as u64,
                    head: big[..HEAD_KEEP].to_vec()
                },
                Read::Line(Vec::new()),
                Read::Line(b"ccc".to_vec()),
            ]
        );
        // Exactly the limit passes; one more byte does not.
        assert_eq!(
            all(b"abcd\nabcde", 4).await[0],
            Read::Line(b"abcd".to_vec())
        );
        assert_eq!(
            all(b"abcd\nabcde", 4).await[1],
            Read::TooLong {
                len: 5,
                head: b"abcde".to_vec()
            }
        );
    }

    /// The head of a dropped line is its first bytes however the reads
    /// split it, at most `HEAD_KEEP` of them.
    #[tokio::test]
    async fn a_dropped_line_keeps_its_first_bytes() {
        let mut line: Vec<u8> = (0..3 * CHUNK).map(|i| (i % 251) as u8).collect();
        line.retain(|b| *b != b'\n');
        for max in [5, 100, HEAD_KEEP - 1, HEAD_KEEP + 1, CHUNK + 3] {
            let mut input = b"ok\n".to_vec();
            input.extend_from_slice(&line);
            input.extend_from_slice(b"\nnext");
            let got = all(&input, max).await;
            assert_eq!(
                got[1],
                Read::TooLong {
                    len: line.len() as u64,
                    head: line[..HEAD_KEEP].to_vec()
                },
                "max {max}"
            );
            assert_eq!(got[2], Read::Line(b"next".to_vec()), "max {max}");
        }
    }

    fn answer(line: &str) -> serde_json::Value {
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn an_over_long_request_is_answered_for_its_id() {
        let head = br#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"xxxx"#;
        let got = answer(&too_long(1 << 20, 1024, head));
        assert_eq!(got["id"], 7, "{got}");
        assert_eq!(got["error"]["code"], -32600, "{got}");
        assert_eq!(got["error"]["data"]["maxLineBytes"], 1024, "{got}");
        let string_id = br#"{"method":"session/prompt","id":"r-1","params":{"#;
        assert_eq!(answer(&too_long(1 << 20, 1024, string_id))["id"], "r-1");
    }

    #[test]
    fn an_over_long_line_that_is_no_request_is_answered_for_null() {
        for head in [
            // A response to a request of ours: answering it would pair an
            // error with an id the client may be using for its own request.
            &br#"{"jsonrpc":"2.0","id":3,"result":{"content":"xxxx"#[..],
            // A notification: no id.
            br#"{"jsonrpc":"2.0","method":"session/cancel","params":{"#,
            // The id past the kept head, or cut by it.
            br#"{"jsonrpc":"2.0","method":"session/prompt","params":{"text":"xxxx"#,
            br#"{"jsonrpc":"2.0","method":"session/prompt","id":12"#,
            // Not JSON.
            b"xxxxxxxx",
        ] {
            let got = answer(&too_long(1 << 20, 1024, head));
            assert_eq!(got["id"], serde_json::Value::Null, "{got}");
            assert_eq!(got["error"]["code"], -32600, "{got}");
        }
    }
}
