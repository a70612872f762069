//! JSON-RPC over any transport: a [`Server`] holds the controller, each
//! client is a [`Connection`] that takes frames in ([`Connection::handle`])
//! and puts frames out on a bounded queue the transport drains.
//!
//! A client that stops reading fills its queue; then it is dropped
//! ([`Connection::dropped`] resolves and the transport closes it) and
//! its subscriptions end. The sessions go on: nothing a client does or
//! fails to do stops a session but `session/close`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use dsh_controller::{Controller, EventBody, OpenError, Reply, Session, SessionOptions};
use dsh_kernel::sync::lock;
use dsh_protocol::codes;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

use crate::protocol::*;

/// Frames queued for one client before it counts as not reading and is
/// dropped.
pub const OUTBOUND_FRAMES: usize = 4096;

/// How long a session's approval questions wait for a client after the
/// last subscribed one left (a reloading browser tab comes back in time).
pub const APPROVER_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// The largest page `session/events` and `session/log` return.
pub const PAGE_MAX: usize = 1000;

/// JSON-RPC's own error codes.
mod rpc {
    pub(crate) const PARSE_ERROR: i64 = -32700;
    pub(crate) const INVALID_REQUEST: i64 = -32600;
    pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
    pub(crate) const INVALID_PARAMS: i64 = -32602;
    pub(crate) const SERVER_ERROR: i64 = -32000;
}

/// The controller as the server's clients share it.
pub struct Server {
    controller: Arc<Controller>,
    /// Set once `shutdown` was asked for over stdio, or the process stops.
    stopping: Notify,
    /// Held while a prompt is checked and sent: two clients prompting at
    /// once do not both start a turn.
    prompting: tokio::sync::Mutex<()>,
}

impl Server {
    /// A server on `controller`.
    pub fn new(controller: Arc<Controller>) -> Arc<Self> {
        Arc::new(Self {
            controller,
            stopping: Notify::new(),
            prompting: tokio::sync::Mutex::new(()),
        })
    }

    /// The controller.
    pub fn controller(&self) -> &Arc<Controller> {
        &self.controller
    }

    /// Runs one method outside any connection (a REST route): its result,
    /// or the error object. Subscribing makes no sense here.
    pub async fn call_once(
        self: &Arc<Self>,
        method: &str,
        params: Value,
    ) -> Result<Value, RpcError> {
        let (conn, _frames) = Connection::new(self.clone(), false);
        let outcome = conn.call(method, params).await;
        conn.close();
        outcome.map_err(|Failure(e)| e)
    }

    /// Resolves when a client asked the server to stop (`shutdown` over
    /// stdio).
    pub async fn stop_requested(&self) {
        self.stopping.notified().await;
    }
}

/// A failed call: the JSON-RPC error object.
struct Failure(RpcError);

impl Failure {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Failure(RpcError {
            code,
            message: message.into(),
            data: None,
        })
    }

    fn params(message: impl Into<String>) -> Self {
        let message = message.into();
        Failure(RpcError {
            code: rpc::INVALID_PARAMS,
            message: format!("Invalid params: {message}"),
            data: Some(dsh_controller::CommandError::new(
                codes::INVALID_ARGS,
                message,
            )),
        })
    }
}

impl From<dsh_controller::CommandError> for Failure {
    fn from(e: dsh_controller::CommandError) -> Self {
        Failure(RpcError {
            code: rpc::SERVER_ERROR,
            message: e.message.clone(),
            data: Some(e),
        })
    }
}

type Outcome = Result<Value, Failure>;

/// One client.
pub struct Connection {
    server: Arc<Server>,
    out: mpsc::Sender<String>,
    /// The client stopped reading (its queue filled) or went away.
    gone: AtomicBool,
    gone_notify: Notify,
    /// Its subscriptions: the forwarding task and its answerer guard.
    subscriptions: Mutex<HashMap<String, Subscribed>>,
    /// `shutdown` over stdio stops the server; over a socket it ends the
    /// connection only.
    stdio: bool,
    /// Requests being answered.
    inflight: std::sync::atomic::AtomicUsize,
    answered: Notify,
}

