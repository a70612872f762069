//! The harness-wide error shape: a stable code, a message, an optional cause.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

pub use dsh_protocol::codes::ErrorCode;

/// A boxed, thread-safe error, the currency of listener failures.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The common error shape every dsh crate can convert into.
///
/// `code` is stable, `message` is for humans and models, `cause` is the
/// underlying error when there is one. Cloning is cheap (the cause is shared).
#[derive(Clone)]
pub struct DshError {
    code: Cow<'static, str>,
    message: String,
    cause: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl DshError {
    /// An error with a code and a message, no cause.
    pub fn new(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            cause: None,
        }
    }

    /// Attaches the underlying error.
    pub fn with_cause(mut self, cause: impl Into<BoxError>) -> Self {
        self.cause = Some(Arc::from(cause.into()));
        self
    }

    /// Wraps any error: keeps its message, uses `code`, records it as cause.
    pub fn wrap(code: impl Into<Cow<'static, str>>, err: impl Into<BoxError>) -> Self {
        let err: BoxError = err.into();
        let message = err.to_string();
        Self::new(code, message).with_cause(err)
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The underlying error, if any.
    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.cause.as_deref()
    }
}

impl ErrorCode for DshError {
    fn code(&self) -> &str {
        &self.code
    }
}

impl fmt::Debug for DshError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("DshError");
        d.field("code", &self.code).field("message", &self.message);
        if let Some(cause) = &self.cause {
            d.field("cause", &cause.to_string());
        }
        d.finish()
    }
}

impl fmt::Display for DshError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DshError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_message_and_cause() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = DshError::wrap("IO", io);
        assert_eq!(e.code(), "IO");
        assert_eq!(e.message(), "no such file");
        assert!(std::error::Error::source(&e).is_some());
        assert_eq!(ErrorCode::code(&e), "IO");
    }
}
