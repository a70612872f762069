//! MCP servers as tool sources: one stdio MCP server → its tools registered
//! raw in the [`ToolRegistry`](dsh_tools::ToolRegistry).
//!
//! Start reading at [`McpServer::start`]: it spawns a server described by an
//! [`McpServerConfig`] (from code, from a `dsh.toml` [`McpServerSpec`], or
//! from a `--mcp 'NAME=COMMAND ARGS…'` flag via [`parse_mcp_flag`]), runs the
//! MCP handshake with the official Rust SDK (`rmcp`), and registers each
//! server tool as `<server>__<tool>`. [`start_all`] starts several servers
//! concurrently; one failing does not affect the others.
//!
//! The boundary stays the harness's: the model's arguments are forwarded
//! as-is (the server validates them — the JSON Schema is shown to the model
//! untouched), but unparsable JSON is `INVALID_JSON` and a non-object is
//! `INVALID_ARGS`. Every server-side failure is an error result the model
//! can read ([`codes`]): `isError` → `MCP_TOOL_ERROR`, a JSON-RPC error →
//! `MCP_CALL_FAILED`, the per-call timeout → `TIMEOUT`, a response above
//! `max_message_bytes` → `RESULT_TOO_LARGE` (never buffered whole), the call's cancel
//! token → `ABORTED` (the server is sent `notifications/cancelled`), a server
//! that exits or crashes → `MCP_SERVER_EXITED` (and its tools are
//! unregistered). A crashing or hanging server never hangs the agent.
//!
//! What this crate does not do: read `dsh.toml` or parse CLI flags beyond the
//! `--mcp` value (the CLI does), restart crashed servers, or speak the HTTP
//! transports; resources, prompts and sampling are not used.
//!
//! ```no_run
//! # async fn demo() -> Result<(), dsh_mcp::McpError> {
//! use std::sync::Arc;
//! use dsh_tools::ToolRegistry;
//!
//! let registry = Arc::new(ToolRegistry::new());
//! let config = dsh_mcp::parse_mcp_flag("files=npx -y @modelcontextprotocol/server-filesystem .")?;
//! assert_eq!(config.args, ["-y", "@modelcontextprotocol/server-filesystem", "."]);
//! let server = dsh_mcp::McpServer::start(config, &registry).await?;
//! assert!(registry.names().iter().all(|n| n.starts_with("files__")));
//! server.shutdown().await;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod config;
mod content;
mod error;
mod frames;
mod naming;
mod server;
mod tools;

pub use config::{parse_mcp_flag, split_words, McpServerConfig, McpServerSpec, DEFAULT_TIMEOUT};
pub use error::{codes, McpError};
pub use frames::DEFAULT_MAX_MESSAGE_BYTES;
pub use naming::{tool_name, MAX_TOOL_NAME_LEN};
pub use server::{start_all, start_each, McpServer, McpServerState, SkippedTool};
