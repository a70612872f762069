//! Foreground runs: exit codes, streams, timeouts, kills, aborts, output caps.

mod common;

use dsh_kernel::ErrorCode;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{assert_gone, pids, read_fifo, Fixture};
use dsh_bash::{BashExecutor, BashRequest};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn exit_codes_and_empty_output() {
    let f = Fixture::new(|_| {});
    let r = f.run("echo failing; exit 3").await;
    assert_eq!(r.exit_code, Some(3));
    assert_eq!(r.signal, None);
    assert!(!r.timed_out && !r.aborted);
    assert_eq!(r.stdout.text, "failing\n");

    let r = f.run("true").await;
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(r.stdout.text, "");
    assert_eq!(r.stderr.text, "");
    assert!(!r.stdout.truncated && r.stdout.spill_path.is_none());
    assert_eq!(r.timeout_ms, 120_000);
}

#[tokio::test]
async fn stdout_and_stderr_are_separate() {
    let f = Fixture::new(|_| {});
    let r = f.run("echo out; echo err >&2; printf more").await;
    assert_eq!(r.stdout.text, "out\nmore");
    assert_eq!(r.stderr.text, "err\n");
}

#[tokio::test]
async fn runs_in_workdir_with_fresh_shell_and_null_stdin() {
    let f = Fixture::new(|_| {});
    let sub = f.tmp.path().join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    let r = f
        .run_req(BashRequest::new("pwd; cat; echo \"[$FOO]\"").with_workdir("sub"))
        .await;
    let pwd = sub.canonicalize().expect("canonical");
    assert_eq!(r.stdout.text, format!("{}\n[]\n", pwd.display()));
}

#[tokio::test]
async fn resolve_applies_defaults_and_caps() {
    let f = Fixture::new(|c| {
        c.timeout_ms = 5_000;
        c.max_timeout_ms = 10_000;
    });
    let spec = f.exec.resolve(BashRequest::new("x"));
    assert_eq!(spec.timeout_ms, 5_000);
    assert_eq!(spec.workdir, f.tmp.path());
    let spec = f.exec.resolve(
        BashRequest::new("x")
            .with_timeout_ms(60_000)
            .with_workdir("/etc"),
    );
    assert_eq!(spec.timeout_ms, 10_000);
    assert_eq!(spec.workdir, PathBuf::from("/etc"));
    assert_eq!(
        f.exec
            .resolve(BashRequest::new("x").with_timeout_ms(0))
            .timeout_ms,
        0
    );

    let host = dsh_bash_local::LocalBashExecutor::default();
    let spec = host.resolve(BashRequest::new("x"));
    assert_eq!(spec.workdir, std::env::current_dir().expect("cwd"));
    assert_eq!(spec.timeout_ms, 120_000);
}

