//! The JSONL backend: one `<session-id>.jsonl` file per session in a
//! directory, one event per line, the reference's field names.

use dsh_kernel::sync::lock;
use dsh_kernel::ErrorCode;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_kernel::Registration;
use serde::Deserialize;

use crate::error::SessionError;
use crate::persist::{
    install_persistence, LoadedLog, SessionPersistence, SessionSummary, TornLine,
};
use crate::session::{validate_session_id, SessionStore};
use dsh_protocol::{EventPayload, MessageEvent, SessionEvent};

/// The JSONL persistence plugin: every session of the kernel's
/// [`SessionStore`] is written to `<dir>/<session-id>.jsonl` (see
/// [`install_jsonl`], which it calls).
#[derive(Debug, Clone)]
pub struct JsonlPersistence {
    /// The session directory (created 0700 when missing).
    pub dir: std::path::PathBuf,
}

impl dsh_kernel::Plugin for JsonlPersistence {
    /// # Errors
    /// `MISSING_SERVICE` without a [`SessionStore`]; `SESSION_DIR_UNWRITABLE`.
    fn install(self, kernel: &dsh_kernel::Kernel) -> Result<Registration, dsh_kernel::DshError> {
        let store = kernel
            .service::<SessionStore>()
            .map_err(dsh_kernel::DshError::from)?;
        install_jsonl(&store, &self.dir).map_err(dsh_kernel::DshError::from)
    }
}

/// Installs JSONL persistence for every session of `store`, in `dir`.
///
/// `dir` is created (mode 0700) if missing and checked for writability now,
/// so a bad directory fails at start rather than losing the log later.
/// Files are created with mode 0600. See [`install_persistence`] for when
/// events are written; undo the registration (scope close) to write the
/// rest.
///
/// # Errors
/// [`SessionError::DirUnwritable`] (`SESSION_DIR_UNWRITABLE`) naming `dir`.
pub fn install_jsonl(store: &SessionStore, dir: &Path) -> Result<Registration, SessionError> {
    let backend = JsonlStore::new(dir)?;
    Ok(install_persistence(store, Arc::new(backend)))
}

/// Reads a JSONL session log.
///
/// Blank lines are skipped. A last line without its newline that does not
/// parse (a write cut short by a crash) is reported in
/// [`LoadedLog::torn_tail`] and everything before it is kept; a complete
/// last line without its newline is kept.
///
/// # Errors
/// `SESSION_NOT_FOUND` / `SESSION_READ_FAILED` when the file cannot be read;
/// `CORRUPT_LOG` naming the file and the 1-based line number when a
/// newline-terminated line (the last one too) does not parse or `seq` does
/// not increase.
///
/// Images the log stores beside it (`dsh-image:` URLs, see
/// [`crate::store_images`]) come back as data URLs read from
/// `<dir>/<id>/images/`; a missing one is a text block saying so.
pub fn load_jsonl(path: &Path) -> Result<LoadedLog, SessionError> {
    let bytes = read_file(path)?;
    let mut scan = scan(&bytes, path)?;
    if let Some(images) = crate::images::images_dir_of_log(path) {
        crate::images::resolve_images(&mut scan.events, &images);
    }
    Ok(LoadedLog {
        events: scan.events,
        torn_tail: scan.torn,
    })
}

/// Summaries of the `*.jsonl` logs in `dir`, oldest first. A missing
/// directory is an empty list; an unreadable file is skipped with a warning.
///
/// # Errors
/// `SESSION_READ_FAILED` when the directory exists but cannot be listed.
pub fn list_sessions(dir: &Path) -> Result<Vec<SessionSummary>, SessionError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(SessionError::Read {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| SessionError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") || !path.is_file() {
            continue;
        }
        match summarize_jsonl(&path) {
            Ok(s) => out.push(s),
            Err(e) => {
                tracing::warn!(path = %path.display(), code = e.code(), "skipping session log: {e}")
            }
        }
    }
    out.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
    Ok(out)
}

