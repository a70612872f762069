//! `OpenAiAdapter`: HTTP transport, error mapping and the chat-completions
//! half of the streaming driver ([`dsh_llm::stream`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use dsh_kernel::Registration;
use dsh_llm::http::{guarded, Guarded, TransportFailure, MAX_ERROR_BODY};
use dsh_llm::stream::{drive, read_head, Dialect};
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
        let call = Call {
            shared: self.shared.clone(),
            translator: Translator::new(),
            head: Vec::new(),
        };
        drive(call, options)
    }
}

/// The chat-completions half of one streaming call (the driver is
/// [`dsh_llm::stream::drive`]).
struct Call {
    shared: Arc<Shared>,
    translator: Translator,
    /// The first bytes of the body, quoted when it holds no event.
    head: Vec<u8>,
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
        let mut response = match guarded(cancel, Some(cfg.connect_timeout()), send).await {
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
            Guarded::Cancelled => return Err(LlmError::aborted("aborted")),
        };
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(self.http_error(response, cancel).await);
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
                // Up to EXCERPT_BYTES of the body; a read failure only
                // shortens it.
                let idle = self.idle_timeout();
                let mut head = read_head(self, &mut response, cancel, idle, EXCERPT_BYTES).await?;
                head.truncate(EXCERPT_BYTES);
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
        Ok(response)
    }

    /// The next piece of the body; its first [`EXCERPT_BYTES`] are kept
    /// for the message of a body without events.
    async fn read(&mut self, response: &mut reqwest::Response) -> Result<Option<Bytes>, LlmError> {
        let bytes = response
            .chunk()
            .await
            .map_err(|e| transport_error(&self.shared, e))?;
        if let Some(bytes) = &bytes {
            if self.head.len() < EXCERPT_BYTES {
                let take = (EXCERPT_BYTES - self.head.len()).min(bytes.len());
                self.head.extend_from_slice(&bytes[..take]);
            }
        }
        Ok(bytes)
    }

    fn translate(&mut self, payload: &str, out: &mut Vec<StreamChunk>) -> Result<(), LlmError> {
        self.translator.push(payload, out)
    }

    fn is_done(&self) -> bool {
        self.translator.is_done()
    }

    /// A body that ends after a `finish_reason` is a complete answer (see
    /// [`Translator::finish`]); without any data event it was empty or not
    /// an event stream.
    fn end_of_body(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), LlmError> {
        let prefix = &self.shared.prefix;
        if self.translator.saw_payload() {
            self.translator.finish(out).map_err(|mut e| {
                e.message = format!("{prefix}: {}", e.message);
                e
            })
        } else if self.head.is_empty() {
            Err(LlmError::new(
                LlmErrorKind::EmptyResponse,
                format!("{prefix}: the server answered 200 with an empty body"),
            ))
        } else {
            Err(LlmError::new(
                LlmErrorKind::MalformedResponse,
                format!(
                    "{prefix}: the response ended without any SSE data event; it starts: {}",
                    excerpt(&self.head)
                ),
            ))
        }
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
                "{}: no data event from the server within the stream idle timeout ({} ms, [providers.{}] stream_idle_timeout_ms)",
                self.shared.prefix, cfg.stream_idle_timeout_ms, cfg.provider
            ),
        )
    }

    fn event_too_large_error(&self) -> LlmError {
        let cfg = &self.shared.config;
        LlmError::new(
            LlmErrorKind::MalformedResponse,
            format!(
                "{}: an SSE event exceeded {} bytes ([providers.{}] max_event_bytes)",
                self.shared.prefix, cfg.max_event_bytes, cfg.provider
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
        let mut err = status_error(&self.shared.config.provider, status, &body);
        if let Some(d) = retry_after {
            err = err.with_retry_after(d);
        }
        err
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
