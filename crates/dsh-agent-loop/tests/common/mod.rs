//! Shared setup of the agent-loop tests: a kernel wired with the scripted
//! model, the services the loop needs and the dev-mode invariants plugin; a
//! tap that records every agent hook emission and lets a test wait for one;
//! small builders for replies and content.
#![allow(dead_code)]
// each test binary uses a different part of this module
// Test helpers: pub for the test binaries, unwrap/expect allowed.
#![allow(unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_agent::{Agent, AgentOptions, AgentRegistry, AgentStatus};
use dsh_agent_loop::invariants::{self, Invariants};
use dsh_agent_loop::{AgentHandle, AgentLoop, LoopSetup};
use dsh_kernel::{Kernel, Registration};
use dsh_llm::scripted::{ReplyBuilder, ScriptedAdapter, ScriptedReply};
use dsh_llm::{ContentBlock, LlmService, Message, MessageSource, Role};
use dsh_session::{
    ChunkEvent, ErrorEvent, EventPayload, Session, SessionEvent, SessionStore, SteeringEvent,
    StepEvent, ToolResultEvent, TurnEndEvent, TurnEndReason, TurnStartEvent,
};
use dsh_tools::ToolRegistry;
use tokio::sync::mpsc;

/// The hang guard: no test waits longer than this for an event.
pub const HANG: Duration = Duration::from_secs(10);

/// The model name the scripted adapter serves.
pub const MODEL: &str = "m";

