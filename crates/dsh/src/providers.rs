//! Providers: where a model's requests go, and in which dialect.
//!
//! A provider is a named endpoint with a wire dialect ([`ProviderKind`]):
//! the built-in [`PRESETS`] (`deepseek`, `openai`, `openrouter`, `ollama`,
//! `lmstudio`, `vllm`, `llamacpp`, `anthropic`) and the `[providers.<name>]`
//! tables of the configuration, which add providers or change a preset's
//! fields.
//!
//! A model reaches a provider by a *route* ([`Route`]): its dsh name (what
//! `--model`, `/model` and the session log say), the provider, and the id
//! sent on the wire. Routes come from, in order:
//! 1. `[models.<name>] provider = "p"` (wire id: `id`, else the name);
//! 2. the chosen model when it is written `provider/model` (`--model
//!    ollama/qwen3-coder`: provider `ollama`, wire id `qwen3-coder`; the
//!    first `/` splits, so `openrouter/qwen/qwen3-coder` sends
//!    `qwen/qwen3-coder`);
//! 3. the presets' built-in models (`anthropic/claude-sonnet-5-5`, …),
//!    when their provider has its key.
//!
//! The DeepSeek adapter keeps serving the DeepSeek models under their own
//! names; `deepseek/<model>` names the same model. A provider's key is read
//! from the environment variable its `api_key_env` names (a preset has a
//! default); a key is never written in a configuration file, and
//! `[providers]` is one of the keys a project file may only set once
//! trusted (it decides where requests and keys go).

use std::collections::BTreeMap;
use std::sync::Arc;

use dsh_llm::{ChunkStream, LlmAdapter, ModelRequest};
use serde::Deserialize;

/// A provider's wire dialect: `kind = "openai-chat" | "anthropic" |
/// "deepseek"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ProviderKind {
    /// OpenAI chat completions (OpenAI, OpenRouter, Ollama, LM Studio, vLLM,
    /// llama.cpp and any compatible server).
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// Anthropic's Messages API.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// DeepSeek's chat completions (thinking, reasoning effort, strict
    /// tools).
    #[serde(rename = "deepseek")]
    DeepSeek,
}

impl ProviderKind {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAiChat => "openai-chat",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::DeepSeek => "deepseek",
        }
    }
}

/// `[providers.<name>]`: a provider, or changes to the preset of that name.
/// Every key is optional for a preset; a new provider needs `kind` and
/// `base_url`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    /// The dialect.
    pub kind: Option<ProviderKind>,
    /// Where requests go (`…/v1` for OpenAI-compatible servers).
    pub base_url: Option<String>,
    /// The environment variable holding the key. Without one, requests
    /// carry no key (local servers).
    pub api_key_env: Option<String>,
    /// Whether the provider refuses to start without its key (presets of
    /// hosted services: yes; others: no).
    pub key_required: Option<bool>,
    /// Extra HTTP headers sent with every request (`openai-chat`), e.g.
    /// OpenRouter's `HTTP-Referer` and `X-Title`.
    pub headers: Option<BTreeMap<String, String>>,
    /// `openai-chat`: send `stream_options.include_usage` (default true;
    /// turn off for a server that rejects it).
    pub include_usage: Option<bool>,
    /// `openai-chat`: the name of the output cap, `max_tokens` (default)
    /// or `max_completion_tokens` (OpenAI's newer models).
    pub max_tokens_field: Option<String>,
    /// `openai-chat`: `reasoning_effort` sent with every request.
    pub reasoning_effort: Option<String>,
    /// `anthropic`: the output cap sent as `max_tokens` (default 32,000).
    pub max_tokens: Option<u32>,
    /// `anthropic`: extended thinking with this budget of tokens (at least
    /// 1,024 and below `max_tokens`).
    pub thinking_budget: Option<u32>,
    /// `anthropic`: mark the system prompt, tools and last turns for the
    /// prompt cache (default true).
    pub prompt_caching: Option<bool>,
    /// Longest wait for a connection and the response headers, in ms.
    pub connect_timeout_ms: Option<u64>,
    /// Longest wait between two events of a stream, in ms.
    pub stream_idle_timeout_ms: Option<u64>,
    /// Largest accepted event of a stream, in bytes.
    pub max_event_bytes: Option<usize>,
}

