//! What the MCP server tests share: the fixture binary, a bound on every
//! wait, a call through the registry, polling a server's state.
#![allow(dead_code)] // each test file uses part of it

use std::time::Duration;

use dsh_mcp::{McpServer, McpServerState};
use dsh_tools::{CallEnv, ToolCall, ToolRegistry, ToolResult};

/// No test waits longer than this for anything.
pub(crate) const HANG: Duration = Duration::from_secs(20);

/// The fixture server (`src/bin/dsh-mcp-fixture.rs`).
pub(crate) const FIXTURE: &str = env!("CARGO_BIN_EXE_dsh-mcp-fixture");

/// `fut`, failing the test after [`HANG`] with `what` it waited for.
pub(crate) async fn guard<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(HANG, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// Calls tool `name` with `args` through `registry` (bounded by [`HANG`]).
pub(crate) async fn exec(registry: &ToolRegistry, name: &str, args: &str) -> ToolResult {
    guard(
        name,
        registry.execute(&ToolCall::new("c1", name, args), CallEnv::default()),
    )
    .await
}

/// Polls the server's state (every 10 ms, up to [`HANG`]) until `want`
/// holds.
pub(crate) async fn until_state(
    server: &McpServer,
    what: &str,
    want: impl Fn(&McpServerState) -> bool,
) {
    guard(what, async {
        while !want(&server.state()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}
