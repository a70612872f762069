//! One open session: its stack and agent, its event stream, and the
//! commands a front end sends it.
//!
//! Every command is a method; every fact a front end shows comes out of
//! [`Session::subscribe`]. Commands are safe to call from several clients
//! at once: a prompt sent while a turn runs is queued (or, with
//! [`Session::steer`], joins the running turn), an approval takes the
//! first answer, and the commands that need an idle session (`compact`,
//! `clear`) fail with `TURN_RUNNING` instead of waiting.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh::hooks::PromptDecision;
use dsh::{SandboxMode, Stack};
use dsh_agent::{Agent, AgentStatus};
use dsh_agent_loop::AgentHandle;
use dsh_kernel::sync::lock;
use dsh_kernel::Registration;
use dsh_llm::MessageSource;
use dsh_protocol::codes;

use crate::approvals::{Approvals, Watchers};
use crate::commands::{usage, Reply};
use crate::event::{Decision, EventBody, QuestionReply};
use crate::hub::{Hub, Subscription};
use crate::questions::{Askers, Questions};
use crate::translate::Translator;
use crate::{CommandError, CommandResult};

/// The most directory entries [`Session::files`] looks at.
pub const FILES_WALK_MAX: usize = 50_000;

/// How long [`Session::close`] waits for a title request to land in the log.
const TITLE_WAIT: Duration = Duration::from_secs(3);

/// How long [`Session::close`] waits for commands still running to let go
/// of the stack before shutting it down.
const RELEASE_WAIT: Duration = Duration::from_secs(5);
/// How long a between-turns command waits for an agent whose turn's end
/// is logged to go idle (it does so right after; see
/// [`Session::between_turns`]).
const SETTLE_WAIT: Duration = Duration::from_secs(2);

/// An open session. Obtained from [`crate::Controller`]; closed with
/// [`crate::Controller::close`] (or [`Session::close`]).
pub struct Session {
    /// The id it was opened under, kept after `/clear` (the registry's key).
    key: String,
    /// `None` once closed.
    stack: Mutex<Option<Arc<Stack>>>,
    handle: Mutex<Option<AgentHandle>>,
    agent: Mutex<Option<Arc<dyn Agent>>>,
    /// The id of the log the events come from (changes with `/clear`).
    follow: Arc<Mutex<String>>,
    pub(crate) hub: Arc<Hub>,
    approvals: Arc<Approvals>,
    /// The `ask_user` questions waiting.
    questions: Arc<Questions>,
    /// How many clients can answer questions, and how many attached ever
    /// (a detach's grace ends without effect when someone attached since).
    answerers: Mutex<(usize, u64)>,
    /// How long questions wait for a new answerer after the last left.
    approver_grace: Duration,
    listeners: Mutex<Vec<Registration>>,
    translator: Arc<Mutex<Translator>>,
    title: Mutex<Option<tokio::task::JoinHandle<()>>>,
    closed: AtomicBool,
    /// The first sequence number after a resumed session's history.
    live_from: std::sync::atomic::AtomicU64,
    /// A turn started (its message is logged) and has not logged its end.
    turn_open: Arc<AtomicBool>,
    /// Woken when the main agent goes idle (or is disposed).
    settled: Arc<tokio::sync::Notify>,
    /// The workspace's custom commands (read again when they change).
    custom: dsh::custom_commands::Commands,
    /// The limits of a custom command's turn (`model:`, `allowed-tools:`).
    command_turn: Arc<dsh::custom_commands::CommandTurn>,
}

/// What a session is, for lists and `/session`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The id of its log.
    pub id: String,
    /// The log file, when sessions are saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    /// Its workspace.
    pub cwd: PathBuf,
    /// The model of the next request.
    pub model: String,
    /// The models the session may switch to (`session/set_model`).
    pub models: Vec<String>,
    /// The permission mode.
    pub permission: String,
    /// Whether plan mode is on.
    pub plan_mode: bool,
    /// `idle`, `running` or `disposed`.
    pub status: String,
    /// The context meter's last reading: (tokens, window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<(u64, u64)>,
    /// Input tokens the provider reported, all requests.
    pub input_tokens: u64,
    /// Output tokens the provider reported, all requests.
    pub output_tokens: u64,
    /// Input tokens served from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// The title, once it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl SessionInfo {
    /// `/session`'s text: the id, the log, the token figures.
    pub fn describe(&self) -> String {
        let log = match &self.log {
            Some(path) => path.display().to_string(),
            None => "not saved (sessions kept in memory)".to_string(),
        };
        let context = match self.context {
            Some((tokens, window)) => dsh_session::format_usage(tokens, window),
            None => "no request yet".to_string(),
        };
        let mut reported = format!("input {}, output {}", self.input_tokens, self.output_tokens);
        if let Some(c) = self.cache_read_tokens {
            reported.push_str(&format!(", cache read {c}"));
        }
        format!(
            "session: {}\nlog: {log}\ntokens: {context}; reported {reported}",
            self.id
        )
    }
}

/// A background job of the session's agent (a bash task, a sub-agent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Its id (`bash-1`).
    pub id: String,
    /// What it does (the command, the description).
    pub title: String,
    /// Whether it still runs.
    pub running: bool,
}

