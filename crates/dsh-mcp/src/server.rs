//! [`McpServer`]: one MCP server process, its connection, and the tools it
//! has registered.

use std::collections::VecDeque;
use std::fmt;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use dsh_kernel::Registration;
use dsh_llm::ToolSchema;
use dsh_process::{describe_exit, spawn_leader, GroupMode, ProcessGroup, Signal};
use dsh_tools::{ToolError, ToolRegistry};
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient, ServiceExt};
use tokio::io::BufReader;
use tokio::process::{Child, ChildStderr, Command};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::config::McpServerConfig;
use crate::error::{codes, McpError};
use crate::frames::{bound_messages, read_line, Oversize, MAX_STDERR_LINE};
use crate::tools::{resync_loop, sync_tools, Handler};

/// How long a stopping server gets after its stdin is closed, and again
/// after `SIGTERM`, before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// Lines of stderr kept for start-up error messages.
const STDERR_TAIL: usize = 20;

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServerState {
    /// Spawned, handshake or first listing under way.
    Starting,
    /// Initialized; its tools are registered.
    Running,
    /// The process ended (crash, exit, or [`McpServer::shutdown`]); its tools
    /// are unregistered. The exit code is `None` when a signal ended it.
    Exited(Option<i32>),
    /// Start-up failed (the message says why).
    Failed(String),
}

impl fmt::Display for McpServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpServerState::Starting => f.write_str("starting"),
            McpServerState::Running => f.write_str("running"),
            McpServerState::Exited(Some(code)) => write!(f, "exited (code {code})"),
            McpServerState::Exited(None) => f.write_str("exited (signal)"),
            McpServerState::Failed(msg) => write!(f, "failed: {msg}"),
        }
    }
}

/// A server tool that was not registered, and why (name collision).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedTool {
    /// The tool's name on the server.
    pub tool: String,
    /// The name it would have had in the registry.
    pub name: String,
    /// Why it was skipped.
    pub reason: String,
}

