//! `OpenAiAdapter`: HTTP transport, error mapping and the streaming loop.

use std::collections::VecDeque;
use std::sync::Arc;

use dsh_kernel::Registration;
use dsh_llm::http::{guarded, Guarded, TransportFailure, MAX_ERROR_BODY};
use dsh_llm::sse::SseParser;
use dsh_llm::{
    parse_retry_after, ChunkStream, LlmAdapter, LlmError, LlmErrorKind, LlmService, ModelRequest,
    StreamChunk,
};
use tokio_util::sync::CancellationToken;

use crate::config::OpenAiConfig;
use crate::request::request_bytes;
use crate::translate::Translator;

/// The adapter's name ([`LlmAdapter::name`]).
pub const ADAPTER_NAME: &str = "openai-chat";

/// The `user-agent` header sent with every request.
pub const USER_AGENT: &str = concat!("dsh/", env!("CARGO_PKG_VERSION"));

/// How many bytes of a response that is not an event stream are quoted in
/// its `MALFORMED_RESPONSE` message.
const EXCERPT_BYTES: usize = 160;

/// The OpenAI chat-completions adapter for one provider.
///
/// One instance serves every model of its [`OpenAiConfig`]; the request's
/// model name picks the route whose wire id is sent. [`LlmAdapter::stream`]
/// is lazy: the body is built on first poll, before any HTTP. Failures
/// arrive as `Err` items (`AUTH`, `RATE_LIMIT` with `retry_after`,
/// `CONTEXT_WINDOW_EXCEEDED`, `INVALID_REQUEST`, `SERVER`, `HTTP_<n>`,
/// `EMPTY_RESPONSE`, `MALFORMED_RESPONSE`, `NETWORK`, `TIMEOUT`, `ABORTED`,
/// `UNSUPPORTED`, `NO_ADAPTER`); `after_output` is set on errors that follow
/// a delivered chunk. Cancelling `options.cancel` ends the stream promptly
/// with `ABORTED` and drops the connection.
pub struct OpenAiAdapter {
    shared: Arc<Shared>,
}

struct Shared {
    config: OpenAiConfig,
    endpoint: String,
    /// `llm-openai (<provider>)`: the prefix of the adapter's own messages.
    prefix: String,
    client: reqwest::Client,
}

impl OpenAiAdapter {
    /// Builds the adapter and its HTTP client (rustls with the `ring`
    /// provider, installed process-wide if no provider is installed yet).
    ///
    /// # Errors
    /// `INVALID_CONFIG` when [`OpenAiConfig::validate`] fails; `NETWORK`
    /// when the HTTP client cannot be built. A missing key is not an error
    /// (local servers need none): requests go without `Authorization`, and
    /// a server that wants one answers 401 (`AUTH`).
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        config
            .validate()
            .map_err(|m| LlmError::new(LlmErrorKind::InvalidConfig, format!("llm-openai: {m}")))?;
        // Err means another provider is already installed, which is fine:
        // reqwest uses whatever default provider the process has.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout())
            .build()
            .map_err(|e| {
                LlmError::new(
                    LlmErrorKind::Network,
                    format!("llm-openai: cannot build the HTTP client: {e}"),
                )
                .with_cause(e)
            })?;
        Ok(Self {
            shared: Arc::new(Shared {
                endpoint: config.endpoint(),
                prefix: format!("llm-openai ({})", config.provider),
                config,
                client,
            }),
        })
    }

    /// The configuration this adapter was built with.
    pub fn config(&self) -> &OpenAiConfig {
        &self.shared.config
    }
}

/// The plugin: the configuration installs the adapter into the kernel's
/// [`LlmService`] (see [`register`], which it calls).
impl dsh_kernel::Plugin for OpenAiConfig {
    /// # Errors
    /// `MISSING_SERVICE` without an [`LlmService`]; as [`register`].
    fn install(self, kernel: &dsh_kernel::Kernel) -> Result<Registration, dsh_kernel::DshError> {
        let service = kernel
            .service::<LlmService>()
            .map_err(dsh_kernel::DshError::from)?;
        register(&service, self).map_err(dsh_kernel::DshError::from)
    }
}