/// Awaits `fut`, failing the test if it takes longer than [`HANG`].
pub async fn guard<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(HANG, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// A kernel with every service the loop uses, the scripted model registered
/// as [`MODEL`] and the invariants plugin installed.
pub struct Harness {
    pub kernel: Kernel,
    pub llm: Arc<LlmService>,
    pub store: Arc<SessionStore>,
    pub registry: Arc<AgentRegistry>,
    pub tools: Arc<ToolRegistry>,
    pub model: Arc<ScriptedAdapter>,
    pub invariants: Invariants,
    regs: Vec<Registration>,
}

impl Harness {
    /// Wires the services around `model`.
    pub fn new(model: ScriptedAdapter) -> Self {
        let kernel = Kernel::new();
        let llm = Arc::new(LlmService::new());
        let store = Arc::new(SessionStore::new());
        let registry = Arc::new(AgentRegistry::new());
        let tools = Arc::new(ToolRegistry::new());
        let model = Arc::new(model);
        let mut regs = vec![
            kernel.provide(llm.clone()).expect("fresh kernel"),
            kernel.provide(store.clone()).expect("fresh kernel"),
            kernel.provide(registry.clone()).expect("fresh kernel"),
            kernel.provide(tools.clone()).expect("fresh kernel"),
        ];
        regs.push(
            llm.register_adapter(&[MODEL], model.clone())
                .expect("first adapter"),
        );
        let (invariants, reg) = invariants::install(&store, &registry);
        regs.push(reg);
        Harness {
            kernel,
            llm,
            store,
            registry,
            tools,
            model,
            invariants,
            regs,
        }
    }

    /// A harness whose model plays `replies` in order.
    pub fn scripted(replies: impl IntoIterator<Item = ScriptedReply>) -> Self {
        Self::new(ScriptedAdapter::new(replies))
    }

    /// Keeps a registration alive for the harness's lifetime.
    pub fn keep(&mut self, reg: Registration) {
        self.regs.push(reg);
    }

    /// Creates agent `id` on model [`MODEL`] with default options.
    pub fn agent(&self, id: &str) -> AgentHandle {
        self.agent_with(
            id,
            AgentOptions {
                model: Some(MODEL.into()),
                ..Default::default()
            },
        )
    }

    /// Creates agent `id` with `options`.
    pub fn agent_with(&self, id: &str, options: AgentOptions) -> AgentHandle {
        AgentLoop::create(&self.kernel, id, options).expect("agent created")
    }

    /// Creates agent `id` on model [`MODEL`] with a seeded session.
    pub fn agent_seeded(&self, id: &str, seed: Vec<SessionEvent>) -> AgentHandle {
        AgentLoop::create_with(
            &self.kernel,
            id,
            AgentOptions {
                model: Some(MODEL.into()),
                ..Default::default()
            },
            LoopSetup {
                seed,
                ..Default::default()
            },
        )
        .expect("agent created")
    }

    /// Fails the test when the invariants plugin saw anything.
    pub fn assert_no_violations(&self) {
        let v = self.invariants.violations();
        assert!(v.is_empty(), "invariant violations: {v:#?}");
    }
}

/// One agent hook emission, as the tap records it.
#[derive(Debug, Clone, PartialEq)]
pub enum Obs {
    Created(String),
    Disposed(String),
    Status(AgentStatus),
    Queued {
        text: String,
        steering: bool,
    },
    TurnStart(u64),
    TurnEnd(u64, TurnEndReason),
    StepStart(u64, u64),
    StepEnd(u64, u64),
    Chunk(u64, u64),
    Steering(u64, String),
    Error {
        turn: u64,
        step: u64,
        code: String,
        message: String,
    },
}

/// Records every agent hook emission of a registry, in order, and feeds a
/// channel the test can wait on.
pub struct Tap {
    rx: mpsc::UnboundedReceiver<Obs>,
    all: Arc<Mutex<Vec<Obs>>>,
    _reg: Registration,
}

impl Tap {
    /// Listens on every emit hook of `registry`.
    pub fn install(registry: &AgentRegistry) -> Tap {
        let (tx, rx) = mpsc::unbounded_channel();
        let all: Arc<Mutex<Vec<Obs>>> = Default::default();
        let rec = {
            let all = all.clone();
            move |o: Obs| {
                all.lock().unwrap().push(o.clone());
                // The receiver lives as long as the test; a closed channel
                // only means the test no longer waits.
                let _ = tx.send(o);
            }
        };
        let h = registry.hooks();
        let r = Arc::new(rec);
        let mut regs = Vec::new();
        let f = r.clone();
        regs.push(h.created.on(move |a| f(Obs::Created(a.id().to_string()))));
        let f = r.clone();
        regs.push(h.disposed.on(move |a| f(Obs::Disposed(a.id().to_string()))));
        let f = r.clone();
        regs.push(h.status.on(move |c| f(Obs::Status(c.status))));
        let f = r.clone();
        regs.push(h.queued.on(move |q| {
            f(Obs::Queued {
                text: text_of(&q.content),
                steering: q.steering,
            })
        }));
        // The boundaries, chunks, steering and errors arrive on the one
        // `agent/event` stream, each right after its event was appended.
        let f = r.clone();
        regs.push(h.event.on(move |e| {
            let o = match &e.event.data {
                EventPayload::TurnStart(TurnStartEvent { turn, .. }) => Obs::TurnStart(*turn),
                EventPayload::TurnEnd(TurnEndEvent { turn, reason }) => {
                    Obs::TurnEnd(*turn, reason.clone())
                }
                EventPayload::StepStart(StepEvent { turn, step }) => Obs::StepStart(*turn, *step),
                EventPayload::StepEnd(StepEvent { turn, step }) => Obs::StepEnd(*turn, *step),
                EventPayload::AssistantChunk(ChunkEvent { turn, step, .. }) => {
                    Obs::Chunk(*turn, *step)
                }
                EventPayload::SteeringMessage(SteeringEvent { turn, content, .. }) => {
                    Obs::Steering(*turn, text_of(content))
                }
                EventPayload::Error(ErrorEvent {
                    turn,
                    step,
                    message,
                    code,
                }) => Obs::Error {
                    turn: *turn,
                    step: *step,
                    code: code.clone().unwrap_or_default(),
                    message: message.clone(),
                },
                _ => return,
            };
            f(o)
        }));
        Tap {
            rx,
            all,
            _reg: Registration::merge(regs),
        }
    }

    /// Waits for the next emission matching `pred` (earlier ones are skipped).
    pub async fn wait_for(&mut self, what: &str, pred: impl Fn(&Obs) -> bool) -> Obs {
        guard(what, async {
            loop {
                let o = self.rx.recv().await.expect("tap channel open");
                if pred(&o) {
                    return o;
                }
            }
        })
        .await
    }

    /// Waits for the next `agent/status` idle.
    pub async fn idle(&mut self) {
        self.wait_for("status idle", |o| *o == Obs::Status(AgentStatus::Idle))
            .await;
    }

    /// Waits for the next `agent/turn-end` and returns its turn and reason.
    pub async fn turn_end(&mut self) -> (u64, TurnEndReason) {
        match self
            .wait_for("turn end", |o| matches!(o, Obs::TurnEnd(..)))
            .await
        {
            Obs::TurnEnd(t, r) => (t, r),
            _ => unreachable!(),
        }
    }

    /// Everything recorded so far.
    pub fn all(&self) -> Vec<Obs> {
        self.all.lock().unwrap().clone()
    }

    /// The recorded turn/step boundary emissions.
    pub fn boundaries(&self) -> Vec<Obs> {
        self.all()
            .into_iter()
            .filter(|o| {
                matches!(
                    o,
                    Obs::TurnStart(_) | Obs::TurnEnd(..) | Obs::StepStart(..) | Obs::StepEnd(..)
                )
            })
            .collect()
    }

    /// The recorded statuses.
    pub fn statuses(&self) -> Vec<AgentStatus> {
        self.all()
            .into_iter()
            .filter_map(|o| match o {
                Obs::Status(s) => Some(s),
                _ => None,
            })
            .collect()
    }
}

/// One text block.
pub fn text(t: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::text(t)]
}