impl ProviderSection {
    /// `self` over `lower`: each key set here wins.
    pub fn over(self, lower: ProviderSection) -> ProviderSection {
        ProviderSection {
            kind: self.kind.or(lower.kind),
            base_url: self.base_url.or(lower.base_url),
            api_key_env: self.api_key_env.or(lower.api_key_env),
            key_required: self.key_required.or(lower.key_required),
            headers: self.headers.or(lower.headers),
            include_usage: self.include_usage.or(lower.include_usage),
            max_tokens_field: self.max_tokens_field.or(lower.max_tokens_field),
            reasoning_effort: self.reasoning_effort.or(lower.reasoning_effort),
            max_tokens: self.max_tokens.or(lower.max_tokens),
            thinking_budget: self.thinking_budget.or(lower.thinking_budget),
            prompt_caching: self.prompt_caching.or(lower.prompt_caching),
            connect_timeout_ms: self.connect_timeout_ms.or(lower.connect_timeout_ms),
            stream_idle_timeout_ms: self.stream_idle_timeout_ms.or(lower.stream_idle_timeout_ms),
            max_event_bytes: self.max_event_bytes.or(lower.max_event_bytes),
        }
    }
}

/// A model a preset knows: its wire id, window, whether it takes images,
/// and its published price per 1,000,000 tokens (`(input, cached input,
/// output)` in USD) when built in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KnownModel {
    /// The wire id.
    pub id: &'static str,
    /// The context window in tokens.
    pub context_window: u64,
    /// Whether it takes images.
    pub images: bool,
    /// `(input, cached input, output)` USD per 1,000,000 tokens.
    pub price: Option<(f64, f64, f64)>,
}

/// A built-in provider.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Preset {
    /// Its name (the `provider/` of a model name).
    pub name: &'static str,
    /// The dialect.
    pub kind: ProviderKind,
    /// The default base URL.
    pub base_url: &'static str,
    /// The default key variable.
    pub api_key_env: &'static str,
    /// Whether it needs a key (hosted services).
    pub key_required: bool,
    /// Whether it runs on the user's machine (its models cost nothing).
    pub local: bool,
    /// Models it knows, for `dsh models` and the catalogue.
    pub models: &'static [KnownModel],
    /// When the prices of [`Preset::models`] were taken, and from where.
    pub prices: Option<(&'static str, &'static str)>,
}

/// The DeepSeek adapter's built-in model names.
pub use dsh_llm_deepseek::DEFAULT_MODELS as DEEPSEEK_MODELS;

/// The DeepSeek models' context window.
pub use dsh_llm_deepseek::CONTEXT_WINDOW as DEEPSEEK_CONTEXT_WINDOW;

/// The context window assumed for a routed model whose window neither
/// `[models.<name>] context_window` nor a preset gives: 131,072 tokens
/// (local servers often serve less; set the real one).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 131_072;

