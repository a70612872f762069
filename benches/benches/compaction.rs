//! Compaction planning on a 10,000-step session (20,001 messages, 6.4 MB of
//! text): choose what to prune and where to cut (`plan_only`), then build
//! the summary request's messages, a copy of the replaced prefix plus the
//! instruction (`plan+summary_request`), and the same with the prune
//! applied first, as when old results are cut (`plan+prune+summary_request`:
//! one more copy of the history); the model call is excluded.
//! Target: under 5 ms.
//!
//! `cargo bench -p dsh-benches --bench compaction`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use dsh_compaction::{plan, CompactionConfig, INSTRUCTION};
use dsh_llm::{ContentBlock, Message, Role, ToolCall};
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
    let config = CompactionConfig::for_window(1_048_576);
    let mut g = c.benchmark_group("compaction");
    g.bench_function("plan+summary_request/10000_steps", |b| {
        b.iter(|| {
            let p = plan(black_box(&messages), &seqs, 40_000, &config);
            let cut = p.cut.unwrap();
            let mut replay = messages[..cut].to_vec();
            replay.push(Message::user_text(INSTRUCTION));
            black_box((p.prune.len(), replay.len()))
        })
    });
    // As the real path runs when there are results to prune: the
    // derivation applies the prune (a copy of the history with the cut
    // texts), then the summary request copies the replaced prefix.
    g.bench_function("plan+prune+summary_request/10000_steps", |b| {
        b.iter(|| {
            let p = plan(black_box(&messages), &seqs, 40_000, &config);
            let mut pruned = messages.clone();
            for seq in &p.prune {
                let i = seqs.binary_search(seq).unwrap();
                pruned[i] = prune_message(&pruned[i], config.prune_head, config.prune_tail);
            }
            let cut = p.cut.unwrap();
            pruned.truncate(cut);
            pruned.push(Message::user_text(INSTRUCTION));
            black_box(pruned.len())
        })
    });
    g.bench_function("plan_only/10000_steps", |b| {
        b.iter(|| black_box(plan(black_box(&messages), &seqs, 40_000, &config).cut))
    });
    g.finish();
}

criterion_group!(benches, planning);
criterion_main!(benches);
