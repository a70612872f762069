//! An incremental server-sent-events parser tuned for throughput.
//!
//! Bytes go in with [`SseParser::push`] in pieces of any size; complete data
//! payloads come out of [`SseParser::next_payload`] as `&str` borrowed from
//! the parser. Event boundaries are found with `memchr` on raw bytes (the
//! boundary bytes are ASCII, so this is equivalent to scanning decoded text);
//! a payload is UTF-8-validated in place and only copied when it spans several
//! `data:` lines or holds invalid bytes (which become U+FFFD). Buffers are
//! reused, so memory stays bounded by the largest single event, independent of
//! the stream's length.

/// The end-of-stream marker payload.
pub const DONE: &str = "[DONE]";

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An incremental SSE parser (see the module docs for the exact rules).
///
/// Framing, per the DeepSeek fact sheet d.1 (which is the WHATWG framing every provider here uses): an event ends at the first
/// `\r?\n\r?\n`; within it lines split on `\n` with one trailing `\r`
/// stripped; `data:` lines contribute their remainder minus one leading
/// space, joined with `\n`; every other line (comments, `event:`, `id:`,
/// `retry:`) is ignored; an event without `data:` yields nothing. A leading
/// UTF-8 BOM is dropped. Once the payload `[DONE]` was returned the parser
/// is [done](SseParser::is_done) and ignores everything else.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Unconsumed bytes; `buf[start..]` is live.
    buf: Vec<u8>,
    /// First unconsumed byte.
    start: usize,
    /// Where the next search for `\n` resumes (≥ `start`).
    scan: usize,
    /// Reused output buffer for multi-line or invalid-UTF-8 payloads.
    scratch: String,
    /// Whether the BOM check at the stream start is still pending.
    bom_checked: bool,
    /// `end()` was called: the rest of the buffer is a final event.
    ended: bool,
    /// The final (unterminated) event was already processed.
    tail_taken: bool,
    /// `[DONE]` was returned.
    done: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a piece of the byte stream. Ignored once [done](Self::is_done)
    /// or after [`end`](Self::end).
    pub fn push(&mut self, bytes: &[u8]) {
        if self.done || self.ended {
            return;
        }
        if self.start > 0 {
            // Compact: the live tail is at most one partial event.
            self.buf.drain(..self.start);
            self.scan -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
        self.check_bom();
    }

    /// Marks the end of the byte stream: the remaining bytes form one final,
    /// unterminated event that [`next_payload`](Self::next_payload) yields.
    pub fn end(&mut self) {
        self.ended = true;
        self.check_bom();
    }

    /// Whether the `[DONE]` payload was returned.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether the stream ended (see [`end`](Self::end)) and every payload
    /// was returned. Then, if not [done](Self::is_done), the stream lacked
    /// its `[DONE]` marker.
    pub fn is_exhausted(&self) -> bool {
        self.done || (self.ended && self.tail_taken)
    }

    /// Bytes currently buffered (at most one partial event plus what the
    /// last push added).
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next complete data payload, or `None` when more bytes are needed
    /// (or the stream is exhausted). Returning `[DONE]` makes the parser done.
    pub fn next_payload(&mut self) -> Option<&str> {
        if self.done || !self.bom_checked {
            return None;
        }
        while let Some((event_end, next_start)) = self.find_event_end() {
            let event_start = self.start;
            self.start = next_start;
            self.scan = next_start;
            if let Some(range) = self.extract(event_start, event_end) {
                return Some(self.finish_payload(range));
            }
        }
        if self.ended && !self.tail_taken {
            self.tail_taken = true;
            let (s, e) = (self.start, self.buf.len());
            self.start = e;
            self.scan = e;
            if let Some(range) = self.extract(s, e) {
                return Some(self.finish_payload(range));
            }
        }
        None
    }

    /// Drops a BOM at the very start once enough bytes are known.
    fn check_bom(&mut self) {
        if self.bom_checked {
            return;
        }
        let live = &self.buf[self.start..];
        let n = live.len().min(BOM.len());
        if live[..n] != BOM[..n] {
            self.bom_checked = true;
        } else if n == BOM.len() {
            self.start += BOM.len();
            self.scan = self.start;
            self.bom_checked = true;
        } else if self.ended {
            // A proper prefix of a BOM at end of stream is just bytes.
            self.bom_checked = true;
        }
    }

    /// Finds the first `\r?\n\r?\n` from `scan`; returns (end of event text,
    /// start of the next event). Remembers how far it looked.
    fn find_event_end(&mut self) -> Option<(usize, usize)> {
        let buf = &self.buf;
        let mut i = self.scan;
        while let Some(off) = memchr::memchr(b'\n', &buf[i..buf.len()]) {
            let nl = i + off;
            match buf.get(nl + 1) {
                Some(b'\n') => return Some((self.trim_cr(nl), nl + 2)),
                Some(b'\r') => match buf.get(nl + 2) {
                    Some(b'\n') => return Some((self.trim_cr(nl), nl + 3)),
                    Some(_) => i = nl + 1,
                    None => {
                        self.scan = nl;
                        return None;
                    }
                },
                Some(_) => i = nl + 1,
                None => {
                    self.scan = nl;
                    return None;
                }
            }
        }
        self.scan = buf.len();
        None
    }

    /// The event text ends before an optional `\r` preceding the first `\n`.
    fn trim_cr(&self, nl: usize) -> usize {
        if nl > self.start && self.buf[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        }
    }

    /// Collects the data of the event `buf[s..e]`. Returns where the payload
    /// lives: a byte range of `buf` (one data line) or the scratch buffer.
    fn extract(&mut self, s: usize, e: usize) -> Option<Payload> {
        let mut found: Option<Payload> = None;
        let mut line_start = s;
        while line_start <= e {
            let line_end =
                memchr::memchr(b'\n', &self.buf[line_start..e]).map_or(e, |off| line_start + off);
            let mut le = line_end;
            if le > line_start && self.buf[le - 1] == b'\r' {
                le -= 1;
            }
            let line = &self.buf[line_start..le];
            if let Some(rest) = line.strip_prefix(b"data:") {
                let mut ds = line_start + 5;
                if rest.first() == Some(&b' ') {
                    ds += 1;
                }
                found = Some(match found {
                    None => Payload::Range(ds, le),
                    Some(Payload::Range(a, b)) => {
                        self.scratch.clear();
                        push_lossy(&mut self.scratch, &self.buf[a..b]);
                        self.scratch.push('\n');
                        push_lossy(&mut self.scratch, &self.buf[ds..le]);
                        Payload::Scratch
                    }
                    Some(Payload::Scratch) => {
                        self.scratch.push('\n');
                        push_lossy(&mut self.scratch, &self.buf[ds..le]);
                        Payload::Scratch
                    }
                });
            }
            line_start = line_end + 1;
        }
        found
    }

    fn finish_payload(&mut self, p: Payload) -> &str {
        if let Payload::Range(a, b) = p {
            if let Ok(text) = std::str::from_utf8(&self.buf[a..b]) {
                self.done = text == DONE;
                return text;
            }
            self.scratch.clear();
            push_lossy(&mut self.scratch, &self.buf[a..b]);
        }
        self.done = self.scratch == DONE;
        &self.scratch
    }
}

