//! [`McpServer`]: one MCP server, its current connection, the tools it has
//! registered, and the supervisor that restarts it when its connection
//! drops.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use dsh_kernel::Registration;
use dsh_llm::ToolSchema;
use dsh_tools::{ToolError, ToolRegistry};
use tokio_util::sync::CancellationToken;

use crate::config::{McpServerConfig, McpTransport};
use crate::connection::{connect, Ending, Link, Live};
use crate::depth::Refusals;
use crate::error::{codes, McpError};
use crate::frames::Oversize;
use crate::tools::{resync_loop, sync_tools};

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServerState {
    /// Spawned or connecting, handshake or first listing under way.
    Starting,
    /// Initialized; its tools are registered.
    Running,
    /// Its connection dropped (a crash, a closed pipe, a failed HTTP
    /// request) and it is being started again: `attempt` (from 1) is the
    /// attempt waited for or under way. Its tools stay registered; calls
    /// fail at once with `MCP_SERVER_UNAVAILABLE`.
    Restarting {
        /// The attempt waited for or under way, from 1.
        attempt: u32,
        /// The most attempts that will be made.
        of: u32,
    },
    /// The process ended or the connection closed for good (shutdown, or a
    /// drop with restarts off); its tools are unregistered. The exit code
    /// is `None` when a signal ended it or for an HTTP server.
    Exited(Option<i32>),
    /// Start-up failed, or every restart attempt did (the message says
    /// why); its tools are unregistered.
    Failed(String),
}

impl fmt::Display for McpServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpServerState::Starting => f.write_str("starting"),
            McpServerState::Running => f.write_str("running"),
            McpServerState::Restarting { attempt, of } => {
                write!(f, "restarting (attempt {attempt} of {of})")
            }
            McpServerState::Exited(Some(code)) => write!(f, "exited (code {code})"),
            McpServerState::Exited(None) => f.write_str("exited"),
            McpServerState::Failed(msg) => write!(f, "failed: {msg}"),
        }
    }
}

/// A server tool that was not registered, and why: a name collision, or a
/// definition nested too deep or too large to offer (refused before it was
/// parsed, so the rest of the listing still registers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedTool {
    /// The tool's name on the server.
    pub tool: String,
    /// The name it would have had in the registry.
    pub name: String,
    /// Why it was skipped.
    pub reason: String,
}

/// One MCP server whose tools are registered raw in a [`ToolRegistry`] as
/// `<prefix>__<server>__<tool>` (see [`tool_name`](crate::tool_name)).
///
/// Calls through the registry forward the model's arguments untouched (the
/// server validates them; the harness only rejects unparsable JSON and
/// non-objects). Every failure is an error result the model can read:
/// `MCP_TOOL_ERROR` (`isError`), `MCP_CALL_FAILED` (JSON-RPC error),
/// `TIMEOUT`, `ABORTED`, `RESULT_TOO_LARGE`, `MCP_SERVER_UNAVAILABLE`,
/// `MCP_SERVER_EXITED`.
///
/// When the connection drops — a stdio server exits or closes its stdio,
/// an HTTP request is refused or its stream breaks — and no shutdown was
/// asked for, the server is started again following its
/// [`RestartPolicy`](crate::RestartPolicy) (state
/// [`McpServerState::Restarting`]): its tools stay registered, calls in
/// flight and calls meanwhile end with `MCP_SERVER_UNAVAILABLE`, and once it
/// is back its tools are re-synced. After the last failed attempt the tools
/// are unregistered (`tools/change` fires) and calls end with
/// `MCP_SERVER_EXITED`. `notifications/tools/list_changed` re-syncs the
/// registered tools. Dropping the handle stops the server in the
/// background; prefer [`McpServer::shutdown`], which waits.
pub struct McpServer {
    shared: Arc<Shared>,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.shared.config.name)
            .field("state", &self.state())
            .field("tools", &self.tools())
            .finish()
    }
}

