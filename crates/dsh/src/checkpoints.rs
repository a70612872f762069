//! Checkpoints of the workspace, and `/undo`, `/redo` and `/rewind` on
//! them.
//!
//! The main agent's session gets a private git object store
//! (`<session-dir>/<id>/checkpoints`, see `dsh-checkpoint`). The workspace
//! is snapshotted into it before each turn (`at: "turn-start"`, step 0),
//! and before and after each step that runs a tool that may change files
//! (`"step"`, `"step-end"`; logged only when the files changed since the
//! last checkpoint), so changes made by `bash` are covered as well as the
//! file tools'. Each is a `checkpoint/created` event
//! `{turn, step, tree, at, workspace}`; `turn/end` stays the last event of
//! a turn.
//!
//! A turn's changes are the difference between its `turn-start` tree and
//! the last tree it logged. `/undo` sets the files the last turn (that changed
//! files and is not undone yet) changed back to the turn's start; a file
//! changed by hand since the turn ended is listed and left alone unless
//! forced. `/redo` reapplies the last undone turn until a new turn starts.
//! `/rewind` goes back to before any turn of the branch: the files, the
//! conversation (a `conversation/rewound` event: the old branch stays in
//! the log), or both. Each restore is logged as `checkpoint/restored`, and
//! the model is told what changed under it (a context message).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_agent::{Agent, AgentRegistry};
use dsh_checkpoint::{CheckpointError, CheckpointStore, RevertReport, Uncovered};
use dsh_kernel::sync::lock;
use dsh_kernel::Scope;
use dsh_llm::{ContentBlock, MessageSource};
use dsh_session::{EventPayload, RewindEvent, Session, SessionEvent};
use serde_json::{json, Value};

/// Event kind of a snapshot.
pub const CREATED_KIND: &str = "checkpoint/created";
/// Event kind of a restore (`/undo`, `/redo`, `/rewind`).
pub const RESTORED_KIND: &str = "checkpoint/restored";
/// Event kind of a store that cannot be used (logged once per session).
pub const UNAVAILABLE_KIND: &str = "checkpoint/unavailable";
/// The store's directory inside the session's data directory.
pub const STORE_DIR: &str = "checkpoints";

/// Tools that never change files: a step running only these takes no
/// checkpoint. Every other tool (bash, the file tools, MCP tools) may.
const READ_ONLY_TOOLS: &[&str] = &[
    "read",
    "glob",
    "grep",
    "echo",
    "todo_write",
    "bash_output",
    "job_output",
    "job_list",
    "exit_plan_mode",
    "skill",
];

/// The checkpoint service of a stack: one store per session, opened on
/// first use.
pub struct Checkpoints {
    session_dir: PathBuf,
    workspace: PathBuf,
    /// The id of the agent whose sessions are checkpointed (the main one;
    /// sub-agents work inside its turns, which cover their changes).
    agent_id: String,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    /// Warm-up threads still running ([`Checkpoints::settle`] waits).
    warming: Arc<(Mutex<usize>, std::sync::Condvar)>,
}

/// One session's store; its lock serialises every use of the store.
#[derive(Default)]
struct Slot {
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    /// `None` until opened; `Err` once it failed (said once).
    store: Option<Result<CheckpointStore, String>>,
    /// The tree of the last logged checkpoint.
    last_tree: Option<String>,
    /// The step running now called a tool that may write: its end takes a
    /// checkpoint.
    writing_step: bool,
}

/// The files of a restore, as text (relative to the workspace, sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Files {
    /// Written with their checkpointed content.
    pub restored: Vec<String>,
    /// Removed (the checkpoint does not have them).
    pub deleted: Vec<String>,
    /// Changed by hand since, left alone.
    pub user_changed: Vec<String>,
}

impl From<RevertReport> for Files {
    fn from(r: RevertReport) -> Self {
        let text = |v: Vec<PathBuf>| v.iter().map(|p| p.display().to_string()).collect();
        Files {
            restored: text(r.restored),
            deleted: text(r.deleted),
            user_changed: text(r.user_changed),
        }
    }
}

