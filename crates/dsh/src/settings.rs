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
    /// Every provider (presets and `[providers.<name>]`).
    pub providers: Vec<crate::providers::Provider>,
    /// Every route of a model to a provider (see [`crate::providers`]),
    /// usable or not.
    pub routes: Vec<crate::providers::Route>,
    /// The adapters the stack registers for the usable routes.
    pub adapters: Vec<crate::providers::AdapterSetup>,
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
    /// The lasting permission rules in force (`[permission]
    /// allow`/`deny`/`ask` and `permissions.toml`; see [`crate::rules`]).
    pub permission_rules: dsh_rules::RuleSet,
    /// `[sandbox] network` as a list: the hosts confined commands reach
    /// through the session's proxy (`None`: `true` or `false`, in
    /// [`Resolved::bash`]'s `network`).
    pub network_hosts: Option<dsh_netproxy::Allowlist>,
    /// The resolved model's context window in tokens (`[models.<name>]
    /// context_window`, else the model table's).
    pub context_window: u64,
    /// Compaction settings for that window (`[compaction]`).
    pub compaction: dsh_compaction::CompactionConfig,
    /// The models' windows and prices (built in, and `[models.<name>]`).
    pub catalogue: crate::catalogue::Catalogue,
    /// `[budget] max_cost_per_session`, in the model's currency.
    pub max_cost_per_session: Option<f64>,
    /// Command hooks from `[[hooks.<Event>]]` and `hooks.json` files, in
    /// configuration order (user config first).
    pub hooks: dsh_hooks::HookSet,
    /// `todo_write` accepts more than one `in_progress` item (`[todo]
    /// allow_parallel_in_progress`, default `false`).
    pub todo_allow_parallel_in_progress: bool,
    /// How deep sub-agents may nest (`[subagents] max_depth`, default 3).
    pub subagent_max_depth: u32,
    /// The web tools (`[web]`): `web_fetch` and `web_search`, each on or
    /// off and why.
    pub web: crate::tools::web::WebSettings,
    /// Notices about the configuration (ignored keys of an untrusted project
    /// config, reserved keys), for the user; resolving did not fail.
    pub warnings: Vec<String>,
}

/// Resolves `settings` against the environment and the config file.
///
/// # Errors
/// [`StackError::Usage`] for an unreadable or invalid config file (a limit
/// above its ceiling included), an untrusted project config that must be
/// refused, an unknown model, a DeepSeek model without a key, an API key
/// that cannot be sent, an unreadable system prompt file or a malformed MCP
/// server entry: the first problem [`diagnose`] finds.
pub fn resolve(settings: &Settings) -> Result<Resolved, StackError> {
    let mut diagnosis = diagnose(settings);
    match diagnosis.problems.is_empty() {
        true => Ok(diagnosis.resolved),
        false => Err(diagnosis.problems.remove(0)),
    }
}

/// Everything [`diagnose`] found.
#[derive(Debug)]
pub struct Diagnosis {
    /// The resolution, with a fallback wherever there was a problem (a
    /// config file that fails is left out, an unusable model becomes
    /// `echo`, an unreadable system prompt none, a bad MCP entry is
    /// skipped, an undecided project config loses its unsafe keys). For
    /// reporting only: run nothing from it unless `problems` is empty.
    pub resolved: Resolved,
    /// Every problem, in the order found (config files first, user config
    /// before project); [`resolve`] fails with the first.
    pub problems: Vec<StackError>,
}

