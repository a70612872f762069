//! Harness overhead per step: an in-process scripted model and one trivial
//! tool, at session lengths of about 100 and 10,000 steps; and the memory of
//! 1,000 idle agents in one process (printed once).
//!
//! The stack comes from the `dsh` library (no prompt sections, no built-in
//! tools, sessions in memory).
//!
//! `cargo bench -p dsh-benches --bench agent_loop`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use dsh::{Stack, StackOptions};
use dsh_agent::AgentOptions;
use dsh_agent_loop::LoopSetup;
use dsh_benches::rss_kib;
use dsh_llm::scripted::{ReplyBuilder, ScriptedReply};
use dsh_llm::{ChunkStream, ContentBlock, LlmAdapter, MessageSource, ModelRequest, Role};
use dsh_session::{EventPayload, SessionEvent};
use dsh_tools::{define_tool, NoArgs, ToolContext, ToolError};

/// Steps per measured turn.
const STEPS: usize = 50;

/// An in-process model that answers with [`respond`] and, unlike the
/// test-support `ScriptedAdapter`, records nothing: recorded requests would
/// pin every old history snapshot and turn the bench into a memory test.
struct BenchModel;

impl LlmAdapter for BenchModel {
    fn name(&self) -> &str {
        "bench"
    }

    fn stream(&self, options: ModelRequest) -> ChunkStream {
        let ScriptedReply::Chunks(chunks) = respond(&options) else {
            unreachable!("respond only builds complete replies")
        };
        Box::pin(futures_util::stream::iter(chunks.into_iter().map(Ok)))
    }
}

/// Calls `noop` until the turn has STEPS-1 tool results, then answers.
fn respond(o: &ModelRequest) -> ScriptedReply {
    let (results, n) = o.messages.with(|msgs| {
        let since_user = msgs
            .iter()
            .rev()
            .take_while(|m| {
                !(m.role == Role::User
                    && m.content.iter().all(|b| matches!(b, ContentBlock::Text(_))))
            })
            .filter(|m| m.role == Role::User)
            .count();
        (since_user, msgs.len())
    });
    if results + 1 < STEPS {
        ReplyBuilder::new()
            .tool_call(&format!("c{n}"), "noop", &["{}"])
            .usage(10, 2)
            .reply()
    } else {
        ReplyBuilder::new().text(&["done"]).usage(10, 1).reply()
    }
}

/// The library's stack with only what the loop needs: no coding prompt, no
/// built-in tools, sessions in memory; the bench model and one `noop` tool.
fn stack() -> Stack {
    let resolved = dsh::resolve(&dsh::Settings::default()).unwrap();
    let options = StackOptions {
        coding_prompt: false,
        builtin_tools: false,
        persist_sessions: false,
    };
    let stack = Stack::build_with(resolved, options).unwrap();
    stack.add_adapter(&["m"], Arc::new(BenchModel)).unwrap();
    stack.scope.add(
        stack
            .tools
            .register(
                define_tool("noop", "Does nothing.", |_: NoArgs, _: ToolContext| async {
                    Ok::<_, ToolError>(vec![ContentBlock::text("ok")])
                })
                .into_arc(),
            )
            .unwrap(),
    );
    stack
}

/// Runs `turns` turns of STEPS steps and returns the session log.
async fn grow(st: &Stack, turns: usize) -> Vec<SessionEvent> {
    let h = st
        .spawn_agent("grow", opts(), LoopSetup::default())
        .unwrap();
    let agent = h.agent();
    for _ in 0..turns {
        one_turn(st, &agent).await;
    }
    let events = agent
        .session()
        .events()
        .iter()
        .map(|e| (**e).clone())
        .collect();
    h.dispose().await;
    events
}

fn opts() -> AgentOptions {
    AgentOptions {
        model: Some("m".into()),
        max_steps: 1000,
        ..Default::default()
    }
}

async fn one_turn(st: &Stack, agent: &Arc<dyn dsh_agent::Agent>) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = std::sync::Mutex::new(Some(tx));
    let reg = st.agents.hooks().event.on(move |e| {
        if matches!(e.event.data, EventPayload::TurnEnd(_)) {
            if let Some(tx) = tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
        }
    });
    agent
        .send(vec![ContentBlock::text("go")], MessageSource::User)
        .unwrap();
    rx.await.unwrap();
    reg.undo();
}

fn per_step(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let st = stack();
    idle_agents_memory(&rt, &st);
    let mut g = c.benchmark_group("agent_loop");
    g.sample_size(10);
    for steps in [100usize, 10_000] {
        let seed = rt.block_on(grow(&st, steps / STEPS));
        g.bench_function(
            format!("turn_of_{STEPS}_steps/session_{steps}_steps"),
            |b| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let mut total = Duration::ZERO;
                        for i in 0..iters {
                            let h = st
                                .spawn_agent(
                                    &format!("b{steps}-{i}"),
                                    opts(),
                                    LoopSetup {
                                        session_id: None,
                                        seed: seed.clone(),
                                        ..Default::default()
                                    },
                                )
                                .unwrap();
                            let agent = h.agent();
                            // Untimed warm-up turn: a freshly built seed log is cold in the
                            // caches; a long session in use is not.
                            one_turn(&st, &agent).await;
                            let start = Instant::now();
                            one_turn(&st, &agent).await;
                            total += start.elapsed();
                            h.dispose().await;
                        }
                        total
                    })
                })
            },
        );
    }
    g.finish();
}

fn idle_agents_memory(rt: &tokio::runtime::Runtime, st: &Stack) {
    let before = rss_kib();
    let handles: Vec<_> = rt.block_on(async {
        (0..1000)
            .map(|i| {
                st.spawn_agent(&format!("idle-{i}"), opts(), LoopSetup::default())
                    .unwrap()
            })
            .collect()
    });
    let after = rss_kib();
    println!(
        "1000 idle agents: RSS +{} KiB, {:.1} KiB per agent",
        after.saturating_sub(before),
        after.saturating_sub(before) as f64 / 1000.0
    );
    rt.block_on(async {
        for h in handles {
            h.dispose().await;
        }
    });
}

criterion_group!(benches, per_step);
criterion_main!(benches);