#[tokio::test]
async fn timeout_sends_sigterm() {
    let f = Fixture::new(|_| {});
    let started = Instant::now();
    let r = f
        .run_req(BashRequest::new("sleep 30").with_timeout_ms(200))
        .await;
    assert!(r.timed_out);
    assert!(!r.aborted);
    assert_eq!(r.signal.as_deref(), Some("SIGTERM"));
    assert_eq!(r.exit_code, None);
    assert_eq!(r.timeout_ms, 200);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn term_trap_exiting_zero_after_timeout() {
    let f = Fixture::new(|_| {});
    let r = f
        .run_req(BashRequest::new("trap 'exit 0' TERM; sleep 30").with_timeout_ms(200))
        .await;
    assert!(r.timed_out);
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(r.signal, None);
}

#[tokio::test]
async fn ignored_term_escalates_to_sigkill_after_grace() {
    let f = Fixture::new(|c| c.kill_grace = Duration::from_millis(200));
    let started = Instant::now();
    let r = f
        .run_req(BashRequest::new("trap '' TERM; sleep 30").with_timeout_ms(100))
        .await;
    assert!(r.timed_out);
    assert_eq!(r.signal.as_deref(), Some("SIGKILL"));
    assert_eq!(r.exit_code, None);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn self_kill_is_a_signal_not_a_timeout() {
    let f = Fixture::new(|_| {});
    let r = f.run("kill -TERM $$").await;
    assert_eq!(r.signal.as_deref(), Some("SIGTERM"));
    assert_eq!(r.exit_code, None);
    assert!(!r.timed_out && !r.aborted);
}

#[tokio::test]
async fn abort_token_kills_running_command() {
    let f = Fixture::host_pids(|_| {});
    let fifo = f.fifo("ready");
    let token = CancellationToken::new();
    let spec = f.exec.resolve(
        BashRequest::new(format!("echo $$ > '{}'; sleep 30", fifo.display()))
            .with_cancel(token.clone()),
    );
    let run = f.exec.run(spec);
    let ready = async {
        let pid = read_fifo(&fifo).await;
        token.cancel();
        pid
    };
    let (result, pid) = tokio::join!(run, ready);
    let r = result.expect("aborted run is a result, not an error");
    assert!(r.aborted);
    assert!(!r.timed_out);
    assert_eq!(r.signal.as_deref(), Some("SIGTERM"));
    let pid = pids(&pid)[0];
    assert_gone(pid, &[pid]);
}

#[tokio::test]
async fn already_cancelled_token_is_an_error() {
    let f = Fixture::new(|_| {});
    let token = CancellationToken::new();
    token.cancel();
    let spec = f
        .exec
        .resolve(BashRequest::new("echo never").with_cancel(token));
    let err = f.exec.run(spec.clone()).await.expect_err("pre-aborted");
    assert_eq!(err.code(), "ABORTED");
    assert_eq!(err.to_string(), "aborted before spawn: aborted");
    let err = f.exec.start(spec).expect_err("pre-aborted start");
    assert_eq!(err.code(), "ABORTED");
}

#[tokio::test]
async fn bad_workdir_is_an_error() {
    let f = Fixture::new(|_| {});
    let missing = f.tmp.path().join("does-not-exist");
    let spec = f
        .exec
        .resolve(BashRequest::new("true").with_workdir(&missing));
    let err = f.exec.run(spec.clone()).await.expect_err("missing workdir");
    assert_eq!(err.code(), "BAD_WORKDIR");
    let msg = err.to_string();
    assert!(msg.contains(&missing.display().to_string()), "{msg}");
    assert!(msg.contains("ENOENT"), "{msg}");
    assert_eq!(f.exec.start(spec).expect_err("start").code(), "BAD_WORKDIR");

    let file = f.tmp.path().join("plain-file");
    std::fs::write(&file, "x").expect("write");
    let spec = f.exec.resolve(BashRequest::new("true").with_workdir(&file));
    let err = f.exec.run(spec).await.expect_err("file as workdir");
    assert_eq!(err.code(), "BAD_WORKDIR");
}

fn numbers(n: u32) -> String {
    (1..=n).map(|i| format!("{i}\n")).collect()
}

#[tokio::test]
async fn large_output_spills_complete_stream_privately() {
    let f = Fixture::new(|c| c.max_output_bytes = 1000);
    let r = f.run("seq 1 40000; seq 1 30000 >&2").await;
    let expected = numbers(40000);
    assert!(expected.len() > 200_000);
    assert!(r.stdout.truncated);
    assert_eq!(r.stdout.text, expected[expected.len() - 1000..]);
    let out_path = r.stdout.spill_path.clone().expect("stdout spilled");
    assert_eq!(std::fs::read_to_string(&out_path).expect("spill"), expected);
    let err_path = r.stderr.spill_path.clone().expect("stderr spilled");
    assert_eq!(
        std::fs::read_to_string(&err_path).expect("spill"),
        numbers(30000)
    );
    assert_ne!(out_path, err_path);

    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&out_path), 0o600);
    let dir = out_path.parent().expect("dir");
    assert_eq!(mode(dir), 0o700);
    assert_eq!(Some(dir.to_path_buf()), f.exec.spill_dir());
    assert_eq!(dir.parent(), Some(f.tmp.path()));
    let dir_name = dir.file_name().and_then(|n| n.to_str()).expect("name");
    assert!(dir_name.starts_with("dsh-bash-"), "{dir_name}");
    let name = out_path.file_name().and_then(|n| n.to_str()).expect("name");
    let prefix = format!("dsh-bash-{}-", std::process::id());
    assert!(
        name.starts_with(&prefix) && name.ends_with("-stdout.log"),
        "{name}"
    );
    let middle: Vec<&str> = name[prefix.len()..name.len() - "-stdout.log".len()]
        .split('-')
        .collect();
    assert_eq!(middle.len(), 2, "{name}");
    assert!(middle[0].parse::<u64>().is_ok(), "{name}");
    assert!(
        middle[1].len() == 12
            && middle[1]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{name}"
    );
}