struct Subscribed {
    task: tokio::task::JoinHandle<()>,
    _approver: dsh_controller::ApproverGuard,
}

impl Drop for Subscribed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Connection {
    /// A client of `server` whose frames go to the returned receiver
    /// (at most [`OUTBOUND_FRAMES`] queued). `stdio`: see
    /// [`Connection::handle`]'s `shutdown`.
    pub fn new(server: Arc<Server>, stdio: bool) -> (Arc<Self>, mpsc::Receiver<String>) {
        let (out, rx) = mpsc::channel(OUTBOUND_FRAMES);
        (
            Arc::new(Self {
                server,
                out,
                gone: AtomicBool::new(false),
                gone_notify: Notify::new(),
                subscriptions: Mutex::new(HashMap::new()),
                stdio,
                inflight: std::sync::atomic::AtomicUsize::new(0),
                answered: Notify::new(),
            }),
            rx,
        )
    }

    /// Resolves once the client is dropped (it stopped reading) or ended
    /// with `shutdown`; the transport then closes it.
    pub async fn dropped(&self) {
        loop {
            let notified = self.gone_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.gone.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    /// Ends the connection: its subscriptions stop (the sessions go on).
    pub fn close(&self) {
        self.gone.store(true, Ordering::SeqCst);
        self.gone_notify.notify_waiters();
        lock(&self.subscriptions).clear();
    }

    /// Queues `frame`; a full queue drops the client.
    fn send(&self, frame: String) {
        if self.gone.load(Ordering::SeqCst) {
            return;
        }
        if self.out.try_send(frame).is_err() {
            tracing::warn!(target: "dsh_server", "a client stopped reading; dropping it");
            self.close();
        }
    }

    /// Queues an answer the transport made itself (a line too long).
    pub fn handle_raw_answer(&self, frame: String) {
        self.send(frame);
    }

    fn respond(&self, id: Value, outcome: Outcome) {
        let frame = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(Failure(error)) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        self.send(frame.to_string());
    }

    fn notify(&self, method: &str, params: impl Serialize) {
        let frame = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send(frame.to_string());
    }

    /// Takes one frame from the client: a request is answered (on the
    /// queue, possibly after later ones: each runs on its own task), a
    /// notification is ignored, anything else is answered with the
    /// JSON-RPC error it deserves. Never fails.
    pub fn handle(self: &Arc<Self>, frame: &str) {
        let message: Value = match serde_json::from_str(frame) {
            Ok(v) => v,
            Err(e) => {
                return self.respond(
                    Value::Null,
                    Err(Failure::new(rpc::PARSE_ERROR, format!("Parse error: {e}"))),
                )
            }
        };
        let Value::Object(mut message) = message else {
            return self.respond(
                Value::Null,
                Err(Failure::new(
                    rpc::INVALID_REQUEST,
                    "Invalid request: a message is one JSON object (batches are not supported)",
                )),
            );
        };
        let id = message.remove("id");
        let valid_id = matches!(
            id,
            None | Some(Value::Null | Value::Number(_) | Value::String(_))
        );
        let method = match message.remove("method") {
            Some(Value::String(m)) if valid_id && message.get("jsonrpc") == Some(&json!("2.0")) => m,
            _ => {
                return self.respond(
                    id.filter(|_| valid_id).unwrap_or(Value::Null),
                    Err(Failure::new(
                        rpc::INVALID_REQUEST,
                        "Invalid request: expected {\"jsonrpc\": \"2.0\", \"method\": <string>, \"id\"?, \"params\"?}",
                    )),
                )
            }
        };
        // A notification from the client asks for no answer; none is
        // defined, so it is ignored.
        let Some(id) = id else { return };
        let params = message.remove("params").unwrap_or(json!({}));
        let me = self.clone();
        self.inflight.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            let outcome = me.call(&method, params).await;
            me.respond(id, outcome);
            me.inflight.fetch_sub(1, Ordering::SeqCst);
            me.answered.notify_waiters();
        });
    }

