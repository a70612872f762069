//! The command line's view of the stack: [`StackArgs`] (the flags every
//! agent command shares) mapped onto the library's [`dsh::Settings`].

use std::path::PathBuf;

pub(crate) use dsh::{Resolved, Stack as App, StackError};

/// Options shared by the commands that run an agent (and by `tools list`,
/// `mcp list`, `doctor`). Every one is global: accepted before the
/// subcommand as well as after it (`dsh --model M run …`); a command that
/// runs no agent ignores them.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Agent options")]
pub(crate) struct StackArgs {
    /// Model to use (default: deepseek-v4-flash with an API key, else echo).
    #[arg(long, short = 'm', global = true)]
    pub model: Option<String>,
    /// Directory of session logs (default $XDG_DATA_HOME/dsh/sessions).
    #[arg(long, global = true)]
    pub session_dir: Option<PathBuf>,
    /// A file whose text is appended to the system prompt.
    #[arg(long, value_name = "FILE", global = true)]
    pub system_prompt: Option<PathBuf>,
    /// Configuration file (default: ./dsh.toml, then $XDG_CONFIG_HOME/dsh/dsh.toml).
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// An MCP server whose tools the agent gets, as NAME=COMMAND ARGS…
    /// (split like a shell) or NAME=URL (http:// or https://, streamable
    /// HTTP); repeatable; overrides a configured server of the same name.
    #[arg(
        long = "mcp",
        value_name = "NAME=COMMAND ARGS…|NAME=URL",
        global = true
    )]
    pub mcp: Vec<String>,
    /// Trust the working directory's dsh.toml for this run (its MCP servers,
    /// base_url, system_prompt… apply) without recording it; see `dsh trust`.
    #[arg(long, global = true)]
    pub trust_project: bool,
    /// Send tools in DeepSeek's strict function-calling dialect where their
    /// schema allows (the beta endpoint; also `[deepseek] strict_tools`).
    #[arg(long, global = true)]
    pub strict_tools: bool,
    /// The built-in tools to offer, comma-separated (default: all; also
    /// `tools = [..]` in dsh.toml), e.g. `--tools bash,read,edit`.
    #[arg(long, value_delimiter = ',', value_name = "NAMES", global = true)]
    pub tools: Option<Vec<String>>,
    /// The permission mode: read-only, workspace-write (default) or
    /// danger-full-access (also DSH_PERMISSION and `[permission] mode`).
    #[arg(long, value_name = "MODE", global = true)]
    pub permission: Option<dsh::SandboxMode>,
    /// What the command does with an untrusted project config (set by the
    /// command, not a flag).
    #[arg(skip)]
    pub untrusted: dsh::ProjectTrust,
}

impl StackArgs {
    /// The library settings these flags stand for.
    pub(crate) fn settings(&self) -> dsh::Settings {
        dsh::Settings {
            model: self.model.clone(),
            session_dir: self.session_dir.clone(),
            system_prompt: self.system_prompt.clone(),
            config: self.config.clone(),
            mcp: self.mcp.clone(),
            cwd: None,
            strict_tools: self.strict_tools,
            tools: self.tools.clone(),
            permission: self.permission,
            project_trust: if self.trust_project {
                dsh::ProjectTrust::Trust
            } else {
                self.untrusted
            },
        }
    }
}

/// Resolves the flags, the environment and `dsh.toml`.
///
/// # Errors
/// As [`dsh::resolve`].
pub(crate) fn resolve(args: &StackArgs) -> Result<Resolved, StackError> {
    dsh::resolve(&args.settings())
}

/// Asks on the terminal whether to trust an undecided project config that
/// sets unsafe keys, records the answer and sets `stack.untrusted` for this
/// run. Does nothing without a terminal on stdin and stderr, with
/// `--config` or `--trust-project`, or when the config is harmless or
/// already decided (resolving then refuses, or applies the harmless keys,
/// as the decision says).
pub(crate) fn ask_about_project(stack: &mut StackArgs) {
    use std::io::{BufRead, IsTerminal, Write};
    if stack.trust_project
        || stack.config.is_some()
        || !std::io::stdin().is_terminal()
        || !std::io::stderr().is_terminal()
    {
        return;
    }
    let Ok(cwd) = std::env::current_dir() else {
        return;
    };
    // Errors surface when the command resolves the configuration.
    let Ok(dsh::config::LoadedConfig {
        project: Some(project),
        ..
    }) = dsh::config::load(None, &cwd)
    else {
        return;
    };
    if project.file.unsafe_keys().is_empty() {
        return;
    }
    let Ok(mut store) = dsh::trust::TrustStore::open() else {
        return;
    };
    let changed = match store.decision(&project) {
        dsh::trust::Decision::Unknown { changed } => changed,
        _ => return,
    };
    let dir = project.path.parent().unwrap_or(&cwd).display().to_string();
    // The path and what the config sets come from the repository: shown
    // sanitised, like every foreign string.
    let visible = crate::sanitize::visible;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "dsh: {} project config {}:",
        if changed { "a changed" } else { "an untrusted" },
        visible(&project.path.display().to_string())
    );
    for change in store.changes(&project) {
        let _ = writeln!(
            err,
            "  - changed since you decided: {}",
            visible(&change.to_string())
        );
    }
    for line in dsh::trust::describe(&project) {
        let _ = writeln!(err, "  - {}", visible(&line));
    }
    let _ = write!(
        err,
        "trust the configuration in {}? it can run commands and change where your key is sent [y/N] ",
        visible(&dir)
    );
    let _ = err.flush();
    drop(err);
    let mut answer = String::new();
    let yes = std::io::stdin().lock().read_line(&mut answer).is_ok()
        && matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes");
    if let Err(e) = store.record(&project, yes) {
        crate::output::say!("dsh: {e} (the answer applies to this run only)");
    }
    stack.untrusted = if yes {
        dsh::ProjectTrust::Trust
    } else {
        dsh::ProjectTrust::IgnoreUnsafe
    };
}