/// Keeps approval questions coming to the clients while held; once the
/// last one is dropped (and no new one came within the session's grace,
/// [`crate::SessionOptions::approver_grace`]), the waiting questions are
/// withdrawn and later calls that need approval are denied (nobody can
/// answer).
pub struct ApproverGuard {
    session: Arc<Session>,
}

impl Drop for ApproverGuard {
    fn drop(&mut self) {
        self.session.detach_approver();
    }
}

impl Session {
    /// Builds the session around a created agent; the controller then
    /// replays, installs the listeners and announces.
    pub(crate) fn new(
        key: String,
        stack: Arc<Stack>,
        handle: AgentHandle,
        hub: Arc<Hub>,
        translator: Translator,
        approver_grace: Duration,
        custom: dsh::custom_commands::Commands,
    ) -> Arc<Self> {
        let agent = handle.agent();
        let id = agent.session().id().to_string();
        let translator = Arc::new(Mutex::new(translator));
        Arc::new(Self {
            key,
            approvals: Approvals::new(hub.clone(), translator.clone()),
            questions: Questions::new(hub.clone(), translator.clone()),
            stack: Mutex::new(Some(stack)),
            handle: Mutex::new(Some(handle)),
            agent: Mutex::new(Some(agent)),
            follow: Arc::new(Mutex::new(id)),
            hub,
            answerers: Mutex::new((0, 0)),
            approver_grace,
            listeners: Mutex::new(Vec::new()),
            translator,
            title: Mutex::new(None),
            closed: AtomicBool::new(false),
            live_from: std::sync::atomic::AtomicU64::new(0),
            turn_open: Arc::new(AtomicBool::new(false)),
            settled: Arc::new(tokio::sync::Notify::new()),
            custom,
            command_turn: dsh::custom_commands::CommandTurn::new(),
        })
    }

    /// The id the session was opened under; the registry keeps it after
    /// `/clear` started a new log.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The id of the session's current log.
    pub fn id(&self) -> String {
        lock(&self.follow).clone()
    }

    /// Reads the session's events from `from` (a sequence number; `None`:
    /// from the next one published). A client that reconnects passes the
    /// last number it saw plus one and loses nothing the ring still holds.
    pub fn subscribe(&self, from: Option<u64>) -> Subscription {
        let from = from.unwrap_or_else(|| self.hub.next_seq());
        Subscription::new(self.hub.clone(), from)
    }

    /// The first sequence number after the history a resumed session
    /// replays (its start event, then its log as events): where a client
    /// that wants only what happens from now on starts reading.
    pub fn live_from(&self) -> u64 {
        self.live_from.load(Ordering::SeqCst)
    }

    /// The sequence number the next event will get.
    pub fn next_seq(&self) -> u64 {
        self.hub.next_seq()
    }

