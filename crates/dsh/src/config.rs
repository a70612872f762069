//! Configuration files: the user's `dsh.toml`, the project's `dsh.toml`, or
//! one named by `--config`.
//!
//! Sources, lowest precedence first:
//!
//! 1. the **user config** `$XDG_CONFIG_HOME/dsh/dsh.toml` (default
//!    `~/.config/dsh/dsh.toml`): trusted;
//! 2. the **project config** `./dsh.toml` in the working directory: a cloned
//!    repository wrote it, so it is *untrusted* until the user trusts it (see
//!    [`crate::trust`]). Until then only its harmless keys apply
//!    ([`FileConfig::unsafe_keys`] lists the others: they can run commands,
//!    read local files into the prompt, or change where the API key goes).
//!
//! `--config FILE` replaces both and is trusted (the user named it). Unknown
//! keys and bad values are errors naming the key and the file; a `dsh.toml`
//! that is a directory or cannot be read is an error naming it.
//!
//! Every numeric limit (bytes, counts, timeouts, depth) is in [`LIMITS`]
//! with its default and a hard ceiling no configuration can pass; an
//! untrusted project may lower a limit but not raise it above its default.
//! Relative paths in a file (`system_prompt`, `session_dir`, an MCP
//! server's `cwd`) are relative to the directory of that file, and `~/` is
//! the home directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Default of `max_result_bytes`: 50,000 bytes.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 50_000;
/// Default of `max_tool_calls`.
pub const DEFAULT_MAX_TOOL_CALLS: usize = dsh_llm::DEFAULT_MAX_TOOL_CALLS;
/// Default of `max_step_output_bytes`: 4 MiB.
pub const DEFAULT_MAX_STEP_OUTPUT_BYTES: usize = dsh_llm::DEFAULT_MAX_OUTPUT_BYTES;
/// Largest accepted `[bash] max_output_bytes`: 8 MiB.
pub const MAX_BASH_OUTPUT_BYTES: usize = dsh_bash_local::MAX_OUTPUT_BYTES_LIMIT;

/// What a numeric limit of `dsh.toml` bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bounds {
    /// Memory (bytes held, items buffered).
    Memory,
    /// Time (waits, timeouts, retries, steps).
    Time,
    /// Recursion (sub-agent nesting).
    Recursion,
    /// Concurrency (calls or processes at once).
    Concurrency,
}

/// One numeric limit of `dsh.toml`: its key, its default and its hard
/// ceiling. A value above the ceiling is an error from any file (user,
/// `--config`, trusted project); a value above the default in an untrusted
/// project is an unsafe key ([`FileConfig::unsafe_keys`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// The key as written, with `*` for a table name
    /// (`models.*.context_window`).
    pub key: &'static str,
    /// The value that applies when no file sets it.
    pub default: u64,
    /// The largest value any configuration may set.
    pub ceiling: u64,
    /// What it bounds.
    pub bounds: Bounds,
}

const MIB: u64 = 1024 * 1024;

/// Every numeric limit of `dsh.toml`, in the order of the reference
/// (`docs/reference/configuration.md`).
pub const LIMITS: &[Limit] = &[
    Limit {
        key: "max_steps",
        default: 100,
        ceiling: 10_000,
        bounds: Bounds::Time,
    },
    Limit {
        key: "max_result_bytes",
        default: DEFAULT_MAX_RESULT_BYTES as u64,
        ceiling: 16 * MIB,
        bounds: Bounds::Memory,
    },
    Limit {
        key: "max_tool_calls",
        default: DEFAULT_MAX_TOOL_CALLS as u64,
        ceiling: 4096,
        bounds: Bounds::Memory,
    },
    Limit {
        key: "max_step_output_bytes",
        default: DEFAULT_MAX_STEP_OUTPUT_BYTES as u64,
        ceiling: 256 * MIB,
        bounds: Bounds::Memory,
    },
    Limit {
        key: "tools.max_parallel",
        default: DEFAULT_MAX_PARALLEL as u64,
        ceiling: 100,
        bounds: Bounds::Concurrency,
    },
    Limit {
        key: "subagents.max_depth",
        default: crate::subagents::DEFAULT_MAX_DEPTH as u64,
        ceiling: 8,
        bounds: Bounds::Recursion,
    },
    Limit {
        key: "deepseek.max_retries",
        default: DEFAULT_MAX_RETRIES as u64,
        ceiling: 20,
        bounds: Bounds::Time,
    },
    Limit {
        key: "deepseek.connect_timeout_ms",
        default: dsh_llm_deepseek::DEFAULT_CONNECT_TIMEOUT_MS,
        ceiling: dsh_llm_deepseek::MAX_CONNECT_TIMEOUT_MS,
        bounds: Bounds::Time,
    },
    Limit {
        key: "deepseek.stream_idle_timeout_ms",
        default: dsh_llm_deepseek::DEFAULT_STREAM_IDLE_TIMEOUT_MS,
        ceiling: dsh_llm_deepseek::MAX_STREAM_IDLE_TIMEOUT_MS,
        bounds: Bounds::Time,
    },
    Limit {
        key: "deepseek.max_event_bytes",
        default: dsh_llm_deepseek::DEFAULT_MAX_EVENT_BYTES as u64,
        ceiling: dsh_llm_deepseek::MAX_MAX_EVENT_BYTES as u64,
        bounds: Bounds::Memory,
    },
    Limit {
        key: "bash.timeout_ms",
        default: 120_000,
        ceiling: 86_400_000,
        bounds: Bounds::Time,
    },
    Limit {
        key: "bash.max_timeout_ms",
        default: 600_000,
        ceiling: 86_400_000,
        bounds: Bounds::Time,
    },
    Limit {
        key: "bash.max_output_bytes",
        default: 64_000,
        ceiling: MAX_BASH_OUTPUT_BYTES as u64,
        bounds: Bounds::Memory,
    },
    Limit {
        key: "models.*.context_window",
        default: dsh_llm_deepseek::CONTEXT_WINDOW,
        ceiling: 16 * MIB,
        bounds: Bounds::Memory,
    },
    Limit {
        key: "mcp.servers.*.timeout_ms",
        default: 60_000,
        ceiling: 3_600_000,
        bounds: Bounds::Time,
    },
    Limit {
        key: "mcp.servers.*.max_message_bytes",
        default: 16 * MIB,
        ceiling: 256 * MIB,
        bounds: Bounds::Memory,
    },
    Limit {
        key: "hooks.*.timeout",
        default: 60,
        ceiling: 3_600,
        bounds: Bounds::Time,
    },
];

/// Default of `[deepseek] max_retries`.
pub const DEFAULT_MAX_RETRIES: u32 = 3;

/// The [`LIMITS`] entry for `key` (as written there, with `*`).
pub fn limit(key: &str) -> Option<&'static Limit> {
    LIMITS.iter().find(|l| l.key == key)
}

impl SetLimit {
    /// The key as a person finds it in the file: `[tools] max_parallel`,
    /// `[[hooks.Stop]] timeout`, `max_steps`.
    pub fn written(&self) -> String {
        match self.key.rsplit_once('.') {
            Some((table, leaf)) if table.starts_with("hooks.") => format!("[[{table}]] {leaf}"),
            Some((table, leaf)) => format!("[{table}] {leaf}"),
            None => self.key.clone(),
        }
    }
}