/// The summary of one JSONL log. Reading stops at the first line that does
/// not parse (a listing is best effort; use [`load_jsonl`] to validate).
///
/// # Errors
/// When the file cannot be read.
pub fn summarize_jsonl(path: &Path) -> Result<SessionSummary, SessionError> {
    #[derive(Deserialize)]
    struct Head {
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        time: u64,
    }
    let bytes = read_file(path)?;
    let id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut summary = SessionSummary {
        id,
        path: path.to_path_buf(),
        created_ms: 0,
        first_prompt: None,
        turns: 0,
        events: 0,
        title: None,
        parent: None,
        tokens: 0,
        last_ms: 0,
        cwd: None,
    };
    // The environment line of the first system prompt: the workspace of a
    // log older than `session/workspace`.
    let mut prompt_cwd = None;
    for line in bytes.split(|b| *b == b'\n') {
        if line.trim_ascii().is_empty() {
            continue;
        }
        let Ok(head) = serde_json::from_slice::<Head>(line) else {
            break;
        };
        if summary.events == 0 {
            summary.created_ms = head.time;
        }
        summary.last_ms = summary.last_ms.max(head.time);
        summary.events += 1;
        match head.kind.as_str() {
            crate::persist::WORKSPACE_EVENT => {
                #[derive(Deserialize)]
                struct Workspace {
                    data: WorkspaceData,
                }
                #[derive(Deserialize)]
                struct WorkspaceData {
                    cwd: PathBuf,
                }
                if let Ok(w) = serde_json::from_slice::<Workspace>(line) {
                    summary.cwd = Some(w.data.cwd);
                }
            }
            "request/system" if prompt_cwd.is_none() => {
                #[derive(Deserialize)]
                struct System {
                    data: SystemData,
                }
                #[derive(Deserialize)]
                struct SystemData {
                    text: String,
                }
                if let Ok(s) = serde_json::from_slice::<System>(line) {
                    prompt_cwd = prompt_workspace(&s.data.text);
                }
            }
            "turn/start" => summary.turns += 1,
            "usage" => {
                if let Ok(SessionEvent {
                    data: EventPayload::Usage(u),
                    ..
                }) = serde_json::from_slice::<SessionEvent>(line)
                {
                    summary.tokens = summary
                        .tokens
                        .saturating_add(crate::meter::usage_total(&u.usage));
                }
            }
            "session/title" => {
                #[derive(Deserialize)]
                struct Title {
                    data: TitleData,
                }
                #[derive(Deserialize)]
                struct TitleData {
                    title: String,
                }
                if let Ok(t) = serde_json::from_slice::<Title>(line) {
                    summary.title = Some(t.data.title);
                }
            }
            "subagent/start" if summary.parent.is_none() => {
                #[derive(Deserialize)]
                struct Start {
                    data: StartData,
                }
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct StartData {
                    parent_session_id: String,
                }
                if let Ok(s) = serde_json::from_slice::<Start>(line) {
                    summary.parent = Some(s.data.parent_session_id);
                }
            }
            "user/message" if summary.first_prompt.is_none() => {
                if let Ok(SessionEvent {
                    data: EventPayload::UserMessage(MessageEvent { content, .. }),
                    ..
                }) = serde_json::from_slice::<SessionEvent>(line)
                {
                    summary.first_prompt =
                        Some(content.iter().filter_map(|b| b.as_text()).collect());
                }
            }
            _ => {}
        }
    }
    if summary.events == 0 {
        summary.created_ms = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as u64);
        summary.last_ms = summary.created_ms;
    }
    if summary.cwd.is_none() {
        summary.cwd = prompt_cwd;
    }
    Ok(summary)
}

/// The working directory a system prompt's environment line names
/// (`Environment: working directory <path>; OS …`), if it has one.
fn prompt_workspace(system: &str) -> Option<PathBuf> {
    const MARK: &str = "Environment: working directory ";
    let line = system.lines().find_map(|l| l.strip_prefix(MARK))?;
    let path = line.rsplit_once("; OS ").map_or(line, |(p, _)| p);
    Some(PathBuf::from(path)).filter(|p| p.is_absolute())
}

