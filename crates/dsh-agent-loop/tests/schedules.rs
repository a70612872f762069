//! Property test: arbitrary schedules of send / steer / inject / abort
//! against a scripted model never lose or duplicate a message, keep turn
//! numbers increasing and the log replayable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use dsh_agent::{Agent, AgentStatus};
use dsh_kernel::Registration;
use dsh_llm::scripted::ScriptedAdapter;
use dsh_llm::{ContentBlock, MessageSource, ModelRequest, Role};
use dsh_session::{
    derive_messages, EventPayload, MessageEvent, Session, SteeringEvent, TurnEndEvent,
    TurnStartEvent,
};
use dsh_tools::{define_tool, NoArgs, ToolError};
use proptest::prelude::*;
use tokio::sync::{mpsc, watch};

/// Marks a message whose reply is a tool call.
const TOOL_MARK: &str = "+tool";
/// The last message of every schedule: its turn ending idle means quiescence.
const END: &str = "end-of-schedule";

#[derive(Debug, Clone)]
enum Op {
    /// Send a message (asking for a tool call when `true`).
    Send(bool),
    /// Steer (asking for a tool call when `true`).
    Steer(bool),
    Inject,
    Abort,
    /// Let the agent run for a while: `n` ms of (paused, virtual) time — the
    /// model streams one chunk per ms — or, on the multi-thread runtime, until
    /// `n` more agent hook emissions happened or the agent is idle.
    Wait(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<bool>().prop_map(Op::Send),
        3 => any::<bool>().prop_map(Op::Steer),
        2 => Just(Op::Inject),
        2 => Just(Op::Abort),
        4 => (0u8..12).prop_map(Op::Wait),
    ]
}

/// Answers with text, or with a tool call when a message since the last
/// assistant message asks for one and no tool result has come back yet.
fn respond(req: &ModelRequest, n: &AtomicUsize) -> dsh_llm::scripted::ScriptedReply {
    let history = req.messages.to_vec();
    let since: Vec<_> = history
        .iter()
        .rev()
        .take_while(|m| m.role != Role::Assistant)
        .collect();
    let answered = since.iter().any(|m| {
        m.content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult(_)))
    });
    let wants_tool = since
        .iter()
        .any(|m| text_of(&m.content).contains(TOOL_MARK));
    let i = n.fetch_add(1, Ordering::SeqCst);
    if wants_tool && !answered {
        call(&format!("call-{i}"), "echo", "{}")
    } else {
        say(&["reply ", &i.to_string()])
    }
}

/// Whether every text of `expected` is in the log as a user or steering message.
fn all_logged(log: &Session, expected: &[String]) -> bool {
    let logged = texts_of(log, |d| match d {
        EventPayload::UserMessage(MessageEvent { content, .. })
        | EventPayload::SteeringMessage(SteeringEvent { content, .. }) => Some(text_of(content)),
        _ => None,
    });
    expected.iter().all(|t| logged.contains(t))
}

fn texts_of(log: &Session, pick: impl Fn(&EventPayload) -> Option<String>) -> Vec<String> {
    log.events().iter().filter_map(|e| pick(&e.data)).collect()
}