/// Resolves `settings` like [`resolve`], but goes on past each problem
/// (with the fallback [`Diagnosis::resolved`] describes) and returns them
/// all: what `dsh doctor` reports.
pub fn diagnose(settings: &Settings) -> Diagnosis {
    let mut problems: Vec<StackError> = Vec::new();
    let mut problem = |msg: String| problems.push(StackError::Usage(msg));
    let cwd = match &settings.cwd {
        Some(cwd) => cwd.clone(),
        None => std::env::current_dir().unwrap_or_else(|e| {
            problem(format!("cannot determine the working directory: {e}"));
            PathBuf::from(".")
        }),
    };
    let (loaded, load_errors) = config::load_all(settings.config.as_deref(), &cwd);
    for e in load_errors {
        problem(e.to_string());
    }
    let mut warnings = Vec::new();
    let config_name = loaded
        .project
        .as_ref()
        .or(loaded.base.as_ref())
        .map(|c| c.path.display().to_string())
        .unwrap_or_else(|| "dsh.toml".into());
    let file = apply_trust(loaded, settings.project_trust, &mut warnings, &mut problem);
    let hooks = compile_hooks(&file, &config_name, &mut warnings, &mut problem);
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let deepseek_key_env = file
        .providers
        .get("deepseek")
        .and_then(|p| p.api_key_env.clone())
        .filter(|v| v != "DEEPSEEK_API_KEY");
    let (mut api_key, key_source) = match env("DEEPSEEK_API_KEY") {
        Some(key) => (Some(key), "DEEPSEEK_API_KEY (environment)".to_string()),
        None if deepseek_key_env.as_deref().and_then(env).is_some() => {
            let var = deepseek_key_env.clone().unwrap_or_default();
            (
                env(&var),
                format!("{var} (environment, [providers.deepseek] api_key_env)"),
            )
        }
        None => (
            file.deepseek.api_key.clone(),
            match file.origins.get("deepseek.api_key") {
                Some(path) => format!("[deepseek] api_key in {}", path.display()),
                None => "[deepseek] api_key".to_string(),
            },
        ),
    };
    if let Some(Err(why)) = api_key.as_deref().map(dsh_llm_deepseek::check_api_key) {
        // The key itself is never quoted: it is a secret.
        problem(format!(
            "invalid config [INVALID_CONFIG]: {key_source} {why}"
        ));
        api_key = None;
    }
    let deepseek = api_key.and_then(|key| {
        let mut cfg = dsh_llm_deepseek::DeepSeekConfig {
            api_key: Some(key),
            base_url: env("DEEPSEEK_BASE_URL")
                .or_else(|| file.deepseek.base_url.clone())
                .or_else(|| {
                    file.providers
                        .get("deepseek")
                        .and_then(|p| p.base_url.clone())
                }),
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
        match cfg.validate() {
            Ok(()) => Some(cfg),
            Err(e) => {
                // The file's values were checked already; what is left came
                // from the environment.
                problem(format!("DEEPSEEK_BASE_URL (environment): {e}"));
                None
            }
        }
    });
    let requested = settings
        .model
        .clone()
        .or_else(|| env("DSH_MODEL"))
        .or_else(|| file.model.clone());
    // `deepseek/<model>` is the DeepSeek adapter's `<model>`.
    let requested = requested.map(|m| match m.strip_prefix("deepseek/") {
        Some(rest) if !file.models.contains_key(&m) && !rest.is_empty() => rest.to_string(),
        _ => m,
    });
    let mut deepseek = deepseek;
    if let (Some(cfg), Some(m)) = (deepseek.as_mut(), requested.as_ref()) {
        if m.starts_with("deepseek-") && !cfg.models.contains(m) && !m.contains('/') {
            cfg.models.push(m.clone());
        }
    }
    let (providers, provider_problems) = crate::providers::providers(&file.providers);
    for p in provider_problems {
        problem(format!(
            "invalid config [INVALID_CONFIG]: {config_name}: {p}"
        ));
    }
    let (routes, route_problems) =
        crate::providers::routes(&providers, &file.models, requested.as_deref());
    for p in route_problems {
        problem(format!(
            "invalid config [INVALID_CONFIG]: {config_name}: {p}"
        ));
    }
    let (adapters, adapter_problems) = crate::providers::adapters(&providers, &routes);
    for p in adapter_problems {
        problem(format!(
            "invalid config [INVALID_CONFIG]: {config_name}: {p}"
        ));
    }
    let mut models = vec![ECHO_MODEL.to_string()];
    if let Some(cfg) = &deepseek {
        models.extend(cfg.models.iter().cloned());
    }
    for a in &adapters {
        models.extend(a.names());
    }
    let default_model = match &deepseek {
        Some(_) => dsh_llm_deepseek::DEFAULT_MODELS
            .first()
            .map_or(ECHO_MODEL, |m| *m)
            .to_string(),
        None => ECHO_MODEL.to_string(),
    };
    let mut model = requested.unwrap_or(default_model);
    if !models.contains(&model) {
        let deepseek_model = dsh_llm_deepseek::DEFAULT_MODELS.contains(&model.as_str())
            || file.deepseek.models.contains(&model);
        let unusable = routes
            .iter()
            .find(|r| r.name == model)
            .and_then(|r| providers.iter().find(|p| p.name == r.provider))
            .and_then(crate::providers::Provider::missing_key);
        match unusable {
            Some(why) => problem(format!("model \"{model}\": {why}")),
            None => problem(model_problem(
                &model,
                &models,
                deepseek.is_none() && deepseek_model,
            )),
        }
        model = ECHO_MODEL.to_string();
    }
    let session_dir = settings
        .session_dir
        .clone()
        .or_else(|| file.session_dir.clone())
        .unwrap_or_else(config::default_session_dir);
    // Absolute, so the paths recorded in the log (spill files) stay valid
    // from any directory. (A file's relative session_dir is already
    // relative to that file.)
    let session_dir = if session_dir.is_relative() {
        cwd.join(session_dir)
    } else {
        session_dir
    };
    let prompt_file = match &settings.system_prompt {
        Some(p) => Some((p.clone(), "--system-prompt".to_string())),
        None => file.system_prompt.clone().map(|p| {
            let from = match file.origins.get("system_prompt") {
                Some(f) => format!("system_prompt in {}", f.display()),
                None => "system_prompt".to_string(),
            };
            (p, from)
        }),
    };
    let system_prompt =
        prompt_file.and_then(|(p, from)| match dsh_tools::regular::read_to_string(&p) {
            Ok(text) => Some(text),
            Err(e) => {
                problem(format!(
                    "cannot read system prompt file {} ({from}): {e}",
                    p.display()
                ));
                None
            }
        });
    let mcp_tool_prefix = file
        .mcp
        .mcp_tool_prefix
        .clone()
        .unwrap_or_else(|| dsh_mcp::DEFAULT_TOOL_PREFIX.to_string());
    let mut mcp: Vec<dsh_mcp::McpServerConfig> = Vec::new();
    for (name, spec) in &file.mcp.servers {
        match spec.clone().into_config(name) {
            Ok(cfg) => mcp.push(cfg.tool_prefix(mcp_tool_prefix.clone())),
            Err(e) => problem(format!("{config_name}: {e}")),
        }
    }
    for flag in &settings.mcp {
        match dsh_mcp::parse_mcp_flag(flag) {
            Ok(cfg) => {
                mcp.retain(|c| c.name != cfg.name);
                mcp.push(cfg.tool_prefix(mcp_tool_prefix.clone()));
            }
            Err(e) => problem(e.to_string()),
        }
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
    let permission_rules = crate::rules::resolve(
        file.permission.as_ref(),
        &cwd,
        &mcp_tool_prefix,
        &mut problem,
    );
    let default_permission = || match file_permission.mode {
        Some(mode) => (mode, config_name.clone()),
        None => (SandboxMode::default(), "default".to_string()),
    };
    let (permission, permission_source) = match (settings.permission, env("DSH_PERMISSION")) {
        (Some(mode), _) => (mode, "--permission".to_string()),
        (None, Some(text)) => match text.parse::<SandboxMode>() {
            Ok(mode) => (mode, "DSH_PERMISSION".to_string()),
            Err(e) => {
                problem(format!("DSH_PERMISSION (environment): {e}"));
                default_permission()
            }
        },
        (None, None) => default_permission(),
    };
    bash.sandbox = permission;
    let mut network_hosts = None;
    match file.sandbox.as_ref().and_then(|s| s.network.clone()) {
        Some(crate::config::NetworkSetting::Allowed(network)) => bash.network = network,
        Some(crate::config::NetworkSetting::Hosts(hosts)) => {
            match dsh_netproxy::Allowlist::parse(&hosts) {
                Ok(list) => network_hosts = Some(list),
                Err(e) => {
                    // Fail closed: a list that cannot be read allows nothing.
                    bash.network = false;
                    problem(format!(
                        "{config_name}: [sandbox] network: {e} ({})",
                        e.kind()
                    ));
                }
            }
        }
        None => {}
    }
    if let Some(ns) = file.sandbox.as_ref().and_then(|s| s.namespaces) {
        bash.namespaces = ns.into();
    }
    if let Some(private) = file.sandbox.as_ref().and_then(|s| s.private_tmp) {
        bash.private_tmp = private;
    }
    if let Some(sockets) = file
        .sandbox
        .as_ref()
        .and_then(|s| s.allow_unix_sockets.clone())
    {
        bash.allow_unix_sockets = sockets;
    }
    let mut catalogue = crate::catalogue::Catalogue::with_config(&file.models);
    for route in &routes {
        catalogue.add_route(route);
    }
    let context_window = file
        .models
        .get(&model)
        .and_then(|m| m.context_window)
        .or_else(|| catalogue.entry(&model).and_then(|e| e.context_window))
        .unwrap_or(if routes.iter().any(|r| r.name == model) {
            crate::providers::DEFAULT_CONTEXT_WINDOW
        } else {
            dsh_llm_deepseek::CONTEXT_WINDOW
        });
    let mut compaction = dsh_compaction::CompactionConfig::for_window(context_window);
    if let Some(t) = file.compaction.threshold {
        compaction.threshold = t;
    }
    if let Some(r) = file.compaction.retain {
        compaction.retain = r;
    }
    if compaction.retain >= compaction.threshold {
        problem(format!(
            "invalid config: [compaction] retain ({}) must be below threshold ({})",
            compaction.retain, compaction.threshold
        ));
        compaction = dsh_compaction::CompactionConfig::for_window(context_window);
    }
    let mut tools = |names: &Vec<String>, source: &str| match checked_tools(names, source) {
        Ok(()) => Some(names.clone()),
        Err(e) => {
            problem(e);
            None
        }
    };
    let tools = match (&settings.tools, &file.tools.enabled) {
        (Some(names), _) => tools(names, "--tools"),
        (None, Some(names)) => tools(names, &config_name),
        (None, None) => None,
    };
    let max_cost_per_session = file.budget.max_cost_per_session;
    if max_cost_per_session.is_some() && catalogue.price(&model).is_none() {
        warnings.push(crate::budget::unchecked_warning(&model));
    }
    let web = crate::tools::web::resolve(
        &file.web,
        tools.as_deref(),
        bash.network,
        network_hosts.as_ref(),
        &mut problem,
        &mut warnings,
    );
    let resolved = Resolved {
        web,
        compaction,
        catalogue,
        max_cost_per_session,
        permission,
        permission_source,
        network_hosts,
        approval: file_permission.approval.unwrap_or_default(),
        permission_rules,
        model,
        deepseek,
        providers,
        routes,
        adapters,
        max_retries: file
            .deepseek
            .max_retries
            .unwrap_or(config::DEFAULT_MAX_RETRIES),
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
        tools,
        hooks,
        todo_allow_parallel_in_progress: file.todo.allow_parallel_in_progress.unwrap_or(false),
        subagent_max_depth: file
            .subagents
            .max_depth
            .unwrap_or(crate::subagents::DEFAULT_MAX_DEPTH),
        warnings,
    };
    Diagnosis { resolved, problems }
}

/// The message for a model no adapter serves. `needs_key`: it is a DeepSeek
/// model and no usable key is configured, which is what the user has to
/// fix (not a typo in the name).
pub fn model_problem(model: &str, available: &[String], needs_key: bool) -> String {
    if needs_key {
        format!(
            "model \"{model}\" needs an API key (DEEPSEEK_API_KEY or api_key): set DEEPSEEK_API_KEY in the environment or api_key under [deepseek] in dsh.toml; without a key only the offline echo model is available"
        )
    } else {
        format!(
            "unknown model \"{model}\"; available models: {}",
            available.join(", ")
        )
    }
}

/// Fails when a name in `names` is not a built-in tool.
fn checked_tools(names: &[String], source: &str) -> Result<(), String> {
    let known = crate::tools::BUILTIN_TOOLS;
    if let Some(bad) = names.iter().find(|n| !known.contains(&n.as_str())) {
        return Err(format!(
            "{source}: unknown tool \"{bad}\" in tools; known tools: {}",
            known.join(", ")
        ));
    }
    Ok(())
}

/// The configuration that applies: the trusted base file, then the project
/// file (whole when trusted, else only its harmless keys). A file with a
/// bad value is reported and left out.
fn apply_trust(
    loaded: LoadedConfig,
    policy: ProjectTrust,
    warnings: &mut Vec<String>,
    problem: &mut dyn FnMut(String),
) -> FileConfig {
    let mut file = FileConfig::default();
    if let Some(base) = loaded.base {
        let bad = check_values(&base);
        let ok = bad.is_empty();
        bad.into_iter().for_each(&mut *problem);
        if ok {
            file = base.file;
        }
    }
    if let Some(project) = loaded.project {
        let bad = check_values(&project);
        let ok = bad.is_empty();
        bad.into_iter().for_each(&mut *problem);
        if ok {
            file = file.overlay(trusted_part(project, policy, warnings, problem));
        }
    }
    file
}

fn trusted_part(
    project: ConfigFile,
    policy: ProjectTrust,
    warnings: &mut Vec<String>,
    problem: &mut dyn FnMut(String),
) -> FileConfig {
    debug_assert_eq!(project.origin, ConfigOrigin::Project);
    let unsafe_keys = project.file.unsafe_keys();
    if unsafe_keys.is_empty() || policy == ProjectTrust::Trust {
        return project.file;
    }
    let (decision, changes) = match TrustStore::open() {
        Ok(store) => (store.decision(&project), store.changes(&project)),
        Err(e) => {
            problem(e.to_string());
            return project.file.without_unsafe_keys();
        }
    };
    let path = project.path.display();
    let keys = unsafe_keys.join(", ");
    match (decision, policy) {
        (Decision::Trusted, _) => project.file,
        (Decision::Unknown { changed }, ProjectTrust::Refuse) => {
            let what = if changed {
                let list: Vec<String> = changes.iter().map(ToString::to_string).collect();
                format!(" (it changed since you decided: {})", list.join("; "))
            } else {
                String::new()
            };
            problem(format!(
                "the project config {path} is not trusted{what}: it sets {keys}, which can run commands, change where your key is sent or lift limits; review it, then run `dsh trust` (or pass --trust-project for this run)"
            ));
            project.file.without_unsafe_keys()
        }
        _ => {
            warnings.push(format!(
                "ignoring {keys} from the untrusted project config {path} (trust it with `dsh trust`)"
            ));
            project.file.without_unsafe_keys()
        }
    }
}

/// The hooks `file` configures: its `[hooks]` section (per-file errors
/// were reported by [`check_values`]), then each `hooks.json`; what a
/// `hooks.json` holds that dsh does not run becomes a warning, a
/// `hooks.json` timeout above its ceiling a problem (that file's hooks are
/// left out).
fn compile_hooks(
    file: &FileConfig,
    config_name: &str,
    warnings: &mut Vec<String>,
    problem: &mut dyn FnMut(String),
) -> dsh_hooks::HookSet {
    let mut set = match &file.hooks {
        Some(section) => match dsh_hooks::HookSet::from_section(section, config_name) {
            Ok(set) => set,
            Err(e) => {
                problem(format!("invalid hooks: {e}"));
                dsh_hooks::HookSet::new()
            }
        },
        None => dsh_hooks::HookSet::new(),
    };
    let ceiling = config::limit("hooks.*.timeout").map_or(u64::MAX, |l| l.ceiling);
    for json in &file.claude_hooks {
        let source = json.path.display().to_string();
        match dsh_hooks::HookSet::from_claude_json(&json.text, &source) {
            Ok((more, skipped)) => {
                if let Some(h) = more.iter().find(|h| h.timeout.as_secs() > ceiling) {
                    problem(format!(
                        "invalid hooks file {source}: a {} hook's timeout ({} s) is above its ceiling of {ceiling} s",
                        h.event.name(),
                        h.timeout.as_secs()
                    ));
                    continue;
                }
                warnings.extend(skipped);
                set.extend(more);
            }
            Err(e) => problem(format!("invalid hooks file {e}")),
        }
    }
    set
}

/// Values a file may not hold, each named with the file: every problem,
/// in key order.
fn check_values(cfg: &ConfigFile) -> Vec<String> {
    let f = &cfg.file;
    let mut problems = Vec::new();
    let mut bad =
        |msg: String| problems.push(format!("invalid config file {}: {msg}", cfg.path.display()));
    if let Some(section) = &f.hooks {
        if let Err(e) = dsh_hooks::HookSet::from_section(section, "[hooks]") {
            bad(e);
        }
    }
    if let Some(t) = f.compaction.threshold {
        if !(t > 0.0 && t <= 1.0) {
            bad(format!(
                "[compaction] threshold = {t} must be above 0 and at most 1"
            ));
        }
    }
    if let Some(r) = f.compaction.retain {
        if !(0.0..1.0).contains(&r) {
            bad(format!(
                "[compaction] retain = {r} must be at least 0 and below 1"
            ));
        }
    }
    // Every limit: at least 1 where 0 means nothing works, and never
    // above its ceiling, whoever set it.
    for set in f.limits() {
        // 0 forbids sub-agents / retries; a zero hook timeout is refused
        // by the [hooks] check above.
        let may_be_zero = matches!(
            set.limit.key,
            "subagents.max_depth" | "deepseek.max_retries" | "hooks.*.timeout"
        );
        if set.value == 0 && !may_be_zero {
            bad(format!("{} must be at least 1", set.written()));
        } else if set.value > set.limit.ceiling {
            bad(format!(
                "{} = {} is above its ceiling of {} (the most any configuration may set; the default is {})",
                set.written(), set.value, set.limit.ceiling, set.limit.default
            ));
        }
    }
    // The [deepseek] values are checked even without an API key, so a typo
    // shows up before the key is added.
    let defaults = dsh_llm_deepseek::DeepSeekConfig::default();
    let deepseek = dsh_llm_deepseek::DeepSeekConfig {
        base_url: f.deepseek.base_url.clone(),
        ..defaults
    };
    if let Err(e) = deepseek.validate() {
        bad(e);
    }
    if let Some(Err(why)) = f
        .deepseek
        .api_key
        .as_deref()
        .map(dsh_llm_deepseek::check_api_key)
    {
        bad(format!("[deepseek] api_key {why}"));
    }
    problems
}
