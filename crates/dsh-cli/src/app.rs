//! The command line's view of the stack: [`StackArgs`] (the flags every
//! agent command shares) mapped onto the library's [`dsh::Settings`].

use std::path::PathBuf;

pub(crate) use dsh::{Resolved, Stack as App, StackError};

/// Options shared by the commands that run an agent (and by `tools list`).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct StackArgs {
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
