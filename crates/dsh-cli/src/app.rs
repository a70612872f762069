//! The command line's view of the stack: [`StackArgs`] (the flags every
//! agent command shares, defined in [`crate::cli`]) mapped onto the
//! library's [`dsh::Settings`] by [`settings`].

pub(crate) use dsh::{Resolved, Stack as App, StackError};

use crate::cli::PermissionMode;
pub(crate) use crate::cli::StackArgs;

/// The library settings the agent flags stand for. `untrusted` is what
/// the command does with an untrusted project config (refuse, ignore its
/// unsafe keys, or what the user answered [`ask_about_project`]);
/// `--trust-project` overrides it.
pub(crate) fn settings(args: &StackArgs, untrusted: dsh::ProjectTrust) -> dsh::Settings {
    dsh::Settings {
        model: args.model.clone(),
        session_dir: args.session_dir.clone(),
        system_prompt: args.system_prompt.clone(),
        config: args.config.clone(),
        mcp: args.mcp.clone(),
        cwd: None,
        strict_tools: args.strict_tools,
        tools: args.tools.clone(),
        permission: args.permission.map(sandbox_mode),
        project_trust: if args.trust_project {
            dsh::ProjectTrust::Trust
        } else {
            untrusted
        },
    }
}

/// The library's mode for `--permission`'s.
fn sandbox_mode(mode: PermissionMode) -> dsh::SandboxMode {
    match mode {
        PermissionMode::ReadOnly => dsh::SandboxMode::ReadOnly,
        PermissionMode::WorkspaceWrite => dsh::SandboxMode::WorkspaceWrite,
        PermissionMode::DangerFullAccess => dsh::SandboxMode::DangerFullAccess,
    }
}

/// Resolves the settings, the environment and `dsh.toml`.
///
/// # Errors
/// As [`dsh::resolve`].
pub(crate) fn resolve(settings: &dsh::Settings) -> Result<Resolved, StackError> {
    dsh::resolve(settings)
}

/// Asks on the terminal whether to trust an undecided project config that
/// sets unsafe keys, records the answer and returns what this run does
/// with the config: [`dsh::ProjectTrust::Trust`] or
/// [`dsh::ProjectTrust::IgnoreUnsafe`] as answered. Asks nothing and
/// returns [`dsh::ProjectTrust::Refuse`] (the default) without a terminal
/// on stdin and stderr, with `--config` or `--trust-project`, or when the
/// config is harmless or already decided (resolving then refuses, or
/// applies the harmless keys, as the decision says).
pub(crate) fn ask_about_project(stack: &StackArgs) -> dsh::ProjectTrust {
    use std::io::{BufRead, IsTerminal, Write};
    let unasked = dsh::ProjectTrust::Refuse;
    if stack.trust_project
        || stack.config.is_some()
        || !std::io::stdin().is_terminal()
        || !std::io::stderr().is_terminal()
    {
        return unasked;
    }
    let Ok(cwd) = std::env::current_dir() else {
        return unasked;
    };
    // Errors surface when the command resolves the configuration.
    let Ok(dsh::config::LoadedConfig {
        project: Some(project),
        ..
    }) = dsh::config::load(None, &cwd)
    else {
        return unasked;
    };
    if project.file.unsafe_keys().is_empty() {
        return unasked;
    }
    let Ok(mut store) = dsh::trust::TrustStore::open() else {
        return unasked;
    };
    let changed = match store.decision(&project) {
        dsh::trust::Decision::Unknown { changed } => changed,
        _ => return unasked,
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
    if yes {
        dsh::ProjectTrust::Trust
    } else {
        dsh::ProjectTrust::IgnoreUnsafe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_permission_mode_maps_to_the_library_mode_of_its_name() {
        let modes: Vec<dsh::SandboxMode> =
            PermissionMode::ALL.into_iter().map(sandbox_mode).collect();
        assert_eq!(modes, dsh::SandboxMode::ALL);
        for mode in PermissionMode::ALL {
            assert_eq!(mode.as_str(), sandbox_mode(mode).as_str());
            assert_eq!(mode.as_str().parse::<PermissionMode>(), Ok(mode));
        }
        // The words of the library's own error (DSH_PERMISSION, dsh.toml).
        assert_eq!(
            "off".parse::<PermissionMode>().unwrap_err(),
            "off".parse::<dsh::SandboxMode>().unwrap_err()
        );
    }
}
