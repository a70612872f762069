//! The agent seam: the [`Agent`] handle trait, the agent hooks and the
//! [`AgentRegistry`] service.
//!
//! Plugins program against this crate, never against the concrete loop
//! (`dsh-agent-loop`). Start at [`Agent`] (what a plugin can do with an agent)
//! and [`AgentHooks`] (what it can observe and intercept).
//!
//! Observation is one stream: `agent/event` carries every session event the
//! agent appended, right after the append, so observers see exactly what
//! was logged. The waterfalls (`agent/request`, `agent/step-result`,
//! `agent/turn-continuation`) intercept; `agent/step-result` runs before the
//! assistant message is logged.

#![warn(missing_docs)]

use std::sync::{Arc, Mutex};

use dsh_kernel::sync::lock;
use dsh_kernel::{DshError, EmitHook, ErrorCode, Registration, WaterfallHook};
use dsh_llm::{ContentBlock, Message, MessageSource, ModelRequest};
use dsh_protocol::{codes, AgentId};
use dsh_session::{Session, SessionEvent};

/// Per-agent options.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOptions {
    /// The model name (routing key of the LLM service). `None` means the
    /// `agent/request` waterfall must supply one.
    pub model: Option<String>,
    /// Appended after the assembled system-prompt sections.
    pub system_prompt: Option<String>,
    /// Hard cap on steps per turn; the turn then ends with `max-steps`.
    pub max_steps: u32,
    /// After this many identical failed tool calls in one turn the loop steers
    /// the model to stop repeating the call. The schema is attached one
    /// failure earlier.
    pub repeat_failure_limit: u32,
    /// The model's context window in tokens; with it, the loop logs a
    /// `context/usage` event (the meter) after each model reply.
    pub context_window: Option<u64>,
    /// At most this many concurrency-safe tool calls of one step run at
    /// once (`[tools] max_parallel`); `0` or `1` runs every call alone.
    pub max_parallel_tool_calls: usize,
    /// At most this many turns in a row are started by background
    /// completions (wake-ups) without a user message in between; later
    /// notices wait as context messages until the user speaks.
    pub max_consecutive_wakes: u32,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            model: None,
            system_prompt: None,
            max_steps: 100,
            repeat_failure_limit: 3,
            context_window: None,
            max_parallel_tool_calls: 10,
            max_consecutive_wakes: 3,
        }
    }
}

/// An agent's lifecycle state. `Disposed` is terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentStatus {
    /// Waiting for a queued message.
    Idle,
    /// Running a turn.
    Running,
    /// Disposed; every method that enqueues fails.
    Disposed,
}

impl AgentStatus {
    /// `idle`, `running` or `disposed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            AgentStatus::Idle => "idle",
            AgentStatus::Running => "running",
            AgentStatus::Disposed => "disposed",
        }
    }
}

/// Errors of the agent surface.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum AgentError {
    /// The agent was disposed: `agent "<id>" is disposed`.
    #[error("agent \"{0}\" is disposed")]
    Disposed(AgentId),
    /// Registering a second agent with the same id.
    #[error("agent \"{0}\" is already registered")]
    Duplicate(AgentId),
    /// A service the agent needs is missing from the kernel.
    #[error("{0}")]
    MissingService(String),
    /// The agent's session could not be created (e.g. a duplicate session
    /// id); `code` is the session layer's code.
    #[error("{message}")]
    Session {
        /// The session error's stable code (e.g. `DUPLICATE_SESSION`).
        code: String,
        /// Its message.
        message: String,
    },
}

impl ErrorCode for AgentError {
    /// `AGENT_DISPOSED`, `DUPLICATE_AGENT`, `MISSING_SERVICE`, or the
    /// session layer's code.
    fn code(&self) -> &str {
        match self {
            AgentError::Disposed(_) => codes::AGENT_DISPOSED,
            AgentError::Duplicate(_) => codes::DUPLICATE_AGENT,
            AgentError::MissingService(_) => codes::MISSING_SERVICE,
            AgentError::Session { code, .. } => code,
        }
    }
}

