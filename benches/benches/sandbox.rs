//! Cost of confinement: `bash -c true` through the `bash` tool under
//! `workspace-write` (Landlock ruleset built per command, applied between
//! fork and exec) versus `danger-full-access` (no confinement), same
//! registry shape, same run.
//!
//! `cargo bench -p dsh-benches --bench sandbox`
//!
//! Prints the ratio confined / unconfined of the medians of interleaved
//! single calls (robust to load drifting between criterion runs).

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use dsh_bash_local::{LocalBashConfig, LocalBashExecutor};
use dsh_sandbox::SandboxMode;
use dsh_tools::{CallEnv, ToolCall, ToolRegistry};

/// Interleaved single calls per side for the median ratio.
const INTERLEAVED: usize = 400;

/// A registry with the bash tools on an executor in `mode`, and the
/// registration that keeps them installed.
fn registry(mode: SandboxMode, dir: &std::path::Path) -> (ToolRegistry, dsh_kernel::Registration) {
    let exec = Arc::new(LocalBashExecutor::new(LocalBashConfig {
        cwd: Some(dir.to_path_buf()),
        spill_dir: Some(dir.to_path_buf()),
        sandbox: mode,
        ..LocalBashConfig::default()
    }));
    let registry = ToolRegistry::new();
    let installed = dsh_tool_bash::install(&registry, exec).expect("install bash tools");
    (registry, installed)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn sandbox(c: &mut Criterion) {
    let support = dsh_sandbox::probe();
    assert!(
        support.filesystem_full(),
        "the sandbox bench needs Landlock: {support}"
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (confined, _keep_confined) = registry(SandboxMode::WorkspaceWrite, tmp.path());
    let (open, _keep_open) = registry(SandboxMode::DangerFullAccess, tmp.path());
    let call = ToolCall::new(
        "call-1",
        "bash",
        r#"{"command":"true","description":"Do nothing"}"#,
    );
    // Proof that the confined side is confined: a write outside fails.
    let probe_call = ToolCall::new(
        "call-0",
        "bash",
        r#"{"command":"echo x > /etc/dsh-bench-probe","description":"Probe"}"#,
    );
    let text = rt
        .block_on(confined.execute(&probe_call, CallEnv::default()))
        .text();
    assert!(text.contains("[sandbox: write denied"), "{text}");
    for r in [&confined, &open] {
        assert_eq!(
            rt.block_on(r.execute(&call, CallEnv::default())).text(),
            "(no output)"
        );
    }

    let mut g = c.benchmark_group("sandbox_bash_true");
    g.sample_size(40);
    g.measurement_time(Duration::from_secs(8));
    for (name, r) in [("unconfined", &open), ("workspace_write", &confined)] {
        g.bench_function(name, |b| {
            b.iter(|| rt.block_on(r.execute(&call, CallEnv::default())))
        });
    }
    g.finish();

    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..INTERLEAVED {
        let t = Instant::now();
        rt.block_on(open.execute(&call, CallEnv::default()));
        a.push(t.elapsed());
        let t = Instant::now();
        rt.block_on(confined.execute(&call, CallEnv::default()));
        b.push(t.elapsed());
    }
    let (ma, mb) = (median(a), median(b));
    println!(
        "interleaved medians over {INTERLEAVED} calls each: unconfined {ma:?}, workspace-write {mb:?}, ratio {:.3}",
        mb.as_secs_f64() / ma.as_secs_f64()
    );
}

criterion_group!(benches, sandbox);
criterion_main!(benches);
