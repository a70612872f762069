//! One connection to a server: spawning a stdio server or connecting to an
//! HTTP one, the MCP handshake and the first listing ([`connect`]); and
//! taking a connection down ([`Live::end`]).
//!
//! A server has one connection at a time; the supervisor in
//! [`crate::server`] makes a new one after a drop.

use std::collections::HashMap;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_process::{describe_exit, spawn_leader, GroupMode, ProcessGroup, Signal};
use rmcp::model::Tool as McpTool;
use rmcp::model::{ClientRequest, PingRequest};
use rmcp::service::RunningService;
use rmcp::transport::common::client_side_sse::NeverRetry;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use tokio::io::BufReader;
use tokio::process::{Child, ChildStderr, Command};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{expand_vars, ExpandError, McpTransport};
use crate::frames::{bound_messages, read_line, MAX_STDERR_LINE};
use crate::server::{lock, Shared};
use crate::tools::Handler;

/// How long a stopping server gets after its stdin is closed, and again
/// after `SIGTERM`, before it is killed; also the bound on an HTTP
/// server's session delete at shutdown.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(2);
/// Lines of stderr kept for start-up error messages.
const STDERR_TAIL: usize = 20;
/// Room for the SSE framing (`event:`, `id:`, `data: ` prefixes) around
/// one JSON-RPC message.
const SSE_FRAMING: usize = 4096;

/// What calls share with one connection.
pub(crate) struct Link {
    /// The MCP peer to send requests to.
    pub(crate) peer: Peer<RoleClient>,
    /// Cancelled by a call that saw the transport fail (a refused or reset
    /// HTTP request, a closed stream): the supervisor takes the connection
    /// down and restarts the server.
    pub(crate) broken: CancellationToken,
    /// Why `broken` was cancelled, for the log and messages.
    pub(crate) broken_why: Mutex<Option<String>>,
    /// Cancelled by the supervisor once this connection is over and the
    /// server's state says what comes next (restarting or exited).
    pub(crate) ended: CancellationToken,
}

impl Link {
    /// Marks the connection broken because of `why` (the first reason wins).
    pub(crate) fn break_with(&self, why: String) {
        lock(&self.broken_why).get_or_insert(why);
        self.broken.cancel();
    }
}

/// A connection that completed its handshake.
pub(crate) struct Live {
    pub(crate) running: RunningService<RoleClient, Handler>,
    pub(crate) link: Arc<Link>,
    /// The child of a stdio server.
    pub(crate) process: Option<Process>,
    /// Notified on `notifications/tools/list_changed`.
    pub(crate) resync: Arc<Notify>,
}

/// A stdio server's process.
pub(crate) struct Process {
    child: Child,
    group: ProcessGroup,
}

/// How a connection ended.
pub(crate) struct Ending {
    /// `shutdown` was asked for (no restart).
    pub(crate) requested: bool,
    /// The exit code of a stdio server that exited with one.
    pub(crate) code: Option<i32>,
    /// "exited with code 3", "closed the connection", …
    pub(crate) how: String,
}

/// Starts one connection for `shared`'s config: spawn (stdio) or connect
/// (HTTP), `initialize`, `tools/list` (following pagination), all bounded
/// by the config's timeout. Records the pid of a stdio server.
///
/// Cancel-safe: dropping the future kills a spawned process group.
///
/// # Errors
/// The reason, ready for `MCP_START_FAILED`: the cause (spawn error, exit
/// status and last stderr lines, HTTP error, unset header variable,
/// timeout). Nothing is left running.
pub(crate) async fn connect(shared: &Arc<Shared>) -> Result<(Live, Vec<McpTool>), String> {
    let resync = Arc::new(Notify::new());
    let handler = Handler {
        server: shared.config.name.clone(),
        resync: resync.clone(),
    };
    match &shared.config.transport {
        McpTransport::Stdio { .. } => connect_stdio(shared, handler, resync).await,
        McpTransport::Http { url, headers } => {
            let (running, tools) = connect_http(shared, handler, url, headers).await?;
            *lock(&shared.pid) = None;
            Ok((Live::new(running, None, resync), tools))
        }
    }
}

impl Live {
    fn new(
        running: RunningService<RoleClient, Handler>,
        process: Option<Process>,
        resync: Arc<Notify>,
    ) -> Live {
        let link = Arc::new(Link {
            peer: running.peer().clone(),
            broken: CancellationToken::new(),
            broken_why: Mutex::new(None),
            ended: CancellationToken::new(),
        });
        Live {
            running,
            link,
            process,
            resync,
        }
    }