/// Appends the JSONL line of `event` (its JSON and a newline) to `out`.
///
/// Serializing an event into memory cannot fail (every map key is a
/// string); if it ever did, nothing is appended and the failure is logged.
pub fn write_jsonl_line(event: &SessionEvent, out: &mut Vec<u8>) {
    let start = out.len();
    match serde_json::to_writer(&mut *out, event) {
        Ok(()) => out.push(b'\n'),
        Err(e) => {
            out.truncate(start);
            tracing::error!(seq = event.seq, "session event did not serialize: {e}");
        }
    }
}

/// The directory-of-files backend: `<dir>/<session-id>.jsonl`.
pub struct JsonlStore {
    dir: PathBuf,
    files: Mutex<HashMap<String, Arc<Mutex<OpenLog>>>>,
}

/// A log file this store holds open (and locked).
struct OpenLog {
    file: File,
    /// The `seq` after the last event in the file.
    next_seq: u64,
}

/// What [`JsonlStore::open_log`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenedLog {
    /// The `seq` after the last event in the file (0 when empty).
    pub next_seq: u64,
    /// The torn last line that was cut off, if there was one.
    pub repaired: Option<Repair>,
}

/// A torn last line removed by [`JsonlStore::open_log`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
    /// Where the line was.
    pub torn: TornLine,
    /// The private file (0600) that now holds the removed bytes, or `None`
    /// when it could not be written (the bytes are then lost; a warning
    /// was logged).
    pub sidecar: Option<PathBuf>,
}

impl Repair {
    /// The text of the `LOG_REPAIRED` marker event a front end logs.
    pub fn describe(&self, log: &Path) -> String {
        let kept = match &self.sidecar {
            Some(p) => format!("its bytes were saved to {}", p.display()),
            None => "its bytes could not be saved".to_string(),
        };
        format!(
            "{}: line {} ({} bytes) was cut short by a crash and removed before appending; {kept}",
            log.display(),
            self.torn.line_no,
            self.torn.bytes
        )
    }
}

