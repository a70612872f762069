//! `dsh trust [DIR] [--revoke] [--list]`: decide about a project config.
//!
//! A `dsh.toml` in a working directory comes with the repository, so dsh
//! does not let it run commands or redirect the API key until the user
//! trusts it. `dsh trust` shows what the config in DIR (default: the working
//! directory) would do and records it as trusted in
//! `$XDG_CONFIG_HOME/dsh/trusted.toml`, keyed by its path and the SHA-256 of
//! its contents, with the SHA-256 of every project file it runs (hook
//! scripts, MCP server scripts): an edited config or script must be trusted
//! again. A directory without a `dsh.toml` but with project commands
//! (`.dsh/commands`, `.claude/commands`) is trusted as an empty config, so
//! its commands load ([`dsh::custom_commands::project_trusted`]).
//! `--revoke` forgets the decision; `--list` prints every recorded
//! one and what changed since (or that there is none). Exit 0 done, 2 no or
//! unusable config, 1 the record could not be written.

use crate::cli::TrustArgs;
use crate::output::{emit, say};
use crate::sanitize::visible;

/// Runs `dsh trust`; returns the exit code.
pub(crate) fn run(args: TrustArgs) -> u8 {
    let mut store = match dsh::trust::TrustStore::open() {
        Ok(s) => s,
        Err(e) => {
            say!("dsh: {e}");
            return 2;
        }
    };
    if args.list {
        return list(&store);
    }
    let dir = match args.dir {
        Some(d) => d,
        None => match std::env::current_dir() {
            Ok(d) => d,
            Err(e) => {
                say!("dsh: cannot determine the working directory: {e}");
                return 2;
            }
        },
    };
    let path = dir.join("dsh.toml");
    if args.revoke {
        // DIR is a flag and the path can be anything: shown sanitised.
        return match store.forget(&path) {
            Ok(true) => emit(&visible(&format!(
                "forgot the decision about {}\n",
                path.display()
            ))),
            Ok(false) => {
                say!("dsh: no decision recorded for {}", path.display());
                2
            }
            Err(e) => {
                say!("dsh: {e}");
                1
            }
        };
    }
    let cfg = match dsh::config::read_project(&dir) {
        Ok(Some(cfg)) => cfg,
        // A project with commands but no dsh.toml: the directory as it is
        // (an empty config; adding a dsh.toml makes it undecided again).
        Ok(None) if dsh::custom_commands::has_project_commands(&dir) => {
            dsh::custom_commands::empty_project_config(&dir)
        }
        Ok(None) => {
            say!("dsh: no project config at {}", path.display());
            return 2;
        }
        Err(e) => {
            say!("dsh: {e}");
            return 2;
        }
    };
    if let Err(e) = store.record(&cfg, true) {
        say!("dsh: {e}");
        return 1;
    }
    let mut out = visible(&format!(
        "trusted {} (sha256 {})\n",
        cfg.path.display(),
        dsh::trust::content_hash(&cfg.text)
    ))
    .into_owned();
    for line in dsh::trust::describe(&cfg) {
        out.push_str(&format!("  - {}\n", visible(&line)));
    }
    emit(&out)
}

fn list(store: &dsh::trust::TrustStore) -> u8 {
    let entries = store.entries();
    if entries.is_empty() {
        return emit(&format!(
            "no trust decisions recorded (they are kept in {})\n",
            visible(&store.path().display().to_string())
        ));
    }
    let mut out = String::new();
    for (path, trusted) in entries {
        let verdict = if trusted { "trusted" } else { "refused" };
        let project = path
            .parent()
            .map(dsh::config::read_project)
            .unwrap_or(Ok(None));
        let changes = match project {
            Ok(Some(cfg)) => {
                let changes = store.changes(&cfg);
                let state = if changes.is_empty() {
                    ""
                } else {
                    " (changed since)"
                };
                out.push_str(&visible(&format!("{verdict}  {}{state}\n", path.display())));
                changes
            }
            Ok(None) => {
                out.push_str(&visible(&format!(
                    "{verdict}  {} (missing)\n",
                    path.display()
                )));
                Vec::new()
            }
            Err(e) => {
                out.push_str(&visible(&format!(
                    "{verdict}  {} (unreadable: {e})\n",
                    path.display()
                )));
                Vec::new()
            }
        };
        for change in changes {
            out.push_str(&format!("    {}\n", visible(&change.to_string())));
        }
    }
    emit(&out)
}