/// What `/undo`, `/redo` or a file rewind did.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    /// `undo`, `redo` or `rewind`.
    pub action: &'static str,
    /// The turn undone, redone, or rewound to.
    pub turn: u64,
    /// The files set back, deleted, and left alone (relative to the
    /// workspace).
    pub report: Files,
    /// Files the turn's file tools wrote that no checkpoint covers, with
    /// why (`ignored`, `over 10 MB`): they were not restored.
    pub uncovered: Vec<(String, String)>,
}

impl Restored {
    /// The user's summary: `undid turn 3: restored a.rs, deleted b.rs`,
    /// then what was left alone and why.
    pub fn describe(&self) -> String {
        let verb = match self.action {
            "undo" => format!("undid the file changes of turn {}", self.turn),
            "redo" => format!("redid the file changes of turn {}", self.turn),
            _ => format!("files set back to before turn {}", self.turn),
        };
        let r = &self.report;
        let mut out = if r.restored.is_empty() && r.deleted.is_empty() {
            format!("{verb}: no file needed changing")
        } else {
            let mut parts = Vec::new();
            if !r.restored.is_empty() {
                parts.push(format!("restored {}", list(&r.restored)));
            }
            if !r.deleted.is_empty() {
                parts.push(format!("deleted {}", list(&r.deleted)));
            }
            format!("{verb}: {}", parts.join("; "))
        };
        if !r.user_changed.is_empty() {
            let again = match self.action {
                "undo" => "/undo --force",
                "redo" => "/redo --force",
                _ => "--force",
            };
            out.push_str(&format!(
                "\nleft alone (changed by hand since; {again} overwrites them): {}",
                list(&r.user_changed)
            ));
        }
        if !self.uncovered.is_empty() {
            let shown: Vec<String> = self
                .uncovered
                .iter()
                .map(|(p, why)| format!("{p} ({why})"))
                .collect();
            out.push_str(&format!(
                "\nnot restored (checkpoints do not cover them): {}",
                shown.join(", ")
            ));
        }
        out
    }
}

/// Why a checkpoint command could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointFailure {
    /// A stable code (`CHECKPOINT_UNAVAILABLE`, `CHECKPOINT_FAILED`,
    /// `INVALID_COMMAND`).
    pub code: &'static str,
    /// What happened and what to do.
    pub message: String,
}

impl CheckpointFailure {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl From<CheckpointError> for CheckpointFailure {
    fn from(e: CheckpointError) -> Self {
        use dsh_protocol::ErrorCode;
        let code = dsh_protocol::codes::ALL
            .iter()
            .find(|c| c.name == e.code())
            .map_or(dsh_protocol::codes::CHECKPOINT_FAILED, |c| c.name);
        Self::new(code, e.to_string())
    }
}

/// One turn of the branch, for `/rewind`'s list.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnPoint {
    /// The turn number.
    pub turn: u64,
    /// The `seq` of its `turn/start` event.
    pub start_seq: u64,
    /// When it started (Unix ms).
    pub time: u64,
    /// Its prompt's text (empty for a wake-up turn).
    pub prompt: String,
    /// The checkpoint before it.
    pub before: Option<String>,
    /// The checkpoint after it.
    pub after: Option<String>,
    /// The files it changed (filled by [`Checkpoints::turns`]).
    pub changed: Vec<String>,
    /// Whether its file changes are undone now.
    pub undone: bool,
}

/// What `/rewind N` restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewindScope {
    /// Files and conversation.
    Both,
    /// Only the files (`--files-only`).
    Files,
    /// Only the conversation (`--conversation-only`).
    Conversation,
}

/// What `/rewind N` did.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewound {
    /// The turn gone back to (it and later turns are undone).
    pub turn: u64,
    /// The file restore, unless conversation only.
    pub files: Option<Restored>,
    /// Whether the conversation was rewound.
    pub conversation: bool,
    /// The prompt of the turn rewound to, so a front end can offer it again.
    pub prompt: String,
}