#[tokio::test]
async fn output_exactly_at_cap_is_not_truncated() {
    let f = Fixture::new(|c| c.max_output_bytes = 1000);
    let r = f.run("head -c 1000 /dev/zero | tr '\\0' x").await;
    assert_eq!(r.stdout.text, "x".repeat(1000));
    assert!(!r.stdout.truncated);
    assert!(r.stdout.spill_path.is_none());
    assert!(
        f.exec.spill_dir().is_none(),
        "no spill directory without a spill"
    );

    let r = f.run("head -c 1001 /dev/zero | tr '\\0' x").await;
    assert!(r.stdout.truncated);
    assert_eq!(r.stdout.text.len(), 1000);
    let spilled = std::fs::read(r.stdout.spill_path.expect("spilled")).expect("spill");
    assert_eq!(spilled.len(), 1001);
}

#[tokio::test]
async fn big_output_streams_to_the_spill_file() {
    let f = Fixture::new(|c| c.max_output_bytes = 4096);
    let r = f.run("head -c 30000000 /dev/zero").await;
    assert!(r.stdout.truncated);
    assert_eq!(r.stdout.text.len(), 4096);
    let path = r.stdout.spill_path.expect("spilled");
    assert_eq!(std::fs::metadata(path).expect("meta").len(), 30_000_000);
}

#[tokio::test]
async fn invalid_utf8_is_decoded_lossily() {
    let f = Fixture::new(|_| {});
    let r = f
        .run("printf 'a\\377\\376b\\000c'; printf '\\351' >&2")
        .await;
    assert_eq!(r.stdout.text, "a\u{FFFD}\u{FFFD}b\0c");
    assert_eq!(r.stderr.text, "\u{FFFD}");
}

#[tokio::test]
async fn leftover_group_members_do_not_outlive_the_call() {
    let f = Fixture::host_pids(|_| {});
    // The background sleep detaches from the pipes, so the call completes
    // while it would still be running.
    let r = f.run("sleep 30 >/dev/null 2>&1 & echo $$ $!").await;
    assert_eq!(r.exit_code, Some(0));
    let p = pids(&r.stdout.text);
    assert_gone(p[0], &p);
}

#[tokio::test]
async fn timeout_kills_pipelines_and_subshells() {
    let f = Fixture::host_pids(|_| {});
    let r = f
        .run_req(
            BashRequest::new(
                "sleep 30 | sleep 30 & p1=$!; (sleep 30; true) & p2=$!; echo $$ $p1 $p2; wait",
            )
            .with_timeout_ms(300),
        )
        .await;
    assert!(r.timed_out);
    let p = pids(&r.stdout.text);
    assert_eq!(p.len(), 3, "{:?}", r.stdout.text);
    assert_gone(p[0], &p);
}

#[tokio::test]
async fn dropping_the_run_kills_the_process() {
    let f = Fixture::host_pids(|_| {});
    let fifo = f.fifo("ready");
    let spec = f.exec.resolve(BashRequest::new(format!(
        "echo $$ > '{}'; sleep 30",
        fifo.display()
    )));
    let pid = {
        let run = f.exec.run(spec);
        tokio::pin!(run);
        tokio::select! {
            _ = &mut run => panic!("run finished while sleeping"),
            pid = read_fifo(&fifo) => pids(&pid)[0],
        }
    };
    // The abandoned run's driver is still reaping; dispose waits for it.
    f.exec.dispose().await;
    assert_gone(pid, &[pid]);
}

#[tokio::test]
async fn completion_waits_for_grandchildren_holding_the_pipes() {
    let f = Fixture::new(|_| {});
    let r = f.run("(sleep 0.2; echo late) & echo early").await;
    assert_eq!(r.stdout.text, "early\nlate\n");
    assert_eq!(r.exit_code, Some(0));
}

#[tokio::test]
async fn pipes_held_outside_the_group_do_not_hang_the_call() {
    let f = Fixture::host_pids(|c| c.kill_grace = Duration::from_millis(100));
    let started = Instant::now();
    // `setsid` moves the sleep out of the group, out of reach of the kill,
    // while it keeps stdout open.
    let r = f
        .run_req(BashRequest::new("setsid sleep 30 & echo $!; wait").with_timeout_ms(100))
        .await;
    assert!(r.timed_out);
    assert!(r.detached, "the escaped sleep was left holding the output");
    assert!(started.elapsed() < Duration::from_secs(10));
    // The escaped process is beyond the executor; clean it up here.
    let escaped = pids(&r.stdout.text);
    assert_eq!(escaped.len(), 1, "{:?}", r.stdout.text);
    let pid = nix::unistd::Pid::from_raw(escaped[0]);
    // ESRCH would only mean it is already gone, which is fine.
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
}