impl JsonlStore {
    /// A store in `dir`, created with mode 0700 when missing and checked for
    /// writability (a probe file is created and removed).
    ///
    /// # Errors
    /// [`SessionError::DirUnwritable`] naming `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, SessionError> {
        let dir = dir.into();
        ensure_writable_dir(&dir)?;
        Ok(Self {
            dir,
            files: Mutex::new(HashMap::new()),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log file of `session_id`.
    ///
    /// # Errors
    /// [`SessionError::InvalidId`] when the id cannot name a file.
    pub fn path_of(&self, session_id: &str) -> Result<PathBuf, SessionError> {
        validate_session_id(session_id)?;
        Ok(self.dir.join(format!("{session_id}.jsonl")))
    }

    fn file(&self, session_id: &str) -> Option<Arc<Mutex<OpenLog>>> {
        lock(&self.files).get(session_id).cloned()
    }

    /// Opens (creating it when missing) and locks the log of `session_id`
    /// for appending, before anything runs: a front end calls this first so
    /// that a log in use, unwritable or corrupt fails at once. A torn last
    /// line (no newline, does not parse) is moved to a sidecar file
    /// `<id>.jsonl.torn-<ms>` and cut off. Opening a log this store already
    /// holds returns its state without touching the file.
    ///
    /// # Errors
    /// `SESSION_LOCKED` when another process (or store) holds it;
    /// `SESSION_WRITE_FAILED` when it cannot be opened for writing (read-only
    /// file or directory); `CORRUPT_LOG` for a corrupt complete line (the
    /// file is left as it is); `SESSION_READ_FAILED`; `INVALID_SESSION_ID`.
    pub fn open_log(&self, session_id: &str) -> Result<OpenedLog, SessionError> {
        if let Some(open) = self.file(session_id) {
            return Ok(OpenedLog {
                next_seq: lock(&open).next_seq,
                repaired: None,
            });
        }
        let path = self.path_of(session_id)?;
        let write_err = |source| SessionError::Write {
            path: path.clone(),
            source,
        };
        let opened = match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let file = open_append(&path).map_err(write_err)?;
                lock_exclusive(&file, &path)?;
                // Make the new directory entry durable too (power loss).
                if let Err(e) = File::open(&self.dir).and_then(|d| d.sync_all()) {
                    tracing::debug!(dir = %self.dir.display(), "directory fsync failed: {e}");
                }
                (0, file, None)
            }
            Err(source) => return Err(SessionError::Read { path, source }),
            Ok(_) => {
                // Lock before reading, so the scan sees what no one else is
                // still appending to.
                let mut file = open_append(&path).map_err(write_err)?;
                lock_exclusive(&file, &path)?;
                let bytes = read_file(&path)?;
                let scan = scan(&bytes, &path)?;
                let mut len = bytes.len();
                let mut repaired = None;
                if let Some(torn) = scan.torn {
                    let start = usize::try_from(torn.offset).unwrap_or(len).min(len);
                    let sidecar = save_torn(&path, &bytes[start..]);
                    // Info: the front end logs the marker event and tells the user.
                    tracing::info!(
                        path = %path.display(),
                        line = torn.line_no,
                        bytes = torn.bytes,
                        sidecar = ?sidecar,
                        "removing the torn last line of a session log before appending"
                    );
                    file.set_len(torn.offset).map_err(write_err)?;
                    len = start;
                    repaired = Some(Repair { torn, sidecar });
                }
                if len > 0 && bytes[len - 1] != b'\n' {
                    file.write_all(b"\n").map_err(write_err)?;
                }
                (scan.events.last().map_or(0, |e| e.seq + 1), file, repaired)
            }
        };
        let (next_seq, file, repaired) = opened;
        lock(&self.files).insert(
            session_id.to_string(),
            Arc::new(Mutex::new(OpenLog { file, next_seq })),
        );
        Ok(OpenedLog { next_seq, repaired })
    }
}

impl SessionPersistence for JsonlStore {
    fn open(&self, session_id: &str) -> Result<u64, SessionError> {
        Ok(self.open_log(session_id)?.next_seq)
    }

    fn append_batch(
        &self,
        session_id: &str,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), SessionError> {
        if self.file(session_id).is_none() {
            self.open(session_id)?;
        }
        let path = self.path_of(session_id)?;
        let Some(file) = self.file(session_id) else {
            return Err(SessionError::Write {
                path,
                source: std::io::Error::other("log file was closed concurrently"),
            });
        };
        let mut buf = Vec::with_capacity(events.len() * 256);
        let images = crate::images::images_dir(&self.dir, session_id);
        for event in events {
            // Images go beside the log by hash (before the line: a failed
            // image write fails the batch, nothing of it is written).
            match crate::images::store_images(event, &images)? {
                Some(stored) => write_jsonl_line(&stored, &mut buf),
                None => write_jsonl_line(event, &mut buf),
            }
        }
        let mut open = lock(&file);
        let before = open.file.metadata().map(|m| m.len());
        if let Err(source) = open.file.write_all(&buf) {
            // Roll back a partial write so the file ends on a line boundary.
            if let Ok(len) = before {
                if let Err(e) = open.file.set_len(len) {
                    tracing::error!(path = %path.display(), "cannot roll back a partial write: {e}");
                }
            }
            return Err(SessionError::Write { path, source });
        }
        if let Some(last) = events.last() {
            open.next_seq = last.seq + 1;
        }
        Ok(())
    }

    fn sync(&self, session_id: &str) -> Result<(), SessionError> {
        let Some(file) = self.file(session_id) else {
            return Ok(());
        };
        let open = lock(&file);
        open.file.sync_data().map_err(|source| SessionError::Write {
            path: self.dir.join(format!("{session_id}.jsonl")),
            source,
        })
    }