#[derive(Debug, Clone, Copy)]
enum Payload {
    Range(usize, usize),
    Scratch,
}

/// Appends `bytes` decoded as UTF-8, invalid sequences as U+FFFD.
fn push_lossy(out: &mut String, bytes: &[u8]) {
    out.push_str(&String::from_utf8_lossy(bytes));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[&[u8]]) -> (Vec<String>, bool) {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for piece in input {
            p.push(piece);
            while let Some(x) = p.next_payload() {
                out.push(x.to_string());
            }
        }
        p.end();
        while let Some(x) = p.next_payload() {
            out.push(x.to_string());
        }
        (out, p.is_done())
    }

    #[test]
    fn framing_rules() {
        let (out, done) = all(&[b"data: a\n\ndata:b\r\n\r\ndata:\n\ndata:  c\r\n\n: hi\nevent: x\nid: 1\nretry: 5\n\ndata: l1\ndata: l2\n\ndata: [DONE]\n\ndata: never\n\n"]);
        assert_eq!(out, ["a", "b", "", " c", "l1\nl2", "[DONE]"]);
        assert!(done);
    }

    #[test]
    fn tail_event_and_bom() {
        let (out, done) = all(&[b"\xEF\xBB", b"\xBFdata: x\n\ndata: y"]);
        assert_eq!(out, ["x", "y"]);
        assert!(!done);
        let (out, _) = all(&[b""]);
        assert!(out.is_empty());
    }

    #[test]
    fn invalid_utf8_and_split_chars() {
        let s = "data: 你好\n\n".as_bytes();
        let pieces: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(all(&pieces).0, ["你好"]);
        assert_eq!(all(&[b"data: a\xFFb\n\n"]).0, ["a\u{FFFD}b"]);
    }

    #[test]
    fn cr_before_terminator() {
        assert_eq!(all(&[b"data: x\r\r\n\n"]).0, ["x"]);
        assert_eq!(all(&[b"data: x\n\r\ndata: y\n\r", b"\n"]).0, ["x", "y"]);
        assert_eq!(all(&[b"data: x\r\ndata: y\r\n"]).0, ["x\ny"]);
    }
}