impl Rewound {
    /// The user's summary.
    pub fn describe(&self) -> String {
        let mut out = Vec::new();
        if self.conversation {
            out.push(format!(
                "conversation rewound to before turn {} (the later turns stay in the log as an earlier branch)",
                self.turn
            ));
        }
        if let Some(files) = &self.files {
            out.push(files.describe());
        }
        out.join("\n")
    }
}

impl Checkpoints {
    /// Checkpoints for sessions of `agent_id` whose logs live in
    /// `session_dir`, of the workspace `workspace`.
    pub fn new(session_dir: PathBuf, workspace: PathBuf, agent_id: &str) -> Arc<Self> {
        Arc::new(Self {
            session_dir,
            workspace,
            agent_id: agent_id.to_string(),
            slots: Mutex::new(HashMap::new()),
            warming: Arc::new((Mutex::new(0), std::sync::Condvar::new())),
        })
    }

    /// Waits (at most `limit`) for the warm-up snapshots still running, so
    /// nothing writes a store when the process leaves or a front end
    /// removes an empty session. The stack's shutdown calls it.
    pub fn settle(&self, limit: std::time::Duration) {
        let (count, done) = &*self.warming;
        let guard = lock(count);
        let _ = done.wait_timeout_while(guard, limit, |n| *n > 0);
    }

    /// Where session `id`'s store lives.
    pub fn store_dir(session_dir: &Path, id: &str) -> PathBuf {
        session_dir.join(id).join(STORE_DIR)
    }

    /// Takes checkpoints for the agent's turns: before a turn (on its first
    /// request), before a step whose calls may write, at the end of a
    /// turn. Also warms a new session's store in the background, so the
    /// first turn does not wait for the first full snapshot.
    pub fn install(self: &Arc<Self>, agents: &AgentRegistry, scope: &Scope) {
        let this = self.clone();
        scope.add(agents.hooks().created.on(move |agent| {
            if this.watches(agent.as_ref()) {
                let (this, session) = (this.clone(), agent.session());
                *lock(&this.warming.0) += 1;
                std::thread::spawn(move || {
                    {
                        let slot = this.slot(session.id().as_str());
                        let mut st = lock(&slot.state);
                        if let Ok(store) = this.open(&session, &mut st) {
                            // Fills the private index; nothing is logged.
                            let _ = store.snapshot();
                        }
                    }
                    let (count, done) = &*this.warming;
                    *lock(count) -= 1;
                    done.notify_all();
                });
            }
        }));
        let this = self.clone();
        scope.add(agents.hooks().request.on(move |ctx, next| {
            let this = this.clone();
            async move {
                if ctx.step == 1 && !ctx.overflowed && this.watches(ctx.agent.as_ref()) {
                    let (session, turn) = (ctx.agent.session(), ctx.turn);
                    let this2 = this.clone();
                    let _ = tokio::task::spawn_blocking(move || {
                        this2.take(&session, turn, 0, "turn-start", true)
                    })
                    .await;
                }
                next.run(ctx).await
            }
        }));
        let this = self.clone();
        scope.add(agents.hooks().step_result.on(move |ctx, next| {
            let this = this.clone();
            async move {
                let writes = ctx.message.content.iter().any(|b| match b {
                    ContentBlock::ToolCall(c) => !READ_ONLY_TOOLS.contains(&c.name.as_str()),
                    _ => false,
                });
                if writes && this.watches(ctx.agent.as_ref()) {
                    let (session, turn, step) = (ctx.agent.session(), ctx.turn, ctx.step);
                    lock(&this.slot(session.id().as_str()).state).writing_step = true;
                    let this2 = this.clone();
                    let _ = tokio::task::spawn_blocking(move || {
                        this2.take(&session, turn, step, "step", false)
                    })
                    .await;
                }
                next.run(ctx).await
            }
        }));
        let this = self.clone();
        scope.add(agents.hooks().event.on(move |e| {
            if let EventPayload::StepEnd(end) = &e.event.data {
                if this.watches(e.agent.as_ref()) {
                    let session = e.agent.session();
                    let slot = this.slot(session.id().as_str());
                    let ran_writers = std::mem::take(&mut lock(&slot.state).writing_step);
                    if ran_writers {
                        this.take(&session, end.turn, end.step, "step-end", false);
                    }
                }
            }
        }));
    }