    fn location(&self, session_id: &str) -> String {
        self.dir
            .join(format!("{session_id}.jsonl"))
            .display()
            .to_string()
    }

    fn close(&self, session_id: &str) {
        lock(&self.files).remove(session_id);
    }

    fn load(&self, session_id: &str) -> Result<LoadedLog, SessionError> {
        load_jsonl(&self.path_of(session_id)?)
    }

    fn list(&self) -> Result<Vec<SessionSummary>, SessionError> {
        list_sessions(&self.dir)
    }
}

impl std::fmt::Debug for JsonlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonlStore")
            .field("dir", &self.dir)
            .finish()
    }
}

// ---------------------------------------------------------------------------
// helpers

fn read_file(path: &Path) -> Result<Vec<u8>, SessionError> {
    std::fs::read(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            SessionError::NotFound {
                path: path.to_path_buf(),
            }
        } else {
            SessionError::Read {
                path: path.to_path_buf(),
                source,
            }
        }
    })
}

/// How long [`lock_exclusive`] waits for a lock held by a writer that is
/// letting go: a session that just closed may still hold its log for a
/// moment (a flush finishing on a blocking thread, a `dsh` process exiting).
const LOCK_RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Takes the exclusive advisory lock of a log file, held while the file is
/// open: two writers would interleave their lines. A held lock is tried
/// again every 20 ms for up to [`LOCK_RELEASE_WAIT`] before it counts as
/// held (`SESSION_LOCKED`).
fn lock_exclusive(file: &File, path: &Path) -> Result<(), SessionError> {
    let deadline = std::time::Instant::now() + LOCK_RELEASE_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(SessionError::Locked {
                    path: path.to_path_buf(),
                })
            }
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(SessionError::Write {
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
    }
}

/// Whether another writer holds the log at `path` right now (a missing file
/// is free). For a friendly early error; [`JsonlStore`] itself enforces the
/// lock when it opens the file.
pub fn is_locked(path: &Path) -> bool {
    match File::open(path) {
        Ok(file) => matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock)),
        Err(_) => false,
    }
}

/// Saves the bytes of a torn line next to the log, privately; `None` (with
/// a warning) when that fails.
fn save_torn(log: &Path, bytes: &[u8]) -> Option<PathBuf> {
    let millis = crate::session::now_ms();
    let name = format!("{}.torn-{millis}", log.file_name()?.to_string_lossy());
    let path = log.with_file_name(name);
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let written = opts
        .open(&path)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()));
    match written {
        Ok(()) => Some(path),
        Err(e) => {
            tracing::warn!(path = %path.display(), "cannot save the torn line of a session log: {e}");
            None
        }
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)
}

fn ensure_writable_dir(dir: &Path) -> Result<(), SessionError> {
    let unwritable = |source| SessionError::DirUnwritable {
        dir: dir.to_path_buf(),
        source,
    };
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(unwritable)?;
    if !dir.is_dir() {
        return Err(unwritable(std::io::Error::other("not a directory")));
    }
    let probe = dir.join(format!(
        ".dsh-write-probe-{}-{}",
        std::process::id(),
        uuid::Uuid::now_v7()
    ));
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    drop(opts.open(&probe).map_err(unwritable)?);
    if let Err(e) = std::fs::remove_file(&probe) {
        // The directory is writable (the probe exists); a leftover probe file
        // is harmless and ignored by listings (not `.jsonl`).
        tracing::debug!(path = %probe.display(), "cannot remove write probe: {e}");
    }
    Ok(())
}

/// The parse of a whole log file.
struct Scan {
    events: Vec<SessionEvent>,
    torn: Option<TornLine>,
}