#[tokio::test]
async fn a_process_that_left_the_group_holding_the_pipes_does_not_hang_the_call() {
    // Default foreground timeout (120 s): the call must end long before it.
    let f = Fixture::new(|c| c.timeout_ms = 120_000);
    let marker = format!("300.{}", std::process::id());
    let started = Instant::now();
    let r = f
        .run(&format!("setsid sleep {marker} & echo started"))
        .await;
    let took = started.elapsed();
    let escaped = dsh_testkit::procs::live_with("sleep", &format!("sleep {marker}"));
    for pid in &escaped {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert_eq!(r.stdout.text, "started\n");
    assert_eq!(r.exit_code, Some(0));
    assert!(!r.timed_out);
    assert!(r.detached, "the result says the output was detached");
    assert_eq!(escaped.len(), 1, "the escaped sleep was left running");
}

/// SIGKILLs every process whose command line contains `needle`; returns
/// how many there were.
fn kill_procs_with(needle: &str) -> usize {
    let found = dsh_testkit::procs::live_with("sleep", needle);
    for pid in &found {
        // ESRCH would only mean it is already gone, which is fine.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    found.len()
}

#[tokio::test]
async fn a_background_job_inside_the_group_is_stopped_after_the_grace() {
    // The job holds stdout; the call must not wait for it until the
    // (default, 120 s) timeout: 1 s after the shell exited it is stopped.
    let f = Fixture::new(|c| c.timeout_ms = 120_000);
    let marker = format!("301.{}", std::process::id());
    let started = Instant::now();
    let r = f.run(&format!("sleep {marker} & echo started")).await;
    let took = started.elapsed();
    let left = kill_procs_with(&format!("sleep {marker} "));
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert_eq!(r.stdout.text, "started\n");
    assert_eq!(r.exit_code, Some(0), "the shell's own status");
    assert!(!r.timed_out && !r.aborted);
    assert!(!r.detached, "the job was ours, not left running");
    assert_eq!(left, 0, "the job in the group was killed");
}

#[tokio::test]
async fn jobs_in_the_group_are_stopped_and_escaped_ones_left() {
    let f = Fixture::new(|c| c.timeout_ms = 120_000);
    let (inside, outside) = (
        format!("302.{}", std::process::id()),
        format!("303.{}", std::process::id()),
    );
    let started = Instant::now();
    let r = f
        .run(&format!(
            "sleep {inside} & setsid sleep {outside} & echo started"
        ))
        .await;
    let took = started.elapsed();
    let left_inside = kill_procs_with(&format!("sleep {inside} "));
    let left_outside = kill_procs_with(&format!("sleep {outside} "));
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert_eq!(r.stdout.text, "started\n");
    assert!(!r.timed_out);
    assert!(r.detached, "{r:?} {took:?} {left_inside} {left_outside}");
    assert_eq!((left_inside, left_outside), (0, 1));
}

#[tokio::test]
async fn fifty_megabytes_per_stream_stay_bounded_in_the_result() {
    const SIZE: u64 = 50 << 20;
    let f = Fixture::new(|c| c.max_output_bytes = 4096);
    let r = f
        .run(&format!(
            "head -c {SIZE} /dev/zero | tr '\\0' o; head -c {SIZE} /dev/zero | tr '\\0' e >&2"
        ))
        .await;
    assert_eq!(r.exit_code, Some(0), "{}", r.stderr.text.len());
    for (name, stream, byte) in [("stdout", &r.stdout, b'o'), ("stderr", &r.stderr, b'e')] {
        assert!(stream.truncated, "{name}");
        assert_eq!(stream.text.len(), 4096, "{name}: the tail is the cap");
        let spill = stream.spill_path.clone().expect("spilled");
        let meta = std::fs::metadata(&spill).expect("spill meta");
        assert_eq!(meta.len(), SIZE, "{name}: the spill holds every byte");
        let bytes = std::fs::read(&spill).expect("spill");
        assert!(bytes.iter().all(|b| *b == byte), "{name}");
    }
}
