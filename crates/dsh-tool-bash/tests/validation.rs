//! Argument validation and value checks (§10.1, §10.2), infrastructure
//! failures (bad workdir, disposed executor) and aborting a running call.

mod common;

use common::{assert_error, assert_gone, ok_text, pids, read_fifo, Harness};
use dsh_bash::BashExecutor;
use dsh_tools::{ErrorCode, ToolContext};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_violations_are_invalid_args() {
    let h = Harness::new(|_| {});
    let r = h.call("bash", json!({"description": "No command"})).await;
    assert_error(
        &r,
        "INVALID_ARGS",
        "Error: invalid arguments: missing required property \"command\"",
    );
    let r = h.call("bash", json!({"command": "true"})).await;
    assert_error(
        &r,
        "INVALID_ARGS",
        "Error: invalid arguments: missing required property \"description\"",
    );
    let r = h
        .call("bash", json!({"command": 5, "description": "Number"}))
        .await;
    assert!(r.is_error);
    assert_eq!(r.code(), Some("INVALID_ARGS"));
    assert!(r.text().contains("command"), "{}", r.text());
    let r = h.call("bash_output", json!({})).await;
    assert_error(
        &r,
        "INVALID_ARGS",
        "Error: invalid arguments: missing required property \"task_id\"",
    );
    let r = h.call_raw("bash", "{\"command\": ").await;
    assert!(r.is_error);
    assert_eq!(r.code(), Some("INVALID_JSON"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn value_checks_are_violations_of_the_argument_type() {
    let h = Harness::new(|_| {});
    let r = h
        .call("bash", json!({"command": "", "description": "Blank"}))
        .await;
    assert_error(
        &r,
        "INVALID_ARGS",
        "Error: invalid arguments: \"command\" must be at least 1 character long",
    );
    // Every violation at once, in spec order, listed for the model.
    let r = h
        .call(
            "bash",
            json!({"command": "", "description": "", "timeoutMs": -1}),
        )
        .await;
    assert_eq!(r.code(), Some("INVALID_ARGS"));
    let failure = r.failure.as_ref().unwrap();
    assert_eq!(
        failure.violations,
        [
            "\"command\" must be at least 1 character long",
            "\"description\" must be at least 1 character long",
            "\"timeoutMs\" must be greater than 0",
        ]
    );
    for timeout in [json!(-1), json!(0), json!(-0.5)] {
        let r = h
            .call(
                "bash",
                json!({"command": "true", "description": "T", "timeoutMs": timeout}),
            )
            .await;
        assert_error(
            &r,
            "INVALID_ARGS",
            "Error: invalid arguments: \"timeoutMs\" must be greater than 0",
        );
    }
    // Nothing ran: no background task was created by any of these.
    assert!(h.exec.list().is_empty());
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn near_miss_key_adds_a_note_and_is_ignored() {
    let h = Harness::new(|_| {});
    let r = h
        .call(
            "bash",
            json!({"command": "echo hi", "description": "Say hi", "timeout_ms": 5}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    let texts: Vec<&str> = r.content.iter().filter_map(|b| b.as_text()).collect();
    assert_eq!(
        texts,
        [
            "hi\n",
            "note: argument \"timeout_ms\" is not a parameter of bash and was ignored; did you mean \"timeoutMs\"?"
        ]
    );
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_workdir_is_a_clear_error_result() {
    let h = Harness::new(|_| {});
    let missing = h.tmp.path().join("does-not-exist");
    let r = h
        .call(
            "bash",
            json!({"command": "pwd", "description": "Print dir", "workdir": missing}),
        )
        .await;
    assert!(r.is_error);
    assert_eq!(r.code(), Some("BAD_WORKDIR"));
    let text = r.text();
    assert!(
        text.starts_with(&format!(
            "Error: working directory {} is not usable: ",
            missing.display()
        )),
        "{text}"
    );
    assert!(text.contains("ENOENT"), "{text}");
    assert!(
        text.ends_with("pass an existing directory as workdir"),
        "{text}"
    );

    // A file is not a directory; background starts fail the same way.
    let file = h.tmp.path().join("file");
    std::fs::write(&file, "x").expect("write file");
    let r = h
        .call(
            "bash",
            json!({"command": "pwd", "description": "Dir", "workdir": file, "run_in_background": true}),
        )
        .await;
    assert!(r.is_error);
    assert_eq!(r.code(), Some("BAD_WORKDIR"));
    assert!(
        r.text().contains(&file.display().to_string()),
        "{}",
        r.text()
    );
    assert!(h.exec.list().is_empty(), "no task was created");
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disposed_executor_is_an_error_result() {
    let h = Harness::new(|_| {});
    h.dispose().await;
    let r = h.bash("echo never").await;
    assert_error(&r, "DISPOSED", "Error: bash executor is disposed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_before_the_call_runs_nothing() {
    let h = Harness::new(|_| {});
    let marker = h.tmp.path().join("ran");
    let exec = h.execution(
        "bash",
        &json!({"command": format!("touch {}", marker.display()), "description": "Touch"}),
    );
    exec.env.cancel.cancel();
    let r = h.execute(exec).await;
    assert!(r.is_error);
    assert_eq!(r.code(), Some("ABORTED"));
    h.dispose().await;
    assert!(!marker.exists(), "the command never ran");
}

/// Cancelling the execution's token while the command runs: the registry
/// answers `ABORTED` at once and the process group is killed (gone once
/// the executor's disposal has reaped it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_a_running_call_through_the_registry() {
    let h = Harness::new(|_| {});
    let fifo = h.fifo("pids");
    let exec = h.execution(
        "bash",
        &json!({
            "command": format!("sleep 60 & echo $$ $! > {}; wait", fifo.display()),
            "description": "Sleep",
        }),
    );
    let cancel = exec.env.cancel.clone();
    let call = tokio::spawn(h.registry.execute(&exec.call, exec.env));
    let running = pids(&read_fifo(&fifo).await);
    cancel.cancel();
    let r = tokio::time::timeout(common::DEADLINE, call)
        .await
        .expect("aborted call returns")
        .expect("call task");
    assert!(r.is_error);
    assert_eq!(r.code(), Some("ABORTED"));
    // The registry gives a cancelled tool a moment to answer in its own
    // words: bash kills the group and reports the reference's text.
    assert_eq!(r.text(), "Error: command aborted");
    h.dispose().await;
    assert_gone(running[0], &running);
}

/// The tool itself (called directly, without the registry's race) waits for
/// the kill and reports `command aborted`; the processes are gone when it
/// returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bash_tool_reports_command_aborted() {
    let h = Harness::new(|_| {});
    let fifo = h.fifo("pids");
    let tool = h.registry.get("bash").expect("bash registered");
    let cancel = tokio_util::sync::CancellationToken::new();
    let arguments = json!({
        "command": format!("sleep 60 & echo $$ $! > {}; wait", fifo.display()),
        "description": "Sleep",
    })
    .to_string();
    let ctx = ToolContext {
        cancel: cancel.clone(),
        ..ToolContext::detached("call-1", "bash")
    };
    let call = tokio::spawn(tool.call(&arguments, ctx));
    let running = pids(&read_fifo(&fifo).await);
    cancel.cancel();
    let err = tokio::time::timeout(common::DEADLINE, call)
        .await
        .expect("aborted call returns")
        .expect("call task")
        .expect_err("an aborted run is an error");
    assert_eq!(err.code(), "ABORTED");
    assert_eq!(err.message(), "command aborted");
    assert_gone(running[0], &running);
    // The same error through the registry's rendering.
    let r = dsh_tools::error_result("call-1", &err);
    assert_error(&r, "ABORTED", "Error: command aborted");
    assert_eq!(ok_text(&h.bash("echo still works").await), "still works\n");
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_id_checks() {
    let h = Harness::new(|_| {});
    for tool in ["bash_output", "bash_kill"] {
        let r = h.call(tool, json!({"task_id": ""})).await;
        assert_error(
            &r,
            "INVALID_ARGS",
            "Error: invalid arguments: \"task_id\" must be at least 1 character long",
        );
        let r = h.call(tool, json!({"task_id": "bash-99"})).await;
        assert_error(&r, "UNKNOWN_TASK", "Error: unknown bash task \"bash-99\"");
        let r = h.call(tool, json!({"task_id": "nonsense"})).await;
        assert_error(&r, "UNKNOWN_TASK", "Error: unknown bash task \"nonsense\"");
    }
    h.dispose().await;
}
