//! The MCP client handler, and the server's tools in the registry: listing
//! → registration (and re-sync on `tools/list_changed`), calls → results.

use std::sync::Arc;
use std::time::Duration;

use dsh_llm::{ContentBlock, ToolSchema};
use dsh_tools::{
    json_kind, raw_tool, ArgsCheck, Concurrency, ConcurrencyRule, ToolArgsError, ToolError,
};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, Tool as McpTool,
};
use rmcp::service::NotificationContext;
use rmcp::transport::streamable_http_client::StreamableHttpError;
use rmcp::transport::DynamicTransportError;
use rmcp::{ClientHandler, RoleClient, ServiceError};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::config::McpServerConfig;
use crate::connection::Link;
use crate::content;
use crate::error::codes;
use crate::frames::TOO_LARGE_MARKER;
use crate::naming::tool_name;
use crate::server::{lock, Mounted, Shared, SkippedTool};

/// The MCP client side: answers the server's requests with the defaults and
/// turns `tools/list_changed` into a re-sync.
pub(crate) struct Handler {
    pub(crate) server: String,
    pub(crate) resync: Arc<Notify>,
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        tracing::debug!(target: "dsh_mcp", server = %self.server, "tools/list_changed");
        // Listing here would block the connection's message loop; the
        // re-sync task does it.
        self.resync.notify_one();
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("dsh", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// Re-lists the tools on every `tools/list_changed` until the connection
/// `link` ends.
pub(crate) async fn resync_loop(shared: Arc<Shared>, link: Arc<Link>, resync: Arc<Notify>) {
    loop {
        tokio::select! {
            () = link.ended.cancelled() => return,
            () = resync.notified() => {}
        }
        shared.refusals.clear();
        let listed = tokio::select! {
            () = link.ended.cancelled() => return,
            r = tokio::time::timeout(shared.config.timeout, link.peer.list_all_tools()) => r,
        };
        match listed {
            Ok(Ok(tools)) => sync_tools(&shared, tools),
            Ok(Err(e)) => {
                tracing::warn!(target: "dsh_mcp", server = %shared.config.name, "re-listing tools after tools/list_changed failed: {e}")
            }
            Err(_) => {
                tracing::warn!(target: "dsh_mcp", server = %shared.config.name, "re-listing tools after tools/list_changed timed out")
            }
        }
    }
}

/// Makes the registered tools match `tools`: unregisters those that are
/// gone or changed, registers those that are new or changed.
pub(crate) fn sync_tools(shared: &Arc<Shared>, tools: Vec<McpTool>) {
    let Some(registry) = shared.registry.upgrade() else {
        return;
    };
    if shared.exited.is_cancelled() {
        return;
    }
    let wanted: Vec<(String, ToolSchema, bool)> = tools
        .iter()
        .map(|t| {
            let read_only = t
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false);
            (t.name.to_string(), schema_of(&shared.config, t), read_only)
        })
        .collect();
    let stale: Vec<Mounted> = {
        let mut mounted = lock(&shared.mounted);
        let (keep, stale) = std::mem::take(&mut *mounted).into_iter().partition(|m| {
            wanted.iter().any(|(remote, schema, read_only)| {
                *remote == m.remote && *schema == m.schema && *read_only == m.read_only
            })
        });
        *mounted = keep;
        stale
    };
    for m in stale {
        tracing::info!(target: "dsh_mcp", server = %shared.config.name, tool = %m.name, "MCP tool removed");
        m.registration.undo();
    }
    // Tools the message filter refused before parsing.
    let mut skipped: Vec<SkippedTool> = shared
        .refusals
        .take()
        .into_iter()
        .map(|r| SkippedTool {
            name: tool_name(&shared.config.tool_prefix, &shared.config.name, &r.tool),
            tool: r.tool,
            reason: r.reason,
        })
        .collect();
    for (remote, schema, read_only) in wanted {
        let name = schema.name.clone();
        let already = lock(&shared.mounted).iter().any(|m| m.remote == remote);
        if already {
            continue;
        }
        if let Some(other) = lock(&shared.mounted).iter().find(|m| m.name == name) {
            skipped.push(SkippedTool {
                reason: format!(
                    "its name collides with server tool \"{}\" after sanitising",
                    other.remote
                ),
                tool: remote,
                name,
            });
            continue;
        }
        let tool = make_tool(shared, remote.clone(), schema.clone(), read_only);
        match registry.register(tool) {
            Ok(registration) => lock(&shared.mounted).push(Mounted {
                remote,
                name,
                schema,
                read_only,
                registration,
            }),
            Err(e) => skipped.push(SkippedTool {
                tool: remote,
                name,
                reason: e.message().to_string(),
            }),
        }
    }
    for s in &skipped {
        tracing::warn!(target: "dsh_mcp", server = %shared.config.name, tool = %s.tool, name = %s.name, "tool \"{}\" ({}) skipped: {}", s.tool, s.name, s.reason);
    }
    *lock(&shared.skipped) = skipped;
    // A crash between the check above and here leaves tools the supervisor
    // did not see; unregister them now.
    if shared.exited.is_cancelled() {
        let mounted = std::mem::take(&mut *lock(&shared.mounted));
        for m in mounted.into_iter().rev() {
            m.registration.undo();
        }
    }
}

/// What the model is shown: the server's JSON Schema as given.
fn schema_of(config: &McpServerConfig, tool: &McpTool) -> ToolSchema {
    let description = tool
        .description
        .as_deref()
        .map(str::to_string)
        .or_else(|| tool.title.clone())
        .unwrap_or_default();
    ToolSchema {
        name: tool_name(&config.tool_prefix, &config.name, &tool.name),
        description,
        parameters: Value::Object((*tool.input_schema).clone()),
        strict: None,
    }
}

fn make_tool(
    shared: &Arc<Shared>,
    remote: String,
    schema: ToolSchema,
    read_only: bool,
) -> Arc<dyn dsh_tools::Tool> {
    let verdict = dsh_schema::classify_json_schema(&schema.parameters);
    let (check, local) = match (verdict, shared.config.validate_args) {
        (Ok(raw), true) => (ArgsCheck::Local, Some(Arc::new(raw))),
        (Ok(_), false) => (ArgsCheck::Server, None),
        (Err(why), asked) => {
            if asked {
                tracing::warn!(target: "dsh_mcp", server = %shared.config.name, tool = %schema.name, "arguments are not validated locally (the server still validates them): {why}");
            }
            (ArgsCheck::Unsupported(why.to_string()), None)
        }
    };
    let shared = Arc::downgrade(shared);
    raw_tool(schema, move |args, ctx| {
        let shared = shared.upgrade();
        let remote = remote.clone();
        let local = local.clone();
        async move {
            if let Some(raw) = &local {
                let violations = raw.validate(&args);
                if !violations.is_empty() {
                    return Err(ToolError::from(ToolArgsError::new(violations)));
                }
            }
            let Some(shared) = shared else {
                return Err(ToolError::new(
                    codes::MCP_SERVER_EXITED,
                    "the MCP server of this tool is gone",
                ));
            };
            call(&shared, remote, &ctx.tool, args, ctx.cancel).await
        }
    })
    .with_check(check)
    .concurrency(ConcurrencyRule::Always(if read_only {
        Concurrency::Safe
    } else {
        Concurrency::Exclusive
    }))
    .into_arc()
}

/// Forwards one call and maps its outcome.
async fn call(
    shared: &Shared,
    remote: String,
    name: &str,
    args: Value,
    cancel: CancellationToken,
) -> Result<Vec<ContentBlock>, ToolError> {
    let Value::Object(args) = args else {
        return Err(ToolError::new(
            dsh_tools::codes::INVALID_ARGS,
            format!(
                "the arguments of \"{name}\" must be a JSON object, not {}",
                json_kind(&args)
            ),
        ));
    };
    if shared.exited.is_cancelled() {
        return Err(shared.exited_error());
    }
    let Some(link) = shared.link() else {
        return Err(shared.dropped_error());
    };
    let timeout = shared.config.timeout;
    let dropped_before = shared.oversize.dropped();
    // Dropping this future before the response (cancel, timeout, exit)
    // makes rmcp send `notifications/cancelled` for the request.
    let request = link
        .peer
        .call_tool(CallToolRequestParams::new(remote).with_arguments(args));
    let outcome = tokio::select! {
        biased;
        () = cancel.cancelled() => {
            return Err(ToolError::aborted(format!("tool \"{name}\" was aborted; the MCP server was told to cancel the call")));
        }
        outcome = request => outcome,
        () = link.ended.cancelled() => return Err(shared.dropped_error()),
        () = tokio::time::sleep(timeout) => {
            if shared.oversize.dropped() > dropped_before {
                return Err(too_large(
                    shared,
                    name,
                    "a message above max_message_bytes (without a request id) was dropped while waiting",
                ));
            }
            return Err(ToolError::new(
                codes::TIMEOUT,
                format!(
                    "tool \"{name}\" did not answer within {} ms (MCP server \"{}\"); the call was cancelled",
                    timeout.as_millis(),
                    shared.config.name
                ),
            ));
        }
    };
    match outcome {
        Ok(result) if result.is_error == Some(true) => Err(ToolError::new(
            codes::MCP_TOOL_ERROR,
            content::error_text(&result),
        )),
        Ok(result) => Ok(content::blocks(&result)),
        Err(ServiceError::TransportClosed) if shared.is_http() => {
            // The response stream closed before the result. Either the
            // server is gone, or it is fine and only this stream broke
            // (an event above max_message_bytes ends it too): a ping tells.
            let alive = tokio::select! {
                () = link.ended.cancelled() => false,
                r = crate::connection::ping(&link.peer, timeout) => r.is_ok(),
            };
            if alive {
                return Err(ToolError::new(
                    codes::MCP_CALL_FAILED,
                    format!(
                        "the response of tool \"{name}\" (MCP server \"{}\") ended before its result; the server is still up. A response above max_message_bytes ({}) ends it this way: ask for less (a narrower query, a page or a range)",
                        shared.config.name, shared.config.max_message_bytes
                    ),
                ));
            }
            Err(connection_lost(
                shared,
                &link,
                "stopped answering (its response stream closed)".to_string(),
            )
            .await)
        }
        Err(ServiceError::TransportClosed) => {
            Err(connection_lost(shared, &link, "closed its connection".to_string()).await)
        }
        Err(ServiceError::TransportSend(e)) => match http_failure(&e) {
            HttpFailure::TooLarge => Err(too_large(
                shared,
                name,
                &format!(
                    "the HTTP response was above max_message_bytes ({})",
                    shared.config.max_message_bytes
                ),
            )),
            HttpFailure::Dropped(why) => Err(connection_lost(shared, &link, why).await),
            HttpFailure::Other => Err(ToolError::new(
                codes::MCP_CALL_FAILED,
                format!("calling MCP server \"{}\" failed: {e}", shared.config.name),
            )),
        },
        Err(ServiceError::McpError(e)) if e.message.starts_with(TOO_LARGE_MARKER) => {
            Err(too_large(
                shared,
                name,
                e.message[TOO_LARGE_MARKER.len()..].trim_start(),
            ))
        }
        Err(ServiceError::McpError(e)) => Err(ToolError::new(
            codes::MCP_CALL_FAILED,
            format!(
                "MCP server \"{}\" rejected the call: {} (JSON-RPC error {})",
                shared.config.name, e.message, e.code.0
            ),
        )),
        Err(e) => Err(ToolError::new(
            codes::MCP_CALL_FAILED,
            format!("calling MCP server \"{}\" failed: {e}", shared.config.name),
        )),
    }
}

/// The connection a call used is gone: an HTTP connection is marked broken
/// (the supervisor restarts the server); a stdio one ends on its own. Waits
/// briefly for the supervisor so the error can say what comes next.
async fn connection_lost(shared: &Shared, link: &Link, why: String) -> ToolError {
    if shared.is_http() {
        link.break_with(why);
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), link.ended.cancelled()).await;
    if !link.ended.is_cancelled() && !shared.shutdown.is_cancelled() {
        // The supervisor is slow to notice; a restart will follow.
        return ToolError::new(
            codes::MCP_SERVER_UNAVAILABLE,
            format!(
                "MCP server \"{}\" closed its connection; dsh is reconnecting, retry the call later",
                shared.config.name
            ),
        );
    }
    shared.dropped_error()
}

