//! The session registry: open (new, resumed, forked), list, get, close.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use dsh::{Settings, Stack, StackError};
use dsh_kernel::sync::lock;
use dsh_kernel::BoxFuture;
use dsh_protocol::codes;
use dsh_tool_fs::EditorFiles;

use crate::hub::{Hub, DEFAULT_RING_EVENTS};
use crate::session::Session;
use crate::translate::{Translator, WrittenChanges};
use crate::{CommandError, CommandResult};

/// The log-only event a forked session starts with: `{"from": <id>}`.
pub const FORK_EVENT: &str = "session/fork";

/// How a session is opened.
#[derive(Default)]
pub struct SessionOptions {
    /// The workspace (default: the settings' `cwd`, else the process's).
    pub cwd: Option<PathBuf>,
    /// Resume this saved session instead of starting an empty one.
    pub resume: Option<String>,
    /// MCP servers of this session on top of the configured ones (an ACP
    /// client's).
    pub mcp: Vec<dsh_mcp::McpServerConfig>,
    /// Route the file tools' reads and writes through an editor (an ACP
    /// client that serves files). Diffs of writes it takes come from what
    /// it was given.
    pub files: Option<Arc<dyn EditorFiles>>,
    /// Set plan mode at the start, and the source logged with it (`dsh run
    /// --plan` sets it on; a plain `dsh run` off, a resumed session's
    /// included). `None`: the session's own (a resumed one keeps its mode).
    pub plan_mode: Option<(bool, String)>,
    /// The plan `exit_plan_mode` presents is kept for
    /// [`Session::take_presented_plan`] and ends the turn, instead of being
    /// asked about (`dsh run --plan`).
    pub present_plan: bool,
    /// Ask the model for a title after the first turn (not with the echo
    /// model).
    pub title: bool,
    /// How long approval questions wait for a new answerer after the last
    /// one left ([`Session::attach_approver`]) before they are withdrawn:
    /// a browser tab that reloads finds its question still there. Zero
    /// (the default): at once.
    pub approver_grace: std::time::Duration,
}

/// Why a session did not open.
#[derive(Debug)]
pub enum OpenError<S> {
    /// It could not be set up. `warnings` are the notices collected before
    /// the failure (a repaired log); a front end shows them first.
    Failed {
        /// What failed: [`StackError::Usage`] for unusable input (exit 2
        /// on a command line), else the failure with its code.
        error: StackError,
        /// Notices collected before it.
        warnings: Vec<String>,
    },
    /// The stop future resolved while MCP servers started; what was
    /// started is stopped again.
    Stopped(S),
}

impl<S> OpenError<S> {
    fn failed(error: StackError) -> Self {
        OpenError::Failed {
            error,
            warnings: Vec::new(),
        }
    }
}

/// What to start the session's log from.
enum Start {
    New,
    Resume(String),
    Fork(Vec<dsh_session::SessionEvent>),
}

/// The session registry. Every front end holds one; each open session has
/// its own stack (its workspace, its MCP servers, its permission mode).
pub struct Controller {
    settings: Settings,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    ring_events: usize,
}

impl Controller {
    /// A registry opening sessions from `settings` (what the command line
    /// or an embedder chose; a session's `cwd` replaces `settings.cwd`).
    pub fn new(settings: Settings) -> Self {
        Self {
            settings,
            sessions: Mutex::new(HashMap::new()),
            ring_events: DEFAULT_RING_EVENTS,
        }
    }

    /// Keeps at most `events` events per session for late readers
    /// (default [`DEFAULT_RING_EVENTS`]).
    #[must_use]
    pub fn with_ring_events(mut self, events: usize) -> Self {
        self.ring_events = events;
        self
    }

    /// The settings sessions are opened from.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Opens a session: resolves the configuration in its workspace,
    /// builds its stack, claims its log (a resumed one is locked and
    /// repaired before anything starts), starts its MCP servers and its
    /// agent. Its event stream begins with [`crate::EventBody::SessionStarted`],
    /// then a resumed session's history, then the warnings.
    ///
    /// # Errors
    /// [`OpenError::Failed`]: configuration, session id, log (missing,
    /// corrupt, locked), or the session is open here already.
    pub async fn open(
        &self,
        options: SessionOptions,
    ) -> Result<Arc<Session>, OpenError<std::convert::Infallible>> {
        self.open_until(options, std::future::pending()).await
    }

