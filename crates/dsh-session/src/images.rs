//! Images in the session log by content hash, not inline.
//!
//! An image block whose `url` is a `data:` URL (a `read` of an image, an
//! image attached to a prompt) would put megabytes of base64 on one log
//! line, again for every copy. Instead the JSONL store writes the bytes
//! once to `<session_dir>/<session-id>/images/<sha256-hex>.<ext>` (directory
//! 0700, file 0600, exclusive create of a temporary file then an atomic
//! rename; the same bytes again write nothing) and logs the block with
//! `url` = `dsh-image:<sha256-hex>.<ext>` ([`IMAGE_URL_PREFIX`]), its
//! `mimeType` unchanged. Loading a log ([`crate::load_jsonl`]) turns those
//! URLs back into data URLs; a file that is gone becomes the text block
//! `[image <hash> missing from the session directory]`.
//!
//! Which events: `user/message`, `context/message`, `steering/message` and
//! `tool/result` (tool-result blocks nested in a message too). Plugin
//! events are logged as they are.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use dsh_protocol::image::{header_dimensions, sniff, split_data_url, ImageFormat};
use dsh_protocol::{ContentBlock, EventPayload, ImageBlock, SessionEvent};
use sha2::{Digest, Sha256};

use crate::error::SessionError;

/// The scheme of an image stored beside the log:
/// `dsh-image:<64 hex digits of the SHA-256 of the bytes>.<ext>`.
pub const IMAGE_URL_PREFIX: &str = "dsh-image:";

/// The name of the directory, inside a session's data directory, that
/// holds its images.
pub const IMAGES_DIR: &str = "images";

/// Largest stored image read back (a larger file is treated as missing).
const MAX_STORED_IMAGE_BYTES: u64 = 32 * 1024 * 1024;

/// `<session_dir>/<session_id>/images`.
pub fn images_dir(session_dir: &Path, session_id: &str) -> PathBuf {
    session_dir.join(session_id).join(IMAGES_DIR)
}

/// The images directory of the log file `log` (`<dir>/<id>.jsonl` →
/// `<dir>/<id>/images`); `None` for a path without a file stem.
pub fn images_dir_of_log(log: &Path) -> Option<PathBuf> {
    let stem = log.file_stem()?;
    Some(log.with_file_name(stem).join(IMAGES_DIR))
}

/// The content blocks of `payload` that may hold images.
fn blocks_mut(payload: &mut EventPayload) -> Option<&mut Vec<ContentBlock>> {
    match payload {
        EventPayload::UserMessage(m) | EventPayload::ContextMessage(m) => Some(&mut m.content),
        EventPayload::SteeringMessage(s) => Some(&mut s.content),
        EventPayload::ToolResult(r) => Some(&mut r.result.content),
        _ => None,
    }
}

fn blocks(payload: &EventPayload) -> Option<&[ContentBlock]> {
    match payload {
        EventPayload::UserMessage(m) | EventPayload::ContextMessage(m) => Some(&m.content),
        EventPayload::SteeringMessage(s) => Some(&s.content),
        EventPayload::ToolResult(r) => Some(&r.result.content),
        _ => None,
    }
}

fn any_block(blocks: &[ContentBlock], test: &impl Fn(&ImageBlock) -> bool) -> bool {
    blocks.iter().any(|b| match b {
        ContentBlock::Image(i) => test(i),
        ContentBlock::ToolResult(r) => any_block(&r.content, test),
        _ => false,
    })
}

/// Every image block of `blocks` (nested tool results too), mutably.
fn each_image(blocks: &mut [ContentBlock], f: &mut impl FnMut(&mut ContentBlock)) {
    for b in blocks.iter_mut() {
        match b {
            ContentBlock::Image(_) => f(b),
            ContentBlock::ToolResult(r) => each_image(&mut r.content, f),
            _ => {}
        }
    }
}

/// Whether `event` holds an image block with a `data:` URL (what
/// [`store_images`] moves out of the log).
pub fn has_inline_image(event: &SessionEvent) -> bool {
    blocks(&event.data).is_some_and(|b| any_block(b, &|i| split_data_url(&i.url).is_some()))
}

/// `event` with every `data:` URL image written to `images` (see the
/// module docs) and its block's URL replaced by the `dsh-image:` form;
/// `None` when it holds none (log it as it is). A data URL whose payload
/// is not base64 stays inline.
///
/// # Errors
/// `SESSION_WRITE_FAILED` naming the file that could not be written.
pub fn store_images(
    event: &SessionEvent,
    images: &Path,
) -> Result<Option<SessionEvent>, SessionError> {
    if !has_inline_image(event) {
        return Ok(None);
    }
    let mut out = event.clone();
    let mut failed = None;
    if let Some(blocks) = blocks_mut(&mut out.data) {
        each_image(blocks, &mut |b| {
            let ContentBlock::Image(image) = b else {
                return;
            };
            if failed.is_some() {
                return;
            }
            let Some((mime, payload)) = split_data_url(&image.url) else {
                return;
            };
            let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(payload) else {
                tracing::warn!("an image data URL is not base64; logged inline");
                return;
            };
            let ext = ImageFormat::from_mime_type(mime)
                .or_else(|| sniff(&bytes))
                .map_or("bin", ImageFormat::extension);
            let name = format!("{}.{ext}", sha256_hex(&bytes));
            match write_once(images, &name, &bytes) {
                Ok(()) => {
                    if image.mime_type.is_none() && !mime.is_empty() {
                        image.mime_type = Some(mime.to_string());
                    }
                    image.url = format!("{IMAGE_URL_PREFIX}{name}");
                }
                Err(e) => failed = Some(e),
            }
        });
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(Some(out)),
    }
}

