//! Bounded reading of a server's output: a line (a JSON-RPC message on
//! stdout, a log line on stderr) never costs more memory than its limit.
//!
//! - [`read_line`] reads one `\n`-terminated line keeping at most `max`
//!   bytes of it (plus a short tail), however long it is.
//! - [`bound_messages`] sits between the server's stdout and rmcp: messages
//!   up to the limit pass through unchanged; a larger response is replaced
//!   by a JSON-RPC error for the same request id (found in the kept head or
//!   tail), so the call fails at once with `RESULT_TOO_LARGE` instead of
//!   waiting for its timeout. A too-large message whose id cannot be found
//!   is dropped and counted in [`Oversize`]. Every message that fits is
//!   screened for depth first ([`crate::depth::screen`]): a listing loses
//!   its too-deep or too-large tools, and a message too deep for rmcp's
//!   parser is answered like a too-large one, so nothing rmcp would drop
//!   leaves a request waiting for its timeout.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};

use dsh_protocol::jsonrpc::{leading_id, trailing_id};

use crate::depth::{screen, too_deep_message, Refusals, Screened, MAX_MESSAGE_DEPTH};

/// Default of [`McpServerConfig::max_message_bytes`](crate::McpServerConfig::max_message_bytes): 16 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Longest stderr line logged (64 KiB); the rest is cut.
pub(crate) const MAX_STDERR_LINE: usize = 64 * 1024;

/// The prefix of the error message synthesized for a too-large response;
/// [`crate::tools`] maps it to `RESULT_TOO_LARGE`.
pub(crate) const TOO_LARGE_MARKER: &str = "dsh: message too large:";

/// Bytes of a too-large message's end kept to find its id.
const TAIL_KEEP: usize = 256;
/// Bytes of a too-large message's start searched for its id.
const HEAD_SCAN: usize = 4096;
/// Capacity of the pipe between the filter and rmcp.
const PIPE_BYTES: usize = 64 * 1024;

/// One line read by [`read_line`].
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Line {
    /// The first `min(len, max)` bytes, without the newline.
    pub(crate) head: Vec<u8>,
    /// The line's whole length in bytes, without the newline.
    pub(crate) len: usize,
    /// When `len > max`: the last bytes of the line (at most the `tail`
    /// asked for), else empty.
    pub(crate) tail: Vec<u8>,
}

impl Line {
    /// Whether more than `max` bytes were cut.
    pub(crate) fn cut(&self) -> bool {
        self.len > self.head.len()
    }
}

/// Reads one line, keeping at most `max` bytes of it and the last `tail`
/// bytes beyond. A last line without a newline counts as a line.
///
/// # Errors
/// The reader's I/O error. `Ok(None)` at end of input.
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
    tail: usize,
) -> std::io::Result<Option<Line>> {
    let mut line = Line::default();
    let mut seen_any = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(seen_any.then_some(line));
        }
        seen_any = true;
        let (part, used, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..i], i + 1, true),
            None => (buf, buf.len(), false),
        };
        let room = max.saturating_sub(line.head.len());
        let kept = part.len().min(room);
        line.head.extend_from_slice(&part[..kept]);
        if kept < part.len() {
            line.tail.extend_from_slice(&part[kept..]);
            if line.tail.len() > tail {
                line.tail.drain(..line.tail.len() - tail);
            }
        }
        line.len += part.len();
        reader.consume(used);
        if done {
            return Ok(Some(line));
        }
    }
}

/// Counts too-large messages whose request id could not be found (they
/// were dropped; a call waiting for one ends with `RESULT_TOO_LARGE` at its
/// timeout instead of `TIMEOUT`).
#[derive(Debug, Default)]
pub(crate) struct Oversize {
    dropped: AtomicU64,
}

impl Oversize {
    /// How many were dropped so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::SeqCst)
    }
}