    fn watches(&self, agent: &dyn Agent) -> bool {
        agent.id().as_str() == self.agent_id
    }

    fn slot(&self, id: &str) -> Arc<Slot> {
        lock(&self.slots).entry(id.to_string()).or_default().clone()
    }

    /// The session's store, opened on first use. A store that cannot be
    /// opened is said once in the log (`checkpoint/unavailable`).
    fn open<'a>(
        &self,
        session: &Session,
        st: &'a mut SlotState,
    ) -> Result<&'a CheckpointStore, String> {
        if st.store.is_none() {
            let dir = Self::store_dir(&self.session_dir, session.id().as_str());
            let opened =
                CheckpointStore::open(dir, self.workspace.clone()).map_err(|e| e.to_string());
            if let Err(reason) = &opened {
                tracing::warn!("checkpoints are off for this session: {reason}");
                session.append(EventPayload::Other {
                    kind: UNAVAILABLE_KIND.to_string(),
                    data: json!({ "reason": reason }),
                });
            }
            st.store = Some(opened);
        }
        match st.store.as_ref() {
            Some(Ok(store)) => Ok(store),
            Some(Err(e)) => Err(e.clone()),
            None => Err("no store".to_string()),
        }
    }

    /// Snapshots the workspace and logs it; `always`: log even when the
    /// tree is the last one's. Failures are logged as warnings, never
    /// fatal to the turn.
    fn take(&self, session: &Arc<Session>, turn: u64, step: u64, at: &str, always: bool) {
        let slot = self.slot(session.id().as_str());
        let mut st = lock(&slot.state);
        if st.last_tree.is_none() {
            st.last_tree = last_tree(&session.events());
        }
        let snapshot = match self.open(session, &mut st) {
            Ok(store) => store.snapshot(),
            Err(_) => return,
        };
        match snapshot {
            Ok(snap) => {
                if !always && st.last_tree.as_deref() == Some(snap.tree.as_str()) {
                    return;
                }
                let mut data = json!({
                    "turn": turn,
                    "step": step,
                    "tree": snap.tree,
                    "at": at,
                    "workspace": self.workspace,
                });
                if !snap.skipped.is_empty() {
                    data["skipped"] = Value::Array(
                        snap.skipped
                            .iter()
                            .map(|s| {
                                json!({
                                    "path": s.path.display().to_string(),
                                    "size": s.size,
                                    "mtimeMs": s.mtime_ms,
                                })
                            })
                            .collect(),
                    );
                }
                st.last_tree = Some(snap.tree.clone());
                session.append(EventPayload::Other {
                    kind: CREATED_KIND.to_string(),
                    data,
                });
            }
            Err(e) => tracing::warn!("checkpoint of turn {turn} step {step} failed: {e}"),
        }
    }

    /// The turns of the session's branch with their checkpoints and the
    /// files each changed, oldest first.
    ///
    /// # Errors
    /// The store cannot be opened or read.
    pub fn turns(&self, session: &Arc<Session>) -> Result<Vec<TurnPoint>, CheckpointFailure> {
        let events = session.events();
        let mut turns = turn_points(&events);
        let slot = self.slot(session.id().as_str());
        let mut st = lock(&slot.state);
        let store = self.open(session, &mut st).map_err(unavailable)?;
        for t in &mut turns {
            if let (Some(b), Some(a)) = (&t.before, &t.after) {
                if b != a {
                    t.changed = store
                        .changed(b, a)?
                        .into_iter()
                        .map(|c| c.path.display().to_string())
                        .collect();
                }
            }
        }
        Ok(turns)
    }

    /// `/undo`: the last turn that changed files and is not undone gets its
    /// files set back to the turn's start.
    ///
    /// # Errors
    /// `INVALID_COMMAND` when there is nothing to undo; the store's errors
    /// (nothing is changed then).
    pub fn undo(&self, agent: &Arc<dyn Agent>, force: bool) -> Result<Restored, CheckpointFailure> {
        let session = agent.session();
        let events = session.events();
        let state = undo_state(&events);
        let target = turn_points(&events).into_iter().rev().find(|t| {
            !state.undone.contains(&t.turn)
                && matches!((&t.before, &t.after), (Some(b), Some(a)) if b != a)
        });
        let Some(t) = target else {
            let mut message = "nothing to undo: no turn of this session changed files (or every one is undone already)".to_string();
            // The last turn may have written files no checkpoint covers.
            if let Some(last) = turn_points(&events).last() {
                let slot = self.slot(session.id().as_str());
                let mut st = lock(&slot.state);
                if let Ok(store) = self.open(&session, &mut st) {
                    let missed = uncovered(store, &events, last.turn, "undo");
                    if !missed.is_empty() {
                        let shown: Vec<String> = missed
                            .iter()
                            .map(|(p, why)| format!("{p} ({why})"))
                            .collect();
                        message.push_str(&format!(
                            "; turn {} changed files checkpoints do not cover, which were not restored: {}",
                            last.turn,
                            shown.join(", ")
                        ));
                    }
                }
            }
            return Err(CheckpointFailure::new(
                dsh_protocol::codes::INVALID_COMMAND,
                message,
            ));
        };
        let (before, after) = (
            t.before.clone().unwrap_or_default(),
            t.after.clone().unwrap_or_default(),
        );
        self.restore(agent, &events, "undo", t.turn, &before, &after, force)
    }

    /// `/redo`: reapplies the last undone turn's file changes, while no new
    /// turn has started since.
    ///
    /// # Errors
    /// `INVALID_COMMAND` when there is nothing to redo; the store's errors.
    pub fn redo(&self, agent: &Arc<dyn Agent>, force: bool) -> Result<Restored, CheckpointFailure> {
        let session = agent.session();
        let events = session.events();
        let state = undo_state(&events);
        let Some(turn) = state.redo.last().copied() else {
            return Err(CheckpointFailure::new(
                dsh_protocol::codes::INVALID_COMMAND,
                "nothing to redo: /redo reapplies what /undo set back, until a new turn starts",
            ));
        };
        let Some(t) = turn_points(&events).into_iter().find(|t| t.turn == turn) else {
            return Err(CheckpointFailure::new(
                dsh_protocol::codes::INVALID_COMMAND,
                format!("nothing to redo: turn {turn} is no longer on this branch"),
            ));
        };
        let (before, after) = (
            t.before.clone().unwrap_or_default(),
            t.after.clone().unwrap_or_default(),
        );
        self.restore(agent, &events, "redo", turn, &after, &before, force)
    }

    /// `/rewind N`: back to before turn `turn` of the branch: its files
    /// (from the checkpoint before it), its conversation (a
    /// `conversation/rewound` event), or both.
    ///
    /// # Errors
    /// `INVALID_COMMAND` for a turn not on the branch; the store's errors
    /// (then nothing changed: the files are restored before the
    /// conversation is rewound).
    pub fn rewind(
        &self,
        agent: &Arc<dyn Agent>,
        turn: u64,
        scope: RewindScope,
        force: bool,
    ) -> Result<Rewound, CheckpointFailure> {
        let session = agent.session();
        let events = session.events();
        let turns = turn_points(&events);
        let Some(t) = turns.iter().find(|t| t.turn == turn).cloned() else {
            let on: Vec<String> = turns.iter().map(|t| t.turn.to_string()).collect();
            return Err(CheckpointFailure::new(
                dsh_protocol::codes::INVALID_COMMAND,
                if on.is_empty() {
                    "nothing to rewind: this session has no turns yet".to_string()
                } else {
                    format!(
                        "turn {turn} is not on this session's branch; its turns: {}",
                        on.join(", ")
                    )
                },
            ));
        };
        let files = if scope != RewindScope::Conversation {
            let Some(before) = t.before.clone() else {
                return Err(CheckpointFailure::new(
                    dsh_protocol::codes::CHECKPOINT_UNAVAILABLE,
                    format!("turn {turn} has no checkpoint (checkpoints were off or failed then); rewind the conversation only with --conversation-only"),
                ));
            };
            let latest = last_tree(&events).unwrap_or_else(|| before.clone());
            Some(self.restore(agent, &events, "rewind", turn, &before, &latest, force)?)
        } else {
            None
        };
        let conversation = scope != RewindScope::Files;
        if conversation {
            session.append(EventPayload::Rewind(RewindEvent {
                to_turn: turn,
                from_seq: t.start_seq,
            }));
            if files.is_none() {
                tell(
                    agent,
                    format!("The user rewound the conversation to before turn {turn}; the files were not rewound: changes made since then are still on disk."),
                );
            }
        }
        Ok(Rewound {
            turn,
            files,
            conversation,
            prompt: t.prompt,
        })
    }

    /// Sets the files to `target` where they differ from `expected`, logs
    /// it, takes a checkpoint of the result and tells the model.
    #[allow(clippy::too_many_arguments)]
    fn restore(
        &self,
        agent: &Arc<dyn Agent>,
        events: &[Arc<SessionEvent>],
        action: &'static str,
        turn: u64,
        target: &str,
        expected: &str,
        force: bool,
    ) -> Result<Restored, CheckpointFailure> {
        let session = agent.session();
        let slot = self.slot(session.id().as_str());
        let mut st = lock(&slot.state);
        let store = self.open(&session, &mut st).map_err(unavailable)?;
        for tree in [target, expected] {
            if !store.has_tree(tree) {
                return Err(CheckpointFailure::new(
                    dsh_protocol::codes::CHECKPOINT_UNAVAILABLE,
                    format!("the checkpoint store {} lacks checkpoint {tree} (deleted or damaged); no file was changed", Self::store_dir(&self.session_dir, session.id().as_str()).display()),
                ));
            }
        }
        let report = Files::from(store.revert(target, expected, force)?);
        let uncovered = uncovered(store, events, turn, action);
        session.append(EventPayload::Other {
            kind: RESTORED_KIND.to_string(),
            data: json!({
                "action": action,
                "turn": turn,
                "target": target,
                "expected": expected,
                "force": force,
                "restored": report.restored,
                "deleted": report.deleted,
                "userChanged": report.user_changed,
            }),
        });
        // The files as the restore left them: the next undo compares to it.
        if let Ok(snap) = store.snapshot() {
            st.last_tree = Some(snap.tree.clone());
            session.append(EventPayload::Other {
                kind: CREATED_KIND.to_string(),
                data: json!({
                    "turn": session.last_turn(),
                    "step": 0,
                    "tree": snap.tree,
                    "at": action,
                    "workspace": self.workspace,
                }),
            });
        }
        let restored = Restored {
            action,
            turn,
            report,
            uncovered,
        };
        if !restored.report.restored.is_empty() || !restored.report.deleted.is_empty() {
            tell(agent, model_note(&restored));
        }
        Ok(restored)
    }
}

