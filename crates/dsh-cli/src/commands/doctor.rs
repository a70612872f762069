//! `dsh doctor`: what this machine and this configuration give dsh — the
//! sandbox mechanism and whether it enforces the mode in full, the config
//! files read, the model and the key, the web tools, the MCP servers.
//! Starts nothing.

use dsh::config::ConfigOrigin;
use dsh::SandboxMode;

use crate::cli::DoctorArgs;
use crate::output::emit;
use crate::sanitize::visible;

/// Prints the report, every section whatever fails: exit 0 when the
/// configuration resolves and the configured permission mode can be
/// enforced; 1 when it found a problem (each is listed under `problems:`,
/// configuration errors included) or commands would be refused
/// (`SANDBOX_UNAVAILABLE`).
pub(crate) fn run(args: DoctorArgs) -> u8 {
    let stack = args.stack;
    // Looking is harmless: an untrusted project config is reported, not
    // refused.
    let settings = crate::app::settings(&stack, dsh::ProjectTrust::IgnoreUnsafe);
    let dsh::Diagnosis { resolved, problems } = dsh::diagnose(&settings);
    let mut out = String::new();
    let mut line = |text: &str| {
        out.push_str(&visible(text));
        out.push('\n');
    };
    let support = dsh_sandbox::probe();
    let mode = resolved.permission;
    let layers =
        dsh::sandbox_layers::describe(&resolved.bash, resolved.network_hosts.as_ref(), mode);
    let namespaces = dsh_sandbox::probe_namespaces();
    // Commands run: nothing confined, or every rule asked for is in force.
    let enforced = layers.refused.is_none();
    line(&format!("sandbox: {support}"));
    line(
        "  mechanism: Landlock, a seccomp filter and namespaces (user, mount, PID, IPC; network for \
         [sandbox] network = false or a list), set up for each command between fork and exec",
    );
    line(&format!("  enforcement: {}", enforcement(mode, &layers)));
    line(&format!(
        "  namespaces: {}",
        namespaces_summary(&namespaces, &layers)
    ));
    line(&format!(
        "  scoping: {}{}",
        support.scoping_summary(),
        if mode.confines() {
            ""
        } else {
            " (not applied: danger-full-access runs commands unconfined)"
        }
    ));
    line(&format!("  unix sockets: {}", layers.unix_sockets));
    line(&format!(
        "permission: {mode} (from {}), approval {}",
        resolved.permission_source,
        match resolved.approval {
            dsh::approval::ApprovalPolicy::Ask => "ask",
            dsh::approval::ApprovalPolicy::Never => "never",
        }
    ));
    line(&format!("  network for commands: {}", layers.network));
    if layers.private_tmp {
        line("  /tmp for commands: private to the session");
    }
    line("config files:");
    let (loaded, errors) = dsh::config::load_all(stack.config.as_deref(), &resolved.cwd);
    let files: Vec<_> = loaded.base.iter().chain(loaded.project.iter()).collect();
    if files.is_empty() && errors.is_empty() {
        line("  (none)");
    }
    for e in &errors {
        line(&format!(
            "  {} (not applied: see problems)",
            e.path().display()
        ));
    }
    for f in files {
        let origin = match f.origin {
            ConfigOrigin::Explicit => "--config",
            ConfigOrigin::User => "user",
            ConfigOrigin::Project => "project",
        };
        line(&format!("  {} ({origin})", f.path.display()));
        if f.origin == ConfigOrigin::Project {
            for l in trust_lines(f) {
                line(&format!("    {l}"));
            }
        }
    }
    let key = if std::env::var("DEEPSEEK_API_KEY").is_ok_and(|v| !v.is_empty()) {
        "set (DEEPSEEK_API_KEY)"
    } else if resolved.deepseek.is_some() {
        "set ([deepseek] api_key)"
    } else {
        "not set (only the offline echo model is available)"
    };
    line(&format!("model: {}", resolved.model));
    if let Some(route) = resolved.routes.iter().find(|r| r.name == resolved.model) {
        if let Some(p) = resolved.providers.iter().find(|p| p.name == route.provider) {
            let key = match (&p.api_key_env, p.api_key().is_some()) {
                (Some(var), true) => format!("set ({var})"),
                (Some(var), false) if p.key_required => format!("not set ({var})"),
                _ => "not needed".to_string(),
            };
            line(&format!(
                "  provider: {} ({}, {}), sent as {:?}; key: {key}",
                p.name,
                p.kind.as_str(),
                p.base_url,
                route.wire
            ));
        }
    }
    line(&format!("  DeepSeek key: {key}"));
    line("web tools:");
    line(&format!("  web_fetch: {}", resolved.web.fetch_status));
    line(&format!("  web_search: {}", resolved.web.search_status));
    line("mcp servers (run outside the sandbox):");
    if resolved.mcp.is_empty() {
        line("  (none)");
    }
    for s in &resolved.mcp {
        let state = match s.program() {
            _ if !s.enabled => "disabled".to_string(),
            Some(command) if !which(command) => {
                format!("enabled, but `{command}` is not found")
            }
            _ => "enabled".to_string(),
        };
        line(&format!("  {}: {} ({state})", s.name, s.target()));
    }
    for w in &resolved.warnings {
        line(&format!("warning: {w}"));
    }
    if !problems.is_empty() {
        line(&format!(
            "problems ({}; the sections above show what applies without them):",
            problems.len()
        ));
        for p in &problems {
            line(&format!("  - {p}"));
        }
    }
    let code = emit(&out);
    if code != 0 {
        return code;
    }
    if !problems.is_empty() {
        crate::output::say!(
            "dsh: doctor found {} configuration problem{}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" }
        );
    }
    u8::from(!enforced || !problems.is_empty())
}