impl From<AgentError> for DshError {
    fn from(e: AgentError) -> Self {
        DshError::new(e.code().to_string(), e.to_string())
    }
}

/// A running agent. Cheap to share as `Arc<dyn Agent>`.
pub trait Agent: Send + Sync + 'static {
    /// The agent's id (unique in its registry).
    fn id(&self) -> &AgentId;
    /// The options it was created with.
    fn options(&self) -> &AgentOptions;
    /// Its session log.
    fn session(&self) -> Arc<Session>;
    /// Current status.
    fn status(&self) -> AgentStatus;
    /// Whether the agent has work: a turn running, or a message queued
    /// for a turn not started yet (a background notice that woke an idle
    /// agent is queued before the status says `running`). `false` means
    /// idle with nothing queued, or disposed. The default answers from
    /// [`Agent::status`] alone; an implementation with a queue refines it.
    fn has_work(&self) -> bool {
        self.status() == AgentStatus::Running
    }
    /// Whether a message waits in the queue for a turn not started yet
    /// (the running turn, if any, not counted). The default: never (an
    /// implementation without a queue).
    fn has_queued(&self) -> bool {
        false
    }
    /// Queues a message; starts a turn when idle, else waits for the next
    /// turn. Emits `agent/queued` (steering: false).
    ///
    /// # Errors
    /// [`AgentError::Disposed`] once disposed.
    fn send(&self, content: Vec<ContentBlock>, source: MessageSource) -> Result<(), AgentError>;
    /// Steers the running turn: delivered between steps. When not running it
    /// behaves exactly like [`Agent::send`].
    ///
    /// # Errors
    /// [`AgentError::Disposed`] once disposed.
    fn steer(&self, content: Vec<ContentBlock>, source: MessageSource) -> Result<(), AgentError>;
    /// Appends context to the session now without starting a turn; visible to
    /// the next model request at its log position.
    ///
    /// # Errors
    /// [`AgentError::Disposed`] once disposed.
    fn inject(&self, content: Vec<ContentBlock>, source: MessageSource) -> Result<(), AgentError>;
    /// Aborts the current step (reason default `"aborted"`). With no step
    /// in flight, a turn that has not reached its first step (queued, or
    /// just started) has that step start aborted. A no-op otherwise: idle
    /// with nothing queued, or between two steps of a running turn.
    fn abort(&self, reason: Option<String>);
}

/// `agent/status`: a status change.
#[derive(Clone)]
pub struct StatusChange {
    /// The agent.
    pub agent: Arc<dyn Agent>,
    /// The new status.
    pub status: AgentStatus,
}

/// `agent/queued`: a message was queued or steered.
#[derive(Clone)]
pub struct Queued {
    /// The agent.
    pub agent: Arc<dyn Agent>,
    /// The content.
    pub content: Vec<ContentBlock>,
    /// Its source.
    pub source: MessageSource,
    /// Whether it went to the steering FIFO.
    pub steering: bool,
}

/// `agent/event`: one session event the agent appended, delivered right
/// after the append, in `seq` order. This is the one observation stream: the
/// turn and step boundaries, raw stream chunks, messages, tool calls and
/// results, usage and contained errors all arrive here as the records that
/// were logged.
#[derive(Clone)]
pub struct AgentEvent {
    /// The agent.
    pub agent: Arc<dyn Agent>,
    /// The event exactly as logged.
    pub event: Arc<SessionEvent>,
}

/// `agent/request` waterfall argument: the request about to be streamed.
pub struct RequestContext {
    /// The agent.
    pub agent: Arc<dyn Agent>,
    /// The turn number.
    pub turn: u64,
    /// The step number.
    pub step: u64,
    /// The request (model, history, system, tools, cancel token).
    pub request: ModelRequest,
    /// The provider rejected this step's previous attempt as longer than
    /// the context window (`CONTEXT_WINDOW_EXCEEDED`); this is the one
    /// retry, and a compactor should compact whatever the meter says.
    pub overflowed: bool,
}