impl McpServer {
    /// Starts the server — a stdio server is spawned (environment: its
    /// `env` plus `PATH`/`HOME`, in its own process group); an HTTP server
    /// is connected to, with its headers' `${VAR}` expanded from dsh's
    /// environment — runs the `initialize` handshake, lists its tools
    /// (following pagination) and registers each in `registry`. Start-up is
    /// bounded by `config.timeout`; a failed start is not retried.
    ///
    /// Tools whose name collides (two server tools that sanitise alike, or a
    /// tool already in the registry), and tools whose definition nests
    /// deeper than 64 levels or takes more than 1 MiB (refused on the raw
    /// bytes, before parsing, so the rest of the listing goes on at once),
    /// are skipped with a warning naming the tool and why, and listed by
    /// [`McpServer::skipped`]. A message nested too deep to parse at all
    /// fails its request at once instead of leaving it to time out.
    ///
    /// # Errors
    /// `MCP_START_FAILED` naming the server and the command line or URL,
    /// with the cause (spawn error, exit status, HTTP error, handshake
    /// error, an unset header variable, timeout) and the last lines of a
    /// stdio server's stderr. The child is gone when this returns an error.
    pub async fn start(
        config: McpServerConfig,
        registry: &Arc<ToolRegistry>,
    ) -> Result<McpServer, McpError> {
        let shared = Arc::new(Shared {
            config,
            registry: Arc::downgrade(registry),
            state: Mutex::new(McpServerState::Starting),
            mounted: Mutex::new(Vec::new()),
            skipped: Mutex::new(Vec::new()),
            link: Mutex::new(None),
            exited: CancellationToken::new(),
            exit_description: Mutex::new(None),
            shutdown: CancellationToken::new(),
            done: CancellationToken::new(),
            stderr_tail: Mutex::new(VecDeque::new()),
            oversize: Arc::default(),
            refusals: Arc::default(),
            pid: Mutex::new(None),
        });
        let (live, tools) = match connect(&shared).await {
            Ok(ok) => ok,
            Err(reason) => {
                *lock(&shared.state) = McpServerState::Failed(reason.clone());
                return Err(McpError::StartFailed {
                    server: shared.config.name.clone(),
                    target: shared.config.transport.describe(),
                    reason,
                });
            }
        };
        shared.go_live(&live, tools);
        tracing::info!(
            target: "dsh_mcp",
            server = %shared.config.name,
            pid = shared.pid().unwrap_or_default(),
            tools = ?shared.tool_names(),
            "MCP server started"
        );
        tokio::spawn(supervise(shared.clone(), live));
        Ok(McpServer { shared })
    }

    /// The server's configured name.
    pub fn name(&self) -> &str {
        &self.shared.config.name
    }

    /// The configuration it was started with.
    pub fn config(&self) -> &McpServerConfig {
        &self.shared.config
    }

    /// The current state.
    pub fn state(&self) -> McpServerState {
        lock(&self.shared.state).clone()
    }

    /// The registry names of its registered tools, in registration order
    /// (kept while restarting; empty once it exited).
    pub fn tools(&self) -> Vec<String> {
        self.shared.tool_names()
    }

    /// Server tools that were not registered, with why (name collisions,
    /// definitions too deep or too large), as of the last listing.
    pub fn skipped(&self) -> Vec<SkippedTool> {
        lock(&self.shared.skipped).clone()
    }

    /// The process id of a stdio server's current process (its process
    /// group id too); `None` for an HTTP server.
    pub fn pid(&self) -> Option<u32> {
        self.shared.pid()
    }

    /// Stops the server: a stdio server's stdin is closed, then after a
    /// grace period its process group gets `SIGTERM`, then `SIGKILL`; an
    /// HTTP server's session is closed. A restart waiting or under way is
    /// ended at once (no process is left). Unregisters its tools; returns
    /// when the process has been reaped. Idempotent; also returns at once
    /// for a server that already exited.
    pub async fn shutdown(&self) {
        self.shared.shutdown.cancel();
        self.shared.done.cancelled().await;
    }

    /// Resolves when the server is gone for good and its tools are
    /// unregistered (shutdown, a drop with restarts off, or every restart
    /// attempt failed).
    pub async fn exited(&self) {
        self.shared.done.cancelled().await;
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        // Stops the server in the background (the supervisor task kills
        // and reaps it and unregisters the tools).
        self.shared.shutdown.cancel();
    }
}

/// Starts every enabled server concurrently, yielding each `(name, result)`
/// as it completes (so a caller that is cancelled midway keeps the servers
/// already started, and dropping the stream kills those still starting).
pub fn start_each<'a>(
    configs: impl IntoIterator<Item = McpServerConfig>,
    registry: &'a Arc<ToolRegistry>,
) -> impl futures_util::Stream<Item = (String, Result<McpServer, McpError>)> + 'a {
    configs
        .into_iter()
        .filter(|c| c.enabled)
        .map(|config| {
            let name = config.name.clone();
            async move { (name, McpServer::start(config, registry).await) }
        })
        .collect::<futures_util::stream::FuturesUnordered<_>>()
}

