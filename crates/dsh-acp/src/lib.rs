//! dsh as an Agent Client Protocol agent: an editor (Zed, a JetBrains IDE,
//! a Neovim or Emacs plugin) or a script drives dsh over JSON-RPC on the
//! agent's stdin/stdout.
//!
//! Start at [`serve`]: it answers `initialize`, `session/new` (one
//! [`dsh::Stack`] per session, in the session's `cwd`, with the client's
//! stdio and HTTP MCP servers started through dsh's MCP client), `session/load`
//! (replays a saved dsh session as `session/update` notifications, then
//! continues it), `session/prompt` (runs a turn; the stop reason follows
//! how it ended), `session/cancel` and `session/set_mode` (the permission
//! presets and plan mode). While a turn runs, its events stream to the
//! client ([`updates`]); an approval question becomes
//! `session/request_permission`. A client that serves files
//! (`fs.readTextFile`/`fs.writeTextFile`) gets the file tools' reads and
//! writes (module `files`); bash still runs locally (the terminal capability is
//! not used).
//!
//! Nothing but protocol messages is written to stdout: logs go to stderr.
//! [`serve_streams`] (what `dsh acp` runs on stdin/stdout) bounds each
//! incoming line and answers a line that is not UTF-8 or too long with a
//! JSON-RPC error instead of ending the connection (module [`wire`]).

#![warn(missing_docs)]

pub mod commands;
mod files;
pub mod updates;
pub mod wire;

pub use wire::{serve_streams, DEFAULT_MAX_LINE_BYTES};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate,
    CancelNotification, ContentBlock as AcpBlock, CurrentModeUpdate, FileSystemCapabilities,
    InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, PromptCapabilities, PromptRequest, PromptResponse,
    RequestPermissionOutcome, RequestPermissionRequest, SessionMode, SessionModeState,
    SessionNotification, SessionUpdate, SetSessionModeRequest, SetSessionModeResponse, StopReason,
    ToolCallUpdate, ToolCallUpdateFields, UnstructuredCommandInput,
};
use agent_client_protocol::{Agent, Client, ConnectTo};
use dsh::{SandboxMode, Settings, Stack};
use dsh_agent_loop::AgentHandle;
use dsh_kernel::sync::lock;
use dsh_kernel::BoxFuture;
use dsh_llm::{ContentBlock, MessageSource};
use dsh_session::{EventPayload, TurnEndReason};
use dsh_tools::{Approval, Question, ToolCall};

use crate::files::ClientFiles;

/// The connection to the client, as handlers and tasks see it.
type Conn = agent_client_protocol::v1::ConnectionTo<Client>;

/// The session modes dsh offers: the three permission presets, then plan
/// mode.
pub const MODES: &[(&str, &str)] = &[
    ("read-only", "Read only"),
    ("workspace-write", "Workspace write"),
    ("danger-full-access", "Full access"),
    ("plan", "Plan"),
];

/// One live ACP session: its stack and agent.
struct Live {
    stack: Arc<Stack>,
    handle: Mutex<Option<AgentHandle>>,
    /// The dsh agent (a new one after `/clear`).
    agent: Mutex<Arc<dyn dsh_agent::Agent>>,
    /// The listener streaming the agent's events to the client.
    stream: Mutex<dsh_kernel::Registration>,
    /// The client's files, when it serves them (the file tools go through
    /// them).
    files: Option<Arc<ClientFiles>>,
    /// Counts `session/cancel`s, so a prompt sees a cancel that came
    /// before its turn started.
    cancels: tokio::sync::watch::Sender<u64>,
}

impl Live {
    fn agent(&self) -> Arc<dyn dsh_agent::Agent> {
        lock(&self.agent).clone()
    }
}

/// The server's state.
struct Server {
    /// What every session is built from (the command line's choices); a
    /// session's `cwd` replaces `settings.cwd`.
    settings: Settings,
    sessions: Mutex<HashMap<String, Arc<Live>>>,
    /// What the client's `initialize` said it serves of its file system.
    client_fs: Mutex<FileSystemCapabilities>,
}