/// The built-in providers.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "deepseek",
        kind: ProviderKind::DeepSeek,
        base_url: dsh_llm_deepseek::DEFAULT_BASE_URL,
        api_key_env: "DEEPSEEK_API_KEY",
        key_required: true,
        local: false,
        models: &[],
        prices: None,
    },
    Preset {
        name: "openai",
        kind: ProviderKind::OpenAiChat,
        base_url: "https://api.openai.com/v1",
        api_key_env: "OPENAI_API_KEY",
        key_required: true,
        local: false,
        models: &[
            KnownModel {
                id: "gpt-6.1-sol",
                context_window: 272_000,
                images: true,
                price: Some((2.0, 0.10, 10.0)),
            },
            KnownModel {
                id: "gpt-6-luna",
                context_window: 272_000,
                images: true,
                price: Some((0.10, 0.01, 0.50)),
            },
        ],
        prices: Some((
            "2026-11-05",
            "https://developers.openai.com/api/docs/pricing (up to 272K input tokens)",
        )),
    },
    Preset {
        name: "openrouter",
        kind: ProviderKind::OpenAiChat,
        base_url: "https://openrouter.ai/api/v1",
        api_key_env: "OPENROUTER_API_KEY",
        key_required: true,
        local: false,
        models: &[],
        prices: None,
    },
    Preset {
        name: "ollama",
        kind: ProviderKind::OpenAiChat,
        base_url: "http://127.0.0.1:11434/v1",
        api_key_env: "OLLAMA_API_KEY",
        key_required: false,
        local: true,
        models: &[],
        prices: None,
    },
    Preset {
        name: "lmstudio",
        kind: ProviderKind::OpenAiChat,
        base_url: "http://127.0.0.1:1234/v1",
        api_key_env: "LMSTUDIO_API_KEY",
        key_required: false,
        local: true,
        models: &[],
        prices: None,
    },
    Preset {
        name: "vllm",
        kind: ProviderKind::OpenAiChat,
        base_url: "http://127.0.0.1:8000/v1",
        api_key_env: "VLLM_API_KEY",
        key_required: false,
        local: true,
        models: &[],
        prices: None,
    },
    Preset {
        name: "llamacpp",
        kind: ProviderKind::OpenAiChat,
        base_url: "http://127.0.0.1:8080/v1",
        api_key_env: "LLAMACPP_API_KEY",
        key_required: false,
        local: true,
        models: &[],
        prices: None,
    },
    Preset {
        name: "anthropic",
        kind: ProviderKind::Anthropic,
        base_url: "https://api.anthropic.com",
        api_key_env: "ANTHROPIC_API_KEY",
        key_required: true,
        local: false,
        models: &[
            KnownModel {
                id: "claude-opus-5-5",
                context_window: 1_000_000,
                images: true,
                price: Some((4.0, 0.20, 20.0)),
            },
            KnownModel {
                id: "claude-sonnet-5-5",
                context_window: 1_000_000,
                images: true,
                price: Some((2.0, 0.10, 10.0)),
            },
            KnownModel {
                id: "claude-sonnet-4-5",
                context_window: 200_000,
                images: true,
                price: Some((3.0, 0.30, 15.0)),
            },
        ],
        prices: Some((
            "2026-12-06",
            "https://platform.claude.com/docs/en/about-claude/pricing (cache writes priced as input)",
        )),
    },
];

/// The preset named `name`.
pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// A provider as configured: a preset with the `[providers.<name>]` keys
/// over it, or a provider of the configuration alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    /// Its name.
    pub name: String,
    /// The dialect.
    pub kind: ProviderKind,
    /// Its base URL.
    pub base_url: String,
    /// The variable its key is read from, when it has one.
    pub api_key_env: Option<String>,
    /// Whether it needs a key.
    pub key_required: bool,
    /// Whether it is a local server (its models cost nothing): a local
    /// preset, or a provider whose `base_url` is on this machine.
    pub local: bool,
    /// The settings of its table (the preset's defaults are not in it).
    pub section: ProviderSection,
    /// The preset it is built on.
    pub preset: Option<&'static Preset>,
}

impl Provider {
    /// The key from the environment (`api_key_env`), when set and not
    /// empty.
    pub fn api_key(&self) -> Option<String> {
        let var = self.api_key_env.as_deref()?;
        std::env::var(var).ok().filter(|v| !v.is_empty())
    }

    /// Whether requests can be sent: a key is there or none is needed.
    pub fn usable(&self) -> bool {
        !self.key_required || self.api_key().is_some()
    }

    /// Why requests cannot be sent (for messages), or `None`.
    pub fn missing_key(&self) -> Option<String> {
        if self.usable() {
            return None;
        }
        Some(match &self.api_key_env {
            Some(var) => format!(
                "provider \"{}\" needs an API key: set {var} in the environment",
                self.name
            ),
            None => format!(
                "provider \"{}\" needs an API key: set api_key_env under [providers.{}] to the variable that holds it",
                self.name, self.name
            ),
        })
    }
}