/// The text blocks of `content`, concatenated.
pub fn text_of(content: &[ContentBlock]) -> String {
    content.iter().filter_map(ContentBlock::as_text).collect()
}

/// A text reply streamed as `deltas`, with usage.
pub fn say(deltas: &[&str]) -> ScriptedReply {
    ReplyBuilder::new().text(deltas).usage(10, 2).reply()
}

/// A reply with one tool call.
pub fn call(id: &str, name: &str, args: &str) -> ScriptedReply {
    ReplyBuilder::new()
        .tool_call(id, name, &[args])
        .usage(10, 2)
        .reply()
}

/// Sends `t` as a user message.
pub fn send(agent: &Arc<dyn Agent>, t: &str) {
    agent
        .send(text(t), MessageSource::User)
        .expect("agent alive");
}

/// The event kinds of a log.
pub fn kinds(session: &Session) -> Vec<String> {
    session
        .events()
        .iter()
        .map(|e| e.data.kind().to_string())
        .collect()
}

/// The log as plain events.
pub fn events(session: &Session) -> Vec<SessionEvent> {
    session.events().iter().map(|e| (**e).clone()).collect()
}

/// The `turn/end` reasons of a log, in order.
pub fn turn_ends(session: &Session) -> Vec<(u64, TurnEndReason)> {
    session
        .events()
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::TurnEnd(TurnEndEvent { turn, reason }) => Some((*turn, reason.clone())),
            _ => None,
        })
        .collect()
}

/// The `tool/result` events of a log: `(call id, text, is_error, code)`.
pub fn tool_results(session: &Session) -> Vec<(String, String, bool, Option<String>)> {
    session
        .events()
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::ToolResult(ToolResultEvent { result, .. }) => Some((
                result.call_id.to_string(),
                result
                    .content
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .collect::<Vec<_>>()
                    .join("\n"),
                result.is_error,
                result.code().map(str::to_string),
            )),
            _ => None,
        })
        .collect()
}

/// The `error` events of a log: `(turn, step, message, code)`.
pub fn error_events(session: &Session) -> Vec<(u64, u64, String, Option<String>)> {
    session
        .events()
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::Error(ErrorEvent {
                turn,
                step,
                message,
                code,
            }) => Some((*turn, *step, message.clone(), code.clone())),
            _ => None,
        })
        .collect()
}

/// Asserts that every tool call of `history` is answered by a tool result
/// before the next assistant message (what providers require).
pub fn assert_calls_answered(history: &[Message]) {
    let mut open: Vec<String> = Vec::new();
    for m in history {
        match m.role {
            Role::Assistant => {
                assert!(open.is_empty(), "tool calls {open:?} left unanswered");
                for b in &m.content {
                    if let ContentBlock::ToolCall(c) = b {
                        open.push(c.call_id.to_string());
                    }
                }
            }
            _ => {
                for b in &m.content {
                    if let ContentBlock::ToolResult(r) = b {
                        open.retain(|id| *id != r.tool_call_id);
                    }
                }
            }
        }
    }
    assert!(open.is_empty(), "tool calls {open:?} left unanswered");
}
