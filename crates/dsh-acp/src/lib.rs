//! dsh as an Agent Client Protocol agent: an editor (Zed, a JetBrains IDE,
//! a Neovim or Emacs plugin) or a script drives dsh over JSON-RPC on the
//! agent's stdin/stdout.
//!
//! The crate is a front end of [`dsh_controller`]: it translates ACP
//! requests into controller commands and controller events into ACP
//! messages, and never reaches past the controller into an agent, the
//! kernel or a log.
//!
//! Start at [`serve`]: one [`Controller`] per connection answers
//! `initialize`, `session/new` (a controller session in the session's
//! `cwd`, with the client's stdio and HTTP MCP servers), `session/load`
//! (the saved session resumed; its history arrives as `session/update`
//! notifications before the response), `session/prompt` (a turn; the stop
//! reason follows how it ended; a slash command is answered without one,
//! module [`commands`]), `session/cancel` and `session/set_mode` (the
//! permission presets and plan mode). A task per session forwards its
//! events to the client and puts its approval questions to it as
//! `session/request_permission` (module [`updates`]). A client that serves
//! files (`fs.readTextFile`/`fs.writeTextFile`) gets the file tools' reads
//! and writes (module `files`); bash still runs locally (the terminal
//! capability is not used).
//!
//! Nothing but protocol messages is written to stdout: logs go to stderr.
//! [`serve_streams`] (what `dsh acp` runs on stdin/stdout) bounds each
//! incoming line and answers a line that is not UTF-8 or too long with a
//! JSON-RPC error instead of ending the connection (module [`wire`]).

#![warn(missing_docs)]

pub mod commands;
mod files;
mod images;
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
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, PromptResponse, SessionMode, SessionModeState, SessionNotification,
    SessionUpdate, SetSessionModeRequest, SetSessionModeResponse, StopReason,
    UnstructuredCommandInput,
};
use agent_client_protocol::{Agent, Client, ConnectTo};
use dsh::{SandboxMode, Settings};
use dsh_controller::{
    ApproverGuard, Controller, EventBody, OpenError, Reply, Session, SessionOptions, Subscription,
};
use dsh_kernel::sync::lock;
use dsh_protocol::TurnEndReason;
use dsh_tool_fs::EditorFiles;
use tokio::sync::watch;

use crate::files::ClientFiles;
use crate::updates::Forwarded;

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

/// The reason an abort by the client gives.
const CANCELLED: &str = "cancelled by the client";

/// One open ACP session: its controller session and what forwards it.
struct Live {
    session: Arc<Session>,
    /// Keeps the session's approval questions coming (to the forwarding
    /// task, which asks the client) while the session is open.
    _approver: ApproverGuard,
    /// How far the forwarding task has got.
    forwarded: Forwarded,
    /// The mode the client was last told (the session's response, a
    /// `set_mode`, a `current_mode_update`); changes happen under it.
    told: Arc<Mutex<String>>,
    /// Counts `session/cancel`s, so a prompt sees a cancel that came
    /// before its turn started.
    cancels: watch::Sender<u64>,
    /// The custom commands the client was last told of (`None`: not told
    /// yet); a change is announced again.
    announced: Mutex<Option<Vec<dsh::custom_commands::CommandSummary>>>,
}

/// The server's state.
struct Server {
    /// Opens the sessions from the command line's settings; a session's
    /// `cwd` replaces `settings.cwd`.
    controller: Controller,
    /// The open sessions by ACP session id (the id each was opened under,
    /// kept after `/clear`).
    sessions: Mutex<HashMap<String, Arc<Live>>>,
    /// What the client's `initialize` said it serves of its file system.
    client_fs: Mutex<FileSystemCapabilities>,
}