/// Every provider: the presets, changed or extended by `configured`.
///
/// # Errors
/// One message per table that cannot make a provider (a new provider
/// without `kind` or `base_url`, a bad `max_tokens_field`, a bad name);
/// that table is left out.
pub fn providers(configured: &BTreeMap<String, ProviderSection>) -> (Vec<Provider>, Vec<String>) {
    let mut problems = Vec::new();
    let mut out: Vec<Provider> = Vec::new();
    for p in PRESETS {
        let section = configured.get(p.name).cloned().unwrap_or_default();
        out.push(Provider {
            name: p.name.to_string(),
            kind: section.kind.unwrap_or(p.kind),
            base_url: section
                .base_url
                .clone()
                .unwrap_or_else(|| p.base_url.to_string()),
            api_key_env: Some(
                section
                    .api_key_env
                    .clone()
                    .unwrap_or_else(|| p.api_key_env.to_string()),
            ),
            key_required: section.key_required.unwrap_or(p.key_required),
            local: p.local,
            section,
            preset: Some(p),
        });
    }
    for (name, section) in configured {
        if preset(name).is_some() {
            continue;
        }
        if name.is_empty() || name.contains('/') || name.chars().any(char::is_whitespace) {
            problems.push(format!(
                "[providers.{name:?}]: a provider name must be non-empty, without `/` or spaces"
            ));
            continue;
        }
        let (Some(kind), Some(base_url)) = (section.kind, section.base_url.clone()) else {
            problems.push(format!(
                "[providers.{name}] needs kind (\"openai-chat\", \"anthropic\" or \"deepseek\") and base_url; presets: {}",
                PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
            ));
            continue;
        };
        let local = is_loopback_url(&base_url);
        out.push(Provider {
            name: name.clone(),
            kind,
            base_url,
            api_key_env: section.api_key_env.clone(),
            key_required: section.key_required.unwrap_or(false),
            local,
            section: section.clone(),
            preset: None,
        });
    }
    for p in &out {
        if let Some(field) = &p.section.max_tokens_field {
            if field != "max_tokens" && field != "max_completion_tokens" {
                problems.push(format!(
                    "[providers.{}] max_tokens_field {field:?} must be \"max_tokens\" or \"max_completion_tokens\"",
                    p.name
                ));
            }
        }
        if let Some(var) = &p.section.api_key_env {
            if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                problems.push(format!(
                    "[providers.{}] api_key_env {var:?} must name an environment variable (letters, digits, _), not hold a key",
                    p.name
                ));
            }
        }
    }
    (out, problems)
}

/// Whether `url`'s host is this machine (`localhost`, `127.0.0.0/8`,
/// `::1`): a provider there is a local server.
pub fn is_loopback_url(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// How a model reaches its provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The dsh name of the model (registered with the LLM service).
    pub name: String,
    /// The provider's name.
    pub provider: String,
    /// The id sent on the wire.
    pub wire: String,
    /// Whether the model takes images.
    pub images: bool,
    /// Whether its provider is a server on this machine (its requests
    /// cost nothing).
    pub local: bool,
}

