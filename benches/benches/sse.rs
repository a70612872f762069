//! SSE parse + translate throughput on the 2,000-event DeepSeek fixture in
//! `testdata/` (see `testdata/README.md`), fed in 1–4 KiB network pieces and
//! in fixed 4 KiB reads.
//!
//! `cargo bench -p dsh-benches --bench sse`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dsh_llm_deepseek::{SseParser, Translator};

fn pieces(bytes: &[u8]) -> Vec<&[u8]> {
    // Deterministic piece sizes between 1 KiB and 4 KiB.
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

fn bench(c: &mut Criterion) {
    let fixture = std::fs::read(dsh_benches::SSE_FIXTURE).unwrap_or_else(|e| {
        panic!(
            "cannot read the SSE fixture {}: {e}",
            dsh_benches::SSE_FIXTURE
        )
    });
    let varied = pieces(&fixture);
    let reads: Vec<&[u8]> = fixture.chunks(4096).collect();
    let mut g = c.benchmark_group("sse");
    g.throughput(Throughput::Bytes(fixture.len() as u64));
    for (name, pieces) in [("fixture_2000", &varied), ("fixture_2000_4k_reads", &reads)] {
        g.bench_function(format!("parse+translate/{name}"), |b| {
            b.iter(|| {
                let mut parser = SseParser::new();
                let mut translator = Translator::new();
                let mut chunks = Vec::with_capacity(64);
                let mut count = 0usize;
                for piece in pieces.iter() {
                    parser.push(piece);
                    while let Some(payload) = parser.next_payload() {
                        translator.push(payload, &mut chunks).expect("valid stream");
                        count += chunks.len();
                        chunks.clear();
                    }
                }
                parser.end();
                while let Some(payload) = parser.next_payload() {
                    translator.push(payload, &mut chunks).expect("valid stream");
                    count += chunks.len();
                    chunks.clear();
                }
                assert_eq!(count, 2004);
                count
            })
        });
    }
    let pieces = varied;
    g.bench_function("parse_only/fixture_2000", |b| {
        b.iter(|| {
            let mut parser = SseParser::new();
            let mut n = 0usize;
            for piece in &pieces {
                parser.push(piece);
                while let Some(p) = parser.next_payload() {
                    n += p.len();
                }
            }
            n
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
