//! Cost of confinement: `bash -c true` through the `bash` tool under
//! `workspace-write` with the namespace layer (user, mount, PID and IPC
//! namespaces set up per command, then Landlock and seccomp), under
//! `workspace-write` with Landlock and seccomp alone, and under
//! `danger-full-access` (no confinement), same registry shape, same run.
//! Then the network proxy: a 10 MB `curl` through it versus direct
//! (module `proxy`).
//!
//! `cargo bench -p dsh-benches --bench sandbox`
//!
//! Prints the ratios confined / unconfined of the medians of interleaved
//! single calls (robust to load drifting between criterion runs): back to
//! back, and with a 20 ms pause before each call (as between a model's
//! tool calls), which lets the kernel finish tearing down the previous
//! command's namespaces before the next starts.

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sandbox/proxy.rs"]
mod proxy;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use dsh_bash_local::{LocalBashConfig, LocalBashExecutor};
use dsh_sandbox::{NamespaceMode, SandboxMode};
use dsh_tools::{CallEnv, ToolCall, ToolRegistry};

/// Interleaved single calls per side for the median ratio.
const INTERLEAVED: usize = 400;
/// Interleaved calls per side with a pause before each.
const PAUSED: usize = 150;
/// The pause before each of those calls.
const PAUSE: Duration = Duration::from_millis(20);

/// A registry with the bash tools on an executor in `mode`, and the
/// registration that keeps them installed.
fn registry(
    mode: SandboxMode,
    namespaces: NamespaceMode,
    dir: &std::path::Path,
) -> (ToolRegistry, dsh_kernel::Registration) {
    let exec = Arc::new(LocalBashExecutor::new(LocalBashConfig {
        cwd: Some(dir.to_path_buf()),
        spill_dir: Some(dir.to_path_buf()),
        sandbox: mode,
        namespaces,
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
    let layers = dsh_sandbox::probe_namespaces();
    assert!(
        layers.layer.is_ok(),
        "the sandbox bench needs the namespace layer: {:?}",
        layers.layer
    );
    let (confined, _keep_confined) = registry(
        SandboxMode::WorkspaceWrite,
        NamespaceMode::Required,
        tmp.path(),
    );
    let (landlock, _keep_landlock) =
        registry(SandboxMode::WorkspaceWrite, NamespaceMode::Off, tmp.path());
    let (open, _keep_open) = registry(
        SandboxMode::DangerFullAccess,
        NamespaceMode::Off,
        tmp.path(),
    );
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
    let ps_call = ToolCall::new(
        "call-ps",
        "bash",
        r#"{"command":"ls /proc | grep -c '^[0-9]'","description":"Count processes"}"#,
    );
    let text = rt
        .block_on(confined.execute(&ps_call, CallEnv::default()))
        .text();
    assert!(
        text.trim().parse::<u32>().unwrap() <= 4,
        "own PID namespace: {text}"
    );
    for r in [&confined, &landlock, &open] {
        assert_eq!(
            rt.block_on(r.execute(&call, CallEnv::default())).text(),
            "(no output)"
        );
    }

    let mut g = c.benchmark_group("sandbox_bash_true");
    g.sample_size(40);
    g.measurement_time(Duration::from_secs(8));
    for (name, r) in [
        ("unconfined", &open),
        ("workspace_write_landlock_only", &landlock),
        ("workspace_write_namespaces", &confined),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| rt.block_on(r.execute(&call, CallEnv::default())))
        });
    }
    g.finish();

    let (mut a, mut b, mut l) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..INTERLEAVED {
        let t = Instant::now();
        rt.block_on(open.execute(&call, CallEnv::default()));
        a.push(t.elapsed());
        let t = Instant::now();
        rt.block_on(confined.execute(&call, CallEnv::default()));
        b.push(t.elapsed());
        let t = Instant::now();
        rt.block_on(landlock.execute(&call, CallEnv::default()));
        l.push(t.elapsed());
    }
    let (ma, mb, ml) = (median(a), median(b), median(l));
    println!(
        "interleaved medians over {INTERLEAVED} calls each: unconfined {ma:?}, \
         workspace-write with namespaces {mb:?} (ratio {:.3}), Landlock alone {ml:?} (ratio {:.3})",
        mb.as_secs_f64() / ma.as_secs_f64(),
        ml.as_secs_f64() / ma.as_secs_f64()
    );
    // The same with a pause before each call, as between a model's tool
    // calls: back to back, each call also competes with the kernel's
    // deferred teardown of the previous command's namespaces (kernel
    // workers and RCU callbacks on the same two cores), which a pause
    // lets finish.
    let (mut a, mut b, mut l) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PAUSED {
        for (r, out) in [(&open, &mut a), (&confined, &mut b), (&landlock, &mut l)] {
            std::thread::sleep(PAUSE);
            let t = Instant::now();
            rt.block_on(r.execute(&call, CallEnv::default()));
            out.push(t.elapsed());
        }
    }
    let (ma, mb, ml) = (median(a), median(b), median(l));
    println!(
        "interleaved medians over {PAUSED} calls each, {PAUSE:?} apart: unconfined {ma:?}, \
         workspace-write with namespaces {mb:?} (ratio {:.3}), Landlock alone {ml:?} (ratio {:.3})",
        mb.as_secs_f64() / ma.as_secs_f64(),
        ml.as_secs_f64() / ma.as_secs_f64()
    );
    proxy::proxy(c);
}

criterion_group!(benches, sandbox);
criterion_main!(benches);
