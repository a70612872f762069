//! Per-stream output collection: a byte-exact bounded tail in memory, a total
//! counter, and a spill file with the complete stream once the tail overflows.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use dsh_bash::CollectedOutput;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::spill::{SpillDir, StreamKind};

/// Bytes asked for per pipe read.
const READ_CHUNK: usize = 64 * 1024;

/// One stream's collected output, shared between its pump and its readers.
#[derive(Debug)]
pub(crate) struct StreamBuffer {
    /// Cap on `tail.len()`.
    max: usize,
    /// The last (at most `max`) bytes of the stream.
    tail: VecDeque<u8>,
    /// Bytes received in total.
    total: u64,
    /// The file holding the complete stream, once the tail overflowed.
    spill_path: Option<PathBuf>,
    /// The pipe reached EOF (or was abandoned): no more bytes will arrive.
    eof: bool,
}

/// A stream buffer handle shared by the pump and the executor.
pub(crate) type SharedStream = Arc<Mutex<StreamBuffer>>;

/// The bytes of one incremental read.
pub(crate) struct StreamRead {
    /// New bytes, decoded as lossy UTF-8.
    pub(crate) text: String,
    /// Unread bytes before these had already been dropped from the tail.
    pub(crate) lossy: bool,
    /// The whole-stream offset to read from next time.
    pub(crate) next_offset: u64,
}

impl StreamBuffer {
    /// An empty buffer keeping at most `max` bytes in memory.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            tail: VecDeque::new(),
            total: 0,
            spill_path: None,
            eof: false,
        }
    }

    /// A new buffer behind a shared handle.
    pub(crate) fn shared(max: usize) -> SharedStream {
        Arc::new(Mutex::new(Self::new(max)))
    }

    /// Whether appending `len` bytes would push bytes out of the tail.
    fn would_overflow(&self, len: usize) -> bool {
        self.tail.len().saturating_add(len) > self.max
    }

    /// Appends a chunk, dropping the oldest bytes beyond the cap.
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let keep = &chunk[chunk.len().saturating_sub(self.max)..];
        self.tail.extend(keep);
        let excess = self.tail.len().saturating_sub(self.max);
        self.tail.drain(..excess);
    }

    /// Whether any byte was dropped from memory.
    fn truncated(&self) -> bool {
        self.total > self.tail.len() as u64
    }

    /// The tail bytes from index `start` on.
    fn tail_from(&self, start: usize) -> Vec<u8> {
        let (a, b) = self.tail.as_slices();
        let mut out = Vec::with_capacity(self.tail.len().saturating_sub(start));
        if start < a.len() {
            out.extend_from_slice(&a[start..]);
            out.extend_from_slice(b);
        } else {
            out.extend_from_slice(&b[(start - a.len()).min(b.len())..]);
        }
        out
    }

    /// The stream as a foreground result: the tail (without a character cut
    /// in half at its start when truncated), the flag and the spill path.
    pub(crate) fn collected(&self) -> CollectedOutput {
        let truncated = self.truncated();
        let mut bytes = self.tail_from(0);
        if truncated {
            bytes.drain(..leading_continuation_len(&bytes));
        }
        CollectedOutput {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            truncated,
            spill_path: self.spill_path.clone(),
        }
    }

    /// The path of the spill file, when there is one.
    pub(crate) fn spill_path(&self) -> Option<PathBuf> {
        self.spill_path.clone()
    }

    /// Reads everything after whole-stream `offset`. While the stream is still
    /// open an incomplete UTF-8 character at the end is held back for the
    /// next read, so reads never split a character.
    pub(crate) fn read_from(&self, offset: u64) -> StreamRead {
        let window_start = self.total - self.tail.len() as u64;
        let (lossy, start) = if offset < window_start {
            (true, 0)
        } else {
            // offset <= total, so the difference fits the tail's length.
            (
                false,
                usize::try_from(offset - window_start).unwrap_or(usize::MAX),
            )
        };
        let mut bytes = self.tail_from(start);
        let mut skipped = 0;
        if lossy {
            skipped = leading_continuation_len(&bytes);
            bytes.drain(..skipped);
        }
        if !self.eof {
            let held = incomplete_suffix_len(&bytes);
            bytes.truncate(bytes.len() - held);
        }
        let next_offset =
            window_start + start.min(self.tail.len()) as u64 + skipped as u64 + bytes.len() as u64;
        StreamRead {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            lossy,
            next_offset,
        }
    }

    /// Marks the stream finished: no more bytes will arrive.
    pub(crate) fn finish(&mut self) {
        self.eof = true;
    }
}

