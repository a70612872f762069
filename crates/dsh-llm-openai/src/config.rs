//! Adapter configuration: one OpenAI-compatible provider (its base URL,
//! key, models and dialect quirks).

use std::fmt;
use std::time::Duration;

/// Default of [`OpenAiConfig::connect_timeout_ms`] (60 s).
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 60_000;

/// Default of [`OpenAiConfig::stream_idle_timeout_ms`] (300 s).
pub const DEFAULT_STREAM_IDLE_TIMEOUT_MS: u64 = 300_000;

/// Default of [`OpenAiConfig::max_event_bytes`] (16 MiB).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Largest accepted [`OpenAiConfig::connect_timeout_ms`]: 10 minutes.
pub const MAX_CONNECT_TIMEOUT_MS: u64 = 600_000;

/// Largest accepted [`OpenAiConfig::stream_idle_timeout_ms`]: 1 hour.
pub const MAX_STREAM_IDLE_TIMEOUT_MS: u64 = 3_600_000;

/// Largest accepted [`OpenAiConfig::max_event_bytes`]: 256 MiB.
pub const MAX_MAX_EVENT_BYTES: usize = 256 * 1024 * 1024;

/// OpenAI's endpoint, the default [`OpenAiConfig::base_url`].
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Headers dsh sets itself; [`OpenAiConfig::headers`] may not name them.
const RESERVED_HEADERS: [&str; 6] = [
    "authorization",
    "content-type",
    "accept",
    "content-length",
    "host",
    "transfer-encoding",
];

/// One model a provider serves: the name dsh registers (what
/// `ModelRequest.model` and `--model` say) and the id sent on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRoute {
    /// The name registered with the `LlmService` (unique across adapters).
    pub name: String,
    /// The wire `model` id sent to the server (e.g. `qwen3-coder:30b`).
    pub wire: String,
    /// Whether the model takes images; without, each image becomes the text
    /// `[image omitted: this model does not take images]`.
    pub images: bool,
}

impl ModelRoute {
    /// A route whose wire id is its name, without images.
    pub fn new(name: impl Into<String>) -> Self {
        let name = name.into();
        Self {
            wire: name.clone(),
            name,
            images: false,
        }
    }
}

/// Which field carries the output token limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxTokensField {
    /// `max_tokens` (the classic field; every compatible server takes it).
    #[default]
    MaxTokens,
    /// `max_completion_tokens` (what OpenAI's reasoning models require).
    MaxCompletionTokens,
}

impl MaxTokensField {
    /// The wire field name.
    pub fn as_str(self) -> &'static str {
        match self {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// Dialect differences between OpenAI-compatible servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quirks {
    /// Send `"stream_options":{"include_usage":true}` so the last chunk
    /// carries usage (default `true`; turn off for a server that rejects the
    /// field).
    pub include_usage: bool,
    /// The output token limit's field (default `max_tokens`).
    pub max_tokens_field: MaxTokensField,
    /// Sent as `"reasoning_effort"` on every request when set (`low`,
    /// `medium`, `high`, …; passed through as given).
    pub reasoning_effort: Option<String>,
}

impl Default for Quirks {
    /// Usage requested, `max_tokens`, no reasoning effort.
    fn default() -> Self {
        Self {
            include_usage: true,
            max_tokens_field: MaxTokensField::MaxTokens,
            reasoning_effort: None,
        }
    }
}

/// Configuration of one OpenAI-compatible provider.
///
/// Fields are taken as given (no environment is read here). `Debug` never
/// prints the key.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// The provider's registry/display name (`ollama`, `openrouter`): the
    /// `[providers.<provider>]` table named in errors and messages.
    pub provider: String,
    /// The API key, sent as `Authorization: Bearer <key>`; `None` (or empty)
    /// sends no `Authorization` header (local servers need none).
    pub api_key: Option<String>,
    /// The base URL; requests go to `<base_url without trailing '/'>/chat/completions`.
    pub base_url: String,
    /// The models served, each registered under its name.
    pub models: Vec<ModelRoute>,
    /// Limit, in ms, for TCP connect + TLS + waiting for the response
    /// headers; exceeding it fails with `TIMEOUT`. Must be in 1..=[`MAX_CONNECT_TIMEOUT_MS`].
    pub connect_timeout_ms: u64,
    /// Longest wait, in ms, between two SSE data events (comments do not
    /// count); exceeding it fails with `TIMEOUT`. Must be in
    /// 1..=[`MAX_STREAM_IDLE_TIMEOUT_MS`].
    pub stream_idle_timeout_ms: u64,
    /// Largest SSE event buffered, in bytes; a larger one fails the stream
    /// with `MALFORMED_RESPONSE`. Must be in 1..=[`MAX_MAX_EVENT_BYTES`].
    pub max_event_bytes: usize,
    /// The server's dialect differences.
    pub quirks: Quirks,
    /// Extra request headers (OpenRouter's `HTTP-Referer`, `X-Title`), sent
    /// after dsh's own; they may not name `authorization`, `content-type`,
    /// `accept`, `content-length`, `host` or `transfer-encoding`.
    pub headers: Vec<(String, String)>,
}

