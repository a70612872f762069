//! [`McpError`] and the stable error codes of MCP tool results.

/// Stable codes: of [`McpError`] and of the error results MCP tools return.
pub mod codes {
    /// A server could not be spawned, initialized or listed.
    pub const MCP_START_FAILED: &str = "MCP_START_FAILED";
    /// A `--mcp` flag or a `[mcp.servers.NAME]` entry is malformed.
    pub const MCP_INVALID_CONFIG: &str = "MCP_INVALID_CONFIG";
    /// The tool ran and reported an error (`isError: true` in its result).
    pub const MCP_TOOL_ERROR: &str = "MCP_TOOL_ERROR";
    /// The server answered the call with a JSON-RPC error (unknown tool,
    /// invalid params, internal error, …).
    pub const MCP_CALL_FAILED: &str = "MCP_CALL_FAILED";
    /// The server exited (or closed its stdio) before or during the call.
    pub const MCP_SERVER_EXITED: &str = "MCP_SERVER_EXITED";
    /// The call did not finish within the server's timeout; the server was
    /// sent `notifications/cancelled`.
    pub const TIMEOUT: &str = "TIMEOUT";
}

/// Why an MCP server could not be configured or started.
///
/// Every message names the server and, for start failures, the command line,
/// so a user with several servers sees which one broke and how it was run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// Spawning, the `initialize` handshake or the first `tools/list` failed
    /// (`MCP_START_FAILED`). `reason` includes the last lines the server
    /// wrote to stderr when there were any.
    #[error("MCP server \"{server}\" (command: {command}) failed to start: {reason}")]
    StartFailed {
        /// The server's configured name.
        server: String,
        /// The command line, shell-quoted.
        command: String,
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
    /// The stable code: `MCP_START_FAILED` or `MCP_INVALID_CONFIG`.
    pub fn code(&self) -> &'static str {
        match self {
            McpError::StartFailed { .. } => codes::MCP_START_FAILED,
            McpError::InvalidConfig { .. } => codes::MCP_INVALID_CONFIG,
        }
    }

    pub(crate) fn invalid(input: impl Into<String>, reason: impl Into<String>) -> Self {
        McpError::InvalidConfig {
            input: input.into(),
            reason: reason.into(),
        }
    }
}

impl dsh_kernel::ErrorCode for McpError {
    fn code(&self) -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed(McpError::code(self))
    }
}
