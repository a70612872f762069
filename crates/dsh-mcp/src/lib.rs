//! MCP servers as tool sources: each server's tools registered raw in the
//! [`ToolRegistry`](dsh_tools::ToolRegistry), over child-process stdio or
//! the streamable HTTP transport.
//!
//! Start reading at [`McpServer::start`]: it runs a server described by an
//! [`McpServerConfig`] (from code, from a `dsh.toml` [`McpServerSpec`], or
//! from a `--mcp 'NAME=COMMAND ARGS…'` / `--mcp 'NAME=URL'` flag via
//! [`parse_mcp_flag`]) — a child process ([`McpTransport::Stdio`]) or an
//! HTTP endpoint with optional headers whose `${VAR}` come from the
//! environment ([`McpTransport::Http`]) — runs the MCP handshake with the
//! official Rust SDK (`rmcp`, client side), and registers each server tool
//! as `mcp__<server>__<tool>` ([`tool_name`]; `tool_prefix = ""` gives the
//! older `<server>__<tool>`). [`start_all`] starts several servers
//! concurrently; one failing does not affect the others.
//!
//! The boundary stays the harness's: the model's arguments are forwarded
//! as-is (the server validates them — the JSON Schema is shown to the model
//! untouched), but unparsable JSON is `INVALID_JSON` and a non-object is
//! `INVALID_ARGS`. Every server-side failure is an error result the model
//! can read ([`codes`]): `isError` → `MCP_TOOL_ERROR`, a JSON-RPC error →
//! `MCP_CALL_FAILED`, the per-call timeout → `TIMEOUT`, a response above
//! `max_message_bytes` → `RESULT_TOO_LARGE` (never buffered whole), the
//! call's cancel token → `ABORTED` (the server is sent
//! `notifications/cancelled`). A server whose connection drops (a crash, a
//! refused HTTP request) is restarted following its [`RestartPolicy`] (500
//! ms doubling to 30 s, at most 10 attempts) with its tools kept registered;
//! calls meanwhile get `MCP_SERVER_UNAVAILABLE`, and once it is back its
//! tools are re-synced. After the last failed attempt its tools are
//! unregistered and calls get `MCP_SERVER_EXITED`. A crashing or hanging
//! server never hangs the agent.
//!
//! What this crate does not do: read `dsh.toml` or parse CLI flags beyond the
//! `--mcp` value (the CLI does), listen for connections, speak the older
//! HTTP+SSE transport, or OAuth; resources, prompts and sampling are not
//! used.
//!
//! ```no_run
//! # async fn demo() -> Result<(), dsh_mcp::McpError> {
//! use std::sync::Arc;
//! use dsh_tools::ToolRegistry;
//!
//! let registry = Arc::new(ToolRegistry::new());
//! let config = dsh_mcp::parse_mcp_flag("files=npx -y @modelcontextprotocol/server-filesystem .")?;
//! assert_eq!(config.target(), "npx -y @modelcontextprotocol/server-filesystem .");
//! let server = dsh_mcp::McpServer::start(config, &registry).await?;
//! assert!(registry.names().iter().all(|n| n.starts_with("mcp__files__")));
//! server.shutdown().await;
//!
//! // Over HTTP, with a token from the environment.
//! let remote = dsh_mcp::McpServerConfig::http("gh", "https://api.githubcopilot.com/mcp/")
//!     .header("Authorization", "Bearer ${GITHUB_TOKEN}");
//! let server = dsh_mcp::McpServer::start(remote, &registry).await?;
//! server.shutdown().await;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod config;
mod connection;
mod content;
mod depth;
mod error;
mod frames;
mod naming;
mod server;
mod tools;

pub use config::{
    parse_mcp_flag, split_words, McpServerConfig, McpServerSpec, McpTransport, RestartPolicy,
    DEFAULT_TIMEOUT, DEFAULT_TOOL_PREFIX,
};
pub use error::{codes, McpError};
pub use frames::DEFAULT_MAX_MESSAGE_BYTES;
pub use naming::{tool_name, MAX_TOOL_NAME_LEN};
pub use server::{start_all, start_each, McpServer, McpServerState, SkippedTool};