/// `agent/step-result` waterfall argument: the assembled assistant message.
pub struct StepResultContext {
    /// The agent.
    pub agent: Arc<dyn Agent>,
    /// The turn number.
    pub turn: u64,
    /// The step number.
    pub step: u64,
    /// The message (what gets logged and dispatched).
    pub message: Message,
}

/// `agent/turn-continuation` waterfall argument.
pub struct ContinuationContext {
    /// The agent.
    pub agent: Arc<dyn Agent>,
    /// The turn number.
    pub turn: u64,
    /// The loop's own decision: the step had tool calls or steering arrived.
    pub default: bool,
}

/// The agent hooks, shared by every agent of a registry.
pub struct AgentHooks {
    /// `agent/created`.
    pub created: EmitHook<Arc<dyn Agent>>,
    /// `agent/disposed`.
    pub disposed: EmitHook<Arc<dyn Agent>>,
    /// `agent/status`: a status change, in change order.
    pub status: EmitHook<StatusChange>,
    /// `agent/queued`: a message was queued or steered (not yet logged).
    pub queued: EmitHook<Queued>,
    /// `agent/event`: every event the agent appended to its session, right
    /// after the append. A listener failing on `turn/start`, `step/start`,
    /// `step/end`, `turn/end`, `assistant/chunk` or `steering/message` ends
    /// the turn with its error (as the reference's turn hooks do); on other
    /// kinds the failure is contained and logged.
    pub event: EmitHook<AgentEvent>,
    /// `agent/request`: may rewrite the request (e.g. switch model) or fail
    /// the step.
    pub request: WaterfallHook<RequestContext, Result<ModelRequest, DshError>>,
    /// `agent/step-result`: may rewrite the assistant message before it is
    /// logged and its tool calls dispatched.
    pub step_result: WaterfallHook<StepResultContext, Result<Message, DshError>>,
    /// `agent/turn-continuation`: decides whether another step runs.
    pub turn_continuation: WaterfallHook<ContinuationContext, Result<bool, DshError>>,
}

impl Default for AgentHooks {
    fn default() -> Self {
        Self {
            created: EmitHook::new("agent/created"),
            disposed: EmitHook::new("agent/disposed"),
            status: EmitHook::new("agent/status"),
            queued: EmitHook::new("agent/queued"),
            event: EmitHook::new("agent/event"),
            request: WaterfallHook::new("agent/request"),
            step_result: WaterfallHook::new("agent/step-result"),
            turn_continuation: WaterfallHook::new("agent/turn-continuation"),
        }
    }
}

/// The agent registry (a kernel service): agents by id, and the hooks every
/// agent of this registry fires.
#[derive(Default)]
pub struct AgentRegistry {
    agents: Mutex<Vec<Arc<dyn Agent>>>,
    hooks: AgentHooks,
}

impl AgentRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The agent hooks.
    pub fn hooks(&self) -> &AgentHooks {
        &self.hooks
    }

    /// Registers an agent and emits `agent/created`. Undoing the registration
    /// removes it and emits `agent/disposed`.
    ///
    /// # Errors
    /// [`AgentError::Duplicate`] when the id is taken.
    pub fn register(self: &Arc<Self>, agent: Arc<dyn Agent>) -> Result<Registration, AgentError> {
        {
            let mut agents = lock(&self.agents);
            if agents.iter().any(|a| a.id() == agent.id()) {
                return Err(AgentError::Duplicate(agent.id().clone()));
            }
            agents.push(agent.clone());
        }
        // Listener failures are contained and logged by the hook.
        self.hooks.created.emit(&agent);
        let registry = Arc::downgrade(self);
        Ok(Registration::new(move || {
            if let Some(registry) = registry.upgrade() {
                lock(&registry.agents).retain(|a| !Arc::ptr_eq(a, &agent));
                registry.hooks.disposed.emit(&agent);
            }
        }))
    }

    /// The agent with this id.
    pub fn get(&self, id: &str) -> Option<Arc<dyn Agent>> {
        lock(&self.agents).iter().find(|a| a.id() == id).cloned()
    }

    /// Every agent, in registration order.
    pub fn list(&self) -> Vec<Arc<dyn Agent>> {
        lock(&self.agents).clone()
    }
}
