//! `dsh`: the coding-agent command line.
//!
//! Parses the command line and dispatches to one module per subcommand under
//! `commands/`. Exit codes: 0 success, 1 a failed result (invalid arguments,
//! a turn that ended in error), 2 unusable input (usage, config, missing or
//! corrupt files), 130 aborted.

mod commands;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// dsh — a coding-agent harness driving DeepSeek models in a tool loop.
#[derive(Debug, Parser)]
#[command(name = "dsh", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Work with tool argument schemas (the model boundary).
    Schema(commands::schema::SchemaArgs),
    /// Inspect and replay session logs.
    Session(commands::session::SessionArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Some(Command::Schema(args)) => commands::schema::run(args),
        Some(Command::Session(args)) => commands::session::run(args),
        None => {
            use clap::CommandFactory;
            // Printing help can only fail on a closed stdout; nothing to do then.
            let _ = Cli::command().print_help();
            0
        }
    };
    ExitCode::from(code)
}
