//! The `read` window: numbered lines of a file, streamed, hashing it on
//! the way for the guard. Memory is in proportion to the window, not the
//! file or its longest line: bytes are looked at chunk by chunk, lines are
//! counted with `memchr`, and of a line in the window only the bytes that
//! can be shown (its first [`MAX_LINE_CHARS`] characters) are kept; the
//! rest of it is hashed, checked for UTF-8 and dropped as it streams by.

use std::io::{BufRead, BufReader};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::guard::{mtime_ms, version_of, Version};
use crate::regular;

/// Default and largest `limit`.
pub const MAX_LINES: u64 = 2000;
/// Longest line shown, in characters.
pub const MAX_LINE_CHARS: usize = 2000;
/// Most bytes of numbered lines per call (the notes after them, such as
/// the `(lines A-B of N; …)` tail line, come on top).
pub const MAX_OUTPUT_BYTES: usize = 51_200;
/// Bytes looked at for a NUL byte.
const SNIFF_BYTES: usize = 8192;
/// Bytes of a line kept for display: a character takes at most 4 bytes
/// (and a run of invalid bytes shown as one `�` at most 3), so this prefix
/// holds the first `MAX_LINE_CHARS + 1` characters of the line, decoded
/// exactly as the whole line would be; a line longer than this has more
/// than `MAX_LINE_CHARS` characters and is cut.
const KEEP_BYTES: usize = 4 * (MAX_LINE_CHARS + 1) + 4;

/// What reading a window gave.
pub(crate) struct Window {
    pub(crate) text: String,
    pub(crate) version: Version,
}

/// Why a file cannot be shown as text.
pub(crate) enum ReadError {
    NotText,
    /// The file starts with an image's magic bytes.
    Image(dsh_protocol::image::ImageFormat),
    Io(std::io::Error),
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// Reads lines `offset ..` (1-based, at most `limit`) of `path`, a regular
/// file (anything else is refused before it is opened, see
/// [`regular::open`]); the tail line of a partial window says to use
/// `read_on` (the argument that reads further) to read on.
pub(crate) fn read_window(
    path: &Path,
    key: &str,
    offset: u64,
    limit: u64,
    read_on: &str,
) -> Result<Window, ReadError> {
    let (file, meta) = regular::open(path)?;
    let reader = BufReader::with_capacity(64 * 1024, file);
    window_of(reader, key, mtime_ms(&meta), offset, limit, read_on)
}

/// [`read_window`] of a text an editor served (`mtime_ms` from the disk,
/// 0 when the file is not there).
pub(crate) fn text_window(
    text: &str,
    key: &str,
    mtime_ms: u64,
    offset: u64,
    limit: u64,
    read_on: &str,
) -> Result<Window, ReadError> {
    window_of(text.as_bytes(), key, mtime_ms, offset, limit, read_on)
}

/// The image format `head` (a file's first bytes) starts with, when its
/// first 8 KiB are not text too: a text file that happens to start with
/// `GIF89a` stays text.
pub(crate) fn image_head(head: &[u8]) -> Option<dsh_protocol::image::ImageFormat> {
    let format = dsh_protocol::image::sniff(head)?;
    let head = &head[..head.len().min(SNIFF_BYTES)];
    let binary = memchr::memchr(0, head).is_some()
        || std::str::from_utf8(head).is_err_and(|e| e.error_len().is_some());
    binary.then_some(format)
}

/// A streaming UTF-8 check of bytes fed in pieces split anywhere.
#[derive(Default)]
struct Utf8Check {
    /// The start of a character split by the end of the last piece.
    carry: Vec<u8>,
    invalid: bool,
}

impl Utf8Check {
    fn feed(&mut self, mut piece: &[u8]) {
        if self.invalid {
            return;
        }
        while !self.carry.is_empty() {
            let Some((&b, rest)) = piece.split_first() else {
                return;
            };
            piece = rest;
            self.carry.push(b);
            match std::str::from_utf8(&self.carry) {
                Ok(_) => self.carry.clear(),
                Err(e) if e.error_len().is_some() => {
                    self.invalid = true;
                    return;
                }
                Err(_) => {}
            }
        }
        if let Err(e) = std::str::from_utf8(piece) {
            match e.error_len() {
                Some(_) => self.invalid = true,
                None => self.carry.extend_from_slice(&piece[e.valid_up_to()..]),
            }
        }
    }