/// Locks a stream buffer. A poisoned lock only means another thread panicked
/// while holding it; the buffer's fields stay consistent between statements,
/// so the data is still used.
pub(crate) fn lock(stream: &SharedStream) -> MutexGuard<'_, StreamBuffer> {
    stream
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Reads `reader` to EOF into `stream`, spilling the complete stream to a file
/// in `spill` once the in-memory tail overflows. I/O errors end the stream
/// (a pipe read error) or the spilling (a file error); they are logged, never
/// raised. Marks the stream finished on return.
pub(crate) async fn pump<R>(
    mut reader: R,
    stream: SharedStream,
    spill: Arc<SpillDir>,
    kind: StreamKind,
) where
    R: AsyncRead + Unpin,
{
    let mut buf = vec![0u8; READ_CHUNK];
    let mut file: Option<tokio::fs::File> = None;
    let mut spill_failed = false;
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::warn!(stream = kind.as_str(), "reading bash output failed: {e}");
                break;
            }
        };
        let chunk = &buf[..n];
        if file.is_none() && !spill_failed {
            // Only this pump appends to the stream, so the retained bytes
            // cannot change between this snapshot and the push below.
            let prefix = {
                let s = lock(&stream);
                s.would_overflow(n).then(|| s.tail_from(0))
            };
            if let Some(prefix) = prefix {
                match open_spill(&spill, kind, &prefix).await {
                    Ok((path, f)) => {
                        lock(&stream).spill_path = Some(path);
                        file = Some(f);
                    }
                    Err(e) => {
                        tracing::warn!(
                            stream = kind.as_str(),
                            "cannot create bash spill file: {e}"
                        );
                        spill_failed = true;
                    }
                }
            }
        }
        if let Some(f) = file.as_mut() {
            if let Err(e) = f.write_all(chunk).await {
                // The file no longer holds the complete stream: stop
                // advertising it. It is removed with the spill directory.
                tracing::warn!(
                    stream = kind.as_str(),
                    "writing bash spill file failed: {e}"
                );
                lock(&stream).spill_path = None;
                file = None;
                spill_failed = true;
            }
        }
        lock(&stream).push(chunk);
    }
    if let Some(mut f) = file {
        if let Err(e) = f.flush().await {
            tracing::warn!(
                stream = kind.as_str(),
                "flushing bash spill file failed: {e}"
            );
            lock(&stream).spill_path = None;
        }
    }
    lock(&stream).finish();
}

/// Creates the spill file and writes the bytes retained so far into it.
async fn open_spill(
    spill: &SpillDir,
    kind: StreamKind,
    prefix: &[u8],
) -> std::io::Result<(PathBuf, tokio::fs::File)> {
    let (path, file) = spill.create_file(kind)?;
    let mut file = tokio::fs::File::from_std(file);
    file.write_all(prefix).await?;
    Ok((path, file))
}

/// Number of UTF-8 continuation bytes (at most 3) at the start of `bytes`:
/// the remains of a character whose start was cut off.
fn leading_continuation_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0xC0) == 0x80)
        .count()
}