/// One running MCP server whose tools are registered raw in a
/// [`ToolRegistry`] as `<server>__<tool>`.
///
/// Calls through the registry forward the model's arguments untouched (the
/// server validates them; the harness only rejects unparsable JSON and
/// non-objects). Every failure is an error result the model can read:
/// `MCP_TOOL_ERROR` (`isError`), `MCP_CALL_FAILED` (JSON-RPC error),
/// `TIMEOUT`, `ABORTED`, `MCP_SERVER_EXITED`.
///
/// When the process exits or closes its stdio, its tools are unregistered
/// (`tools/change` fires) and calls in flight end with `MCP_SERVER_EXITED`.
/// `notifications/tools/list_changed` re-syncs the registered tools.
/// Dropping the handle stops the server in the background; prefer
/// [`McpServer::shutdown`], which waits.
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
    /// Spawns the server over stdio (environment: `config.env` plus
    /// `PATH`/`HOME`, in its own process group), runs the `initialize`
    /// handshake, lists its tools (following pagination) and registers each
    /// in `registry`. Start-up is bounded by `config.timeout`.
    ///
    /// Tools whose name collides (two server tools that sanitise alike, or a
    /// tool already in the registry) are skipped with a warning and listed
    /// by [`McpServer::skipped`].
    ///
    /// # Errors
    /// `MCP_START_FAILED` naming the server and the command line, with the
    /// cause (spawn error, exit status, handshake error, timeout) and the
    /// last lines of the server's stderr. The child is gone when this
    /// returns an error.
    pub async fn start(
        config: McpServerConfig,
        registry: &Arc<ToolRegistry>,
    ) -> Result<McpServer, McpError> {
        let fail = |reason: String| McpError::StartFailed {
            server: config.name.clone(),
            command: config.command_line(),
            reason,
        };
        let (mut child, group) = spawn(&config).map_err(|e| {
            fail(match e.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "cannot run \"{}\": no such program (is it installed and in PATH?)",
                    config.command
                ),
                std::io::ErrorKind::PermissionDenied => {
                    format!("cannot run \"{}\": permission denied", config.command)
                }
                _ => format!("cannot spawn the process: {e}"),
            })
        })?;
        let pid = child.id();
        // Cancel safety: if this future is dropped before the server is
        // handed to its supervisor (Ctrl-C during start-up), the whole group
        // is killed, not just the leader `kill_on_drop` reaches.
        let mut group_guard = GroupGuard(Some(group));
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = stop(&mut child, group, false).await; // best effort: it is unusable anyway
            return Err(fail("the process has no stdio pipes".to_string()));
        };
        let shared = Arc::new(Shared {
            config: config.clone(),
            registry: Arc::downgrade(registry),
            state: Mutex::new(McpServerState::Starting),
            mounted: Mutex::new(Vec::new()),
            skipped: Mutex::new(Vec::new()),
            peer: OnceLock::new(),
            exited: CancellationToken::new(),
            exit_description: OnceLock::new(),
            shutdown: CancellationToken::new(),
            done: CancellationToken::new(),
            stderr_tail: Mutex::new(VecDeque::new()),
            oversize: Arc::default(),
            pid,
        });
        let stderr_task = child
            .stderr
            .take()
            .map(|err| tokio::spawn(log_stderr(shared.clone(), err)));

        let resync = Arc::new(Notify::new());
        let handler = Handler {
            server: config.name.clone(),
            resync: resync.clone(),
        };
        let started = tokio::time::timeout(config.timeout, async {
            let running = handler
                .serve((
                    bound_messages(
                        config.name.clone(),
                        stdout,
                        config.max_message_bytes,
                        shared.oversize.clone(),
                    ),
                    stdin,
                ))
                .await
                .map_err(|e| format!("the initialize handshake failed: {e}"))?;
            let tools = running
                .peer()
                .list_all_tools()
                .await
                .map_err(|e| format!("tools/list failed: {e}"))?;
            Ok::<_, String>((running, tools))
        })
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "no answer to initialize/tools/list within {} ms (timeout)",
                config.timeout.as_millis()
            ))
        });
        let (running, tools) = match started {
            Ok(ok) => ok,
            Err(mut reason) => {
                let status = stop(&mut child, group, false).await;
                if let Some(task) = stderr_task {
                    // The pipe closes with the process; the bound guards
                    // against a grandchild that keeps it open.
                    let _ = tokio::time::timeout(Duration::from_millis(500), task).await;
                }
                if let Ok(status) = status {
                    reason.push_str(&format!("; the server {}", describe_exit(status)));
                }
                let tail = shared.stderr_tail();
                if !tail.is_empty() {
                    reason.push_str(&format!("; its stderr ended with:\n{tail}"));
                }
                *lock(&shared.state) = McpServerState::Failed(reason.clone());
                return Err(fail(reason));
            }
        };
        let _ = shared.peer.set(running.peer().clone()); // set once, here
        *lock(&shared.state) = McpServerState::Running;
        sync_tools(&shared, tools);
        tracing::info!(
            target: "dsh_mcp",
            server = %config.name,
            pid = pid.unwrap_or_default(),
            tools = ?shared.tool_names(),
            "MCP server started"
        );
        group_guard.disarm();
        tokio::spawn(supervise(shared.clone(), child, group, running));
        tokio::spawn(resync_loop(shared.clone(), resync));
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
    /// (empty once it exited).
    pub fn tools(&self) -> Vec<String> {
        self.shared.tool_names()
    }

    /// Server tools that were not registered (name collisions).
    pub fn skipped(&self) -> Vec<SkippedTool> {
        lock(&self.shared.skipped).clone()
    }

    /// The server's process id (its process group id too).
    pub fn pid(&self) -> Option<u32> {
        self.shared.pid
    }

    /// Stops the server: closes its stdin, then after a grace period sends
    /// `SIGTERM`, then `SIGKILL` (to its whole process group); unregisters
    /// its tools; returns when the process has been reaped. Idempotent; also
    /// returns at once for a server that already exited.
    pub async fn shutdown(&self) {
        self.shared.shutdown.cancel();
        self.shared.done.cancelled().await;
    }

    /// Resolves when the server has exited and its tools are unregistered
    /// (crash, exit or shutdown).
    pub async fn exited(&self) {
        self.shared.done.cancelled().await;
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        // Stops the process in the background (the supervisor task kills
        // and reaps it and unregisters the tools).
        self.shared.shutdown.cancel();
    }
}

/// SIGKILLs a process group when dropped, unless disarmed.
struct GroupGuard(Option<ProcessGroup>);

impl GroupGuard {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            group.signal(Signal::SIGKILL);
        }
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
    pub(crate) peer: OnceLock<Peer<RoleClient>>,
    /// Cancelled when the process is gone or its stdio closed.
    pub(crate) exited: CancellationToken,
    /// "exited with code 3", set before `exited` is cancelled.
    pub(crate) exit_description: OnceLock<String>,
    /// Asks the supervisor to stop the server.
    pub(crate) shutdown: CancellationToken,
    /// Cancelled when the supervisor has reaped the child and unregistered
    /// the tools.
    pub(crate) done: CancellationToken,
    pub(crate) stderr_tail: Mutex<VecDeque<String>>,
    /// Too-large messages dropped without a request id.
    pub(crate) oversize: Arc<Oversize>,
    pub(crate) pid: Option<u32>,
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

    fn stderr_tail(&self) -> String {
        lock(&self.stderr_tail)
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub(crate) fn exited_error(&self) -> ToolError {
        let how = self
            .exit_description
            .get()
            .map(String::as_str)
            .unwrap_or("closed its connection");
        ToolError::new(
            codes::MCP_SERVER_EXITED,
            format!(
                "MCP server \"{}\" {how}; its tools are no longer available",
                self.config.name
            ),
        )
    }
}