    /// Whether everything fed was valid UTF-8; resets the check.
    fn finish(&mut self) -> bool {
        let valid = !self.invalid && self.carry.is_empty();
        self.invalid = false;
        self.carry.clear();
        valid
    }
}

/// The window being built: the numbered lines and what the notes say.
struct Render {
    out: String,
    shown_first: u64,
    shown_last: u64,
    invalid_utf8: bool,
    cut_lines: usize,
    byte_capped: bool,
}

impl Render {
    /// Adds line `n`: `kept` is its first bytes (all of them unless
    /// `longer`), `valid` whether the whole line is UTF-8.
    fn line(&mut self, n: u64, kept: &[u8], longer: bool, valid: bool) {
        let body = if longer {
            kept
        } else {
            let body = kept.strip_suffix(b"\n").unwrap_or(kept);
            body.strip_suffix(b"\r").unwrap_or(body)
        };
        if !valid {
            self.invalid_utf8 = true;
        }
        let text = String::from_utf8_lossy(body);
        let shown: std::borrow::Cow<'_, str> = match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => {
                self.cut_lines += 1;
                format!(
                    "{}… [line cut at {MAX_LINE_CHARS} characters]",
                    &text[..cut]
                )
                .into()
            }
            None => text,
        };
        let entry = format!("{n:>6}\t{shown}\n");
        if self.out.len() + entry.len() > MAX_OUTPUT_BYTES {
            self.byte_capped = true;
            return;
        }
        if self.shown_first == 0 {
            self.shown_first = n;
        }
        self.shown_last = n;
        self.out.push_str(&entry);
    }
}

