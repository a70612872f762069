//! The tools' part of a step's request: the built-in bash and file tools
//! handed to the DeepSeek adapter and written into the request body, per
//! step, beside the same body without tools.
//!
//! `cargo bench -p dsh-benches --bench request`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, criterion_main, Criterion};
use dsh_llm::{History, Message, ModelRequest};
use dsh_llm_deepseek::{request_bytes, DeepSeekConfig};
use dsh_tools::ToolRegistry;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let exec = dsh_benches::bash_executor(tmp.path());
    let registry = ToolRegistry::new();
    let _bash = dsh_tool_bash::install(&registry, exec).expect("bash tools");
    let _fs = dsh_tool_fs::install(&registry, tmp.path().to_path_buf()).expect("file tools");
    assert!(
        registry.len() >= 5,
        "the built-in tools are registered: {:?}",
        registry.names()
    );
    let history: History = vec![Message::user_text("list the files")].into();
    let config = DeepSeekConfig::default();
    let mut g = c.benchmark_group("request");
    g.bench_function("body_with_tools/builtin", |b| {
        b.iter(|| {
            let request = ModelRequest {
                model: "deepseek-chat".into(),
                messages: history.clone(),
                tools: Some(registry.tool_set()),
                ..Default::default()
            };
            request_bytes(black_box(&request), &config).unwrap()
        })
    });
    g.bench_function("body_without_tools/builtin", |b| {
        b.iter(|| {
            let request = ModelRequest {
                model: "deepseek-chat".into(),
                messages: history.clone(),
                ..Default::default()
            };
            request_bytes(black_box(&request), &config).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