fn unavailable(reason: String) -> CheckpointFailure {
    CheckpointFailure::new(
        dsh_protocol::codes::CHECKPOINT_UNAVAILABLE,
        format!("checkpoints are not available for this session: {reason}; no file was changed"),
    )
}

/// `a, b, c` (at most 8, then `and N more`).
fn list(paths: &[String]) -> String {
    let shown: Vec<&str> = paths.iter().take(8).map(String::as_str).collect();
    let more = paths.len().saturating_sub(8);
    let mut out = shown.join(", ");
    if more > 0 {
        out.push_str(&format!(" and {more} more"));
    }
    out
}

/// What the model is told after a restore.
fn model_note(r: &Restored) -> String {
    let what = match r.action {
        "undo" => format!(
            "The user undid the file changes of turn {} (/undo).",
            r.turn
        ),
        "redo" => format!(
            "The user redid the file changes of turn {} (/redo).",
            r.turn
        ),
        _ => format!(
            "The user set the files back to how they were before turn {} (/rewind).",
            r.turn
        ),
    };
    let mut out = what;
    if !r.report.restored.is_empty() {
        out.push_str(&format!(" Restored: {}.", r.report.restored.join(", ")));
    }
    if !r.report.deleted.is_empty() {
        out.push_str(&format!(" Deleted: {}.", r.report.deleted.join(", ")));
    }
    if !r.report.user_changed.is_empty() {
        out.push_str(&format!(
            " Left as the user changed them: {}.",
            r.report.user_changed.join(", ")
        ));
    }
    out.push_str(" Read a file again before you change it.");
    out
}

