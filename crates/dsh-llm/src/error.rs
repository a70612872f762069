//! `LlmError`: the error of the LLM layer and its adapters.

use std::time::Duration;

use dsh_kernel::{BoxError, DshError, ErrorCode};
use dsh_protocol::codes;

/// What went wrong in the LLM layer. The stable code is [`LlmError::code`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LlmErrorKind {
    /// No adapter serves the requested model (`NO_ADAPTER`).
    NoAdapter,
    /// A model name is already served by another adapter (`DUPLICATE_ADAPTER`).
    DuplicateAdapter,
    /// The request uses a feature the adapter does not support (`UNSUPPORTED`).
    Unsupported,
    /// HTTP 401/403 or no API key (`AUTH`).
    Auth,
    /// HTTP 429 (`RATE_LIMIT`).
    RateLimit,
    /// HTTP 400 (`INVALID_REQUEST`).
    InvalidRequest,
    /// HTTP 400 saying the request exceeds the model's context window
    /// (`CONTEXT_WINDOW_EXCEEDED`).
    ContextWindowExceeded,
    /// HTTP 5xx (`SERVER`).
    Server,
    /// Any other non-2xx status (`HTTP_<status>`).
    Http(u16),
    /// 2xx without a body (`EMPTY_RESPONSE`).
    EmptyResponse,
    /// The stream ended before its end marker (`STREAM_CLOSED`).
    StreamClosed,
    /// A payload could not be parsed (`MALFORMED_RESPONSE`).
    MalformedResponse,
    /// Connecting or reading failed (`NETWORK`).
    Network,
    /// A configured timeout elapsed (`TIMEOUT`).
    Timeout,
    /// The caller cancelled the request (`ABORTED`).
    Aborted,
    /// A chunk sequence could not be assembled (`INCOMPLETE_BLOCK`).
    IncompleteBlock,
    /// The adapter's configuration is invalid (`INVALID_CONFIG`).
    InvalidConfig,
}

/// An error of the LLM layer: a kind (whose code is stable), a message, the
/// HTTP status for non-2xx responses, a `Retry-After` hint, and a cause.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct LlmError {
    /// What went wrong.
    pub kind: LlmErrorKind,
    /// Human-readable message (the provider's own message when it sent one).
    pub message: String,
    /// HTTP status, only for non-2xx responses.
    pub status: Option<u16>,
    /// The provider's `Retry-After`, when it sent one.
    pub retry_after: Option<Duration>,
    /// Whether any chunk had already been delivered when this error happened
    /// (retrying then would duplicate output).
    pub after_output: bool,
    #[source]
    cause: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

impl LlmError {
    /// An error of `kind` with `message`.
    pub fn new(kind: LlmErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            retry_after: None,
            after_output: false,
            cause: None,
        }
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Sets the retry hint.
    pub fn with_retry_after(mut self, d: Duration) -> Self {
        self.retry_after = Some(d);
        self
    }

    /// Attaches the underlying error.
    pub fn with_cause(mut self, cause: impl Into<BoxError>) -> Self {
        self.cause = Some(std::sync::Arc::from(cause.into()));
        self
    }

    /// `NO_ADAPTER`: `no adapter registered for model "<model>"`.
    pub fn no_adapter(model: &str) -> Self {
        Self::new(
            LlmErrorKind::NoAdapter,
            format!("no adapter registered for model \"{model}\""),
        )
    }

    /// `DUPLICATE_ADAPTER`: `an adapter for model "<model>" is already registered`.
    pub fn duplicate_adapter(model: &str) -> Self {
        Self::new(
            LlmErrorKind::DuplicateAdapter,
            format!("an adapter for model \"{model}\" is already registered"),
        )
    }

    /// `ABORTED` with the given reason text.
    pub fn aborted(reason: impl Into<String>) -> Self {
        Self::new(LlmErrorKind::Aborted, reason)
    }

    /// Whether a retry could help: rate limits, server errors, network
    /// failures and timeouts, and only when no output was delivered yet.
    pub fn is_transient(&self) -> bool {
        !self.after_output
            && matches!(
                self.kind,
                LlmErrorKind::RateLimit
                    | LlmErrorKind::Server
                    | LlmErrorKind::Network
                    | LlmErrorKind::Timeout
            )
    }
}

impl ErrorCode for LlmError {
    /// `NO_ADAPTER`, `AUTH`, `HTTP_402`, … (see the variants of
    /// [`LlmErrorKind`]).
    fn code(&self) -> &str {
        match &self.kind {
            LlmErrorKind::NoAdapter => codes::NO_ADAPTER,
            LlmErrorKind::DuplicateAdapter => codes::DUPLICATE_ADAPTER,
            LlmErrorKind::Unsupported => codes::UNSUPPORTED,
            LlmErrorKind::Auth => codes::AUTH,
            LlmErrorKind::RateLimit => codes::RATE_LIMIT,
            LlmErrorKind::InvalidRequest => codes::INVALID_REQUEST,
            LlmErrorKind::ContextWindowExceeded => codes::CONTEXT_WINDOW_EXCEEDED,
            LlmErrorKind::Server => codes::SERVER,
            LlmErrorKind::Http(n) => http_code(*n),
            LlmErrorKind::EmptyResponse => codes::EMPTY_RESPONSE,
            LlmErrorKind::StreamClosed => codes::STREAM_CLOSED,
            LlmErrorKind::MalformedResponse => codes::MALFORMED_RESPONSE,
            LlmErrorKind::Network => codes::NETWORK,
            LlmErrorKind::Timeout => codes::TIMEOUT,
            LlmErrorKind::Aborted => codes::ABORTED,
            LlmErrorKind::IncompleteBlock => codes::INCOMPLETE_BLOCK,
            LlmErrorKind::InvalidConfig => codes::INVALID_CONFIG,
        }
    }
}

/// `HTTP_<status>` as a `&'static str`: HTTP statuses are three digits, so
/// the 1,000 possible texts are built once and shared.
fn http_code(status: u16) -> &'static str {
    static TABLE: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| (0..1000).map(|n| format!("HTTP_{n}")).collect());
    match table.get(usize::from(status)) {
        Some(code) => code,
        None => "HTTP_<status>",
    }
}

impl From<LlmError> for DshError {
    fn from(e: LlmError) -> Self {
        let code = e.code().to_string();
        let message = e.message.clone();
        DshError::new(code, message).with_cause(e)
    }
}
