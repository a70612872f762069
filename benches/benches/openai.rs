//! The openai-chat translator against the DeepSeek one: parse + translate +
//! assemble throughput over the 2,000-event DeepSeek fixture in `testdata/`
//! and the same stream turned into the plain OpenAI dialect at start-up
//! (`reasoning_content` → `reasoning`, DeepSeek-only usage fields dropped),
//! both fed in the same 1–4 KiB pieces, side by side in one run.
//!
//! `cargo bench -p dsh-benches --bench openai`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dsh_llm::sse::SseParser;
use dsh_llm::{BlockAssembler, LlmError, StreamChunk};
use serde_json::Value;

/// Deterministic piece sizes between 1 KiB and 4 KiB (as bench `sse`).
fn pieces(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut size = 1024usize;
    while at < bytes.len() {
        let end = (at + size).min(bytes.len());
        out.push(&bytes[at..end]);
        at = end;
        size = 1024 + (size * 7919 + 13) % 3073;
    }
    out
}

/// The fixture in the plain OpenAI dialect.
fn to_openai(fixture: &[u8]) -> Vec<u8> {
    let text = std::str::from_utf8(fixture).unwrap();
    let mut out = String::with_capacity(text.len());
    for event in text.split("\n\n").filter(|e| !e.is_empty()) {
        let payload = event.strip_prefix("data: ").unwrap();
        if payload != "[DONE]" {
            let mut v: Value = serde_json::from_str(payload).unwrap();
            if let Some(d) = v
                .pointer_mut("/choices/0/delta")
                .and_then(Value::as_object_mut)
            {
                if let Some(r) = d.remove("reasoning_content") {
                    d.insert("reasoning".into(), r);
                }
            }
            if let Some(u) = v.get_mut("usage").and_then(Value::as_object_mut) {
                u.remove("prompt_cache_hit_tokens");
                u.remove("prompt_cache_miss_tokens");
            }
            out.push_str("data: ");
            out.push_str(&v.to_string());
            out.push_str("\n\n");
        } else {
            out.push_str("data: [DONE]\n\n");
        }
    }
    out.into_bytes()
}

/// Parses, translates and assembles `pieces` with `push`; returns the
/// number of chunks.
fn run<T>(
    pieces: &[&[u8]],
    mut translator: T,
    push: impl Fn(&mut T, &str, &mut Vec<StreamChunk>) -> Result<(), LlmError>,
) -> usize {
    let mut parser = SseParser::new();
    let mut assembler = BlockAssembler::new();
    let mut chunks = Vec::with_capacity(64);
    let mut count = 0usize;
    let mut drain = |parser: &mut SseParser, chunks: &mut Vec<StreamChunk>| {
        while let Some(payload) = parser.next_payload() {
            push(&mut translator, payload, chunks).expect("valid stream");
            for c in chunks.drain(..) {
                assembler.push(&c);
                count += 1;
            }
        }
    };
    for piece in pieces {
        parser.push(piece);
        drain(&mut parser, &mut chunks);
    }
    parser.end();
    drain(&mut parser, &mut chunks);
    assert_eq!(assembler.block_count(), 3);
    count
}

fn bench(c: &mut Criterion) {
    let fixture = std::fs::read(dsh_benches::SSE_FIXTURE).unwrap_or_else(|e| {
        panic!(
            "cannot read the SSE fixture {}: {e}",
            dsh_benches::SSE_FIXTURE
        )
    });
    let openai = to_openai(&fixture);
    let (ds_pieces, oa_pieces) = (pieces(&fixture), pieces(&openai));
    // Both must yield the same 2,004 chunks before anything is timed.
    let ds = run(
        &ds_pieces,
        dsh_llm_deepseek::Translator::new(),
        |t, p, o| t.push(p, o),
    );
    let oa = run(&oa_pieces, dsh_llm_openai::Translator::new(), |t, p, o| {
        t.push(p, o)
    });
    assert_eq!((ds, oa), (2004, 2004));
    let mut g = c.benchmark_group("openai");
    g.throughput(Throughput::Elements(2000));
    g.bench_function("deepseek/parse+translate+assemble/fixture_2000", |b| {
        b.iter(|| {
            run(
                &ds_pieces,
                dsh_llm_deepseek::Translator::new(),
                |t, p, o| t.push(p, o),
            )
        })
    });
    g.bench_function("openai/parse+translate+assemble/fixture_2000", |b| {
        b.iter(|| {
            run(&oa_pieces, dsh_llm_openai::Translator::new(), |t, p, o| {
                t.push(p, o)
            })
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
