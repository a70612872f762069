//! The plugin stack the `dsh` commands run on, built from configuration.
//!
//! Kernel → LLM service (offline `echo` model always; the DeepSeek adapter and
//! its retry plugin when a key is configured) → sessions with JSONL
//! persistence → prompt assembly (coding-agent sections) → tool registry
//! (`echo`, the bash tools) → agent registry. Everything is registered in one
//! [`Scope`]; [`App::shutdown`] disposes the bash executor (killing what still
//! runs) and closes the scope (flushing session files).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context as _};
use dsh_agent::{AgentOptions, AgentRegistry};
use dsh_agent_loop::{AgentHandle, AgentLoop, LoopSetup};
use dsh_bash::BashExecutor;
use dsh_bash_local::{LocalBashConfig, LocalBashExecutor};
use dsh_kernel::{Kernel, Scope};
use dsh_llm::{ContentBlock, LlmService};
use dsh_prompt::{PromptService, Section};
use dsh_session::SessionStore;
use dsh_tools::{define_tool, ToolArgs, ToolContext, ToolError, ToolRegistry};
use serde::{Deserialize, Serialize};

use crate::config::{self, EffortSetting, LoadedConfig, ThinkingSetting};
use crate::echo_model::{self, ECHO_MODEL};

/// Options shared by the commands that run an agent (and by `tools list`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StackArgs {
    /// Model to use (default: deepseek-v4-flash with an API key, else echo).
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// Directory of session logs (default $XDG_DATA_HOME/dsh/sessions).
    #[arg(long)]
    pub session_dir: Option<PathBuf>,
    /// A file whose text is appended to the system prompt.
    #[arg(long, value_name = "FILE")]
    pub system_prompt: Option<PathBuf>,
    /// Configuration file (default: ./dsh.toml, then $XDG_CONFIG_HOME/dsh/dsh.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// An MCP server whose tools the agent gets, as NAME=COMMAND ARGS…
    /// (split like a shell; repeatable; overrides a configured server of the same name).
    #[arg(long = "mcp", value_name = "NAME=COMMAND ARGS…")]
    pub mcp: Vec<String>,
}

/// A usage or configuration error: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Everything resolved from config, environment and flags.
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
    /// MCP servers from the file and `--mcp` flags, in order.
    pub mcp: Vec<dsh_mcp::McpServerConfig>,
}

/// Resolves config file, environment (`DEEPSEEK_API_KEY`, `DEEPSEEK_BASE_URL`,
/// `DSH_MODEL`) and flags, in increasing precedence.
///
/// # Errors
/// [`UsageError`] for a bad config file, an unknown model, or a DeepSeek model
/// without a key.
pub fn resolve(args: &StackArgs) -> anyhow::Result<Resolved> {
    let cwd = std::env::current_dir().context("cannot determine the working directory")?;
    let LoadedConfig { path, file } =
        config::load(args.config.as_deref(), &cwd).map_err(|e| UsageError(e.to_string()))?;
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
        cfg
    });
    let mut models = vec![ECHO_MODEL.to_string()];
    if let Some(cfg) = &deepseek {
        models.extend(cfg.models.iter().cloned());
    }
    let default_model = if deepseek.is_some() {
        dsh_llm_deepseek::DEFAULT_MODELS[0].to_string()
    } else {
        ECHO_MODEL.to_string()
    };
    let model = args
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
        return Err(UsageError(format!(
            "unknown model \"{model}\"{hint}; available models: {}",
            models.join(", ")
        ))
        .into());
    }
    let session_dir = args
        .session_dir
        .clone()
        .or_else(|| file.session_dir.clone())
        .unwrap_or_else(config::default_session_dir);
    let prompt_file = args
        .system_prompt
        .clone()
        .or_else(|| file.system_prompt.clone());
    let system_prompt = match prompt_file {
        Some(p) => Some(std::fs::read_to_string(&p).map_err(|e| {
            UsageError(format!(
                "cannot read system prompt file {}: {e}",
                p.display()
            ))
        })?),
        None => None,
    };
    let mut mcp: Vec<dsh_mcp::McpServerConfig> = Vec::new();
    for (name, spec) in &file.mcp.servers {
        let cfg = spec
            .clone()
            .into_config(name)
            .map_err(|e| UsageError(format!("{}: {e}", path_or_default(&path))))?;
        mcp.push(cfg);
    }
    for flag in &args.mcp {
        let cfg = dsh_mcp::parse_mcp_flag(flag).map_err(|e| UsageError(e.to_string()))?;
        mcp.retain(|c| c.name != cfg.name);
        mcp.push(cfg);
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
    Ok(Resolved {
        model,
        deepseek,
        max_retries: file.deepseek.max_retries.unwrap_or(3),
        session_dir,
        system_prompt,
        cwd,
        bash,
        max_steps: file.max_steps.unwrap_or(100),
        mcp,
    })
}

