//! The one concrete agent loop: inbox, turns, steps, tool dispatch, abort and
//! dispose.
//!
//! Start at [`AgentLoop::create`]: it creates the agent's session, registers
//! the agent and spawns its driver task. The driver idles until a message is
//! queued, then runs a turn: drain the queue → steps (assemble the prompt →
//! `agent/request` → stream the model, logging raw chunks → `agent/step-result`
//! → log the assistant message → run the tool calls through the registry
//! (consecutive concurrency-safe calls together, at most
//! `max_parallel_tool_calls` at once; each exclusive call alone; results
//! logged in the model's order) →
//! drain steering → `agent/turn-continuation`) → `turn/end` → await
//! `session/flush` → re-queue leftover steering. Ordering follows
//! `docs/reference/agent-loop.md` §3.
//!
//! Beyond the reference:
//! - a failed or aborted step never leaves a tool call without a result: the
//!   unanswered calls get synthesized error results, so the next request is
//!   valid for the API;
//! - a blind-retry guard ([`retry_guard`]) attaches the tool's schema to the
//!   second identical failure and steers the model away on the third;
//! - a hard cap of steps per turn ends the turn with `max-steps`;
//! - the log is flushed (`session/flush`) before each model request and
//!   before each tool call runs, so a crash never leaves a side effect that
//!   the log on disk does not show; a failing flush ends the step with its
//!   error.
//!
//! Plugins should program against `dsh-agent`, not this crate.

#![warn(missing_docs)]

mod driver;
pub mod invariants;
pub mod retry_guard;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};

use dsh_agent::{
    Agent, AgentError, AgentOptions, AgentRegistry, AgentStatus, Queued, StatusChange,
};
use dsh_kernel::sync::lock;
use dsh_kernel::{DshError, ErrorCode, Kernel, Registration};
use dsh_llm::{ContentBlock, LlmService, MessageSource};
use dsh_prompt::PromptService;
use dsh_protocol::AgentId;
use dsh_session::{EventPayload, MessageEvent, Session, SessionEvent, SessionStore};
use dsh_tools::{ContextSink, ToolRegistry};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The source of notes the loop itself steers into a turn.
pub const LOOP_PLUGIN_NAME: &str = "agent-loop";