/// Serves ACP over `transport` until the client disconnects, then closes
/// every session (its turn aborted, its log flushed, its processes and MCP
/// servers gone).
///
/// # Errors
/// The transport failed or the client broke the protocol.
pub async fn serve(
    settings: Settings,
    transport: impl ConnectTo<Agent> + 'static,
) -> Result<(), agent_client_protocol::Error> {
    let server = Arc::new(Server {
        controller: Controller::new(settings),
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
                let images = configured_model_takes_images(s1.controller.settings());
                responder.respond(initialize_response(&req, images))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, cx: Conn| {
                let server = s2.clone();
                cx.clone().spawn(async move {
                    match server.open(&cx, req.cwd, &req.mcp_servers, None).await {
                        Ok((id, modes)) => {
                            responder.respond(NewSessionResponse::new(id.clone()).modes(modes))?;
                            server.announce_commands(&cx, &id);
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
                    match server.open(&cx, req.cwd, &req.mcp_servers, Some(&id)).await {
                        Ok((id, modes)) => {
                            responder.respond(LoadSessionResponse::new().modes(modes))?;
                            server.announce_commands(&cx, &id);
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
                    let id = req.session_id.to_string();
                    // Command files added or changed since the last look
                    // (by the person, or by the turn) are told before the
                    // prompt runs and after it ended.
                    server.announce_commands(&cx, &id);
                    let answered = match server.prompt(&cx, &req, cancels).await {
                        Ok(stop) => responder.respond(PromptResponse::new(stop)),
                        Err(message) => responder.respond_with_error(invalid_params(message)),
                    };
                    server.announce_commands(&cx, &id);
                    answered
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
                    live.session.abort(CANCELLED);
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
/// prompts, images when `images` (the configured model takes them; audio
/// never), MCP servers over stdio and HTTP.
fn initialize_response(req: &InitializeRequest, images: bool) -> InitializeResponse {
    let _ = req;
    InitializeResponse::new(ProtocolVersion::V1).agent_capabilities(
        AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(
                PromptCapabilities::new()
                    .embedded_context(true)
                    .image(images),
            )
            .mcp_capabilities(McpCapabilities::new().http(true)),
    )
}

/// Whether the model the settings resolve to takes images (`false` when
/// they do not resolve: the session would not open either).
fn configured_model_takes_images(settings: &Settings) -> bool {
    dsh::resolve(settings).is_ok_and(|r| r.catalogue.takes_images(&r.model))
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

/// Sends the slash commands dsh's chat knows (`available_commands_update`):
/// the built-in ones, then the session's `custom` commands (their
/// description starts with `(project)` or `(user)`; the argument hint is
/// the input hint).
fn announce_commands(cx: &Conn, session: &str, custom: &[dsh::custom_commands::CommandSummary]) {
    let input = |hint: &str| {
        AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(hint.to_string()))
    };
    let mut commands: Vec<AvailableCommand> = dsh::commands::SLASH_COMMANDS
        .iter()
        .map(|c| {
            let command = AvailableCommand::new(c.name, c.description);
            match c.hint {
                Some(hint) => command.input(input(hint)),
                None => command,
            }
        })
        .collect();
    commands.extend(custom.iter().map(|c| {
        let command = AvailableCommand::new(
            c.name.clone(),
            format!("({}) {}", c.scope.label(), c.description),
        );
        match &c.argument_hint {
            Some(hint) => command.input(input(hint)),
            None => command,
        }
    }));
    let _ = cx.send_notification(SessionNotification::new(
        session.to_string(),
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
    ));
}

impl Server {
    fn live(&self, id: &str) -> Option<Arc<Live>> {
        lock(&self.sessions).get(id).cloned()
    }

    /// Tells the client of open session `id` its commands
    /// (`available_commands_update`) the first time, and again whenever
    /// its custom commands changed since it was last told (a command file
    /// added, removed or edited). Nothing for a session that is not open.
    fn announce_commands(&self, cx: &Conn, id: &str) {
        let Some(live) = self.live(id) else {
            return;
        };
        let custom = live.session.custom_commands().summaries();
        let mut announced = lock(&live.announced);
        if announced.as_ref() == Some(&custom) {
            return;
        }
        announce_commands(cx, id, &custom);
        *announced = Some(custom);
    }

    /// Opens a controller session in `cwd` with the client's MCP servers
    /// and files (resuming `resume`), attaches as its approver and starts
    /// forwarding its events; a resumed session's history has been sent
    /// when this returns. Returns the ACP session id and its modes.
    async fn open(
        &self,
        cx: &Conn,
        cwd: PathBuf,
        mcp: &[McpServer],
        resume: Option<&str>,
    ) -> Result<(String, SessionModeState), String> {
        check_cwd(&cwd).await?;
        let files = ClientFiles::of(cx, resume, &lock(&self.client_fs)).map(Arc::new);
        let options = SessionOptions {
            cwd: Some(cwd.clone()),
            resume: resume.map(str::to_string),
            mcp: mcp.iter().filter_map(client_server).collect(),
            files: files.clone().map(|f| f as Arc<dyn EditorFiles>),
            title: false,
            ..SessionOptions::default()
        };
        let session = match self.controller.open(options).await {
            Ok(session) => session,
            Err(OpenError::Failed { error, warnings }) => {
                // ACP has no channel for notices: the client's log (dsh's
                // stderr) gets them.
                for warning in warnings {
                    tracing::warn!(target: "dsh_acp", "{warning}");
                }
                return Err(error.to_string());
            }
            Err(OpenError::Stopped(never)) => match never {},
        };
        let id = session.key().to_string();
        if let Some(f) = &files {
            f.bind(&id);
        }
        // Relative paths in calls are located in the session's cwd (for a
        // loaded session, the one session/load names: the log records none).
        let cwd = session.info().map_or(cwd, |info| info.cwd);
        let told = Arc::new(Mutex::new(current_mode(&session).unwrap_or_default()));
        let approver = session.attach_approver();
        let forwarded =
            updates::forward(cx.clone(), id.clone(), session.clone(), cwd, told.clone());
        forwarded.reached(session.live_from()).await;
        let modes = modes_of(&session);
        lock(&self.sessions).insert(
            id.clone(),
            Arc::new(Live {
                session,
                _approver: approver,
                forwarded,
                told,
                cancels: watch::Sender::new(0),
                announced: Mutex::new(None),
            }),
        );
        Ok((id, modes))
    }

    /// Runs one turn and maps how it ended to a stop reason, once every
    /// update of the turn was sent; a slash command ([`commands`]) is
    /// answered without a turn. `cancels` follows the session's cancels
    /// from the moment the request arrived: one before the prompt is sent
    /// ends it `cancelled` without a turn; one after aborts the turn (the
    /// agent keeps an abort for a queued turn that has not started).
    async fn prompt(
        &self,
        cx: &Conn,
        req: &PromptRequest,
        cancels: Option<watch::Receiver<u64>>,
    ) -> Result<StopReason, String> {
        let id = req.session_id.to_string();
        let live = self
            .live(&id)
            .ok_or_else(|| format!("no session \"{id}\" (create it with session/new)"))?;
        let text = prompt_text(&req.prompt);
        // `/init` and custom commands become the user's message: a turn.
        let turn_command = dsh::commands::parse(text.trim())
            .filter(|(name, _)| live.session.is_turn_command(name));
        if turn_command.is_none() {
            if let Some((name, args)) = commands::parse(&text) {
                self.command(cx, &id, &live, name, args).await;
                return Ok(StopReason::EndTurn);
            }
        }
        let images = self.images(&live, req).await?;
        let cancels = cancels.unwrap_or_else(|| live.cancels.subscribe());
        if cancels.has_changed().unwrap_or(false) {
            return Ok(StopReason::Cancelled);
        }
        let mut events = live.session.subscribe(None);
        match turn_command {
            Some((name, args)) => match live.session.command(name, args).await {
                Reply::Sent(_) => {}
                reply => {
                    live.forwarded.reached(live.session.next_seq()).await;
                    updates::say(cx, &id, &commands::word(name, &reply));
                    return Ok(StopReason::EndTurn);
                }
            },
            None => live
                .session
                .prompt_with(&text, images)
                .await
                .map_err(|e| e.message)?,
        }
        // A cancel after the check above found nothing to abort; now the
        // turn is queued and an abort reaches it.
        if cancels.has_changed().unwrap_or(false) {
            live.session.abort(CANCELLED);
        }
        let Some((seq, reason, finish)) = turn_end(&mut events).await else {
            // The session closed under the turn.
            return Ok(StopReason::Cancelled);
        };
        live.forwarded.reached(seq + 1).await;
        Ok(stop_reason(Some(&reason), finish.as_deref()))
    }

    /// The image blocks of `req`'s prompt, checked and loaded off the
    /// async threads (see [`images::prompt_images`]).
    ///
    /// # Errors
    /// An image is refused, or the session's model takes no images.
    async fn images(
        &self,
        live: &Live,
        req: &PromptRequest,
    ) -> Result<Vec<dsh_protocol::ContentBlock>, String> {
        let blocks: Vec<AcpBlock> = req
            .prompt
            .iter()
            .filter(|b| matches!(b, AcpBlock::Image(_)))
            .cloned()
            .collect();
        if blocks.is_empty() {
            return Ok(Vec::new());
        }
        let model = live.session.model().map_err(|e| e.message)?;
        if !live.session.takes_images().map_err(|e| e.message)? {
            return Err(format!(
                "model {model} does not take images (set `images = true` under [models.\"{model}\"] if it does)"
            ));
        }
        tokio::task::spawn_blocking(move || images::prompt_images(&blocks))
            .await
            .map_err(|e| format!("the images could not be read: {e}"))?
    }

    /// Runs slash command `name` and sends its answer as agent text, after
    /// the updates it caused (a mode change). `/exit` closes the session.
    async fn command(&self, cx: &Conn, id: &str, live: &Live, name: &str, args: &str) {
        let reply = live.session.command(name, args).await;
        if reply == Reply::Exit {
            self.end(id, "/exit").await;
        } else {
            live.forwarded.reached(live.session.next_seq()).await;
        }
        updates::say(cx, id, &commands::word(name, &reply));
    }

    /// Ends ACP session `id`: its controller session is closed.
    async fn end(&self, id: &str, why: &str) {
        let live = lock(&self.sessions).remove(id);
        if live.is_some() {
            // Only an unknown id fails, and this one was open.
            let _ = self.controller.close(id, why).await;
        }
    }

    /// `session/set_mode`: a permission preset (leaving plan mode) or plan
    /// mode; the client is told the mode before the response.
    fn set_mode(&self, cx: &Conn, session: &str, mode: &str) -> Result<(), String> {
        let live = self
            .live(session)
            .ok_or_else(|| format!("no session \"{session}\""))?;
        let mut told = lock(&live.told);
        if mode == "plan" {
            live.session.set_plan_mode(true, "acp")
        } else {
            let m: SandboxMode = mode.parse().map_err(|_| {
                let known: Vec<&str> = MODES.iter().map(|(id, _)| *id).collect();
                format!("unknown mode \"{mode}\"; modes: {}", known.join(", "))
            })?;
            live.session
                .set_plan_mode(false, "acp")
                .and_then(|_| live.session.set_permission(m, "acp"))
                .map(|()| true)
        }
        .map_err(|e| e.message)?;
        mode.clone_into(&mut told);
        let _ = cx.send_notification(SessionNotification::new(
            session.to_string(),
            SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.to_string())),
        ));
        Ok(())
    }

    /// Closes every session (turns aborted, logs flushed, MCP servers and
    /// commands stopped).
    async fn shutdown(&self) {
        self.controller.shutdown("the client disconnected").await;
        lock(&self.sessions).clear();
    }
}

/// The first turn end `events` reads: its sequence number, how the turn
/// ended and why the model's last step stopped. `None`: the session
/// closed first.
async fn turn_end(events: &mut Subscription) -> Option<(u64, TurnEndReason, Option<String>)> {
    while let Some(item) = events.next().await {
        if let Ok(event) = item {
            if let EventBody::TurnEnded { reason, finish, .. } = &event.body {
                return Some((event.seq, reason.clone(), finish.clone()));
            }
        }
    }
    None
}

/// The ACP mode a session is in: `plan` when plan mode is on, else its
/// permission mode. `None` once it is closed.
fn current_mode(session: &Session) -> Option<String> {
    if session.plan_mode() {
        return Some("plan".to_string());
    }
    session.permission().ok().map(|m| m.as_str().to_string())
}

/// The modes of a session, the current one from [`current_mode`].
fn modes_of(session: &Session) -> SessionModeState {
    SessionModeState::new(
        current_mode(session).unwrap_or_default(),
        MODES
            .iter()
            .map(|(id, name)| SessionMode::new(*id, *name))
            .collect(),
    )
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
/// its output limit: `finish`, why its last step stopped, is `max_tokens`
/// or `max-tokens`), `max_turn_requests` (dsh's max-steps), `cancelled`
/// (an abort, a disposal, or no end at all), `refusal` for an error turn.
pub fn stop_reason(end: Option<&TurnEndReason>, finish: Option<&str>) -> StopReason {
    match end {
        Some(TurnEndReason::Completed) => match finish {
            Some("max_tokens" | "max-tokens") => StopReason::MaxTokens,
            _ => StopReason::EndTurn,
        },
        Some(TurnEndReason::MaxSteps) => StopReason::MaxTurnRequests,
        Some(TurnEndReason::Error { .. }) => StopReason::Refusal,
        _ => StopReason::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_ends_map_to_stop_reasons() {
        let completed = Some(&TurnEndReason::Completed);
        assert_eq!(stop_reason(completed, None), StopReason::EndTurn);
        assert_eq!(stop_reason(completed, Some("stop")), StopReason::EndTurn);
        assert_eq!(
            stop_reason(completed, Some("max_tokens")),
            StopReason::MaxTokens
        );
        assert_eq!(
            stop_reason(completed, Some("max-tokens")),
            StopReason::MaxTokens
        );
        assert_eq!(
            stop_reason(Some(&TurnEndReason::MaxSteps), None),
            StopReason::MaxTurnRequests
        );
        let error = TurnEndReason::Error {
            message: "x".into(),
            code: None,
        };
        assert_eq!(stop_reason(Some(&error), None), StopReason::Refusal);
        let aborted = TurnEndReason::Aborted { reason: None };
        assert_eq!(stop_reason(Some(&aborted), None), StopReason::Cancelled);
        assert_eq!(stop_reason(None, None), StopReason::Cancelled);
    }
}