/// Writes `bytes` to `dir/name` unless that file exists: a private
/// temporary file created exclusively, synced, renamed into place.
fn write_once(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), SessionError> {
    let target = dir.join(name);
    if target.exists() {
        return Ok(());
    }
    let fail = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SessionError::Write { path, source }
    };
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(fail(dir))?;
    let tmp = dir.join(format!(
        ".{name}.{}-{}.tmp",
        std::process::id(),
        uuid::Uuid::now_v7().simple()
    ));
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &target)
    })();
    if let Err(e) = written {
        // The temporary file may not exist (the open failed); nothing to undo then.
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(&target)(e));
    }
    if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
        tracing::debug!(dir = %dir.display(), "directory fsync failed: {e}");
    }
    Ok(())
}

/// The file name a `dsh-image:` URL names, when it is one dsh writes
/// (64 lower-case hex digits, a dot, a short alphanumeric extension):
/// nothing else is looked up, so a log cannot point outside `images/`.
fn stored_name(url: &str) -> Option<&str> {
    let name = url.strip_prefix(IMAGE_URL_PREFIX)?;
    let (hash, ext) = name.split_once('.')?;
    let hex = hash.len() == 64
        && hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let ext_ok = (1..=8).contains(&ext.len()) && ext.bytes().all(|b| b.is_ascii_alphanumeric());
    (hex && ext_ok).then_some(name)
}

/// Turns every `dsh-image:` URL in `events` back into a data URL read from
/// `images`; an image whose file is missing (or unreadable, or not the
/// bytes its hash names) becomes the text block `[image <hash> missing from
/// the session directory]`. Never fails.
pub fn resolve_images(events: &mut [SessionEvent], images: &Path) {
    for event in events {
        let Some(blocks) = blocks_mut(&mut event.data) else {
            continue;
        };
        if !any_block(blocks, &|i| i.url.starts_with(IMAGE_URL_PREFIX)) {
            continue;
        }
        each_image(blocks, &mut |b| {
            let ContentBlock::Image(image) = b else {
                return;
            };
            if !image.url.starts_with(IMAGE_URL_PREFIX) {
                return;
            }
            let shown = image.url[IMAGE_URL_PREFIX.len()..].to_string();
            let loaded = stored_name(&image.url).and_then(|name| read_stored(images, name));
            match loaded {
                Some(bytes) => {
                    let mime = image
                        .mime_type
                        .clone()
                        .or_else(|| sniff(&bytes).map(|f| f.mime_type().to_string()))
                        .unwrap_or_else(|| "application/octet-stream".to_string());
                    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
                    image.url = format!("data:{mime};base64,{b64}");
                }
                None => {
                    let hash = shown.split('.').next().unwrap_or_default();
                    *b = ContentBlock::text(format!(
                        "[image {hash} missing from the session directory]"
                    ));
                }
            }
        });
    }
}

/// The lower-case hex SHA-256 of `bytes`.
fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    Sha256::digest(bytes)
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}"); // writing to a String cannot fail
            s
        })
}

/// The bytes of `images/name` when they hash to the name's hash.
fn read_stored(images: &Path, name: &str) -> Option<Vec<u8>> {
    let path = images.join(name);
    let file = File::open(&path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_STORED_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let hash = name.split('.').next()?;
    (bytes.len() as u64 <= MAX_STORED_IMAGE_BYTES && sha256_hex(&bytes) == hash).then_some(bytes)
}

/// How a transcript shows an image instead of its bytes: `[image 800×600
/// PNG, 34 KB]` for a data URL (the dimensions from its header), `[image
/// <hash>.png]` for one stored beside the log, `[image <url>]` for a URL.
/// Never base64.
pub fn image_placeholder(block: &ImageBlock) -> String {
    if let Some((mime, payload)) = split_data_url(&block.url) {
        let kb = dsh_protocol::image::base64_decoded_len(payload).div_ceil(1024);
        // The header is in the first bytes: decode a bounded prefix only.
        let prefix = &payload[..payload.len().min(64 * 1024) / 4 * 4];
        let head = base64::engine::general_purpose::STANDARD
            .decode(prefix)
            .unwrap_or_default();
        let described = sniff(&head).and_then(|f| {
            let (w, h) = header_dimensions(f, &head).ok()?;
            Some(format!("{w}×{h} {f}"))
        });
        return match described {
            Some(d) => format!("[image {d}, {kb} KB]"),
            None => format!("[image {mime}, {kb} KB]"),
        };
    }
    if let Some(name) = block.url.strip_prefix(IMAGE_URL_PREFIX) {
        return format!("[image {name}]");
    }
    let url: String = block.url.chars().take(80).collect();
    format!("[image {url}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_dsh_writes_are_looked_up() {
        let hash = "a".repeat(64);
        assert!(stored_name(&format!("dsh-image:{hash}.png")).is_some());
        for bad in [
            "dsh-image:../../etc/passwd".to_string(),
            format!("dsh-image:{hash}.png/../x"),
            format!("dsh-image:{}.png", "A".repeat(64)),
            format!("dsh-image:{hash}"),
            format!("dsh-image:/{hash}.png"),
        ] {
            assert!(stored_name(&bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_images_dir_of_a_log_is_beside_it() {
        assert_eq!(
            images_dir_of_log(Path::new("/s/s-1.jsonl")),
            Some(PathBuf::from("/s/s-1/images"))
        );
        assert_eq!(
            images_dir(Path::new("/s"), "s-1"),
            PathBuf::from("/s/s-1/images")
        );
    }
}
