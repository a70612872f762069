//! Adapter configuration (fact sheet c.1).

use std::time::Duration;

/// Default of [`DeepSeekConfig::connect_timeout_ms`] (60 s).
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 60_000;

/// Default of [`DeepSeekConfig::stream_idle_timeout_ms`] (300 s).
pub const DEFAULT_STREAM_IDLE_TIMEOUT_MS: u64 = 300_000;

/// Default of [`DeepSeekConfig::max_event_bytes`] (16 MiB).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Largest accepted [`DeepSeekConfig::connect_timeout_ms`]: 10 minutes. No
/// configuration can make dsh wait longer for a connection.
pub const MAX_CONNECT_TIMEOUT_MS: u64 = 600_000;

/// Largest accepted [`DeepSeekConfig::stream_idle_timeout_ms`]: 1 hour.
pub const MAX_STREAM_IDLE_TIMEOUT_MS: u64 = 3_600_000;

/// Largest accepted [`DeepSeekConfig::max_event_bytes`]: 256 MiB.
pub const MAX_MAX_EVENT_BYTES: usize = 256 * 1024 * 1024;

/// The public DeepSeek endpoint, used when no base URL is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.deepseek.com";

/// The model names registered by default.
pub const DEFAULT_MODELS: [&str; 2] = ["deepseek-v4-flash", "deepseek-v4-pro"];

/// The context window of the DeepSeek V4 models, in tokens (1,048,576).
pub const CONTEXT_WINDOW: u64 = 1_048_576;

/// Thinking mode sent as `"thinking": {"type": …}` on every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thinking {
    /// `{"type":"enabled"}`
    Enabled,
    /// `{"type":"disabled"}`
    Disabled,
}

impl Thinking {
    /// The wire value (`enabled` / `disabled`).
    pub fn as_str(self) -> &'static str {
        match self {
            Thinking::Enabled => "enabled",
            Thinking::Disabled => "disabled",
        }
    }
}

/// Reasoning effort sent as `"reasoning_effort"` on every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningEffort {
    /// `"high"`
    High,
    /// `"max"`
    Max,
}

impl ReasoningEffort {
    /// The wire value (`high` / `max`).
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::High => "high",
            ReasoningEffort::Max => "max",
        }
    }
}

/// Configuration of the DeepSeek adapter.
///
/// Fields are taken as given: [`DeepSeekConfig::from_env`] is the one place
/// that reads the environment. `thinking` / `reasoning_effort` are request
/// defaults for every call; `None` omits the field (provider default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeepSeekConfig {
    /// The API key; `None` or empty makes construction fail with `AUTH`.
    pub api_key: Option<String>,
    /// The base URL; `None` means [`DEFAULT_BASE_URL`]. Not normalised: the
    /// request goes to `<base_url>/chat/completions` by concatenation.
    pub base_url: Option<String>,
    /// Model names served (sent verbatim as the wire `model`).
    pub models: Vec<String>,
    /// Thinking mode; `None` = not sent.
    pub thinking: Option<Thinking>,
    /// Reasoning effort; `None` = not sent.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Limit, in ms, for TCP connect + TLS + waiting for the response
    /// headers (dsh.toml `[deepseek] connect_timeout_ms`). Exceeding it fails
    /// with `TIMEOUT` (transient). Must be > 0 (see [`DeepSeekConfig::validate`]).
    pub connect_timeout_ms: u64,
    /// Longest wait, in ms, between two SSE *data* events once the headers
    /// arrived (dsh.toml `[deepseek] stream_idle_timeout_ms`); comments such
    /// as `: keep-alive` do not reset it. Exceeding it fails with `TIMEOUT`
    /// (transient only while no output was yielded). Must be > 0.
    pub stream_idle_timeout_ms: u64,
    /// Largest SSE event (or partial line) buffered, in bytes (dsh.toml
    /// `[deepseek] max_event_bytes`); a larger one fails the stream with
    /// `MALFORMED_RESPONSE` without buffering much beyond the limit (at most
    /// one network read more). Must be > 0.
    pub max_event_bytes: usize,
}

