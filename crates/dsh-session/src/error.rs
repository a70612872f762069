//! The crate's error type.

use std::path::PathBuf;

use dsh_kernel::{DshError, ErrorCode};
use dsh_protocol::codes;

/// Everything that can go wrong in `dsh-session`. Each variant has a stable
/// [`code`](SessionError::code).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// `create` with an id the store already holds.
    #[error("session \"{0}\" already exists")]
    DuplicateSession(String),
    /// A session id that cannot name a log file.
    #[error("invalid session id {id:?}: {reason}")]
    InvalidId {
        /// The offending id.
        id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The session directory cannot be created or written.
    #[error(
        "session directory {} is not writable: {source}; fix its permissions or choose another directory",
        dir.display()
    )]
    DirUnwritable {
        /// The directory.
        dir: PathBuf,
        /// The underlying failure.
        source: std::io::Error,
    },
    /// A line before the last one of a log does not parse.
    #[error("{}:{line}: corrupt session log line: {message}", path.display())]
    CorruptLog {
        /// The log file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What the parser reported.
        message: String,
    },
    /// The log file does not exist.
    #[error("session log {} does not exist", path.display())]
    NotFound {
        /// The missing file.
        path: PathBuf,
    },
    /// Reading a log failed.
    #[error("cannot read session log {}: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The underlying failure.
        source: std::io::Error,
    },
    /// Writing or syncing a log failed; the events stay buffered.
    #[error("cannot write session log {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying failure.
        source: std::io::Error,
    },
    /// The stored log holds more events than the live session: another
    /// session with the same id wrote it.
    #[error(
        "session log {location} holds {on_disk} events but session \"{id}\" has only {in_memory}; refusing to mix two sessions in one file: move the old log away"
    )]
    LogConflict {
        /// The session id.
        id: String,
        /// Where the log is stored (a path for files).
        location: String,
        /// Events already stored.
        on_disk: u64,
        /// Events in the live session.
        in_memory: u64,
    },
    /// Another process (or another store in this one) is writing the log.
    #[error("session log {} is in use by another dsh process; wait for it to finish or use another session", path.display())]
    Locked {
        /// The log file.
        path: std::path::PathBuf,
    },
    /// The background writer task failed (panicked or was cancelled).
    #[error("session writer task failed: {0}")]
    Task(String),
}

impl ErrorCode for SessionError {
    /// `DUPLICATE_SESSION`, `INVALID_SESSION_ID`, `SESSION_DIR_UNWRITABLE`,
    /// `CORRUPT_LOG`, `SESSION_NOT_FOUND`, `SESSION_READ_FAILED`,
    /// `SESSION_WRITE_FAILED`, `SESSION_LOG_CONFLICT`, `SESSION_LOCKED` or
    /// `SESSION_TASK_FAILED`.
    fn code(&self) -> &str {
        match self {
            SessionError::DuplicateSession(_) => codes::DUPLICATE_SESSION,
            SessionError::InvalidId { .. } => codes::INVALID_SESSION_ID,
            SessionError::DirUnwritable { .. } => codes::SESSION_DIR_UNWRITABLE,
            SessionError::CorruptLog { .. } => codes::CORRUPT_LOG,
            SessionError::NotFound { .. } => codes::SESSION_NOT_FOUND,
            SessionError::Read { .. } => codes::SESSION_READ_FAILED,
            SessionError::Write { .. } => codes::SESSION_WRITE_FAILED,
            SessionError::LogConflict { .. } => codes::SESSION_LOG_CONFLICT,
            SessionError::Locked { .. } => codes::SESSION_LOCKED,
            SessionError::Task(_) => codes::SESSION_TASK_FAILED,
        }
    }
}

impl From<SessionError> for DshError {
    fn from(e: SessionError) -> Self {
        let code = e.code().to_string();
        DshError::wrap(code, e)
    }
}
