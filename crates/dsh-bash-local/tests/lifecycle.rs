//! Disposal: kills and reaps everything, silences listeners, cleans spills.

mod common;

use dsh_kernel::ErrorCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{assert_gone, eventually_gone, pids, read_fifo, Fixture};
use dsh_bash::{BashExecutor, BashRequest, TaskStatus};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispose_kills_tasks_and_runs_and_waits_for_them() {
    let f = Fixture::host_pids(|_| {});
    let notified = Arc::new(AtomicUsize::new(0));
    let reg = {
        let notified = notified.clone();
        f.exec.on_task_done().on(move |_| {
            notified.fetch_add(1, Ordering::SeqCst);
        })
    };

    let bg_fifo = f.fifo("bg");
    let task = f.start(&format!(
        "sleep 30 | sleep 30 & a=$!; (sleep 30; true) & b=$!; echo $$ $a $b > '{}'; wait",
        bg_fifo.display()
    ));
    // A TERM-ignoring task needs the SIGKILL escalation before dispose returns.
    let stubborn_fifo = f.fifo("stubborn");
    f.start(&format!(
        "trap '' TERM; echo $$ > '{}'; sleep 30",
        stubborn_fifo.display()
    ));
    let fg_fifo = f.fifo("fg");
    let spec = f.exec.resolve(BashRequest::new(format!(
        "sleep 30 & echo $$ $! > '{}'; wait",
        fg_fifo.display()
    )));
    let run = f.exec.run(spec);
    tokio::pin!(run);

    let bg = pids(&read_fifo(&bg_fifo).await);
    let stubborn = pids(&read_fifo(&stubborn_fifo).await);
    let fg = tokio::select! {
        _ = &mut run => panic!("foreground run ended early"),
        text = read_fifo(&fg_fifo) => pids(&text),
    };
    let (result, ()) = tokio::join!(&mut run, f.exec.dispose());

    // Dispose returned: every process group is gone.
    assert_gone(bg[0], &bg);
    assert_gone(stubborn[0], &stubborn);
    assert_gone(fg[0], &fg);
    let r = result.expect("the interrupted run still yields a result");
    assert_eq!(r.signal.as_deref(), Some("SIGTERM"));
    assert!(r.aborted, "a run cut short by dispose is reported aborted");
    assert!(!r.timed_out);

    assert_eq!(
        notified.load(Ordering::SeqCst),
        0,
        "no notification after dispose"
    );
    assert!(f.exec.list().is_empty());
    assert_eq!(f.exec.get(&task.id), None);

    let spec = f.exec.resolve(BashRequest::new("true"));
    assert_eq!(
        f.exec.run(spec.clone()).await.expect_err("disposed").code(),
        "DISPOSED"
    );
    assert_eq!(f.exec.start(spec).expect_err("disposed").code(), "DISPOSED");
    f.exec.dispose().await; // idempotent
    reg.undo();
}

#[tokio::test]
async fn wait_resolves_with_killed_status_when_disposed() {
    let f = Fixture::new(|_| {});
    let t = f.start("sleep 30");
    let waiting = f.exec.wait(&t.id);
    let (done, ()) = tokio::join!(waiting, f.exec.dispose());
    assert_eq!(done.expect("known at wait time").status, TaskStatus::Killed);
}

#[tokio::test]
async fn dispose_removes_spill_files() {
    let f = Fixture::new(|c| c.max_output_bytes = 10);
    let r = f.run("seq 1 100").await;
    let spill = r.stdout.spill_path.expect("spilled");
    let dir = spill.parent().expect("dir").to_path_buf();
    assert!(spill.exists());
    f.exec.dispose().await;
    assert!(!spill.exists());
    assert!(!dir.exists());
    assert_eq!(f.exec.spill_dir(), None);
}

#[tokio::test]
async fn dispose_keeps_spill_files_when_configured() {
    let f = Fixture::new(|c| {
        c.max_output_bytes = 10;
        c.keep_spill_files = true;
    });
    let t = f.start("seq 1 100 >&2");
    f.wait(&t.id).await;
    let read = f.exec.read_output(&t.id).expect("known");
    let spill = read.stderr_spill_path.expect("stderr spilled");
    f.exec.dispose().await;
    let full: String = (1..=100).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(spill).expect("kept"), full);
}

#[tokio::test]
async fn dropping_the_executor_kills_its_processes() {
    let f = Fixture::host_pids(|_| {});
    let fifo = f.fifo("ready");
    f.start(&format!("echo $$ > '{}'; sleep 30", fifo.display()));
    let p = pids(&read_fifo(&fifo).await);
    let Fixture { exec, tmp } = f;
    drop(exec);
    // Nothing to await after a drop: the kill happens in the background.
    eventually_gone(p[0], &p).await;
    drop(tmp);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispose_stops_a_term_ignoring_run_promptly_as_aborted() {
    let f = Fixture::host_pids(|c| c.timeout_ms = 120_000);
    let fifo = f.fifo("ready");
    let spec = f.exec.resolve(BashRequest::new(format!(
        "trap '' TERM; sleep 30 & echo $$ $! > '{}'; wait",
        fifo.display()
    )));
    let run = f.exec.run(spec);
    tokio::pin!(run);
    let p = tokio::select! {
        _ = &mut run => panic!("foreground run ended early"),
        text = read_fifo(&fifo) => pids(&text),
    };
    let started = std::time::Instant::now();
    let (result, ()) = tokio::join!(&mut run, f.exec.dispose());
    // SIGTERM is ignored by the shell; the 200 ms grace, then SIGKILL.
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_gone(p[0], &p);
    let r = result.expect("a result");
    assert!(r.aborted);
    assert_eq!(r.signal.as_deref(), Some("SIGKILL"));
}

#[tokio::test]
async fn spills_kept_in_a_session_directory_survive_dispose() {
    let f = Fixture::new(|c| c.max_output_bytes = 10);
    let dir = f.tmp.path().join("sessions/s-1/spill");
    f.exec.keep_spills_in(dir.clone());
    let r = f.run("seq 1 100").await;
    let spill = r.stdout.spill_path.clone().expect("spilled");
    assert_eq!(spill.parent(), Some(dir.as_path()));
    let t = f.start("seq 1 50 >&2");
    f.wait(&t.id).await;
    let task_spill = f
        .exec
        .read_output(&t.id)
        .expect("known")
        .stderr_spill_path
        .expect("stderr spilled");
    assert_eq!(task_spill.parent(), Some(dir.as_path()));
    f.exec.dispose().await;

    use std::os::unix::fs::PermissionsExt;
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("exists").permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&spill), 0o600);
    assert_eq!(mode(&task_spill), 0o600);
    let full: String = (1..=100).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&spill).expect("kept"), full);
    assert_eq!(f.exec.spill_dir(), Some(dir));
}
