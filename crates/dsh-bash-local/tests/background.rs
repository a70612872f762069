//! Background tasks: ids, incremental output, kill, cancel, completion events.

mod common;

use dsh_kernel::ErrorCode;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{assert_gone, pids, read_fifo, Fixture, DEADLINE};
use dsh_bash::{status_line, BashExecutor, BashRequest, TaskStatus};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn tasks_get_sequential_ids_and_report_exit() {
    let f = Fixture::new(|_| {});
    let a = f.start("echo a");
    let b = f.start("exit 4");
    assert_eq!(a.id, "bash-1");
    assert_eq!(b.id, "bash-2");
    assert_eq!(a.status, TaskStatus::Running);
    assert_eq!((a.exit_code, a.signal.as_deref()), (None, None));
    assert_eq!(a.command, "echo a");

    let a = f.wait("bash-1").await;
    let b = f.wait("bash-2").await;
    assert_eq!((a.status, a.exit_code), (TaskStatus::Completed, Some(0)));
    assert_eq!((b.status, b.exit_code), (TaskStatus::Completed, Some(4)));
    assert_eq!(status_line(&b), "[status: completed, exit code: 4]");
    let ids: Vec<String> = f.exec.list().into_iter().map(|t| t.id).collect();
    assert_eq!(ids, ["bash-1", "bash-2"]);
    assert_eq!(f.exec.get("bash-2"), Some(b));
    f.exec.dispose().await;
}

#[tokio::test]
async fn read_output_merges_stderr_and_never_repeats() {
    let f = Fixture::new(|_| {});
    let t = f.start("printf out; echo err >&2");
    f.wait(&t.id).await;
    let r = f.exec.read_output(&t.id).expect("known task");
    assert_eq!(r.delta, "out\n[stderr]\nerr\n");
    assert!(!r.lossy);
    assert_eq!(r.task.status, TaskStatus::Completed);
    assert_eq!((r.stdout_spill_path, r.stderr_spill_path), (None, None));
    let r = f.exec.read_output(&t.id).expect("known task");
    assert_eq!(r.delta, "");

    let t = f.start("echo only-err >&2");
    f.wait(&t.id).await;
    assert_eq!(
        f.exec.read_output(&t.id).expect("known").delta,
        "[stderr]\nonly-err\n"
    );
    f.exec.dispose().await;
}

#[tokio::test]
async fn incremental_reads_concatenate_to_the_full_output() {
    let f = Fixture::new(|_| {});
    let t = f.start("for i in $(seq 1 60); do echo line-$i; echo e-$i >&2; sleep 0.01; done");
    let (mut out, mut err, mut polls_with_data) = (String::new(), String::new(), 0);
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let r = f.exec.read_output(&t.id).expect("known task");
        assert!(!r.lossy);
        if !r.delta.is_empty() {
            polls_with_data += 1;
            // Split the delta back into its streams.
            let (o, e) = match r.delta.split_once("[stderr]\n") {
                Some((o, e)) => (o.to_string(), e.to_string()),
                None => (r.delta.clone(), String::new()),
            };
            out.push_str(&o);
            err.push_str(&e);
        }
        if r.task.status != TaskStatus::Running {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "task did not finish");
        // Polling like the model does; the pace only changes how the output
        // is split across reads, never what the concatenation is.
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    let expected_out: String = (1..=60).map(|i| format!("line-{i}\n")).collect();
    let expected_err: String = (1..=60).map(|i| format!("e-{i}\n")).collect();
    assert_eq!(out, expected_out);
    assert_eq!(err, expected_err);
    assert!(polls_with_data > 1, "output arrived over several reads");
    assert_eq!(f.exec.read_output(&t.id).expect("known").delta, "");
    f.exec.dispose().await;
}

#[tokio::test]
async fn read_after_overflow_is_lossy_and_names_spill_files() {
    let f = Fixture::new(|c| c.max_output_bytes = 100);
    let t = f.start("seq 1 1000");
    f.wait(&t.id).await;
    let r = f.exec.read_output(&t.id).expect("known");
    let full: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    assert!(r.lossy);
    assert_eq!(r.delta, full[full.len() - 100..]);
    let spill = r.stdout_spill_path.expect("stdout spilled");
    assert_eq!(std::fs::read_to_string(spill).expect("spill"), full);
    assert_eq!(r.stderr_spill_path, None);
    let r = f.exec.read_output(&t.id).expect("known");
    assert!(!r.lossy);
    assert_eq!(r.delta, "");
    f.exec.dispose().await;
}

#[tokio::test]
async fn kill_marks_killed_and_terminates_the_group() {
    let f = Fixture::host_pids(|_| {});
    let fifo = f.fifo("ready");
    let t = f.start(&format!(
        "sleep 30 | sleep 30 & p=$!; echo $$ $p > '{}'; wait",
        fifo.display()
    ));
    let p = pids(&read_fifo(&fifo).await);
    assert!(f.exec.kill(&t.id).expect("known"));
    assert_eq!(f.exec.get(&t.id).expect("known").status, TaskStatus::Killed);
    assert!(!f.exec.kill(&t.id).expect("known"), "second kill");
    let done = f.wait(&t.id).await;
    assert_eq!(done.status, TaskStatus::Killed);
    assert_eq!(done.signal.as_deref(), Some("SIGTERM"));
    assert_eq!(status_line(&done), "[status: killed by SIGTERM]");
    assert_gone(p[0], &p);
    f.exec.dispose().await;
}