/// The system prompt of a request: the rendered prompt sections, then the
/// agent's own `system_prompt`, joined by a blank line (empty parts left
/// out). Whoever builds a request outside a step (a manual compaction)
/// uses this to send the same text.
pub fn system_text(rendered: &str, extra: Option<&str>) -> String {
    [rendered, extra.unwrap_or("")]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Log-only event: the system prompt requests are sent with from now on,
/// `{"text"}` (`null` for none); written when it changes.
pub const REQUEST_SYSTEM_KIND: &str = "request/system";
/// Log-only event: the tool schemas sent from now on, `{"tools"}`;
/// written when they change.
pub const REQUEST_TOOLS_KIND: &str = "request/tools";
/// Log-only event: the request options from now on, `{"model",
/// "maxTokens"?, "temperature"?, "stop"?}`; written when they change.
pub const REQUEST_OPTIONS_KIND: &str = "request/options";
/// Log-only event, right before a step's request is sent: `{"turn",
/// "step"}`, plus `"messages"` when the request's history is not the one
/// derived from the log at this point (a plugin rewrote it). With the
/// latest `request/*` parts before it, the request is rebuilt exactly.
pub const REQUEST_SENT_KIND: &str = "request/sent";

/// Log-only event: the model gave a tool call an id an earlier call of the
/// session already has (in this reply or an earlier one), so the call is
/// recorded under a new one: `{"turn", "step", "from", "to"}`. Written
/// right before the reply's `assistant/message`, which (like the
/// `tool/call` and `tool/result` events after it) carries `to`; the raw
/// `assistant/chunk` events keep `from`.
pub const CALL_RENAMED_KIND: &str = "tool/call-renamed";

/// Kind of the log-only event carrying the context meter after each model
/// reply (when [`AgentOptions::context_window`](dsh_agent::AgentOptions) is
/// set): `{turn, step, tokens, window, percent}`, `tokens` being the
/// estimated size of the next request ([`dsh_session::TokenMeter`]).
pub const CONTEXT_USAGE_KIND: &str = "context/usage";

/// How to create an agent beyond its options.
#[derive(Debug, Clone, Default)]
pub struct LoopSetup {
    /// The session id; default `<agent id>-session`.
    pub session_id: Option<String>,
    /// Events to seed the session with (resume / fork); turn numbers continue.
    pub seed: Vec<SessionEvent>,
    /// Bounds on each model step (tool calls, output bytes); exceeding one
    /// ends the turn with `TOO_MANY_TOOL_CALLS` / `STEP_TOO_LARGE`.
    pub step_limits: dsh_llm::StepLimits,
}

/// Creates agents driven by the loop.
pub struct AgentLoop;

impl AgentLoop {
    /// Creates agent `id`: a session `<id>-session`, an entry in the
    /// [`AgentRegistry`] (emits `agent/created`), and a driver task on the
    /// current tokio runtime. Status starts `idle`.
    ///
    /// Requires the kernel services `LlmService`, `SessionStore` and
    /// `AgentRegistry`; `ToolRegistry` and `PromptService` are used when
    /// present.
    ///
    /// # Errors
    /// A missing service, a duplicate agent id or session id.
    pub fn create(
        kernel: &Kernel,
        id: &str,
        options: AgentOptions,
    ) -> Result<AgentHandle, AgentError> {
        Self::create_with(kernel, id, options, LoopSetup::default())
    }

    /// [`AgentLoop::create`] with a session id and seed events.
    ///
    /// # Errors
    /// As [`AgentLoop::create`].
    pub fn create_with(
        kernel: &Kernel,
        id: &str,
        options: AgentOptions,
        setup: LoopSetup,
    ) -> Result<AgentHandle, AgentError> {
        let missing = |e: dsh_kernel::KernelError| AgentError::MissingService(e.to_string());
        let llm = kernel.service::<LlmService>().map_err(missing)?;
        let store = kernel.service::<SessionStore>().map_err(missing)?;
        let registry = kernel.service::<AgentRegistry>().map_err(missing)?;
        let tools = kernel.try_service::<ToolRegistry>();
        let prompt = kernel.try_service::<PromptService>();
        if registry.get(id).is_some() {
            return Err(AgentError::Duplicate(id.into()));
        }
        let session_id = setup.session_id.unwrap_or_else(|| format!("{id}-session"));
        let (session, session_reg) =
            store
                .create(Some(session_id), setup.seed)
                .map_err(|e| AgentError::Session {
                    code: e.code().to_string(),
                    message: e.to_string(),
                })?;
        let guard_reg = match &tools {
            Some(tools) => retry_guard::install(kernel, tools),
            None => Registration::noop(),
        };
        let agent = Arc::new_cyclic(|me: &Weak<LoopAgent>| LoopAgent {
            id: AgentId::from(id),
            options,
            step_limits: setup.step_limits,
            session,
            me: me.clone(),
            state: Mutex::new(State {
                status: AgentStatus::Idle,
                disposed: false,
                queued: VecDeque::new(),
                steering: VecDeque::new(),
                step: None,
                abort_pending: None,
                stepped: false,
                status_pending: VecDeque::new(),
                status_draining: false,
                wakes: 0,
                notices: VecDeque::new(),
            }),
            wake: Notify::new(),
            services: Services {
                llm,
                store,
                registry: registry.clone(),
                tools,
                prompt,
            },
            meter: Mutex::new((dsh_session::TokenMeter::new(), 0)),
            logged: Mutex::new(LoggedRequest::default()),
        });
        let dyn_agent: Arc<dyn Agent> = agent.clone();
        let agent_reg = match registry.register(dyn_agent) {
            Ok(r) => r,
            Err(e) => {
                session_reg.undo();
                return Err(e);
            }
        };
        let task = tokio::spawn(driver::run(agent.clone()));
        Ok(AgentHandle {
            agent,
            task: Some(task),
            // The guard stays with the registry: later agents share it.
            registrations: vec![session_reg, agent_reg],
            _guard: guard_reg,
        })
    }
}

/// Owns a running agent. Dispose it with [`AgentHandle::dispose`] (waits for
/// quiescence) or turn it into a [`Registration`] for a scope.
#[must_use = "dropping the handle leaves the agent running; call dispose()"]
pub struct AgentHandle {
    agent: Arc<LoopAgent>,
    task: Option<tokio::task::JoinHandle<()>>,
    registrations: Vec<Registration>,
    /// The retry guard's listener when this agent installed it; never undone
    /// by the agent (the registry keeps it for every agent).
    _guard: Registration,
}

impl AgentHandle {
    /// The agent.
    pub fn agent(&self) -> Arc<dyn Agent> {
        self.agent.clone()
    }

    /// Disposes the agent and waits until its loop has exited: a running turn
    /// ends with `disposed` (its `turn/end` is logged and flushed), then the
    /// agent is unregistered (`agent/disposed`) and its session removed from
    /// the store. Idempotent in effect; never fails.
    pub async fn dispose(mut self) {
        self.agent.dispose_now();
        if let Some(task) = self.task.take() {
            // A panicking driver is already logged by tokio; disposal goes on.
            let _ = task.await;
        }
        // Events appended after the last turn (e.g. an inject) reach disk too.
        if let Err(e) = self.agent.services.store.flush(&self.agent.session).await {
            tracing::warn!(agent = %self.agent.id, "final session flush failed: {e}");
        }
        for r in std::mem::take(&mut self.registrations).into_iter().rev() {
            r.undo();
        }
    }

    /// A registration whose undo disposes the agent without waiting for the
    /// loop to exit (for scopes, which undo synchronously).
    pub fn into_registration(mut self) -> Registration {
        let agent = self.agent.clone();
        let regs = std::mem::take(&mut self.registrations);
        Registration::new(move || {
            agent.dispose_now();
            for r in regs.into_iter().rev() {
                r.undo();
            }
        })
    }
}

impl Drop for AgentHandle {
    fn drop(&mut self) {
        if !self.registrations.is_empty() {
            tracing::debug!(agent = %self.agent.id, "agent handle dropped without dispose; the agent keeps running");
        }
    }
}

struct Services {
    llm: Arc<LlmService>,
    store: Arc<SessionStore>,
    registry: Arc<AgentRegistry>,
    tools: Option<Arc<ToolRegistry>>,
    prompt: Option<Arc<PromptService>>,
}

/// A message waiting in the inbox.
#[derive(Debug, Clone)]
struct Pending {
    content: Vec<ContentBlock>,
    source: MessageSource,
}

struct StepControl {
    cancel: CancellationToken,
    reason: Option<String>,
}

struct State {
    status: AgentStatus,
    disposed: bool,
    queued: VecDeque<Pending>,
    steering: VecDeque<Pending>,
    step: Option<StepControl>,
    /// An abort that came before a turn reached its first step (the turn
    /// was queued, or started without a step yet): that first step starts
    /// aborted with this reason. Dropped when the agent goes idle with
    /// nothing queued.
    abort_pending: Option<String>,
    /// The running turn has started a step (an abort between its steps is
    /// a no-op, as in the reference).
    stepped: bool,
    /// Status changes not yet announced on `agent/status`, in change order.
    status_pending: VecDeque<AgentStatus>,
    /// Whether some thread is announcing `status_pending` right now.
    status_draining: bool,
    /// Turns started by background notices since the user last spoke.
    wakes: u32,
    /// Background notices delivered during a turn, logged as context
    /// before the next step (or starting the next turn; see
    /// [`Agent::deliver_notice`](dsh_tools::ContextSink::deliver_notice)).
    notices: VecDeque<Pending>,
}

impl State {
    /// Whether a notice may start a turn now: the agent is idle with
    /// nothing queued and has wake-ups left.
    fn may_wake(&self, limit: u32) -> bool {
        self.status == AgentStatus::Idle && self.queued.is_empty() && self.wakes < limit
    }
}

impl State {
    /// Changes the status (no-op when unchanged or disposed) and queues its
    /// announcement; returns whether it changed. Call
    /// [`LoopAgent::announce_status`] after releasing the lock.
    fn change_status(&mut self, status: AgentStatus) -> bool {
        if self.status == status || self.status == AgentStatus::Disposed {
            return false;
        }
        self.status = status;
        self.status_pending.push_back(status);
        true
    }
}

/// The agent driven by the loop.
struct LoopAgent {
    id: AgentId,
    options: AgentOptions,
    step_limits: dsh_llm::StepLimits,
    session: Arc<Session>,
    me: Weak<LoopAgent>,
    state: Mutex<State>,
    wake: Notify,
    services: Services,
    /// The context meter of this agent's session, and the size of the
    /// last request's system prompt and tool schemas.
    meter: Mutex<(dsh_session::TokenMeter, u64)>,
    /// The request parts last logged, so each is written only when it
    /// changes.
    logged: Mutex<LoggedRequest>,
}

/// What the log holds of the requests so far. The default is what a
/// reader assumes before any `request/*` event: no system prompt, no
/// tools, no options yet.
#[derive(Default)]
struct LoggedRequest {
    system: Option<String>,
    tools: dsh_protocol::ToolSet,
    options: Option<serde_json::Value>,
}

impl LoopAgent {
    fn handle(&self) -> Arc<dyn Agent> {
        // The driver and every call through the handle hold an `Arc` of the
        // agent, so `me` upgrades whenever this runs.
        match self.me.upgrade() {
            Some(me) => me,
            None => unreachable!("the agent outlives every call made through its handle"),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn is_disposed(&self) -> bool {
        self.lock().disposed
    }

    /// Sets the status; emits `agent/status` only on a change. No transition
    /// out of `disposed`.
    fn set_status(&self, status: AgentStatus) {
        if self.lock().change_status(status) {
            self.announce_status();
        }
    }

    /// Emits the queued status changes in the order they happened.
    ///
    /// The driver (idle/running) and `dispose` (disposed) change the status
    /// from different threads; announcing under the state lock is impossible
    /// (listeners call back into the agent), and announcing after releasing it
    /// let a late `idle` overtake `disposed`. So changes are queued under the
    /// lock and one thread at a time drains the queue, as `Session::append`
    /// does; a change made from inside a listener is announced right after.
    fn announce_status(&self) {
        {
            let mut st = self.lock();
            if st.status_draining {
                return;
            }
            st.status_draining = true;
        }
        loop {
            let status = {
                let mut st = self.lock();
                match st.status_pending.pop_front() {
                    Some(s) => s,
                    None => {
                        st.status_draining = false;
                        return;
                    }
                }
            };
            // Listener failures are contained and logged by the hook.
            self.services.registry.hooks().status.emit(&StatusChange {
                agent: self.handle(),
                status,
            });
        }
    }

    /// Marks the agent disposed, wakes the idle wait and aborts the current
    /// step with reason `disposed`. Idempotent; never fails.
    fn dispose_now(&self) {
        let changed = {
            let mut st = self.lock();
            st.disposed = true;
            if let Some(step) = st.step.as_mut() {
                step.reason.get_or_insert_with(|| "disposed".to_string());
                step.cancel.cancel();
            }
            st.change_status(AgentStatus::Disposed)
        };
        self.wake.notify_one();
        if changed {
            // Listener failures are contained and logged; dispose never fails.
            self.announce_status();
        }
    }

    fn enqueue(
        &self,
        content: Vec<ContentBlock>,
        source: MessageSource,
        steer: bool,
    ) -> Result<(), AgentError> {
        let steering = {
            let mut st = self.lock();
            if st.disposed {
                return Err(AgentError::Disposed(self.id.clone()));
            }
            let steering = steer && st.status == AgentStatus::Running;
            if source == MessageSource::User {
                st.wakes = 0;
            }
            let pending = Pending {
                content: content.clone(),
                source: source.clone(),
            };
            if steering {
                st.steering.push_back(pending);
            } else {
                st.queued.push_back(pending);
            }
            steering
        };
        if !steering {
            self.wake.notify_one();
        }
        // Listener failures are contained and logged by the hook.
        self.services.registry.hooks().queued.emit(&Queued {
            agent: self.handle(),
            content,
            source,
            steering,
        });
        Ok(())
    }
}

impl Agent for LoopAgent {
    fn id(&self) -> &AgentId {
        &self.id
    }

    fn options(&self) -> &AgentOptions {
        &self.options
    }

    fn session(&self) -> Arc<Session> {
        self.session.clone()
    }

    fn status(&self) -> AgentStatus {
        self.lock().status
    }

    fn has_work(&self) -> bool {
        let st = self.lock();
        !st.disposed && (st.status == AgentStatus::Running || !st.queued.is_empty())
    }

    fn has_queued(&self) -> bool {
        let st = self.lock();
        !st.disposed && !st.queued.is_empty()
    }

    fn send(&self, content: Vec<ContentBlock>, source: MessageSource) -> Result<(), AgentError> {
        self.enqueue(content, source, false)
    }

    fn steer(&self, content: Vec<ContentBlock>, source: MessageSource) -> Result<(), AgentError> {
        self.enqueue(content, source, true)
    }

    fn inject(&self, content: Vec<ContentBlock>, source: MessageSource) -> Result<(), AgentError> {
        if self.is_disposed() {
            return Err(AgentError::Disposed(self.id.clone()));
        }
        self.record(EventPayload::ContextMessage(MessageEvent {
            content,
            source,
        }));
        Ok(())
    }

    fn abort(&self, reason: Option<String>) {
        let reason = reason.unwrap_or_else(|| "aborted".to_string());
        let mut st = self.lock();
        if let Some(step) = st.step.as_mut() {
            if !step.cancel.is_cancelled() {
                step.reason = Some(reason);
                step.cancel.cancel();
            }
        } else if !st.queued.is_empty() || (st.status == AgentStatus::Running && !st.stepped) {
            // A turn that has not reached its first step: that step starts
            // aborted.
            st.abort_pending.get_or_insert(reason);
        }
    }
}

impl ContextSink for LoopAgent {
    fn inject_context(
        &self,
        content: Vec<ContentBlock>,
        source: MessageSource,
    ) -> Result<(), DshError> {
        self.inject(content, source).map_err(DshError::from)
    }

    /// During a turn the notice waits for the next step, which logs it as
    /// a context message; a turn ending with notices nobody saw starts
    /// another (a wake-up) when wake-ups are left, else they are logged as
    /// context for the turn the user starts. An idle agent with wake-ups
    /// left is woken at once; without, the notice is logged as context.
    fn deliver_notice(
        &self,
        content: Vec<ContentBlock>,
        source: MessageSource,
    ) -> Result<(), DshError> {
        let wake = {
            let mut st = self.lock();
            if st.disposed {
                return Err(AgentError::Disposed(self.id.clone()).into());
            }
            if st.status == AgentStatus::Running {
                st.notices.push_back(Pending { content, source });
                return Ok(());
            }
            let wake = st.may_wake(self.options.max_consecutive_wakes);
            if wake {
                st.wakes += 1;
            }
            wake
        };
        if wake {
            self.enqueue(content, source, false)
        } else {
            self.inject(content, source)
        }
        .map_err(DshError::from)
    }
}