/// Filters `stdout` as described in the module docs, returning the reader
/// rmcp should use. The filter task ends at the end of `stdout` or when the
/// returned reader is dropped.
pub(crate) fn bound_messages<R>(
    server: String,
    stdout: R,
    max: usize,
    oversize: Arc<Oversize>,
    refusals: Arc<Refusals>,
) -> impl AsyncRead + Send + Unpin + 'static
where
    R: AsyncRead + Send + Unpin + 'static,
{
    let (to_rmcp, from_filter) = tokio::io::duplex(PIPE_BYTES);
    let (_, mut to_rmcp) = tokio::io::split(to_rmcp);
    tokio::spawn(async move {
        let mut reader = BufReader::new(stdout);
        loop {
            let line = match read_line(&mut reader, max, TAIL_KEEP).await {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(target: "dsh_mcp", server = %server, "reading stdout failed: {e}");
                    break;
                }
            };
            let out = if line.cut() {
                match too_large_reply(&line, max) {
                    Some(reply) => {
                        tracing::warn!(target: "dsh_mcp", server = %server, bytes = line.len, "MCP message above max_message_bytes; the call fails with RESULT_TOO_LARGE");
                        reply.into_bytes()
                    }
                    None => {
                        oversize.dropped.fetch_add(1, Ordering::SeqCst);
                        tracing::warn!(target: "dsh_mcp", server = %server, bytes = line.len, "MCP message above max_message_bytes without a request id; dropped");
                        continue;
                    }
                }
            } else {
                match screen(&line.head, &refusals) {
                    Screened::Pass => {
                        let mut bytes = line.head;
                        bytes.push(b'\n');
                        bytes
                    }
                    Screened::Rewritten(mut bytes) => {
                        bytes.push(b'\n');
                        bytes
                    }
                    Screened::TooDeep { depth } => {
                        match error_reply(&line, too_deep_message(depth)) {
                            Some(reply) => {
                                tracing::warn!(target: "dsh_mcp", server = %server, depth, "a message nested {depth} levels deep, too deep to parse (limit {MAX_MESSAGE_DEPTH}); its request fails");
                                reply.into_bytes()
                            }
                            None => {
                                tracing::warn!(target: "dsh_mcp", server = %server, depth, "a message nested {depth} levels deep, too deep to parse (limit {MAX_MESSAGE_DEPTH}), without a request id; dropped");
                                continue;
                            }
                        }
                    }
                }
            };
            if to_rmcp.write_all(&out).await.is_err() {
                break; // rmcp is gone
            }
        }
        let _ = to_rmcp.shutdown().await;
    });
    from_filter
}

/// The JSON-RPC error answering a too-large response, when its id can be
/// found (a request or notification from the server has no reply to make
/// and is dropped like one without an id).
fn too_large_reply(line: &Line, max: usize) -> Option<String> {
    let message = format!(
        "{TOO_LARGE_MARKER} the server sent a {} byte message, above max_message_bytes ({max})",
        line.len
    );
    error_reply(line, message)
}

/// A JSON-RPC error with `message` for the request `line` answers, when its
/// id can be found at the start of the line or at its end.
fn error_reply(line: &Line, message: String) -> Option<String> {
    let head = &line.head[..line.head.len().min(HEAD_SCAN)];
    let tail = if line.cut() {
        &line.tail[..]
    } else {
        &line.head[line.head.len().saturating_sub(TAIL_KEEP)..]
    };
    let id = leading_id(head).or_else(|| trailing_id(tail))?;
    let reply = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": -32603, "message": message },
    });
    Some(format!("{reply}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    async fn lines(input: &[u8], max: usize, tail: usize) -> Vec<Line> {
        let mut r = BufReader::with_capacity(7, input);
        let mut out = Vec::new();
        while let Some(l) = read_line(&mut r, max, tail).await.unwrap() {
            out.push(l);
        }
        out
    }

    #[tokio::test]
    async fn long_lines_keep_their_head_length_and_tail() {
        let got = lines(b"short\n0123456789abcdef\nlast", 8, 3).await;
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].head, b"short");
        assert!(!got[0].cut());
        assert_eq!(got[1].head, b"01234567");
        assert_eq!(got[1].len, 16);
        assert_eq!(got[1].tail, b"def");
        assert!(got[1].cut());
        assert_eq!(got[2].head, b"last", "an unterminated last line counts");
    }

    #[tokio::test]
    async fn a_large_response_becomes_an_error_for_its_id() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{{\"text\":\"{}\"}}}}\n{{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{{}}}}\n",
            "x".repeat(10_000)
        );
        let oversize = Arc::new(Oversize::default());
        let mut out = String::new();
        let input = std::io::Cursor::new(big.into_bytes());
        let mut r = bound_messages("s".into(), input, 1000, oversize.clone(), Arc::default());
        tokio::io::AsyncReadExt::read_to_string(&mut r, &mut out)
            .await
            .unwrap();
        let msgs: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0]["id"], 3);
        let message = msgs[0]["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(TOO_LARGE_MARKER), "{message}");
        assert!(message.contains("10045 byte"), "{message}");
        assert_eq!(
            msgs[1],
            serde_json::json!({"jsonrpc":"2.0","id":4,"result":{}})
        );
        assert_eq!(oversize.dropped(), 0);
    }

    proptest! {
        #[test]
        fn read_line_splits_like_lines_and_bounds_memory(
            text in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'a'), any::<u8>()], 0..400),
            max in 1usize..40,
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let got = rt.block_on(lines(&text, max, 5));
            let mut want: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
            if text.last() == Some(&b'\n') || text.is_empty() {
                want.pop();
            }
            prop_assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(want) {
                prop_assert_eq!(g.len, w.len());
                prop_assert_eq!(&g.head[..], &w[..w.len().min(max)]);
                prop_assert!(g.head.len() <= max && g.tail.len() <= 5);
                if w.len() > max {
                    let keep = (w.len() - max).min(5);
                    prop_assert_eq!(&g.tail[..], &w[w.len() - keep..]);
                }
            }
        }
    }
}