async fn run_schedule(ops: Vec<Op>, virtual_time: bool) {
    let n = Arc::new(AtomicUsize::new(0));
    let mut model = ScriptedAdapter::with_responder(move |req| respond(req, &n));
    if virtual_time {
        model = model.with_delay(Duration::from_millis(1));
    }
    let mut h = Harness::new(model);
    let tool = define_tool("echo", "Echoes", |_: NoArgs, _ctx| async {
        // A tool that takes a moment, so aborts and steering can land in it.
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        Ok::<_, ToolError>(vec![ContentBlock::text("echoed")])
    });
    let reg = h.tools.register(tool.into_arc()).unwrap();
    h.keep(reg);
    let tap = Tap::install(&h.registry);

    // Quiescence: the agent goes idle after the turn that drained END. The
    // check runs inside the listener, on the driver, when idle is announced.
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<()>();
    let reg = h.registry.hooks().status.on(move |c| {
        if c.status == AgentStatus::Idle {
            let drained = c.agent.session().events().iter().any(|e| {
                matches!(&e.data, EventPayload::UserMessage(MessageEvent { content, .. }) if text_of(content) == END)
            });
            if drained {
                let _ = done_tx.send(());
            }
        }
    });
    h.keep(reg);

    // Progress: a counter of agent hook emissions.
    let (progress_tx, mut progress_rx) = watch::channel(0u64);
    let progress_tx = Arc::new(progress_tx);
    let hooks = h.registry.hooks();
    let bump = move || progress_tx.send_modify(|n| *n += 1);
    let b = bump.clone();
    let r1 = hooks.event.on(move |e| {
        if matches!(
            e.event.data,
            EventPayload::AssistantChunk(_)
                | EventPayload::StepStart(_)
                | EventPayload::StepEnd(_)
                | EventPayload::TurnStart(_)
        ) {
            b()
        }
    });
    let r2 = hooks.status.on(move |_| bump());
    h.keep(Registration::merge(vec![r1, r2]));

    let handle = h.agent("a1");
    let agent: Arc<dyn Agent> = handle.agent();
    let mut sent = Vec::new();
    let mut steered = Vec::new();
    let mut injected = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Send(tool) => {
                let t = format!("send-{i}{}", if *tool { TOOL_MARK } else { "" });
                agent.send(text(&t), MessageSource::User).unwrap();
                sent.push(t);
            }
            Op::Steer(tool) => {
                let t = format!("steer-{i}{}", if *tool { TOOL_MARK } else { "" });
                agent.steer(text(&t), MessageSource::User).unwrap();
                steered.push(t);
            }
            Op::Inject => {
                let t = format!("inject-{i}");
                agent.inject(text(&t), MessageSource::plugin("p")).unwrap();
                injected.push(t);
            }
            Op::Abort => agent.abort(Some(format!("abort-{i}"))),
            Op::Wait(k) if virtual_time => {
                tokio::time::sleep(Duration::from_millis(u64::from(*k))).await;
            }
            Op::Wait(k) => {
                let target = *progress_rx.borrow() + u64::from(*k);
                let expected: Vec<String> = sent.iter().chain(&steered).cloned().collect();
                // Every emission bumps the counter, idle included; an idle
                // agent that has logged every message will not move again.
                // (A message stranded in the inbox of an idle agent would
                // hang here until the guard fails the case.)
                let settled = || {
                    agent.status() == AgentStatus::Idle && all_logged(&agent.session(), &expected)
                };
                guard(
                    "progress",
                    progress_rx.wait_for(|n| *n >= target || settled()),
                )
                .await
                .unwrap();
            }
        }
    }
    agent.send(text(END), MessageSource::User).unwrap();
    sent.push(END.to_string());
    guard("quiescence", done_rx.recv()).await.unwrap();
    assert_eq!(agent.status(), AgentStatus::Idle);

    let log = agent.session();
    // No message lost or duplicated.
    let users = texts_of(&log, |d| match d {
        EventPayload::UserMessage(MessageEvent { content, .. }) => Some(text_of(content)),
        _ => None,
    });
    let steerings = texts_of(&log, |d| match d {
        EventPayload::SteeringMessage(SteeringEvent { content, .. }) => Some(text_of(content)),
        _ => None,
    });
    let contexts = texts_of(&log, |d| match d {
        EventPayload::ContextMessage(MessageEvent { content, .. }) => Some(text_of(content)),
        _ => None,
    });
    let mut delivered: HashMap<String, usize> = HashMap::new();
    for t in users.iter().chain(&steerings) {
        *delivered.entry(t.clone()).or_default() += 1;
    }
    for t in sent.iter().chain(&steered) {
        assert_eq!(
            delivered.remove(t),
            Some(1),
            "{t} delivered once; log: {:?}",
            kinds(&log)
        );
    }
    assert!(delivered.is_empty(), "unexpected messages {delivered:?}");
    assert_eq!(contexts, injected, "each injection exactly once, in order");
    // Sends keep their order (the queued FIFO).
    let sends_in_log: Vec<&String> = users
        .iter()
        .filter(|t| t.starts_with("send-") || *t == END)
        .collect();
    assert_eq!(sends_in_log, sent.iter().collect::<Vec<_>>());

    // Turn numbers strictly increase; every turn has one end; every turn was
    // started by at least one message.
    let mut last = 0;
    let mut open = false;
    let mut fresh_messages = 0;
    for e in log.events().iter() {
        match &e.data {
            EventPayload::UserMessage(_) => fresh_messages += 1,
            EventPayload::TurnStart(TurnStartEvent { turn, .. }) => {
                assert_eq!(*turn, last + 1, "turn numbers are consecutive");
                assert!(!open);
                assert!(fresh_messages > 0, "turn {turn} started without a message");
                last = *turn;
                open = true;
                fresh_messages = 0;
            }
            EventPayload::TurnEnd(TurnEndEvent { turn, .. }) => {
                assert_eq!(*turn, last);
                assert!(open);
                open = false;
            }
            _ => {}
        }
    }
    assert!(!open);
    assert!(error_events(&log).is_empty(), "{:?}", error_events(&log));

    // Statuses alternate running / idle.
    let statuses = tap.statuses();
    for (i, s) in statuses.iter().enumerate() {
        let want = if i % 2 == 0 {
            AgentStatus::Running
        } else {
            AgentStatus::Idle
        };
        assert_eq!(*s, want, "{statuses:?}");
    }

    // Replay: the log derives the same history live, purely, and seeded.
    let evs = events(&log);
    let pure = derive_messages(&evs);
    assert_eq!(log.derive_messages().to_vec(), pure);
    assert_eq!(
        Session::detached("replay", evs).derive_messages().to_vec(),
        pure
    );
    assert_calls_answered(&pure);

    handle.dispose().await;
    h.assert_no_violations();
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Half the cases run on a single thread with a paused clock (the model
    /// streams one chunk per virtual ms, so `Wait` lands ops mid-stream,
    /// mid-tool or between steps, deterministically); the other half on two
    /// worker threads, where the driver races the schedule for real.
    #[test]
    fn schedules_never_lose_or_duplicate_messages(
        ops in prop::collection::vec(op(), 1..24),
        virtual_time in any::<bool>(),
    ) {
        let rt = if virtual_time {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build()
        } else {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
        }
        .unwrap();
        rt.block_on(run_schedule(ops, virtual_time));
    }
}