/// A limit a file sets: the key as written in the file (the table name in
/// place of `*`), the entry in [`LIMITS`] and the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetLimit {
    /// The key as written (`models."deepseek-v4-flash".context_window`).
    pub key: String,
    /// Its entry in [`LIMITS`].
    pub limit: &'static Limit,
    /// The value the file sets.
    pub value: u64,
}

/// The parsed `dsh.toml`. Every field is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// The default model (`echo`, `deepseek-v4-flash`, …).
    pub model: Option<String>,
    /// Where session logs go.
    pub session_dir: Option<PathBuf>,
    /// A file whose text is appended to the system prompt.
    pub system_prompt: Option<PathBuf>,
    /// Hard cap on steps per turn (at least 1).
    pub max_steps: Option<u32>,
    /// Cap on the text of one tool result kept in the session and shown to
    /// the model, in bytes; the rest goes to a spill file.
    pub max_result_bytes: Option<usize>,
    /// Cap on tool calls in one model step.
    pub max_tool_calls: Option<usize>,
    /// Cap on the output of one model step (text, reasoning, arguments), in
    /// bytes.
    pub max_step_output_bytes: Option<usize>,
    /// `tools = [..]` (the built-in tools to offer) or the `[tools]` table.
    #[serde(default)]
    pub tools: ToolsSection,
    /// DeepSeek adapter settings.
    #[serde(default)]
    pub deepseek: DeepSeekSection,
    /// `[models.<name>]`: per-model settings (`context_window`, prices,
    /// `provider`).
    #[serde(default)]
    pub models: BTreeMap<String, ModelSection>,
    /// `[providers.<name>]`: where models' requests go (see
    /// [`crate::providers`]).
    #[serde(default)]
    pub providers: BTreeMap<String, crate::providers::ProviderSection>,
    /// `[budget]`: what a session may cost.
    #[serde(default)]
    pub budget: BudgetSection,
    /// `[compaction]`: when and how much of the history is compacted.
    #[serde(default)]
    pub compaction: CompactionSection,
    /// Bash executor settings.
    #[serde(default)]
    pub bash: BashSection,
    /// MCP servers.
    #[serde(default)]
    pub mcp: McpSection,
    /// `mcp_tool_prefix` at the top level: the same key as
    /// `[mcp] mcp_tool_prefix`. [`parse`] moves it there (and rejects the
    /// two set to different values), so after parsing it is always `None`;
    /// read [`McpSection::mcp_tool_prefix`].
    pub mcp_tool_prefix: Option<String>,
    /// `[[hooks.<Event>]]`: command hooks (Claude Code's protocol).
    pub hooks: Option<dsh_hooks::HooksSection>,
    /// The `hooks.json` beside this file (Claude Code's format), when there
    /// is one; several after [`FileConfig::overlay`].
    #[serde(skip)]
    pub claude_hooks: Vec<ClaudeHooksFile>,
    /// `[sandbox]`: how commands are confined.
    pub sandbox: Option<SandboxSection>,
    /// `[permission]`: the permission mode and the approval policy.
    pub permission: Option<PermissionSection>,
    /// `[todo]`: the `todo_write` tool's rules.
    #[serde(default)]
    pub todo: TodoSection,
    /// `[subagents]`: how deep sub-agents may nest.
    #[serde(default)]
    pub subagents: SubagentsSection,
    /// `[web]`: the web tools (`web_fetch`, `web_search`); see
    /// [`crate::tools::web`].
    #[serde(default)]
    pub web: crate::tools::web::WebSection,
    /// Which file set each path-valued or secret key (`system_prompt`,
    /// `session_dir`, `deepseek.api_key`), for messages; filled when a file
    /// is read, merged by [`FileConfig::overlay`].
    #[serde(skip)]
    pub origins: BTreeMap<String, PathBuf>,
}

/// `[subagents]`
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SubagentsSection {
    /// How deep sub-agents may nest (default 3; 0 forbids them).
    pub max_depth: Option<u32>,
}

/// `[todo]`
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TodoSection {
    /// Whether more than one todo item may be `in_progress` at a time
    /// (default `false`).
    pub allow_parallel_in_progress: Option<bool>,
}

/// A `hooks.json` read beside a `dsh.toml`: the `hooks` object of a Claude
/// Code `settings.json`, or the whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeHooksFile {
    /// Where it was read.
    pub path: PathBuf,
    /// Its text (parsed when the stack resolves).
    pub text: String,
}

/// Default of `[tools] max_parallel`.
pub const DEFAULT_MAX_PARALLEL: usize = 10;

/// `tools`: either the list of built-in tools to offer (`tools = ["bash",
/// "read"]`, the older form) or the `[tools]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolsSection {
    /// `enabled`: the built-in tools to offer (default: all of them).
    pub enabled: Option<Vec<String>>,
    /// `max_parallel`: at most this many concurrency-safe calls of one
    /// model step run at once (default 10; 1 runs every call alone).
    pub max_parallel: Option<usize>,
}

impl<'de> Deserialize<'de> for ToolsSection {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// The table form, strict about its keys.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            enabled: Option<Vec<String>>,
            max_parallel: Option<usize>,
        }
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = ToolsSection;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of tool names or a [tools] table")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                let names =
                    Vec::<String>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
                Ok(ToolsSection {
                    enabled: Some(names),
                    max_parallel: None,
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                let t = Table::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(ToolsSection {
                    enabled: t.enabled,
                    max_parallel: t.max_parallel,
                })
            }
        }
        d.deserialize_any(Either)
    }
}

/// `[compaction]`: automatic context compaction.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CompactionSection {
    /// Compact before a step when the next request passes this fraction of
    /// the context window (default 0.8; above 0, at most 1).
    pub threshold: Option<f64>,
    /// Keep this fraction of the window of the most recent history
    /// verbatim (default 0.16; at least 0, below `threshold`).
    pub retain: Option<f64>,
}

/// `[models.<name>]`: settings of one model.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// The model's context window in tokens (default: the model table's;
    /// 1,048,576 for the DeepSeek V4 models). A small value makes long
    /// sessions testable.
    pub context_window: Option<u64>,
    /// Price of 1,000,000 uncached input tokens, in `currency` (a
    /// non-negative finite number). With `output_price`, it replaces the
    /// built-in price of the model (see [`crate::catalogue`]).
    #[serde(default, deserialize_with = "price::input")]
    pub input_price: Option<f64>,
    /// Price of 1,000,000 input tokens served from the provider's cache
    /// (default: `input_price`).
    #[serde(default, deserialize_with = "price::cached_input")]
    pub cached_input_price: Option<f64>,
    /// Price of 1,000,000 output tokens.
    #[serde(default, deserialize_with = "price::output")]
    pub output_price: Option<f64>,
    /// The currency of the prices (default `USD`): 1 to 10 ASCII letters
    /// or digits.
    #[serde(default, deserialize_with = "price::currency")]
    pub currency: Option<String>,
    /// The provider that serves this model (a preset or a
    /// `[providers.<name>]` table); default: the DeepSeek adapter.
    pub provider: Option<String>,
    /// The id sent to the provider (default: the table's name).
    pub id: Option<String>,
    /// Whether the model takes images (default: what the built-in entry
    /// says, else false).
    pub images: Option<bool>,
}

