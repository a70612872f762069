//! The parallel schedule of one step's tool calls: consecutive
//! concurrency-safe calls run together (proved with calls that wait for
//! each other, never with wall-clock sleeps), exclusive calls run alone,
//! results enter the log in the model's order, a failing sibling cancels
//! nothing, an abort answers every call, and `max_parallel_tool_calls`
//! bounds how many run at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use dsh_agent::AgentOptions;
use dsh_llm::scripted::{ReplyBuilder, ScriptedReply};
use dsh_session::{EventPayload, TurnEndReason};
use dsh_tools::{define_tool, NoArgs, ToolContext, ToolError};
use tokio::sync::{mpsc, Barrier, Notify};

/// How long a meeting call waits for its partners before it reports that
/// they never came (the calls then ran one after another).
const MEET: Duration = Duration::from_secs(5);

/// A reply calling each `(id, tool)` with `{}`.
fn calls(list: &[(&str, &str)]) -> ScriptedReply {
    let mut b = ReplyBuilder::new();
    for (id, tool) in list {
        b = b.tool_call(id, tool, &["{}"]);
    }
    b.usage(10, 2).reply()
}

/// What the tools saw, in order: `start <id>` / `end <id>`.
#[derive(Default, Clone)]
struct Trace(Arc<Mutex<Vec<String>>>);

impl Trace {
    fn note(&self, what: &str, ctx: &ToolContext) {
        self.0
            .lock()
            .unwrap()
            .push(format!("{what} {}", ctx.call_id));
    }
    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    fn pos(&self, entry: &str) -> usize {
        let all = self.all();
        all.iter()
            .position(|e| e == entry)
            .unwrap_or_else(|| panic!("{entry:?} not in {all:?}"))
    }
}

/// Registers a safe tool `name` whose calls meet at a barrier of `n`: each
/// succeeds only when `n` calls are inside it at the same time.
fn meeting_tool(h: &mut Harness, name: &str, n: usize, trace: &Trace) {
    let barrier = Arc::new(Barrier::new(n));
    let trace = trace.clone();
    let tool = define_tool(name, "meets its siblings", move |_: NoArgs, ctx| {
        let barrier = barrier.clone();
        let trace = trace.clone();
        async move {
            trace.note("start", &ctx);
            let met = tokio::time::timeout(MEET, barrier.wait()).await.is_ok();
            trace.note("end", &ctx);
            if met {
                Ok(text("met"))
            } else {
                Err(ToolError::new("NOT_CONCURRENT", "nobody came"))
            }
        }
    })
    .concurrency_safe()
    .into_arc();
    h.keep(h.tools.register(tool).unwrap());
}

/// Registers an exclusive tool `name` that yields a few times while it runs.
fn exclusive_tool(h: &mut Harness, name: &str, trace: &Trace) {
    let trace = trace.clone();
    let tool = define_tool(name, "runs alone", move |_: NoArgs, ctx| {
        let trace = trace.clone();
        async move {
            trace.note("start", &ctx);
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
            trace.note("end", &ctx);
            Ok(text("done"))
        }
    })
    .into_arc();
    h.keep(h.tools.register(tool).unwrap());
}

fn result_ids(h: &AgentHandleExt) -> Vec<String> {
    tool_results(&h.0).into_iter().map(|r| r.0).collect()
}

/// The session of a finished agent.
struct AgentHandleExt(Arc<dsh_session::Session>);

async fn run_turn(h: &Harness, options: AgentOptions) -> AgentHandleExt {
    let handle = h.agent_with("a", options);
    let agent = handle.agent();
    let mut tap = Tap::install(&h.registry);
    send(&agent, "go");
    tap.idle().await;
    let session = agent.session();
    handle.dispose().await;
    AgentHandleExt(session)
}

