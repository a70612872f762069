//! Errors of the model boundary and their stable codes.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use dsh_kernel::{DshError, ErrorCode};

pub use dsh_schema::{SpecError, ToolArgsError};

/// The codes this crate produces (re-exported from the one table in
/// `dsh_protocol::codes`). Tools may use codes of their own too.
pub mod codes {
    pub use dsh_protocol::codes::{
        ABORTED, ARGS_DRIFT, DUPLICATE_TOOL, INVALID_ARGS, INVALID_JSON, INVALID_SPEC,
        INVALID_TOOL_OUTPUT, LISTENER_PANICKED, PERMISSION_DENIED, TOOL_FAILED, TOOL_PANICKED,
        UNKNOWN_TOOL,
    };
}

/// The error of a tool call: a stable `code`, the model-facing `message`, the
/// violation list (for `INVALID_ARGS`) and notes that the registry appends as
/// extra text blocks.
///
/// Tools return it from their body: [`ToolError::failed`] for a plain failure
/// (`TOOL_FAILED`), [`ToolError::new`] with a code of their own
/// (`ToolError::new("BAD_WORKDIR", msg)`). The registry turns it into an
/// `is_error` result whose first block is `Error: <message>`.
#[derive(Clone)]
pub struct ToolError {
    code: Cow<'static, str>,
    message: String,
    violations: Vec<String>,
    notes: Vec<String>,
    cause: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl ToolError {
    /// An error with a code of the tool's choosing and a message.
    pub fn new(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        ToolError {
            code: code.into(),
            message: message.into(),
            violations: Vec::new(),
            notes: Vec::new(),
            cause: None,
        }
    }

    /// `TOOL_FAILED` with `message`.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(codes::TOOL_FAILED, message)
    }

    /// `TOOL_FAILED` keeping `err`'s message and `err` as the cause.
    pub fn from_error(err: impl std::error::Error + Send + Sync + 'static) -> Self {
        let message = err.to_string();
        let mut e = Self::failed(message);
        e.cause = Some(Arc::new(err));
        e
    }

    /// `INVALID_ARGS` listing `violations`.
    pub fn invalid_args(violations: Vec<String>) -> Self {
        ToolArgsError::new(violations).into()
    }

    /// `ABORTED`: the call was cancelled.
    pub fn aborted(message: impl Into<String>) -> Self {
        Self::new(codes::ABORTED, message)
    }

    /// Appends a note (rendered by the registry as an extra text block).
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Appends notes.
    pub fn with_notes(mut self, notes: impl IntoIterator<Item = String>) -> Self {
        self.notes.extend(notes);
        self
    }

    /// Attaches the underlying error.
    pub fn with_cause(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.cause = Some(Arc::new(cause));
        self
    }

    /// The model-facing message (without the `Error: ` prefix).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The violations of an `INVALID_ARGS` error; empty otherwise.
    pub fn violations(&self) -> &[String] {
        &self.violations
    }

    /// Notes to show after the message.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ToolError");
        d.field("code", &self.code).field("message", &self.message);
        if !self.violations.is_empty() {
            d.field("violations", &self.violations);
        }
        if !self.notes.is_empty() {
            d.field("notes", &self.notes);
        }
        d.finish()
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

impl ErrorCode for ToolError {
    fn code(&self) -> &str {
        &self.code
    }
}

impl From<ToolArgsError> for ToolError {
    fn from(e: ToolArgsError) -> Self {
        let mut out = ToolError::new(codes::INVALID_ARGS, e.to_string());
        out.violations = e.into_violations();
        out
    }
}

impl From<SpecError> for ToolError {
    fn from(e: SpecError) -> Self {
        ToolError::new(codes::INVALID_SPEC, e.to_string()).with_cause(e)
    }
}

impl From<DshError> for ToolError {
    /// Keeps the code and message.
    fn from(e: DshError) -> Self {
        ToolError::new(e.code().to_string(), e.message().to_string()).with_cause(e)
    }
}

impl From<ToolError> for DshError {
    fn from(e: ToolError) -> Self {
        DshError::new(e.code.clone(), e.message.clone()).with_cause(e)
    }
}

impl From<std::io::Error> for ToolError {
    /// `TOOL_FAILED` with the I/O error's message.
    fn from(e: std::io::Error) -> Self {
        ToolError::from_error(e)
    }
}

impl From<serde_json::Error> for ToolError {
    /// `TOOL_FAILED` with the serde error's message.
    fn from(e: serde_json::Error) -> Self {
        ToolError::from_error(e)
    }
}

impl From<String> for ToolError {
    /// `TOOL_FAILED` with this message.
    fn from(message: String) -> Self {
        ToolError::failed(message)
    }
}

impl From<&str> for ToolError {
    /// `TOOL_FAILED` with this message.
    fn from(message: &str) -> Self {
        ToolError::failed(message)
    }
}