/// The routes of `[models.<name>] provider = …` and, for `chosen` written
/// `provider/model`, of the chosen model; then the built-in models of
/// presets whose provider is usable. A route to a provider that does not
/// exist is a problem (message names the table).
pub fn routes(
    providers: &[Provider],
    models: &BTreeMap<String, crate::config::ModelSection>,
    chosen: Option<&str>,
) -> (Vec<Route>, Vec<String>) {
    let mut out: Vec<Route> = Vec::new();
    let mut problems = Vec::new();
    let known = |name: &str| providers.iter().find(|p| p.name == name);
    for (name, m) in models {
        let Some(provider) = m.provider.as_deref() else {
            continue;
        };
        if known(provider).is_none() {
            problems.push(format!(
                "[models.{name:?}] provider {provider:?} is not a provider; known: {}",
                providers
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            continue;
        }
        out.push(Route {
            name: name.clone(),
            provider: provider.to_string(),
            wire: m.id.clone().unwrap_or_else(|| name.clone()),
            images: m.images.unwrap_or(false),
            local: known(provider).is_some_and(|p| p.local),
        });
    }
    let add = |route: Route, out: &mut Vec<Route>| {
        if !out.iter().any(|r| r.name == route.name) {
            out.push(route);
        }
    };
    if let Some((provider, wire)) = chosen.and_then(|c| split(c, providers, models)) {
        let images = known_model(provider, wire).is_some_and(|k| k.images);
        add(
            Route {
                name: format!("{provider}/{wire}"),
                provider: provider.to_string(),
                wire: wire.to_string(),
                images,
                local: known(provider).is_some_and(|p| p.local),
            },
            &mut out,
        );
    }
    for p in providers.iter().filter(|p| p.usable()) {
        for k in p.preset.map(|p| p.models).unwrap_or_default() {
            add(
                Route {
                    name: format!("{}/{}", p.name, k.id),
                    provider: p.name.clone(),
                    wire: k.id.to_string(),
                    images: k.images,
                    local: p.local,
                },
                &mut out,
            );
        }
    }
    (out, problems)
}

/// `provider/model` split at the first `/` when `provider` is a provider
/// and the whole name is not a configured model.
pub fn split<'a>(
    name: &'a str,
    providers: &[Provider],
    models: &BTreeMap<String, crate::config::ModelSection>,
) -> Option<(&'a str, &'a str)> {
    if models.contains_key(name) {
        return None;
    }
    let (provider, wire) = name.split_once('/')?;
    (!wire.is_empty() && providers.iter().any(|p| p.name == provider)).then_some((provider, wire))
}

/// The built-in facts of `provider`'s model `id`.
pub fn known_model(provider: &str, id: &str) -> Option<&'static KnownModel> {
    preset(provider)?.models.iter().find(|k| k.id == id)
}

/// An adapter that serves models under dsh names and sends each request
/// with the model's wire id: wraps a provider's adapter so that
/// `myproxy/deepseek-v4-pro` goes out as `deepseek-v4-pro`.
pub struct Renamed {
    inner: Arc<dyn LlmAdapter>,
    wire: BTreeMap<String, String>,
}

impl Renamed {
    /// `inner` with the wire id of each dsh name (a name not in `wire` is
    /// sent as it is).
    pub fn new(inner: Arc<dyn LlmAdapter>, wire: BTreeMap<String, String>) -> Renamed {
        Renamed { inner, wire }
    }
}

impl LlmAdapter for Renamed {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn stream(&self, mut options: ModelRequest) -> ChunkStream {
        if let Some(wire) = self.wire.get(&options.model) {
            options.model = wire.clone();
        }
        self.inner.stream(options)
    }
}

/// An adapter to register: one per provider that serves a route.
#[derive(Debug, Clone)]
pub enum AdapterSetup {
    /// An `openai-chat` provider.
    OpenAi(dsh_llm_openai::OpenAiConfig),
    /// An `anthropic` provider.
    Anthropic(dsh_llm_anthropic::AnthropicConfig),
    /// A `deepseek` provider other than the built-in DeepSeek adapter's
    /// models: its configuration (serving the wire ids) and the dsh name →
    /// wire id of each route.
    DeepSeek {
        /// The provider's name.
        provider: String,
        /// The adapter's configuration.
        config: dsh_llm_deepseek::DeepSeekConfig,
        /// dsh name → wire id.
        names: BTreeMap<String, String>,
    },
}

impl AdapterSetup {
    /// The provider's name.
    pub fn provider(&self) -> &str {
        match self {
            AdapterSetup::OpenAi(c) => &c.provider,
            AdapterSetup::Anthropic(c) => &c.provider,
            AdapterSetup::DeepSeek { provider, .. } => provider,
        }
    }

    /// The dsh names it serves.
    pub fn names(&self) -> Vec<String> {
        match self {
            AdapterSetup::OpenAi(c) => c.models.iter().map(|m| m.name.clone()).collect(),
            AdapterSetup::Anthropic(c) => c.models.iter().map(|m| m.name.clone()).collect(),
            AdapterSetup::DeepSeek { names, .. } => names.keys().cloned().collect(),
        }
    }

    /// Checks the configuration as the adapter will on registration.
    ///
    /// # Errors
    /// The adapter's message for the first invalid setting (it names
    /// `[providers.<name>]`, or `[deepseek]` for a DeepSeek-kind provider).
    pub fn validate(&self) -> Result<(), String> {
        match self {
            AdapterSetup::OpenAi(c) => c.validate(),
            AdapterSetup::Anthropic(c) => c.validate(),
            AdapterSetup::DeepSeek { config, .. } => config.validate(),
        }
    }