impl ModelSection {
    /// Whether this entry sets any price key.
    pub fn sets_price(&self) -> bool {
        self.input_price.is_some()
            || self.cached_input_price.is_some()
            || self.output_price.is_some()
            || self.currency.is_some()
    }
}

/// `[budget]`: what a session may cost.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BudgetSection {
    /// The most one session may cost, in its model's currency (a positive
    /// finite number); a request that would pass it is not sent
    /// (`BUDGET_EXCEEDED`). A project config can only lower it.
    #[serde(default, deserialize_with = "price::budget")]
    pub max_cost_per_session: Option<f64>,
}

/// Checked deserializers of the money keys: each error names its key.
mod price {
    use serde::{Deserialize, Deserializer};

    fn money<'de, D: Deserializer<'de>>(
        d: D,
        key: &str,
        positive: bool,
    ) -> Result<Option<f64>, D::Error> {
        let v = f64::deserialize(d)?;
        let ok = v.is_finite() && if positive { v > 0.0 } else { v >= 0.0 };
        if ok {
            Ok(Some(v))
        } else {
            let what = if positive { "positive" } else { "non-negative" };
            Err(serde::de::Error::custom(format!(
                "{key} = {v} must be a {what} finite number"
            )))
        }
    }

    pub(super) fn input<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        money(d, "input_price", false)
    }

    pub(super) fn cached_input<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        money(d, "cached_input_price", false)
    }

    pub(super) fn output<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        money(d, "output_price", false)
    }

    pub(super) fn budget<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        money(d, "max_cost_per_session", true)
    }

    pub(super) fn currency<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        let v = String::deserialize(d)?;
        if (1..=10).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_alphanumeric()) {
            Ok(Some(v))
        } else {
            Err(serde::de::Error::custom(format!(
                "currency = {v:?} must be 1 to 10 ASCII letters or digits (USD, EUR, CNY)"
            )))
        }
    }
}

/// The name of the Claude Code hooks file read beside a `dsh.toml`.
pub const HOOKS_JSON: &str = "hooks.json";

/// `[sandbox]`
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// The network of confined commands: `true` (default, the host's),
    /// `false` (none: an empty network namespace, else Landlock's TCP
    /// rules, ABI 4+), or a list of host names (`"example.org"`,
    /// `"*.example.com"`), IP addresses and CIDR ranges reached only
    /// through dsh's proxy.
    pub network: Option<NetworkSetting>,
    /// Whether confined commands also get the namespace layer: `"auto"`
    /// (default: where the machine allows, else Landlock alone, said once
    /// per session), `"required"` (refuse commands without it,
    /// `SANDBOX_UNAVAILABLE`) or `"off"`.
    pub namespaces: Option<NamespacesSetting>,
    /// A private `/tmp` for the session's commands instead of the shared
    /// one (default `false`; needs the namespace layer).
    pub private_tmp: Option<bool>,
    /// Unix sockets on the file system confined commands may reach
    /// (absolute paths; default none: `socket(AF_UNIX, …)` fails with
    /// `EACCES`). Until the namespace layer, a non-empty list lets
    /// confined commands reach any Unix socket.
    pub allow_unix_sockets: Option<Vec<PathBuf>>,
}

/// `[sandbox] network`: `true`, `false` or a list of allowed hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkSetting {
    /// `true` or `false`.
    Allowed(bool),
    /// Host names, wildcards (`*.example.com`), IP addresses or CIDR
    /// ranges, reached through the proxy (checked when settings resolve).
    Hosts(Vec<String>),
}

impl<'de> Deserialize<'de> for NetworkSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = NetworkSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "true, false, or a list of host names such as [\"crates.io\", \"*.npmjs.org\"]",
                )
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(NetworkSetting::Allowed(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut hosts = Vec::new();
                while let Some(h) = seq.next_element::<String>()? {
                    hosts.push(h);
                }
                Ok(NetworkSetting::Hosts(hosts))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// `[sandbox] namespaces`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum NamespacesSetting {
    /// Where the machine allows (default).
    Auto,
    /// Refuse to run commands without it.
    Required,
    /// Never.
    Off,
}

impl From<NamespacesSetting> for dsh_sandbox::NamespaceMode {
    fn from(s: NamespacesSetting) -> Self {
        match s {
            NamespacesSetting::Auto => Self::Auto,
            NamespacesSetting::Required => Self::Required,
            NamespacesSetting::Off => Self::Off,
        }
    }
}

/// `[permission]`
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PermissionSection {
    /// `read-only`, `workspace-write` (default) or `danger-full-access`.
    pub mode: Option<dsh_protocol::SandboxMode>,
    /// `ask` (default) or `never`.
    pub approval: Option<crate::approval::ApprovalPolicy>,
    /// Lasting permission rules (`bash(cargo test:*)`, `edit(src/**)`,
    /// `mcp__github__*`; see `docs/permissions.md`), each with its file.
    #[serde(default)]
    pub allow: Vec<dsh_rules::Written>,
    /// Rules that refuse a call.
    #[serde(default)]
    pub deny: Vec<dsh_rules::Written>,
    /// Rules that ask the user before a call runs.
    #[serde(default)]
    pub ask: Vec<dsh_rules::Written>,
}

/// `[deepseek]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeepSeekSection {
    /// API key (prefer the environment variable `DEEPSEEK_API_KEY`).
    pub api_key: Option<String>,
    /// Base URL (default `https://api.deepseek.com`).
    pub base_url: Option<String>,
    /// Extra model names served by the adapter.
    #[serde(default)]
    pub models: Vec<String>,
    /// `enabled` or `disabled`.
    pub thinking: Option<ThinkingSetting>,
    /// `high` or `max`.
    pub reasoning_effort: Option<EffortSetting>,
    /// Retries of transient failures (0 disables).
    pub max_retries: Option<u32>,
    /// Longest wait between two data events of a stream, in ms.
    pub stream_idle_timeout_ms: Option<u64>,
    /// Longest wait for a connection and the response headers, in ms.
    #[serde(alias = "header_timeout_ms")]
    pub connect_timeout_ms: Option<u64>,
    /// Largest accepted SSE event, in bytes.
    pub max_event_bytes: Option<usize>,
    /// Send tools in DeepSeek's strict function-calling dialect (beta
    /// endpoint) where their spec allows it.
    pub strict_tools: Option<bool>,
}

/// `thinking = "enabled" | "disabled"`
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingSetting {
    /// Thinking mode on.
    Enabled,
    /// Thinking mode off.
    Disabled,
}

/// `reasoning_effort = "high" | "max"`
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EffortSetting {
    /// High effort.
    High,
    /// Maximum effort.
    Max,
}

/// `[bash]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BashSection {
    /// Default foreground timeout in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Cap on per-call timeouts in milliseconds.
    pub max_timeout_ms: Option<u64>,
    /// In-memory tail per stream in bytes.
    pub max_output_bytes: Option<usize>,
    /// Keep spill files after exit.
    pub keep_spill_files: Option<bool>,
    /// Variables passed to commands even though their names look secret.
    pub env_passthrough: Option<Vec<String>>,
}