/// Builds an [`OpenAiAdapter`] and registers it for every model name of
/// `config.models` (all or nothing); dropping the registration unregisters
/// them.
///
/// # Errors
/// `INVALID_CONFIG` for an invalid configuration (nothing registered, no
/// request made); `DUPLICATE_ADAPTER` when a model name is already served.
pub fn register(service: &LlmService, config: OpenAiConfig) -> Result<Registration, LlmError> {
    let names: Vec<String> = config.models.iter().map(|r| r.name.clone()).collect();
    let adapter = OpenAiAdapter::new(config)?;
    service.register_adapter(&names, Arc::new(adapter))
}

impl LlmAdapter for OpenAiAdapter {
    fn name(&self) -> &str {
        ADAPTER_NAME
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
    /// The first bytes of the body, quoted when it holds no event.
    head: Vec<u8>,
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
        let cfg = &self.shared.config;
        let (idle, idle_ms, max_event) = (
            cfg.stream_idle_timeout(),
            cfg.stream_idle_timeout_ms,
            cfg.max_event_bytes,
        );
        let prefix = self.shared.prefix.clone();
        let provider = cfg.provider.clone();
        let Phase::Body(body) = &mut self.phase else {
            return None;
        };
        let Body {
            response,
            idle_deadline,
            parser,
            translator,
            head,
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
        if error.is_none() && !translator.is_done() && parser.is_exhausted() {
            error = if translator.saw_payload() {
                translator.finish(&mut self.scratch).err().map(|mut e| {
                    e.message = format!("{prefix}: {}", e.message);
                    e
                })
            } else if head.is_empty() {
                Some(LlmError::new(
                    LlmErrorKind::EmptyResponse,
                    format!("{prefix}: the server answered 200 with an empty body"),
                ))
            } else {
                Some(LlmError::new(
                    LlmErrorKind::MalformedResponse,
                    format!(
                        "{prefix}: the response ended without any SSE data event; it starts: {}",
                        excerpt(head)
                    ),
                ))
            };
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
        if !self.queue.is_empty() {
            return None;
        }
        // Everything complete was consumed: what is left is one partial
        // event. Bounded: at most the limit plus one network read.
        if parser.buffered() > max_event {
            self.fail(LlmError::new(
                LlmErrorKind::MalformedResponse,
                format!("{prefix}: an SSE event exceeded {max_event} bytes ([providers.{provider}] max_event_bytes)"),
            ));
            return None;
        }
        let remaining = idle_deadline.saturating_duration_since(tokio::time::Instant::now());
        match guarded(&self.cancel, Some(remaining), response.chunk()).await {
            Guarded::Done(Ok(Some(bytes))) => {
                if head.len() < EXCERPT_BYTES {
                    let take = (EXCERPT_BYTES - head.len()).min(bytes.len());
                    head.extend_from_slice(&bytes[..take]);
                }
                parser.push(&bytes);
            }
            Guarded::Done(Ok(None)) => parser.end(),
            Guarded::Done(Err(e)) => {
                let e = transport_error(&self.shared, e);
                self.fail(e);
            }
            Guarded::TimedOut => self.fail(LlmError::new(
                LlmErrorKind::Timeout,
                format!(
                    "{prefix}: no data event from the server within the stream idle timeout ({idle_ms} ms, [providers.{provider}] stream_idle_timeout_ms)"
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
                "llm-openai: stream polled after it ended",
            ));
        };
        let shared = self.shared.clone();
        let cfg = &shared.config;
        let body = request_bytes(&options, cfg)?;
        drop(options);
        let mut request = shared
            .client
            .post(&shared.endpoint)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .header("user-agent", USER_AGENT);
        if let Some(key) = cfg.key() {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        for (name, value) in &cfg.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let send = request.body(body).send();
        // TCP connect + TLS + waiting for the response headers.
        let response = match guarded(&self.cancel, Some(cfg.connect_timeout()), send).await {
            Guarded::Done(Ok(r)) => r,
            Guarded::Done(Err(e)) => return Err(transport_error(&shared, e)),
            Guarded::TimedOut => {
                return Err(LlmError::new(
                    LlmErrorKind::Timeout,
                    format!(
                        "{}: no response headers within the connect timeout ({} ms, [providers.{}] connect_timeout_ms)",
                        shared.prefix, cfg.connect_timeout_ms, cfg.provider
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
                format!(
                    "{}: the server answered {status} without a body",
                    shared.prefix
                ),
            ));
        }
        // A 200 from a captive portal or a proxy is HTML; a server that
        // ignored `stream` answers JSON. A missing Content-Type is parsed
        // as SSE (and judged by its contents).
        if let Some(ct) = response.headers().get(reqwest::header::CONTENT_TYPE) {
            let text = String::from_utf8_lossy(ct.as_bytes()).into_owned();
            let essence = text.split(';').next().unwrap_or("").trim();
            if !essence.eq_ignore_ascii_case("text/event-stream") {
                let head = self.read_head(response).await?;
                return Err(LlmError::new(
                    LlmErrorKind::MalformedResponse,
                    format!(
                        "{}: expected an event stream (text/event-stream), got {}; the body starts: {}",
                        shared.prefix,
                        excerpt(text.as_bytes()),
                        excerpt(&head)
                    ),
                )
                .with_status(status));
            }
        }
        self.phase = Phase::Body(Box::new(Body {
            response,
            idle_deadline: tokio::time::Instant::now() + cfg.stream_idle_timeout(),
            parser: SseParser::new(),
            translator: Translator::new(),
            head: Vec::new(),
        }));
        Ok(())
    }

    /// Up to [`EXCERPT_BYTES`] of the body, read under the idle limit; a
    /// read failure only shortens it.
    async fn read_head(&mut self, mut response: reqwest::Response) -> Result<Vec<u8>, LlmError> {
        let mut head = Vec::new();
        while head.len() < EXCERPT_BYTES {
            match guarded(
                &self.cancel,
                Some(self.shared.config.stream_idle_timeout()),
                response.chunk(),
            )
            .await
            {
                Guarded::Done(Ok(Some(b))) => head.extend_from_slice(&b),
                Guarded::Cancelled => return Err(self.abort()),
                _ => break,
            }
        }
        head.truncate(EXCERPT_BYTES);
        Ok(head)
    }

    /// Maps a non-2xx response to its error.
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
        let mut err = status_error(&self.shared.config.provider, status, &body);
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

/// The error for a non-2xx `status` with the response `body` from
/// `provider`: [`dsh_llm::http::status_error`] — 401/403 `AUTH`, 429
/// `RATE_LIMIT`, a context-length complaint (OpenAI's
/// `context_length_exceeded`, llama.cpp's "exceeds the available context
/// size", vLLM's "maximum context length", Ollama's "prompt too long")
/// `CONTEXT_WINDOW_EXCEEDED`, other 400s `INVALID_REQUEST`, ≥500 `SERVER`,
/// else `HTTP_<n>`; the message is the server's own, else
/// `<provider> API error (HTTP <n>)`.
pub fn status_error(provider: &str, status: u16, body: &[u8]) -> LlmError {
    dsh_llm::http::status_error(provider, status, body)
}

fn transport_error(shared: &Shared, e: reqwest::Error) -> LlmError {
    let failure = match (e.is_connect(), e.is_timeout()) {
        (true, true) => TransportFailure::ConnectTimeout,
        (true, false) => TransportFailure::Connect,
        (false, true) => TransportFailure::Timeout,
        (false, false) => TransportFailure::Other,
    };
    let api = format!("{} API", shared.config.provider);
    dsh_llm::http::transport_error(&shared.prefix, &api, failure, e)
}

/// `bytes` as text fit to quote: lossy UTF-8, control and bidi characters
/// escaped (`\n`, `\u{1b}`), whitespace runs kept short.
fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}');
        if c.is_control() || bidi {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_escapes_controls_and_bidi() {
        assert_eq!(
            excerpt(b"<html>\n\x1b[31m\xe2\x80\xae x"),
            r#""<html>\n\u{1b}[31m\u{202e} x""#
        );
        assert_eq!(excerpt(b"\xff"), "\"\u{fffd}\"");
    }
}
