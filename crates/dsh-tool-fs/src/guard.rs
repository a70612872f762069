//! The freshness guard: which version of a file this session last saw.
//!
//! Every successful `read`, `write` and `edit` appends an `fs/observed`
//! event to the session (`{"path", "len", "mtimeMs", "sha256"}`), so the
//! guard is derived from the log and survives `--resume`. Without an agent
//! (a direct registry call) a per-tool-set memory stands in.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_kernel::sync::lock;
use std::time::UNIX_EPOCH;

use dsh_protocol::EventPayload;
use dsh_tools::ToolContext;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The event kind of an observation.
pub const OBSERVED_KIND: &str = "fs/observed";

/// One version of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    /// The file's canonical path.
    pub path: String,
    /// Length in bytes.
    pub len: u64,
    /// Modification time, Unix ms.
    pub mtime_ms: u64,
    /// SHA-256 of the contents, hex.
    pub sha256: String,
    /// When it was observed, Unix ms.
    pub at_ms: u64,
}

/// The memory used when a call has no agent (and so no session).
#[derive(Debug, Default)]
pub(crate) struct Memory(Mutex<HashMap<String, Version>>);

/// The guard of one call: records to the agent's session when there is one.
pub(crate) struct Guard<'a> {
    pub(crate) ctx: &'a ToolContext,
    pub(crate) memory: &'a Arc<Memory>,
}

impl Guard<'_> {
    /// The version of `path` this session last observed.
    pub(crate) fn last(&self, path: &str) -> Option<Version> {
        match self.ctx.get::<Arc<dyn dsh_agent::Agent>>() {
            Some(agent) => agent
                .session()
                .events()
                .iter()
                .rev()
                .find_map(|e| match &e.data {
                    EventPayload::Other { kind, data } if kind == OBSERVED_KIND => {
                        serde_json::from_value::<Version>(data.clone())
                            .ok()
                            .filter(|v| v.path == path)
                    }
                    _ => None,
                }),
            None => lock(&self.memory.0).get(path).cloned(),
        }
    }

    /// Records `version` as observed.
    pub(crate) fn record(&self, version: &Version) {
        match self.ctx.get::<Arc<dyn dsh_agent::Agent>>() {
            Some(agent) => {
                let data = serde_json::to_value(version).unwrap_or_default();
                agent.session().append(EventPayload::Other {
                    kind: OBSERVED_KIND.to_string(),
                    data,
                });
            }
            None => {
                lock(&self.memory.0).insert(version.path.clone(), version.clone());
            }
        }
    }
}

/// Unix ms of now.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The guard's key for `path`: its canonical form (the parent's for a file
/// that does not exist yet).
pub(crate) fn key_of(path: &Path) -> String {
    if let Ok(c) = path.canonicalize() {
        return c.to_string_lossy().into_owned();
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => parent
            .canonicalize()
            .map(|p| p.join(name))
            .unwrap_or_else(|_| path.to_path_buf())
            .to_string_lossy()
            .into_owned(),
        _ => path.to_string_lossy().into_owned(),
    }
}

/// The current version of the file at `path` (hashing it whole).
///
/// # Errors
/// The I/O error.
pub(crate) fn current(path: &Path, key: &str) -> std::io::Result<Version> {
    let (mut file, meta) = crate::regular::open(path)?;
    let mut hasher = Sha256::new();
    crate::regular::for_each_chunk(&mut file, |chunk| hasher.update(chunk))?;
    Ok(version_of(key, meta.len(), mtime_ms(&meta), hasher))
}

/// The version of contents already in memory (`meta` read with them).
pub(crate) fn version_of_bytes(key: &str, meta: &std::fs::Metadata, bytes: &[u8]) -> Version {
    let mut hasher = Sha256::new();
    hasher.update(bytes);
    version_of(key, meta.len(), mtime_ms(meta), hasher)
}

/// The version of a text an editor served or took: its length and hash,
/// with the disk's modification time when the file is on disk (0 when
/// not; the guard compares contents only).
pub(crate) fn version_of_text(key: &str, path: &Path, text: &str) -> Version {
    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    let mtime = std::fs::metadata(path).map_or(0, |m| mtime_ms(&m));
    version_of(key, text.len() as u64, mtime, hasher)
}

/// Modification time of `meta`, Unix ms (0 when unknown).
pub(crate) fn mtime_ms(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A version from a length, a modification time and a finished hash.
pub(crate) fn version_of(key: &str, len: u64, mtime_ms: u64, hasher: Sha256) -> Version {
    let digest = hasher.finalize();
    let mut sha256 = String::with_capacity(64);
    for b in digest.iter() {
        sha256.push_str(&format!("{b:02x}"));
    }
    Version {
        path: key.to_string(),
        len,
        mtime_ms,
        sha256,
        at_ms: now_ms(),
    }
}

/// Whether two versions have the same contents.
pub(crate) fn same_contents(a: &Version, b: &Version) -> bool {
    a.len == b.len && a.sha256 == b.sha256
}

/// `YYYY-MM-DD HH:MM:SS UTC` of Unix ms.
pub(crate) fn format_time(ms: u64) -> String {
    format!("{} UTC", dsh_protocol::time::Utc::from_unix_ms(ms))
}

/// Resolves `file_path` against `root` (absolute paths are kept).
pub(crate) fn resolve(root: &Path, file_path: &str) -> PathBuf {
    let p = Path::new(file_path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_format_as_utc() {
        assert_eq!(format_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(format_time(1_796_317_788_979), "2026-12-03 17:09:48 UTC");
    }
}