/// `[mcp]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// `[mcp.servers.NAME]` tables (see [`dsh_mcp::McpServerSpec`]): a
    /// stdio server (`command`, `args`, `env`, `cwd`) or an HTTP one
    /// (`url`, `headers`, `bearer_token_env_var`), and `timeout_ms`,
    /// `max_message_bytes`, `validate_args`, `enabled`.
    #[serde(default)]
    pub servers: BTreeMap<String, dsh_mcp::McpServerSpec>,
    /// The first part of MCP tool names (default `"mcp"`:
    /// `mcp__<server>__<tool>`); `""` gives the older `<server>__<tool>`.
    /// Also accepted at the top level of `dsh.toml`.
    pub mcp_tool_prefix: Option<String>,
}

impl FileConfig {
    /// The keys set in this file that an untrusted file may not set, as
    /// written in `dsh.toml`, in a fixed order: they run commands (`mcp`,
    /// `hooks`), read local files into the prompt (`system_prompt`), change
    /// where the API key or the conversation goes (`deepseek.base_url`, `providers`,
    /// `deepseek.api_key`, `session_dir`), hand secrets to commands
    /// (`bash.env_passthrough`), loosen confinement (`sandbox`,
    /// `permission`), or raise a limit on memory, time, recursion or
    /// concurrency above its default (every [`LIMITS`] key outside `mcp`
    /// and `hooks`; lowering one is harmless).
    pub fn unsafe_keys(&self) -> Vec<String> {
        let set = [
            ("mcp", !self.mcp.servers.is_empty()),
            (
                "hooks",
                self.hooks.is_some() || !self.claude_hooks.is_empty(),
            ),
            ("deepseek.base_url", self.deepseek.base_url.is_some()),
            ("deepseek.api_key", self.deepseek.api_key.is_some()),
            ("providers", !self.providers.is_empty()),
            ("system_prompt", self.system_prompt.is_some()),
            ("sandbox", self.sandbox.is_some()),
            ("permission", self.permission.is_some()),
            ("session_dir", self.session_dir.is_some()),
            ("bash.env_passthrough", self.bash.env_passthrough.is_some()),
        ];
        let mut keys: Vec<String> = set
            .into_iter()
            .filter(|(_, present)| *present)
            .map(|(key, _)| key.to_string())
            .collect();
        keys.extend(self.web.unsafe_keys());
        keys.extend(self.raised_limits().into_iter().map(|l| l.key));
        // A price decides what the budget lets through.
        for (name, m) in &self.models {
            for (key, set) in [
                ("input_price", m.input_price.is_some()),
                ("cached_input_price", m.cached_input_price.is_some()),
                ("output_price", m.output_price.is_some()),
                ("currency", m.currency.is_some()),
            ] {
                if set {
                    keys.push(format!("models.{name:?}.{key}"));
                }
            }
        }
        keys
    }

    /// The limits this file sets above their default, outside `mcp` and
    /// `hooks` (those sections are unsafe as a whole).
    pub fn raised_limits(&self) -> Vec<SetLimit> {
        self.limits()
            .into_iter()
            .filter(|l| {
                l.value > l.limit.default
                    && !l.limit.key.starts_with("mcp.")
                    && !l.limit.key.starts_with("hooks.")
            })
            .collect()
    }

    /// Every limit this file sets, in [`LIMITS`] order (per-table keys in
    /// table order). `hooks.*.timeout` covers `[[hooks.<Event>]]` only; the
    /// timeouts of a `hooks.json` are checked when hooks are compiled.
    pub fn limits(&self) -> Vec<SetLimit> {
        let mut out = Vec::new();
        let mut push = |key: String, template: &str, value: Option<u64>| {
            if let (Some(value), Some(limit)) = (value, limit(template)) {
                out.push(SetLimit { key, limit, value });
            }
        };
        let us = |v: Option<usize>| v.map(|v| v as u64);
        for (key, value) in [
            ("max_steps", self.max_steps.map(u64::from)),
            ("max_result_bytes", us(self.max_result_bytes)),
            ("max_tool_calls", us(self.max_tool_calls)),
            ("max_step_output_bytes", us(self.max_step_output_bytes)),
            ("tools.max_parallel", us(self.tools.max_parallel)),
            (
                "subagents.max_depth",
                self.subagents.max_depth.map(u64::from),
            ),
            (
                "deepseek.max_retries",
                self.deepseek.max_retries.map(u64::from),
            ),
            (
                "deepseek.connect_timeout_ms",
                self.deepseek.connect_timeout_ms,
            ),
            (
                "deepseek.stream_idle_timeout_ms",
                self.deepseek.stream_idle_timeout_ms,
            ),
            (
                "deepseek.max_event_bytes",
                us(self.deepseek.max_event_bytes),
            ),
            ("bash.timeout_ms", self.bash.timeout_ms),
            ("bash.max_timeout_ms", self.bash.max_timeout_ms),
            ("bash.max_output_bytes", us(self.bash.max_output_bytes)),
        ] {
            push(key.to_string(), key, value);
        }
        for (name, m) in &self.models {
            push(
                format!("models.{name:?}.context_window"),
                "models.*.context_window",
                m.context_window,
            );
        }
        for (name, spec) in &self.mcp.servers {
            push(
                format!("mcp.servers.{name}.timeout_ms"),
                "mcp.servers.*.timeout_ms",
                spec.timeout_ms,
            );
            push(
                format!("mcp.servers.{name}.max_message_bytes"),
                "mcp.servers.*.max_message_bytes",
                us(spec.max_message_bytes),
            );
        }
        if let Some(section) = &self.hooks {
            for (event, hook) in section.entries() {
                push(
                    format!("hooks.{}.timeout", event.name()),
                    "hooks.*.timeout",
                    hook.timeout,
                );
            }
        }
        out
    }

    /// This file without the keys [`FileConfig::unsafe_keys`] names (a
    /// raised limit falls back to what a lower file or the default says).
    pub fn without_unsafe_keys(mut self) -> FileConfig {
        for raised in self.raised_limits() {
            self.clear_limit(&raised.key);
        }
        self.mcp.servers.clear();
        self.hooks = None;
        self.claude_hooks.clear();
        self.deepseek.base_url = None;
        self.deepseek.api_key = None;
        self.providers.clear();
        self.system_prompt = None;
        self.sandbox = None;
        self.permission = None;
        self.session_dir = None;
        self.bash.env_passthrough = None;
        self.web.clear_unsafe_keys();
        for m in self.models.values_mut() {
            m.input_price = None;
            m.cached_input_price = None;
            m.output_price = None;
            m.currency = None;
        }
        for key in ["system_prompt", "session_dir", "deepseek.api_key"] {
            self.origins.remove(key);
        }
        self
    }

    /// Unsets the limit written `key` (as [`SetLimit::key`]).
    fn clear_limit(&mut self, key: &str) {
        match key {
            "max_steps" => self.max_steps = None,
            "max_result_bytes" => self.max_result_bytes = None,
            "max_tool_calls" => self.max_tool_calls = None,
            "max_step_output_bytes" => self.max_step_output_bytes = None,
            "tools.max_parallel" => self.tools.max_parallel = None,
            "subagents.max_depth" => self.subagents.max_depth = None,
            "deepseek.max_retries" => self.deepseek.max_retries = None,
            "deepseek.connect_timeout_ms" => self.deepseek.connect_timeout_ms = None,
            "deepseek.stream_idle_timeout_ms" => self.deepseek.stream_idle_timeout_ms = None,
            "deepseek.max_event_bytes" => self.deepseek.max_event_bytes = None,
            "bash.timeout_ms" => self.bash.timeout_ms = None,
            "bash.max_timeout_ms" => self.bash.max_timeout_ms = None,
            "bash.max_output_bytes" => self.bash.max_output_bytes = None,
            other => {
                for (name, m) in &mut self.models {
                    if other == format!("models.{name:?}.context_window") {
                        m.context_window = None;
                    }
                }
            }
        }
    }

