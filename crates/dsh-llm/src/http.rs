//! Provider-neutral helpers for HTTP adapters: the mapping of a non-2xx
//! response to its [`LlmError`], transport failures, and the
//! cancel-or-timeout guard every network wait runs under.
//!
//! Pure functions and a future combinator: no I/O of its own and no HTTP
//! client dependency (the adapters own `reqwest`). Each takes the provider's
//! display name (`"DeepSeek"`, `"ollama"`) for its messages.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::error::{LlmError, LlmErrorKind};

/// Largest error body an adapter should read from a non-2xx response (the
/// rest is ignored): 64 KiB.
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// The error for a non-2xx `status` with the response `body`.
///
/// Code by status: 401/403 `AUTH`, 429 `RATE_LIMIT`; a 400, 413 or ≥500
/// whose body says the request passes the model's context window
/// ([`is_context_overflow`]) `CONTEXT_WINDOW_EXCEEDED`; other 400s
/// `INVALID_REQUEST`, other ≥500 `SERVER`, else `HTTP_<n>`.
///
/// Message: the provider's own message when the body carries a non-empty
/// one — `{"error":{"message":…}}` (OpenAI and most servers),
/// `{"error":"…"}` (Ollama), or a top-level `{"message":…}` (vLLM) — else
/// `<provider> API error (HTTP <n>)`. The `retry_after` hint is the
/// caller's to add (it comes from a header).
pub fn status_error(provider: &str, status: u16, body: &[u8]) -> LlmError {
    let value = serde_json::from_slice::<serde_json::Value>(body).ok();
    let error = value.as_ref().and_then(|v| v.get("error"));
    let text = |v: Option<&serde_json::Value>| {
        v.and_then(serde_json::Value::as_str)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
    };
    let message = text(error.and_then(|e| e.get("message")))
        .or_else(|| text(error))
        .or_else(|| text(value.as_ref().and_then(|v| v.get("message"))));
    let code =
        text(error.and_then(|e| e.get("code"))).or_else(|| text(error.and_then(|e| e.get("type"))));
    let overflow = || is_context_overflow(code.as_deref(), message.as_deref());
    let kind = match status {
        401 | 403 => LlmErrorKind::Auth,
        429 => LlmErrorKind::RateLimit,
        400 | 413 if overflow() => LlmErrorKind::ContextWindowExceeded,
        s if s >= 500 && overflow() => LlmErrorKind::ContextWindowExceeded,
        400 => LlmErrorKind::InvalidRequest,
        s if s >= 500 => LlmErrorKind::Server,
        s => LlmErrorKind::Http(s),
    };
    let message = message.unwrap_or_else(|| format!("{provider} API error (HTTP {status})"));
    LlmError::new(kind, message).with_status(status)
}

/// Whether an error `code` (or `type`) or `message` says the request is
/// longer than the model's context window, in the words of the servers dsh
/// talks to: OpenAI and DeepSeek (`context_length_exceeded`, "maximum
/// context length"), vLLM ("maximum context length"), llama.cpp
/// (`exceed_context_size_error`, "exceeds the available context size"),
/// Ollama and LM Studio ("context length exceeded", "exceeds the context
/// window", "prompt too long"). Case-insensitive.
pub fn is_context_overflow(code: Option<&str>, message: Option<&str>) -> bool {
    let code_says = code.is_some_and(|c| {
        let c = c.to_ascii_lowercase();
        c == "context_length_exceeded" || c == "exceed_context_size_error"
    });
    code_says
        || message.is_some_and(|m| {
            let m = m.to_ascii_lowercase();
            [
                "maximum context length",
                "context length exceeded",
                "exceeds the available context size",
                "exceeds the context window",
                "exceeds maximum context",
                "context window exceeded",
                "prompt too long",
                "prompt is too long",
            ]
            .iter()
            .any(|needle| m.contains(needle))
        })
}

/// What kind of transport failure [`transport_error`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportFailure {
    /// The connection could not be opened (`NETWORK`).
    Connect,
    /// The connection could not be opened in time (`TIMEOUT`).
    ConnectTimeout,
    /// The client's own timer fired (`TIMEOUT`).
    Timeout,
    /// The connection failed after it was opened (`NETWORK`).
    Other,
}