fn options() -> AgentOptions {
    AgentOptions {
        model: Some(MODEL.into()),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consecutive_safe_calls_run_together_and_exclusive_ones_alone() {
    let mut h = Harness::scripted([
        calls(&[
            ("a1", "meet_a"),
            ("a2", "meet_a"),
            ("x", "alone"),
            ("b1", "meet_b"),
            ("b2", "meet_b"),
            ("b3", "meet_b"),
        ]),
        say(&["ok"]),
    ]);
    let trace = Trace::default();
    meeting_tool(&mut h, "meet_a", 2, &trace);
    meeting_tool(&mut h, "meet_b", 3, &trace);
    exclusive_tool(&mut h, "alone", &trace);
    let s = guard("the turn", run_turn(&h, options())).await;

    let results = tool_results(&s.0);
    assert_eq!(results.len(), 6);
    for (id, text, is_error, _) in &results {
        assert!(!is_error, "{id} failed: {text}");
    }
    // The exclusive call starts after both calls before it ended and ends
    // before any call after it starts.
    let x_start = trace.pos("start x");
    let x_end = trace.pos("end x");
    assert!(trace.pos("end a1") < x_start && trace.pos("end a2") < x_start);
    for b in ["b1", "b2", "b3"] {
        assert!(
            x_end < trace.pos(&format!("start {b}")),
            "{:?}",
            trace.all()
        );
    }
    assert_eq!(result_ids(&s), ["a1", "a2", "x", "b1", "b2", "b3"]);
    assert_calls_answered(&s.0.derive_messages().to_vec());
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_enter_the_log_in_the_models_order() {
    // The first call waits until the second has finished.
    let mut h = Harness::scripted([
        calls(&[("slow", "wait_for_fast"), ("fast", "fast")]),
        say(&["ok"]),
    ]);
    let done = Arc::new(Notify::new());
    let wait = done.clone();
    let order = Arc::new(Mutex::new(Vec::new()));
    let o1 = order.clone();
    let slow = define_tool("wait_for_fast", "waits", move |_: NoArgs, _ctx| {
        let wait = wait.clone();
        let order = o1.clone();
        async move {
            let came = tokio::time::timeout(MEET, wait.notified()).await.is_ok();
            order.lock().unwrap().push("slow");
            if came {
                Ok(text("slow result"))
            } else {
                Err(ToolError::new("NOT_CONCURRENT", "fast never ran"))
            }
        }
    })
    .concurrency_safe()
    .into_arc();
    let o2 = order.clone();
    let fast = define_tool("fast", "signals", move |_: NoArgs, _ctx| {
        let done = done.clone();
        let order = o2.clone();
        async move {
            order.lock().unwrap().push("fast");
            done.notify_one();
            Ok(text("fast result"))
        }
    })
    .concurrency_safe()
    .into_arc();
    h.keep(h.tools.register(slow).unwrap());
    h.keep(h.tools.register(fast).unwrap());
    let s = guard("the turn", run_turn(&h, options())).await;

    assert_eq!(*order.lock().unwrap(), ["fast", "slow"]);
    let results = tool_results(&s.0);
    assert_eq!(
        results
            .iter()
            .map(|r| (r.0.as_str(), r.1.as_str(), r.2))
            .collect::<Vec<_>>(),
        [
            ("slow", "slow result", false),
            ("fast", "fast result", false)
        ]
    );
    // The calls are logged before either runs, then the results.
    let kinds: Vec<&str> =
        s.0.events()
            .iter()
            .filter_map(|e| match &e.data {
                EventPayload::ToolCall(_) => Some("call"),
                EventPayload::ToolResult(_) => Some("result"),
                _ => None,
            })
            .collect();
    assert_eq!(kinds, ["call", "call", "result", "result"]);
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_sibling_cancels_nothing() {
    let mut h = Harness::scripted([
        calls(&[("m1", "meet"), ("bad", "fail"), ("m2", "meet")]),
        say(&["ok"]),
    ]);
    let trace = Trace::default();
    meeting_tool(&mut h, "meet", 2, &trace);
    let fail = define_tool("fail", "fails", |_: NoArgs, _ctx| async move {
        Err::<Vec<dsh_llm::ContentBlock>, _>(ToolError::new("BOOM", "it broke"))
    })
    .concurrency_safe()
    .into_arc();
    h.keep(h.tools.register(fail).unwrap());
    let s = guard("the turn", run_turn(&h, options())).await;

    let results = tool_results(&s.0);
    let summary: Vec<(&str, bool)> = results.iter().map(|r| (r.0.as_str(), r.2)).collect();
    assert_eq!(summary, [("m1", false), ("bad", true), ("m2", false)]);
    assert_eq!(results[1].3.as_deref(), Some("BOOM"));
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_answers_every_call_running_or_not_started() {
    let mut h = Harness::scripted([calls(&[
        ("w1", "block"),
        ("w2", "block"),
        ("after", "alone"),
    ])]);
    let (started_tx, mut started) = mpsc::unbounded_channel::<()>();
    let block = define_tool("block", "blocks until cancelled", move |_: NoArgs, ctx| {
        let started_tx = started_tx.clone();
        async move {
            let _ = started_tx.send(());
            ctx.cancel.cancelled().await;
            Err::<Vec<dsh_llm::ContentBlock>, _>(ToolError::aborted("stopped"))
        }
    })
    .concurrency_safe()
    .into_arc();
    h.keep(h.tools.register(block).unwrap());
    let trace = Trace::default();
    exclusive_tool(&mut h, "alone", &trace);

    let handle = h.agent_with("a", options());
    let agent = handle.agent();
    let mut tap = Tap::install(&h.registry);
    send(&agent, "go");
    // Both blocking calls run at once (each waits only for the cancel).
    guard("first call", started.recv()).await;
    guard("second call", started.recv()).await;
    agent.abort(Some("user stop".into()));
    let (_, reason) = guard("turn end", tap.turn_end()).await;
    assert!(
        matches!(&reason, TurnEndReason::Aborted { reason: Some(r) } if r == "user stop"),
        "{reason:?}"
    );
    let results = tool_results(&agent.session());
    let summary: Vec<(&str, bool, Option<&str>)> = results
        .iter()
        .map(|r| (r.0.as_str(), r.2, r.3.as_deref()))
        .collect();
    assert_eq!(
        summary,
        [
            ("w1", true, Some("ABORTED")),
            ("w2", true, Some("ABORTED")),
            ("after", true, Some("ABORTED")),
        ]
    );
    // The exclusive call after them never ran.
    assert!(trace.all().is_empty(), "{:?}", trace.all());
    assert_calls_answered(&agent.session().derive_messages().to_vec());
    handle.dispose().await;
    h.assert_no_violations();
}

/// Registers a safe tool counting how many of its calls run at once; each
/// call meets one partner, so pairs must be allowed to run together.
fn counting_tool(h: &mut Harness, peak: &Arc<AtomicUsize>, pairs: bool) {
    let running = Arc::new(AtomicUsize::new(0));
    let peak = peak.clone();
    let barrier = Arc::new(Barrier::new(2));
    let tool = define_tool("count", "counts", move |_: NoArgs, _ctx| {
        let (running, peak, barrier) = (running.clone(), peak.clone(), barrier.clone());
        async move {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            if pairs {
                tokio::time::timeout(MEET, barrier.wait())
                    .await
                    .map_err(|_| ToolError::new("NOT_CONCURRENT", "no partner"))?;
            }
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(text("counted"))
        }
    })
    .concurrency_safe()
    .into_arc();
    h.keep(h.tools.register(tool).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_max_parallel_calls_run_at_once() {
    let ids = ["c1", "c2", "c3", "c4", "c5", "c6"];
    let list: Vec<(&str, &str)> = ids.iter().map(|id| (*id, "count")).collect();
    let mut h = Harness::scripted([calls(&list), say(&["ok"])]);
    let peak = Arc::new(AtomicUsize::new(0));
    counting_tool(&mut h, &peak, true);
    let s = guard(
        "the turn",
        run_turn(
            &h,
            AgentOptions {
                max_parallel_tool_calls: 2,
                ..options()
            },
        ),
    )
    .await;
    assert_eq!(peak.load(Ordering::SeqCst), 2);
    let results = tool_results(&s.0);
    assert!(results.iter().all(|r| !r.2), "{results:?}");
    assert_eq!(result_ids(&s), ids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_parallel_one_runs_every_call_alone() {
    let mut h = Harness::scripted([
        calls(&[("c1", "count"), ("c2", "count"), ("c3", "count")]),
        say(&["ok"]),
    ]);
    let peak = Arc::new(AtomicUsize::new(0));
    counting_tool(&mut h, &peak, false);
    let s = guard(
        "the turn",
        run_turn(
            &h,
            AgentOptions {
                max_parallel_tool_calls: 1,
                ..options()
            },
        ),
    )
    .await;
    assert_eq!(peak.load(Ordering::SeqCst), 1);
    assert_eq!(result_ids(&s), ["c1", "c2", "c3"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_exclusive_unless_they_say_otherwise() {
    // Two calls of a tool that does not declare itself safe never overlap,
    // even with parallelism on.
    let mut h = Harness::scripted([calls(&[("e1", "alone"), ("e2", "alone")]), say(&["ok"])]);
    let trace = Trace::default();
    exclusive_tool(&mut h, "alone", &trace);
    let _ = guard("the turn", run_turn(&h, options())).await;
    assert_eq!(trace.all(), ["start e1", "end e1", "start e2", "end e2"]);
}