    /// Waits until the connection ends — the process exits, the transport
    /// closes, a call marks it broken, or `shutdown` fires — and takes it
    /// down: the process (group) is stopped and reaped, the HTTP session
    /// closed. Does not cancel [`Link::ended`]; the supervisor does, after
    /// updating the state.
    pub(crate) async fn end(self, shared: &Shared) -> Ending {
        let Live {
            running,
            link,
            process,
            ..
        } = self;
        let service = running.cancellation_token();
        let service_after = running.cancellation_token();
        // Boxed so that dropping it below ends the connection's task.
        let mut waiting = Box::pin(running.waiting());
        let name = &shared.config.name;
        let broken_why = || {
            lock(&link.broken_why)
                .clone()
                .unwrap_or_else(|| "its connection failed".to_string())
        };
        match process {
            Some(Process { mut child, group }) => {
                let (status, requested, why) = tokio::select! {
                    status = child.wait() => (status, false, None),
                    _ = &mut waiting => {
                        tracing::warn!(target: "dsh_mcp", server = %name, "MCP server closed its connection; stopping it");
                        (stop(&mut child, group, false).await, false, None)
                    }
                    () = link.broken.cancelled() => {
                        (stop(&mut child, group, false).await, false, Some(broken_why()))
                    }
                    () = shared.shutdown.cancelled() => {
                        // Closing the connection closes the server's stdin:
                        // the polite way to ask a stdio MCP server to exit.
                        service.cancel();
                        (stop(&mut child, group, true).await, true, None)
                    }
                };
                // Whatever the leader left behind in its group goes too.
                group.signal(Signal::SIGKILL);
                service_after.cancel();
                drop(waiting);
                let (code, how) = match &status {
                    Ok(status) => (status.code(), describe_exit(*status)),
                    Err(e) => (None, format!("could not be waited for ({e})")),
                };
                let how = match why {
                    Some(why) => format!("{why}; it was stopped and {how}"),
                    None => how,
                };
                Ending {
                    requested,
                    code,
                    how,
                }
            }
            None => {
                let policy = shared.config.restart;
                let probe = probe(&link.peer, policy.probe_every, shared.config.timeout);
                let (requested, how) = tokio::select! {
                    _ = &mut waiting => (false, "closed the connection".to_string()),
                    () = link.broken.cancelled() => (false, broken_why()),
                    why = probe => (false, why),
                    () = shared.shutdown.cancelled() => (true, "was disconnected".to_string()),
                };
                service.cancel();
                drop(service_after);
                if requested {
                    // Lets the transport delete its session on the server.
                    let _ = tokio::time::timeout(STOP_GRACE, &mut waiting).await;
                }
                drop(waiting);
                Ending {
                    requested,
                    code: None,
                    how,
                }
            }
        }
    }
}

/// Why the handshake failed, in words: a transport error as
/// [`crate::tools::transport_error_text`] says it (the cause, without the
/// SDK's transport type names).
fn init_error(e: &rmcp::service::ClientInitializeError) -> String {
    match e {
        rmcp::service::ClientInitializeError::TransportError { error, .. } => {
            crate::tools::transport_error_text(error)
        }
        other => other.to_string(),
    }
}

/// The longest wait for a ping's answer.
pub(crate) const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether the server behind `peer` answers a `ping` within `timeout`
/// (at most [`PING_TIMEOUT`]). Any answer counts, an error response too;
/// `Err` says why there was none.
pub(crate) async fn ping(peer: &Peer<RoleClient>, timeout: Duration) -> Result<(), String> {
    let ping = peer.send_request(ClientRequest::PingRequest(PingRequest::default()));
    match tokio::time::timeout(timeout.min(PING_TIMEOUT), ping).await {
        Ok(Ok(_) | Err(ServiceError::McpError(_))) => Ok(()),
        Ok(Err(e)) => Err(format!("did not answer a ping ({e})")),
        Err(_) => Err(format!(
            "did not answer a ping within {} ms",
            timeout.min(PING_TIMEOUT).as_millis()
        )),
    }
}

/// Pings the server every `every` while the connection lasts; returns why
/// when it stops answering. Never returns when `every` is zero.
async fn probe(peer: &Peer<RoleClient>, every: Duration, timeout: Duration) -> String {
    if every.is_zero() {
        return std::future::pending().await;
    }
    loop {
        tokio::time::sleep(every).await;
        if let Err(why) = ping(peer, timeout).await {
            return why;
        }
    }
}

async fn connect_stdio(
    shared: &Arc<Shared>,
    handler: Handler,
    resync: Arc<Notify>,
) -> Result<(Live, Vec<McpTool>), String> {
    let McpTransport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &shared.config.transport
    else {
        return Err("not a stdio server".to_string());
    };
    let (mut child, group) =
        spawn(command, args, env, cwd.as_deref()).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                format!("cannot run \"{command}\": no such program (is it installed and in PATH?)")
            }
            std::io::ErrorKind::PermissionDenied => {
                format!("cannot run \"{command}\": permission denied")
            }
            _ => format!("cannot spawn the process: {e}"),
        })?;
    *lock(&shared.pid) = child.id();
    // Cancel safety: if this future is dropped before the process is handed
    // on (Ctrl-C during start-up, shutdown during a restart), the whole
    // group is killed, not just the leader `kill_on_drop` reaches.
    let mut group_guard = GroupGuard(Some(group));
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = stop(&mut child, group, false).await; // best effort: it is unusable anyway
        return Err("the process has no stdio pipes".to_string());
    };
    lock(&shared.stderr_tail).clear();
    let stderr_task: Option<JoinHandle<()>> = child
        .stderr
        .take()
        .map(|err| tokio::spawn(log_stderr(shared.clone(), err)));
    let config = &shared.config;
    shared.refusals.clear();
    let messages = bound_messages(
        config.name.clone(),
        stdout,
        config.max_message_bytes,
        shared.oversize.clone(),
        shared.refusals.clone(),
    );
    let started = handshake(handler, (messages, stdin), config.timeout).await;
    match started {
        Ok((running, tools)) => {
            group_guard.disarm();
            let process = Process { child, group };
            Ok((Live::new(running, Some(process), resync), tools))
        }
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
            Err(reason)
        }
    }
}

