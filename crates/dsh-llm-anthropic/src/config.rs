//! Adapter configuration: [`AnthropicConfig`], its model routes and limits.

use std::time::Duration;

/// The public Anthropic endpoint, used by [`AnthropicConfig::default`].
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Default of [`AnthropicConfig::max_tokens`] (32,000).
pub const DEFAULT_MAX_TOKENS: u32 = 32_000;

/// The smallest thinking budget the API accepts (1,024 tokens).
pub const MIN_THINKING_BUDGET: u32 = 1024;

/// Default of [`AnthropicConfig::connect_timeout_ms`] (60 s).
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 60_000;

/// Default of [`AnthropicConfig::stream_idle_timeout_ms`] (300 s).
pub const DEFAULT_STREAM_IDLE_TIMEOUT_MS: u64 = 300_000;

/// Default of [`AnthropicConfig::max_event_bytes`] (16 MiB).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Largest accepted [`AnthropicConfig::connect_timeout_ms`]: 10 minutes.
pub const MAX_CONNECT_TIMEOUT_MS: u64 = 600_000;

/// Largest accepted [`AnthropicConfig::stream_idle_timeout_ms`]: 1 hour.
pub const MAX_STREAM_IDLE_TIMEOUT_MS: u64 = 3_600_000;

/// Largest accepted [`AnthropicConfig::max_event_bytes`]: 256 MiB.
pub const MAX_MAX_EVENT_BYTES: usize = 256 * 1024 * 1024;

/// The models registered by default: `(name = wire id, takes images)`.
pub const DEFAULT_MODELS: [(&str, bool); 3] = [
    ("claude-sonnet-4-5", true),
    ("claude-opus-4-5", true),
    ("claude-haiku-4-5", true),
];

/// One model the adapter serves: the name dsh registers it under and the id
/// sent on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRoute {
    /// The registered model name (`ModelRequest::model`, `--model`).
    pub name: String,
    /// The Anthropic model id sent as the request's `model`.
    pub wire: String,
    /// Whether the model takes image input; when `false`, image blocks are
    /// replaced by a text note saying so.
    pub images: bool,
}

impl ModelRoute {
    /// A route whose registered name and wire id are both `name`.
    pub fn new(name: impl Into<String>, images: bool) -> Self {
        let name = name.into();
        Self {
            wire: name.clone(),
            name,
            images,
        }
    }
}

/// Configuration of the Anthropic adapter. Fields are taken as given (no
/// environment is read here); [`AnthropicConfig::validate`] checks them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnthropicConfig {
    /// The provider's registry and display name (`[providers.<provider>]`),
    /// used in configuration messages.
    pub provider: String,
    /// The API key, sent as `x-api-key`; `None` or empty makes construction
    /// fail with `AUTH` (no request is ever sent without one).
    pub api_key: Option<String>,
    /// The base URL; requests go to `<base_url>/v1/messages` (a trailing
    /// `/` is dropped).
    pub base_url: String,
    /// The models served.
    pub models: Vec<ModelRoute>,
    /// `max_tokens` of a request that sets none (the API requires one).
    pub max_tokens: u32,
    /// Extended thinking: `Some(n)` sends `"thinking":{"type":"enabled",
    /// "budget_tokens":n}` (`n` ≥ 1,024 and < `max_tokens`); then no
    /// `temperature` is sent, and a request whose own `max_tokens` is not
    /// above `n` is sent without thinking.
    pub thinking_budget: Option<u32>,
    /// Whether to place `cache_control` breakpoints (system, tools, the last
    /// two user turns) so a long session reuses the provider's cache.
    pub prompt_caching: bool,
    /// Limit, in ms, for TCP connect + TLS + waiting for the response
    /// headers; exceeding it fails with `TIMEOUT`. Must be in
    /// 1..=[`MAX_CONNECT_TIMEOUT_MS`].
    pub connect_timeout_ms: u64,
    /// Longest wait, in ms, between two SSE data events (a `ping` event
    /// counts, an SSE comment does not); exceeding it fails with `TIMEOUT`.
    /// Must be in 1..=[`MAX_STREAM_IDLE_TIMEOUT_MS`].
    pub stream_idle_timeout_ms: u64,
    /// Largest SSE event buffered, in bytes; a larger one fails the stream
    /// with `MALFORMED_RESPONSE`. Must be in 1..=[`MAX_MAX_EVENT_BYTES`].
    pub max_event_bytes: usize,
}