    /// [`Controller::open`], given up when `stop` resolves while the MCP
    /// servers start (a signal): the servers started are stopped, those
    /// still starting killed.
    ///
    /// # Errors
    /// As [`Controller::open`]; [`OpenError::Stopped`] with `stop`'s value.
    pub async fn open_until<S>(
        &self,
        options: SessionOptions,
        stop: impl Future<Output = S>,
    ) -> Result<Arc<Session>, OpenError<S>> {
        let start = match options.resume.clone() {
            Some(id) => Start::Resume(id),
            None => Start::New,
        };
        self.start(options, start, stop).await
    }

    /// Opens a new session whose history is a copy of session `id`'s (an
    /// open one, or a saved log), marked with a [`FORK_EVENT`]. The
    /// original goes on unchanged.
    ///
    /// # Errors
    /// As [`Controller::open`]; `Failed` with a usage error when `id` is
    /// neither open nor saved.
    pub async fn fork(
        &self,
        id: &str,
        mut options: SessionOptions,
    ) -> Result<Arc<Session>, OpenError<std::convert::Infallible>> {
        let events = match self.find_open(id) {
            Some(session) => session.log_events(),
            None => {
                let resolved = dsh::resolve(&self.settings).map_err(OpenError::failed)?;
                dsh_session::validate_session_id(id)
                    .map_err(|e| OpenError::failed(StackError::Usage(e.to_string())))?;
                let path = resolved.session_dir.join(format!("{id}.jsonl"));
                if !path.is_file() {
                    return Err(OpenError::failed(StackError::Usage(format!(
                        "no session \"{id}\" in {} (see `dsh session list`)",
                        resolved.session_dir.display()
                    ))));
                }
                dsh_session::load_jsonl(&path)
                    .map_err(|e| OpenError::failed(StackError::Usage(e.to_string())))?
                    .events
            }
        };
        let link = dsh_protocol::EventPayload::Other {
            kind: FORK_EVENT.to_string(),
            data: serde_json::json!({ "from": id }),
        };
        let seed = dsh_session::fork_seed(&events, link, crate::event::now_ms());
        options.resume = None;
        self.start(options, Start::Fork(seed), std::future::pending())
            .await
    }