/// What a failed HTTP request means.
enum HttpFailure {
    /// The response was above the size limit.
    TooLarge,
    /// The server cannot be reached or lost the session: why.
    Dropped(String),
    /// Anything else (an HTTP error status, a malformed answer, auth).
    Other,
}

fn http_failure(e: &DynamicTransportError) -> HttpFailure {
    type HttpError = StreamableHttpError<reqwest::Error>;
    let Some(err) = e.error.downcast_ref::<HttpError>() else {
        return HttpFailure::Other;
    };
    match err {
        HttpError::ResponseBodyTooLarge { .. } => HttpFailure::TooLarge,
        HttpError::Client(c) if c.is_redirect() || c.is_builder() => HttpFailure::Other,
        HttpError::Client(c) => {
            HttpFailure::Dropped(format!("cannot be reached ({})", error_chain(c)))
        }
        HttpError::SessionExpired => {
            HttpFailure::Dropped("lost its session (HTTP 404: it restarted?)".to_string())
        }
        HttpError::Io(_)
        | HttpError::Sse(_)
        | HttpError::UnexpectedEndOfStream
        | HttpError::TransportChannelClosed
        | HttpError::SessionRecoveryTimeout => {
            HttpFailure::Dropped(format!("stopped answering ({err})"))
        }
        _ => HttpFailure::Other,
    }
}

/// A transport error in words: the HTTP client's error with its causes
/// (its variant is not a `source`, so it is reached by type), else the
/// error and its sources.
pub(crate) fn transport_error_text(e: &DynamicTransportError) -> String {
    match e
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        Some(StreamableHttpError::Client(c)) => error_chain(c),
        _ => error_chain(&*e.error),
    }
}

/// `e` and its sources, joined by `: ` (reqwest's own message hides the
/// cause, e.g. "connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// `RESULT_TOO_LARGE` for tool `name`: `what` says how large.
fn too_large(shared: &Shared, name: &str, what: &str) -> ToolError {
    ToolError::new(
        codes::RESULT_TOO_LARGE,
        format!(
            "the result of tool \"{name}\" was too large (MCP server \"{}\"): {what}; it was not read. Ask for less (a narrower query, a page or a range).",
            shared.config.name
        ),
    )
}