    /// Makes the relative paths of this file (`system_prompt`,
    /// `session_dir`, MCP servers' `cwd`) relative to `dir` (the directory
    /// of the file) and expands a leading `~/` to `home`, and records
    /// `file` as the origin of `system_prompt`, `session_dir` and
    /// `deepseek.api_key` when they are set.
    pub fn anchor_paths(&mut self, file: &Path, home: Option<&Path>) {
        let dir = file.parent().unwrap_or(Path::new("."));
        let anchor = |p: &mut PathBuf| *p = anchored(p, dir, home);
        if let Some(p) = &mut self.system_prompt {
            anchor(p);
        }
        if let Some(p) = &mut self.session_dir {
            anchor(p);
        }
        for spec in self.mcp.servers.values_mut() {
            if let Some(p) = &mut spec.cwd {
                anchor(p);
            }
        }
        for (key, set) in [
            ("system_prompt", self.system_prompt.is_some()),
            ("session_dir", self.session_dir.is_some()),
            ("deepseek.api_key", self.deepseek.api_key.is_some()),
        ] {
            if set {
                self.origins.insert(key.to_string(), file.to_path_buf());
            }
        }
    }

    /// `upper` over `self`: every key `upper` sets wins; MCP servers are
    /// merged by name and extra model names are joined.
    pub fn overlay(self, upper: FileConfig) -> FileConfig {
        let mut servers = self.mcp.servers;
        servers.extend(upper.mcp.servers);
        let (low, up) = (self.deepseek, upper.deepseek);
        let mut models = low.models;
        for m in up.models {
            if !models.contains(&m) {
                models.push(m);
            }
        }
        let (lb, ub) = (self.bash, upper.bash);
        FileConfig {
            model: upper.model.or(self.model),
            session_dir: upper.session_dir.or(self.session_dir),
            system_prompt: upper.system_prompt.or(self.system_prompt),
            max_steps: upper.max_steps.or(self.max_steps),
            max_result_bytes: upper.max_result_bytes.or(self.max_result_bytes),
            max_tool_calls: upper.max_tool_calls.or(self.max_tool_calls),
            max_step_output_bytes: upper.max_step_output_bytes.or(self.max_step_output_bytes),
            compaction: CompactionSection {
                threshold: upper.compaction.threshold.or(self.compaction.threshold),
                retain: upper.compaction.retain.or(self.compaction.retain),
            },
            models: {
                let mut models = self.models;
                for (name, m) in upper.models {
                    let low = models.remove(&name).unwrap_or_default();
                    models.insert(
                        name,
                        ModelSection {
                            context_window: m.context_window.or(low.context_window),
                            input_price: m.input_price.or(low.input_price),
                            cached_input_price: m.cached_input_price.or(low.cached_input_price),
                            output_price: m.output_price.or(low.output_price),
                            currency: m.currency.or(low.currency),
                            provider: m.provider.or(low.provider),
                            id: m.id.or(low.id),
                            images: m.images.or(low.images),
                        },
                    );
                }
                models
            },
            providers: {
                let mut providers = self.providers;
                for (name, p) in upper.providers {
                    let low = providers.remove(&name).unwrap_or_default();
                    providers.insert(name, p.over(low));
                }
                providers
            },
            // The lower budget wins: a project can only lower the user's.
            budget: BudgetSection {
                max_cost_per_session: match (
                    self.budget.max_cost_per_session,
                    upper.budget.max_cost_per_session,
                ) {
                    (Some(l), Some(u)) => Some(l.min(u)),
                    (l, u) => l.or(u),
                },
            },
            tools: ToolsSection {
                enabled: upper.tools.enabled.or(self.tools.enabled),
                max_parallel: upper.tools.max_parallel.or(self.tools.max_parallel),
            },
            todo: TodoSection {
                allow_parallel_in_progress: upper
                    .todo
                    .allow_parallel_in_progress
                    .or(self.todo.allow_parallel_in_progress),
            },
            web: self.web.overlay(upper.web),
            subagents: SubagentsSection {
                max_depth: upper.subagents.max_depth.or(self.subagents.max_depth),
            },
            deepseek: DeepSeekSection {
                api_key: up.api_key.or(low.api_key),
                base_url: up.base_url.or(low.base_url),
                models,
                thinking: up.thinking.or(low.thinking),
                reasoning_effort: up.reasoning_effort.or(low.reasoning_effort),
                max_retries: up.max_retries.or(low.max_retries),
                stream_idle_timeout_ms: up.stream_idle_timeout_ms.or(low.stream_idle_timeout_ms),
                connect_timeout_ms: up.connect_timeout_ms.or(low.connect_timeout_ms),
                max_event_bytes: up.max_event_bytes.or(low.max_event_bytes),
                strict_tools: up.strict_tools.or(low.strict_tools),
            },
            bash: BashSection {
                timeout_ms: ub.timeout_ms.or(lb.timeout_ms),
                max_timeout_ms: ub.max_timeout_ms.or(lb.max_timeout_ms),
                max_output_bytes: ub.max_output_bytes.or(lb.max_output_bytes),
                keep_spill_files: ub.keep_spill_files.or(lb.keep_spill_files),
                env_passthrough: ub.env_passthrough.or(lb.env_passthrough),
            },
            mcp: McpSection {
                servers,
                mcp_tool_prefix: upper.mcp.mcp_tool_prefix.or(self.mcp.mcp_tool_prefix),
            },
            mcp_tool_prefix: upper.mcp_tool_prefix.or(self.mcp_tool_prefix),
            // Hooks add up: the lower file's run, then the upper's.
            hooks: match (self.hooks, upper.hooks) {
                (Some(l), Some(u)) => Some(l.join(u)),
                (l, u) => l.or(u),
            },
            claude_hooks: {
                let mut all = self.claude_hooks;
                all.extend(upper.claude_hooks);
                all
            },
            sandbox: match (upper.sandbox, self.sandbox) {
                (Some(u), Some(l)) => Some(SandboxSection {
                    network: u.network.or(l.network),
                    allow_unix_sockets: u.allow_unix_sockets.or(l.allow_unix_sockets),
                    namespaces: u.namespaces.or(l.namespaces),
                    private_tmp: u.private_tmp.or(l.private_tmp),
                }),
                (u, l) => u.or(l),
            },
            permission: match (upper.permission, self.permission) {
                (Some(u), Some(l)) => Some(PermissionSection {
                    mode: u.mode.or(l.mode),
                    approval: u.approval.or(l.approval),
                    // Rules add up, each keeping its file.
                    allow: [l.allow, u.allow].concat(),
                    deny: [l.deny, u.deny].concat(),
                    ask: [l.ask, u.ask].concat(),
                }),
                (u, l) => u.or(l),
            },
            origins: {
                let mut all = self.origins;
                all.extend(upper.origins);
                all
            },
        }
    }
}