/// Appends `text` as context for the model's next request.
fn tell(agent: &Arc<dyn Agent>, text: String) {
    let _ = agent.inject(
        vec![ContentBlock::text(text)],
        MessageSource::plugin("checkpoints"),
    );
}

/// The tree of the last `checkpoint/created` of a log.
fn last_tree(events: &[Arc<SessionEvent>]) -> Option<String> {
    events.iter().rev().find_map(|e| created(e).map(|c| c.tree))
}

struct Created {
    turn: u64,
    tree: String,
    at: String,
}

fn created(e: &SessionEvent) -> Option<Created> {
    match &e.data {
        EventPayload::Other { kind, data } if kind == CREATED_KIND => Some(Created {
            turn: data.get("turn")?.as_u64()?,
            tree: data.get("tree")?.as_str()?.to_string(),
            at: data
                .get("at")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        }),
        _ => None,
    }
}

/// The checkpoints a turn takes of itself (`at`), as opposed to the ones
/// a restore takes.
const IN_TURN: [&str; 3] = ["turn-start", "step", "step-end"];

/// The turns on the log's branch with the tree before each (its
/// `turn-start` checkpoint) and after it (the last checkpoint it took).
pub fn turn_points(events: &[Arc<SessionEvent>]) -> Vec<TurnPoint> {
    let active = dsh_session::active_events(events);
    let mut turns: Vec<TurnPoint> = Vec::new();
    // The prompt is logged just before its turn starts (or, in older logs,
    // just after).
    let mut pending_prompt: Option<String> = None;
    let mut awaiting_prompt = false;
    for e in active {
        match &e.data {
            EventPayload::UserMessage(m) if !awaiting_prompt => {
                pending_prompt = Some(text_of(&m.content));
            }
            EventPayload::TurnStart(s) => {
                let prompt = pending_prompt.take();
                awaiting_prompt = prompt.is_none();
                turns.push(TurnPoint {
                    turn: s.turn,
                    start_seq: e.seq,
                    time: e.time,
                    prompt: prompt.unwrap_or_default(),
                    before: None,
                    after: None,
                    changed: Vec::new(),
                    undone: false,
                });
            }
            EventPayload::UserMessage(m) => {
                if let Some(t) = turns.last_mut() {
                    t.prompt = text_of(&m.content);
                }
                awaiting_prompt = false;
            }
            _ => {
                // A checkpoint of the turn itself (not a restore's) moves
                // its end: the last one logged is the state it left.
                if let Some(c) = created(e).filter(|c| IN_TURN.contains(&c.at.as_str())) {
                    if let Some(t) = turns.iter_mut().rev().find(|t| t.turn == c.turn) {
                        if c.at == "turn-start" && t.before.is_none() {
                            t.before = Some(c.tree.clone());
                        }
                        if t.before.is_some() {
                            t.after = Some(c.tree);
                        }
                    }
                }
            }
        }
    }
    let state = undo_state(events);
    for t in &mut turns {
        t.undone = state.undone.contains(&t.turn);
    }
    turns
}

