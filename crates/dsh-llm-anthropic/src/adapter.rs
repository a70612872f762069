//! `AnthropicAdapter`: HTTP transport, error mapping and the Messages API
//! half of the streaming driver ([`dsh_llm::stream`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use dsh_kernel::Registration;
use dsh_llm::http::{self, guarded, Guarded, TransportFailure, MAX_ERROR_BODY};
use dsh_llm::stream::{drive, read_head, Dialect};
use dsh_llm::{
    parse_retry_after, ChunkStream, LlmAdapter, LlmError, LlmErrorKind, LlmService, ModelRequest,
    StreamChunk,
};
use tokio_util::sync::CancellationToken;

use crate::config::{AnthropicConfig, ANTHROPIC_VERSION};
use crate::request::request_bytes;
use crate::translate::{api_error, Translator, STREAM_ENDED_EARLY};

/// The `AUTH` message when no API key is configured.
pub const MISSING_KEY: &str =
    "llm-anthropic: an API key is required (set the provider's api_key_env variable, e.g. $ANTHROPIC_API_KEY)";

/// The `user-agent` header sent with every request.
pub const USER_AGENT: &str = concat!("dsh/", env!("CARGO_PKG_VERSION"));

/// The Anthropic Messages API adapter.
///
/// One instance serves every configured [`ModelRoute`](crate::ModelRoute);
/// a request's registered model name is sent as the route's wire id.
/// [`LlmAdapter::stream`] is lazy: the body is built (and `prefill`
/// rejected) on first poll, before any HTTP. Failures arrive as `Err` items
/// (`AUTH`, `RATE_LIMIT` with `retry_after`, `SERVER`,
/// `CONTEXT_WINDOW_EXCEEDED`, `INVALID_REQUEST`, `HTTP_<n>`,
/// `EMPTY_RESPONSE`, `MALFORMED_RESPONSE`, `STREAM_CLOSED`, `NETWORK`,
/// `TIMEOUT`, `ABORTED`); `after_output` is set on errors that follow a
/// delivered chunk. Cancelling `options.cancel` ends the stream promptly
/// with `ABORTED` and drops the connection.
pub struct AnthropicAdapter {
    shared: Arc<Shared>,
}

struct Shared {
    config: AnthropicConfig,
    api_key: String,
    endpoint: String,
    client: reqwest::Client,
}

impl AnthropicAdapter {
    /// Builds the adapter and its HTTP client (rustls with the `ring`
    /// provider, installed process-wide if no provider is installed yet).
    ///
    /// # Errors
    /// `INVALID_CONFIG` when [`AnthropicConfig::validate`] fails; `AUTH`
    /// with [`MISSING_KEY`] when `config.api_key` is absent or empty;
    /// `NETWORK` when the HTTP client cannot be built.
    pub fn new(config: AnthropicConfig) -> Result<Self, LlmError> {
        config.validate().map_err(|m| {
            LlmError::new(LlmErrorKind::InvalidConfig, format!("llm-anthropic: {m}"))
        })?;
        let api_key = match config.api_key.as_deref() {
            Some(k) if !k.is_empty() => k.to_string(),
            _ => return Err(LlmError::new(LlmErrorKind::Auth, MISSING_KEY)),
        };
        // Err means another provider is already installed, which is fine:
        // reqwest uses whatever default provider the process has.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout())
            .build()
            .map_err(|e| {
                LlmError::new(
                    LlmErrorKind::Network,
                    format!("llm-anthropic: cannot build the HTTP client: {e}"),
                )
                .with_cause(e)
            })?;
        let endpoint = config.endpoint();
        Ok(Self {
            shared: Arc::new(Shared {
                config,
                api_key,
                endpoint,
                client,
            }),
        })
    }

    /// The configuration this adapter was built with.
    pub fn config(&self) -> &AnthropicConfig {
        &self.shared.config
    }
}