/// The window of lines `offset ..` of what `reader` yields, and the
/// version of all of it (every byte is hashed and counted).
fn window_of(
    mut reader: impl BufRead,
    key: &str,
    mtime_ms: u64,
    offset: u64,
    limit: u64,
    read_on: &str,
) -> Result<Window, ReadError> {
    {
        let head = reader.fill_buf()?;
        if let Some(format) = image_head(head) {
            return Err(ReadError::Image(format));
        }
        if memchr::memchr(0, &head[..head.len().min(SNIFF_BYTES)]).is_some() {
            return Err(ReadError::NotText);
        }
    }
    let mut hasher = Sha256::new();
    let mut len: u64 = 0;
    let mut render = Render {
        out: String::new(),
        shown_first: 0,
        shown_last: 0,
        invalid_utf8: false,
        cut_lines: 0,
        byte_capped: false,
    };
    // Lines finished so far; the current line is `n + 1`.
    let mut n: u64 = 0;
    // Whether bytes of line `n + 1` were seen (a last line without `\n`).
    let mut open_line = false;
    // The kept head of the current line, when it is in the window.
    let mut kept: Vec<u8> = Vec::new();
    let mut longer = false;
    let mut utf8 = Utf8Check::default();
    let last_wanted = offset.saturating_add(limit).saturating_sub(1);
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        let size = chunk.len();
        hasher.update(chunk);
        len += size as u64;
        let mut rest = chunk;
        while !rest.is_empty() {
            let line = n + 1;
            let wanted = line >= offset && line <= last_wanted && !render.byte_capped;
            if !wanted && (line > last_wanted || render.byte_capped) {
                // Past the window: only count the lines.
                n += memchr::memchr_iter(b'\n', rest).count() as u64;
                open_line = rest.last() != Some(&b'\n');
                break;
            }
            let (piece, ends) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..=i], true),
                None => (rest, false),
            };
            rest = &rest[piece.len()..];
            if wanted {
                utf8.feed(piece);
                let room = KEEP_BYTES.saturating_sub(kept.len());
                if piece.len() > room {
                    longer = true;
                }
                kept.extend_from_slice(&piece[..piece.len().min(room)]);
            }
            if ends {
                if wanted {
                    render.line(line, &kept, longer, utf8.finish());
                    kept.clear();
                    longer = false;
                }
                n += 1;
                open_line = false;
            } else {
                open_line = true;
            }
        }
        reader.consume(size);
    }
    if open_line {
        let line = n + 1;
        if line >= offset && line <= last_wanted && !render.byte_capped {
            render.line(line, &kept, longer, utf8.finish());
        }
        n += 1;
    }
    let Render {
        mut out,
        shown_first,
        shown_last,
        invalid_utf8,
        cut_lines,
        byte_capped,
    } = render;
    let total = n;
    if total == 0 {
        out.push_str("(empty file)\n");
    } else if shown_first == 0 {
        out.push_str(&format!(
            "(the file has {total} lines; offset {offset} is past the end)\n"
        ));
    } else if shown_first > 1 || shown_last < total {
        let how = if byte_capped {
            format!("; output capped at {MAX_OUTPUT_BYTES} bytes")
        } else {
            String::new()
        };
        out.push_str(&format!(
            "(lines {shown_first}-{shown_last} of {total}{how}; use {read_on} to read on)\n"
        ));
    }
    if cut_lines > 0 {
        out.push_str(&format!(
            "({cut_lines} line(s) longer than {MAX_LINE_CHARS} characters were cut)\n"
        ));
    }
    if invalid_utf8 {
        out.push_str("(the file is not valid UTF-8; invalid bytes are shown as �)\n");
    }
    Ok(Window {
        text: out,
        version: version_of(key, len, mtime_ms, hasher),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window as the code before streaming computed it (a whole line
    /// in memory at a time), kept as the oracle of the output format.
    fn old_window_of(
        mut reader: impl BufRead,
        key: &str,
        mtime_ms: u64,
        offset: u64,
        limit: u64,
    ) -> Result<String, ReadError> {
        {
            let head = reader.fill_buf()?;
            if memchr::memchr(0, &head[..head.len().min(SNIFF_BYTES)]).is_some() {
                return Err(ReadError::NotText);
            }
        }
        let mut hasher = Sha256::new();
        let mut len: u64 = 0;
        let mut out = String::new();
        let mut line = Vec::new();
        let mut n: u64 = 0;
        let mut shown_first = 0;
        let mut shown_last = 0;
        let mut invalid_utf8 = false;
        let mut cut_lines = 0usize;
        let mut byte_capped = false;
        let last_wanted = offset.saturating_add(limit).saturating_sub(1);
        loop {
            line.clear();
            let read = reader.read_until(b'\n', &mut line)?;
            if read == 0 {
                break;
            }
            hasher.update(&line);
            len += read as u64;
            n += 1;
            if n < offset || n > last_wanted || byte_capped {
                continue;
            }
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            let text = match std::str::from_utf8(body) {
                Ok(t) => std::borrow::Cow::Borrowed(t),
                Err(_) => {
                    invalid_utf8 = true;
                    String::from_utf8_lossy(body)
                }
            };
            let shown: std::borrow::Cow<'_, str> = match text.char_indices().nth(MAX_LINE_CHARS) {
                Some((cut, _)) => {
                    cut_lines += 1;
                    format!(
                        "{}… [line cut at {MAX_LINE_CHARS} characters]",
                        &text[..cut]
                    )
                    .into()
                }
                None => text,
            };
            let entry = format!("{n:>6}\t{shown}\n");
            if out.len() + entry.len() > MAX_OUTPUT_BYTES {
                byte_capped = true;
                continue;
            }
            if shown_first == 0 {
                shown_first = n;
            }
            shown_last = n;
            out.push_str(&entry);
        }
        // The rest of the file still counts for the hash.
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest)?;
        hasher.update(&rest);
        len += rest.len() as u64;
        let total = n;
        if total == 0 {
            out.push_str("(empty file)\n");
        } else if shown_first == 0 {
            out.push_str(&format!(
                "(the file has {total} lines; offset {offset} is past the end)\n"
            ));
        } else if shown_first > 1 || shown_last < total {
            let how = if byte_capped {
                format!("; output capped at {MAX_OUTPUT_BYTES} bytes")
            } else {
                String::new()
            };
            out.push_str(&format!(
                "(lines {shown_first}-{shown_last} of {total}{how}; use offset to read on)\n"
            ));
        }
        if cut_lines > 0 {
            out.push_str(&format!(
                "({cut_lines} line(s) longer than {MAX_LINE_CHARS} characters were cut)\n"
            ));
        }
        if invalid_utf8 {
            out.push_str("(the file is not valid UTF-8; invalid bytes are shown as �)\n");
        }
        let _ = (key, mtime_ms, len, hasher);
        Ok(out)
    }

    fn by_whole_lines(bytes: &[u8], offset: u64, limit: u64) -> String {
        old_window_of(bytes, "k", 0, offset, limit).ok().unwrap()
    }

    #[test]
    fn utf8_split_anywhere_is_checked_like_the_whole() {
        let samples: [&[u8]; 5] = [
            "héllo wörld €𝄞".as_bytes(),
            b"abc\xff",
            b"\xe2\x82",
            b"ok\xe2\x82\xacok",
            b"\xf0\x9d\x84",
        ];
        for s in samples {
            let whole = std::str::from_utf8(s).is_ok();
            for split in 0..=s.len() {
                for split2 in split..=s.len() {
                    let mut c = Utf8Check::default();
                    c.feed(&s[..split]);
                    c.feed(&s[split..split2]);
                    c.feed(&s[split2..]);
                    assert_eq!(c.finish(), whole, "{s:?} split at {split},{split2}");
                }
            }
        }
    }

    #[test]
    fn a_long_line_split_across_reads_shows_as_a_whole_one_would() {
        // A 1-byte buffer makes every byte a chunk of its own.
        let mut line = "é".repeat(3000).into_bytes();
        line.extend_from_slice(b"\xff tail\r\nnext\n");
        let small = BufReader::with_capacity(1, &line[..]);
        let a = window_of(small, "k", 0, 1, 10, "offset").ok().unwrap().text;
        let b = by_whole_lines(&line, 1, 10);
        assert_eq!(a, b);
        assert!(a.contains("… [line cut at 2000 characters]"), "{a}");
        assert!(a.contains("not valid UTF-8"), "{a}");
        assert!(a.ends_with("     2\tnext\n(1 line(s) longer than 2000 characters were cut)\n(the file is not valid UTF-8; invalid bytes are shown as �)\n"), "{a}");
    }

    fn text_strategy() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            Just(b"\n".to_vec()),
            Just(b"\r\n".to_vec()),
            Just("é€𝄞".as_bytes().to_vec()),
            Just(b"\xff".to_vec()),
            Just(b"\xe2\x82".to_vec()),
            (1usize..3000).prop_map(|n| vec![b'a'; n]),
            (1usize..1200).prop_map(|n| "é".repeat(n).into_bytes()),
            "[a-z ]{0,20}".prop_map(String::into_bytes),
        ];
        proptest::collection::vec(piece, 0..120).prop_map(|v| v.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Streaming shows exactly what whole lines showed, however the
        /// reads split the file.
        #[test]
        fn streaming_matches_whole_lines(
            bytes in text_strategy(),
            offset in 1u64..40,
            limit in 1u64..40,
            buffer in 1usize..9000,
        ) {
            let reader = BufReader::with_capacity(buffer, &bytes[..]);
            let new = window_of(reader, "k", 0, offset, limit, "offset").ok().unwrap();
            let old = by_whole_lines(&bytes, offset, limit);
            proptest::prop_assert_eq!(&new.text, &old);
            let mut hasher = Sha256::new();
            hasher.update(&bytes);
            let whole = version_of("k", bytes.len() as u64, 0, hasher);
            proptest::prop_assert_eq!(new.version.sha256, whole.sha256);
            proptest::prop_assert_eq!(new.version.len, whole.len);
        }
    }
}