    /// The body the adapter sends for `request`, byte for byte; the
    /// request's model is sent as it is (give it the wire id).
    ///
    /// # Errors
    /// The adapter's own refusals (a prefill, a model it does not serve).
    pub fn request_bytes(&self, request: &ModelRequest) -> Result<Vec<u8>, dsh_llm::LlmError> {
        match self {
            AdapterSetup::OpenAi(c) => dsh_llm_openai::request_bytes(request, c),
            AdapterSetup::Anthropic(c) => dsh_llm_anthropic::request_bytes(request, c),
            AdapterSetup::DeepSeek { config, .. } => {
                dsh_llm_deepseek::request_bytes(request, config)
            }
        }
    }

    /// Registers the adapter for its names with `service`.
    ///
    /// # Errors
    /// The adapter's refusals (`INVALID_CONFIG`, `AUTH` without a key it
    /// needs) and `DUPLICATE_ADAPTER` when a name is served already.
    pub fn register(
        self,
        service: &dsh_llm::LlmService,
    ) -> Result<dsh_kernel::Registration, dsh_llm::LlmError> {
        match self {
            AdapterSetup::OpenAi(c) => dsh_llm_openai::register(service, c),
            AdapterSetup::Anthropic(c) => dsh_llm_anthropic::register(service, c),
            AdapterSetup::DeepSeek { config, names, .. } => {
                let adapter = dsh_llm_deepseek::DeepSeekAdapter::new(config)?;
                let served: Vec<String> = names.keys().cloned().collect();
                service.register_adapter(&served, Arc::new(Renamed::new(Arc::new(adapter), names)))
            }
        }
    }
}

impl Provider {
    /// The adapter that serves `routes` for this provider, in its dialect,
    /// with the settings of its table over the adapter's defaults (and the
    /// `openai` and `openrouter` presets' own defaults). Not checked: see
    /// [`AdapterSetup::validate`]. The one place a provider's settings
    /// become an adapter's configuration, for the live session
    /// ([`adapters`]) and for a request rebuilt from the log
    /// ([`crate::requests::request_body`]).
    pub fn adapter_setup(&self, routes: &[&Route]) -> AdapterSetup {
        match self.kind {
            ProviderKind::OpenAiChat => AdapterSetup::OpenAi(openai_config(self, routes)),
            ProviderKind::Anthropic => AdapterSetup::Anthropic(anthropic_config(self, routes)),
            ProviderKind::DeepSeek => {
                let names: BTreeMap<String, String> = routes
                    .iter()
                    .map(|r| (r.name.clone(), r.wire.clone()))
                    .collect();
                AdapterSetup::DeepSeek {
                    provider: self.name.clone(),
                    config: deepseek_config(self, names.values().cloned().collect()),
                    names,
                }
            }
        }
    }
}