fn scan(bytes: &[u8], path: &Path) -> Result<Scan, SessionError> {
    let mut events: Vec<SessionEvent> = Vec::new();
    let mut torn = None;
    let mut pos = 0usize;
    let mut line_no = 0usize;
    while pos < bytes.len() {
        line_no += 1;
        let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
        let next = if end < bytes.len() { end + 1 } else { end };
        let line = &bytes[pos..end];
        if !line.trim_ascii().is_empty() {
            match serde_json::from_slice::<SessionEvent>(line) {
                Ok(event) => {
                    if let Some(prev) = events.last() {
                        if event.seq <= prev.seq {
                            return Err(SessionError::CorruptLog {
                                path: path.to_path_buf(),
                                line: line_no,
                                message: format!(
                                    "seq {} does not follow seq {}",
                                    event.seq, prev.seq
                                ),
                            });
                        }
                    }
                    events.push(event);
                }
                // Only a line cut short (no newline) is torn; a complete
                // line that does not parse is corruption, kept for a human.
                Err(e) if end == bytes.len() => {
                    tracing::debug!(path = %path.display(), line = line_no, "torn last line: {e}");
                    torn = Some(TornLine {
                        line_no,
                        bytes: line.len(),
                        offset: pos as u64,
                    });
                    break;
                }
                Err(e) => {
                    return Err(SessionError::CorruptLog {
                        path: path.to_path_buf(),
                        line: line_no,
                        message: e.to_string(),
                    })
                }
            }
        }
        pos = next;
    }
    Ok(Scan { events, torn })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_reports_torn_tail_and_keeps_prefix() {
        let good = r#"{"type":"step/start","seq":0,"time":1,"data":{"turn":1,"step":1}}"#;
        let text = format!("{good}\n{{\"type\":\"step/e");
        let s = scan(text.as_bytes(), Path::new("x.jsonl")).unwrap();
        assert_eq!(s.events.len(), 1);
        let torn = s.torn.unwrap();
        assert_eq!(torn.line_no, 2);
        assert_eq!(torn.offset as usize, good.len() + 1);
        assert_eq!(torn.bytes, r#"{"type":"step/e"#.len());
    }

    #[test]
    fn scan_keeps_complete_last_line_without_newline() {
        let good = r#"{"type":"step/start","seq":0,"time":1,"data":{"turn":1,"step":1}}"#;
        let s = scan(good.as_bytes(), Path::new("x.jsonl")).unwrap();
        assert_eq!(s.events.len(), 1);
        assert!(s.torn.is_none());
    }

    #[test]
    fn scan_rejects_non_increasing_seq() {
        let a = r#"{"type":"step/start","seq":3,"time":1,"data":{"turn":1,"step":1}}"#;
        let text = format!("{a}\n{a}\n");
        match scan(text.as_bytes(), Path::new("x.jsonl")) {
            Err(SessionError::CorruptLog { line, .. }) => assert_eq!(line, 2),
            other => panic!("expected CorruptLog, got {other:?}", other = other.err()),
        }
    }

    #[test]
    fn a_summary_knows_the_workspace_and_the_last_activity() {
        let dir = tempfile::tempdir().unwrap();
        let system = r#"{"type":"request/system","seq":0,"time":5,"data":{"text":"Hi.\n\nEnvironment: working directory /old/ws; OS linux (x86_64); date 2026-01-01."}}"#;
        let moved = r#"{"type":"session/workspace","seq":1,"time":9,"data":{"cwd":"/new/ws"}}"#;
        let old = dir.path().join("s-old.jsonl");
        std::fs::write(&old, format!("{system}\n")).unwrap();
        let s = summarize_jsonl(&old).unwrap();
        assert_eq!(s.cwd.as_deref(), Some(Path::new("/old/ws")));
        assert_eq!((s.created_ms, s.last_ms), (5, 5));
        let new = dir.path().join("s-new.jsonl");
        std::fs::write(&new, format!("{system}\n{moved}\n")).unwrap();
        let s = summarize_jsonl(&new).unwrap();
        assert_eq!(s.cwd.as_deref(), Some(Path::new("/new/ws")));
        assert_eq!((s.created_ms, s.last_ms), (5, 9));
        assert_eq!(
            prompt_workspace("Environment: working directory rel; OS x"),
            None
        );
    }
}