/// `path` made absolute against `dir`, a leading `~` (alone or `~/…`)
/// replaced by `home`; an absolute path is kept.
pub fn anchored(path: &Path, dir: &Path, home: Option<&Path>) -> PathBuf {
    if let (Some(home), Ok(rest)) = (home, path.strip_prefix("~")) {
        return home.join(rest);
    }
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        dir.join(path)
    }
}

pub(crate) use dsh_rules::lexical_normal;

/// `$HOME`, when set and absolute.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// A configuration error, naming the file and the key when it can.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A config file exists but cannot be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A config path is not a regular file (a directory, a socket, …).
    #[error("config file {path} is not a regular file")]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// The file is not valid TOML or has an unknown key or bad value.
    #[error("invalid config file {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// toml's message, which names the key and the line.
        message: String,
    },
}

impl ConfigError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ConfigError::Read { path, .. }
            | ConfigError::NotAFile { path }
            | ConfigError::Invalid { path, .. } => path,
        }
    }
}

/// Where a config file came from, which decides whether it is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigOrigin {
    /// Named by `--config`: trusted.
    Explicit,
    /// `$XDG_CONFIG_HOME/dsh/dsh.toml`: trusted.
    User,
    /// `./dsh.toml`: untrusted until the user trusts it.
    Project,
}

/// One config file read from disk.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// The path as found.
    pub path: PathBuf,
    /// Where it came from.
    pub origin: ConfigOrigin,
    /// Its bytes (what a trust decision is keyed on).
    pub text: String,
    /// Its contents.
    pub file: FileConfig,
}

/// The config files that apply, before any trust decision.
#[derive(Debug, Clone, Default)]
pub struct LoadedConfig {
    /// `--config FILE`, else the user config; `None` when there is none.
    pub base: Option<ConfigFile>,
    /// The project config (only without `--config`, and only when it is not
    /// the user config itself).
    pub project: Option<ConfigFile>,
}

/// Finds and parses the configuration files.
///
/// # Errors
/// An explicit `--config` file that is missing or unreadable; any found
/// `dsh.toml` that is not a regular file, cannot be read or does not parse
/// (unknown keys included): the first of [`load_all`]'s errors.
pub fn load(explicit: Option<&Path>, cwd: &Path) -> Result<LoadedConfig, ConfigError> {
    let (loaded, mut errors) = load_all(explicit, cwd);
    match errors.is_empty() {
        true => Ok(loaded),
        false => Err(errors.remove(0)),
    }
}

/// Finds and parses the configuration files, going on past a file that
/// fails: the files that were read, and the error of each one that could
/// not be (that file is then missing from the result), user config first.
pub fn load_all(explicit: Option<&Path>, cwd: &Path) -> (LoadedConfig, Vec<ConfigError>) {
    let mut errors = Vec::new();
    if let Some(path) = explicit {
        let base = read(path, ConfigOrigin::Explicit)
            .map_err(|e| errors.push(e))
            .ok();
        return (
            LoadedConfig {
                base,
                project: None,
            },
            errors,
        );
    }
    let user_path = user_config_path();
    let base = match &user_path {
        Some(p) if exists(p) || exists(&hooks_json_beside(p)) => {
            read(p, ConfigOrigin::User).map_err(|e| errors.push(e)).ok()
        }
        _ => None,
    };
    let local = cwd.join("dsh.toml");
    let same_as_user = user_path.as_deref().is_some_and(|u| {
        same_file(u, &local) || same_file(&hooks_json_beside(u), &hooks_json_beside(&local))
    });
    let project = if (exists(&local) || exists(&hooks_json_beside(&local))) && !same_as_user {
        read(&local, ConfigOrigin::Project)
            .map_err(|e| errors.push(e))
            .ok()
    } else {
        None
    };
    (LoadedConfig { base, project }, errors)
}

/// The project config of `dir` (its `dsh.toml` and the `hooks.json` beside
/// it), as `dsh trust` sees it; `None` when neither file exists.
///
/// # Errors
/// As [`load`], for that directory's files.
pub fn read_project(dir: &Path) -> Result<Option<ConfigFile>, ConfigError> {
    let path = dir.join("dsh.toml");
    if !exists(&path) && !exists(&hooks_json_beside(&path)) {
        return Ok(None);
    }
    read(&path, ConfigOrigin::Project).map(Some)
}

/// Parses a `dsh.toml` text. A top-level `mcp_tool_prefix` is moved into
/// [`McpSection::mcp_tool_prefix`].
///
/// # Errors
/// toml's message (it names the offending key and line); `mcp_tool_prefix`
/// set both at the top level and in `[mcp]` to different values.
pub fn parse(text: &str) -> Result<FileConfig, String> {
    let mut file: FileConfig =
        toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())?;
    for (name, m) in &file.models {
        if m.sets_price() && (m.input_price.is_none() || m.output_price.is_none()) {
            return Err(format!(
                "[models.{name:?}] sets a price but not both input_price and output_price (cached_input_price defaults to input_price, currency to USD)"
            ));
        }
    }
    if let Some(top) = file.mcp_tool_prefix.take() {
        match &file.mcp.mcp_tool_prefix {
            Some(inner) if *inner != top => {
                return Err(format!(
                    "`mcp_tool_prefix = {top:?}` (top level) and `[mcp] mcp_tool_prefix = {inner:?}` disagree; set it in one place"
                ))
            }
            _ => file.mcp.mcp_tool_prefix = Some(top),
        }
    }
    Ok(file)
}

/// `hooks.json` in the directory of the `dsh.toml` at `path`.
pub fn hooks_json_beside(path: &Path) -> PathBuf {
    path.with_file_name(HOOKS_JSON)
}

/// Reads the `dsh.toml` at `path` and the `hooks.json` beside it. Either
/// may be missing (not both: the caller checks); a missing `dsh.toml`
/// reads as empty. The returned text (what a trust decision is keyed on)
/// covers both files, so editing `hooks.json` counts as a change.
fn read(path: &Path, origin: ConfigOrigin) -> Result<ConfigFile, ConfigError> {
    let mut cfg = if origin == ConfigOrigin::Explicit || exists(path) {
        read_toml(path, origin)?
    } else {
        ConfigFile {
            path: path.to_path_buf(),
            origin,
            text: String::new(),
            file: FileConfig::default(),
        }
    };
    let hooks_path = hooks_json_beside(path);
    if exists(&hooks_path) {
        let text = read_text(&hooks_path)?;
        cfg.text.push_str(&format!("\n# {HOOKS_JSON}\n{text}"));
        cfg.file.claude_hooks.push(ClaudeHooksFile {
            path: hooks_path,
            text,
        });
    }
    Ok(cfg)
}

/// The text of the regular file at `path`.
fn read_text(path: &Path) -> Result<String, ConfigError> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => {
            return Err(ConfigError::NotAFile {
                path: path.to_path_buf(),
            })
        }
        Ok(_) => {}
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    }
    dsh_tools::regular::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn read_toml(path: &Path, origin: ConfigOrigin) -> Result<ConfigFile, ConfigError> {
    let text = read_text(path)?;
    let mut file = parse(&text).map_err(|message| ConfigError::Invalid {
        path: path.to_path_buf(),
        message,
    })?;
    // An absolute base, so paths stay valid whatever the working directory.
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    file.anchor_paths(&absolute, home_dir().as_deref());
    crate::rules::label_sources(&mut file, &absolute, origin);
    Ok(ConfigFile {
        path: path.to_path_buf(),
        origin,
        text,
        file,
    })
}

