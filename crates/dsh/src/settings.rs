//! From what the user said to what the stack is built from: [`Settings`]
//! (flags, or an embedder's choices) + environment + `dsh.toml` →
//! [`Resolved`].
//!
//! Precedence, highest first: [`Settings`], the environment
//! (`DEEPSEEK_API_KEY`, `DEEPSEEK_BASE_URL`, `DSH_MODEL`), the config file.

use std::path::PathBuf;

use dsh_bash_local::LocalBashConfig;
use dsh_protocol::SandboxMode;

use crate::approval::ApprovalPolicy;
use crate::config::{
    self, ConfigFile, ConfigOrigin, EffortSetting, FileConfig, LoadedConfig, ThinkingSetting,
};
use crate::config::{
    DEFAULT_MAX_RESULT_BYTES, DEFAULT_MAX_STEP_OUTPUT_BYTES, DEFAULT_MAX_TOOL_CALLS,
    MAX_BASH_OUTPUT_BYTES,
};
use crate::echo_model::ECHO_MODEL;
use crate::trust::{Decision, ProjectTrust, TrustStore};
use crate::StackError;

/// What the caller chose; every field is optional and overrides the
/// environment and the config file.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The model (default: `deepseek-v4-flash` with an API key, else `echo`).
    pub model: Option<String>,
    /// Directory of session logs (default `$XDG_DATA_HOME/dsh/sessions`).
    pub session_dir: Option<PathBuf>,
    /// A file whose text is appended to the system prompt.
    pub system_prompt: Option<PathBuf>,
    /// The config file (default `./dsh.toml`, then
    /// `$XDG_CONFIG_HOME/dsh/dsh.toml`).
    pub config: Option<PathBuf>,
    /// MCP servers as `NAME=COMMAND ARGS…` (override configured servers of
    /// the same name).
    pub mcp: Vec<String>,
    /// The agent's working directory (default: the process's).
    pub cwd: Option<PathBuf>,
    /// What to do with a project `./dsh.toml` the user has not trusted
    /// (default: refuse when it sets unsafe keys).
    pub project_trust: ProjectTrust,
    /// Strict tool schemas (`--strict-tools`), whatever the file says.
    pub strict_tools: bool,
    /// The built-in tools to offer (`--tools a,b`), replacing the file's
    /// `tools`.
    pub tools: Option<Vec<String>>,
    /// The permission mode (`--permission`), over `DSH_PERMISSION` and
    /// `[permission] mode`.
    pub permission: Option<SandboxMode>,
}

/// Everything the stack is built from, resolved.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The model to run.
    pub model: String,
    /// DeepSeek settings, when a key is configured.
    pub deepseek: Option<dsh_llm_deepseek::DeepSeekConfig>,
    /// Retries of transient model failures.
    pub max_retries: u32,
    /// Session directory.
    pub session_dir: PathBuf,
    /// Text appended to the system prompt.
    pub system_prompt: Option<String>,
    /// Working directory of the agent.
    pub cwd: PathBuf,
    /// Bash executor settings.
    pub bash: LocalBashConfig,
    /// Step cap per turn.
    pub max_steps: u32,
    /// MCP servers from the file and the settings, in order.
    pub mcp: Vec<dsh_mcp::McpServerConfig>,
    /// The first part of MCP tool names (`mcp_tool_prefix`, default
    /// `"mcp"`); [`Stack::start_mcp`](crate::Stack::start_mcp) gives it to
    /// every server it starts, including ones added to `mcp` after
    /// resolution.
    pub mcp_tool_prefix: String,
    /// Cap on the text of one tool result kept in the session, in bytes.
    pub max_result_bytes: usize,
    /// Cap on tool calls in one model step.
    pub max_tool_calls: usize,
    /// Cap on the output of one model step, in bytes.
    pub max_step_output_bytes: usize,
    /// Tools in the provider's strict dialect where they can be
    /// (`--strict-tools` or `[deepseek] strict_tools`).
    pub strict_tools: bool,
    /// At most this many concurrency-safe tool calls of one step run at
    /// once (`[tools] max_parallel`, default 10).
    pub max_parallel: usize,
    /// The built-in tools offered (names from
    /// [`BUILTIN_TOOLS`](crate::tools::BUILTIN_TOOLS)); `None`: all.
    pub tools: Option<Vec<String>>,
    /// The permission mode commands and file writes start under.
    pub permission: SandboxMode,
    /// Where [`Resolved::permission`] came from: `--permission`,
    /// `DSH_PERMISSION`, the config file's path, or `default`.
    pub permission_source: String,
    /// Whether questions are put to the user (`[permission] approval`).
    pub approval: ApprovalPolicy,
    /// The resolved model's context window in tokens (`[models.<name>]
    /// context_window`, else the model table's).
    pub context_window: u64,
    /// Compaction settings for that window (`[compaction]`).
    pub compaction: dsh_compaction::CompactionConfig,
    /// Command hooks from `[[hooks.<Event>]]` and `hooks.json` files, in
    /// configuration order (user config first).
    pub hooks: dsh_hooks::HookSet,
    /// `todo_write` accepts more than one `in_progress` item (`[todo]
    /// allow_parallel_in_progress`, default `false`).
    pub todo_allow_parallel_in_progress: bool,
    /// How deep sub-agents may nest (`[subagents] max_depth`, default 3).
    pub subagent_max_depth: u32,
    /// Notices about the configuration (ignored keys of an untrusted project
    /// config, reserved keys), for the user; resolving did not fail.
    pub warnings: Vec<String>,
}

