//! The real binary against hostile conditions: stop signals during a tool
//! call and during MCP start-up, terminal escape sequences in untrusted
//! text, closed and full stdout, and input that is not UTF-8.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use dsh_testkit::cli::{wait_exit, wait_until, Home};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// Live `sleep` processes whose command line contains `needle` (dsh's own
/// command line holds the marker too).
fn procs_with(needle: &str) -> Vec<i32> {
    dsh_testkit::procs::live_with("sleep", needle)
}

fn send(child: &Child, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
}

/// `dsh run 'run sleep 30.<marker>'`, signalled once its sleep runs.
fn signal_during_a_tool_call(signal: nix::sys::signal::Signal, expected: i32, reason: &str) {
    use nix::sys::signal::Signal;
    let home = Home::new(DSH);
    let marker = format!("30.{}0{:02}", std::process::id(), signal as i32);
    let mut child = home
        .dsh()
        .args(["run", &format!("run sleep {marker}")])
        .spawn()
        .unwrap();
    wait_until("the sleep to start", Duration::from_secs(30), || {
        !procs_with(&format!("sleep {marker}")).is_empty()
    });
    send(&child, signal);
    let code = wait_exit(&mut child, Duration::from_secs(20));
    assert_eq!(code, expected, "{signal:?}");
    wait_until("the sleep to be gone", Duration::from_secs(5), || {
        procs_with(&format!("sleep {marker}")).is_empty()
    });
    let events = home.only_log();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn/end", "{last}");
    assert_eq!(last["data"]["reason"]["kind"], "aborted", "{last}");
    assert_eq!(last["data"]["reason"]["reason"], reason, "{last}");
    let result = events
        .iter()
        .find(|e| e["type"] == "tool/result")
        .expect("the bash call got a result");
    assert_eq!(result["data"]["isError"], true);
    if signal == Signal::SIGQUIT {
        assert!(
            !home.path().join("core").exists(),
            "no core dump from SIGQUIT"
        );
    }
}

#[test]
fn sigterm_during_a_tool_call_aborts_cleanly_and_exits_143() {
    signal_during_a_tool_call(
        nix::sys::signal::Signal::SIGTERM,
        143,
        "terminated (SIGTERM)",
    );
}

#[test]
fn sighup_during_a_tool_call_aborts_cleanly_and_exits_129() {
    signal_during_a_tool_call(nix::sys::signal::Signal::SIGHUP, 129, "hangup (SIGHUP)");
}

#[test]
fn sigquit_during_a_tool_call_aborts_cleanly_and_exits_131() {
    signal_during_a_tool_call(nix::sys::signal::Signal::SIGQUIT, 131, "quit (SIGQUIT)");
}

#[test]
fn sigint_during_a_tool_call_still_exits_130() {
    signal_during_a_tool_call(nix::sys::signal::Signal::SIGINT, 130, "user interrupt");
}

#[test]
fn sigterm_ends_piped_chat_with_the_turn_aborted() {
    let home = Home::new(DSH);
    let marker = format!("30.{}77", std::process::id());
    let mut child = home
        .dsh()
        .arg("chat")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "run sleep {marker}").unwrap();
    wait_until("the sleep to start", Duration::from_secs(30), || {
        !procs_with(&format!("sleep {marker}")).is_empty()
    });
    send(&child, nix::sys::signal::Signal::SIGTERM);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 143);
    drop(stdin);
    wait_until("the sleep to be gone", Duration::from_secs(5), || {
        procs_with(&format!("sleep {marker}")).is_empty()
    });
    let events = home.only_log();
    assert_eq!(events.last().unwrap()["type"], "turn/end");
}

#[test]
fn a_signal_during_mcp_start_up_stops_the_servers() {
    let home = Home::new(DSH);
    let marker = format!("1000.{}", std::process::id());
    // A server that never answers `initialize`: start-up waits on it.
    let mut child = home
        .dsh()
        .args([
            "run",
            "--mcp",
            &format!("hang=sh -c 'exec sleep {marker}'"),
            "hi",
        ])
        .spawn()
        .unwrap();
    wait_until("the MCP server to start", Duration::from_secs(30), || {
        !procs_with(&format!("sleep {marker}")).is_empty()
    });
    let started = Instant::now();
    send(&child, nix::sys::signal::Signal::SIGTERM);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 143);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stopped promptly, not after the 60 s start-up timeout"
    );
    wait_until("the MCP server to be gone", Duration::from_secs(5), || {
        procs_with(&format!("sleep {marker}")).is_empty()
    });
}