/// Starts every enabled server concurrently; one failing does not affect
/// the others. Returns `(name, result)` in `configs` order; disabled
/// servers are left out.
pub async fn start_all(
    configs: impl IntoIterator<Item = McpServerConfig>,
    registry: &Arc<ToolRegistry>,
) -> Vec<(String, Result<McpServer, McpError>)> {
    let starts = configs.into_iter().filter(|c| c.enabled).map(|config| {
        let name = config.name.clone();
        async move { (name, McpServer::start(config, registry).await) }
    });
    futures_util::future::join_all(starts).await
}

pub(crate) struct Shared {
    pub(crate) config: McpServerConfig,
    pub(crate) registry: Weak<ToolRegistry>,
    pub(crate) state: Mutex<McpServerState>,
    pub(crate) mounted: Mutex<Vec<Mounted>>,
    pub(crate) skipped: Mutex<Vec<SkippedTool>>,
    /// The current connection; `None` while restarting and once exited.
    pub(crate) link: Mutex<Option<Arc<Link>>>,
    /// Cancelled when the server is gone for good (no restart follows).
    pub(crate) exited: CancellationToken,
    /// How the last connection ended ("exited with code 3"), set before
    /// its link's `ended` is cancelled.
    pub(crate) exit_description: Mutex<Option<String>>,
    /// Asks the supervisor to stop the server.
    pub(crate) shutdown: CancellationToken,
    /// Cancelled when the supervisor has reaped the child and unregistered
    /// the tools.
    pub(crate) done: CancellationToken,
    pub(crate) stderr_tail: Mutex<VecDeque<String>>,
    /// Too-large messages dropped without a request id.
    pub(crate) oversize: Arc<Oversize>,
    /// Tools the message filter left out of a listing (too deep or too
    /// large), until the listing is synced.
    pub(crate) refusals: Arc<Refusals>,
    /// The current process of a stdio server.
    pub(crate) pid: Mutex<Option<u32>>,
}

/// One registered tool.
pub(crate) struct Mounted {
    pub(crate) remote: String,
    pub(crate) name: String,
    pub(crate) schema: ToolSchema,
    /// The server marks the tool `readOnlyHint: true`: its calls run
    /// alongside other safe calls.
    pub(crate) read_only: bool,
    pub(crate) registration: Registration,
}

impl Shared {
    pub(crate) fn tool_names(&self) -> Vec<String> {
        lock(&self.mounted).iter().map(|m| m.name.clone()).collect()
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        *lock(&self.pid)
    }

    pub(crate) fn is_http(&self) -> bool {
        matches!(self.config.transport, McpTransport::Http { .. })
    }

