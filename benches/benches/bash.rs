//! Overhead of the `bash` tool: `bash -c true` through
//! `ToolRegistry::execute` (argument validation, the local executor's process
//! group, pipes, reaper and result rendering) versus spawning `bash -c true`
//! directly with `std::process::Command`, in the same group and run. Also the
//! executor alone (`LocalBashExecutor::run`), to split the overhead.
//!
//! `cargo bench -p dsh-benches --bench bash`
//!
//! Prints the ratios (tool / direct) at the end: of the mean per-call times
//! over every timed criterion iteration, and of the medians of interleaved
//! single calls (robust to load that changes between the criterion runs).

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use dsh_bash::{BashExecutor, BashRequest};
use dsh_tools::{CallEnv, ToolCall, ToolRegistry};

/// Total measured time and iterations per benchmark, for the final ratio.
static TOTALS: Mutex<Vec<(&'static str, Duration, u64)>> = Mutex::new(Vec::new());

fn record(name: &'static str, elapsed: Duration, iters: u64) {
    let mut totals = TOTALS.lock().expect("totals lock");
    match totals.iter_mut().find(|(n, _, _)| *n == name) {
        Some(entry) => {
            entry.1 += elapsed;
            entry.2 += iters;
        }
        None => totals.push((name, elapsed, iters)),
    }
}

fn mean(name: &str) -> Option<Duration> {
    let totals = TOTALS.lock().expect("totals lock");
    let (_, total, iters) = totals.iter().find(|(n, _, _)| *n == name)?;
    (*iters > 0).then(|| *total / u32::try_from(*iters).unwrap_or(u32::MAX))
}

fn bash_true(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let tmp = tempfile::tempdir().expect("tempdir");
    let exec = dsh_benches::bash_executor(tmp.path());
    let registry = ToolRegistry::new();
    let installed = dsh_tool_bash::install(&registry, exec.clone()).expect("install bash tools");
    let args = r#"{"command":"true","description":"Do nothing"}"#;
    let call = ToolCall::new("call-1", "bash", args);
    let check = rt.block_on(registry.execute(&call, CallEnv::default()));
    assert_eq!(check.text(), "(no output)", "the tool runs `true`");

    let mut g = c.benchmark_group("bash_true");
    g.sample_size(50);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("direct_std_command", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                // Same shape as the tool: stdin closed, both streams piped.
                let out = Command::new("bash")
                    .args(["-c", "true"])
                    .stdin(Stdio::null())
                    .output()
                    .expect("spawn bash");
                assert!(out.status.success());
            }
            let elapsed = start.elapsed();
            record("direct_std_command", elapsed, iters);
            elapsed
        })
    });
    g.bench_function("executor_run", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let spec = exec.resolve(BashRequest::new("true"));
                let result = rt.block_on(exec.run(spec)).expect("run");
                assert_eq!(result.exit_code, Some(0));
            }
            let elapsed = start.elapsed();
            record("executor_run", elapsed, iters);
            elapsed
        })
    });
    g.bench_function("bash_tool", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let result = rt.block_on(registry.execute(&call, CallEnv::default()));
                assert!(!result.is_error);
            }
            let elapsed = start.elapsed();
            record("bash_tool", elapsed, iters);
            elapsed
        })
    });
    g.finish();

    if let (Some(direct), Some(run), Some(tool)) = (
        mean("direct_std_command"),
        mean("executor_run"),
        mean("bash_tool"),
    ) {
        let ratio = |d: Duration| d.as_secs_f64() / direct.as_secs_f64();
        println!(
            "bash -c true, mean per call over every timed iteration: direct {direct:.2?}, \
             executor {run:.2?} ({:.2}x), tool {tool:.2?} ({:.2}x direct)",
            ratio(run),
            ratio(tool),
        );
    }
    // Criterion runs the three one after another, so load that changes
    // between them skews the ratio; interleaving single calls and comparing
    // medians is robust to that.
    const ROUNDS: usize = 300;
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let out = Command::new("bash")
            .args(["-c", "true"])
            .stdin(Stdio::null())
            .output()
            .expect("spawn bash");
        samples[0].push(start.elapsed());
        assert!(out.status.success());
        let start = Instant::now();
        let result = rt
            .block_on(exec.run(exec.resolve(BashRequest::new("true"))))
            .expect("run");
        samples[1].push(start.elapsed());
        assert_eq!(result.exit_code, Some(0));
        let start = Instant::now();
        let result = rt.block_on(registry.execute(&call, CallEnv::default()));
        samples[2].push(start.elapsed());
        assert!(!result.is_error);
    }
    let [direct, run, tool] = samples.map(|mut v| {
        v.sort_unstable();
        v[v.len() / 2]
    });
    println!(
        "bash -c true, medians of {ROUNDS} interleaved calls: direct {direct:.2?}, \
         executor {run:.2?} ({:.2}x), tool {tool:.2?} ({:.2}x direct)",
        run.as_secs_f64() / direct.as_secs_f64(),
        tool.as_secs_f64() / direct.as_secs_f64(),
    );
    rt.block_on(exec.dispose());
    installed.undo();
}

criterion_group!(benches, bash_true);
criterion_main!(benches);