/// Resolves `settings` against the environment and the config file.
///
/// # Errors
/// [`StackError::Usage`] for an unreadable or invalid config file, an
/// unknown model, a DeepSeek model without a key, an unreadable system
/// prompt file or a malformed MCP server entry.
pub fn resolve(settings: &Settings) -> Result<Resolved, StackError> {
    let cwd = match &settings.cwd {
        Some(cwd) => cwd.clone(),
        None => std::env::current_dir().map_err(|e| {
            StackError::Usage(format!("cannot determine the working directory: {e}"))
        })?,
    };
    let loaded = config::load(settings.config.as_deref(), &cwd)
        .map_err(|e| StackError::Usage(e.to_string()))?;
    let mut warnings = Vec::new();
    let config_name = loaded
        .project
        .as_ref()
        .or(loaded.base.as_ref())
        .map(|c| c.path.display().to_string())
        .unwrap_or_else(|| "dsh.toml".into());
    let file = apply_trust(loaded, settings.project_trust, &mut warnings)?;
    let hooks = compile_hooks(&file, &config_name, &mut warnings)?;
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let api_key = env("DEEPSEEK_API_KEY").or_else(|| file.deepseek.api_key.clone());
    let deepseek = api_key.map(|key| {
        let mut cfg = dsh_llm_deepseek::DeepSeekConfig {
            api_key: Some(key),
            base_url: env("DEEPSEEK_BASE_URL").or_else(|| file.deepseek.base_url.clone()),
            ..Default::default()
        };
        for m in &file.deepseek.models {
            if !cfg.models.contains(m) {
                cfg.models.push(m.clone());
            }
        }
        cfg.thinking = file.deepseek.thinking.map(|t| match t {
            ThinkingSetting::Enabled => dsh_llm_deepseek::Thinking::Enabled,
            ThinkingSetting::Disabled => dsh_llm_deepseek::Thinking::Disabled,
        });
        cfg.reasoning_effort = file.deepseek.reasoning_effort.map(|e| match e {
            EffortSetting::High => dsh_llm_deepseek::ReasoningEffort::High,
            EffortSetting::Max => dsh_llm_deepseek::ReasoningEffort::Max,
        });
        if let Some(v) = file.deepseek.connect_timeout_ms {
            cfg.connect_timeout_ms = v;
        }
        if let Some(v) = file.deepseek.stream_idle_timeout_ms {
            cfg.stream_idle_timeout_ms = v;
        }
        if let Some(v) = file.deepseek.max_event_bytes {
            cfg.max_event_bytes = v;
        }
        cfg.validate().map_err(|e| {
            // The file's values were checked already; what is left came
            // from the environment.
            StackError::Usage(format!("DEEPSEEK_BASE_URL (environment): {e}"))
        })?;
        Ok::<_, StackError>(cfg)
    });
    let deepseek = deepseek.transpose()?;
    let mut models = vec![ECHO_MODEL.to_string()];
    if let Some(cfg) = &deepseek {
        models.extend(cfg.models.iter().cloned());
    }
    let default_model = match &deepseek {
        Some(_) => dsh_llm_deepseek::DEFAULT_MODELS
            .first()
            .map_or(ECHO_MODEL, |m| *m)
            .to_string(),
        None => ECHO_MODEL.to_string(),
    };
    let model = settings
        .model
        .clone()
        .or_else(|| env("DSH_MODEL"))
        .or_else(|| file.model.clone())
        .unwrap_or(default_model);
    if !models.contains(&model) {
        let hint = if deepseek.is_none()
            && (dsh_llm_deepseek::DEFAULT_MODELS.contains(&model.as_str())
                || file.deepseek.models.contains(&model))
        {
            " (DeepSeek models need an API key: set DEEPSEEK_API_KEY or [deepseek] api_key in dsh.toml)"
        } else {
            ""
        };
        return Err(StackError::Usage(format!(
            "unknown model \"{model}\"{hint}; available models: {}",
            models.join(", ")
        )));
    }
    let session_dir = settings
        .session_dir
        .clone()
        .or_else(|| file.session_dir.clone())
        .unwrap_or_else(config::default_session_dir);
    // Absolute, so the paths recorded in the log (spill files) stay valid
    // from any directory.
    let session_dir = if session_dir.is_relative() {
        cwd.join(session_dir)
    } else {
        session_dir
    };
    let prompt_file = settings
        .system_prompt
        .clone()
        .or_else(|| file.system_prompt.clone());
    let system_prompt = match prompt_file {
        Some(p) => Some(std::fs::read_to_string(&p).map_err(|e| {
            StackError::Usage(format!(
                "cannot read system prompt file {}: {e}",
                p.display()
            ))
        })?),
        None => None,
    };
    let mcp_tool_prefix = file
        .mcp
        .mcp_tool_prefix
        .clone()
        .unwrap_or_else(|| dsh_mcp::DEFAULT_TOOL_PREFIX.to_string());
    let mut mcp: Vec<dsh_mcp::McpServerConfig> = Vec::new();
    for (name, spec) in &file.mcp.servers {
        let cfg = spec
            .clone()
            .into_config(name)
            .map_err(|e| StackError::Usage(format!("{config_name}: {e}")))?;
        mcp.push(cfg.tool_prefix(mcp_tool_prefix.clone()));
    }
    for flag in &settings.mcp {
        let cfg = dsh_mcp::parse_mcp_flag(flag).map_err(|e| StackError::Usage(e.to_string()))?;
        mcp.retain(|c| c.name != cfg.name);
        mcp.push(cfg.tool_prefix(mcp_tool_prefix.clone()));
    }
    let mut bash = LocalBashConfig {
        cwd: Some(cwd.clone()),
        ..Default::default()
    };
    if let Some(v) = file.bash.timeout_ms {
        bash.timeout_ms = v;
    }
    if let Some(v) = file.bash.max_timeout_ms {
        bash.max_timeout_ms = v;
    }
    if let Some(v) = file.bash.max_output_bytes {
        bash.max_output_bytes = v;
    }
    if let Some(v) = file.bash.keep_spill_files {
        bash.keep_spill_files = v;
    }
    if let Some(v) = file.bash.env_passthrough.clone() {
        bash.env_passthrough = v;
    }
    let file_permission = file.permission.clone().unwrap_or_default();
    let (permission, permission_source) = match (settings.permission, env("DSH_PERMISSION")) {
        (Some(mode), _) => (mode, "--permission".to_string()),
        (None, Some(text)) => (
            text.parse::<SandboxMode>()
                .map_err(|e| StackError::Usage(format!("DSH_PERMISSION (environment): {e}")))?,
            "DSH_PERMISSION".to_string(),
        ),
        (None, None) => match file_permission.mode {
            Some(mode) => (mode, config_name.clone()),
            None => (SandboxMode::default(), "default".to_string()),
        },
    };
    bash.sandbox = permission;
    if let Some(network) = file.sandbox.as_ref().and_then(|s| s.network) {
        bash.network = network;
    }
    let context_window = file
        .models
        .get(&model)
        .and_then(|m| m.context_window)
        .unwrap_or(dsh_llm_deepseek::CONTEXT_WINDOW);
    let mut compaction = dsh_compaction::CompactionConfig::for_window(context_window);
    if let Some(t) = file.compaction.threshold {
        compaction.threshold = t;
    }
    if let Some(r) = file.compaction.retain {
        compaction.retain = r;
    }
    if compaction.retain >= compaction.threshold {
        return Err(StackError::Usage(format!(
            "invalid config: [compaction] retain ({}) must be below threshold ({})",
            compaction.retain, compaction.threshold
        )));
    }
    Ok(Resolved {
        compaction,
        permission,
        permission_source,
        approval: file_permission.approval.unwrap_or_default(),
        model,
        deepseek,
        max_retries: file.deepseek.max_retries.unwrap_or(3),
        session_dir,
        system_prompt,
        cwd,
        bash,
        max_steps: file.max_steps.unwrap_or(100),
        context_window,
        mcp,
        mcp_tool_prefix,
        max_result_bytes: file.max_result_bytes.unwrap_or(DEFAULT_MAX_RESULT_BYTES),
        max_tool_calls: file.max_tool_calls.unwrap_or(DEFAULT_MAX_TOOL_CALLS),
        max_step_output_bytes: file
            .max_step_output_bytes
            .unwrap_or(DEFAULT_MAX_STEP_OUTPUT_BYTES),
        strict_tools: settings.strict_tools || file.deepseek.strict_tools.unwrap_or(false),
        max_parallel: file
            .tools
            .max_parallel
            .unwrap_or(crate::config::DEFAULT_MAX_PARALLEL),
        tools: match (&settings.tools, &file.tools.enabled) {
            (Some(names), _) => Some(checked_tools(names.clone(), "--tools")?),
            (None, Some(names)) => Some(checked_tools(names.clone(), &config_name)?),
            (None, None) => None,
        },
        hooks,
        todo_allow_parallel_in_progress: file.todo.allow_parallel_in_progress.unwrap_or(false),
        subagent_max_depth: file
            .subagents
            .max_depth
            .unwrap_or(crate::subagents::DEFAULT_MAX_DEPTH),
        warnings,
    })
}