    pub(crate) fn stderr_tail(&self) -> String {
        lock(&self.stderr_tail)
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The current connection, when there is one.
    pub(crate) fn link(&self) -> Option<Arc<Link>> {
        lock(&self.link).clone()
    }

    /// Makes `live` the current connection: state `Running`, tools synced
    /// with `tools`, a re-sync task for `tools/list_changed`.
    fn go_live(self: &Arc<Self>, live: &Live, tools: Vec<rmcp::model::Tool>) {
        *lock(&self.link) = Some(live.link.clone());
        *lock(&self.state) = McpServerState::Running;
        sync_tools(self, tools);
        tokio::spawn(resync_loop(
            self.clone(),
            live.link.clone(),
            live.resync.clone(),
        ));
    }

    fn how_it_ended(&self) -> String {
        lock(&self.exit_description)
            .clone()
            .unwrap_or_else(|| "closed its connection".to_string())
    }

    /// `MCP_SERVER_EXITED`: the server is gone for good.
    pub(crate) fn exited_error(&self) -> ToolError {
        ToolError::new(
            codes::MCP_SERVER_EXITED,
            format!(
                "MCP server \"{}\" {}; its tools are no longer available",
                self.config.name,
                self.how_it_ended()
            ),
        )
    }

    /// What a call gets when the connection it used is gone:
    /// `MCP_SERVER_UNAVAILABLE` while a restart is coming or done,
    /// `MCP_SERVER_EXITED` when none will happen.
    pub(crate) fn dropped_error(&self) -> ToolError {
        let state = lock(&self.state).clone();
        let name = &self.config.name;
        match state {
            McpServerState::Restarting { attempt, of } => ToolError::new(
                codes::MCP_SERVER_UNAVAILABLE,
                format!(
                    "MCP server \"{name}\" {}; dsh is reconnecting (attempt {attempt} of {of}); its tools stay available, retry the call later",
                    self.how_it_ended()
                ),
            ),
            McpServerState::Running | McpServerState::Starting => ToolError::new(
                codes::MCP_SERVER_UNAVAILABLE,
                format!(
                    "MCP server \"{name}\" {} during the call and has been reconnected; retry the call",
                    self.how_it_ended()
                ),
            ),
            McpServerState::Exited(_) | McpServerState::Failed(_) => self.exited_error(),
        }
    }

    /// Unregisters every tool (outside the lock: `tools/change` listeners
    /// may ask for `tools()`).
    fn unmount_all(&self) {
        let mounted = std::mem::take(&mut *lock(&self.mounted));
        for m in mounted.into_iter().rev() {
            m.registration.undo();
        }
    }

    /// The end: `state`, no connection, tools unregistered, `done`. Calls
    /// still on the last connection learn of it through its `ended`, which
    /// the caller cancels after this, so they see the final state.
    fn finish(&self, state: McpServerState) {
        *lock(&self.state) = state;
        *lock(&self.link) = None;
        self.exited.cancel();
        self.unmount_all();
        self.done.cancel();
    }
}

/// Locks a mutex; a poisoned lock only means a panic elsewhere while it was
/// held, and the data (plain lists and states) is still consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Owns the server's connections: waits for the current one to end; on a
/// shutdown request stops for good; on a drop restarts the server following
/// the restart policy, or gives up.
async fn supervise(shared: Arc<Shared>, mut live: Live) {
    let name = shared.config.name.clone();
    let policy = shared.config.restart;
    // Attempts since the server last stayed up for `stable_after`.
    let mut attempt: u32 = 0;
    let mut up_since = tokio::time::Instant::now();
    loop {
        let link = live.link.clone();
        let Ending {
            requested,
            code,
            how,
        } = live.end(&shared).await;
        *lock(&shared.exit_description) = Some(how.clone());
        *lock(&shared.link) = None;
        if requested || shared.shutdown.is_cancelled() {
            tracing::info!(target: "dsh_mcp", server = %name, "MCP server stopped ({how})");
            shared.finish(McpServerState::Exited(code));
            link.ended.cancel();
            return;
        }
        if policy.max_attempts == 0 {
            tracing::warn!(target: "dsh_mcp", server = %name, "MCP server {how}; its tools are unregistered");
            shared.finish(McpServerState::Exited(code));
            link.ended.cancel();
            return;
        }
        if up_since.elapsed() >= policy.stable_after {
            attempt = 0;
        }
        if attempt >= policy.max_attempts {
            // It started every time but never stayed up.
            let why =
                format!("{how}, and it did not stay up after {attempt} attempts to start it again");
            tracing::warn!(target: "dsh_mcp", server = %name, "giving up on MCP server ({why}); its tools are unregistered");
            *lock(&shared.exit_description) = Some(why.clone());
            shared.finish(McpServerState::Failed(why));
            link.ended.cancel();
            return;
        }
        attempt += 1;
        *lock(&shared.state) = McpServerState::Restarting {
            attempt,
            of: policy.max_attempts,
        };
        link.ended.cancel();
        tracing::warn!(target: "dsh_mcp", server = %name, "MCP server {how}; reconnecting (attempt {attempt} of {})", policy.max_attempts);
        live = loop {
            let delay = policy.delay(attempt);
            let outcome = tokio::select! {
                () = shared.shutdown.cancelled() => None,
                outcome = async {
                    tokio::time::sleep(delay).await;
                    connect(&shared).await
                } => Some(outcome),
            };
            match outcome {
                // Dropping the connect future killed whatever it spawned.
                None => {
                    tracing::info!(target: "dsh_mcp", server = %name, "MCP server stopped while reconnecting");
                    shared.finish(McpServerState::Exited(code));
                    return;
                }
                Some(Ok((next, tools))) => {
                    shared.go_live(&next, tools);
                    up_since = tokio::time::Instant::now();
                    tracing::info!(
                        target: "dsh_mcp",
                        server = %name,
                        pid = shared.pid().unwrap_or_default(),
                        attempt,
                        tools = ?shared.tool_names(),
                        "MCP server reconnected"
                    );
                    break next;
                }
                Some(Err(reason)) => {
                    tracing::warn!(target: "dsh_mcp", server = %name, "reconnecting attempt {attempt} of {} failed: {reason}", policy.max_attempts);
                    if attempt >= policy.max_attempts {
                        let why = format!(
                            "{how}, and {attempt} attempts to start it again failed (the last: {reason})"
                        );
                        tracing::warn!(target: "dsh_mcp", server = %name, "giving up on MCP server; its tools are unregistered");
                        *lock(&shared.exit_description) = Some(why.clone());
                        shared.finish(McpServerState::Failed(why));
                        return;
                    }
                    attempt += 1;
                    *lock(&shared.state) = McpServerState::Restarting {
                        attempt,
                        of: policy.max_attempts,
                    };
                }
            }
        };
    }
}
