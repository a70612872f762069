//! Background tasks through the tools: `bash` with `run_in_background`,
//! incremental `bash_output` polls and `bash_kill` (§10.1–§10.3).

mod common;

use std::time::{Duration, Instant};

use common::{assert_gone, ok_text, pids, read_fifo, write_fifo, Harness, DEADLINE};
use dsh_bash::{BashExecutor, TaskStatus};
use serde_json::json;

/// Polls `bash_output` of `id` until the text differs from `idle`; fails
/// after [`DEADLINE`].
async fn poll_until_changed(h: &Harness, id: &str, idle: &str) -> String {
    let start = Instant::now();
    loop {
        let text = h.output(id).await;
        if text != idle {
            return text;
        }
        assert!(start.elapsed() < DEADLINE, "task {id} stayed at {idle:?}");
        // Polling interval, not synchronisation: the loop ends on a state change.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_poll_complete_sequence() {
    let h = Harness::new(|_| {});
    let gate = h.fifo("gate");
    let id = h
        .start(
            &format!("echo first; read x < {}; echo second", gate.display()),
            None,
        )
        .await;
    assert_eq!(id, "bash-1");
    let first = poll_until_changed(&h, &id, "(no new output)\n[status: running]").await;
    assert_eq!(first, "first\n\n[status: running]");
    assert_eq!(h.output(&id).await, "(no new output)\n[status: running]");
    write_fifo(&gate, "go\n").await;
    h.wait(&id).await;
    assert_eq!(
        h.output(&id).await,
        "second\n\n[status: completed, exit code: 0]"
    );
    assert_eq!(
        h.output(&id).await,
        "(no new output)\n[status: completed, exit code: 0]"
    );
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_reads_across_many_polls_never_repeat() {
    let h = Harness::new(|_| {});
    // One gate file per line, not a FIFO reused 25 times: a FIFO drops what
    // was written to it when its reader closes at the wrong moment (a
    // reader that saw EOF from the previous writer), and the task hangs.
    let gates = h.tmp.path().join("gates");
    std::fs::create_dir(&gates).unwrap();
    let id = h
        .start(
            &format!(
                "for i in $(seq 1 25); do echo line$i; echo err$i >&2; until [ -e {}/go$i ]; do sleep 0.005; done; done",
                gates.display()
            ),
            None,
        )
        .await;
    let idle = "(no new output)\n[status: running]";
    for i in 1..=25 {
        // stdout and stderr may arrive in separate reads; collect both.
        let (want_out, want_err) = (format!("line{i}\n"), format!("err{i}\n"));
        let (mut out, mut err) = (String::new(), String::new());
        while out != want_out || err != want_err {
            let text = poll_until_changed(&h, &id, idle).await;
            let delta = text
                .strip_suffix("\n[status: running]")
                .unwrap_or_else(|| panic!("poll {i}: {text:?}"));
            let (o, e) = match delta.split_once("[stderr]\n") {
                Some((o, e)) => (o, e),
                None => (delta, ""),
            };
            out.push_str(o);
            err.push_str(e);
            assert!(
                want_out.starts_with(&out) && want_err.starts_with(&err),
                "poll {i} repeated or lost bytes: {out:?} {err:?}"
            );
        }
        std::fs::write(gates.join(format!("go{i}")), "").unwrap();
    }
    let done = h.wait(&id).await;
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(
        h.output(&id).await,
        "(no new output)\n[status: completed, exit code: 0]"
    );
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_and_exit_code_of_a_finished_task() {
    let h = Harness::new(|_| {});
    let id = h.start("echo out; echo err >&2; exit 5", None).await;
    h.wait(&id).await;
    assert_eq!(
        h.output(&id).await,
        "out\n[stderr]\nerr\n\n[status: completed, exit code: 5]"
    );
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_output_points_to_the_spill_file() {
    const CAP: usize = 50;
    let h = Harness::new(|c| c.max_output_bytes = CAP);
    let id = h.start("seq 1 1000", None).await;
    h.wait(&id).await;
    let full: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    let text = h.output(&id).await;
    let (delta, rest) = text
        .split_once("\n[some output was dropped from memory; full output: ")
        .unwrap_or_else(|| panic!("no lossy note: {text:?}"));
    assert_eq!(delta, &full[full.len() - CAP..]);
    let path = rest
        .strip_suffix("]\n[status: completed, exit code: 0]")
        .unwrap_or_else(|| panic!("status after the note: {rest:?}"));
    assert!(!path.contains(", "), "only stdout spilled: {path}");
    assert_eq!(std::fs::read_to_string(path).expect("spill file"), full);
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_tasks_keep_their_output_apart() {
    let h = Harness::new(|_| {});
    let mut ids = Vec::new();
    for n in 1..=4 {
        ids.push(
            h.start(&format!("for i in 1 2 3; do echo task{n}-$i; done"), None)
                .await,
        );
    }
    assert_eq!(ids, ["bash-1", "bash-2", "bash-3", "bash-4"]);
    for (n, id) in ids.iter().enumerate() {
        h.wait(id).await;
        let n = n + 1;
        assert_eq!(
            h.output(id).await,
            format!("task{n}-1\ntask{n}-2\ntask{n}-3\n\n[status: completed, exit code: 0]")
        );
    }
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_then_output_then_kill_again() {
    let h = Harness::new(|_| {});
    let fifo = h.fifo("pids");
    let id = h
        .start(
            &format!(
                "sleep 300 | sleep 300 & echo $$ $! > {}; wait",
                fifo.display()
            ),
            None,
        )
        .await;
    let running = pids(&read_fifo(&fifo).await);
    let r = h.call("bash_kill", json!({"task_id": id})).await;
    assert_eq!(ok_text(&r), "killed background task bash-1");
    // Killed at once, before the process is gone.
    assert_eq!(h.exec.get(&id).expect("task").status, TaskStatus::Killed);
    h.wait(&id).await;
    assert_gone(running[0], &running);
    assert_eq!(
        h.output(&id).await,
        "(no new output)\n[status: killed by SIGTERM]"
    );
    let r = h.call("bash_kill", json!({"task_id": id})).await;
    assert_eq!(ok_text(&r), "task bash-1 had already finished");
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_escalates_to_sigkill_when_term_is_ignored() {
    let h = Harness::new(|_| {});
    let fifo = h.fifo("pid");
    let id = h
        .start(
            &format!(
                "trap '' TERM; echo $$ > {}; while :; do sleep 1; done",
                fifo.display()
            ),
            None,
        )
        .await;
    let running = pids(&read_fifo(&fifo).await);
    let r = h.call("bash_kill", json!({"task_id": id})).await;
    assert_eq!(ok_text(&r), "killed background task bash-1");
    h.wait(&id).await;
    assert_gone(running[0], &running);
    let text = h.output(&id).await;
    assert!(
        text.ends_with("\n[status: killed by SIGKILL]"),
        "SIGTERM ignored, SIGKILL after the grace: {text:?}"
    );
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_finished_task_reports_it() {
    let h = Harness::new(|_| {});
    let id = h.start("true", None).await;
    h.wait(&id).await;
    let r = h.call("bash_kill", json!({"task_id": id})).await;
    assert_eq!(ok_text(&r), "task bash-1 had already finished");
    assert_eq!(
        h.output(&id).await,
        "(no new output)\n[status: completed, exit code: 0]"
    );
    h.dispose().await;
}

/// The step token is attached to background tasks: cancelling it later kills
/// the task (reference §10.1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_starting_call_token_kills_the_task() {
    let h = Harness::new(|_| {});
    let exec = h.execution(
        "bash",
        &json!({"command": "sleep 300", "description": "Sleep", "run_in_background": true}),
    );
    let step = exec.env.cancel.clone();
    let r = h.execute(exec).await;
    assert_eq!(ok_text(&r), "started background task bash-1");
    assert_eq!(
        h.output("bash-1").await,
        "(no new output)\n[status: running]"
    );
    step.cancel();
    let done = h.wait("bash-1").await;
    assert_eq!(done.status, TaskStatus::Killed);
    assert_eq!(
        h.output("bash-1").await,
        "(no new output)\n[status: killed by SIGTERM]"
    );
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_tasks_have_no_timeout() {
    let h = Harness::new(|c| c.timeout_ms = 50);
    let gate = h.fifo("gate");
    let id = h
        .start(&format!("read x < {}; echo released", gate.display()), None)
        .await;
    // A foreground run in between shows the default timeout is in force.
    assert_eq!(
        ok_text(&h.bash("sleep 60").await),
        "(no output)\n[timed out after 50ms]\n[killed by signal: SIGTERM]"
    );
    assert_eq!(h.output(&id).await, "(no new output)\n[status: running]");
    write_fifo(&gate, "go\n").await;
    h.wait(&id).await;
    assert_eq!(
        h.output(&id).await,
        "released\n\n[status: completed, exit code: 0]"
    );
    h.dispose().await;
}