async fn connect_http(
    shared: &Arc<Shared>,
    handler: Handler,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<(RunningService<RoleClient, Handler>, Vec<McpTool>), String> {
    let config = &shared.config;
    let custom_headers = resolve_headers(headers, |var| std::env::var(var).ok())?;
    // Err means a provider is already installed, which is fine: reqwest
    // uses whatever default provider the process has.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .connect_timeout(config.timeout)
        // Like rmcp's own client: no idle pooling (avoids delayed-ACK
        // stalls); redirects are not followed, so headers never reach
        // another host.
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let mut http = StreamableHttpClientTransportConfig::with_uri(url);
    http.custom_headers = custom_headers;
    http.max_json_response_size = config.max_message_bytes;
    http.max_sse_event_size = config.max_message_bytes.saturating_add(SSE_FRAMING);
    // A lost stream or session is a dropped connection: dsh restarts the
    // server itself (and lists its tools again) instead of resuming.
    http.retry_config = Arc::new(NeverRetry::default());
    http.reinit_on_expired_session = false;
    let transport = StreamableHttpClientTransport::with_client(client, http);
    handshake(handler, transport, config.timeout).await
}

/// The MCP handshake over `transport` and the first listing (following
/// pagination), bounded by `timeout` together.
///
/// # Errors
/// Which step failed and why, or that the bound ran out.
async fn handshake<T, E, A>(
    handler: Handler,
    transport: T,
    timeout: Duration,
) -> Result<(RunningService<RoleClient, Handler>, Vec<McpTool>), String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    tokio::time::timeout(timeout, async {
        let running = handler
            .serve(transport)
            .await
            .map_err(|e| format!("the initialize handshake failed: {}", init_error(&e)))?;
        let tools = running
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        Ok((running, tools))
    })
    .await
    .unwrap_or_else(|_| {
        Err(format!(
            "no answer to initialize/tools/list within {} ms (timeout)",
            timeout.as_millis()
        ))
    })
}

/// The configured headers with `${VAR}` expanded by `lookup`, marked
/// sensitive (so they are never logged).
///
/// # Errors
/// A message naming the header and the unset variable; values never appear.
pub(crate) fn resolve_headers(
    headers: &std::collections::BTreeMap<String, String>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>, String> {
    let mut out = HashMap::new();
    for (key, value) in headers {
        let value = expand_vars(value, &lookup).map_err(|e| match e {
            ExpandError::Unset(var) => format!(
                "header {key:?} uses the environment variable {var}, which is not set; set it before starting dsh"
            ),
            ExpandError::Malformed(why) => format!("header {key:?}: {why}"),
        })?;
        let name = reqwest::header::HeaderName::from_bytes(key.as_bytes())
            .map_err(|_| format!("header name {key:?} is not a valid HTTP header name"))?;
        let mut value = reqwest::header::HeaderValue::from_str(&value).map_err(|_| {
            format!("the value of header {key:?} is not a valid HTTP header value (after expanding variables)")
        })?;
        value.set_sensitive(true);
        out.insert(name, value);
    }
    Ok(out)
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

fn spawn(
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cwd: Option<&std::path::Path>,
) -> std::io::Result<(Child, ProcessGroup)> {
    let mut cmd = Command::new(command);
    cmd.args(args).env_clear();
    for key in ["PATH", "HOME"] {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
    cmd.envs(env);
    if let Some(cwd) = cwd {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_expand_and_stay_out_of_messages() {
        let headers = std::collections::BTreeMap::from([
            ("Authorization".to_string(), "Bearer ${TOKEN}".to_string()),
            ("X-Plain".to_string(), "v".to_string()),
        ]);
        let env = |k: &str| (k == "TOKEN").then(|| "s3cret".to_string());
        let out = resolve_headers(&headers, env).expect("resolves");
        let auth = &out[&reqwest::header::AUTHORIZATION];
        assert_eq!(auth.to_str().ok(), Some("Bearer s3cret"));
        assert!(auth.is_sensitive());
        let err = resolve_headers(&headers, |_| None).unwrap_err();
        assert!(err.contains("TOKEN") && err.contains("not set"), "{err}");
        let bad = std::collections::BTreeMap::from([("X".to_string(), "a${TOKEN}".to_string())]);
        let err = resolve_headers(&bad, |_| Some("line\nbreak s3cret".to_string())).unwrap_err();
        assert!(err.contains("not a valid HTTP header value"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
    }
}