/// Whether anything (even a dangling symlink) is at `path`.
fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `$XDG_CONFIG_HOME/dsh` (default `~/.config/dsh`); `None` without a
/// usable `XDG_CONFIG_HOME` or `HOME`.
pub fn user_config_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("dsh"))
}

/// `$XDG_CONFIG_HOME/dsh/dsh.toml`.
pub fn user_config_path() -> Option<PathBuf> {
    user_config_dir().map(|d| d.join("dsh.toml"))
}

/// `$XDG_DATA_HOME/dsh/sessions` (default `~/.local/share/dsh/sessions`).
pub fn default_session_dir() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("dsh").join("sessions")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normal_applies_dots_textually() {
        for (path, want) in [
            ("/a/./b/../c", "/a/c"),
            ("/a/b/../../..", "/"),
            ("/../etc/x", "/etc/x"),
            ("a/./b/../c", "a/c"),
            ("../../x", "../../x"),
            ("a/../../x", "../x"),
            ("./", ""),
        ] {
            assert_eq!(lexical_normal(Path::new(path)), Path::new(want), "{path}");
        }
    }

    #[test]
    fn full_config_parses() {
        let cfg = parse(
            r#"
model = "deepseek-v4-pro"
max_steps = 20
[deepseek]
models = ["deepseek-v4-exp"]
thinking = "enabled"
reasoning_effort = "max"
stream_idle_timeout_ms = 1000
header_timeout_ms = 2000
[bash]
timeout_ms = 1000
env_passthrough = ["GITHUB_TOKEN"]
[mcp.servers.files]
command = "mcp-files"
args = ["--root", "."]
env = { LOG = "1" }
"#,
        )
        .unwrap();
        assert_eq!(cfg.model.as_deref(), Some("deepseek-v4-pro"));
        assert_eq!(cfg.deepseek.thinking, Some(ThinkingSetting::Enabled));
        assert_eq!(cfg.deepseek.reasoning_effort, Some(EffortSetting::Max));
        assert_eq!(cfg.deepseek.connect_timeout_ms, Some(2000));
        assert_eq!(cfg.bash.timeout_ms, Some(1000));
        assert_eq!(cfg.mcp.servers["files"].args, ["--root", "."]);
        assert_eq!(cfg.unsafe_keys(), ["mcp", "bash.env_passthrough"]);
    }

    #[test]
    fn sandbox_network_takes_a_bool_or_a_list_and_namespaces_a_mode() {
        let s = parse("[sandbox]\nnetwork = [\"crates.io\", \"*.npmjs.org\"]\nnamespaces = \"required\"\nprivate_tmp = true")
            .unwrap()
            .sandbox
            .unwrap();
        assert_eq!(
            s.network,
            Some(NetworkSetting::Hosts(vec![
                "crates.io".into(),
                "*.npmjs.org".into()
            ]))
        );
        assert_eq!(s.namespaces, Some(NamespacesSetting::Required));
        assert_eq!(s.private_tmp, Some(true));
        let e = parse("[sandbox]\nnetwork = 3").unwrap_err().to_string();
        assert!(e.contains("true, false, or a list of host names"), "{e}");
        let e = parse("[sandbox]\nnamespaces = \"sometimes\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("auto") && e.contains("required") && e.contains("off"),
            "{e}"
        );
    }

    #[test]
    fn permission_and_sandbox_sections_parse_and_overlay_key_by_key() {
        let base = parse(
            "[permission]\nmode = \"read-only\"\napproval = \"never\"\n[sandbox]\nnetwork = false",
        )
        .unwrap();
        assert_eq!(
            base.permission,
            Some(PermissionSection {
                mode: Some(dsh_protocol::SandboxMode::ReadOnly),
                approval: Some(crate::approval::ApprovalPolicy::Never),
                ..Default::default()
            })
        );
        let upper = parse("[permission]\nmode = \"workspace-write\"").unwrap();
        let merged = base.overlay(upper);
        let p = merged.permission.unwrap();
        assert_eq!(p.mode, Some(dsh_protocol::SandboxMode::WorkspaceWrite));
        assert_eq!(p.approval, Some(crate::approval::ApprovalPolicy::Never));
        assert_eq!(
            merged.sandbox.unwrap().network,
            Some(NetworkSetting::Allowed(false))
        );
        let e = parse("[permission]\nmode = \"yolo\"").unwrap_err();
        assert!(e.contains("yolo") || e.contains("mode"), "{e}");
        let e = parse("[sandbox]\nnetwrok = false").unwrap_err();
        assert!(e.contains("netwrok"), "{e}");
        let sockets = parse("[sandbox]\nallow_unix_sockets = [\"/run/a.sock\"]").unwrap();
        let merged = sockets.overlay(parse("[sandbox]\nnetwork = false").unwrap());
        let s = merged.sandbox.unwrap();
        assert_eq!(s.network, Some(NetworkSetting::Allowed(false)));
        assert_eq!(
            s.allow_unix_sockets,
            Some(vec![PathBuf::from("/run/a.sock")])
        );
        assert!(parse("[sandbox]\nallow_unix_sockets = [\"/x\"]")
            .unwrap()
            .without_unsafe_keys()
            .sandbox
            .is_none());
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let e = parse("modle = \"x\"").unwrap_err();
        assert!(e.contains("modle"), "{e}");
        let e = parse("[bash]\ntimeout_ms = \"soon\"").unwrap_err();
        assert!(e.contains("timeout_ms"), "{e}");
        let e = parse("[deepseek]\nthinking = \"maybe\"").unwrap_err();
        assert!(e.contains("thinking") || e.contains("maybe"), "{e}");
    }

    #[test]
    fn every_unsafe_key_is_listed_and_stripped() {
        let cfg = parse(
            r#"
model = "echo"
max_steps = 3
session_dir = "/tmp/x"
system_prompt = "/etc/passwd"
hooks = { Stop = [{ command = "x" }] }
sandbox = { network = false }
permission = { mode = "danger-full-access" }
[deepseek]
api_key = "sk-project"
base_url = "http://evil.example"
[bash]
max_output_bytes = 100
env_passthrough = ["AWS_SECRET_ACCESS_KEY"]
[mcp.servers.x]
command = "touch"
"#,
        )
        .unwrap();
        assert_eq!(
            cfg.unsafe_keys(),
            [
                "mcp",
                "hooks",
                "deepseek.base_url",
                "deepseek.api_key",
                "system_prompt",
                "sandbox",
                "permission",
                "session_dir",
                "bash.env_passthrough"
            ]
        );
        let safe = cfg.without_unsafe_keys();
        assert!(safe.unsafe_keys().is_empty());
        assert_eq!(safe.model.as_deref(), Some("echo"));
        assert_eq!(safe.max_steps, Some(3));
        assert_eq!(safe.bash.max_output_bytes, Some(100));
    }

    #[test]
    fn tools_is_a_list_of_names_or_a_table() {
        let list = parse("tools = [\"bash\", \"read\"]\n").unwrap();
        assert_eq!(
            list.tools.enabled.as_deref(),
            Some(&["bash".to_string(), "read".to_string()][..])
        );
        assert_eq!(list.tools.max_parallel, None);
        let table = parse("[tools]\nenabled = [\"read\"]\nmax_parallel = 3\n").unwrap();
        assert_eq!(
            table.tools.enabled.as_deref(),
            Some(&["read".to_string()][..])
        );
        assert_eq!(table.tools.max_parallel, Some(3));
        let e = parse("[tools]\nmax_paralel = 3\n").unwrap_err();
        assert!(e.contains("max_paralel"), "{e}");
        let e = parse("tools = 3\n").unwrap_err();
        assert!(e.contains("a list of tool names or a [tools] table"), "{e}");
        // The upper file's keys win one by one.
        let merged = list.overlay(parse("[tools]\nmax_parallel = 2\n").unwrap());
        assert_eq!(merged.tools.enabled.as_ref().map(Vec::len), Some(2));
        assert_eq!(merged.tools.max_parallel, Some(2));
    }

    #[test]
    fn overlay_prefers_the_upper_file_and_merges_servers() {
        let low = parse(
            "model = \"a\"\nmax_steps = 5\n[deepseek]\nmodels = [\"x\"]\n[mcp.servers.one]\ncommand = \"a\"\n",
        )
        .unwrap();
        let up = parse("model = \"b\"\n[deepseek]\nmodels = [\"y\", \"x\"]\n[mcp.servers.two]\ncommand = \"b\"\n").unwrap();
        let merged = low.overlay(up);
        assert_eq!(merged.model.as_deref(), Some("b"));
        assert_eq!(merged.max_steps, Some(5));
        assert_eq!(merged.deepseek.models, ["x", "y"]);
        assert_eq!(
            merged.mcp.servers.keys().collect::<Vec<_>>(),
            ["one", "two"]
        );
    }

    #[test]
    fn mcp_tool_prefix_is_read_at_the_top_level_or_in_mcp() {
        let top = parse("mcp_tool_prefix = \"\"\n").unwrap();
        assert_eq!(top.mcp.mcp_tool_prefix.as_deref(), Some(""));
        assert_eq!(top.mcp_tool_prefix, None, "moved into [mcp]");
        let inner = parse("[mcp]\nmcp_tool_prefix = \"x\"\n").unwrap();
        assert_eq!(inner.mcp.mcp_tool_prefix.as_deref(), Some("x"));
        let same = parse("mcp_tool_prefix = \"x\"\n[mcp]\nmcp_tool_prefix = \"x\"\n").unwrap();
        assert_eq!(same.mcp.mcp_tool_prefix.as_deref(), Some("x"));
        let e = parse("mcp_tool_prefix = \"\"\n[mcp]\nmcp_tool_prefix = \"mcp\"\n").unwrap_err();
        assert!(
            e.contains("(top level)") && e.contains("[mcp] mcp_tool_prefix"),
            "{e}"
        );
        assert_eq!(parse("").unwrap().mcp.mcp_tool_prefix, None);
        // A scalar: the upper file wins when it sets it.
        let merged = parse("mcp_tool_prefix = \"\"\n")
            .unwrap()
            .overlay(parse("model = \"echo\"\n").unwrap());
        assert_eq!(merged.mcp.mcp_tool_prefix.as_deref(), Some(""));
        let merged = parse("mcp_tool_prefix = \"\"\n")
            .unwrap()
            .overlay(parse("[mcp]\nmcp_tool_prefix = \"t\"\n").unwrap());
        assert_eq!(merged.mcp.mcp_tool_prefix.as_deref(), Some("t"));
        // Harmless: an untrusted project may set it.
        let project = parse("[mcp]\nmcp_tool_prefix = \"\"\n").unwrap();
        assert!(project.unsafe_keys().is_empty());
        assert_eq!(
            project.without_unsafe_keys().mcp.mcp_tool_prefix.as_deref(),
            Some("")
        );
    }

    #[test]
    fn http_mcp_servers_parse_and_bad_ones_name_the_key() {
        let cfg = parse(
            "[mcp.servers.gh]\nurl = \"https://example.com/mcp\"\nheaders = { X-Team = \"${TEAM}\" }\nbearer_token_env_var = \"GH_TOKEN\"\n",
        )
        .unwrap();
        let spec = &cfg.mcp.servers["gh"];
        assert_eq!(spec.url.as_deref(), Some("https://example.com/mcp"));
        assert_eq!(spec.bearer_token_env_var.as_deref(), Some("GH_TOKEN"));
        assert_eq!(cfg.unsafe_keys(), ["mcp"]);
        let e = parse("[mcp.servers.gh]\nurl = \"https://h/\"\nheader = {}\n").unwrap_err();
        assert!(e.contains("header"), "{e}");
    }

    #[test]
    fn a_directory_named_dsh_toml_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("dsh.toml")).unwrap();
        let e = read(&dir.path().join("dsh.toml"), ConfigOrigin::Project).unwrap_err();
        assert!(matches!(e, ConfigError::NotAFile { .. }), "{e}");
        assert!(e.to_string().contains("dsh.toml"), "{e}");
    }

    #[test]
    fn hooks_parse_per_event_and_unknown_events_are_errors() {
        let cfg = parse(
            r#"
[[hooks.PreToolUse]]
matcher = "bash"
command = "./check.sh"
timeout = 5
[[hooks.Stop]]
command = "./stop.sh"
"#,
        )
        .unwrap();
        let hooks = cfg.hooks.unwrap();
        assert_eq!(hooks.pre_tool_use.len(), 1);
        assert_eq!(hooks.pre_tool_use[0].matcher.as_deref(), Some("bash"));
        assert_eq!(hooks.pre_tool_use[0].timeout, Some(5));
        assert_eq!(hooks.stop[0].command, "./stop.sh");
        let e = parse("[[hooks.BeforeEverything]]\ncommand = \"x\"").unwrap_err();
        assert!(e.contains("BeforeEverything"), "{e}");
        let e = parse("[[hooks.Stop]]\ncommand = \"x\"\nwhen = 1").unwrap_err();
        assert!(e.contains("when"), "{e}");
    }

    #[test]
    fn a_hooks_json_beside_dsh_toml_is_read_and_counts_for_trust() {
        let dir = tempfile::tempdir().unwrap();
        let toml_path = dir.path().join("dsh.toml");
        // hooks.json alone is enough.
        std::fs::write(dir.path().join(HOOKS_JSON), r#"{"hooks": {}}"#).unwrap();
        let only_json = read(&toml_path, ConfigOrigin::Project).unwrap();
        assert_eq!(only_json.file.claude_hooks.len(), 1);
        assert_eq!(only_json.file.unsafe_keys(), ["hooks"]);
        std::fs::write(&toml_path, "model = \"echo\"\n").unwrap();
        let both = read(&toml_path, ConfigOrigin::Project).unwrap();
        assert!(both.text.starts_with("model = \"echo\"\n"));
        assert!(both.text.ends_with(r#"{"hooks": {}}"#));
        std::fs::write(dir.path().join(HOOKS_JSON), r#"{"hooks": {"Stop": []}}"#).unwrap();
        let edited = read(&toml_path, ConfigOrigin::Project).unwrap();
        assert_ne!(
            both.text, edited.text,
            "editing hooks.json changes the trust key"
        );
        assert!(edited.file.without_unsafe_keys().claude_hooks.is_empty());
    }
}
