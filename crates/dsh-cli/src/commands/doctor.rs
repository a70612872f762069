//! `dsh doctor`: what this machine and this configuration give dsh — the
//! sandbox mechanism and whether it enforces the mode in full, the config
//! files read, the model and the key, the MCP servers. Starts nothing.

use clap::Args;
use dsh::config::ConfigOrigin;
use dsh::SandboxMode;

use crate::app::StackArgs;
use crate::commands::report;

/// Arguments of `dsh doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    #[command(flatten)]
    stack: StackArgs,
}

/// Prints the report; exit 0 when the configured permission mode can be
/// enforced, 1 when commands would be refused (`SANDBOX_UNAVAILABLE`), 2
/// for a configuration that does not resolve.
pub(crate) fn run(args: DoctorArgs) -> u8 {
    let mut stack = args.stack;
    // Looking is harmless: an untrusted project config is reported, not
    // refused.
    stack.untrusted = dsh::ProjectTrust::IgnoreUnsafe;
    let resolved = match crate::app::resolve(&stack) {
        Ok(r) => r,
        Err(e) => return report(&e),
    };
    let support = dsh_sandbox::probe();
    let mode = resolved.permission;
    let network = resolved.bash.network;
    let enforced =
        !mode.confines() || (support.filesystem_full() && (network || support.network_rules()));
    println!("sandbox: {support}");
    println!("  mechanism: Landlock, applied to each command between fork and exec");
    println!("  enforcement: {}", enforcement(&support, mode, network));
    println!(
        "permission: {mode} (from {}), approval {}",
        resolved.permission_source,
        match resolved.approval {
            dsh::approval::ApprovalPolicy::Ask => "ask",
            dsh::approval::ApprovalPolicy::Never => "never",
        }
    );
    println!(
        "  network for commands: {}",
        if network { "allowed" } else { "denied" }
    );
    println!("config files:");
    match dsh::config::load(stack.config.as_deref(), &resolved.cwd) {
        Ok(loaded) => {
            let files: Vec<_> = loaded.base.iter().chain(loaded.project.iter()).collect();
            if files.is_empty() {
                println!("  (none)");
            }
            for f in files {
                let origin = match f.origin {
                    ConfigOrigin::Explicit => "--config",
                    ConfigOrigin::User => "user",
                    ConfigOrigin::Project => "project",
                };
                println!("  {} ({origin})", f.path.display());
            }
        }
        Err(e) => println!("  error: {e}"),
    }
    let key = if std::env::var("DEEPSEEK_API_KEY").is_ok_and(|v| !v.is_empty()) {
        "set (DEEPSEEK_API_KEY)"
    } else if resolved.deepseek.is_some() {
        "set ([deepseek] api_key)"
    } else {
        "not set (only the offline echo model is available)"
    };
    println!("model: {}", resolved.model);
    println!("  DeepSeek key: {key}");
    println!("mcp servers (run outside the sandbox):");
    if resolved.mcp.is_empty() {
        println!("  (none)");
    }
    for s in &resolved.mcp {
        let state = match s.program() {
            _ if !s.enabled => "disabled".to_string(),
            Some(command) if !which(command) => {
                format!("enabled, but `{command}` is not found")
            }
            _ => "enabled".to_string(),
        };
        println!("  {}: {} ({state})", s.name, s.target());
    }
    for w in &resolved.warnings {
        println!("warning: {w}");
    }
    u8::from(!enforced)
}

/// `full`, `partial` or `none`, with what it means for `mode`.
fn enforcement(support: &dsh_sandbox::SandboxSupport, mode: SandboxMode, network: bool) -> String {
    if !support.filesystem_full() {
        return if mode.confines() {
            format!("none: commands are refused under {mode} (SANDBOX_UNAVAILABLE); run with --permission danger-full-access to run them unconfined")
        } else {
            "none (not needed: danger-full-access runs commands unconfined)".to_string()
        };
    }
    if support.network_rules() {
        "full (file-system writes and, with [sandbox] network = false, TCP connect/bind)"
            .to_string()
    } else if network {
        "partial: file-system writes are confined; [sandbox] network = false cannot be enforced on this kernel".to_string()
    } else {
        "partial: [sandbox] network = false needs Landlock ABI 4; commands are refused".to_string()
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
