//! No process outlives the executor: after `dispose` returns, every process
//! of running background pipelines and subshells, and of in-flight
//! foreground calls, is gone (checked in /proc right away, no waiting).

mod common;

use common::{assert_error, assert_gone, ok_text, pids, read_fifo, Harness};
use dsh_protocol::codes;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispose_kills_running_background_pipelines() {
    let h = Harness::new(|_| {});
    let mut groups = Vec::new();
    for (n, shape) in [
        // A pipeline and a plain background job.
        "sleep 300 | sleep 300 & a=$!; sleep 300 & echo $$ $a $! > {fifo}; wait",
        // A subshell with its own children, ignoring SIGTERM (SIGKILL follows).
        "( trap '' TERM; sleep 300 & echo $$ $BASHPID $! > {fifo}; wait ); wait",
        // A pipeline in the foreground of the task's shell.
        "echo $$ > {fifo}; sleep 300 | cat | cat",
    ]
    .into_iter()
    .enumerate()
    {
        let fifo = h.fifo(&format!("pids-{n}"));
        let command = shape.replace("{fifo}", &fifo.display().to_string());
        h.start(&command, None).await;
        groups.push(pids(&read_fifo(&fifo).await));
    }
    for group in &groups {
        assert!(
            group.iter().all(|p| common::is_alive(*p)),
            "{group:?} running"
        );
    }
    h.dispose().await;
    for group in &groups {
        // The task's shell leads its own process group.
        assert_gone(group[0], group);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispose_kills_an_in_flight_foreground_call() {
    let h = Harness::new(|_| {});
    let fifo = h.fifo("pids");
    let exec = h.execution(
        "bash",
        &json!({
            "command": format!("sleep 300 | sleep 300 & echo $$ $! > {}; wait", fifo.display()),
            "description": "Sleep",
        }),
    );
    let call = tokio::spawn(h.registry.execute(&exec.call, exec.env));
    let running = pids(&read_fifo(&fifo).await);
    h.dispose().await;
    assert_gone(running[0], &running);
    // The call ends as aborted: shutting down interrupted it.
    let r = tokio::time::timeout(common::DEADLINE, call)
        .await
        .expect("call ends after dispose")
        .expect("call task");
    assert_error(&r, codes::ABORTED, "Error: command aborted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_call_leaves_no_process() {
    let h = Harness::new(|_| {});
    let fifo = h.fifo("pids");
    let exec = h.execution(
        "bash",
        &json!({
            "command": format!("sleep 300 | sleep 300 & echo $$ $! > {}; wait", fifo.display()),
            "description": "Sleep",
            "timeoutMs": 2000,
        }),
    );
    let call = tokio::spawn(h.registry.execute(&exec.call, exec.env));
    let running = pids(&read_fifo(&fifo).await);
    let r = tokio::time::timeout(common::DEADLINE, call)
        .await
        .expect("timed out call returns")
        .expect("call task");
    assert_eq!(
        ok_text(&r),
        "(no output)\n[timed out after 2000ms]\n[killed by signal: SIGTERM]"
    );
    // The result is returned once the process group is gone.
    assert_gone(running[0], &running);
    h.dispose().await;
}
