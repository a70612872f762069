//! Adapter configuration (fact sheet c.1).

use std::time::Duration;

/// The public DeepSeek endpoint, used when no base URL is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.deepseek.com";

/// The model names registered by default.
pub const DEFAULT_MODELS: [&str; 2] = ["deepseek-v4-flash", "deepseek-v4-pro"];

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
    /// Limit for establishing the TCP/TLS connection; `None` = no limit.
    pub connect_timeout: Option<Duration>,
    /// Idle limit between two body reads (and for the response headers after
    /// connecting); `None` = no limit. Exceeding it fails with `TIMEOUT`.
    pub read_timeout: Option<Duration>,
}

impl Default for DeepSeekConfig {
    /// No key, default base URL and models, provider defaults for thinking,
    /// 30 s connect and 300 s read timeouts.
    fn default() -> Self {
        Self {
            api_key: None,
            base_url: None,
            models: DEFAULT_MODELS.iter().map(|m| m.to_string()).collect(),
            thinking: None,
            reasoning_effort: None,
            connect_timeout: Some(Duration::from_secs(30)),
            read_timeout: Some(Duration::from_secs(300)),
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
}
