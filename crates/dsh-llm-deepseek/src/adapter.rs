//! `DeepSeekAdapter`: HTTP transport, error mapping and the DeepSeek half
//! of the streaming driver ([`dsh_llm::stream`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use dsh_kernel::Registration;
use dsh_llm::{
    ChunkStream, LlmAdapter, LlmError, LlmErrorKind, LlmService, ModelRequest, StreamChunk,
};
use tokio_util::sync::CancellationToken;

use crate::config::DeepSeekConfig;
use crate::request::request_bytes;
use crate::translate::Translator;
use dsh_llm::http::{guarded, Guarded, TransportFailure, MAX_ERROR_BODY};
use dsh_llm::parse_retry_after;
use dsh_llm::stream::{drive, read_head, Dialect};

/// The `AUTH` message when no API key is configured.
pub const MISSING_KEY: &str =
    "llm-deepseek: an API key is required (Config.apiKey or $DEEPSEEK_API_KEY)";

/// The `user-agent` header sent with every request (the reference's value).
pub const USER_AGENT: &str = "deepseek-harness/0.0.1";

/// The DeepSeek chat-completions adapter.
///
/// One instance serves every configured model; the harness model name is sent
/// verbatim as the wire `model`. [`LlmAdapter::stream`] is lazy: the body is
/// built (and `prefill` rejected) on first poll, before any HTTP. Failures
/// arrive as `Err` items with the codes of fact sheet §e (plus `NETWORK`,
/// `TIMEOUT`, `ABORTED`); `after_output` is set on errors that follow a
/// delivered chunk. Cancelling `options.cancel` ends the stream promptly with
/// `ABORTED` and drops the connection.
pub struct DeepSeekAdapter {
    shared: Arc<Shared>,
}

struct Shared {
    config: DeepSeekConfig,
    api_key: String,
    endpoint: String,
    /// Where requests with strict tools go.
    beta_endpoint: String,
    client: reqwest::Client,
}

impl DeepSeekAdapter {
    /// Builds the adapter and its HTTP client (rustls with the `ring`
    /// provider, installed process-wide if no provider is installed yet).
    ///
    /// # Errors
    /// `INVALID_CONFIG` when [`DeepSeekConfig::validate`] fails (bad
    /// `base_url`, zero timeouts or limits); `AUTH` with [`MISSING_KEY`] when
    /// `config.api_key` is absent or empty; `NETWORK` when the HTTP client
    /// cannot be built.
    pub fn new(config: DeepSeekConfig) -> Result<Self, LlmError> {
        config.validate().map_err(|m| {
            LlmError::new(LlmErrorKind::InvalidConfig, format!("llm-deepseek: {m}"))
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
                    format!("llm-deepseek: cannot build the HTTP client: {e}"),
                )
                .with_cause(e)
            })?;
        let endpoint = config.endpoint();
        let beta_endpoint = config.beta_endpoint();
        Ok(Self {
            shared: Arc::new(Shared {
                config,
                api_key,
                endpoint,
                beta_endpoint,
                client,
            }),
        })
    }

    /// The configuration this adapter was built with.
    pub fn config(&self) -> &DeepSeekConfig {
        &self.shared.config
    }
}

/// The DeepSeek plugin: its configuration installs the adapter into the
/// kernel's [`LlmService`] (see [`register`], which it calls).
impl dsh_kernel::Plugin for DeepSeekConfig {
    /// # Errors
    /// `MISSING_SERVICE` without an [`LlmService`]; as [`register`].
    fn install(self, kernel: &dsh_kernel::Kernel) -> Result<Registration, dsh_kernel::DshError> {
        let service = kernel
            .service::<LlmService>()
            .map_err(dsh_kernel::DshError::from)?;
        register(&service, self).map_err(dsh_kernel::DshError::from)
    }
}

/// Builds a [`DeepSeekAdapter`] and registers it for every name in
/// `config.models` (all or nothing).
///
/// # Errors
/// `INVALID_CONFIG` for an invalid configuration and `AUTH` without an API
/// key (nothing registered, no request ever made);
/// `DUPLICATE_ADAPTER` when a model name is already served.
pub fn register(service: &LlmService, config: DeepSeekConfig) -> Result<Registration, LlmError> {
    let models = config.models.clone();
    let adapter = DeepSeekAdapter::new(config)?;
    service.register_adapter(&models, Arc::new(adapter))
}

