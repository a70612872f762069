//! The parallel schedule of one step's tool calls: the wall time of a turn
//! whose step makes three concurrency-safe calls that each sleep 200 ms
//! (they run together: about 200 ms, not 600), and the cost of a step of
//! ten trivial safe calls (one batch) against ten trivial exclusive ones
//! (run one by one), measured side by side.
//!
//! Also printed once: the memory of 100 idle sub-agents (agents made as
//! the `subagent` tool makes them: the parent's options, a session seeded
//! with the `subagent/start` link), RSS per agent.
//!
//! `cargo bench -p dsh-benches --bench parallel`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use dsh::{Stack, StackOptions};
use dsh_agent::AgentOptions;
use dsh_agent_loop::LoopSetup;
use dsh_benches::rss_kib;
use dsh_llm::scripted::{ReplyBuilder, ScriptedReply};
use dsh_llm::{ChunkStream, ContentBlock, LlmAdapter, MessageSource, ModelRequest, Role};
use dsh_session::EventPayload;
use dsh_tools::{define_tool, NoArgs, ToolContext, ToolError};

/// Answers a user message `<tool> <n>` with `n` calls of `<tool>`, and the
/// tool results with `done`.
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

fn respond(o: &ModelRequest) -> ScriptedReply {
    let asked = o.messages.with(|msgs| {
        let last = msgs.last()?;
        if last.role != Role::User {
            return None;
        }
        let text: String = last
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        let (tool, n) = text.split_once(' ')?;
        Some((tool.to_string(), n.parse::<usize>().ok()?, msgs.len()))
    });
    match asked {
        Some((tool, n, at)) => {
            let mut b = ReplyBuilder::new();
            for i in 0..n {
                b = b.tool_call(&format!("c{at}-{i}"), &tool, &["{}"]);
            }
            b.usage(10, 2).reply()
        }
        None => ReplyBuilder::new().text(&["done"]).usage(10, 1).reply(),
    }
}

fn stack() -> Stack {
    let resolved = dsh::resolve(&dsh::Settings::default()).unwrap();
    let options = StackOptions {
        coding_prompt: false,
        builtin_tools: false,
        persist_sessions: false,
    };
    let stack = Stack::build_with(resolved, options).unwrap();
    stack.add_adapter(&["m"], Arc::new(BenchModel)).unwrap();
    let trivial = || {
        define_tool("x", "Does nothing.", |_: NoArgs, _: ToolContext| async {
            Ok::<_, ToolError>(vec![ContentBlock::text("ok")])
        })
    };
    let tools = [
        define_tool(
            "sleep",
            "Sleeps 200 ms.",
            |_: NoArgs, _: ToolContext| async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                Ok::<_, ToolError>(vec![ContentBlock::text("slept")])
            },
        )
        .concurrency_safe()
        .into_arc(),
        rename(trivial().concurrency_safe(), "safe"),
        rename(trivial(), "exclusive"),
    ];
    for t in tools {
        stack.scope.add(stack.tools.register(t).unwrap());
    }
    stack
}

/// A trivial tool under another name (the builder names it `x`).
fn rename(tool: dsh_tools::TypedTool, name: &str) -> Arc<dyn dsh_tools::Tool> {
    let inner = tool.into_arc();
    let mut schema = inner.schema().clone();
    schema.name = name.to_string();
    Arc::new(Renamed { inner, schema })
}

struct Renamed {
    inner: Arc<dyn dsh_tools::Tool>,
    schema: dsh_llm::ToolSchema,
}

impl dsh_tools::Tool for Renamed {
    fn schema(&self) -> &dsh_llm::ToolSchema {
        &self.schema
    }
    fn call(
        &self,
        arguments: &str,
        ctx: ToolContext,
    ) -> dsh_kernel::BoxFuture<'static, Result<dsh_tools::ToolOutput, ToolError>> {
        self.inner.call(arguments, ctx)
    }
    fn concurrency(&self, arguments: &str) -> dsh_tools::Concurrency {
        self.inner.concurrency(arguments)
    }
}

async fn one_turn(st: &Stack, agent: &Arc<dyn dsh_agent::Agent>, prompt: &str) {
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
        .send(vec![ContentBlock::text(prompt)], MessageSource::User)
        .unwrap();
    rx.await.unwrap();
    reg.undo();
}

fn parallel(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let st = stack();
    let options = AgentOptions {
        model: Some("m".into()),
        max_steps: 1000,
        ..Default::default()
    };
    idle_subagents_memory(&rt, &st, &options);
    let mut g = c.benchmark_group("parallel");
    g.sample_size(10);
    let h = rt
        .block_on(async { st.spawn_agent("sleeper", options.clone(), LoopSetup::default()) })
        .unwrap();
    let agent = h.agent();
    g.bench_function("three_200ms_safe_calls/turn", |b| {
        b.iter(|| rt.block_on(one_turn(&st, &agent, "sleep 3")))
    });
    rt.block_on(h.dispose());
    g.finish();

    // A fresh agent every 200 turns: a session that grows over tens of
    // thousands of turns would tax the case criterion runs more often.
    let mut g = c.benchmark_group("parallel");
    for tool in ["safe", "exclusive"] {
        let prompt = format!("{tool} 10");
        g.bench_function(format!("ten_trivial_{tool}_calls/turn"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    let mut done = 0;
                    while done < iters {
                        let h = st
                            .spawn_agent(
                                &format!("{tool}-{done}"),
                                options.clone(),
                                LoopSetup::default(),
                            )
                            .unwrap();
                        let agent = h.agent();
                        let n = (iters - done).min(200);
                        let start = std::time::Instant::now();
                        for _ in 0..n {
                            one_turn(&st, &agent, &prompt).await;
                        }
                        total += start.elapsed();
                        done += n;
                        h.dispose().await;
                    }
                    total
                })
            })
        });
    }
    g.finish();
}

fn idle_subagents_memory(rt: &tokio::runtime::Runtime, st: &Stack, options: &AgentOptions) {
    let before = rss_kib();
    let handles: Vec<_> = rt.block_on(async {
        (0..100)
            .map(|i| {
                let link = dsh_session::SessionEvent {
                    seq: 0,
                    time: 0,
                    data: EventPayload::Other {
                        kind: dsh::subagents::SUBAGENT_START_EVENT.into(),
                        data: serde_json::json!({
                            "parentSessionId": "parent",
                            "parentAgentId": "main",
                            "callId": format!("c{i}"),
                            "description": "idle",
                            "depth": 1,
                            "fork": false,
                        }),
                    },
                };
                st.spawn_agent(
                    &format!("agent-{i}"),
                    options.clone(),
                    LoopSetup {
                        seed: vec![link],
                        ..Default::default()
                    },
                )
                .unwrap()
            })
            .collect()
    });
    let after = rss_kib();
    println!(
        "100 idle sub-agents: RSS +{} KiB, {:.1} KiB per agent",
        after.saturating_sub(before),
        after.saturating_sub(before) as f64 / 100.0
    );
    rt.block_on(async {
        for h in handles {
            h.dispose().await;
        }
    });
}

criterion_group!(benches, parallel);
criterion_main!(benches);
