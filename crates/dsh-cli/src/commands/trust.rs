//! `dsh trust [DIR] [--revoke] [--list]`: decide about a project config.
//!
//! A `dsh.toml` in a working directory comes with the repository, so dsh
//! does not let it run commands or redirect the API key until the user
//! trusts it. `dsh trust` shows what the config in DIR (default: the working
//! directory) would do and records it as trusted in
//! `$XDG_CONFIG_HOME/dsh/trusted.toml`, keyed by its path and the SHA-256 of
//! its contents (an edited file must be trusted again). `--revoke` forgets
//! the decision; `--list` prints every recorded one. Exit 0 done, 2 no or
//! unusable config, 1 the record could not be written.

use std::path::PathBuf;

use clap::Args;

use crate::output::emit;

/// Arguments of `dsh trust`.
#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// The directory whose dsh.toml to trust (default: the working directory).
    #[arg(value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Forget the decision about DIR's dsh.toml instead.
    #[arg(long, conflicts_with = "list")]
    revoke: bool,
    /// List the recorded decisions.
    #[arg(long, conflicts_with = "dir")]
    list: bool,
}

/// Runs `dsh trust`; returns the exit code.
pub(crate) fn run(args: TrustArgs) -> u8 {
    let mut store = match dsh::trust::TrustStore::open() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("dsh: {e}");
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
                eprintln!("dsh: cannot determine the working directory: {e}");
                return 2;
            }
        },
    };
    let path = dir.join("dsh.toml");
    if args.revoke {
        return match store.forget(&path) {
            Ok(true) => emit(&format!("forgot the decision about {}\n", path.display())),
            Ok(false) => {
                eprintln!("dsh: no decision recorded for {}", path.display());
                2
            }
            Err(e) => {
                eprintln!("dsh: {e}");
                1
            }
        };
    }
    let text = match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("dsh: cannot read {}: {e}", path.display());
                return 2;
            }
        },
        Ok(_) => {
            eprintln!("dsh: {} is not a regular file", path.display());
            return 2;
        }
        Err(e) => {
            eprintln!("dsh: no project config at {}: {e}", path.display());
            return 2;
        }
    };
    let file = match dsh::config::parse(&text) {
        Ok(f) => f,
        Err(message) => {
            eprintln!("dsh: invalid config file {}: {message}", path.display());
            return 2;
        }
    };
    if let Err(e) = store.record(&path, &text, true) {
        eprintln!("dsh: {e}");
        return 1;
    }
    let mut out = format!(
        "trusted {} (sha256 {})\n",
        path.display(),
        dsh::trust::content_hash(&text)
    );
    for line in dsh::trust::describe_unsafe(&file) {
        out.push_str(&format!("  - {line}\n"));
    }
    emit(&out)
}

fn list(store: &dsh::trust::TrustStore) -> u8 {
    let mut out = String::new();
    for (path, trusted) in store.entries() {
        let state = match std::fs::read_to_string(&path) {
            Ok(text) => match store.decision(&path, &text) {
                dsh::trust::Decision::Unknown { .. } => " (changed since)",
                _ => "",
            },
            Err(_) => " (missing)",
        };
        let verdict = if trusted { "trusted" } else { "refused" };
        out.push_str(&crate::sanitize::visible(&format!(
            "{verdict}  {}{state}\n",
            path.display()
        )));
    }
    emit(&out)
}
