//! [`McpError`] and the stable error codes of MCP tool results.

/// Stable codes of [`McpError`] and of the error results MCP tools return
/// (re-exported from the one table in `dsh_protocol::codes`).
pub mod codes {
    pub use dsh_protocol::codes::{
        MCP_CALL_FAILED, MCP_INVALID_CONFIG, MCP_SERVER_EXITED, MCP_SERVER_UNAVAILABLE,
        MCP_START_FAILED, MCP_TOOL_ERROR, RESULT_TOO_LARGE, TIMEOUT,
    };
}

/// Why an MCP server could not be configured or started.
///
/// Every message names the server and, for start failures, the command line
/// or the URL, so a user with several servers sees which one broke and how
/// it was reached. Header values never appear in a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// Spawning or connecting, the `initialize` handshake or the first
    /// `tools/list` failed, or a header names an unset environment variable
    /// (`MCP_START_FAILED`). `reason` includes the last lines a stdio server
    /// wrote to stderr when there were any.
    #[error("MCP server \"{server}\" ({target}) failed to start: {reason}")]
    StartFailed {
        /// The server's configured name.
        server: String,
        /// `command: <command line, shell-quoted>` or `url: <url>`
        /// ([`McpTransport::describe`](crate::McpTransport::describe)).
        target: String,
        /// What went wrong.
        reason: String,
    },
    /// A configuration entry or `--mcp` flag is malformed (`MCP_INVALID_CONFIG`).
    #[error("invalid MCP server configuration {input:?}: {reason}")]
    InvalidConfig {
        /// The offending input (the flag value, or the server name).
        input: String,
        /// What is wrong and what to write instead.
        reason: String,
    },
}

impl McpError {
    pub(crate) fn invalid(input: impl Into<String>, reason: impl Into<String>) -> Self {
        McpError::InvalidConfig {
            input: input.into(),
            reason: reason.into(),
        }
    }
}

impl dsh_kernel::ErrorCode for McpError {
    /// `MCP_START_FAILED` or `MCP_INVALID_CONFIG`.
    fn code(&self) -> &str {
        match self {
            McpError::StartFailed { .. } => codes::MCP_START_FAILED,
            McpError::InvalidConfig { .. } => codes::MCP_INVALID_CONFIG,
        }
    }
}