impl Default for AnthropicConfig {
    /// Provider `anthropic`, no key, [`DEFAULT_BASE_URL`], [`DEFAULT_MODELS`],
    /// 32,000 output tokens, no thinking, prompt caching on, 60 s connect,
    /// 300 s stream idle timeout, 16 MiB events.
    fn default() -> Self {
        Self {
            provider: "anthropic".into(),
            api_key: None,
            base_url: DEFAULT_BASE_URL.into(),
            models: DEFAULT_MODELS
                .iter()
                .map(|(name, images)| ModelRoute::new(*name, *images))
                .collect(),
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget: None,
            prompt_caching: true,
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            stream_idle_timeout_ms: DEFAULT_STREAM_IDLE_TIMEOUT_MS,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
        }
    }
}

impl AnthropicConfig {
    /// `<base_url>/v1/messages` (one trailing `/` of the base dropped).
    pub fn endpoint(&self) -> String {
        format!("{}/v1/messages", self.base_url.trim_end_matches('/'))
    }

    /// The route registered as `name`, if any.
    pub fn route(&self, name: &str) -> Option<&ModelRoute> {
        self.models.iter().find(|r| r.name == name)
    }

    /// [`connect_timeout_ms`](Self::connect_timeout_ms) as a duration.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    /// [`stream_idle_timeout_ms`](Self::stream_idle_timeout_ms) as a duration.
    pub fn stream_idle_timeout(&self) -> Duration {
        Duration::from_millis(self.stream_idle_timeout_ms)
    }

    /// Checks the configuration up front (no I/O): `base_url` is an absolute
    /// `http`/`https` URL with a host; every model has a non-empty, unique
    /// name and a non-empty wire id; `max_tokens` > 0; a thinking budget is
    /// ≥ [`MIN_THINKING_BUDGET`] and below `max_tokens`; the timeouts and
    /// `max_event_bytes` are non-zero and at most their ceilings; a present
    /// `api_key` can be an HTTP header value ([`check_api_key`]).
    ///
    /// # Errors
    /// The first problem, as a message naming the key, e.g.
    /// `[providers.anthropic] base_url "htp:/x" is not a valid URL: …`. A
    /// message about the key never quotes it.
    pub fn validate(&self) -> Result<(), String> {
        let p = format!("[providers.{}]", self.provider);
        let base = &self.base_url;
        match reqwest::Url::parse(base) {
            Err(e) => return Err(format!("{p} base_url {base:?} is not a valid URL: {e}")),
            Ok(u) if u.scheme() != "http" && u.scheme() != "https" => {
                return Err(format!(
                    "{p} base_url {base:?} is not a valid URL: scheme {:?} is not http or https",
                    u.scheme()
                ))
            }
            Ok(u) if u.host_str().is_none_or(str::is_empty) => {
                return Err(format!("{p} base_url {base:?} is not a valid URL: no host"))
            }
            Ok(_) => {}
        }
        for (i, route) in self.models.iter().enumerate() {
            if route.name.is_empty() {
                return Err(format!("{p} models[{i}] has an empty name"));
            }
            if route.wire.is_empty() {
                return Err(format!(
                    "{p} model {:?} has an empty wire model id",
                    route.name
                ));
            }
            if self.models[..i].iter().any(|r| r.name == route.name) {
                return Err(format!("{p} model {:?} is listed twice", route.name));
            }
        }
        if self.max_tokens == 0 {
            return Err(format!("{p} max_tokens must be greater than 0"));
        }
        if let Some(budget) = self.thinking_budget {
            if budget < MIN_THINKING_BUDGET {
                return Err(format!(
                    "{p} thinking_budget = {budget} is below the API's minimum of {MIN_THINKING_BUDGET}"
                ));
            }
            if budget >= self.max_tokens {
                return Err(format!(
                    "{p} thinking_budget = {budget} must be below max_tokens = {}; raise max_tokens or lower the budget",
                    self.max_tokens
                ));
            }
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
                return Err(format!("{p} {key} must be greater than 0"));
            }
            if value > ceiling {
                return Err(format!(
                    "{p} {key} = {value} is above its ceiling of {ceiling}"
                ));
            }
        }
        if let Some(key) = &self.api_key {
            check_api_key(key).map_err(|why| format!("{p} api_key {why}"))?;
        }
        Ok(())
    }
}

/// Checks that `key` can be sent as the `x-api-key` header value: no line
/// break or other control character (tab excepted).
///
/// # Errors
/// What is wrong, without quoting the key (it is a secret).
pub fn check_api_key(key: &str) -> Result<(), String> {
    if reqwest::header::HeaderValue::from_str(key).is_ok() {
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
