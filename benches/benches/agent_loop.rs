//! Harness overhead per step: an in-process scripted model and one trivial
//! tool, at session lengths of about 100 and 10,000 steps; and the memory of
//! 1,000 idle agents in one process (printed once).
//!
//! `cargo bench -p dsh-benches --bench agent_loop`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use dsh_agent::{AgentOptions, AgentRegistry};
use dsh_agent_loop::{AgentLoop, LoopSetup};
use dsh_kernel::Kernel;
use dsh_llm::scripted::{ReplyBuilder, ScriptedReply};
use dsh_llm::{
    ChunkStream, ContentBlock, GenerateOptions, LlmAdapter, LlmService, MessageSource, Role,
};
use dsh_session::{SessionEvent, SessionStore};
use dsh_tools::{define_tool, NoArgs, ToolContext, ToolError, ToolRegistry};

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

    fn stream(&self, options: GenerateOptions) -> ChunkStream {
        let ScriptedReply::Chunks(chunks) = respond(&options) else {
            unreachable!("respond only builds complete replies")
        };
        Box::pin(futures_util::stream::iter(chunks.into_iter().map(Ok)))
    }
}

/// Calls `noop` until the turn has STEPS-1 tool results, then answers.
fn respond(o: &GenerateOptions) -> ScriptedReply {
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

struct Stack {
    kernel: Kernel,
    agents: Arc<AgentRegistry>,
    _scope: dsh_kernel::Scope,
}

fn stack() -> Stack {
    let kernel = Kernel::new();
    let scope = dsh_kernel::Scope::new();
    let llm = Arc::new(LlmService::new());
    scope.add(kernel.provide(llm.clone()).unwrap());
    scope.add(llm.register_adapter(&["m"], Arc::new(BenchModel)).unwrap());
    scope.add(kernel.provide(Arc::new(SessionStore::new())).unwrap());
    let tools = Arc::new(ToolRegistry::new());
    scope.add(kernel.provide(tools.clone()).unwrap());
    scope.add(
        tools
            .register(
                define_tool("noop", "Does nothing.", |_: NoArgs, _: ToolContext| async {
                    Ok::<_, ToolError>(vec![ContentBlock::text("ok")])
                })
                .into_arc(),
            )
            .unwrap(),
    );
    let agents = Arc::new(AgentRegistry::new());
    scope.add(kernel.provide(agents.clone()).unwrap());
    Stack {
        kernel,
        agents,
        _scope: scope,
    }
}

/// Runs `turns` turns of STEPS steps and returns the session log.
async fn grow(st: &Stack, turns: usize) -> Vec<SessionEvent> {
    let h = AgentLoop::create(&st.kernel, "grow", opts()).unwrap();
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
    let reg = st.agents.hooks().turn_end.on(move |_| {
        if let Some(tx) = tx.lock().unwrap().take() {
            let _ = tx.send(());
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
                            let h = AgentLoop::create_with(
                                &st.kernel,
                                &format!("b{steps}-{i}"),
                                opts(),
                                LoopSetup {
                                    session_id: None,
                                    seed: seed.clone(),
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

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn idle_agents_memory(rt: &tokio::runtime::Runtime, st: &Stack) {
    let before = rss_kib();
    let handles: Vec<_> = rt.block_on(async {
        (0..1000)
            .map(|i| AgentLoop::create(&st.kernel, &format!("idle-{i}"), opts()).unwrap())
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
