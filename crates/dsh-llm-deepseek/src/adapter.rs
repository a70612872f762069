//! `DeepSeekAdapter`: HTTP transport, error mapping and the streaming loop.

use std::collections::VecDeque;
use std::sync::Arc;

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
use dsh_llm::sse::SseParser;

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
        let run = Run {
            cancel: options.cancel.clone(),
            shared: self.shared.clone(),
            options: Some(options),
            phase: Phase::Init,
            queue: VecDeque::new(),
            scratch: Vec::new(),
            pending_error: None,
            emitted: false,
        };
        Box::pin(futures_util::stream::unfold(run, |mut run| async move {
            let item = run.step().await?;
            Some((item, run))
        }))
    }
}

enum Phase {
    Init,
    Body(Box<Body>),
    Finished,
}

struct Body {
    response: reqwest::Response,
    /// When the stream is abandoned unless a data event arrives first.
    idle_deadline: tokio::time::Instant,
    parser: SseParser,
    translator: Translator,
}

/// The state of one streaming call.
struct Run {
    shared: Arc<Shared>,
    options: Option<ModelRequest>,
    cancel: CancellationToken,
    phase: Phase,
    queue: VecDeque<StreamChunk>,
    scratch: Vec<StreamChunk>,
    /// An error to report once the queued chunks are out.
    pending_error: Option<LlmError>,
    /// Whether a chunk was handed to the consumer.
    emitted: bool,
}

impl Run {
    /// The next stream item, or `None` at the end.
    async fn step(&mut self) -> Option<Result<StreamChunk, LlmError>> {
        loop {
            let ended = matches!(self.phase, Phase::Finished)
                && self.queue.is_empty()
                && self.pending_error.is_none();
            if ended {
                return None;
            }
            // Cancellation wins over anything still queued.
            if self.cancel.is_cancelled() {
                return Some(Err(self.abort()));
            }
            if let Some(chunk) = self.queue.pop_front() {
                self.emitted = true;
                return Some(Ok(chunk));
            }
            if let Some(mut e) = self.pending_error.take() {
                e.after_output = self.emitted;
                return Some(Err(e));
            }
            match &mut self.phase {
                Phase::Finished => return None,
                Phase::Init => {
                    if let Err(e) = self.start().await {
                        self.fail(e);
                    }
                }
                Phase::Body(_) => {
                    if let Some(item) = self.body_step().await {
                        return Some(item);
                    }
                }
            }
        }
    }

    /// Translates buffered payloads, else reads the next piece of the body.
    /// Returns an item only when the call was cancelled.
    async fn body_step(&mut self) -> Option<Result<StreamChunk, LlmError>> {
        let idle = self.shared.config.stream_idle_timeout();
        let idle_ms = self.shared.config.stream_idle_timeout_ms;
        let max_event = self.shared.config.max_event_bytes;
        let Phase::Body(body) = &mut self.phase else {
            return None;
        };
        let Body {
            response,
            idle_deadline,
            parser,
            translator,
        } = &mut **body;
        let mut error = None;
        while let Some(payload) = parser.next_payload() {
            // Only data events reset the idle timer (comments do not).
            *idle_deadline = tokio::time::Instant::now() + idle;
            if let Err(e) = translator.push(payload, &mut self.scratch) {
                error = Some(e);
                break;
            }
            if translator.is_done() {
                break;
            }
        }
        self.queue.extend(self.scratch.drain(..));
        if let Some(e) = error {
            self.fail(e);
            return None;
        }
        if translator.is_done() {
            self.phase = Phase::Finished;
            return None;
        }
        if parser.is_exhausted() {
            self.fail(LlmError::new(
                LlmErrorKind::StreamClosed,
                "SSE stream ended without [DONE]",
            ));
            return None;
        }
        if !self.queue.is_empty() {
            return None;
        }
        // Everything complete was consumed: what is left is one partial
        // event. Bounded: at most the limit plus one network read.
        if parser.buffered() > max_event {
            self.fail(LlmError::new(
                LlmErrorKind::MalformedResponse,
                format!("llm-deepseek: an SSE event exceeded {max_event} bytes"),
            ));
            return None;
        }
        let remaining = idle_deadline.saturating_duration_since(tokio::time::Instant::now());
        match guarded(&self.cancel, Some(remaining), response.chunk()).await {
            Guarded::Done(Ok(Some(bytes))) => parser.push(&bytes),
            Guarded::Done(Ok(None)) => parser.end(),
            Guarded::Done(Err(e)) => self.fail(transport_error(e)),
            Guarded::TimedOut => self.fail(LlmError::new(
                LlmErrorKind::Timeout,
                format!(
                    "llm-deepseek: no data event from the server within the stream idle timeout ({idle_ms} ms, [deepseek] stream_idle_timeout_ms)"
                ),
            )),
            Guarded::Cancelled => return Some(Err(self.abort())),
        }
        None
    }

    /// Serializes the request, sends it and checks the status.
    async fn start(&mut self) -> Result<(), LlmError> {
        let Some(options) = self.options.take() else {
            return Err(LlmError::new(
                LlmErrorKind::StreamClosed,
                "llm-deepseek: stream polled after it ended",
            ));
        };
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
        let response = match guarded(&self.cancel, header_limit, request).await {
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
            Guarded::Cancelled => return Err(self.abort()),
        };
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(self.http_error(response).await);
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
        let idle_deadline = tokio::time::Instant::now() + self.shared.config.stream_idle_timeout();
        self.phase = Phase::Body(Box::new(Body {
            response,
            idle_deadline,
            parser: SseParser::new(),
            translator: Translator::new(),
        }));
        Ok(())
    }

    /// Maps a non-2xx response to its error (fact sheet §e).
    async fn http_error(&mut self, mut response: reqwest::Response) -> LlmError {
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let mut body = Vec::new();
        // Read the error body within the same cancel/timeout guard as a
        // stream read; a failure only loses the provider's message.
        while body.len() < MAX_ERROR_BODY {
            match guarded(
                &self.cancel,
                Some(self.shared.config.stream_idle_timeout()),
                response.chunk(),
            )
            .await
            {
                Guarded::Done(Ok(Some(b))) => body.extend_from_slice(&b),
                Guarded::Cancelled => return self.abort(),
                _ => break,
            }
        }
        let mut err = status_error(status, &body);
        if let Some(d) = retry_after {
            err = err.with_retry_after(d);
        }
        err
    }

    fn fail(&mut self, e: LlmError) {
        self.pending_error = Some(e);
        self.phase = Phase::Finished;
    }

    /// Drops the connection and everything queued; returns `ABORTED`.
    fn abort(&mut self) -> LlmError {
        self.phase = Phase::Finished;
        self.queue.clear();
        self.pending_error = None;
        let mut e = LlmError::aborted("aborted");
        e.after_output = self.emitted;
        e
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
