//! Issue 33 through the binary, `dsh run`'s end: a FIFO beside a file
//! blocks no tool call, and a stop signal ends dsh in a few seconds even
//! while a command ignores it (item 1);
//! the background jobs a turn started are waited for, with the wake-up
//! turns they cause, for at most `--wait-jobs`, and whatever still runs is
//! stopped with one line per job (item 6); the model is offered `job_*`
//! only, while the old `bash_output` / `bash_kill` names still work
//! (item 20).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use dsh_testkit::cli::{text, wait_exit, wait_until, Home};
use serde_json::Value;

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// Live `sleep` processes whose command line contains `needle`.
fn sleeps_with(needle: &str) -> Vec<i32> {
    dsh_testkit::procs::live_with("sleep", needle)
}

/// A marker unique to this test process and `tag`, for `sleep` arguments.
fn marker(tag: u32) -> String {
    format!("100.{}{tag}", std::process::id())
}

// ---------------------------------------------------------------- item 1

/// A repository whose `sub/AGENTS.md` is a FIFO: reading `sub/file.txt`
/// makes dsh look for the instruction file next to it. That open used to
/// block for ever (only SIGKILL ended dsh); now the FIFO is passed over
/// without opening it, the read answers and the run completes. (That an
/// abort and the shutdown never wait for a tool stuck in a system call is
/// pinned in the composition library: `crates/dsh/tests/stuck_tool.rs`.)
#[test]
fn a_fifo_named_agents_md_beside_a_read_file_blocks_nothing() {
    let home = Home::new(DSH);
    std::fs::create_dir(home.path().join("sub")).unwrap();
    std::fs::write(home.path().join("sub/file.txt"), "x\n").unwrap();
    nix::unistd::mkfifo(
        &home.path().join("sub/AGENTS.md"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let (out, took) = home.run(
        &["run", r#"call read {"file_path":"sub/file.txt"}"#],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(took < Duration::from_secs(10), "the run took {took:?}");
    let logs = home.logs();
    let result = logs[0]
        .iter()
        .find(|e| e["type"] == "tool/result")
        .expect("the read is answered");
    assert_eq!(result["data"]["isError"], false, "{result}");
    assert!(result.to_string().contains("x"), "{result}");
}

/// A foreground command that ignores SIGTERM and SIGINT: a SIGTERM to dsh
/// still ends it within a few seconds (143), the command's process group
/// with it.
#[test]
fn sigterm_ends_dsh_quickly_while_a_command_ignores_signals() {
    let home = Home::new(DSH);
    let mark = marker(1);
    let call = format!(
        r#"call bash {{"command":"trap '' TERM INT HUP; sleep {mark}","description":"stubborn"}}"#
    );
    let mut child = home.dsh().args(["run", &call]).spawn().unwrap();
    let pid = child.id();
    wait_until("the stubborn sleep", Duration::from_secs(30), || {
        !sleeps_with(&mark).is_empty()
    });
    let signalled = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let code = wait_exit(&mut child, Duration::from_secs(20));
    let took = signalled.elapsed();
    let out = child.wait_with_output().unwrap();
    assert_eq!(code, 143, "{}", text(&out.stderr));
    assert!(
        took < Duration::from_secs(5),
        "SIGTERM took {took:?} to end dsh"
    );
    wait_until("no stubborn sleep left", Duration::from_secs(5), || {
        sleeps_with(&mark).is_empty()
    });
}

// ---------------------------------------------------------------- item 6

/// The issue's example: the background command finishes (its file
/// exists), then `dsh run` exits 0, after the wake-up turn its notice
/// started.
#[test]
fn run_waits_for_a_background_job_and_its_wake_up_turn() {
    let home = Home::new(DSH);
    let (out, _) = home.run(
        &["run", r#"call bash {"command":"sleep 1; touch bgdone","description":"bg","run_in_background":true}"#],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        home.path().join("bgdone").exists(),
        "the job ran to its end"
    );
    assert!(
        !text(&out.stderr).contains("stopped job"),
        "{}",
        text(&out.stderr)
    );
    let logs = home.logs();
    let turns: Vec<&Value> = logs[0].iter().filter(|e| e["type"] == "turn/end").collect();
    assert_eq!(turns.len(), 2, "the user's turn and the wake-up: {turns:?}");
    assert!(
        turns
            .iter()
            .all(|t| t["data"]["reason"]["kind"] == "completed"),
        "{turns:?}"
    );
    let notice = logs[0].iter().any(|e| {
        e.to_string()
            .contains("background bash task bash-1 finished")
    });
    assert!(notice, "the wake-up turn saw the notice");
}

/// `--wait-jobs 1s`: a job still running then is stopped (its process is
/// gone), one stderr line names it, and the turn's exit code stands.
#[test]
fn run_stops_a_job_still_running_after_wait_jobs() {
    let home = Home::new(DSH);
    let m = marker(1);
    let call = format!(
        r#"call bash {{"command":"sleep {m}","description":"bg","run_in_background":true}}"#
    );
    let (out, took) = home.run(
        &["run", "--wait-jobs", "1s", &call],
        Duration::from_secs(60),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "dsh: stopped job bash-1 (sleep {m}) after waiting 1s"
        )),
        "{stderr}"
    );
    assert!(took >= Duration::from_secs(1), "it waited: {took:?}");
    assert!(
        took < Duration::from_secs(30),
        "it stopped waiting: {took:?}"
    );
    wait_until("the sleep to be gone", Duration::from_secs(5), || {
        sleeps_with(&m).is_empty()
    });
}

/// `--no-wait`: the job is stopped at the end of the turn, with its line.
#[test]
fn run_no_wait_stops_the_jobs_at_the_end_of_the_turn() {
    let home = Home::new(DSH);
    let m = marker(2);
    let call = format!(
        r#"call bash {{"command":"sleep {m}","description":"bg","run_in_background":true}}"#
    );
    let (out, took) = home.run(&["run", "--no-wait", &call], Duration::from_secs(60));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "dsh: stopped job bash-1 (sleep {m}) at the end of the turn"
        )),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    wait_until("the sleep to be gone", Duration::from_secs(5), || {
        sleeps_with(&m).is_empty()
    });
}

/// A stop signal while `dsh run` waits for its jobs ends it at once the
/// usual way (143), stopping the job with its line.
#[test]
fn a_signal_while_waiting_for_jobs_stops_them_and_exits_143() {
    let home = Home::new(DSH);
    let m = marker(3);
    let call = format!(
        r#"call bash {{"command":"sleep {m}","description":"bg","run_in_background":true}}"#
    );
    let mut child = home.dsh().args(["run", &call]).spawn().unwrap();
    wait_until("the job to run", Duration::from_secs(30), || {
        !sleeps_with(&m).is_empty()
    });
    // The signal must come while dsh waits for the job: after the turn
    // (whose end is flushed to the log), not while the call that starts
    // the job is still returning.
    wait_until("the turn to end", Duration::from_secs(30), || {
        home.session_logs()
            .iter()
            .any(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains("\"type\":\"turn/end\"")))
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let code = wait_exit(&mut child, Duration::from_secs(10));
    let stderr = text(&child.wait_with_output().unwrap().stderr);
    assert_eq!(code, 143, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "dsh: stopped job bash-1 (sleep {m}): terminated (SIGTERM)"
        )),
        "{stderr}"
    );
    wait_until("the sleep to be gone", Duration::from_secs(5), || {
        sleeps_with(&m).is_empty()
    });
}