    /// Whether the session was closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    pub(crate) fn stack(&self) -> CommandResult<Arc<Stack>> {
        lock(&self.stack).clone().ok_or_else(closed)
    }

    pub(crate) fn agent(&self) -> CommandResult<Arc<dyn Agent>> {
        lock(&self.agent).clone().ok_or_else(closed)
    }

    /// `idle`, `running` (a turn runs) or `disposed` (closed).
    pub fn status(&self) -> AgentStatus {
        self.agent()
            .map_or(AgentStatus::Disposed, |agent| agent.status())
    }

    /// Whether a turn runs now.
    pub fn is_running(&self) -> bool {
        self.status() == AgentStatus::Running
    }

    /// Checks that no turn runs, for a command that runs between turns
    /// (`what`, named in the error). A turn whose end is logged has ended
    /// for every client (`turn_ended` was published), but its agent goes
    /// idle a moment later; that moment is waited for (up to 2 s), so a
    /// client may send `/undo` as soon as it saw the turn end.
    ///
    /// # Errors
    /// `TURN_RUNNING` when a turn is open in the log, one is queued, or the
    /// agent did not settle in time.
    pub(crate) async fn between_turns(&self, what: &str) -> CommandResult<()> {
        let running = || {
            CommandError::new(
                codes::TURN_RUNNING,
                format!("{what} runs between turns; try again when this one has ended (abort it to stop it now)"),
            )
        };
        let deadline = tokio::time::Instant::now() + SETTLE_WAIT;
        loop {
            let settled = self.settled.notified();
            tokio::pin!(settled);
            // Registered before the check, so an idle announced in between
            // still wakes this wait.
            settled.as_mut().enable();
            if !self.is_running() {
                return Ok(());
            }
            if self.busy() {
                return Err(running());
            }
            if tokio::time::timeout_at(deadline, settled).await.is_err() {
                return Err(running());
            }
        }
    }

    /// Whether a turn is under way as far as the log goes (its message or
    /// start logged, its end not yet) or a message waits for the next one.
    /// Unlike [`Session::has_work`], `false` as soon as the turn's end is
    /// logged: a client that saw `turn_ended` may prompt at once.
    pub fn busy(&self) -> bool {
        self.turn_open.load(Ordering::SeqCst) || self.agent().is_ok_and(|a| a.has_queued())
    }

    /// Whether a turn runs or one is queued.
    pub fn has_work(&self) -> bool {
        self.agent().is_ok_and(|a| a.has_work())
    }

    /// Sends `text` as the user's message: a turn starts, or (when one
    /// runs) starts after it. The `UserPromptSubmit` hooks see it first.
    ///
    /// # Errors
    /// `PROMPT_BLOCKED` (a hook blocked it; the message says why);
    /// `SESSION_CLOSED`; the agent's own error.
    pub async fn prompt(&self, text: &str) -> CommandResult<()> {
        self.prompt_with(text, Vec::new()).await
    }

    /// [`Session::prompt`] with `extra` blocks after the prompt (the images
    /// an ACP client sent). Images the prompt names (`@shot.png`, a pasted
    /// path) are attached too (see [`crate::attach`]); one that cannot be
    /// is a warning event and the prompt goes without it.
    ///
    /// # Errors
    /// As [`Session::prompt`].
    pub async fn prompt_with(
        &self,
        text: &str,
        extra: Vec<dsh_llm::ContentBlock>,
    ) -> CommandResult<()> {
        let (agent, mut blocks) = self.submitted(text).await?;
        blocks.extend(extra);
        // Busy from now (the loop logs the message when it takes it).
        let was_open = self.turn_open.swap(true, Ordering::SeqCst);
        agent.send(blocks, MessageSource::User).map_err(|e| {
            self.turn_open.store(was_open, Ordering::SeqCst);
            CommandError::from_coded(e)
        })
    }

    /// Sends `text` into the running turn (the model reads it at its next
    /// step); with no turn running it starts one, as [`Session::prompt`].
    ///
    /// # Errors
    /// As [`Session::prompt`].
    pub async fn steer(&self, text: &str) -> CommandResult<()> {
        let (agent, blocks) = self.submitted(text).await?;
        agent
            .steer(blocks, MessageSource::User)
            .map_err(CommandError::from_coded)
    }

    async fn submitted(
        &self,
        text: &str,
    ) -> CommandResult<(Arc<dyn Agent>, Vec<dsh_llm::ContentBlock>)> {
        let stack = self.stack()?;
        let agent = self.agent()?;
        match stack.submit_prompt(&agent, text).await {
            PromptDecision::Send(mut blocks) => {
                blocks.extend(self.attachments(&stack, text).await);
                Ok((agent, blocks))
            }
            PromptDecision::Blocked(reason) => Err(CommandError::new(
                codes::PROMPT_BLOCKED,
                dsh::hooks::blocked_prompt_message(&reason),
            )),
        }
    }

    /// The images `text` names, loaded off the async threads; a warning
    /// event for each that is not attached.
    async fn attachments(&self, stack: &Stack, text: &str) -> Vec<dsh_llm::ContentBlock> {
        if !text.contains(['.']) {
            return Vec::new();
        }
        let (text, cwd) = (text.to_string(), stack.resolved.cwd.clone());
        let (model, takes) = (stack.model(), stack.takes_images());
        let attached = tokio::task::spawn_blocking(move || {
            crate::attach::attach_images(&text, &cwd, &model, takes)
        })
        .await
        .unwrap_or_else(|e| crate::attach::Attached {
            blocks: Vec::new(),
            notices: vec![format!("no image was attached: {e}")],
        });
        for notice in attached.notices {
            self.warn(notice);
        }
        attached.blocks
    }

    /// Aborts the running turn (and one queued): open tool calls are
    /// answered, processes killed, the turn ends `aborted` with `reason`.
    /// Nothing happens when idle.
    pub fn abort(&self, reason: &str) {
        if let Ok(agent) = self.agent() {
            agent.abort(Some(reason.to_string()));
        }
    }

    /// The model of the next request.
    ///
    /// # Errors
    /// `SESSION_CLOSED`.
    pub fn model(&self) -> CommandResult<String> {
        Ok(self.stack()?.model())
    }

    /// Whether the model of the next request takes images.
    ///
    /// # Errors
    /// `SESSION_CLOSED`.
    pub fn takes_images(&self) -> CommandResult<bool> {
        Ok(self.stack()?.takes_images())
    }

    /// The models served.
    ///
    /// # Errors
    /// `SESSION_CLOSED`.
    pub fn models(&self) -> CommandResult<Vec<String>> {
        Ok(self.stack()?.models())
    }

    /// Switches the model for the next requests; `source` is logged with
    /// the change (`/model`, `serve`).
    ///
    /// # Errors
    /// `INVALID_COMMAND`: a model no provider serves (the message lists
    /// them); `SESSION_CLOSED`.
    pub fn set_model(&self, model: &str, source: &str) -> CommandResult<()> {
        let stack = self.stack()?;
        let agent = self.agent()?;
        stack
            .set_model(model, source, Some(agent.as_ref()))
            .map_err(|e| CommandError::new(codes::INVALID_COMMAND, e.to_string()))
    }

    /// The permission mode in force.
    ///
    /// # Errors
    /// `SESSION_CLOSED`.
    pub fn permission(&self) -> CommandResult<SandboxMode> {
        Ok(self.stack()?.permission())
    }

    /// Changes the permission mode (logged, told to the model).
    ///
    /// # Errors
    /// `SESSION_CLOSED`.
    pub fn set_permission(&self, mode: SandboxMode, source: &str) -> CommandResult<()> {
        let stack = self.stack()?;
        let agent = self.agent()?;
        stack.set_permission(mode, source, Some(agent.as_ref()));
        Ok(())
    }

    /// Whether plan mode is on.
    pub fn plan_mode(&self) -> bool {
        self.stack().is_ok_and(|s| s.plan_mode())
    }

    /// Turns plan mode on or off (logged, told to the model). Returns
    /// whether that changed it.
    ///
    /// # Errors
    /// `SESSION_CLOSED`.
    pub fn set_plan_mode(&self, on: bool, source: &str) -> CommandResult<bool> {
        let stack = self.stack()?;
        let agent = self.agent()?;
        Ok(stack.set_plan_mode(on, source, Some(agent.as_ref())))
    }

    /// The plan the model presented with `exit_plan_mode` when the session
    /// presents plans instead of asking ([`crate::SessionOptions::present_plan`]),
    /// taken once.
    pub fn take_presented_plan(&self) -> Option<String> {
        self.stack().ok()?.plan.take_presented()
    }

    /// The model's context window in tokens (what `ctx N%` is a share of).
    ///
    /// # Errors
    /// `SESSION_CLOSED`.
    pub fn context_window(&self) -> CommandResult<u64> {
        Ok(self.stack()?.resolved.context_window)
    }

    /// Compacts the history now, optionally focusing the summary.
    ///
    /// # Errors
    /// `TURN_RUNNING`; the compaction's own error (the echo model cannot
    /// summarise; a failed summary request); `SESSION_CLOSED`.
    pub async fn compact(&self, focus: Option<&str>) -> CommandResult<dsh_compaction::Outcome> {
        self.between_turns("/compact").await?;
        let stack = self.stack()?;
        let agent = self.agent()?;
        stack
            .compact_now(&agent, focus)
            .await
            .map_err(CommandError::from_coded)
    }

    /// The current todo list.
    pub fn todos(&self) -> Vec<dsh::tools::TodoItem> {
        match (self.stack(), self.agent()) {
            (Ok(stack), Ok(agent)) => stack.todos(agent.as_ref()),
            _ => Vec::new(),
        }
    }

    /// The session's id, log, modes, status and token figures.
    ///
    /// # Errors
    /// `SESSION_CLOSED`.
    pub fn info(&self) -> CommandResult<SessionInfo> {
        let stack = self.stack()?;
        let agent = self.agent()?;
        let session = agent.session();
        let id = session.id().to_string();
        let events: Vec<dsh_session::SessionEvent> =
            session.events().iter().map(|e| (**e).clone()).collect();
        let context = events.iter().rev().find_map(|e| match &e.data {
            dsh_protocol::EventPayload::Other { kind, data }
                if kind == dsh_agent_loop::CONTEXT_USAGE_KIND =>
            {
                let field = |k: &str| data.get(k).and_then(serde_json::Value::as_u64);
                Some((field("tokens")?, field("window")?))
            }
            _ => None,
        });
        let title = events.iter().rev().find_map(|e| match &e.data {
            dsh_protocol::EventPayload::Other { kind, data } if kind == dsh::title::TITLE_KIND => {
                data.get("title")
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string)
            }
            _ => None,
        });
        let totals = dsh_session::session_stats(&events).tokens;
        Ok(SessionInfo {
            log: stack.session_path(&id),
            id,
            cwd: stack.resolved.cwd.clone(),
            model: stack.model(),
            models: stack.models(),
            permission: stack.permission().as_str().to_string(),
            plan_mode: stack.plan_mode(),
            status: agent.status().as_str().to_string(),
            context,
            input_tokens: u64::try_from(totals.input).unwrap_or(0),
            output_tokens: u64::try_from(totals.output).unwrap_or(0),
            cache_read_tokens: totals.cache_read.and_then(|c| u64::try_from(c).ok()),
            title,
        })
    }

    /// What the session cost so far (`/cost`).
    ///
    /// # Errors
    /// `SESSION_CLOSED`.
    pub fn cost(&self) -> CommandResult<dsh::catalogue::CostReport> {
        let stack = self.stack()?;
        let events = self.agent()?.session().events();
        Ok(dsh::catalogue::CostReport::of(
            &events,
            &stack.resolved.catalogue,
            &stack.model(),
            stack.resolved.max_cost_per_session,
        ))
    }

    /// The models' windows and prices, for a front end that prices
    /// usage events itself (the status line).
    ///
    /// # Errors
    /// `SESSION_CLOSED`.
    pub fn catalogue(&self) -> CommandResult<dsh::catalogue::Catalogue> {
        Ok(self.stack()?.resolved.catalogue.clone())
    }

    /// Files of the workspace whose path (relative to it) contains
    /// `query` (case blind), for `@` completion: at most `limit`, shortest
    /// first. Ignored files (`.gitignore`, hidden ones) are left out, and
    /// the walk stops after [`FILES_WALK_MAX`] entries so a huge tree
    /// answers quickly.
    ///
    /// # Errors
    /// `SESSION_CLOSED`.
    pub fn files(&self, query: &str, limit: usize) -> CommandResult<Vec<String>> {
        let cwd = self.stack()?.resolved.cwd.clone();
        let query = query.to_lowercase();
        let mut found = Vec::new();
        for entry in ignore::WalkBuilder::new(&cwd)
            .require_git(false)
            .build()
            .take(FILES_WALK_MAX)
            .flatten()
        {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(&cwd) else {
                continue;
            };
            let rel = rel.to_string_lossy().into_owned();
            if rel.to_lowercase().contains(&query) {
                found.push(rel);
            }
        }
        found.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
        found.truncate(limit);
        Ok(found)
    }

    /// The events of the session's current log, in order (empty once
    /// closed).
    pub fn log_events(&self) -> Vec<dsh_session::SessionEvent> {
        self.agent()
            .map(|a| a.session().events().iter().map(|e| (**e).clone()).collect())
            .unwrap_or_default()
    }

    /// Answers approval question `approval_id` (from
    /// [`EventBody::ApprovalAsked`]); the first answer wins.
    ///
    /// # Errors
    /// `UNKNOWN_APPROVAL`: answered already, withdrawn, or never asked.
    pub fn answer(&self, approval_id: &str, decision: Decision) -> CommandResult<()> {
        self.approvals.answer(approval_id, decision)
    }

    /// The ids of the questions waiting for an answer, oldest first.
    pub fn waiting_approvals(&self) -> Vec<String> {
        self.approvals.waiting()
    }

    /// Replies to the `ask_user` questions `question_id` (from
    /// [`EventBody::QuestionAsked`]); the first reply wins.
    ///
    /// # Errors
    /// `UNKNOWN_QUESTION`: answered already, withdrawn, or never asked;
    /// `INVALID_ANSWER`: not one answer per question, an option that does
    /// not exist, several options for a single-choice question (the
    /// questions stay open).
    pub fn answer_question(&self, question_id: &str, reply: QuestionReply) -> CommandResult<()> {
        self.questions.answer(question_id, reply)
    }

    /// The ids of the `ask_user` questions waiting for a reply, oldest
    /// first.
    pub fn waiting_questions(&self) -> Vec<String> {
        self.questions.waiting()
    }

    /// Makes the caller one of the session's answerers: approval questions
    /// and `ask_user` questions are put (as events) while at least one
    /// guard lives.
    pub fn attach_approver(self: &Arc<Self>) -> ApproverGuard {
        let mut n = lock(&self.answerers);
        n.0 += 1;
        n.1 += 1;
        if n.0 == 1 {
            if let Ok(stack) = self.stack() {
                stack.approver.set_person(Some(Arc::new(Watchers(
                    self.approvals.clone(),
                    Some(stack.rules.clone()),
                ))));
                stack
                    .questions
                    .set_asker(Some(Arc::new(Askers(self.questions.clone()))));
            }
        }
        ApproverGuard {
            session: self.clone(),
        }
    }

    fn detach_approver(self: &Arc<Self>) {
        let generation = {
            let mut n = lock(&self.answerers);
            n.0 = n.0.saturating_sub(1);
            if n.0 > 0 {
                return;
            }
            n.1
        };
        let runtime = tokio::runtime::Handle::try_current();
        match runtime {
            Ok(rt) if !self.approver_grace.is_zero() && !self.is_closed() => {
                // A client that reloads or reconnects finds its question
                // still waiting.
                let me = self.clone();
                rt.spawn(async move {
                    tokio::time::sleep(me.approver_grace).await;
                    me.nobody_answers(generation);
                });
            }
            _ => self.nobody_answers(generation),
        }
    }

    /// Withdraws the questions and takes the person away, unless someone
    /// attached since `generation`.
    fn nobody_answers(&self, generation: u64) {
        {
            let n = lock(&self.answerers);
            if n.0 > 0 || n.1 != generation {
                return;
            }
            if let Ok(stack) = self.stack() {
                stack.approver.set_person(None);
                stack.questions.set_asker(None);
            }
        }
        self.approvals.withdraw_all();
        self.questions.withdraw_all();
    }

    /// `/clear`: the agent is disposed (its log complete on disk) and a
    /// fresh one starts in a new log; the modes carry over. Events go on
    /// in the same stream, from [`EventBody::SessionStarted`] with
    /// `cleared` set. Returns (old id, new id).
    ///
    /// # Errors
    /// `TURN_RUNNING`; `SESSION_CLOSED`; the new session could not start
    /// (the session is then closed: it has no agent left).
    pub async fn clear(&self) -> CommandResult<(String, String)> {
        self.between_turns("/clear").await?;
        let stack = self.stack()?;
        let old = lock(&self.handle).take().ok_or_else(closed)?;
        let old_id = old.agent().session().id().to_string();
        match stack.clear_session(old).await {
            Ok(handle) => {
                let agent = handle.agent();
                let new_id = agent.session().id().to_string();
                // Events of the new log from here on; the ones the clear
                // logged already (its modes) are in its log.
                *lock(&self.follow) = new_id.clone();
                *lock(&self.agent) = Some(agent);
                *lock(&self.handle) = Some(handle);
                self.publish_started(&stack, false, Some(old_id.clone()));
                Ok((old_id, new_id))
            }
            Err(e) => {
                *lock(&self.agent) = None;
                Err(CommandError::new(
                    codes::SESSION_CLOSED,
                    format!("cannot start a new session: {e}"),
                ))
            }
        }
    }

    /// Runs chat command `name` with `args` (`/model gpt` is `("model",
    /// "gpt")`). `/exit` is answered [`Reply::Exit`]: the front end
    /// leaves; an unknown name is [`Reply::Failed`] with `INVALID_COMMAND`.
    pub async fn command(&self, name: &str, args: &str) -> Reply {
        let args = args.trim();
        match self.run_command(name, args).await {
            Ok(reply) => reply,
            Err(e) => Reply::Failed(e),
        }
    }

    async fn run_command(&self, name: &str, args: &str) -> CommandResult<Reply> {
        Ok(match name {
            "help" => {
                let catalog = self.custom.current();
                Reply::Help {
                    custom: catalog.summaries(),
                    untrusted: catalog.untrusted,
                }
            }
            "init" => self.init(args).await?,
            "model" if args.is_empty() => Reply::Model {
                current: self.model()?,
                models: self.models()?,
            },
            "model" if args.contains(char::is_whitespace) => usage("/model [NAME]"),
            "model" => {
                let current = self.model()?;
                if args == current {
                    Reply::ModelUnchanged { model: current }
                } else {
                    self.set_model(args, "/model")?;
                    Reply::ModelSwitched {
                        from: current,
                        to: args.to_string(),
                    }
                }
            }
            "permission" if args.is_empty() => Reply::Permission {
                current: self.permission()?,
            },
            "permission" if args.contains(char::is_whitespace) => usage(&format!(
                "/permission [{}]",
                dsh::commands::PERMISSION_MODES.join("|")
            )),
            "permission" => {
                let current = self.permission()?;
                let mode = args
                    .parse::<SandboxMode>()
                    .map_err(|e| CommandError::new(codes::INVALID_COMMAND, e.to_string()))?;
                if mode == current {
                    Reply::PermissionUnchanged { mode }
                } else {
                    self.set_permission(mode, "/permission")?;
                    Reply::PermissionChanged {
                        from: current,
                        to: mode,
                    }
                }
            }
            "plan" => {
                let on = match args {
                    "" | "on" => true,
                    "off" => false,
                    _ => return Ok(usage("/plan [on|off]")),
                };
                Reply::Plan {
                    on,
                    changed: self.set_plan_mode(on, "/plan")?,
                }
            }
            "compact" => {
                let outcome = self.compact((!args.is_empty()).then_some(args)).await?;
                Reply::Compacted {
                    outcome,
                    window: self.context_window()?,
                }
            }
            "todo" => Reply::Todos(self.todos()),
            "session" => Reply::Session(Box::new(self.info()?)),
            "cost" if !args.is_empty() => usage("/cost"),
            "cost" => Reply::Cost(Box::new(self.cost()?)),
            "clear" => {
                let (old, new) = self.clear().await?;
                Reply::Cleared { old, new }
            }
            "exit" => Reply::Exit,
            "undo" | "redo" | "rewind" => self.checkpoint_command(name, args).await?,
            other => self.run_custom(other, args).await?,
        })
    }

    /// The workspace's custom commands (see [`dsh::custom_commands`]), read
    /// again when the last look is a few seconds old and a file changed.
    pub fn custom_commands(&self) -> Arc<dsh::custom_commands::CommandCatalog> {
        self.custom.current()
    }

    /// The warnings about the custom command files (broken front matter,
    /// a built-in's name, too large), as a front end shows them.
    pub fn custom_command_warnings(&self) -> Vec<String> {
        self.custom
            .current()
            .warnings
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// Whether `/name` becomes the user's message (a turn) rather than a
    /// reply: `/init` and the custom commands. `dsh run "/name args"` and
    /// ACP run these as turns.
    pub fn is_turn_command(&self, name: &str) -> bool {
        name == "init"
            || (dsh::commands::find(name).is_none() && self.custom.current().get(name).is_some())
    }

    /// `/init [notes]`: asks the model to write or improve the project's
    /// `AGENTS.md` ([`dsh::custom_commands::INIT_PROMPT`], with the notes
    /// appended).
    async fn init(&self, args: &str) -> CommandResult<Reply> {
        let mut text = dsh::custom_commands::INIT_PROMPT.trim_end().to_string();
        if !args.is_empty() {
            text.push_str(&format!("\n\nAlso, from the user: {args}"));
        }
        self.agent()?
            .session()
            .append(dsh_protocol::EventPayload::Other {
                kind: dsh::custom_commands::COMMAND_EVENT.to_string(),
                data: serde_json::json!({ "name": "init", "args": args, "source": "builtin" }),
            });
        self.prompt(&text).await?;
        Ok(Reply::Sent(Box::new(crate::commands::SentCommand {
            name: "init".into(),
            source: "builtin".into(),
            model: None,
            tools: None,
            notes: Vec::new(),
        })))
    }

    /// Runs custom command `name`: its body with the arguments put in is
    /// sent as the user's message, after a [`dsh::custom_commands::COMMAND_EVENT`]
    /// naming it; its `model:` and `allowed-tools:` hold for that turn only.
    ///
    /// # Errors
    /// `INVALID_COMMAND`: no such command (the message lists the commands),
    /// or an empty body; `TURN_RUNNING`: a command with `model:` or
    /// `allowed-tools:` while a turn runs or waits; as [`Session::prompt`].
    async fn run_custom(&self, name: &str, args: &str) -> CommandResult<Reply> {
        let (catalog, fresh) = self.custom.refresh();
        for warning in fresh {
            self.warn(warning.to_string());
        }
        let Some(command) = catalog.get(name) else {
            let mut names = dsh::commands::names();
            for c in &catalog.commands {
                names.push_str(&format!(", /{}", c.name));
            }
            let mut message = format!("unknown command /{name}; commands: {names}");
            if catalog.untrusted > 0 {
                message.push_str(&format!(
                    " ({} project command{} not loaded: the project is not trusted; see `dsh trust`)",
                    catalog.untrusted,
                    if catalog.untrusted == 1 { "" } else { "s" }
                ));
            }
            return Err(CommandError::new(codes::INVALID_COMMAND, message));
        };
        let text = command.prompt(args);
        if text.trim().is_empty() {
            return Err(CommandError::new(
                codes::INVALID_COMMAND,
                format!(
                    "/{name} sends nothing: {} has an empty body",
                    command.file.display()
                ),
            ));
        }
        let stack = self.stack()?;
        let agent = self.agent()?;
        let mut notes = Vec::new();
        let model = match &command.model {
            Some(m) if *m == stack.model() => None,
            Some(m) if stack.models().contains(m) => Some(m.clone()),
            Some(m) => {
                notes.push(format!(
                    "model {m} (its model:) is not served here (models: {}); the turn uses {}",
                    stack.models().join(", "),
                    stack.model()
                ));
                None
            }
            None => None,
        };
        let limits = dsh::custom_commands::TurnLimits {
            command: name.to_string(),
            model: model.clone(),
            tools: command.allowed_tools.clone(),
        };
        if !limits.is_empty() && (self.busy() || self.command_turn.is_busy()) {
            return Err(CommandError::new(
                codes::TURN_RUNNING,
                format!("/{name} sets the model or the tools of its own turn, so it runs between turns; try again when this one has ended"),
            ));
        }
        agent.session().append(dsh_protocol::EventPayload::Other {
            kind: dsh::custom_commands::COMMAND_EVENT.to_string(),
            data: serde_json::json!({
                "name": name,
                "args": args,
                "source": command.scope.label(),
                "file": command.file,
                "model": model,
                "allowedTools": command.allowed_tools,
            }),
        });
        if !limits.is_empty() {
            self.command_turn.arm(limits);
        }
        if let Err(e) = self.prompt(&text).await {
            self.command_turn.disarm();
            return Err(e);
        }
        Ok(Reply::Sent(Box::new(crate::commands::SentCommand {
            name: name.to_string(),
            source: command.scope.label().to_string(),
            model,
            tools: command.allowed_tools.clone(),
            notes,
        })))
    }

    /// The main agent's background jobs still running.
    pub fn running_jobs(&self) -> Vec<Job> {
        let Ok(stack) = self.stack() else {
            return Vec::new();
        };
        stack
            .jobs
            .jobs_of(dsh::MAIN_AGENT_ID)
            .into_iter()
            .filter(|j| j.running)
            .map(|j| Job {
                id: j.id,
                title: j.title,
                running: j.running,
            })
            .collect()
    }

    /// Waits until job `id` has finished and its completion notice reached
    /// the agent; at once for an unknown job.
    pub async fn wait_job(&self, id: &str) {
        let Ok(stack) = self.stack() else { return };
        let Ok(source) = stack.jobs.source(dsh::MAIN_AGENT_ID, id) else {
            return;
        };
        source.wait(id).await;
    }

    /// Stops job `id` when it still runs. Returns whether it was running.
    pub async fn kill_job(&self, id: &str, reason: &str) -> bool {
        let Ok(stack) = self.stack() else {
            return false;
        };
        let Ok(source) = stack.jobs.source(dsh::MAIN_AGENT_ID, id) else {
            return false;
        };
        if !source.info(id).is_some_and(|j| j.running) {
            return false;
        }
        // A job that cannot be stopped here is stopped by the shutdown.
        let _ = source.kill(id, Some(reason)).await;
        true
    }

    /// Disposes the agent now (its turn aborted, its log flushed) while
    /// the rest of the session (jobs, servers) stays until
    /// [`Session::close`]: a job stopped after this wakes no turn.
    pub async fn dispose_agent(&self) {
        let handle = lock(&self.handle).take();
        if let Some(handle) = handle {
            handle.dispose().await;
        }
    }

    /// Closes the session: withdraws the questions, aborts the running turn
    /// and waits (up to 5 s) for it to end `aborted` with `reason`, disposes
    /// the agent (its log flushed), waits briefly for a title being made,
    /// publishes [`EventBody::Closed`] and shuts the stack down (MCP
    /// servers and commands stopped). Idempotent.
    pub async fn close(&self, reason: &str) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        self.abort(reason);
        if let Ok(stack) = self.stack() {
            stack.approver.set_person(None);
            stack.questions.set_asker(None);
        }
        self.approvals.withdraw_all();
        self.questions.withdraw_all();
        // The running turn ends as aborted (with `reason`) before the agent
        // is disposed, as a signal ends `dsh run`'s.
        let deadline = tokio::time::Instant::now() + RELEASE_WAIT;
        while self.is_running() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let title = lock(&self.title).take();
        if let Some(task) = title {
            let _ = tokio::time::timeout(TITLE_WAIT, task).await;
        }
        self.dispose_agent().await;
        *lock(&self.agent) = None;
        for r in lock(&self.listeners).drain(..) {
            r.undo();
        }
        self.hub.close(reason);
        let Some(mut stack) = lock(&self.stack).take() else {
            return;
        };
        let deadline = tokio::time::Instant::now() + RELEASE_WAIT;
        let stack = loop {
            match Arc::try_unwrap(stack) {
                Ok(stack) => break Some(stack),
                Err(still) if tokio::time::Instant::now() < deadline => {
                    stack = still;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(_) => break None,
            }
        };
        match stack {
            Some(stack) => stack.shutdown().await,
            None => {
                tracing::warn!(target: "dsh_controller", "a stack was still in use when its session closed")
            }
        }
    }

    /// Publishes [`EventBody::SessionStarted`] for the current log.
    pub(crate) fn publish_started(&self, stack: &Stack, resumed: bool, cleared: Option<String>) {
        self.hub.publish(EventBody::SessionStarted {
            session_id: self.id(),
            model: stack.model(),
            permission: stack.permission().as_str().to_string(),
            plan_mode: stack.plan_mode(),
            cwd: stack.resolved.cwd.display().to_string(),
            resumed,
            cleared,
        });
    }

    /// Replays `events` (a resumed log) into the stream, then routes the
    /// live events of the session's log, its agent's status and its tool
    /// calls starting into it.
    pub(crate) fn wire(&self, stack: &Stack, seed: &[dsh_session::SessionEvent], cwd: PathBuf) {
        {
            let mut replay = Translator::new(cwd, false, None);
            for event in seed {
                let event = Arc::new(event.clone());
                let bodies = replay.translate(&event);
                self.hub.publish(EventBody::Log { event });
                for body in bodies {
                    self.hub.publish(body);
                }
            }
        }
        self.live_from.store(self.hub.next_seq(), Ordering::SeqCst);
        let mut listeners = Vec::new();
        let (hub, follow, translator, turn_open) = (
            self.hub.clone(),
            self.follow.clone(),
            self.translator.clone(),
            self.turn_open.clone(),
        );
        listeners.push(stack.store.on_event().on(move |(session, event)| {
            if session.id().as_str() != lock(&follow).as_str() {
                return;
            }
            match &event.data {
                dsh_protocol::EventPayload::UserMessage(_)
                | dsh_protocol::EventPayload::TurnStart(_) => {
                    turn_open.store(true, Ordering::SeqCst)
                }
                dsh_protocol::EventPayload::TurnEnd(_) => turn_open.store(false, Ordering::SeqCst),
                _ => {}
            }
            // Translated under the lock: events keep the log's order.
            let mut translator = lock(&translator);
            hub.publish(EventBody::Log {
                event: event.clone(),
            });
            let bodies = translator.translate(event);
            let activity = translator.activity_after(event.data.kind(), &bodies);
            for body in bodies {
                hub.publish(body);
            }
            if let Some(activity) = activity {
                hub.publish(activity);
            }
        }));
        let (hub, follow, settled) = (self.hub.clone(), self.follow.clone(), self.settled.clone());
        listeners.push(stack.agents.hooks().status.on(move |change| {
            let ours = change.agent.id().as_str() == dsh::MAIN_AGENT_ID
                && change.agent.session().id().as_str() == lock(&follow).as_str();
            if ours {
                hub.publish(EventBody::Status {
                    status: change.status.as_str().to_string(),
                });
                if change.status != AgentStatus::Running {
                    settled.notify_waiters();
                }
            }
        }));
        let (hub, follow, translator) = (
            self.hub.clone(),
            self.follow.clone(),
            self.translator.clone(),
        );
        listeners.push(stack.tools.on_execute().prepend(
            move |(call, env): dsh_tools::Execution, next| {
                let ours = env
                    .extensions
                    .get::<Arc<dyn Agent>>()
                    .is_some_and(|a| a.session().id().as_str() == lock(&follow).as_str());
                if ours {
                    let id = call.call_id.as_str();
                    let mut translator = lock(&translator);
                    hub.publish(EventBody::ToolRunning {
                        call_id: id.to_string(),
                    });
                    if let Some(activity) = translator.activity_of("running", Some(id)) {
                        hub.publish(activity);
                    }
                }
                next.run((call, env))
            },
        ));
        listeners.push(
            self.command_turn
                .install(&stack.agents, &stack.tools, dsh::MAIN_AGENT_ID),
        );
        lock(&self.listeners).extend(listeners);
    }

    /// With a real model, asks for a title once the first turn ended
    /// ([`dsh::title::generate`], in the background).
    pub(crate) fn title_after_first_turn(self: &Arc<Self>, stack: &Stack) {
        if stack.resolved.model == dsh::echo_model::ECHO_MODEL {
            return;
        }
        let (llm, model) = (stack.llm.clone(), stack.resolved.model.clone());
        let weak = Arc::downgrade(self);
        let reg = stack.agents.hooks().event.on(move |e| {
            if e.agent.id().as_str() != dsh::MAIN_AGENT_ID {
                return;
            }
            if !matches!(
                &e.event.data,
                dsh_protocol::EventPayload::TurnEnd(dsh_protocol::TurnEndEvent { turn: 1, .. })
            ) {
                return;
            }
            let (Ok(rt), Some(session)) = (tokio::runtime::Handle::try_current(), weak.upgrade())
            else {
                return;
            };
            let task = rt.spawn(dsh::title::generate(
                llm.clone(),
                model.clone(),
                e.agent.session(),
            ));
            *lock(&session.title) = Some(task);
        });
        lock(&self.listeners).push(reg);
    }

    /// Publishes a warning.
    pub(crate) fn warn(&self, message: String) {
        self.hub.publish(EventBody::Warning { message });
    }
}

/// `SESSION_CLOSED`.
fn closed() -> CommandError {
    CommandError::new(codes::SESSION_CLOSED, "the session is closed")
}
