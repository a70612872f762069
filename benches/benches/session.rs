//! Session costs: append + derive per step at log lengths 100 and 10,000
//! (the ratio shows whether derivation is incremental), JSONL write
//! throughput (events/s) and load throughput (MB/s), and the cost the loop
//! pays per step for crash safety: one step's events appended and flushed
//! (written and fsynced) through the JSONL persistence plugin, and the
//! context meter's update per step.
//!
//! `cargo bench -p dsh-benches --bench session`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dsh_llm::{ContentBlock, MessageSource, StreamChunk};
use dsh_session::{
    AssistantMessageEvent, ChunkEvent, EventPayload, MessageEvent, Session, SessionEvent,
    SessionPersistence, StepEvent, ToolCallEvent, ToolResultEvent,
};
use dsh_tools::{ToolCall, ToolResult};

/// The events one tool step appends.
fn step_events(turn: u64, step: u64) -> Vec<EventPayload> {
    let id = format!("call_{turn}_{step}");
    vec![
        EventPayload::StepStart(StepEvent { turn, step }),
        EventPayload::AssistantChunk(ChunkEvent {
            turn,
            step,
            chunk: StreamChunk::TextDelta {
                index: 0,
                text: "Checking the files.".into(),
            },
        }),
        EventPayload::AssistantMessage(AssistantMessageEvent {
            turn,
            step,
            content: vec![
                ContentBlock::text("Checking the files."),
                ContentBlock::tool_call(
                    &id,
                    "bash",
                    r#"{"command":"ls","description":"List files"}"#,
                ),
            ],
        }),
        EventPayload::ToolCall(ToolCallEvent {
            turn,
            step,
            call: ToolCall::new(
                id.clone(),
                "bash",
                r#"{"command":"ls","description":"List files"}"#,
            ),
        }),
        EventPayload::ToolResult(ToolResultEvent {
            turn,
            step,
            result: ToolResult::success(id, vec![ContentBlock::text("Cargo.toml\nsrc\n")]),
        }),
        EventPayload::StepEnd(StepEvent { turn, step }),
    ]
}

/// A log of about `n` events (user message, then tool steps).
fn log_of(n: usize) -> Vec<SessionEvent> {
    let s = Session::detached("seed", Vec::new());
    s.append(EventPayload::UserMessage(MessageEvent {
        content: vec![ContentBlock::text("List the files, repeatedly.")],
        source: MessageSource::User,
    }));
    let mut step = 0;
    while s.len() < n {
        step += 1;
        for e in step_events(1, step) {
            s.append(e);
        }
    }
    s.events().iter().map(|e| (**e).clone()).collect()
}

fn append_and_derive(c: &mut Criterion) {
    let mut g = c.benchmark_group("session/step");
    g.sample_size(20);
    for n in [100usize, 10_000] {
        let seed = log_of(n);
        g.bench_function(format!("append+derive/len_{n}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let s = Session::detached("bench", seed.clone());
                    // Untimed warm-up step: a freshly seeded log is exactly at
                    // capacity, so its first append always reallocates; steady
                    // state is what a long session sees.
                    for e in step_events(2, 1) {
                        s.append(e);
                    }
                    let start = Instant::now();
                    for e in step_events(2, 2) {
                        s.append(e);
                    }
                    black_box(s.derive_messages());
                    total += start.elapsed();
                }
                total
            })
        });
    }
    g.finish();
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn jsonl(c: &mut Criterion) {
    let events: Vec<Arc<SessionEvent>> = log_of(10_000).into_iter().map(Arc::new).collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dsh_session::JsonlStore::new(dir.path()).expect("writable dir");
    let mut g = c.benchmark_group("session/jsonl");
    g.sample_size(10);
    g.throughput(Throughput::Elements(events.len() as u64));
    g.bench_function("write+fsync/10000_events", |b| {
        b.iter(|| {
            let id = format!("w{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
            store.open(&id).expect("open");
            store.append_batch(&id, &events).expect("append");
            store.sync(&id).expect("sync");
            store.close(&id);
        })
    });
    let id = "load";
    store.open(id).expect("open");
    store.append_batch(id, &events).expect("append");
    store.sync(id).expect("sync");
    store.close(id);
    let path = dir.path().join("load.jsonl");
    let size = std::fs::metadata(&path).expect("file").len();
    g.throughput(Throughput::Bytes(size));
    g.bench_function("load/10000_events", |b| {
        b.iter(|| {
            let log = dsh_session::load_jsonl(&path).expect("loads");
            assert_eq!(log.events.len(), events.len());
            log
        })
    });
    g.finish();
}

/// One tool step appended to a persisted session, then `session/flush`
/// (what the loop awaits before each model request and each tool call).
fn step_flush(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dsh_session::SessionStore::new();
    let _persist = dsh_session::install_jsonl(&store, dir.path()).expect("writable dir");
    let (session, _reg) = store.create(None, Vec::new()).expect("session");
    let mut g = c.benchmark_group("session/persist");
    let step = AtomicU64::new(0);
    g.bench_function("append_step+flush", |b| {
        b.iter(|| {
            let n = step.fetch_add(1, Ordering::Relaxed);
            for data in step_events(1, n) {
                session.append(data);
            }
            rt.block_on(store.flush(&session)).expect("flushed");
        })
    });
    g.bench_function("flush_nothing_new", |b| {
        b.iter(|| rt.block_on(store.flush(&session)).expect("flushed"))
    });
    g.finish();
}

/// The context meter's update for one tool step's events, and its estimate.
fn meter(c: &mut Criterion) {
    let step = step_events(1, 1);
    let mut g = c.benchmark_group("session/meter");
    g.bench_function("observe_step+estimate", |b| {
        let mut m = dsh_session::TokenMeter::new();
        b.iter(|| {
            for e in &step {
                m.observe(black_box(e));
            }
            black_box(m.estimate(20_000))
        })
    });
    g.finish();
}

criterion_group!(benches, append_and_derive, jsonl, step_flush, meter);
criterion_main!(benches);
