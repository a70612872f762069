//! The `read` window: numbered lines of a file, streamed (a window of a
//! huge file never loads the file), hashing it on the way for the guard.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::guard::{mtime_ms, version_of, Version};

/// Default and largest `limit`.
pub const MAX_LINES: u64 = 2000;
/// Longest line shown, in characters.
pub const MAX_LINE_CHARS: usize = 2000;
/// Most bytes of output per call.
pub const MAX_OUTPUT_BYTES: usize = 51_200;
/// Bytes looked at for a NUL byte.
const SNIFF_BYTES: usize = 8192;

/// What reading a window gave.
pub(crate) struct Window {
    pub(crate) text: String,
    pub(crate) version: Version,
}

/// Why a file cannot be shown as text.
pub(crate) enum ReadError {
    NotText,
    Io(std::io::Error),
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// Reads lines `offset ..` (1-based, at most `limit`) of `path`.
pub(crate) fn read_window(
    path: &Path,
    key: &str,
    offset: u64,
    limit: u64,
) -> Result<Window, ReadError> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    let reader = BufReader::with_capacity(64 * 1024, file);
    window_of(reader, key, mtime_ms(&meta), offset, limit)
}

/// [`read_window`] of a text an editor served (`mtime_ms` from the disk,
/// 0 when the file is not there).
pub(crate) fn text_window(
    text: &str,
    key: &str,
    mtime_ms: u64,
    offset: u64,
    limit: u64,
) -> Result<Window, ReadError> {
    window_of(text.as_bytes(), key, mtime_ms, offset, limit)
}

/// The window of lines `offset ..` of what `reader` yields, and the
/// version of all of it (every byte is hashed and counted).
fn window_of(
    mut reader: impl BufRead,
    key: &str,
    mtime_ms: u64,
    offset: u64,
    limit: u64,
) -> Result<Window, ReadError> {
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
    Ok(Window {
        text: out,
        version: version_of(key, len, mtime_ms, hasher),
    })
}
