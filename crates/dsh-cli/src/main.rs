//! `dsh`: the coding-agent command line.
//!
//! Parses the command line and dispatches to one module per subcommand under
//! `commands/`; the plugin stack comes from the `dsh` library ([`app`] maps
//! the shared flags onto it). Exit
//! codes: 0 success, 1 a failed result (a turn that ended in error, invalid
//! arguments), 2 unusable input (usage, config, missing or corrupt files),
//! 130 aborted.

mod app;
mod approve;
mod commands;
mod complete;
mod output;
mod render;
mod sanitize;
mod signals;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// dsh — a coding agent that drives DeepSeek models (or the offline echo
/// model) in a tool loop.
#[derive(Debug, Parser)]
#[command(name = "dsh", version, about, long_about = None, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    chat: commands::chat::ChatArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Chat interactively (the default command).
    Chat(commands::chat::ChatArgs),
    /// Run one turn and print the final answer.
    Run(commands::run::RunArgs),
    /// Serve the Agent Client Protocol on stdin/stdout (for editors).
    Acp(commands::acp::AcpArgs),
    /// List the tools the model is shown.
    Tools(commands::tools::ToolsArgs),
    /// List the skills found (project .dsh/skills, .agents/skills, user).
    Skills(commands::skills::SkillsArgs),
    /// Work with tool argument schemas (the model boundary).
    Schema(commands::schema::SchemaArgs),
    /// List, show and replay session logs.
    Session(commands::session::SessionArgs),
    /// MCP servers: list their state and tools.
    Mcp(commands::mcp::McpArgs),
    /// Trust the working directory's dsh.toml (its MCP servers, base_url…).
    Trust(commands::trust::TrustArgs),
    /// Report the sandbox (mechanism, ABI, full or partial enforcement),
    /// the config files read, the model and key, the MCP servers.
    Doctor(commands::doctor::DoctorArgs),
}

fn main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    let code = match cli.command {
        Some(Command::Chat(args)) => commands::chat::run(args),
        Some(Command::Run(args)) => commands::run::run(args),
        Some(Command::Acp(args)) => commands::acp::run(args),
        Some(Command::Tools(args)) => commands::tools::run(args),
        Some(Command::Skills(args)) => commands::skills::run(args),
        Some(Command::Schema(args)) => commands::schema::run(args),
        Some(Command::Session(args)) => commands::session::run(args),
        Some(Command::Mcp(args)) => commands::mcp::run(args),
        Some(Command::Trust(args)) => commands::trust::run(args),
        Some(Command::Doctor(args)) => commands::doctor::run(args),
        None => commands::chat::run(cli.chat),
    };
    ExitCode::from(code)
}

/// The log filter without `DSH_LOG`: warnings, but none from the MCP
/// SDK's transports (a dropped server makes them repeat what dsh's own
/// `dsh_mcp` warnings say once, in words that name the server).
const DEFAULT_LOG_FILTER: &str = "warn,rmcp=off";

/// Logs go to stderr, filtered by `DSH_LOG` (default
/// [`DEFAULT_LOG_FILTER`]).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("DSH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