fn path_or_default(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "dsh.toml".into())
}

/// The running plugin stack.
pub struct App {
    /// The kernel with every service.
    pub kernel: Kernel,
    /// Everything registered, undone at shutdown.
    pub scope: Scope,
    /// The session store.
    pub store: Arc<SessionStore>,
    /// The tool registry.
    pub tools: Arc<ToolRegistry>,
    /// The agent registry (hooks).
    pub agents: Arc<AgentRegistry>,
    /// The bash executor.
    pub executor: Arc<LocalBashExecutor>,
    /// What the stack was built from.
    pub resolved: Resolved,
    /// MCP servers that started (see [`App::start_mcp`]).
    pub mcp: Vec<dsh_mcp::McpServer>,
}

/// Arguments of the built-in `echo` tool.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
struct EchoArgs {
    /// The text to echo back.
    text: String,
}

impl App {
    /// Builds the stack. Must run inside a tokio runtime.
    ///
    /// # Errors
    /// Any registration failure.
    pub fn build(resolved: Resolved) -> anyhow::Result<App> {
        let kernel = Kernel::new();
        let scope = Scope::new();
        let llm = Arc::new(LlmService::new());
        scope.add(kernel.provide(llm.clone())?);
        scope.add(llm.register_adapter(&[ECHO_MODEL], Arc::new(echo_model::adapter()))?);
        if let Some(cfg) = &resolved.deepseek {
            scope.add(dsh_llm_deepseek::register(&llm, cfg.clone())?);
            scope.add(dsh_llm_deepseek::install_retry(
                &llm,
                dsh_llm_deepseek::RetryConfig {
                    max_retries: resolved.max_retries,
                    ..Default::default()
                },
            ));
        }

        let store = Arc::new(SessionStore::new());
        scope.add(kernel.provide(store.clone())?);

        let prompt = Arc::new(PromptService::new());
        scope.add(kernel.provide(prompt.clone())?);
        for section in coding_sections(&resolved.cwd) {
            scope.add(prompt.add_section(section));
        }

        let tools = Arc::new(ToolRegistry::new());
        scope.add(kernel.provide(tools.clone())?);
        scope.add(tools.provide_to(&prompt));
        scope.add(tools.register(echo_tool())?);
        let executor = Arc::new(LocalBashExecutor::new(resolved.bash.clone()));
        let dyn_exec: Arc<dyn BashExecutor> = executor.clone();
        scope.add(dsh_tool_bash::install(&tools, dyn_exec)?);

        let agents = Arc::new(AgentRegistry::new());
        scope.add(kernel.provide(agents.clone())?);
        Ok(App {
            kernel,
            scope,
            store,
            tools,
            agents,
            executor,
            resolved,
            mcp: Vec::new(),
        })
    }

    /// Starts the configured MCP servers concurrently and registers their
    /// tools. A server that fails to start is reported on stderr (naming the
    /// server and its command) and left out; the others and the agent work.
    /// Returns the failures as `(name, message)`.
    pub async fn start_mcp(&mut self) -> Vec<(String, String)> {
        let configs = self.resolved.mcp.clone();
        let mut failures = Vec::new();
        for (name, result) in dsh_mcp::start_all(configs, &self.tools).await {
            match result {
                Ok(server) => self.mcp.push(server),
                Err(e) => {
                    eprintln!("dsh: {e}");
                    failures.push((name, e.to_string()));
                }
            }
        }
        failures
    }

