//! `dsh mcp list`: every configured MCP server, its state and its tools.

use crate::app::{resolve, App};
use crate::cli::{McpArgs, McpCommand};
use crate::commands::block_on;

/// Runs `dsh mcp`; returns the exit code.
pub(crate) fn run(args: McpArgs) -> u8 {
    let McpCommand::List { stack } = args.command;
    // Listing only looks: an untrusted project config's servers are left
    // out with a warning rather than refused.
    let settings = crate::app::settings(&stack, dsh::ProjectTrust::IgnoreUnsafe);
    block_on(async {
        let resolved = match resolve(&settings) {
            Ok(r) => r,
            Err(e) => return crate::commands::report(&e),
        };
        let configured: Vec<(String, bool)> = resolved
            .mcp
            .iter()
            .map(|c| (c.name.clone(), c.enabled))
            .collect();
        let mut app = match App::build(resolved) {
            Ok(a) => a,
            Err(e) => return crate::commands::report(&e),
        };
        for warning in app.take_warnings() {
            crate::output::say!("dsh: {warning}");
        }
        let failures = app.start_mcp().await;
        for (_, message) in &failures {
            crate::output::say!("dsh: {message}");
        }
        let mut out = String::new();
        if configured.is_empty() {
            out.push_str("no MCP servers configured (add [mcp.servers.NAME] to dsh.toml or pass --mcp NAME=COMMAND or --mcp NAME=URL)\n");
        }
        for (name, enabled) in &configured {
            let line = if !enabled {
                format!("{name}\tdisabled")
            } else if let Some((_, msg)) = failures.iter().find(|(n, _)| n == name) {
                format!("{name}\tfailed\t{msg}")
            } else if let Some(server) = app.mcp.iter().find(|s| s.name() == name) {
                let tools = server.tools();
                let checks = app.tools.schemas_with_checks();
                let mut line = format!(
                    "{name}\t{}\t{} tools: {}",
                    server.state(),
                    tools.len(),
                    tools.join(", ")
                );
                // One line per tool: who validates its arguments.
                for tool in &tools {
                    if let Some((_, check)) = checks.iter().find(|(s, _)| &s.name == tool) {
                        line.push_str(&format!("\n  {tool}\targs: {check}"));
                    }
                }
                // And one per tool left out (a name collision, a definition
                // too deep or too large), with why.
                for skipped in server.skipped() {
                    line.push_str(&format!("\n  skipped {}: {}", skipped.tool, skipped.reason));
                }
                line
            } else {
                format!("{name}\tnot started")
            };
            // Tool names and messages come from the server: untrusted.
            out.push_str(&crate::sanitize::visible(&line));
            out.push('\n');
        }
        let written = crate::output::emit(&out);
        app.shutdown().await;
        if failures.is_empty() {
            written
        } else {
            1
        }
    })
}
