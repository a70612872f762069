//! The crate's error type.

use std::path::PathBuf;

use dsh_protocol::{codes, ErrorCode};

/// Everything that can go wrong with a checkpoint store. Each variant has a
/// stable [`code`](ErrorCode::code): `CHECKPOINT_UNAVAILABLE` when the store
/// cannot be used at all (missing, corrupt, git not installed),
/// `CHECKPOINT_FAILED` when one git or file operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The store is missing or corrupt, or git cannot be run. A restore that
    /// fails with this changed nothing in the workspace.
    #[error(
        "checkpoint store {} is unavailable: {reason}; no files were changed (checkpoints taken before this are lost; a new store starts with the next snapshot)",
        store.display()
    )]
    Unavailable {
        /// The store's directory.
        store: PathBuf,
        /// What is wrong, in words.
        reason: String,
    },
    /// A file operation on the workspace or the store failed.
    #[error("cannot {action} {}: {source}{}", path.display(), if *.unchanged { "; no files were changed" } else { "" })]
    Io {
        /// What was being done (`write`, `delete`, `read`, …).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying failure.
        source: std::io::Error,
        /// Whether the workspace is known to be untouched (the failure came
        /// before anything was written).
        unchanged: bool,
    },
    /// A git command failed (its stderr is quoted).
    #[error("git {command} failed in checkpoint store {}: {message}", store.display())]
    Git {
        /// The git subcommand and its main arguments.
        command: String,
        /// The store's directory.
        store: PathBuf,
        /// git's own message (stderr, trimmed) or the exit status.
        message: String,
    },
    /// A tree id that is not 40 (SHA-1) or 64 (SHA-256) hex digits.
    #[error("{0:?} is not a checkpoint tree id (expected 40 hex digits)")]
    InvalidTreeId(String),
}

impl ErrorCode for CheckpointError {
    /// `CHECKPOINT_UNAVAILABLE` for [`CheckpointError::Unavailable`],
    /// `CHECKPOINT_FAILED` for the others.
    fn code(&self) -> &str {
        match self {
            CheckpointError::Unavailable { .. } => codes::CHECKPOINT_UNAVAILABLE,
            CheckpointError::Io { .. }
            | CheckpointError::Git { .. }
            | CheckpointError::InvalidTreeId(_) => codes::CHECKPOINT_FAILED,
        }
    }
}