    /// Creates the agent, resuming session `resume` from the session directory
    /// when given (the log is seeded and new events append to the same file).
    ///
    /// # Errors
    /// An unusable session directory ([`UsageError`]); a resume id whose log
    /// is missing, corrupt or in use.
    pub fn create_agent(&self, resume: Option<&str>) -> anyhow::Result<AgentHandle> {
        let (session_id, seed) = match resume {
            Some(id) => {
                let path = self.resolved.session_dir.join(format!("{id}.jsonl"));
                if !path.is_file() {
                    bail!(UsageError(format!(
                        "no session \"{id}\" in {} (see `dsh session list`)",
                        self.resolved.session_dir.display()
                    )));
                }
                if dsh_session::is_locked(&path) {
                    bail!(UsageError(format!(
                        "session \"{id}\" is in use by another dsh process ({})",
                        path.display()
                    )));
                }
                let log = dsh_session::load_jsonl(&path).map_err(|e| UsageError(e.to_string()))?;
                if let Some(torn) = &log.torn_tail {
                    eprintln!(
                        "dsh: {}: ignoring a torn last line {} (a write cut short)",
                        path.display(),
                        torn.line_no
                    );
                }
                (id.to_string(), log.events)
            }
            None => (dsh_session::new_session_id(), Vec::new()),
        };
        // Persistence starts with the first agent: commands that make none
        // (`tools list`, `mcp list`) never touch the session directory.
        self.scope.add(
            dsh_session::install_jsonl(&self.store, &self.resolved.session_dir)
                .map_err(|e| UsageError(e.to_string()))?,
        );
        let options = AgentOptions {
            model: Some(self.resolved.model.clone()),
            system_prompt: self.resolved.system_prompt.clone(),
            max_steps: self.resolved.max_steps,
            ..Default::default()
        };
        AgentLoop::create_with(
            &self.kernel,
            "main",
            options,
            LoopSetup {
                session_id: Some(session_id),
                seed,
            },
        )
        .map_err(|e| anyhow!(e))
    }

    /// Kills every bash task still running and closes the scope (session
    /// files are flushed and synced).
    pub async fn shutdown(self) {
        for server in &self.mcp {
            server.shutdown().await;
        }
        self.executor.dispose().await;
        self.scope.close_and_wait().await;
    }
}

fn echo_tool() -> Arc<dyn dsh_tools::Tool> {
    define_tool(
        "echo",
        "Echo the given text back. Useful to test the tool loop.",
        |args: EchoArgs, _ctx: ToolContext| async move {
            Ok::<_, ToolError>(vec![ContentBlock::text(args.text)])
        },
    )
    .into_arc()
}

const IDENTITY: &str = "You are dsh, a coding agent working in the user's repository through tools. Work step by step: inspect before you change, make the smallest change that solves the task, and verify it (build, run the tests) before you say it is done. Be concise; show the commands and results that matter.";

const BASH_RULES: &str = "Rules for the bash tool: every call is a fresh non-interactive shell, so `cd`, variables and functions do not persist; pass `workdir` instead of `cd`. Check `[exit code: N]` markers: a non-zero exit means the command failed. Long output is cut to its tail and the full output saved to a file whose path is given; read it with targeted commands (grep, head, tail) rather than printing it whole. Start long-running servers with `run_in_background: true` and poll them with `bash_output`.";

/// The coding-agent system-prompt sections: identity and working rules,
/// environment, and `AGENTS.md` from the working directory when present.
pub fn coding_sections(cwd: &Path) -> Vec<Section> {
    let mut sections = vec![
        Section::fixed("identity", 0, IDENTITY),
        Section::fixed("bash-rules", 10, BASH_RULES),
    ];
    let cwd_text = cwd.display().to_string();
    sections.push(Section::computed("environment", 20, move || {
        format!(
            "Environment: working directory {cwd_text}; OS {} ({}); date {}.",
            std::env::consts::OS,
            std::env::consts::ARCH,
            today()
        )
    }));
    let agents_md = cwd.join("AGENTS.md");
    if let Ok(text) = std::fs::read_to_string(&agents_md) {
        if !text.trim().is_empty() {
            sections.push(Section::fixed(
                "agents-md",
                30,
                format!(
                    "Project instructions from AGENTS.md:\n\n{}",
                    text.trim_end()
                ),
            ));
        }
    }
    sections
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_args_do_not_drift() {
        dsh_tools::testing::assert_no_drift::<EchoArgs>(256);
    }

    #[test]
    fn today_is_a_plausible_date() {
        let t = today();
        assert_eq!(t.len(), 10);
        let year: i32 = t[..4].parse().unwrap();
        assert!(year >= 2024, "{t}");
    }

    #[test]
    fn agents_md_is_included_when_present() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(coding_sections(dir.path()).len(), 3);
        std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.\n").unwrap();
        let s = coding_sections(dir.path());
        assert_eq!(s.len(), 4);
        assert!(s[3].text.evaluate().ends_with("Use tabs."));
    }
}