/// The text blocks of a message, joined by spaces.
fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Which turns are undone now, and what `/redo` would reapply (last on top).
#[derive(Debug, Default)]
struct UndoState {
    undone: Vec<u64>,
    redo: Vec<u64>,
}

fn undo_state(events: &[Arc<SessionEvent>]) -> UndoState {
    let mut state = UndoState::default();
    // The log's turns, listed once at the first rewind.
    let mut starts: Option<Vec<u64>> = None;
    for e in events {
        match &e.data {
            EventPayload::Other { kind, data } if kind == RESTORED_KIND => {
                let turn = data.get("turn").and_then(Value::as_u64).unwrap_or(0);
                let changed = |k: &str| {
                    data.get(k)
                        .and_then(Value::as_array)
                        .is_some_and(|a| !a.is_empty())
                };
                if !changed("restored") && !changed("deleted") {
                    // Nothing was set back (every file was left alone):
                    // the turn is as undone as it was.
                    continue;
                }
                match data.get("action").and_then(Value::as_str) {
                    Some("undo") => {
                        state.undone.push(turn);
                        state.redo.push(turn);
                    }
                    Some("redo") => {
                        state.undone.retain(|t| *t != turn);
                        if state.redo.last() == Some(&turn) {
                            state.redo.pop();
                        }
                    }
                    Some("rewind") => {
                        state.redo.clear();
                        state.undone.retain(|t| *t < turn);
                        let starts = starts.get_or_insert_with(|| turn_starts(events));
                        state
                            .undone
                            .extend(starts.iter().copied().filter(|t| *t >= turn));
                    }
                    _ => {}
                }
            }
            // New work: what was undone stays undone, but cannot be redone
            // over it.
            EventPayload::TurnStart(_) => state.redo.clear(),
            _ => {}
        }
    }
    state
}

