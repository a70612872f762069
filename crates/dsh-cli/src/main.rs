//! `dsh`: the coding-agent command line.
//!
//! Parses the command line and dispatches to one module per subcommand under
//! `commands/`; the plugin stack comes from the `dsh` library ([`app`] maps
//! the shared flags onto it). The agent flags ([`app::StackArgs`]) are
//! global: `dsh --permission read-only run …` and `dsh run --permission
//! read-only …` mean the same (the one after the subcommand wins when both
//! are given). Exit codes: 0 success, 1 a failed result (a turn that ended
//! in error, invalid arguments, output that could not be written), 2
//! unusable input (usage, config, missing or corrupt files), 130 aborted.
//! A closed stdout ends any command quietly with 0 ([`output`]).

mod app;
mod approve;
mod commands;
mod complete;
mod logging;
mod output;
mod render;
mod sanitize;
mod signals;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::output::say;

/// dsh — a coding agent that drives DeepSeek models (or the offline echo
/// model) in a tool loop.
#[derive(Debug, Parser)]
#[command(name = "dsh", version, about, long_about = None)]
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
    /// Print a shell completion script: `dsh completions bash >
    /// ~/.local/share/bash-completion/completions/dsh`.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (troff): `dsh man > ~/.local/share/man/man1/dsh.1`.
    #[command(hide = true)]
    Man,
}

fn main() -> ExitCode {
    output::install_print_failure_hook();
    logging::init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(clap_failure(&e)),
    };
    if cli.command.is_some() && cli.chat.resume.is_some() {
        say!("dsh: error: --resume before a subcommand is chat's; put it after the subcommand (`dsh run --resume ID …`)");
        return ExitCode::from(2);
    }
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
        Some(Command::Completions { shell }) => completions(shell),
        Some(Command::Man) => man_page(),
        None => commands::chat::run(cli.chat),
    };
    ExitCode::from(code)
}

/// What a parse failure prints, and its exit code: `--help` and
/// `--version` go to stdout (0, or 1 when it cannot be written); a usage
/// error goes to stderr, sanitised (it quotes what was typed), exit 2.
fn clap_failure(e: &clap::Error) -> u8 {
    use clap::error::ErrorKind;
    use std::io::IsTerminal;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let text = e.render();
            // dsh's own help text: colour is safe, on a terminal.
            if std::io::stdout().is_terminal() {
                output::emit(&text.ansi().to_string())
            } else {
                output::emit(&text.to_string())
            }
        }
        _ => {
            let text = e.render().to_string();
            let mut err = std::io::stderr().lock();
            let _ = std::io::Write::write_all(&mut err, sanitize::visible(&text).as_bytes());
            u8::try_from(e.exit_code()).unwrap_or(2)
        }
    }
}

/// `dsh completions SHELL`: the completion script on stdout.
fn completions(shell: clap_complete::Shell) -> u8 {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "dsh", &mut script);
    output::emit(&String::from_utf8_lossy(&script))
}

/// `dsh man`: the man page, generated from the same command definitions
/// as the parser (so it cannot drift from it).
fn man_page() -> u8 {
    let mut page = Vec::new();
    match clap_mangen::Man::new(Cli::command()).render(&mut page) {
        Ok(()) => output::emit(&String::from_utf8_lossy(&page)),
        Err(e) => {
            say!("dsh: error: cannot render the man page: {e}");
            1
        }
    }
}