/// The Anthropic plugin: its configuration installs the adapter into the
/// kernel's [`LlmService`] (see [`register`], which it calls).
impl dsh_kernel::Plugin for AnthropicConfig {
    /// # Errors
    /// `MISSING_SERVICE` without an [`LlmService`]; as [`register`].
    fn install(self, kernel: &dsh_kernel::Kernel) -> Result<Registration, dsh_kernel::DshError> {
        let service = kernel
            .service::<LlmService>()
            .map_err(dsh_kernel::DshError::from)?;
        register(&service, self).map_err(dsh_kernel::DshError::from)
    }
}

/// Builds an [`AnthropicAdapter`] and registers it for the name of every
/// route in `config.models` (all or nothing).
///
/// # Errors
/// `INVALID_CONFIG` for an invalid configuration and `AUTH` without an API
/// key (nothing registered, no request ever made); `DUPLICATE_ADAPTER` when
/// a model name is already served.
pub fn register(service: &LlmService, config: AnthropicConfig) -> Result<Registration, LlmError> {
    let names: Vec<String> = config.models.iter().map(|r| r.name.clone()).collect();
    let adapter = AnthropicAdapter::new(config)?;
    service.register_adapter(&names, Arc::new(adapter))
}

impl LlmAdapter for AnthropicAdapter {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn stream(&self, options: ModelRequest) -> ChunkStream {
        let call = Call {
            shared: self.shared.clone(),
            translator: Translator::new(),
        };
        drive(call, options)
    }
}

/// The Messages API half of one streaming call (the driver is
/// [`dsh_llm::stream::drive`]).
struct Call {
    shared: Arc<Shared>,
    translator: Translator,
}

impl Dialect for Call {
    type Body = reqwest::Response;
    type Bytes = Bytes;

    /// Serializes the request, sends it and checks the status.
    async fn open(
        &mut self,
        options: ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, LlmError> {
        let body = request_bytes(&options, &self.shared.config)?;
        drop(options);
        let request = self
            .shared
            .client
            .post(&self.shared.endpoint)
            .header("x-api-key", &self.shared.api_key)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .header("user-agent", USER_AGENT)
            .body(body)
            .send();
        let cfg = &self.shared.config;
        // TCP connect + TLS + waiting for the response headers.
        let response = match guarded(cancel, Some(cfg.connect_timeout()), request).await {
            Guarded::Done(Ok(r)) => r,
            Guarded::Done(Err(e)) => return Err(transport_error(e)),
            Guarded::TimedOut => {
                return Err(LlmError::new(
                    LlmErrorKind::Timeout,
                    format!(
                        "llm-anthropic: no response headers within the connect timeout ({} ms, [providers.{}] connect_timeout_ms)",
                        cfg.connect_timeout_ms, cfg.provider
                    ),
                ))
            }
            Guarded::Cancelled => return Err(LlmError::aborted("aborted")),
        };
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(self.http_error(response, cancel).await);
        }
        if status == 204 || status == 205 {
            return Err(LlmError::new(
                LlmErrorKind::EmptyResponse,
                "llm-anthropic: the Anthropic API returned no response body",
            ));
        }
        // A 200 from a captive portal or proxy is HTML, not SSE. A missing
        // Content-Type is accepted (parsed as SSE).
        if let Some(ct) = response.headers().get(reqwest::header::CONTENT_TYPE) {
            let text = String::from_utf8_lossy(ct.as_bytes()).into_owned();
            let essence = text.split(';').next().unwrap_or("").trim();
            if !essence.eq_ignore_ascii_case("text/event-stream") {
                return Err(LlmError::new(
                    LlmErrorKind::MalformedResponse,
                    format!(
                        "llm-anthropic: expected text/event-stream, got {text} (is base_url {} an Anthropic Messages API?)",
                        cfg.base_url
                    ),
                )
                .with_status(status));
            }
        }
        Ok(response)
    }

