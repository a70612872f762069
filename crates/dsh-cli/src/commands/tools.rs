//! `dsh tools list`: the tool schemas exactly as the model is shown them.

use clap::{Args, Subcommand};

use crate::app::StackArgs;
use crate::commands::{block_on, start_app};

/// Arguments of `dsh tools`.
#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    #[command(subcommand)]
    command: ToolsCommand,
}

#[derive(Debug, Subcommand)]
enum ToolsCommand {
    /// Print the tool schemas (JSON) the model would be shown.
    List {
        /// Each schema with who checks its arguments: `"validation"` is
        /// `dsh`, `local` (an MCP server with validate_args), `server`, or
        /// `unsupported: <keyword at path>` (a raw schema dsh cannot enforce).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        stack: StackArgs,
    },
}

/// Runs `dsh tools`; returns the exit code.
pub(crate) fn run(args: ToolsArgs) -> u8 {
    let ToolsCommand::List { json, mut stack } = args.command;
    // Listing only looks: an untrusted project config's MCP servers are not
    // started (a warning says so) rather than refused.
    stack.untrusted = dsh::ProjectTrust::IgnoreUnsafe;
    block_on(async {
        let app = match start_app(&stack).await {
            Ok(app) => app,
            Err(code) => return code,
        };
        let text = if json {
            let listed: Vec<serde_json::Value> = app
                .tools
                .schemas_with_checks()
                .into_iter()
                .map(|(schema, check)| {
                    let mut entry = serde_json::to_value(&schema).unwrap_or_default();
                    if let Some(map) = entry.as_object_mut() {
                        map.insert("validation".into(), check.to_string().into());
                    }
                    entry
                })
                .collect();
            serde_json::to_string_pretty(&listed)
        } else {
            serde_json::to_string_pretty(&app.tools.schemas())
        }
        .unwrap_or_else(|_| "[]".into());
        let code = crate::output::emit(&format!("{}\n", crate::sanitize::json_visible(&text)));
        app.shutdown().await;
        code
    })
}