    async fn start<S>(
        &self,
        options: SessionOptions,
        start: Start,
        stop: impl Future<Output = S>,
    ) -> Result<Arc<Session>, OpenError<S>> {
        if let Start::Resume(id) = &start {
            if self.find_open(id).is_some() {
                return Err(OpenError::failed(StackError::Usage(format!(
                    "session \"{id}\" is already open in this process"
                ))));
            }
        }
        if let Some(cwd) = &options.cwd {
            check_workspace(cwd).map_err(|m| OpenError::failed(StackError::Usage(m)))?;
        }
        let settings = Settings {
            cwd: options.cwd.clone().or_else(|| self.settings.cwd.clone()),
            ..self.settings.clone()
        };
        let mut resolved = dsh::resolve(&settings).map_err(OpenError::failed)?;
        resolved.mcp.extend(options.mcp.iter().cloned());
        let mut stack = Stack::build(resolved).map_err(OpenError::failed)?;
        let resumed = matches!(start, Start::Resume(_));
        let prepared = match start {
            Start::New => stack.prepare_session(None),
            Start::Resume(id) => stack.prepare_session(Some(&id)),
            Start::Fork(seed) => Ok(stack.prepare_fork(seed)),
        };
        let prepared = match prepared {
            Ok(p) => p,
            Err(error) => {
                let warnings = stack.take_warnings();
                stack.shutdown().await;
                return Err(OpenError::Failed { error, warnings });
            }
        };
        let mut warnings = stack.take_warnings();
        let started = {
            let mcp = stack.start_mcp();
            tokio::pin!(mcp, stop);
            tokio::select! {
                failures = &mut mcp => Ok(failures),
                s = &mut stop => Err(s),
            }
        };
        match started {
            Ok(failures) => warnings.extend(failures.into_iter().map(|(_, m)| m)),
            Err(s) => {
                stack.shutdown().await;
                return Err(OpenError::Stopped(s));
            }
        }
        let seed = if resumed {
            prepared.seed().to_vec()
        } else {
            Vec::new()
        };
        let handle = match stack.create_agent_in(prepared) {
            Ok(h) => h,
            Err(error) => {
                warnings.extend(stack.take_warnings());
                stack.shutdown().await;
                return Err(OpenError::Failed { error, warnings });
            }
        };
        let agent = handle.agent();
        let key = agent.session().id().to_string();
        let cwd = stack.resolved.cwd.clone();
        let written = options
            .files
            .as_ref()
            .filter(|f| f.writes())
            .map(|_| Arc::new(WrittenChanges::default()));
        if let Some(files) = options.files {
            let files: Arc<dyn EditorFiles> = match &written {
                Some(w) => Arc::new(Recording {
                    inner: files,
                    written: w.clone(),
                }),
                None => files,
            };
            stack.files.set_editor(Some(files));
        }
        if options.present_plan {
            stack.plan.set_review(dsh::plan::PlanReview::Present);
        }
        let stack = Arc::new(stack);
        let hub = Hub::new(self.ring_events);
        let translator = Translator::new(cwd.clone(), true, written);
        let session = Session::new(
            key.clone(),
            stack.clone(),
            handle,
            hub,
            translator,
            options.approver_grace,
            dsh::custom_commands::Commands::new(dsh::custom_commands::CommandRoots::for_session(
                &cwd,
                self.settings.project_trust,
            )),
        );
        session.publish_started(&stack, resumed, None);
        session.wire(&stack, &seed, cwd.clone());
        // After the wiring, so the stream (`dsh run --output-format
        // stream-json`) has it like every other event of the log.
        log_workspace(&agent.session(), &cwd);
        stack.announce_permission(agent.as_ref());
        if let Some((on, source)) = &options.plan_mode {
            let _ = session.set_plan_mode(*on, source);
        }
        warnings.extend(stack.take_warnings());
        warnings.extend(session.custom_command_warnings());
        for w in warnings {
            session.warn(w);
        }
        if options.title {
            session.title_after_first_turn(&stack);
        }
        drop(stack);
        lock(&self.sessions).insert(key, session.clone());
        Ok(session)
    }

    fn find_open(&self, id: &str) -> Option<Arc<Session>> {
        let sessions = lock(&self.sessions);
        sessions
            .get(id)
            .or_else(|| sessions.values().find(|s| s.id() == id))
            .cloned()
    }

    /// The open session `id` (the id it was opened under, or its current
    /// log's).
    ///
    /// # Errors
    /// `UNKNOWN_SESSION`.
    pub fn get(&self, id: &str) -> CommandResult<Arc<Session>> {
        self.find_open(id).ok_or_else(|| {
            CommandError::new(
                codes::UNKNOWN_SESSION,
                format!("no open session \"{id}\" (open it, or resume it from its log)"),
            )
        })
    }

    /// The open sessions, oldest first.
    pub fn list(&self) -> Vec<Arc<Session>> {
        let mut all: Vec<Arc<Session>> = lock(&self.sessions).values().cloned().collect();
        all.sort_by(|a, b| a.key().cmp(b.key()));
        all
    }

    /// The sessions saved in the session directory (open ones included),
    /// newest first.
    ///
    /// # Errors
    /// The configuration does not resolve, or the directory cannot be read.
    pub fn saved(&self) -> Result<Vec<dsh_session::SessionSummary>, StackError> {
        let resolved = dsh::resolve(&self.settings)?;
        if !resolved.session_dir.is_dir() {
            return Ok(Vec::new());
        }
        let mut all = dsh_session::list_sessions(&resolved.session_dir)
            .map_err(|e| StackError::Usage(e.to_string()))?;
        all.sort_by_key(|s| std::cmp::Reverse(s.created_ms));
        Ok(all)
    }