    /// Waits until every request taken so far is answered (queued).
    pub async fn settled(&self) {
        loop {
            let answered = self.answered.notified();
            tokio::pin!(answered);
            answered.as_mut().enable();
            if self.inflight.load(Ordering::SeqCst) == 0 {
                return;
            }
            answered.await;
        }
    }

    async fn call(self: &Arc<Self>, method: &str, params: Value) -> Outcome {
        let c = self.server.controller.clone();
        match method {
            "initialize" => {
                let _: InitializeParams = parse(params)?;
                reply(InitializeResult {
                    server: "dsh".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    protocol: PROTOCOL_VERSION,
                    methods: METHODS.iter().map(|m| m.name.to_string()).collect(),
                    commands: dsh::commands::SLASH_COMMANDS
                        .iter()
                        .map(|c| CommandInfo {
                            name: c.name.to_string(),
                            description: c.description.to_string(),
                            hint: c.hint.map(str::to_string),
                            scope: None,
                        })
                        .collect(),
                })
            }
            "session/create" => self.create(parse(params)?).await,
            "session/load" => {
                let p: SessionParams = parse(params)?;
                let session = match c.get(&p.session_id) {
                    Ok(s) => s,
                    Err(_) => opened(
                        c.open(SessionOptions {
                            resume: Some(p.session_id.clone()),
                            title: true,
                            approver_grace: APPROVER_GRACE,
                            ..Default::default()
                        })
                        .await,
                    )?,
                };
                session_result(&session)
            }
            "session/fork" => {
                let p: SessionParams = parse(params)?;
                let session = opened(
                    c.fork(
                        &p.session_id,
                        SessionOptions {
                            title: true,
                            approver_grace: APPROVER_GRACE,
                            ..Default::default()
                        },
                    )
                    .await,
                )?;
                session_result(&session)
            }
            "session/list" => {
                let _: Empty = parse(params)?;
                let open = c
                    .list()
                    .iter()
                    .filter_map(|s| {
                        Some(OpenSession {
                            session_id: s.key().to_string(),
                            info: s.info().ok()?,
                        })
                    })
                    .collect();
                let saved = c
                    .saved()
                    .map_err(|e| {
                        dsh_controller::CommandError::new(codes::SESSION_READ_FAILED, e.to_string())
                    })?
                    .into_iter()
                    .map(|s| SavedSession {
                        session_id: s.id,
                        created_ms: s.created_ms,
                        title: s.title,
                        first_prompt: s.first_prompt,
                        turns: s.turns,
                        tokens: s.tokens,
                    })
                    .collect();
                reply(ListResult { open, saved })
            }
            "session/info" => {
                let p: SessionParams = parse(params)?;
                session_result(&*c.get(&p.session_id)?)
            }
            "session/close" => {
                let p: SessionParams = parse(params)?;
                let key = c.get(&p.session_id)?.key().to_string();
                // A subscription of this client gets `closed` like any other
                // (and then ends by itself).
                c.close(&key, "closed by a client").await?;
                reply(Empty {})
            }
            "session/subscribe" => self.subscribe(parse(params)?),
            "session/unsubscribe" => {
                let p: SessionParams = parse(params)?;
                let key = c.get(&p.session_id)?.key().to_string();
                lock(&self.subscriptions).remove(&key);
                reply(Empty {})
            }
            "session/prompt" => {
                let p: PromptParams = parse(params)?;
                let session = c.get(&p.session_id)?;
                let _one_at_a_time = self.server.prompting.lock().await;
                if session.busy() {
                    return Err(dsh_controller::CommandError::new(
                        codes::TURN_RUNNING,
                        "a turn runs in this session (one client drives a turn at a time); steer it, abort it, or prompt when it has ended",
                    )
                    .into());
                }
                session.prompt(&p.text).await?;
                reply(Empty {})
            }
            "session/steer" => {
                let p: PromptParams = parse(params)?;
                c.get(&p.session_id)?.steer(&p.text).await?;
                reply(Empty {})
            }
            "session/abort" => {
                let p: AbortParams = parse(params)?;
                let reason = p.reason.unwrap_or_else(|| "aborted by a client".into());
                c.get(&p.session_id)?.abort(&reason);
                reply(Empty {})
            }
            "session/set_model" => {
                let p: SetModelParams = parse(params)?;
                c.get(&p.session_id)?.set_model(&p.model, "serve")?;
                reply(Empty {})
            }
            "session/set_permission" => {
                let p: SetPermissionParams = parse(params)?;
                let mode = p.mode.parse::<dsh::SandboxMode>().map_err(|e| {
                    dsh_controller::CommandError::new(codes::INVALID_COMMAND, e.to_string())
                })?;
                c.get(&p.session_id)?.set_permission(mode, "serve")?;
                reply(Empty {})
            }
            "session/set_plan_mode" => {
                let p: SetPlanModeParams = parse(params)?;
                let changed = c.get(&p.session_id)?.set_plan_mode(p.on, "serve")?;
                reply(Changed { changed })
            }
            "session/compact" => {
                let p: CompactParams = parse(params)?;
                let session = c.get(&p.session_id)?;
                let outcome = session.compact(p.focus.as_deref()).await?;
                let window = session.context_window()?;
                reply(Text {
                    text: dsh_controller::commands::describe_compaction(&outcome, window),
                })
            }
            "session/answer" => {
                let p: AnswerParams = parse(params)?;
                c.get(&p.session_id)?.answer(&p.approval_id, p.decision)?;
                reply(Empty {})
            }
            "session/answer_question" => {
                let p: AnswerQuestionParams = parse(params)?;
                c.get(&p.session_id)?
                    .answer_question(&p.question_id, p.reply)?;
                reply(Empty {})
            }
            "session/command" => {
                let p: CommandParams = parse(params)?;
                let session = c.get(&p.session_id)?;
                let Some((name, args)) = dsh::commands::parse(&p.line) else {
                    return Err(Failure::params(
                        "line is not a chat command (it starts with / and a command name)",
                    ));
                };
                let reply_ = session.command(name, args).await;
                reply(CommandResult {
                    text: reply_.text(),
                    failed: matches!(reply_, Reply::Failed(_)),
                    exit: matches!(reply_, Reply::Exit),
                })
            }
            "session/files" => {
                let p: FilesParams = parse(params)?;
                let limit = p
                    .limit
                    .map_or(50, |l| usize::try_from(l).unwrap_or(PAGE_MAX))
                    .clamp(1, PAGE_MAX);
                let paths = c.get(&p.session_id)?.files(&p.query, limit)?;
                reply(FilesResult { paths })
            }
            "session/events" => {
                let p: PageParams = parse(params)?;
                let session = c.get(&p.session_id)?;
                let limit = page_limit(p.limit);
                let mut sub = session.subscribe(Some(p.from_seq.unwrap_or(0)));
                let mut events = Vec::new();
                let mut oldest = None;
                while events.len() < limit {
                    match sub.try_next() {
                        Some(Ok(e)) => events.push((*e).clone()),
                        Some(Err(lost)) => oldest = Some(lost.to),
                        None => break,
                    }
                }
                reply(EventsPage {
                    events,
                    next_seq: sub.position(),
                    oldest_seq: oldest,
                })
            }
            "session/log" => {
                let p: PageParams = parse(params)?;
                let from = p.from_seq.unwrap_or(0);
                let events = c.read_log(&p.session_id, from, page_limit(p.limit))?;
                let next_seq = events.last().map_or(from, |e| e.seq + 1);
                reply(LogPage { events, next_seq })
            }
            "shutdown" => {
                let _: Empty = parse(params)?;
                if self.stdio {
                    self.server.stopping.notify_waiters();
                }
                reply(Empty {})
            }
            other => Err(Failure::new(
                rpc::METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            )),
        }
    }

