//! Renders dsh's man pages at build time, from the same clap definitions
//! the parser uses (`src/cli.rs`, included here as a module), so the pages
//! cannot drift from the command line and the binary needs no man-page
//! renderer: `dsh man [COMMAND…]` prints one of them.
//!
//! Writes into `OUT_DIR`: `dsh.1` and one page per visible subcommand
//! (`dsh-run.1`, `dsh-tools-list.1`, …), and `man_pages.rs`, the table
//! `MAN_PAGES` of `(page name, troff text)` that `main.rs` includes.

#[path = "src/cli.rs"]
mod cli;

use std::fmt::Write as _;
use std::path::Path;

use clap::CommandFactory;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=src/cli.rs");
    println!("cargo:rerun-if-changed=build.rs");
    let out_dir = std::env::var_os("OUT_DIR").ok_or("cargo sets OUT_DIR for build scripts")?;
    let out_dir = Path::new(&out_dir);
    // `help` is a parser convenience, not a page: left out of the listings.
    let mut root = without_help_subcommand(cli::Cli::command());
    root.build();
    // Every page's footer names dsh and its version (a subcommand has none).
    let source = format!("dsh {}", root.get_version().unwrap_or_default());
    let mut pages = Vec::new();
    render(&root, &source, out_dir, &mut pages)?;
    let mut table = String::from(
        "/// Every man page `build.rs` rendered: its name (`dsh`, `dsh-run`,\n\
         /// `dsh-tools-list`, …) and its troff text.\n\
         pub(crate) const MAN_PAGES: &[(&str, &str)] = &[\n",
    );
    for name in &pages {
        writeln!(
            table,
            "    ({name:?}, include_str!(concat!(env!(\"OUT_DIR\"), \"/{name}.1\"))),"
        )?;
    }
    table.push_str("];\n");
    std::fs::write(out_dir.join("man_pages.rs"), table)?;
    Ok(())
}

/// Writes `cmd`'s page and those of its visible subcommands (depth first,
/// parents first), adding each page's name to `pages`.
fn render(
    cmd: &clap::Command,
    source: &str,
    out_dir: &Path,
    pages: &mut Vec<String>,
) -> Result<(), Box<dyn std::error::Error>> {
    let man = clap_mangen::Man::new(cmd.clone()).source(source);
    let mut page = Vec::new();
    man.render(&mut page)?;
    let name = cmd.get_display_name().unwrap_or(cmd.get_name()).to_string();
    std::fs::write(out_dir.join(format!("{name}.1")), page)?;
    pages.push(name);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        render(sub, source, out_dir, pages)?;
    }
    Ok(())
}

/// `cmd` and every subcommand of it without clap's `help` subcommand.
fn without_help_subcommand(cmd: clap::Command) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    names
        .into_iter()
        .fold(cmd.disable_help_subcommand(true), |cmd, name| {
            cmd.mut_subcommand(name, without_help_subcommand)
        })
}
