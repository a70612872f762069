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
        #[command(flatten)]
        stack: StackArgs,
    },
}

/// Runs `dsh tools`; returns the exit code.
pub(crate) fn run(args: ToolsArgs) -> u8 {
    let ToolsCommand::List { mut stack } = args.command;
    // Listing only looks: an untrusted project config's MCP servers are not
    // started (a warning says so) rather than refused.
    stack.untrusted = dsh::ProjectTrust::IgnoreUnsafe;
    block_on(async {
        let app = match start_app(&stack).await {
            Ok(app) => app,
            Err(code) => return code,
        };
        let schemas = app.tools.schemas();
        let text = serde_json::to_string_pretty(&schemas).unwrap_or_else(|_| "[]".into());
        let code = crate::output::emit(&format!("{}\n", crate::sanitize::json_visible(&text)));
        app.shutdown().await;
        code
    })
}