/// Serves ACP over `transport` until the client disconnects, then shuts
/// every session's stack down (their logs flushed, their processes gone).
///
/// # Errors
/// The transport failed or the client broke the protocol.
pub async fn serve(
    settings: Settings,
    transport: impl ConnectTo<Agent> + 'static,
) -> Result<(), agent_client_protocol::Error> {
    let server = Arc::new(Server {
        settings,
        sessions: Mutex::new(HashMap::new()),
        client_fs: Mutex::new(FileSystemCapabilities::default()),
    });
    let (s1, s2, s3, s4, s5, s6) = (
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
    );
    let served = Agent
        .v1()
        .name("dsh")
        .on_receive_request(
            async move |req: InitializeRequest, responder, _cx| {
                *lock(&s1.client_fs) = req.client_capabilities.fs.clone();
                responder.respond(initialize_response(&req))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, cx: Conn| {
                let server = s2.clone();
                cx.clone().spawn(async move {
                    match server
                        .new_session(&cx, req.cwd, &req.mcp_servers, None)
                        .await
                    {
                        Ok((id, modes)) => {
                            responder.respond(NewSessionResponse::new(id.clone()).modes(modes))?;
                            announce_commands(&cx, &id);
                            Ok(())
                        }
                        Err(message) => responder.respond_with_error(invalid_params(message)),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx: Conn| {
                let server = s3.clone();
                cx.clone().spawn(async move {
                    let id = req.session_id.to_string();
                    match server
                        .new_session(&cx, req.cwd, &req.mcp_servers, Some(&id))
                        .await
                    {
                        Ok((id, modes)) => {
                            responder.respond(LoadSessionResponse::new().modes(modes))?;
                            announce_commands(&cx, &id);
                            Ok(())
                        }
                        Err(message) => responder.respond_with_error(invalid_params(message)),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx: Conn| {
                let server = s4.clone();
                // Before the prompt's task starts: a cancel handled after
                // this point counts for this prompt.
                let cancels = server
                    .live(req.session_id.to_string().as_str())
                    .map(|l| l.cancels.subscribe());
                cx.clone().spawn(async move {
                    match server.prompt(&cx, &req, cancels).await {
                        Ok(stop) => responder.respond(PromptResponse::new(stop)),
                        Err(message) => responder.respond_with_error(invalid_params(message)),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest, responder, cx: Conn| match s5.set_mode(
                &cx,
                req.session_id.to_string().as_str(),
                req.mode_id.to_string().as_str(),
            ) {
                Ok(()) => responder.respond(SetSessionModeResponse::new()),
                Err(message) => responder.respond_with_error(invalid_params(message)),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx| {
                if let Some(live) = s6.live(n.session_id.to_string().as_str()) {
                    live.cancels.send_modify(|n| *n += 1);
                    live.agent().abort(Some(CANCELLED.into()));
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    server.shutdown().await;
    served
}

/// `initialize`: protocol v1, `loadSession`, text and embedded context in
/// prompts (images and audio not), MCP servers over stdio and HTTP.
fn initialize_response(req: &InitializeRequest) -> InitializeResponse {
    let _ = req;
    InitializeResponse::new(ProtocolVersion::V1).agent_capabilities(
        AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
            .mcp_capabilities(McpCapabilities::new().http(true)),
    )
}

/// `INVALID_PARAMS` (-32602) with `message` as the error's message (what
/// an editor shows) and as `data.message`.
fn invalid_params(message: String) -> agent_client_protocol::Error {
    agent_client_protocol::Error::new(
        agent_client_protocol::ErrorCode::INVALID_PARAMS,
        format!("Invalid params: {message}"),
    )
    .data(serde_json::json!({ "message": message }))
}

/// Sends the slash commands dsh's chat knows (`available_commands_update`).
fn announce_commands(cx: &Conn, session: &str) {
    let commands: Vec<AvailableCommand> = dsh::commands::SLASH_COMMANDS
        .iter()
        .map(|c| {
            let command = AvailableCommand::new(c.name, c.description);
            match c.hint {
                Some(hint) => command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint),
                )),
                None => command,
            }
        })
        .collect();
    let _ = cx.send_notification(SessionNotification::new(
        session.to_string(),
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
    ));
}

impl Server {
    fn live(&self, id: &str) -> Option<Arc<Live>> {
        lock(&self.sessions).get(id).cloned()
    }

    /// Builds a stack in `cwd`, starts the client's MCP servers, creates
    /// the agent (resuming `resume`), wires the event stream and the
    /// permission requests. Returns the session id and its modes.
    async fn new_session(
        &self,
        cx: &Conn,
        cwd: PathBuf,
        mcp: &[McpServer],
        resume: Option<&str>,
    ) -> Result<(String, SessionModeState), String> {
        check_cwd(&cwd).await?;
        if resume.is_some_and(|id| self.live(id).is_some()) {
            return Err("that session is already open".into());
        }
        let settings = Settings {
            cwd: Some(cwd),
            ..self.settings.clone()
        };
        let mut resolved = dsh::resolve(&settings).map_err(|e| e.to_string())?;
        resolved.mcp.extend(mcp.iter().filter_map(client_server));
        let mut stack = Stack::build(resolved).map_err(|e| e.to_string())?;
        for (name, message) in stack.start_mcp().await {
            tracing::warn!(target: "dsh_acp", server = %name, "MCP server did not start: {message}");
        }
        let prepared = stack.prepare_session(resume).map_err(|e| e.to_string())?;
        let seed = prepared.seed().to_vec();
        let handle = stack.create_agent_in(prepared).map_err(|e| e.to_string())?;
        let agent = handle.agent();
        let id = agent.session().id().to_string();
        if resume.is_some() {
            // Relative paths in the saved calls were resolved against the
            // session's cwd: the one session/load names.
            updates::replay(cx, &id, &seed, &stack.resolved.cwd);
        }
        let stack = Arc::new(stack);
        let files = ClientFiles::of(cx, &id, &lock(&self.client_fs)).map(Arc::new);
        if let Some(f) = &files {
            stack.files.set_editor(Some(f.clone()));
        }
        let stream = updates::stream(cx.clone(), id.clone(), id.clone(), &stack, files.clone());
        stack.approver.set_person(Some(Arc::new(Asker {
            cx: cx.clone(),
            session: id.clone(),
        })));
        stack.announce_permission(agent.as_ref());
        // ACP has no channel for notices outside a turn: the client's log
        // (dsh's stderr) gets them.
        for warning in stack.take_warnings() {
            tracing::warn!("{warning}");
        }
        let modes = modes_of(&stack);
        lock(&self.sessions).insert(
            id.clone(),
            Arc::new(Live {
                stack,
                handle: Mutex::new(Some(handle)),
                agent: Mutex::new(agent),
                stream: Mutex::new(stream),
                files,
                cancels: tokio::sync::watch::Sender::new(0),
            }),
        );
        Ok((id, modes))
    }

    /// Runs one turn and maps how it ended to a stop reason; a slash
    /// command ([`commands`]) is answered without a turn.
    /// `cancels` follows the session's cancels from the moment the request
    /// arrived: one before the message is sent ends the prompt `cancelled`
    /// without a turn; one after aborts the queued turn (the agent keeps an
    /// abort for a turn that has not started).
    async fn prompt(
        &self,
        cx: &Conn,
        req: &PromptRequest,
        cancels: Option<tokio::sync::watch::Receiver<u64>>,
    ) -> Result<StopReason, String> {
        let id = req.session_id.to_string();
        let live = self
            .live(&id)
            .ok_or_else(|| format!("no session \"{id}\" (create it with session/new)"))?;
        let text = prompt_text(&req.prompt);
        if let Some((name, args)) = commands::parse(&text) {
            let reply = match name {
                "clear" => self.clear(cx, &id, &live).await,
                "exit" => {
                    self.end(&id).await;
                    "session ended; open a new one to go on".to_string()
                }
                _ => commands::run(&live.stack, &live.agent(), name, args).await,
            };
            updates::say(cx, &id, &reply);
            return Ok(StopReason::EndTurn);
        }
        let agent = live.agent();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let tx = Mutex::new(Some(tx));
        let finish = Arc::new(Mutex::new(None));
        let seen = finish.clone();
        let main = agent.id().clone();
        let listener = live.stack.agents.hooks().event.on(move |e| {
            if *e.agent.id() != main {
                return;
            }
            match &e.event.data {
                EventPayload::AssistantChunk(c) => {
                    if let dsh_llm::StreamChunk::Finish { reason } = &c.chunk {
                        *lock(&seen) = Some(reason.clone());
                    }
                }
                EventPayload::TurnEnd(end) => {
                    if let Some(tx) = lock(&tx).take() {
                        let _ = tx.send(end.reason.clone());
                    }
                }
                _ => {}
            }
        });
        let content = match live.stack.submit_prompt(&agent, &text).await {
            dsh::hooks::PromptDecision::Send(content) => content,
            dsh::hooks::PromptDecision::Blocked(reason) => {
                listener.undo();
                return Err(format!("the prompt was blocked by a hook: {reason}"));
            }
        };
        let cancels = cancels.unwrap_or_else(|| live.cancels.subscribe());
        if cancels.has_changed().unwrap_or(false) {
            listener.undo();
            return Ok(StopReason::Cancelled);
        }
        if let Err(e) = agent.send(content, MessageSource::User) {
            listener.undo();
            return Err(e.to_string());
        }
        // A cancel between the check above and the send found nothing to
        // abort; now the turn is queued and an abort reaches it.
        if cancels.has_changed().unwrap_or(false) {
            agent.abort(Some(CANCELLED.into()));
        }
        let reason = rx.await.ok();
        listener.undo();
        let finish = lock(&finish).take();
        Ok(stop_reason(reason.as_ref(), finish.as_ref()))
    }

    /// `/clear`: a new dsh session (empty history) under the same ACP
    /// session; the old one is saved.
    async fn clear(&self, cx: &Conn, acp_id: &str, live: &Live) -> String {
        let old = lock(&live.handle).take();
        let Some(old) = old else {
            return "cannot clear: the session has no agent".to_string();
        };
        let old_id = old.agent().session().id().to_string();
        match live.stack.clear_session(old).await {
            Ok(handle) => {
                let agent = handle.agent();
                let new_id = agent.session().id().to_string();
                *lock(&live.agent) = agent;
                *lock(&live.handle) = Some(handle);
                let stream = updates::stream(
                    cx.clone(),
                    acp_id.to_string(),
                    new_id.clone(),
                    &live.stack,
                    live.files.clone(),
                );
                std::mem::replace(&mut *lock(&live.stream), stream).undo();
                format!("new session: {new_id} (history cleared; {old_id} is saved)")
            }
            Err(e) => format!("cannot clear: {e}"),
        }
    }

    /// `/exit`: ends the ACP session (its agent disposed, its stack shut
    /// down once the running prompt let go of it).
    async fn end(&self, acp_id: &str) {
        let live = lock(&self.sessions).remove(acp_id);
        if let Some(live) = live {
            // The prompt running `/exit` holds the session: close it after.
            tokio::spawn(close(live, "/exit"));
        }
    }

    /// `session/set_mode`: a permission preset (leaving plan mode) or plan
    /// mode.
    fn set_mode(&self, cx: &Conn, session: &str, mode: &str) -> Result<(), String> {
        let live = self
            .live(session)
            .ok_or_else(|| format!("no session \"{session}\""))?;
        let agent = live.agent();
        let agent = agent.as_ref();
        if mode == "plan" {
            live.stack.set_plan_mode(true, "acp", Some(agent));
        } else {
            let m: SandboxMode = mode.parse().map_err(|_| {
                let known: Vec<&str> = MODES.iter().map(|(id, _)| *id).collect();
                format!("unknown mode \"{mode}\"; modes: {}", known.join(", "))
            })?;
            live.stack.set_plan_mode(false, "acp", Some(agent));
            live.stack.set_permission(m, "acp", Some(agent));
        }
        let _ = cx.send_notification(SessionNotification::new(
            session.to_string(),
            SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.to_string())),
        ));
        Ok(())
    }

    /// Ends every session: aborts its turn, waits (up to 5 s) for the
    /// prompt tasks to let go of it, then disposes the agent and shuts the
    /// stack down (logs flushed, MCP servers and commands stopped).
    async fn shutdown(&self) {
        let all: Vec<Arc<Live>> = lock(&self.sessions).drain().map(|(_, l)| l).collect();
        for live in all {
            close(live, "the client disconnected").await;
        }
    }
}

/// Checks a session's `cwd`: absolute (as ACP requires), existing, a
/// directory. The error names the path and what is wrong with it.
async fn check_cwd(cwd: &std::path::Path) -> Result<(), String> {
    let shown = cwd.display();
    if !cwd.is_absolute() {
        return Err(format!(
            "cwd {shown} is relative; ACP requires an absolute path"
        ));
    }
    match tokio::fs::metadata(cwd).await {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(m) => {
            let what = if m.is_file() {
                "a file"
            } else {
                "neither a directory nor a file"
            };
            Err(format!("cwd {shown} is not a directory (it is {what})"))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("cwd {shown} does not exist"))
        }
        Err(e) => Err(format!("cwd {shown} cannot be used: {e}")),
    }
}

/// The reason an abort by the client gives.
const CANCELLED: &str = "cancelled by the client";

/// Ends a session: aborts its turn, waits (up to 5 s) for prompt tasks to
/// let go of it, disposes the agent and shuts the stack down (logs
/// flushed, MCP servers and commands stopped).
async fn close(mut live: Arc<Live>, why: &str) {
    live.agent().abort(Some(why.to_string()));
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    let live = loop {
        match Arc::try_unwrap(live) {
            Ok(live) => break Some(live),
            Err(still) if tokio::time::Instant::now() < deadline => {
                live = still;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(_) => break None,
        }
    };
    let Some(live) = live else {
        tracing::warn!(target: "dsh_acp", "a session was still in use when it closed");
        return;
    };
    let handle = lock(&live.handle).take();
    if let Some(h) = handle {
        h.dispose().await;
    }
    match live.stream.into_inner() {
        Ok(r) => r.undo(),
        Err(poisoned) => poisoned.into_inner().undo(),
    }
    match Arc::try_unwrap(live.stack) {
        Ok(stack) => stack.shutdown().await,
        Err(_) => {
            tracing::warn!(target: "dsh_acp", "a stack was still in use when its session closed")
        }
    }
}

/// The modes of a session, the current one first found: plan mode when
/// on, else the permission mode.
fn modes_of(stack: &Stack) -> SessionModeState {
    let current = if stack.plan_mode() {
        "plan".to_string()
    } else {
        stack.permission().as_str().to_string()
    };
    SessionModeState::new(
        current,
        MODES
            .iter()
            .map(|(id, name)| SessionMode::new(*id, *name))
            .collect(),
    )
}

/// A client's MCP server as dsh's configuration: stdio (command, args,
/// env) or streamable HTTP (url, headers). SSE servers are left out with a
/// warning: dsh advertises `http` only.
fn client_server(server: &McpServer) -> Option<dsh_mcp::McpServerConfig> {
    match server {
        McpServer::Stdio(s) => {
            let config =
                dsh_mcp::McpServerConfig::new(s.name.clone(), s.command.display().to_string())
                    .args(s.args.clone());
            Some(
                s.env
                    .iter()
                    .fold(config, |c, v| c.env(v.name.clone(), v.value.clone())),
            )
        }
        McpServer::Http(h) => Some(
            h.headers
                .iter()
                .fold(dsh_mcp::McpServerConfig::http(&h.name, &h.url), |c, v| {
                    c.header(v.name.clone(), v.value.clone())
                }),
        ),
        McpServer::Sse(s) => {
            tracing::warn!(target: "dsh_acp", server = %s.name, "SSE MCP servers are not supported (use the streamable HTTP transport); left out");
            None
        }
        _ => None,
    }
}

/// The prompt as text: text blocks as they are, resource links as
/// `[resource: <uri>]`, embedded text resources under their uri.
fn prompt_text(blocks: &[AcpBlock]) -> String {
    let mut parts = Vec::new();
    for b in blocks {
        match b {
            AcpBlock::Text(t) => parts.push(t.text.clone()),
            AcpBlock::ResourceLink(l) => parts.push(format!("[resource: {}]", l.uri)),
            AcpBlock::Resource(r) => {
                if let agent_client_protocol::v1::schema::EmbeddedResourceResource::TextResourceContents(t) =
                    &r.resource
                {
                    parts.push(format!("<resource uri=\"{}\">\n{}\n</resource>", t.uri, t.text));
                }
            }
            _ => {}
        }
    }
    parts.join("\n\n")
}

/// How a turn's end maps to ACP: `end_turn`, `max_tokens` (the model hit
/// its output limit), `max_turn_requests` (dsh's max-steps), `cancelled`
/// (an abort, a disposal), `refusal` for an error turn.
pub fn stop_reason(
    end: Option<&TurnEndReason>,
    finish: Option<&dsh_llm::FinishReason>,
) -> StopReason {
    match end {
        Some(TurnEndReason::Completed) => match finish {
            Some(dsh_llm::FinishReason::MaxTokens) => StopReason::MaxTokens,
            _ => StopReason::EndTurn,
        },
        Some(TurnEndReason::MaxSteps) => StopReason::MaxTurnRequests,
        Some(TurnEndReason::Error { .. }) => StopReason::Refusal,
        _ => StopReason::Cancelled,
    }
}

/// Puts approval questions to the client as `session/request_permission`:
/// allow once (`y`), allow always (`a`), reject once (`n`). A client that
/// cancels or fails the request denies.
struct Asker {
    cx: Conn,
    session: String,
}

impl dsh::approval::Person for Asker {
    fn ask(&self, call: &ToolCall, question: &Question) -> BoxFuture<'static, Approval> {
        let title = match &question.detail {
            Some(d) => format!("{}: {d}", question.summary),
            None => question.summary.clone(),
        };
        let request = RequestPermissionRequest::new(
            self.session.clone(),
            ToolCallUpdate::new(
                call.call_id.as_str().to_string(),
                ToolCallUpdateFields::new()
                    .title(title)
                    .kind(updates::kind_of(&call.name))
                    .raw_input(serde_json::from_str::<serde_json::Value>(&call.arguments).ok()),
            ),
            vec![
                PermissionOption::new("allow-once", "Allow once", PermissionOptionKind::AllowOnce),
                PermissionOption::new(
                    "allow-always",
                    "Allow always",
                    PermissionOptionKind::AllowAlways,
                ),
                PermissionOption::new("reject-once", "Reject", PermissionOptionKind::RejectOnce),
            ],
        );
        let sent = self.cx.send_request(request);
        Box::pin(async move {
            match sent.block_task().await {
                Ok(response) => match response.outcome {
                    RequestPermissionOutcome::Selected(s) => match s.option_id.to_string().as_str()
                    {
                        "allow-once" => Approval::AllowedOnce,
                        "allow-always" => Approval::AllowedForSession,
                        _ => Approval::Rejected { note: None },
                    },
                    _ => Approval::Cancelled,
                },
                Err(e) => {
                    tracing::warn!(target: "dsh_acp", "permission request failed: {e}");
                    Approval::Cancelled
                }
            }
        })
    }
}

/// Text of dsh content blocks (for replays and results).
pub(crate) fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}