/// The error for a failed connection or body read: `NETWORK` (`TIMEOUT`
/// for [`TransportFailure::Timeout`] and [`TransportFailure::ConnectTimeout`]), message
/// `<prefix>: cannot connect to the <api>: <error>: <source>: …` (or `… timed
/// out`, `the connection to the <api> failed`) with the whole source chain,
/// and `error` attached as the cause.
pub fn transport_error<E>(prefix: &str, api: &str, failure: TransportFailure, error: E) -> LlmError
where
    E: std::error::Error + Send + Sync + 'static,
{
    let kind = match failure {
        TransportFailure::Timeout | TransportFailure::ConnectTimeout => LlmErrorKind::Timeout,
        TransportFailure::Connect | TransportFailure::Other => LlmErrorKind::Network,
    };
    let what = match failure {
        TransportFailure::Connect | TransportFailure::ConnectTimeout => {
            format!("cannot connect to the {api}")
        }
        TransportFailure::Timeout => format!("the {api} timed out"),
        TransportFailure::Other => format!("the connection to the {api} failed"),
    };
    let mut detail = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        source = s.source();
    }
    LlmError::new(kind, format!("{prefix}: {what}: {detail}")).with_cause(error)
}

/// The outcome of [`guarded`].
#[derive(Debug)]
pub enum Guarded<T> {
    /// The future completed with this output.
    Done(T),
    /// The limit elapsed first (the future was dropped).
    TimedOut,
    /// The token fired first (the future was dropped).
    Cancelled,
}

/// Runs `fut` unless `cancel` fires first (checked first when both are
/// ready) or `limit` elapses; `None` means no time limit.
pub async fn guarded<F: Future>(
    cancel: &CancellationToken,
    limit: Option<Duration>,
    fut: F,
) -> Guarded<F::Output> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Guarded::Cancelled,
        r = async {
            match limit {
                Some(l) => tokio::time::timeout(l, fut).await.map_or(Guarded::TimedOut, Guarded::Done),
                None => Guarded::Done(fut.await),
            }
        } => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_kernel::ErrorCode;

    #[test]
    fn statuses_map_to_codes_and_messages_come_from_any_known_shape() {
        let cases: &[(u16, &str, &str, &str)] = &[
            (401, r#"{"error":{"message":"bad key"}}"#, "AUTH", "bad key"),
            (403, "", "AUTH", "X API error (HTTP 403)"),
            (429, r#"{"error":"slow down"}"#, "RATE_LIMIT", "slow down"),
            (
                400,
                r#"{"message":"bad role","object":"error"}"#,
                "INVALID_REQUEST",
                "bad role",
            ),
            (402, "<html>", "HTTP_402", "X API error (HTTP 402)"),
            (
                500,
                r#"{"error":{"message":""}}"#,
                "SERVER",
                "X API error (HTTP 500)",
            ),
            (
                400,
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
                "CONTEXT_WINDOW_EXCEEDED",
                "the request exceeds the available context size, try increasing it",
            ),
            (
                400,
                r#"{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","code":400}"#,
                "CONTEXT_WINDOW_EXCEEDED",
                "This model's maximum context length is 4096 tokens.",
            ),
            (
                500,
                r#"{"error":"prompt too long; exceeded max context length by 12 tokens"}"#,
                "CONTEXT_WINDOW_EXCEEDED",
                "prompt too long; exceeded max context length by 12 tokens",
            ),
            (
                400,
                r#"{"error":{"message":"x","code":"context_length_exceeded"}}"#,
                "CONTEXT_WINDOW_EXCEEDED",
                "x",
            ),
            (
                422,
                r#"{"error":{"message":"maximum context length"}}"#,
                "HTTP_422",
                "maximum context length",
            ),
        ];
        for (status, body, code, message) in cases {
            let e = status_error("X", *status, body.as_bytes());
            assert_eq!(e.code(), *code, "{status} {body}");
            assert_eq!(e.message, *message, "{status} {body}");
            assert_eq!(e.status, Some(*status));
        }
    }

    #[tokio::test]
    async fn guarded_prefers_cancellation_and_times_out() {
        let cancel = CancellationToken::new();
        let r = guarded(
            &cancel,
            Some(Duration::from_millis(5)),
            std::future::pending::<()>(),
        )
        .await;
        assert!(matches!(r, Guarded::TimedOut));
        cancel.cancel();
        let r = guarded(&cancel, None, async { 1 }).await;
        assert!(matches!(r, Guarded::Cancelled));
    }

    #[test]
    fn transport_errors_carry_the_source_chain() {
        let io = std::io::Error::other("refused");
        let e = transport_error("llm-x", "X API", TransportFailure::Connect, io);
        assert_eq!(e.code(), "NETWORK");
        assert_eq!(e.message, "llm-x: cannot connect to the X API: refused");
        let io = std::io::Error::other("slow");
        let e = transport_error("llm-x", "X API", TransportFailure::Timeout, io);
        assert_eq!(e.code(), "TIMEOUT");
    }
}