/// Length of an incomplete UTF-8 character at the end of `bytes` (0 if the
/// last character is complete or the bytes are not UTF-8 there).
fn incomplete_suffix_len(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        if (b & 0xC0) == 0x80 {
            continue;
        }
        let needed = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(max: usize, chunks: &[&[u8]]) -> StreamBuffer {
        let mut s = StreamBuffer::new(max);
        for c in chunks {
            s.push(c);
        }
        s
    }

    #[test]
    fn tail_keeps_last_bytes_exactly() {
        let s = buffer(5, &[b"abc", b"defg", b"h"]);
        assert_eq!(s.tail_from(0), b"defgh");
        assert!(s.truncated());
        let s = buffer(5, &[b"0123456789"]);
        assert_eq!(s.tail_from(0), b"56789");
        let s = buffer(5, &[b"ab", b"cde"]);
        assert!(!s.truncated(), "exactly at the cap is not truncated");
        assert!(!s.would_overflow(0));
        assert!(s.would_overflow(1));
    }

    #[test]
    fn zero_cap_keeps_nothing() {
        let s = buffer(0, &[b"abc"]);
        assert_eq!(s.tail_from(0), b"");
        assert!(s.truncated());
        assert_eq!(s.total, 3);
    }

    #[test]
    fn incremental_reads_never_repeat() {
        let mut s = StreamBuffer::new(100);
        s.push(b"hello ");
        let r = s.read_from(0);
        assert_eq!(
            (r.text.as_str(), r.lossy, r.next_offset),
            ("hello ", false, 6)
        );
        s.push(b"world");
        let r = s.read_from(6);
        assert_eq!((r.text.as_str(), r.next_offset), ("world", 11));
        let r = s.read_from(11);
        assert_eq!((r.text.as_str(), r.lossy), ("", false));
    }

    #[test]
    fn read_behind_the_window_is_lossy() {
        let mut s = StreamBuffer::new(4);
        s.push(b"abcdefgh");
        let r = s.read_from(2);
        assert!(r.lossy);
        assert_eq!(r.text, "efgh");
        assert_eq!(r.next_offset, 8);
    }

    #[test]
    fn split_character_is_held_back_until_complete() {
        let euro = "€".as_bytes(); // 3 bytes
        let mut s = StreamBuffer::new(100);
        s.push(b"a");
        s.push(&euro[..2]);
        let r = s.read_from(0);
        assert_eq!((r.text.as_str(), r.next_offset), ("a", 1));
        s.push(&euro[2..]);
        let r = s.read_from(1);
        assert_eq!((r.text.as_str(), r.next_offset), ("€", 4));
        // At EOF an incomplete character is delivered (lossily).
        s.push(&euro[..1]);
        s.finish();
        let r = s.read_from(4);
        assert_eq!((r.text.as_str(), r.next_offset), ("\u{FFFD}", 5));
    }

    #[test]
    fn truncated_tail_drops_half_character() {
        let mut s = StreamBuffer::new(4);
        s.push("x€€".as_bytes()); // 7 bytes, tail = last 4 = [0xAC, e2 82 ac]
        let c = s.collected();
        assert!(c.truncated);
        assert_eq!(c.text, "€");
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let mut s = StreamBuffer::new(100);
        s.push(&[0xff, b'a', 0xfe]);
        s.finish();
        assert_eq!(s.collected().text, "\u{FFFD}a\u{FFFD}");
        assert_eq!(s.read_from(0).text, "\u{FFFD}a\u{FFFD}");
    }

    #[test]
    fn suffix_detection() {
        assert_eq!(incomplete_suffix_len(b""), 0);
        assert_eq!(incomplete_suffix_len(b"abc"), 0);
        assert_eq!(incomplete_suffix_len(&[0xE2]), 1);
        assert_eq!(incomplete_suffix_len(&[0xE2, 0x82]), 2);
        assert_eq!(incomplete_suffix_len(&[0xE2, 0x82, 0xAC]), 0);
        assert_eq!(incomplete_suffix_len(&[0xF0, 0x9F, 0x98]), 3);
        assert_eq!(incomplete_suffix_len(&[0x80, 0x80, 0x80]), 0);
        assert_eq!(leading_continuation_len(&[0x80, 0x80, 0x80, 0x80]), 3);
    }
}
