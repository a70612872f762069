//! `echo`: returns its text. The offline model's `echo <text>` calls it; it
//! is the smallest end-to-end check of the tool loop.

use std::sync::Arc;

use dsh_llm::ContentBlock;
use dsh_tools::{define_tool, Tool, ToolArgs, ToolContext, ToolError};
use serde::{Deserialize, Serialize};

/// Arguments of the built-in `echo` tool.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
pub struct EchoArgs {
    /// The text to echo back.
    pub text: String,
}

/// The `echo` tool.
pub fn echo_tool() -> Arc<dyn Tool> {
    define_tool(
        "echo",
        "Echo the given text back. Useful to test the tool loop.",
        |args: EchoArgs, _ctx: ToolContext| async move {
            Ok::<_, ToolError>(vec![ContentBlock::text(args.text)])
        },
    )
    .concurrency_safe()
    .into_arc()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_args_do_not_drift() {
        dsh_tools::testing::assert_no_drift::<EchoArgs>(256);
    }
}