impl Default for OpenAiConfig {
    /// Provider `openai` at [`DEFAULT_BASE_URL`], no key, no models, default
    /// quirks, 60 s connect/header timeout, 300 s idle timeout, 16 MiB events.
    fn default() -> Self {
        Self {
            provider: "openai".into(),
            api_key: None,
            base_url: DEFAULT_BASE_URL.into(),
            models: Vec::new(),
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            stream_idle_timeout_ms: DEFAULT_STREAM_IDLE_TIMEOUT_MS,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            quirks: Quirks::default(),
            headers: Vec::new(),
        }
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("provider", &self.provider)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("base_url", &self.base_url)
            .field("models", &self.models)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("stream_idle_timeout_ms", &self.stream_idle_timeout_ms)
            .field("max_event_bytes", &self.max_event_bytes)
            .field("quirks", &self.quirks)
            .field("headers", &self.headers)
            .finish()
    }
}

impl OpenAiConfig {
    /// `<base_url without trailing '/'>/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }

    /// The route registered under `name`, if any.
    pub fn route(&self, name: &str) -> Option<&ModelRoute> {
        self.models.iter().find(|r| r.name == name)
    }

    /// The key when one is set and non-empty.
    pub fn key(&self) -> Option<&str> {
        self.api_key.as_deref().filter(|k| !k.is_empty())
    }

    /// [`connect_timeout_ms`](Self::connect_timeout_ms) as a duration.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    /// [`stream_idle_timeout_ms`](Self::stream_idle_timeout_ms) as a duration.
    pub fn stream_idle_timeout(&self) -> Duration {
        Duration::from_millis(self.stream_idle_timeout_ms)
    }

    /// Checks the configuration up front (no I/O): a non-empty provider
    /// name; `base_url` an absolute `http`/`https` URL with a host; the
    /// limits non-zero and at most their ceilings; every model with a
    /// non-empty name and wire id, no name twice; a key and extra headers
    /// that HTTP can carry (no line breaks), no extra header dsh sets itself.
    ///
    /// # Errors
    /// The first problem, as a message naming the dsh.toml key, e.g.
    /// `[providers.ollama] base_url "htp:/x" is not a valid URL: …`. A
    /// message about the key never quotes it.
    pub fn validate(&self) -> Result<(), String> {
        if self.provider.trim().is_empty() {
            return Err("[providers] a provider needs a non-empty name".into());
        }
        let table = format!("[providers.{}]", self.provider);
        let base = &self.base_url;
        match reqwest::Url::parse(base) {
            Err(e) => return Err(format!("{table} base_url {base:?} is not a valid URL: {e}")),
            Ok(u) if u.scheme() != "http" && u.scheme() != "https" => {
                return Err(format!(
                "{table} base_url {base:?} is not a valid URL: scheme {:?} is not http or https",
                u.scheme()
            ))
            }
            Ok(u) if u.host_str().is_none_or(str::is_empty) => {
                return Err(format!(
                    "{table} base_url {base:?} is not a valid URL: no host"
                ))
            }
            Ok(_) => {}
        }
        for (key, value, ceiling) in [
            (
                "connect_timeout_ms",
                self.connect_timeout_ms,
                MAX_CONNECT_TIMEOUT_MS,
            ),
            (
                "stream_idle_timeout_ms",
                self.stream_idle_timeout_ms,
                MAX_STREAM_IDLE_TIMEOUT_MS,
            ),
            (
                "max_event_bytes",
                self.max_event_bytes as u64,
                MAX_MAX_EVENT_BYTES as u64,
            ),
        ] {
            if value == 0 {
                return Err(format!("{table} {key} must be greater than 0"));
            }
            if value > ceiling {
                return Err(format!(
                    "{table} {key} = {value} is above its ceiling of {ceiling}"
                ));
            }
        }
        for (i, route) in self.models.iter().enumerate() {
            if route.name.trim().is_empty() {
                return Err(format!("{table} model #{} has an empty name", i + 1));
            }
            if route.wire.trim().is_empty() {
                return Err(format!(
                    "{table} model {:?} has an empty wire id",
                    route.name
                ));
            }
            if self.models[..i].iter().any(|r| r.name == route.name) {
                return Err(format!("{table} model {:?} is listed twice", route.name));
            }
        }
        if let Some(key) = self.key() {
            check_api_key(key).map_err(|why| format!("{table} api_key {why}"))?;
        }
        for (name, value) in &self.headers {
            let lower = name.to_ascii_lowercase();
            if RESERVED_HEADERS.contains(&lower.as_str()) {
                return Err(format!(
                    "{table} headers: {name:?} is set by dsh itself and cannot be overridden"
                ));
            }
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(format!(
                    "{table} headers: {name:?} is not a valid header name"
                ));
            }
            if reqwest::header::HeaderValue::from_str(value).is_err() {
                return Err(format!(
                    "{table} headers: the value of {name:?} holds a line break or control character, which an HTTP header cannot carry"
                ));
            }
        }
        Ok(())
    }
}