/// `names` when every one is a built-in tool.
/// Largest accepted `[tools] max_parallel`.
const MAX_PARALLEL_LIMIT: usize = 100;

fn checked_tools(names: Vec<String>, source: &str) -> Result<Vec<String>, StackError> {
    let known = crate::tools::BUILTIN_TOOLS;
    if let Some(bad) = names.iter().find(|n| !known.contains(&n.as_str())) {
        return Err(StackError::Usage(format!(
            "{source}: unknown tool \"{bad}\" in tools; known tools: {}",
            known.join(", ")
        )));
    }
    Ok(names)
}

/// The configuration that applies: the trusted base file, then the project
/// file (whole when trusted, else only its harmless keys).
fn apply_trust(
    loaded: LoadedConfig,
    policy: ProjectTrust,
    warnings: &mut Vec<String>,
) -> Result<FileConfig, StackError> {
    let mut file = FileConfig::default();
    if let Some(base) = loaded.base {
        check_values(&base)?;
        file = base.file;
    }
    if let Some(project) = loaded.project {
        check_values(&project)?;
        file = file.overlay(trusted_part(project, policy, warnings)?);
    }
    Ok(file)
}

fn trusted_part(
    project: ConfigFile,
    policy: ProjectTrust,
    warnings: &mut Vec<String>,
) -> Result<FileConfig, StackError> {
    debug_assert_eq!(project.origin, ConfigOrigin::Project);
    let unsafe_keys = project.file.unsafe_keys();
    if unsafe_keys.is_empty() || policy == ProjectTrust::Trust {
        return Ok(project.file);
    }
    let store = TrustStore::open().map_err(|e| StackError::Usage(e.to_string()))?;
    let decision = store.decision(&project.path, &project.text);
    let path = project.path.display();
    let keys = unsafe_keys.join(", ");
    match (decision, policy) {
        (Decision::Trusted, _) => Ok(project.file),
        (Decision::Unknown { changed }, ProjectTrust::Refuse) => Err(StackError::Usage(format!(
            "the project config {path} is not trusted{}: it sets {keys}, which can run commands and change where your key is sent; review it, then run `dsh trust` (or pass --trust-project for this run)",
            if changed { " (it changed since you decided)" } else { "" }
        ))),
        _ => {
            warnings.push(format!(
                "ignoring {keys} from the untrusted project config {path} (trust it with `dsh trust`)"
            ));
            Ok(project.file.without_unsafe_keys())
        }
    }
}