/// Every class of terminal control a hostile tool output can carry.
const HOSTILE_PRINTF: &str = r"printf 'A\033]52;c;SGVsbG8=\007B\033]8;;http://x\033\\link\033]8;;\033\\C\033]0;title\007D\rE\302\233F\177G\033[2JH\n'";

fn assert_no_controls(bytes: &[u8], what: &str) {
    let text = String::from_utf8_lossy(bytes);
    for (c, name) in [
        ('\u{1b}', "ESC"),
        ('\u{7}', "BEL"),
        ('\r', "CR"),
        ('\u{7f}', "DEL"),
        ('\u{9b}', "CSI (C1)"),
    ] {
        assert!(
            !text.contains(c),
            "{what}: a raw {name} reached the output:\n{text:?}"
        );
    }
}

#[test]
fn escape_sequences_from_tools_never_reach_the_terminal() {
    let home = Home::new(DSH);
    let call = format!(
        "call bash {}",
        serde_json::json!({"command": HOSTILE_PRINTF, "description": "hostile"})
    );
    let out = home.dsh().args(["run", &call]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_controls(&out.stdout, "run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(r"A\x1b]52;c;SGVsbG8=\x07B"), "{text}");
    assert!(text.contains(r"D\rE\u{9b}F\x7fG\x1b[2JH"), "{text}");

    // The same session shown from its log.
    let log = std::fs::read_dir(home.sessions())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let out = home
        .dsh()
        .args(["session", "show", log.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_no_controls(&out.stdout, "session show");
    assert!(String::from_utf8_lossy(&out.stdout).contains("]52;c;SGVsbG8="));

    // Chat (piped): the printer shows the tool call and its result.
    let mut child = home
        .dsh()
        .arg("chat")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{call}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_controls(&out.stdout, "chat");
    assert!(String::from_utf8_lossy(&out.stdout).contains(r"\x1b]0;title"));
    // JSON output escapes them too (as JSON escapes).
    let out = home.dsh().args(["run", "--json", &call]).output().unwrap();
    assert_no_controls(&out.stdout, "run --json");
}

#[test]
fn a_full_disk_is_an_error_and_a_closed_pipe_is_quiet() {
    let home = Home::new(DSH);
    let spec = home.path().join("spec.json");
    std::fs::write(&spec, r#"{"x": {"type": "string"}}"#).unwrap();
    let commands: Vec<Vec<String>> = vec![
        vec!["tools".into(), "list".into()],
        vec!["mcp".into(), "list".into()],
        vec!["run".into(), "echo hi".into()],
        vec!["run".into(), "--json".into(), "echo hi".into()],
        vec![
            "schema".into(),
            "json-schema".into(),
            "--spec".into(),
            spec.display().to_string(),
        ],
    ];
    for args in &commands {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = home.dsh().args(args).stdout(full).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?} on a full disk: {stderr}"
        );
        assert!(stderr.contains("cannot write output"), "{args:?}: {stderr}");
    }
    for args in &commands {
        let mut child = home.dsh().args(args).spawn().unwrap();
        drop(child.stdout.take()); // the reader is gone before dsh writes
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?} into a closed pipe: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("cannot write"), "{args:?}: {stderr}");
    }
    // session list / show as well.
    home.dsh().args(["run", "echo hi"]).output().unwrap();
    // The log, not the session's data directory beside it (checkpoints).
    let log = home.session_logs().remove(0);
    for args in [
        vec!["session".to_string(), "list".into()],
        vec!["session".into(), "show".into(), log.display().to_string()],
        vec!["session".into(), "replay".into(), log.display().to_string()],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = home.dsh().args(&args).stdout(full).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
    }
}

#[test]
fn piped_chat_skips_a_line_that_is_not_utf8_and_goes_on() {
    let home = Home::new(DSH);
    let mut child = home
        .dsh()
        .arg("chat")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"echo first\n\xff\xfe broken\necho second\n")
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("line 2 is not valid UTF-8"), "{stderr}");
    assert!(stdout.contains("The echo tool says: first"), "{stdout}");
    assert!(stdout.contains("The echo tool says: second"), "{stdout}");
}