impl LlmAdapter for DeepSeekAdapter {
    fn name(&self) -> &str {
        "deepseek"
    }

    fn stream(&self, options: ModelRequest) -> ChunkStream {
        let call = Call {
            shared: self.shared.clone(),
            translator: Translator::new(),
        };
        drive(call, options)
    }
}

/// The DeepSeek half of one streaming call (the driver is
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
        // Strict function calling is served by the beta endpoint only.
        let strict = options
            .tools
            .iter()
            .flat_map(|t| t.schemas())
            .any(|t| t.strict == Some(true));
        let endpoint = if strict {
            &self.shared.beta_endpoint
        } else {
            &self.shared.endpoint
        };
        drop(options);
        let request = self
            .shared
            .client
            .post(endpoint)
            .header("authorization", format!("Bearer {}", self.shared.api_key))
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .header("user-agent", USER_AGENT)
            .body(body)
            .send();
        let cfg = &self.shared.config;
        // TCP connect + TLS + waiting for the response headers.
        let header_limit = Some(cfg.connect_timeout());
        let response = match guarded(cancel, header_limit, request).await {
            Guarded::Done(Ok(r)) => r,
            Guarded::Done(Err(e)) => return Err(transport_error(e)),
            Guarded::TimedOut => {
                return Err(LlmError::new(
                    LlmErrorKind::Timeout,
                    format!(
                        "llm-deepseek: no response headers within the connect timeout ({} ms, [deepseek] connect_timeout_ms)",
                        cfg.connect_timeout_ms
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
                "DeepSeek API returned no response body",
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
                    format!("llm-deepseek: expected text/event-stream, got {text}"),
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
            "SSE stream ended without [DONE]",
        ))
    }

    fn idle_timeout(&self) -> Duration {
        self.shared.config.stream_idle_timeout()
    }

    fn max_event_bytes(&self) -> usize {
        self.shared.config.max_event_bytes
    }

    fn idle_timeout_error(&self) -> LlmError {
        LlmError::new(
            LlmErrorKind::Timeout,
            format!(
                "llm-deepseek: no data event from the server within the stream idle timeout ({} ms, [deepseek] stream_idle_timeout_ms)",
                self.shared.config.stream_idle_timeout_ms
            ),
        )
    }

    fn event_too_large_error(&self) -> LlmError {
        LlmError::new(
            LlmErrorKind::MalformedResponse,
            format!(
                "llm-deepseek: an SSE event exceeded {} bytes",
                self.shared.config.max_event_bytes
            ),
        )
    }
}

impl Call {
    /// Maps a non-2xx response to its error (fact sheet §e).
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

/// The error for a non-2xx `status` with the response `body`:
/// [`dsh_llm::http::status_error`] with the provider name `DeepSeek`.
///
/// Code by status: 401/403 `AUTH`, 429 `RATE_LIMIT`, 400
/// `CONTEXT_WINDOW_EXCEEDED` when the body says the request passes the
/// model's maximum context length (its `error.code` is
/// `context_length_exceeded`, or its message speaks of the maximum context
/// length), other 400s `INVALID_REQUEST`, ≥500 `SERVER`, else `HTTP_<n>`.
/// Message: the body's `error.message` when it is a non-empty string, else
/// `DeepSeek API error (HTTP <n>)`.
pub fn status_error(status: u16, body: &[u8]) -> LlmError {
    dsh_llm::http::status_error("DeepSeek", status, body)
}

fn transport_error(e: reqwest::Error) -> LlmError {
    let failure = if e.is_connect() && e.is_timeout() {
        TransportFailure::ConnectTimeout
    } else if e.is_connect() {
        TransportFailure::Connect
    } else if e.is_timeout() {
        TransportFailure::Timeout
    } else {
        TransportFailure::Other
    };
    dsh_llm::http::transport_error("llm-deepseek", "DeepSeek API", failure, e)
}