    async fn create(&self, p: CreateParams) -> Outcome {
        let c = &self.server.controller;
        let cwd = p.cwd.map(std::path::PathBuf::from);
        if cwd.as_ref().is_some_and(|d| !d.is_absolute()) {
            return Err(Failure::params("cwd must be an absolute path"));
        }
        let permission = match &p.permission {
            Some(m) => Some(
                m.parse::<dsh::SandboxMode>()
                    .map_err(|e| Failure::params(e.to_string()))?,
            ),
            None => None,
        };
        let session = opened(
            c.open(SessionOptions {
                cwd,
                plan_mode: p.plan_mode.map(|on| (on, "serve".to_string())),
                title: true,
                approver_grace: APPROVER_GRACE,
                ..Default::default()
            })
            .await,
        )?;
        let configured = async {
            if let Some(model) = &p.model {
                session.set_model(model, "serve")?;
            }
            if let Some(mode) = permission {
                session.set_permission(mode, "serve")?;
            }
            Ok::<(), dsh_controller::CommandError>(())
        };
        if let Err(e) = configured.await {
            let _ = c.close(session.key(), "its options were refused").await;
            return Err(e.into());
        }
        session_result(&session)
    }

    fn subscribe(self: &Arc<Self>, p: SubscribeParams) -> Outcome {
        let session = self.server.controller.get(&p.session_id)?;
        let key = session.key().to_string();
        let mut events = session
            .subscribe(p.from_seq)
            .with_log(p.log.unwrap_or(false));
        let result = SubscribeResult {
            next_seq: session.next_seq(),
            live_from: session.live_from(),
        };
        let me = Arc::downgrade(self);
        let id = key.clone();
        let task = tokio::spawn(async move {
            while let Some(item) = events.next().await {
                let Some(conn) = me.upgrade() else { return };
                if conn.gone.load(Ordering::SeqCst) {
                    return;
                }
                match item {
                    Ok(event) => {
                        let closed = matches!(event.body, EventBody::Closed { .. });
                        conn.notify(
                            "session.event",
                            EventNotification {
                                session_id: id.clone(),
                                event: (*event).clone(),
                            },
                        );
                        if closed {
                            return;
                        }
                    }
                    Err(lost) => conn.notify(
                        "session.lost",
                        LostNotification {
                            session_id: id.clone(),
                            from: lost.from,
                            to: lost.to,
                        },
                    ),
                }
            }
        });
        let subscribed = Subscribed {
            task,
            _approver: session.attach_approver(),
        };
        // A second subscribe replaces the first (from its own number).
        lock(&self.subscriptions).insert(key, subscribed);
        reply(result)
    }
}