/// Checks that `key` can be sent as `Authorization: Bearer <key>`.
///
/// # Errors
/// What is wrong, without quoting the key (it is a secret).
pub fn check_api_key(key: &str) -> Result<(), String> {
    if reqwest::header::HeaderValue::from_str(&format!("Bearer {key}")).is_ok() {
        return Ok(());
    }
    if key.contains(['\n', '\r']) {
        Err("holds a line break, which an HTTP header cannot carry; set the key alone (no trailing newline)".into())
    } else {
        Err(
            "holds a control character, which an HTTP header cannot carry; set the key alone"
                .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> OpenAiConfig {
        OpenAiConfig {
            provider: "local".into(),
            base_url: "http://127.0.0.1:11434/v1/".into(),
            models: vec![ModelRoute::new("qwen3")],
            ..OpenAiConfig::default()
        }
    }

    #[test]
    fn endpoint_trims_the_trailing_slash() {
        assert_eq!(
            valid().endpoint(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
    }

    #[test]
    fn validate_names_the_provider_table_and_never_quotes_the_key() {
        assert_eq!(valid().validate(), Ok(()));
        type Edit = Box<dyn Fn(&mut OpenAiConfig)>;
        let cases: Vec<(Edit, &str)> = vec![
            (
                Box::new(|c| c.base_url = "htp:/x".into()),
                "[providers.local] base_url \"htp:/x\"",
            ),
            (
                Box::new(|c| c.base_url = "ftp://h/".into()),
                "scheme \"ftp\"",
            ),
            (
                Box::new(|c| c.base_url = "nonsense".into()),
                "[providers.local] base_url",
            ),
            (
                Box::new(|c| c.connect_timeout_ms = 0),
                "connect_timeout_ms must be greater than 0",
            ),
            (
                Box::new(|c| c.stream_idle_timeout_ms = MAX_STREAM_IDLE_TIMEOUT_MS + 1),
                "above its ceiling",
            ),
            (
                Box::new(|c| c.max_event_bytes = 0),
                "max_event_bytes must be greater than 0",
            ),
            (
                Box::new(|c| c.models.push(ModelRoute::new("qwen3"))),
                "listed twice",
            ),
            (Box::new(|c| c.models[0].wire.clear()), "empty wire id"),
            (Box::new(|c| c.models[0].name = " ".into()), "empty name"),
            (
                Box::new(|c| c.api_key = Some("sk-secret\n".into())),
                "api_key holds a line break",
            ),
            (
                Box::new(|c| c.headers.push(("Authorization".into(), "x".into()))),
                "set by dsh itself",
            ),
            (
                Box::new(|c| c.headers.push(("bad name".into(), "x".into()))),
                "not a valid header name",
            ),
            (
                Box::new(|c| c.headers.push(("X-Title".into(), "a\nb".into()))),
                "line break",
            ),
            (Box::new(|c| c.provider = "".into()), "non-empty name"),
        ];
        for (edit, needle) in cases {
            let mut c = valid();
            edit(&mut c);
            let e = c.validate().unwrap_err();
            assert!(e.contains(needle), "{e:?} lacks {needle:?}");
            assert!(!e.contains("sk-secret"), "{e}");
        }
    }

    #[test]
    fn debug_hides_the_key() {
        let c = OpenAiConfig {
            api_key: Some("sk-secret".into()),
            ..valid()
        };
        let text = format!("{c:?}");
        assert!(!text.contains("sk-secret"), "{text}");
        assert!(text.contains("<set>"), "{text}");
    }
}