/// A duration dsh cannot read is a usage error.
#[test]
fn run_refuses_a_wait_jobs_it_cannot_read() {
    let home = Home::new(DSH);
    for bad in ["10", "5x", "1.5s", "-1s"] {
        let flag = format!("--wait-jobs={bad}");
        let (out, _) = home.run(&["run", &flag, "hi"], Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("--wait-jobs"), "{bad}");
    }
}

/// A background sub-agent finishes its work (its log ends with a
/// completed turn, not "aborted: dsh is shutting down") and its answer
/// reaches the parent as a notice.
#[test]
fn run_waits_for_a_background_subagent() {
    let home = Home::new(DSH);
    let (out, _) = home.run(
        &[
            "run",
            r#"call subagent {"description":"x","prompt":"echo hi","run_in_background":true}"#,
        ],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let logs = home.logs();
    assert_eq!(logs.len(), 2, "the parent's log and the child's");
    let (child, parent): (Vec<_>, Vec<_>) = logs
        .into_iter()
        .partition(|log| log.iter().any(|e| e["type"] == "subagent/start"));
    let child = &child[0];
    let last = child.last().unwrap();
    assert_eq!(last["type"], "turn/end", "{last}");
    assert_eq!(last["data"]["reason"]["kind"], "completed", "{last}");
    assert!(
        parent[0].iter().any(|e| e
            .to_string()
            .contains("background subagent agent-1 (x) finished")),
        "the parent got the answer"
    );
}

// ---------------------------------------------------------------- item 20

/// The result of the one tool call in `log`.
fn tool_result(log: &[Value]) -> &Value {
    log.iter()
        .find(|e| e["type"] == "tool/result")
        .map(|e| &e["data"])
        .expect("a tool result")
}

/// What the model is offered (the request's tools, the system prompt,
/// `dsh tools list`) never names `bash_output` or `bash_kill`, while a
/// call to them still runs, validated against their own schema.
#[test]
fn the_old_bash_job_tools_are_callable_but_not_offered() {
    let home = Home::new(DSH);
    let (out, _) = home.run(
        &["run", r#"call bash_output {"task_id":"bash-9"}"#],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let logs = home.logs();
    let log = &logs[0];
    let tools = log
        .iter()
        .find(|e| e["type"] == "request/tools")
        .expect("the request's tools are logged");
    let names: Vec<&str> = tools["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"job_output") && names.contains(&"job_kill"),
        "{names:?}"
    );
    let system = log
        .iter()
        .find(|e| e["type"] == "request/system")
        .expect("the system prompt is logged");
    for hidden in ["bash_output", "bash_kill"] {
        assert!(!names.contains(&hidden), "{names:?}");
        assert!(
            !tools.to_string().contains(hidden),
            "a description names {hidden}"
        );
        assert!(
            !system.to_string().contains(hidden),
            "the prompt names {hidden}"
        );
    }
    // Run, not unknown: the task is what is missing.
    let result = tool_result(log);
    assert_eq!(result["errorCode"], "UNKNOWN_TASK", "{result}");

    let home = Home::new(DSH);
    let (out, _) = home.run(&["run", r#"call bash_kill {}"#], Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result = tool_result(&home.logs()[0]).clone();
    assert_eq!(result["errorCode"], "INVALID_ARGS", "{result}");
    assert!(
        result.to_string().contains("task_id"),
        "its own schema: {result}"
    );

    for list in [&["tools", "list"][..], &["tools", "list", "--json"][..]] {
        let out = home.dsh().args(list).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(stdout.contains("job_output"), "{stdout}");
        assert!(!stdout.contains("bash_output"), "{stdout}");
        assert!(!stdout.contains("bash_kill"), "{stdout}");
    }

    // A call of an unknown tool is told the tools there are: not the
    // hidden aliases, even for a name close to one of them.
    let home = Home::new(DSH);
    let (out, _) = home.run(&["run", r#"call bash_outpt {}"#], Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result = tool_result(&home.logs()[0]).clone();
    assert_eq!(result["errorCode"], "UNKNOWN_TOOL", "{result}");
    let message = result["errorMessage"].as_str().unwrap();
    assert!(message.contains("\"job_output\""), "{message}");
    assert!(!message.contains("bash_output"), "{message}");
    assert!(!message.contains("bash_kill"), "{message}");
}

/// `dsh run -` (or no prompt words) takes the prompt from stdin; an empty
/// or non-UTF-8 stdin is a usage error (exit 2) saying so.
#[test]
fn the_prompt_can_come_from_stdin() {
    let home = Home::new(DSH);
    for args in [vec!["run", "-"], vec!["run"]] {
        let mut cmd = home.dsh();
        cmd.args(&args);
        let out =
            dsh_testkit::cli::output_within(cmd, Some("echo piped in\n"), Duration::from_secs(60));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stdout), "The echo tool says: piped in\n");
    }
    let mut cmd = home.dsh();
    cmd.args(["run", "-"]);
    let out = dsh_testkit::cli::output_within(cmd, Some(" \n"), Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no prompt: stdin was empty"),
        "{}",
        text(&out.stderr)
    );
    // Words given: stdin is not read (it stays closed here).
    let mut cmd = home.dsh();
    cmd.args(["run", "echo", "words"]);
    let out = dsh_testkit::cli::output_within(cmd, None, Duration::from_secs(60));
    assert_eq!(text(&out.stdout), "The echo tool says: words\n");
}