/// The trust state of a project config, for the report: nothing to decide,
/// trusted, refused or undecided, with what changed since the decision.
fn trust_lines(cfg: &dsh::config::ConfigFile) -> Vec<String> {
    use dsh::trust::Decision;
    let keys = cfg.file.unsafe_keys();
    if keys.is_empty() {
        return vec!["trust: not needed (only harmless keys)".into()];
    }
    let store = match dsh::trust::TrustStore::open() {
        Ok(s) => s,
        Err(e) => return vec![format!("trust: unknown ({e})")],
    };
    let mut lines = vec![match store.decision(cfg) {
        Decision::Trusted => "trust: trusted".to_string(),
        Decision::Refused => format!("trust: refused (ignored: {})", keys.join(", ")),
        Decision::Unknown { changed: false } => format!(
            "trust: undecided (ignored until `dsh trust`: {})",
            keys.join(", ")
        ),
        Decision::Unknown { changed: true } => format!(
            "trust: undecided, changed since you decided (ignored until `dsh trust`: {})",
            keys.join(", ")
        ),
    }];
    lines.extend(store.changes(cfg).iter().map(|c| format!("  changed: {c}")));
    lines
}

/// `full`, `partial` or `none`, with what it means for `mode`: full is
/// Landlock with seccomp and the namespace layer; either alone is partial.
fn enforcement(mode: SandboxMode, layers: &dsh::sandbox_layers::Layers) -> String {
    if !mode.confines() {
        return "none (not needed: danger-full-access runs commands unconfined)".to_string();
    }
    if let Some(why) = &layers.refused {
        return format!(
            "none: commands are refused under {mode} (SANDBOX_UNAVAILABLE: {why}); run with --permission danger-full-access to run them unconfined"
        );
    }
    if layers.namespaces_active {
        "full (Landlock and seccomp, inside user, mount and PID namespaces)".to_string()
    } else {
        format!(
            "partial: Landlock and seccomp alone (namespace layer {})",
            layers.namespaces
        )
    }
}

/// One line for `namespaces:`: what the layer gives and whether it is in
/// force, or why not.
fn namespaces_summary(
    support: &dsh_sandbox::NamespaceSupport,
    layers: &dsh::sandbox_layers::Layers,
) -> String {
    let net = match &support.network {
        Ok(()) => "network namespaces available".to_string(),
        Err(why) => format!("network namespaces unavailable ({why})"),
    };
    match &support.layer {
        Err(why) => format!(
            "unavailable ({why}); [sandbox] namespaces = \"{}\"",
            layers.setting
        ),
        Ok(()) => format!(
            "{} ([sandbox] namespaces = \"{}\"; read-only view of /, writable roots bound at their paths, own process tree and /proc; {net})",
            layers.namespaces, layers.setting
        ),
    }
}

/// Whether `command` names an executable (a path, or a name on `PATH`).
fn which(command: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        return runnable(std::path::Path::new(command));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| runnable(&dir.join(command))))
}