#[tokio::test]
async fn kill_escalates_to_sigkill_when_term_is_ignored() {
    let f = Fixture::host_pids(|c| c.kill_grace = Duration::from_millis(200));
    let fifo = f.fifo("ready");
    let t = f.start(&format!(
        "trap '' TERM; echo $$ > '{}'; sleep 30",
        fifo.display()
    ));
    let p = pids(&read_fifo(&fifo).await);
    assert!(f.exec.kill(&t.id).expect("known"));
    let done = f.wait(&t.id).await;
    assert_eq!(done.status, TaskStatus::Killed);
    assert_eq!(done.signal.as_deref(), Some("SIGKILL"));
    assert_gone(p[0], &p);
    f.exec.dispose().await;
}

#[tokio::test]
async fn kill_after_completion_returns_false() {
    let f = Fixture::new(|_| {});
    let t = f.start("true");
    f.wait(&t.id).await;
    assert!(!f.exec.kill(&t.id).expect("known"));
    assert_eq!(
        f.exec.get(&t.id).expect("known").status,
        TaskStatus::Completed
    );
    f.exec.dispose().await;
}

#[tokio::test]
async fn unknown_ids_are_errors() {
    let f = Fixture::new(|_| {});
    for id in ["bash-1", "nope", "bash-x", ""] {
        let err = f.exec.read_output(id).expect_err("unknown");
        assert_eq!(err.code(), "UNKNOWN_TASK");
        assert_eq!(err.to_string(), format!("unknown bash task \"{id}\""));
        assert_eq!(f.exec.kill(id).expect_err("unknown").code(), "UNKNOWN_TASK");
        assert_eq!(f.exec.get(id), None);
        assert_eq!(f.exec.wait(id).await, None);
    }
}

#[tokio::test]
async fn cancel_token_kills_a_background_task() {
    let f = Fixture::host_pids(|_| {});
    let fifo = f.fifo("ready");
    let token = CancellationToken::new();
    let spec = f.exec.resolve(
        BashRequest::new(format!("echo $$ > '{}'; sleep 30", fifo.display()))
            .with_cancel(token.clone())
            // Background tasks ignore the timeout.
            .with_timeout_ms(1),
    );
    let t = f.exec.start(spec).expect("started");
    let p = pids(&read_fifo(&fifo).await);
    assert_eq!(
        f.exec.get(&t.id).expect("known").status,
        TaskStatus::Running
    );
    token.cancel();
    let done = f.wait(&t.id).await;
    assert_eq!(done.status, TaskStatus::Killed);
    assert_eq!(done.signal.as_deref(), Some("SIGTERM"));
    assert_gone(p[0], &p);
    f.exec.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_tasks_keep_their_own_output() {
    let f = Fixture::new(|_| {});
    let tasks: Vec<_> = (1..=6)
        .map(|i| {
            f.start(&format!(
                "echo start-{i}; sleep 0.1; echo end-{i} >&2; exit {i}"
            ))
        })
        .collect();
    for (i, t) in (1..=6).zip(&tasks) {
        let done = f.wait(&t.id).await;
        assert_eq!(done.exit_code, Some(i));
        let r = f.exec.read_output(&t.id).expect("known");
        assert_eq!(r.delta, format!("start-{i}\n[stderr]\nend-{i}\n"));
    }
    f.exec.dispose().await;
}

#[tokio::test]
async fn completion_listeners_fire_once_per_task_and_panics_are_contained() {
    let f = Fixture::new(|_| {});
    let seen: Arc<Mutex<HashMap<String, (usize, TaskStatus)>>> = Arc::default();
    let panicking = f.exec.on_task_done().on(|_| panic!("listener bug"));
    let counting = {
        let seen = seen.clone();
        f.exec.on_task_done().on(move |t| {
            let mut seen = seen.lock().expect("lock");
            let entry = seen.entry(t.id.clone()).or_insert((0, t.status));
            entry.0 += 1;
            entry.1 = t.status;
        })
    };
    let a = f.start("exit 2");
    let b = f.start("sleep 30");
    let c = f.start("true");
    f.exec.kill(&b.id).expect("known");
    for t in [&a, &b, &c] {
        f.wait(&t.id).await;
    }
    {
        let seen = seen.lock().expect("lock");
        assert_eq!(seen.len(), 3);
        assert_eq!(seen["bash-1"], (1, TaskStatus::Completed));
        assert_eq!(seen["bash-2"], (1, TaskStatus::Killed));
        assert_eq!(seen["bash-3"], (1, TaskStatus::Completed));
    }
    f.exec.dispose().await;
    assert_eq!(seen.lock().expect("lock").len(), 3);
    panicking.undo();
    counting.undo();
}

#[tokio::test]
async fn task_dying_from_its_own_signal_is_completed() {
    let f = Fixture::new(|_| {});
    let t = f.start("kill -TERM $$");
    let done = f.wait(&t.id).await;
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(
        (done.exit_code, done.signal.as_deref()),
        (None, Some("SIGTERM"))
    );
    assert_eq!(status_line(&done), "[status: completed, exit code: 0]");
    f.exec.dispose().await;
}
