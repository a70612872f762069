//! `dsh`: the coding-agent command line.
//!
//! Parses the command line and dispatches to one module per subcommand under
//! `commands/`; the plugin stack comes from the `dsh` library ([`app`] maps
//! the shared flags onto it). Every clap definition is in [`cli`], which
//! `build.rs` also includes to render the man pages at build time. The
//! agent flags ([`cli::StackArgs`]) are
//! global: `dsh --permission read-only run …` and `dsh run --permission
//! read-only …` mean the same (the one after the subcommand wins when both
//! are given). Exit codes: 0 success, 1 a failed result (a turn that ended
//! in error, invalid arguments, output that could not be written), 2
//! unusable input (usage, config, missing or corrupt files), 130 aborted.
//! A closed stdout ends any command quietly with 0 ([`output`]).

mod app;
mod approve;
mod ask_line;
mod cli;
mod commands;
mod complete;
mod logging;
mod output;
mod render;
mod sanitize;
mod signals;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use crate::cli::{Cli, Command};
use crate::output::say;

// `MAN_PAGES`: the man pages build.rs rendered from `cli.rs`.
include!(concat!(env!("OUT_DIR"), "/man_pages.rs"));

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
    if cli.command.is_some() && cli.chat.continue_session {
        say!("dsh: error: -c/--continue before a subcommand is chat's; put it after the subcommand (`dsh run --continue …`)");
        return ExitCode::from(2);
    }
    let code = match cli.command {
        Some(Command::Chat(args)) => commands::chat::run(args),
        Some(Command::Run(args)) => commands::run::run(args),
        Some(Command::Acp(args)) => commands::acp::run(args),
        Some(Command::Serve(args)) => commands::serve::run(args),
        Some(Command::Web(args)) => commands::serve::web(args),
        Some(Command::Tools(args)) => commands::tools::run(args),
        Some(Command::Skills(args)) => commands::skills::run(args),
        Some(Command::Schema(args)) => commands::schema::run(args),
        Some(Command::Session(args)) => commands::session::run(args),
        Some(Command::Usage(args)) => commands::usage::run(args),
        Some(Command::Models(args)) => commands::models::run(args),
        Some(Command::Mcp(args)) => commands::mcp::run(args),
        Some(Command::Trust(args)) => commands::trust::run(args),
        Some(Command::Permissions(args)) => commands::permissions::run(args),
        Some(Command::Doctor(args)) => commands::doctor::run(args),
        Some(Command::Completions { shell }) => completions(shell),
        Some(Command::Man { command }) => man_page(&command),
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
fn completions(shell: cli::Shell) -> u8 {
    let shell = match shell {
        cli::Shell::Bash => clap_complete::Shell::Bash,
        cli::Shell::Elvish => clap_complete::Shell::Elvish,
        cli::Shell::Fish => clap_complete::Shell::Fish,
        cli::Shell::Powershell => clap_complete::Shell::PowerShell,
        cli::Shell::Zsh => clap_complete::Shell::Zsh,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "dsh", &mut script);
    output::emit(&String::from_utf8_lossy(&script))
}

/// `dsh man [COMMAND…]`: dsh's man page, or the page of the subcommand
/// `COMMAND…` names (`dsh man tools list` prints `dsh-tools-list`).
/// build.rs rendered them from the parser's own definitions ([`cli`]), so
/// they cannot drift from it. Exit 2 for a page that does not exist.
fn man_page(command: &[String]) -> u8 {
    let name = std::iter::once("dsh")
        .chain(command.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("-");
    match MAN_PAGES.iter().find(|(page, _)| *page == name) {
        Some((_, text)) => output::emit(text),
        None => {
            let names: Vec<&str> = MAN_PAGES.iter().map(|(page, _)| *page).collect();
            say!(
                "dsh: error: no man page {name}; the pages are: {}",
                names.join(", ")
            );
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shell_is_clap_completes_by_name() {
        use clap::ValueEnum;
        let ours: Vec<String> = cli::Shell::value_variants()
            .iter()
            .filter_map(|s| s.to_possible_value())
            .map(|v| v.get_name().to_string())
            .collect();
        let theirs: Vec<String> = clap_complete::Shell::value_variants()
            .iter()
            .filter_map(|s| s.to_possible_value())
            .map(|v| v.get_name().to_string())
            .collect();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn the_man_pages_are_those_of_the_commands() {
        let names: Vec<&str> = MAN_PAGES.iter().map(|(name, _)| *name).collect();
        assert_eq!(names[0], "dsh");
        let root = Cli::command();
        for sub in root.get_subcommands().filter(|s| !s.is_hide_set()) {
            let page = format!("dsh-{}", sub.get_name());
            assert!(names.contains(&page.as_str()), "{page}: {names:?}");
        }
        assert!(names.contains(&"dsh-tools-list"), "{names:?}");
        assert!(!names
            .iter()
            .any(|n| n.ends_with("-help") || n.ends_with("-man")));
        for (name, text) in MAN_PAGES {
            assert!(text.contains(&format!(".TH {name} 1")), "{name}: {text}");
        }
    }
}