/// The `openai-chat` configuration of `p` serving `routes`.
fn openai_config(p: &Provider, routes: &[&Route]) -> dsh_llm_openai::OpenAiConfig {
    use dsh_llm_openai::MaxTokensField;
    let s = &p.section;
    let defaults = dsh_llm_openai::OpenAiConfig::default();
    let mut headers = Vec::new();
    if p.name == "openrouter" {
        headers.push(("X-Title".to_string(), "dsh".to_string()));
    }
    headers.extend(
        s.headers
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    dsh_llm_openai::OpenAiConfig {
        provider: p.name.clone(),
        api_key: p.api_key(),
        base_url: p.base_url.clone(),
        models: routes
            .iter()
            .map(|r| dsh_llm_openai::ModelRoute {
                name: r.name.clone(),
                wire: r.wire.clone(),
                images: r.images,
            })
            .collect(),
        connect_timeout_ms: s.connect_timeout_ms.unwrap_or(defaults.connect_timeout_ms),
        stream_idle_timeout_ms: s
            .stream_idle_timeout_ms
            .unwrap_or(defaults.stream_idle_timeout_ms),
        max_event_bytes: s.max_event_bytes.unwrap_or(defaults.max_event_bytes),
        quirks: dsh_llm_openai::Quirks {
            include_usage: s.include_usage.unwrap_or(defaults.quirks.include_usage),
            max_tokens_field: match s.max_tokens_field.as_deref() {
                Some("max_completion_tokens") => MaxTokensField::MaxCompletionTokens,
                Some(_) => MaxTokensField::MaxTokens,
                None if p.name == "openai" => MaxTokensField::MaxCompletionTokens,
                None => defaults.quirks.max_tokens_field,
            },
            reasoning_effort: s
                .reasoning_effort
                .clone()
                .or(defaults.quirks.reasoning_effort),
        },
        headers,
    }
}

/// The `anthropic` configuration of `p` serving `routes`.
fn anthropic_config(p: &Provider, routes: &[&Route]) -> dsh_llm_anthropic::AnthropicConfig {
    let s = &p.section;
    let defaults = dsh_llm_anthropic::AnthropicConfig::default();
    dsh_llm_anthropic::AnthropicConfig {
        provider: p.name.clone(),
        api_key: p.api_key(),
        base_url: p.base_url.clone(),
        models: routes
            .iter()
            .map(|r| dsh_llm_anthropic::ModelRoute {
                name: r.name.clone(),
                wire: r.wire.clone(),
                images: r.images,
            })
            .collect(),
        max_tokens: s.max_tokens.unwrap_or(defaults.max_tokens),
        thinking_budget: s.thinking_budget,
        prompt_caching: s.prompt_caching.unwrap_or(defaults.prompt_caching),
        connect_timeout_ms: s.connect_timeout_ms.unwrap_or(defaults.connect_timeout_ms),
        stream_idle_timeout_ms: s
            .stream_idle_timeout_ms
            .unwrap_or(defaults.stream_idle_timeout_ms),
        max_event_bytes: s.max_event_bytes.unwrap_or(defaults.max_event_bytes),
    }
}

/// The `deepseek` configuration of `p` serving the wire ids `models`
/// (thinking and reasoning effort: the provider's defaults).
fn deepseek_config(p: &Provider, models: Vec<String>) -> dsh_llm_deepseek::DeepSeekConfig {
    let s = &p.section;
    let defaults = dsh_llm_deepseek::DeepSeekConfig::default();
    dsh_llm_deepseek::DeepSeekConfig {
        api_key: p.api_key(),
        base_url: Some(p.base_url.clone()),
        models,
        connect_timeout_ms: s.connect_timeout_ms.unwrap_or(defaults.connect_timeout_ms),
        stream_idle_timeout_ms: s
            .stream_idle_timeout_ms
            .unwrap_or(defaults.stream_idle_timeout_ms),
        max_event_bytes: s.max_event_bytes.unwrap_or(defaults.max_event_bytes),
        ..defaults
    }
}

/// The adapters that serve `routes` (only those of usable providers), with
/// one message per provider whose settings are invalid (that provider is
/// left out).
pub fn adapters(providers: &[Provider], routes: &[Route]) -> (Vec<AdapterSetup>, Vec<String>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for p in providers.iter().filter(|p| p.usable()) {
        let mine: Vec<&Route> = routes.iter().filter(|r| r.provider == p.name).collect();
        if mine.is_empty() {
            continue;
        }
        let setup = p.adapter_setup(&mine);
        match setup.validate() {
            Ok(()) => out.push(setup),
            Err(e) => problems.push(format!(
                "[providers.{}]: {}",
                p.name,
                e.replace("[deepseek]", &format!("[providers.{}]", p.name))
            )),
        }
    }
    (out, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelSection;

    fn section(text: &str) -> BTreeMap<String, ProviderSection> {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn presets_are_providers_and_a_table_changes_only_its_keys() {
        let (all, problems) = providers(&section(
            "[ollama]\nbase_url = \"http://10.0.0.2:11434/v1\"\n",
        ));
        assert!(problems.is_empty(), "{problems:?}");
        let ollama = all.iter().find(|p| p.name == "ollama").unwrap();
        assert_eq!(ollama.base_url, "http://10.0.0.2:11434/v1");
        assert_eq!(ollama.kind, ProviderKind::OpenAiChat);
        assert_eq!(ollama.api_key_env.as_deref(), Some("OLLAMA_API_KEY"));
        assert!(!ollama.key_required && ollama.usable());
        let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
        for p in PRESETS {
            assert!(names.contains(&p.name), "{names:?}");
        }
    }

    #[test]
    fn a_new_provider_needs_kind_and_base_url() {
        let (all, problems) = providers(&section(
            "[local]\nkind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[broken]\nbase_url = \"http://x\"\n",
        ));
        assert!(all.iter().any(|p| p.name == "local"));
        assert!(!all.iter().any(|p| p.name == "broken"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("[providers.broken] needs kind"));
    }

    #[test]
    fn a_provider_on_this_machine_is_local() {
        for (url, local) in [
            ("http://127.0.0.1:8080/v1", true),
            ("http://localhost/v1", true),
            ("http://[::1]:11434/v1", true),
            ("http://user@127.0.0.2:1/v1", true),
            ("https://api.openai.com/v1", false),
            ("http://127.0.0.1.evil.example/v1", false),
            ("http://10.0.0.2:11434/v1", false),
            ("not a url", false),
        ] {
            assert_eq!(is_loopback_url(url), local, "{url}");
        }
    }

    #[test]
    fn a_key_in_place_of_a_variable_name_is_refused() {
        let (_, problems) = providers(&section("[openai]\napi_key_env = \"sk-abc123 x\"\n"));
        assert!(problems[0].contains("must name an environment variable"));
    }

    #[test]
    fn routes_come_from_models_tables_and_the_chosen_name() {
        let (all, _) = providers(&section(
            "[local]\nkind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
        ));
        let mut models = BTreeMap::new();
        models.insert(
            "qwen3-coder".to_string(),
            ModelSection {
                provider: Some("local".into()),
                ..Default::default()
            },
        );
        models.insert(
            "ghost".to_string(),
            ModelSection {
                provider: Some("nowhere".into()),
                ..Default::default()
            },
        );
        let (routes, problems) = routes(&all, &models, Some("openrouter/qwen/qwen3-coder"));
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("\"nowhere\" is not a provider"));
        let q = routes.iter().find(|r| r.name == "qwen3-coder").unwrap();
        assert_eq!(
            (q.provider.as_str(), q.wire.as_str()),
            ("local", "qwen3-coder")
        );
        let o = routes
            .iter()
            .find(|r| r.name == "openrouter/qwen/qwen3-coder")
            .unwrap();
        assert_eq!(
            (o.provider.as_str(), o.wire.as_str()),
            ("openrouter", "qwen/qwen3-coder")
        );
        assert_eq!(split("unknown/x", &all, &models), None);
        assert_eq!(split("qwen3-coder", &all, &models), None);
    }

    #[test]
    fn a_setup_keeps_its_provider_name_and_puts_the_table_over_the_defaults() {
        let (all, _) = providers(&section(
            "[myds]\nkind = \"deepseek\"\nbase_url = \"http://127.0.0.1:9\"\n[openai]\ninclude_usage = false\n",
        ));
        let route = |name: &str, provider: &str| Route {
            name: name.into(),
            provider: provider.into(),
            wire: "w".into(),
            images: false,
            local: false,
        };
        let by_name = |name: &str| all.iter().find(|p| p.name == name).unwrap();
        let plain = route("plain", "myds");
        let setup = by_name("myds").adapter_setup(&[&plain]);
        assert_eq!(setup.provider(), "myds", "not guessed from the route names");
        assert_eq!(setup.names(), ["plain"]);
        let gpt = route("openai/gpt", "openai");
        let AdapterSetup::OpenAi(c) = by_name("openai").adapter_setup(&[&gpt]) else {
            panic!("openai speaks openai-chat");
        };
        assert_eq!(
            c.quirks.max_tokens_field,
            dsh_llm_openai::MaxTokensField::MaxCompletionTokens,
            "the preset's default"
        );
        assert!(!c.quirks.include_usage, "the table's key");
    }
}