/// Locks a mutex; a poisoned lock only means a panic elsewhere while it was
/// held, and the data (plain lists and states) is still consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn spawn(config: &McpServerConfig) -> std::io::Result<(Child, ProcessGroup)> {
    let mut cmd = Command::new(&config.command);
    cmd.args(&config.args).env_clear();
    for key in ["PATH", "HOME"] {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
    cmd.envs(&config.env);
    if let Some(cwd) = &config.cwd {
        cmd.current_dir(cwd);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own process group: a terminal Ctrl-C (meant for dsh) does not
    // reach it, and stopping it also stops the processes it started
    // (`npx` → `node`).
    spawn_leader(&mut cmd, GroupMode::NewProcessGroup)
}

/// Reads the server's stderr line by line into the log (and the tail kept
/// for start-up errors) until the pipe closes.
async fn log_stderr(shared: Arc<Shared>, stderr: ChildStderr) {
    let mut reader = BufReader::new(stderr);
    loop {
        let read = match read_line(&mut reader, MAX_STDERR_LINE, 0).await {
            Ok(Some(read)) => read,
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(target: "dsh_mcp::stderr", server = %shared.config.name, "reading stderr failed: {e}");
                break;
            }
        };
        let text = String::from_utf8_lossy(&read.head);
        let mut line = text.trim_end_matches('\r').to_string();
        if read.cut() {
            line.push_str(&format!("… ({} bytes, cut)", read.len));
        }
        tracing::info!(target: "dsh_mcp::stderr", server = %shared.config.name, "{line}");
        let mut tail = lock(&shared.stderr_tail);
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

/// Owns the child: waits for it to exit, its connection to close, or a
/// shutdown request; then reaps it, marks the server exited and
/// unregisters its tools.
async fn supervise(
    shared: Arc<Shared>,
    mut child: Child,
    group: ProcessGroup,
    running: RunningService<RoleClient, Handler>,
) {
    let service = running.cancellation_token();
    // Boxed so that dropping it below ends the connection's task.
    let mut waiting = Box::pin(running.waiting());
    let status = tokio::select! {
        status = child.wait() => status,
        _ = &mut waiting => {
            tracing::warn!(target: "dsh_mcp", server = %shared.config.name, "MCP server closed its connection; stopping it");
            stop(&mut child, group, false).await
        }
        () = shared.shutdown.cancelled() => {
            // Closing the connection closes the server's stdin: the polite
            // way to ask a stdio MCP server to exit.
            service.cancel();
            stop(&mut child, group, true).await
        }
    };
    // Whatever the leader left behind in its group goes too.
    group.signal(Signal::SIGKILL);
    let (code, how) = match &status {
        Ok(status) => (status.code(), describe_exit(*status)),
        Err(e) => (None, format!("could not be waited for ({e})")),
    };
    let requested = shared.shutdown.is_cancelled();
    let _ = shared.exit_description.set(how.clone()); // set once, here
    *lock(&shared.state) = McpServerState::Exited(code);
    shared.exited.cancel();
    if requested {
        tracing::info!(target: "dsh_mcp", server = %shared.config.name, "MCP server stopped ({how})");
    } else {
        tracing::warn!(target: "dsh_mcp", server = %shared.config.name, "MCP server {how}; its tools are unregistered");
    }
    let mounted = std::mem::take(&mut *lock(&shared.mounted));
    // Undo outside the lock: `tools/change` listeners may ask for `tools()`.
    for m in mounted.into_iter().rev() {
        m.registration.undo();
    }
    // Ends the connection task (closed already unless the process outlived it).
    drop(waiting);
    shared.done.cancel();
}

/// Stops `child`: when `polite`, first waits for it to exit on its own
/// (its stdin was closed); then `SIGTERM` to its group, then `SIGKILL`.
async fn stop(child: &mut Child, group: ProcessGroup, polite: bool) -> std::io::Result<ExitStatus> {
    if polite {
        if let Ok(status) = tokio::time::timeout(STOP_GRACE, child.wait()).await {
            return status;
        }
    }
    dsh_process::stop(child, group, STOP_GRACE).await
}
