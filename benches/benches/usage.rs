//! `dsh usage` over 1,000 saved sessions (target < 1 s).
//!
//! The logs are generated like real ones: a system prompt and tool
//! schemas, then 10 steps of ~60 streamed chunks, the assembled message,
//! a `usage` report, a tool call and its 2 KB result (about 150 KB and
//! 700 lines a log, 151 MB in all); every third session switches model
//! with `/model`. Measured:
//!
//! - `usage/scan_1000`: [`dsh_session::cost::scan_usage`] of every log
//!   (read from the page cache) and pricing every request with the
//!   built-in catalogue: the work of `dsh usage` in the library;
//! - `usage/dsh_usage_1000` (when the release binary is built): the whole
//!   `dsh usage --by model --session-dir DIR` process;
//! - `usage/full_parse_1000`, for scale: what `load_jsonl` (every line
//!   parsed) costs over the same logs.
//!
//! `cargo build --release -p dsh-cli && cargo bench -p dsh-benches --bench usage`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{criterion_group, criterion_main, Criterion};
use dsh_llm::{ContentBlock, StreamChunk, TokenUsage};
use dsh_protocol::ToolResult;
use dsh_session::cost::{scan_usage, Cost};
use dsh_session::{
    AssistantMessageEvent, ChunkEvent, EventPayload, SessionEvent, StepEvent, ToolCallEvent,
    ToolResultEvent, UsageEvent,
};
use dsh_tools::ToolCall;

const SESSIONS: usize = 1_000;
const STEPS: u64 = 10;
const CHUNKS: usize = 60;

fn other(kind: &str, data: serde_json::Value) -> EventPayload {
    EventPayload::Other {
        kind: kind.into(),
        data,
    }
}

/// The events of session `n`.
fn session(n: usize) -> Vec<EventPayload> {
    let mut out = vec![
        other(
            "sandbox/mode",
            serde_json::json!({"mode":"workspace-write","source":"default"}),
        ),
        other(
            "request/adapter",
            serde_json::json!({"provider":"deepseek"}),
        ),
        other(
            "request/system",
            serde_json::json!({"text": format!("{}\n\nEnvironment: working directory /home/u/project-{}; OS linux (x86_64); date 2026-10-27.", "You are dsh. ".repeat(200), n % 7)}),
        ),
        other(
            "request/tools",
            serde_json::json!({"tools": [{"name":"bash","description":"x".repeat(8_000),"parameters":{"type":"object"}}]}),
        ),
    ];
    for step in 1..=STEPS {
        let turn = 1 + (step - 1) / 3;
        if step == 1 || (n.is_multiple_of(3) && step == 5) {
            let model = if step == 1 {
                "deepseek-v4-flash"
            } else {
                "deepseek-v4-pro"
            };
            out.push(other(
                "request/options",
                serde_json::json!({"model": model}),
            ));
        }
        out.push(EventPayload::StepStart(StepEvent { turn, step }));
        out.push(other(
            "request/sent",
            serde_json::json!({"turn": turn, "step": step}),
        ));
        for i in 0..CHUNKS {
            out.push(EventPayload::AssistantChunk(ChunkEvent {
                turn,
                step,
                chunk: StreamChunk::TextDelta {
                    index: 0,
                    text: format!("word {i} of the answer, "),
                },
            }));
        }
        let id = format!("call_{step}");
        let args = r#"{"command":"cargo test","description":"Run the tests"}"#;
        out.push(EventPayload::AssistantMessage(AssistantMessageEvent {
            turn,
            step,
            content: vec![
                ContentBlock::text("word ".repeat(CHUNKS * 5)),
                ContentBlock::tool_call(&id, "bash", args),
            ],
        }));
        out.push(EventPayload::Usage(UsageEvent {
            turn,
            step,
            usage: TokenUsage {
                input_tokens: 2_000,
                output_tokens: 300,
                cache_read_tokens: Some(10_000 * step as i64),
                cache_write_tokens: None,
                reasoning_tokens: Some(100),
            },
        }));
        out.push(EventPayload::ToolCall(ToolCallEvent {
            turn,
            step,
            call: ToolCall::new(id.clone(), "bash", args),
        }));
        out.push(EventPayload::ToolResult(ToolResultEvent {
            turn,
            step,
            result: ToolResult::success(
                id,
                vec![ContentBlock::text("test result: ok. ".repeat(120))],
            ),
        }));
        out.push(EventPayload::StepEnd(StepEvent { turn, step }));
    }
    out
}

/// Writes the 1,000 logs into `dir`; returns their paths.
fn generate(dir: &Path) -> Vec<PathBuf> {
    let start = 1_793_059_200_000u64; // 2026-10-27
    (0..SESSIONS)
        .map(|n| {
            let mut bytes = Vec::new();
            for (seq, data) in session(n).into_iter().enumerate() {
                let event = SessionEvent {
                    seq: seq as u64,
                    time: start + (n as u64) * 600_000 + seq as u64 * 50,
                    data,
                };
                dsh_session::write_jsonl_line(&event, &mut bytes);
            }
            let path = dir.join(format!("s-{n:05}.jsonl"));
            std::fs::write(&path, bytes).unwrap();
            path
        })
        .collect()
}

fn binary() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/dsh");
    p.is_file().then_some(p)
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let paths = generate(dir.path());
    let total: u64 = paths
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    eprintln!(
        "usage: {} logs, {:.1} MB",
        paths.len(),
        total as f64 / 1_000_000.0
    );
    let catalogue = dsh::catalogue::Catalogue::builtin();
    let mut g = c.benchmark_group("usage");
    g.sample_size(10);
    g.bench_function("scan_1000", |b| {
        b.iter(|| {
            let mut all = Cost::default();
            for p in &paths {
                let bytes = std::fs::read(p).unwrap();
                let (_, cost) = scan_usage(&bytes).cost(|m: &str| catalogue.price(m));
                all.merge(&cost);
            }
            assert_eq!(all.priced, SESSIONS as u64 * STEPS);
            black_box(all)
        })
    });
    if let Some(bin) = binary() {
        let home = tempfile::tempdir().unwrap();
        g.bench_function("dsh_usage_1000", |b| {
            b.iter(|| {
                let out = Command::new(&bin)
                    .args(["usage", "--by", "model", "--session-dir"])
                    .arg(dir.path())
                    .env("HOME", home.path())
                    .env("XDG_CONFIG_HOME", home.path().join("config"))
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{out:?}");
                assert!(String::from_utf8_lossy(&out.stdout).contains("deepseek-v4-pro"));
            })
        });
    } else {
        eprintln!("usage/dsh_usage_1000 skipped: build the release binary first (cargo build --release -p dsh-cli)");
    }
    g.bench_function("full_parse_1000", |b| {
        b.iter(|| {
            let n: usize = paths
                .iter()
                .map(|p| dsh_session::load_jsonl(p).unwrap().events.len())
                .sum();
            black_box(n)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
