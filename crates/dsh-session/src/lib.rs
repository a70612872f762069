//! Event-sourced sessions: the append-only event log, the model history
//! derived from it, the session store service and JSONL persistence.
//!
//! Start reading at [`Session`] (the log: synchronous [`Session::append`],
//! O(1) [`Session::derive_messages`]) and [`SessionStore`] (create / get /
//! list, the `session/created`, `session/event` and `session/flush` hooks).
//! [`SessionEvent`] and [`EventPayload`] (from `dsh-protocol`) are the vocabulary, serialized exactly
//! as the reference (`{"type","seq","time","data"}`, `callId`, `isError`).
//! [`derive_messages`] and [`envelope`] are the pure reference algorithms.
//!
//! Persistence is a plugin: [`install_jsonl`] buffers events on
//! `session/event` and writes + fsyncs them at `session/flush` and at scope
//! close, one `<session-id>.jsonl` file per session; [`load_jsonl`] reads a
//! log back, tolerating a torn last line. Images are stored beside the log
//! by content hash, not inline ([`store_images`], [`resolve_images`]). Other backends implement
//! [`SessionPersistence`] and use [`install_persistence`].
//!
//! [`session_stats`] computes validation telemetry (failures per tool and
//! code, violation paths, self-corrections, tokens) from a log alone.
//! [`cost`] prices a log's usage in money (per turn, per step, per model)
//! and scans many logs quickly for `dsh usage`.
//!
//! This crate does not run turns or talk to models (that is the agent loop)
//! and does no I/O on the append path.

#![warn(missing_docs)]

pub mod cost;
mod derive;
mod error;
mod images;
mod jsonl;
mod meter;
mod persist;
mod resume;
mod session;
mod stats;

pub use derive::{
    active_events, derive_message, derive_messages, envelope, prune_text, pruned_len,
    summary_message, Deriver,
};
pub use dsh_protocol::event::*;
pub use error::SessionError;
pub use images::{
    has_inline_image, image_placeholder, images_dir, images_dir_of_log, resolve_images,
    store_images, IMAGES_DIR, IMAGE_URL_PREFIX,
};
pub use jsonl::{
    install_jsonl, is_locked, list_sessions, load_jsonl, summarize_jsonl, write_jsonl_line,
    JsonlPersistence, JsonlStore, OpenedLog, Repair,
};
pub use meter::{
    blocks_bytes, fixed_bytes, format_usage, percent, usage_total, TokenMeter, BYTES_PER_TOKEN,
    IMAGE_ESTIMATE_TOKENS,
};
pub use persist::{
    install_persistence, LoadedLog, SessionPersistence, SessionSummary, TornLine, WORKSPACE_EVENT,
};
pub use resume::{fork_seed, interrupted_results, repair_unfinished};
pub use session::{new_session_id, validate_session_id, Session, SessionStore};
pub use stats::{
    session_stats, violation_path, PathCount, SessionStats, TokenTotals, ToolStats,
    CORRECTION_WINDOW_STEPS, TOP_VIOLATION_PATHS, UNKNOWN_CODE, UNKNOWN_TOOL,
};
