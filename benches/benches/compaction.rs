//! Compaction planning on a 10,000-step session (20,001 messages, 6.4 MB of
//! text): choose what to prune and where to cut (`plan_only`), then build
//! the summary request's history, the replaced prefix plus the instruction
//! (`plan+summary_request`), and the same with the prune applied first, as
//! the session's derivation applies it when old results are cut
//! (`plan+prune+summary_request`); the model call is excluded. Histories
//! share their messages, so both copy pointers, not text.
//! Target: under 5 ms.
//!
//! `cargo bench -p dsh-benches --bench compaction`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use dsh_compaction::{plan, CompactionConfig, INSTRUCTION};
use dsh_llm::{ContentBlock, History, Message, Role, ToolCall};
use dsh_tools::ToolResult;

fn session(steps: usize) -> (Vec<Message>, Vec<u64>) {
    let mut messages = vec![Message::user_text("refactor the parser")];
    for i in 0..steps {
        let id = format!("call_{i}");
        messages.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolCall(ToolCall::new(
                id.as_str(),
                "bash",
                r#"{"command":"cargo test -p parser","description":"run the tests"}"#,
            ))],
        });
        // Every 50th result is long enough to prune.
        let size = if i % 50 == 0 { 12_000 } else { 400 };
        messages.push(Message {
            role: Role::User,
            content: vec![
                ToolResult::success(id, vec![ContentBlock::text("t".repeat(size))]).to_block(),
            ],
        });
    }
    let seqs = (0..messages.len() as u64).map(|i| i * 4).collect();
    (messages, seqs)
}

/// `m` with its tool-result texts cut as a `compaction/prune` shows them.
fn prune_message(m: &Message, head: usize, tail: usize) -> Message {
    let mut m = m.clone();
    for b in &mut m.content {
        if let ContentBlock::ToolResult(r) = b {
            for t in &mut r.content {
                if let Some(text) = t.as_text() {
                    *t = ContentBlock::text(dsh_session::prune_text(text, head, tail));
                }
            }
        }
    }
    m
}

fn planning(c: &mut Criterion) {
    let (messages, seqs) = session(10_000);
    let history = History::from(messages);
    let config = CompactionConfig::for_window(1_048_576);
    let mut g = c.benchmark_group("compaction");
    // The summary request as `Compactor::compact` builds it: the replaced
    // prefix of the derived history (shared messages) plus the instruction.
    g.bench_function("plan+summary_request/10000_steps", |b| {
        b.iter(|| {
            let p = history.with(|m| plan(black_box(m), &seqs, 40_000, &config));
            let mut replay = history.prefix(p.cut.unwrap());
            replay.push(Message::user_text(INSTRUCTION));
            black_box((p.prune.len(), replay.len()))
        })
    });
    // With the prune applied first, as the session's derivation does when
    // old results are cut: the history with those messages replaced.
    g.bench_function("plan+prune+summary_request/10000_steps", |b| {
        b.iter(|| {
            let p = history.with(|m| plan(black_box(m), &seqs, 40_000, &config));
            let positions = p.prune.iter().map(|s| seqs.binary_search(s).unwrap());
            let pruned = history.with_replaced(positions, |m| {
                prune_message(m, config.prune_head, config.prune_tail)
            });
            let mut replay = pruned.prefix(p.cut.unwrap());
            replay.push(Message::user_text(INSTRUCTION));
            black_box(replay.len())
        })
    });
    g.bench_function("plan_only/10000_steps", |b| {
        b.iter(|| {
            black_box(
                history
                    .with(|m| plan(black_box(m), &seqs, 40_000, &config))
                    .cut,
            )
        })
    });
    g.finish();
}

criterion_group!(benches, planning);
criterion_main!(benches);