    async fn read(&mut self, response: &mut reqwest::Response) -> Result<Option<Bytes>, LlmError> {
        response.chunk().await.map_err(transport_error)
    }

    fn translate(&mut self, payload: &str, out: &mut Vec<StreamChunk>) -> Result<(), LlmError> {
        self.translator.push(payload, out)
    }

    fn is_done(&self) -> bool {
        self.translator.is_done()
    }

    fn end_of_body(&mut self, _out: &mut Vec<StreamChunk>) -> Result<(), LlmError> {
        Err(LlmError::new(
            LlmErrorKind::StreamClosed,
            STREAM_ENDED_EARLY,
        ))
    }

    fn idle_timeout(&self) -> Duration {
        self.shared.config.stream_idle_timeout()
    }

    fn max_event_bytes(&self) -> usize {
        self.shared.config.max_event_bytes
    }

    fn idle_timeout_error(&self) -> LlmError {
        let cfg = &self.shared.config;
        LlmError::new(
            LlmErrorKind::Timeout,
            format!(
                "llm-anthropic: no data event from the server within the stream idle timeout ({} ms, [providers.{}] stream_idle_timeout_ms)",
                cfg.stream_idle_timeout_ms, cfg.provider
            ),
        )
    }

    fn event_too_large_error(&self) -> LlmError {
        let cfg = &self.shared.config;
        LlmError::new(
            LlmErrorKind::MalformedResponse,
            format!(
                "llm-anthropic: an SSE event exceeded {} bytes ([providers.{}] max_event_bytes)",
                cfg.max_event_bytes, cfg.provider
            ),
        )
    }
}

impl Call {
    /// Maps a non-2xx response to its error.
    async fn http_error(
        &mut self,
        mut response: reqwest::Response,
        cancel: &CancellationToken,
    ) -> LlmError {
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        // Read the error body within the same cancel/timeout guard as a
        // stream read; a failure only loses the provider's message.
        let idle = self.idle_timeout();
        let body = match read_head(self, &mut response, cancel, idle, MAX_ERROR_BODY).await {
            Ok(body) => body,
            Err(aborted) => return aborted,
        };
        let mut err = status_error(status, &body);
        if let Some(d) = retry_after {
            err = err.with_retry_after(d);
        }
        err
    }
}

/// The error for a non-2xx `status` with the response `body` (Anthropic's
/// `{"type":"error","error":{"type":…,"message":…}}`, or anything else).
///
/// Code by the error type, else by status (see
/// [`api_error_kind`](crate::api_error_kind)): 401/403 `AUTH`, 429
/// `RATE_LIMIT`, 529 and other ≥500 `SERVER`, 400 `CONTEXT_WINDOW_EXCEEDED`
/// when the message says the prompt is too long, other 400s
/// `INVALID_REQUEST`, else `HTTP_<n>`. Message: the body's `error.message`
/// followed by its type in parentheses, or `Anthropic API error (HTTP <n>)`.
pub fn status_error(status: u16, body: &[u8]) -> LlmError {
    let value = serde_json::from_slice::<serde_json::Value>(body).ok();
    let error = value.as_ref().and_then(|v| v.get("error"));
    let field = |k: &str| {
        error
            .and_then(|e| e.get(k))
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
    };
    let mut err = api_error(Some(status), field("type"), field("message"));
    // The type names the class better than the status, except where the
    // status is unambiguous about it.
    if status == 429 {
        err.kind = LlmErrorKind::RateLimit;
    }
    err
}

/// `NETWORK` or `TIMEOUT` for a failed connection or body read.
fn transport_error(e: reqwest::Error) -> LlmError {
    let failure = match (e.is_connect(), e.is_timeout()) {
        (true, true) => TransportFailure::ConnectTimeout,
        (true, false) => TransportFailure::Connect,
        (false, true) => TransportFailure::Timeout,
        (false, false) => TransportFailure::Other,
    };
    http::transport_error("llm-anthropic", "Anthropic API", failure, e)
}