impl Default for DeepSeekConfig {
    /// No key, default base URL and models, provider defaults for thinking,
    /// 60 s connect/header timeout, 300 s stream idle timeout, 16 MiB events.
    fn default() -> Self {
        Self {
            api_key: None,
            base_url: None,
            models: DEFAULT_MODELS.iter().map(|m| m.to_string()).collect(),
            thinking: None,
            reasoning_effort: None,
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            stream_idle_timeout_ms: DEFAULT_STREAM_IDLE_TIMEOUT_MS,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
        }
    }
}

impl DeepSeekConfig {
    /// The defaults with `api_key` from `$DEEPSEEK_API_KEY` and `base_url`
    /// from `$DEEPSEEK_BASE_URL` (each only when set and non-empty).
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self {
            api_key: var("DEEPSEEK_API_KEY"),
            base_url: var("DEEPSEEK_BASE_URL"),
            ..Self::default()
        }
    }

    /// The configured base URL or [`DEFAULT_BASE_URL`].
    pub fn base_url(&self) -> &str {
        self.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL)
    }

    /// `<base_url>/chat/completions` (plain concatenation).
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url())
    }

    /// Where a request with strict tools goes: `<base_url>/beta/chat/completions`
    /// (DeepSeek serves strict function calling on its beta endpoint only;
    /// `https://api.deepseek.com/beta` for the default base URL).
    pub fn beta_endpoint(&self) -> String {
        format!(
            "{}/beta/chat/completions",
            self.base_url().trim_end_matches('/')
        )
    }

    /// [`connect_timeout_ms`](Self::connect_timeout_ms) as a duration.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    /// [`stream_idle_timeout_ms`](Self::stream_idle_timeout_ms) as a duration.
    pub fn stream_idle_timeout(&self) -> Duration {
        Duration::from_millis(self.stream_idle_timeout_ms)
    }

    /// Checks the configuration up front (no I/O): `base_url` must parse as
    /// an absolute `http`/`https` URL with a host; the timeouts and
    /// `max_event_bytes` must be non-zero and at most their ceilings
    /// ([`MAX_CONNECT_TIMEOUT_MS`], [`MAX_STREAM_IDLE_TIMEOUT_MS`],
    /// [`MAX_MAX_EVENT_BYTES`]); a present `api_key` must be usable as an
    /// HTTP header value ([`check_api_key`]).
    ///
    /// # Errors
    /// The first problem found, as a message naming the dsh.toml key, e.g.
    /// `[deepseek] base_url "htp:/x" is not a valid URL: …`. A message about
    /// the key never quotes it.
    pub fn validate(&self) -> Result<(), String> {
        let base = self.base_url();
        match reqwest::Url::parse(base) {
            Err(e) => {
                return Err(format!(
                    "[deepseek] base_url {base:?} is not a valid URL: {e}"
                ))
            }
            Ok(u) if u.scheme() != "http" && u.scheme() != "https" => {
                return Err(format!(
                "[deepseek] base_url {base:?} is not a valid URL: scheme {:?} is not http or https",
                u.scheme()
            ))
            }
            Ok(u) if u.host_str().is_none_or(str::is_empty) => {
                return Err(format!(
                    "[deepseek] base_url {base:?} is not a valid URL: no host"
                ))
            }
            Ok(_) => {}
        }
        if self.connect_timeout_ms == 0 {
            return Err("[deepseek] connect_timeout_ms must be greater than 0".into());
        }
        if self.stream_idle_timeout_ms == 0 {
            return Err("[deepseek] stream_idle_timeout_ms must be greater than 0".into());
        }
        if self.max_event_bytes == 0 {
            return Err("[deepseek] max_event_bytes must be greater than 0".into());
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
            if value > ceiling {
                return Err(format!(
                    "[deepseek] {key} = {value} is above its ceiling of {ceiling}"
                ));
            }
        }
        if let Some(key) = &self.api_key {
            check_api_key(key).map_err(|why| format!("[deepseek] api_key {why}"))?;
        }
        Ok(())
    }
}

/// Checks that `key` can be sent as `Authorization: Bearer <key>`: no line
/// break or other character an HTTP header value cannot carry (controls
/// other than tab, DEL).
///
/// # Errors
/// What is wrong, without quoting the key (it is a secret), e.g. `holds a
/// line break, which an HTTP header cannot carry; …`.
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