/// The session opened, or the failure as an error object.
fn opened<S>(result: Result<Arc<Session>, OpenError<S>>) -> Result<Arc<Session>, Failure> {
    match result {
        Ok(s) => Ok(s),
        Err(OpenError::Failed { error, warnings }) => {
            use dsh_kernel::ErrorCode;
            let mut message = error.to_string();
            for w in warnings {
                message.push_str(&format!(" (note: {w})"));
            }
            Err(dsh_controller::CommandError::new(error.code(), message).into())
        }
        Err(OpenError::Stopped(_)) => {
            Err(Failure::new(rpc::SERVER_ERROR, "the server is stopping"))
        }
    }
}

fn session_result(session: &Session) -> Outcome {
    let commands = session
        .custom_commands()
        .summaries()
        .into_iter()
        .map(|c| CommandInfo {
            name: c.name,
            description: c.description,
            hint: c.argument_hint,
            scope: Some(c.scope.label().to_string()),
        })
        .collect();
    reply(SessionResult {
        session_id: session.key().to_string(),
        info: session.info()?,
        commands,
    })
}

fn page_limit(limit: Option<u32>) -> usize {
    limit
        .map_or(PAGE_MAX, |l| usize::try_from(l).unwrap_or(PAGE_MAX))
        .clamp(1, PAGE_MAX)
}

fn parse<P: DeserializeOwned>(params: Value) -> Result<P, Failure> {
    serde_json::from_value(params).map_err(|e| Failure::params(e.to_string()))
}

fn reply(result: impl Serialize) -> Outcome {
    serde_json::to_value(result).map_err(|e| Failure::new(rpc::SERVER_ERROR, e.to_string()))
}