fn turn_starts(events: &[Arc<SessionEvent>]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::TurnStart(s) => Some(s.turn),
            _ => None,
        })
        .collect()
}

/// Files the turn's file tools wrote that no checkpoint covers (ignored,
/// too large), with the reason; and files over the size limit whose size
/// or time changed between the turn's checkpoints.
fn uncovered(
    store: &CheckpointStore,
    events: &[Arc<SessionEvent>],
    turn: u64,
    action: &str,
) -> Vec<(String, String)> {
    let turns: Vec<u64> = if action == "rewind" {
        turn_starts(events)
            .into_iter()
            .filter(|t| *t >= turn)
            .collect()
    } else {
        vec![turn]
    };
    let mut paths: Vec<String> = Vec::new();
    for e in events {
        if let EventPayload::ToolCall(c) = &e.data {
            if turns.contains(&c.turn) {
                if let Some(p) = written_path(&c.call.name, &c.call.arguments) {
                    if !paths.contains(&p) {
                        paths.push(p);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    if let Ok(coverage) = store.coverage(&paths) {
        for (path, why) in paths.iter().zip(coverage) {
            if let Some(why) = why {
                out.push((path.clone(), uncovered_reason(why)));
            }
        }
    }
    // Large files seen by the turn's checkpoints whose size or time moved.
    let mut seen: HashMap<String, Value> = HashMap::new();
    for e in events {
        if let EventPayload::Other { kind, data } = &e.data {
            if kind != CREATED_KIND
                || !turns.contains(&data.get("turn").and_then(Value::as_u64).unwrap_or(0))
            {
                continue;
            }
            for s in data
                .get("skipped")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(p) = s.get("path").and_then(Value::as_str) else {
                    continue;
                };
                let key = (s.get("size").cloned(), s.get("mtimeMs").cloned());
                let value = json!([key.0, key.1]);
                match seen.get(p) {
                    Some(v) if *v != value => {
                        if !out.iter().any(|(q, _)| q == p) {
                            out.push((p.to_string(), "over 10 MB".to_string()));
                        }
                    }
                    _ => {
                        seen.insert(p.to_string(), value);
                    }
                }
            }
        }
    }
    out
}

/// Why a checkpoint does not cover a file, in words.
fn uncovered_reason(why: Uncovered) -> String {
    match why {
        Uncovered::Ignored => "ignored".to_string(),
        Uncovered::TooLarge { size } => format!("over 10 MB: {size} bytes"),
        Uncovered::NestedRepository => "in a nested git repository".to_string(),
        Uncovered::GitMetadata => "git metadata".to_string(),
        Uncovered::OutsideWorkspace => "outside the workspace".to_string(),
    }
}

/// The path a file tool call wrote, if it is one.
fn written_path(tool: &str, arguments: &str) -> Option<String> {
    if !matches!(tool, "write" | "edit" | "str_replace_editor") {
        return None;
    }
    let args: Value = serde_json::from_str(arguments).ok()?;
    let path = args
        .get("file_path")
        .or_else(|| args.get("path"))
        .and_then(Value::as_str)?;
    Some(path.to_string())
}
