//! BlockAssembler throughput: chunks per second, on synthetic text deltas
//! and on the recorded fixture's 2,004 chunks.
//!
//! `cargo bench -p dsh-benches --bench assembler`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use dsh_benches::{fixture_chunks, text_deltas};
use dsh_llm::{BlockAssembler, StreamChunk};

fn assembler(c: &mut Criterion) {
    let mut g = c.benchmark_group("assembler");
    for (name, chunks) in [
        ("text_deltas_2000", text_deltas(2000)),
        ("fixture_2004", fixture_chunks()),
    ] {
        g.throughput(Throughput::Elements(chunks.len() as u64));
        g.bench_function(format!("push/{name}"), |b| {
            b.iter_batched_ref(
                BlockAssembler::new,
                |a| {
                    for c in &chunks {
                        a.push(c);
                    }
                },
                BatchSize::SmallInput,
            )
        });
        g.bench_function(format!("push+result/{name}"), |b| {
            b.iter(|| {
                let mut a = BlockAssembler::new();
                for c in &chunks {
                    a.push(c);
                }
                a.result()
            })
        });
        // What `LlmService::generate` runs: the consuming result.
        g.bench_function(format!("push+into_result/{name}"), |b| {
            b.iter(|| {
                let mut a = BlockAssembler::new();
                for c in &chunks {
                    a.push(c);
                }
                a.into_result()
            })
        });
        // The floor: appending every delta's text to one string, as the
        // assembler must (no matching, no blocks).
        g.bench_function(format!("floor_concat/{name}"), |b| {
            b.iter(|| {
                let mut s = String::with_capacity(4096);
                for c in &chunks {
                    match c {
                        StreamChunk::TextDelta { text, .. }
                        | StreamChunk::ReasoningDelta { text, .. } => s.push_str(text),
                        StreamChunk::ToolCallDelta {
                            arguments_delta, ..
                        } => s.push_str(arguments_delta),
                        _ => {}
                    }
                }
                s
            })
        });
        // The floor of any assembler: every delta's text appended to its
        // own block's buffer (blocks are separate), nothing checked and
        // nothing stored at block ends.
        g.bench_function(format!("floor_per_block/{name}"), |b| {
            b.iter(|| {
                let mut blocks: Vec<String> = Vec::new();
                for c in &chunks {
                    let (index, text) = match c {
                        StreamChunk::TextDelta { index, text }
                        | StreamChunk::ReasoningDelta { index, text } => (*index, text),
                        StreamChunk::ToolCallDelta {
                            index,
                            arguments_delta,
                            ..
                        } => (*index, arguments_delta),
                        _ => continue,
                    };
                    let i = index as usize;
                    if i >= blocks.len() {
                        blocks.resize_with(i + 1, || String::with_capacity(4096));
                    }
                    blocks[i].push_str(text);
                }
                blocks
            })
        });
    }
    g.finish();
}

criterion_group!(benches, assembler);
criterion_main!(benches);