/// The hooks `file` configures: its `[hooks]` section (per-file errors
/// were reported by [`check_values`]), then each `hooks.json`; what a
/// `hooks.json` holds that dsh does not run becomes a warning.
fn compile_hooks(
    file: &FileConfig,
    config_name: &str,
    warnings: &mut Vec<String>,
) -> Result<dsh_hooks::HookSet, StackError> {
    let mut set = match &file.hooks {
        Some(section) => dsh_hooks::HookSet::from_section(section, config_name)
            .map_err(|e| StackError::Usage(format!("invalid hooks: {e}")))?,
        None => dsh_hooks::HookSet::new(),
    };
    for json in &file.claude_hooks {
        let (more, skipped) =
            dsh_hooks::HookSet::from_claude_json(&json.text, &json.path.display().to_string())
                .map_err(|e| StackError::Usage(format!("invalid hooks file {e}")))?;
        warnings.extend(skipped);
        set.extend(more);
    }
    Ok(set)
}

/// Values a file may not hold, named with the file.
fn check_values(cfg: &ConfigFile) -> Result<(), StackError> {
    let f = &cfg.file;
    let bad = |msg: String| {
        Err(StackError::Usage(format!(
            "invalid config file {}: {msg}",
            cfg.path.display()
        )))
    };
    if let Some(section) = &f.hooks {
        if let Err(e) = dsh_hooks::HookSet::from_section(section, "[hooks]") {
            return bad(e);
        }
    }
    if let Some(t) = f.compaction.threshold {
        if !(t > 0.0 && t <= 1.0) {
            return bad(format!(
                "[compaction] threshold = {t} must be above 0 and at most 1"
            ));
        }
    }
    if let Some(r) = f.compaction.retain {
        if !(0.0..1.0).contains(&r) {
            return bad(format!(
                "[compaction] retain = {r} must be at least 0 and below 1"
            ));
        }
    }
    for (name, m) in &f.models {
        if m.context_window == Some(0) {
            return bad(format!(
                "[models.{name:?}] context_window must be at least 1"
            ));
        }
    }
    if f.max_steps == Some(0) {
        return bad("max_steps must be at least 1".into());
    }
    for (key, v) in [
        ("max_result_bytes", f.max_result_bytes),
        ("max_tool_calls", f.max_tool_calls),
        ("max_step_output_bytes", f.max_step_output_bytes),
    ] {
        if v == Some(0) {
            return bad(format!("{key} must be at least 1"));
        }
    }
    if let Some(n) = f.tools.max_parallel {
        if !(1..=MAX_PARALLEL_LIMIT).contains(&n) {
            return bad(format!(
                "[tools] max_parallel = {n} must be between 1 and {MAX_PARALLEL_LIMIT}"
            ));
        }
    }
    match f.bash.max_output_bytes {
        Some(0) => return bad("[bash] max_output_bytes must be at least 1".into()),
        Some(n) if n > MAX_BASH_OUTPUT_BYTES => {
            return bad(format!(
                "[bash] max_output_bytes = {n} is above the limit of {MAX_BASH_OUTPUT_BYTES} bytes (8 MiB)"
            ))
        }
        _ => {}
    }
    if f.bash.timeout_ms == Some(0) || f.bash.max_timeout_ms == Some(0) {
        return bad("[bash] timeouts must be at least 1 ms".into());
    }
    // The [deepseek] values are checked even without an API key, so a typo
    // shows up before the key is added.
    let defaults = dsh_llm_deepseek::DeepSeekConfig::default();
    let deepseek = dsh_llm_deepseek::DeepSeekConfig {
        base_url: f.deepseek.base_url.clone(),
        connect_timeout_ms: f
            .deepseek
            .connect_timeout_ms
            .unwrap_or(defaults.connect_timeout_ms),
        stream_idle_timeout_ms: f
            .deepseek
            .stream_idle_timeout_ms
            .unwrap_or(defaults.stream_idle_timeout_ms),
        max_event_bytes: f
            .deepseek
            .max_event_bytes
            .unwrap_or(defaults.max_event_bytes),
        ..defaults
    };
    if let Err(e) = deepseek.validate() {
        return bad(e);
    }
    Ok(())
}
