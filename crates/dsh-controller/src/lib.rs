//! The controller: the one API every dsh front end drives.
//!
//! A front end translates: key presses, ACP requests, JSON-RPC frames or
//! command-line flags into controller commands, and controller events into
//! text, ACP updates or frames. It never reaches past the controller into
//! an agent, the kernel or the log, so a behaviour (a command, an event)
//! is added here once and every front end has it.
//!
//! - [`Controller`]: the session registry. [`Controller::open`] starts a
//!   session (new or resumed), [`Controller::fork`] copies one,
//!   [`Controller::list`], [`Controller::get`], [`Controller::saved`],
//!   [`Controller::close`].
//! - [`Session`]: one open session's commands (prompt, steer, abort,
//!   model, permission mode, plan mode, compact, clear, answer an
//!   approval, the chat commands) and [`Session::subscribe`], its one
//!   typed event stream ([`Event`], numbered from 0; a reader resumes
//!   from any number the ring still holds).
//! - Approval questions are events; any client attached with
//!   [`Session::attach_approver`] may answer, the first answer wins.
//!
//! ```no_run
//! # async fn demo() {
//! use dsh_controller::{Controller, EventBody, SessionOptions};
//! let controller = Controller::new(dsh::Settings { model: Some("echo".into()), ..Default::default() });
//! let session = controller.open(SessionOptions::default()).await.ok().unwrap();
//! let mut events = session.subscribe(None);
//! session.prompt("echo hi").await.unwrap();
//! while let Some(Ok(event)) = events.next().await {
//!     match &event.body {
//!         EventBody::MessageDelta { text } => print!("{text}"),
//!         EventBody::TurnEnded { .. } => break,
//!         _ => {}
//!     }
//! }
//! controller.shutdown("done").await;
//! # }
//! ```

#![warn(missing_docs)]

mod approvals;
pub mod attach;
pub mod commands;
mod controller;
pub mod event;
mod hub;
mod questions;
mod session;
pub mod translate;
mod undo;

pub use commands::Reply;
pub use controller::{Controller, OpenError, SessionOptions, FORK_EVENT};
pub use event::{
    ApprovalKind, Decision, Event, EventBody, FileDiff, QuestionAnswer, QuestionChoice,
    QuestionReply, QuestionSpec, TodoEntry,
};
pub use hub::{Lost, Subscription, DEFAULT_RING_EVENTS, RING_BYTES};
pub use session::{ApproverGuard, Job, Session, SessionInfo, FILES_WALK_MAX};

use dsh_kernel::ErrorCode;

/// Why a command failed: a stable code (`TURN_RUNNING`, `UNKNOWN_APPROVAL`,
/// `PROMPT_BLOCKED`, …; see `docs/error-codes.md`) and a message a person
/// or a model can act on.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    thiserror::Error,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[error("{message}")]
pub struct CommandError {
    /// The code.
    pub code: String,
    /// What went wrong and what to do.
    pub message: String,
}

impl CommandError {
    /// An error with `code` and `message`.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.to_string(),
            message: message.into(),
        }
    }

    /// An error carrying another error's own code.
    pub fn from_coded(e: impl ErrorCode + std::fmt::Display) -> Self {
        Self::new(e.code(), e.to_string())
    }
}

impl ErrorCode for CommandError {
    fn code(&self) -> &str {
        &self.code
    }
}

/// A command's outcome.
pub type CommandResult<T> = Result<T, CommandError>;