    /// Up to `limit` events of session `id`'s log from `from`: the open
    /// session's (in memory, so nothing waits for a flush), else the saved
    /// log's.
    ///
    /// # Errors
    /// `UNKNOWN_SESSION`: neither open nor saved (or an unusable id);
    /// `SESSION_READ_FAILED`: the log cannot be read.
    pub fn read_log(
        &self,
        id: &str,
        from: u64,
        limit: usize,
    ) -> CommandResult<Vec<dsh_session::SessionEvent>> {
        let page = |events: &mut dyn Iterator<Item = dsh_session::SessionEvent>| {
            events.filter(|e| e.seq >= from).take(limit).collect()
        };
        if let Some(session) = self.find_open(id) {
            return Ok(page(&mut session.log_events().into_iter()));
        }
        let unknown = || {
            CommandError::new(
                codes::UNKNOWN_SESSION,
                format!("no session \"{id}\" is open or saved"),
            )
        };
        dsh_session::validate_session_id(id).map_err(|_| unknown())?;
        let resolved = dsh::resolve(&self.settings)
            .map_err(|e| CommandError::new(codes::INVALID_CONFIG, e.to_string()))?;
        let path = resolved.session_dir.join(format!("{id}.jsonl"));
        if !path.is_file() {
            return Err(unknown());
        }
        let log = dsh_session::load_jsonl(&path)
            .map_err(|e| CommandError::new(codes::SESSION_READ_FAILED, e.to_string()))?;
        Ok(page(&mut log.events.into_iter()))
    }

    /// Closes session `id` ([`Session::close`]) and forgets it.
    ///
    /// # Errors
    /// `UNKNOWN_SESSION`.
    pub async fn close(&self, id: &str, reason: &str) -> CommandResult<()> {
        let session = self.get(id)?;
        lock(&self.sessions).remove(session.key());
        session.close(reason).await;
        Ok(())
    }

    /// Closes every open session.
    pub async fn shutdown(&self, reason: &str) {
        let all: Vec<Arc<Session>> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        for session in all {
            session.close(reason).await;
        }
    }
}

/// Appends [`dsh_session::WORKSPACE_EVENT`] to `session`'s log unless the
/// last one already names `cwd`: a new session always logs where it runs,
/// a resumed or forked one when it moved (`dsh -c` finds the newest
/// session of a directory by it).
fn log_workspace(session: &dsh_session::Session, cwd: &std::path::Path) {
    let last = session.events().iter().rev().find_map(|e| match &e.data {
        dsh_protocol::EventPayload::Other { kind, data }
            if kind == dsh_session::WORKSPACE_EVENT =>
        {
            Some(
                data.get("cwd")
                    .and_then(serde_json::Value::as_str)
                    .map(PathBuf::from),
            )
        }
        _ => None,
    });
    if last.flatten().as_deref() != Some(cwd) {
        session.append(dsh_protocol::EventPayload::Other {
            kind: dsh_session::WORKSPACE_EVENT.to_string(),
            data: serde_json::json!({ "cwd": cwd }),
        });
    }
}

/// Checks a session's workspace: an existing directory. The error names
/// the path and what is wrong with it.
fn check_workspace(cwd: &std::path::Path) -> Result<(), String> {
    let shown = cwd.display();
    match std::fs::metadata(cwd) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!("workspace {shown} is not a directory")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("workspace {shown} does not exist"))
        }
        Err(e) => Err(format!("workspace {shown} cannot be used: {e}")),
    }
}

/// An editor's files, with each write it took kept for the diff.
struct Recording {
    inner: Arc<dyn EditorFiles>,
    written: Arc<WrittenChanges>,
}

impl EditorFiles for Recording {
    fn reads(&self) -> bool {
        self.inner.reads()
    }

    fn writes(&self) -> bool {
        self.inner.writes()
    }

    fn read_text(&self, path: &std::path::Path) -> BoxFuture<'static, Result<String, String>> {
        self.inner.read_text(path)
    }

    fn write_text(
        &self,
        path: &std::path::Path,
        old: Option<String>,
        new: String,
    ) -> BoxFuture<'static, Result<(), String>> {
        let written = self.written.clone();
        let (path, kept) = (path.to_path_buf(), (old.clone(), new.clone()));
        let write = self.inner.write_text(&path, old, new);
        Box::pin(async move {
            write.await?;
            written.record(&path, kept.0, kept.1);
            Ok(())
        })
    }
}
