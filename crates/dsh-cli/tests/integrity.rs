//! Session integrity through the CLI: a resumed log is claimed before
//! anything runs, a torn tail is repaired with a marker, a corrupt line is
//! an error and is kept, dangling tool calls are answered on resume, and
//! the files a log names are kept with it until `dsh session clean`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use dsh_testkit::cli::{self, events, stderr};

/// A private home whose sessions live in `sessions` beside the working
/// directory (`--session-dir sessions`).
struct Home {
    home: cli::Home,
}

impl Home {
    fn new() -> Self {
        Home {
            home: cli::Home::new(env!("CARGO_BIN_EXE_dsh")),
        }
    }

    fn path(&self) -> &Path {
        self.home.path()
    }

    fn sessions(&self) -> PathBuf {
        self.path().join("sessions")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.home.dsh();
        cmd.args(args);
        // `run` and `session clean` take the directory; show/replay a file.
        if args[0] == "run" || args.get(1) == Some(&"clean") {
            cmd.args(["--session-dir", "sessions"]);
        }
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        cli::output_within(self.command(args), None, cli::LIMIT)
    }

    /// Runs one prompt in a new session; returns its id.
    fn new_session(&self, prompt: &str) -> String {
        let out = self.run(&["run", prompt]);
        assert!(out.status.success(), "{}", stderr(&out));
        let log = std::fs::read_dir(self.sessions())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .expect("a session log");
        log.file_stem().unwrap().to_str().unwrap().to_string()
    }

    fn log(&self, id: &str) -> PathBuf {
        self.sessions().join(format!("{id}.jsonl"))
    }
}

const BASH_ECHO: &str = r#"call bash {"command":"echo hi","description":"say hi"}"#;

#[test]
fn a_crash_mid_step_resumes_with_a_repair_marker_and_interrupted_results() {
    let home = Home::new();
    let id = home.new_session(BASH_ECHO);
    let path = home.log(&id);
    // Simulate a kill -9 after the tool call was logged: keep the log up
    // to the `tool/call` event and add half of the next line.
    let text = std::fs::read_to_string(&path).unwrap();
    let keep: Vec<&str> = text
        .lines()
        .take_while(|l| !l.contains("\"type\":\"tool/result\""))
        .collect();
    let torn = r#"{"type":"tool/result","seq":16,"ti"#;
    std::fs::write(&path, format!("{}\n{torn}", keep.join("\n"))).unwrap();

    let out = home.run(&["run", "--resume", &id, "echo again"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("was cut short by a crash and removed"),
        "{err}"
    );
    assert!(err.contains("answered with INTERRUPTED"), "{err}");

    let log = events(&path);
    let marker = &log[keep.len()];
    assert_eq!(marker["type"], "error");
    assert_eq!(marker["data"]["code"], "LOG_REPAIRED");
    let result = &log[keep.len() + 1];
    assert_eq!(result["type"], "tool/result");
    assert_eq!(result["data"]["callId"], "echo-call-1");
    assert_eq!(result["data"]["errorCode"], "INTERRUPTED");
    assert_eq!(result["data"]["isError"], true);
    // The turn the crash left open is closed, after its step.
    assert_eq!(log[keep.len() + 2]["type"], "step/end");
    let end = &log[keep.len() + 3];
    assert_eq!(end["type"], "turn/end");
    assert_eq!(
        end["data"]["reason"],
        serde_json::json!({"kind": "interrupted"})
    );
    assert!(err.contains("turn 1 had no end"), "{err}");
    // seq stays strictly increasing across the repair and the new turn.
    let seqs: Vec<u64> = log.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    assert!(
        log.iter().any(|e| e["type"] == "user/message"
            && e["data"]["content"][0]["text"] == "echo again"),
        "the new turn ran"
    );
    // The cut bytes are kept, privately, beside the log.
    let sidecar = marker["data"]["message"]
        .as_str()
        .unwrap()
        .split("saved to ")
        .nth(1)
        .unwrap()
        .to_string();
    assert_eq!(std::fs::read_to_string(&sidecar).unwrap(), torn);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&sidecar).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // The history replays as a valid request: every call answered.
    let replay = home.run(&["session", "replay", path.to_str().unwrap()]);
    assert!(replay.status.success(), "{}", stderr(&replay));
    let history: serde_json::Value = serde_json::from_slice(&replay.stdout).unwrap();
    let answered = history
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter(|b| b["type"] == "tool-result" && b["toolCallId"] == "echo-call-1")
        .count();
    assert_eq!(answered, 1, "{history}");
}

#[test]
fn a_corrupt_complete_last_line_is_an_error_and_the_log_is_untouched() {
    let home = Home::new();
    let id = home.new_session("echo one");
    let path = home.log(&id);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"type\":\"turn/start\",\"seq\":oops}\n");
    std::fs::write(&path, &text).unwrap();
    let out = home.run(&["run", "--resume", &id, "echo two"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("corrupt session log line"), "{err}");
    assert!(err.contains(&format!("{id}.jsonl:")), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "nothing deleted"
    );
    let show = home.run(&["session", "show", path.to_str().unwrap()]);
    assert_eq!(show.status.code(), Some(2));
}

#[test]
fn a_second_resume_of_a_session_in_use_exits_2_before_running_anything() {
    let home = Home::new();
    let id = home.new_session("echo one");
    let marker = format!("307.{}", std::process::id());
    let mut first = home
        .command(&[
            "run",
            "--resume",
            &id,
            &format!(r#"call bash {{"command":"sleep {marker}","description":"wait"}}"#),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while dsh_testkit::procs::live_with("sleep", &format!("sleep {marker}")).is_empty() {
        assert!(Instant::now() < deadline, "the first run did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let touched = home.path().join("touched");
    let started = Instant::now();
    let second = home.run(&[
        "run",
        "--resume",
        &id,
        &format!(
            r#"call bash {{"command":"touch {}","description":"x"}}"#,
            touched.display()
        ),
    ]);
    let took = started.elapsed();
    let _ = first.kill();
    let _ = first.wait();
    for pid in dsh_testkit::procs::live_with("sleep", &format!("sleep {marker}")) {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    assert_eq!(second.status.code(), Some(2), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("is in use by another dsh process"),
        "{}",
        stderr(&second)
    );
    assert!(!touched.exists(), "the second run ran nothing");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn spill_files_live_with_the_session_until_cleaned() {
    let home = Home::new();
    std::fs::write(
        home.path().join("dsh.toml"),
        "[bash]\nmax_output_bytes = 1000\n",
    )
    .unwrap();
    let id = home.new_session("run seq 1 20000");
    let path = home.log(&id);
    let text = std::fs::read_to_string(&path).unwrap();
    let spill_dir = home.sessions().join(&id).join("spill");
    let spilled: Vec<PathBuf> = std::fs::read_dir(&spill_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(spilled.len(), 1, "{spilled:?}");
    let named = spilled[0].display().to_string();
    assert!(named.starts_with('/'), "recorded paths are absolute");
    assert!(text.contains(&named), "the log names the kept file");
    assert!(std::fs::read_to_string(&spilled[0])
        .unwrap()
        .ends_with("20000\n"));

    let clean = home.run(&["session", "clean", &id]);
    assert!(clean.status.success(), "{}", stderr(&clean));
    assert!(String::from_utf8_lossy(&clean.stdout).contains("removed 1 file(s)"));
    assert!(!spilled[0].exists());
    assert!(path.exists(), "the log stays");
    let show = home.run(&["session", "show", "--timeline", path.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(
        shown.contains(&format!("[{named} was removed (dsh session clean)]")),
        "{shown}"
    );
    let unknown = home.run(&["session", "clean", "s-nope"]);
    assert_eq!(unknown.status.code(), Some(2));
}

#[test]
fn the_freshness_guard_is_kept_in_the_log_and_survives_resume() {
    let home = Home::new();
    let file = home.path().join("notes.txt");
    std::fs::write(&file, "old\n").unwrap();
    let path = file.display().to_string();
    // A fresh session may not replace a file it never read.
    let out = home.run(&[
        "run",
        &format!(r#"call write {{"file_path":"{path}","content":"new\n"}}"#),
    ]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("read it first"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "old\n");
    let id = std::fs::read_dir(home.sessions())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap()
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    // Read it in that session; the observation is an event in the log.
    let out = home.run(&[
        "run",
        "--resume",
        &id,
        &format!(r#"call read {{"file_path":"{path}"}}"#),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let observed = events(&home.log(&id))
        .into_iter()
        .filter(|e| e["type"] == "fs/observed")
        .count();
    assert_eq!(observed, 1);
    // A later process resuming the session may now edit it.
    let out = home.run(&[
        "run",
        "--resume",
        &id,
        &format!(r#"call edit {{"file_path":"{path}","old_string":"old","new_string":"new"}}"#),
    ]);
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(shown.contains("-old\n+new"), "{shown}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");
    // Another process changes it: the guard notices across processes.
    std::fs::write(&file, "theirs\n").unwrap();
    let out = home.run(&[
        "run",
        "--resume",
        &id,
        &format!(r#"call write {{"file_path":"{path}","content":"mine\n"}}"#),
    ]);
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(shown.contains("changed since you read it"), "{shown}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "theirs\n");
}

#[test]
fn a_tool_call_is_on_disk_before_its_body_runs() {
    let home = Home::new();
    // The command counts the tool/call lines of the session log as it runs.
    let sessions = home.sessions();
    let call = serde_json::json!({
        "command": format!("cat {}/*.jsonl | grep -c '\"type\":\"tool/call\"'", sessions.display()),
        "description": "count logged calls",
    });
    let out = home.run(&["run", &format!("call bash {call}")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("returned:\n1\n"),
        "the running call saw itself in the log: {stdout}"
    );
}

/// The session log under `home`, once it holds a `tool/call`.
fn log_with_a_call(home: &Home) -> Option<PathBuf> {
    let log = std::fs::read_dir(home.sessions())
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))?;
    std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("\"type\":\"tool/call\"")
        .then_some(log)
}

#[test]
fn kill_9_mid_turn_then_resume_continues_from_a_closed_valid_history() {
    let home = Home::new();
    // A marker only this test's sleep carries, to find and reap it.
    let marker = format!("sleep 31.{}", std::process::id() % 1000);
    let mut child = home
        .command(&["run", &format!("run {marker}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the call is on disk (it is flushed before the body runs).
    let deadline = Instant::now() + Duration::from_secs(30);
    let log = loop {
        if let Some(p) = log_with_a_call(&home) {
            break p;
        }
        assert!(Instant::now() < deadline, "the call never reached the log");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap(); // SIGKILL: no clean-up runs
    child.wait().unwrap();
    // The orphaned command is the test's to reap.
    let _ = Command::new("pkill").args(["-f", &marker]).status();

    let id = log.file_stem().unwrap().to_str().unwrap().to_string();
    let out = home.run(&["run", "--resume", &id, "echo after the crash"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("after the crash"),
        "the new turn ran"
    );
    let events = events(&log);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let call_at = kinds.iter().position(|k| *k == "tool/call").unwrap();
    assert_eq!(
        &kinds[call_at + 1..call_at + 4],
        ["tool/result", "step/end", "turn/end"],
        "{kinds:?}"
    );
    assert_eq!(events[call_at + 1]["data"]["errorCode"], "INTERRUPTED");
    assert_eq!(events[call_at + 3]["data"]["reason"]["kind"], "interrupted");
    assert_eq!(kinds.iter().filter(|k| **k == "turn/start").count(), 2);
    assert_eq!(kinds.iter().filter(|k| **k == "turn/end").count(), 2);
    // The history replays with every call answered.
    let replay = home.run(&["session", "replay", log.to_str().unwrap()]);
    assert!(replay.status.success(), "{}", stderr(&replay));
    let history: serde_json::Value = serde_json::from_slice(&replay.stdout).unwrap();
    let blocks: Vec<&serde_json::Value> = history
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .collect();
    let calls = blocks.iter().filter(|b| b["type"] == "tool-call").count();
    let results = blocks.iter().filter(|b| b["type"] == "tool-result").count();
    assert_eq!(calls, results, "every call answered once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_then_resume_sends_a_request_the_wire_rules_accept() {
    use dsh_testkit::{LoopbackServer, ScriptedResponse};
    use serde_json::json;
    let marker = format!("sleep 32.{}", std::process::id() % 1000);
    let args = json!({"command": marker, "description": "wait"}).to_string();
    let call = ScriptedResponse::sse(&[
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_k","type":"function","function":{"name":"bash","arguments":args}}]},"finish_reason":null}]}).to_string(),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":5}}).to_string(),
        "[DONE]".to_string(),
    ]);
    let answer = ScriptedResponse::sse(&[
        json!({"choices":[{"index":0,"delta":{"content":"resumed fine"},"finish_reason":null}]}).to_string(),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":3}}).to_string(),
        "[DONE]".to_string(),
    ]);
    let server = LoopbackServer::start([call, answer]).await.unwrap();
    let home = Home::new();
    let config = home.path().join("model.toml");
    std::fs::write(
        &config,
        format!(
            "model = \"deepseek-v4-flash\"\n[deepseek]\napi_key = \"sk-test\"\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let config_arg = config.to_str().unwrap().to_string();
    let mut child = home
        .command(&["run", "start the wait", "--config", &config_arg])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let log = loop {
        if let Some(p) = log_with_a_call(&home) {
            break p;
        }
        assert!(Instant::now() < deadline, "the call never reached the log");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = Command::new("pkill").args(["-f", &marker]).status();

    let id = log.file_stem().unwrap().to_str().unwrap().to_string();
    let out = home.run(&["run", "--resume", &id, "go on", "--config", &config_arg]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "resumed fine\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let body = reqs[1].json();
    let messages = body["messages"].as_array().unwrap();
    // The wire rules: the dangling call is answered (INTERRUPTED) right
    // after it, before the new user message; no orphan tool message.
    let call_at = messages
        .iter()
        .position(|m| m["tool_calls"][0]["id"] == "call_k")
        .expect("the call is in the history");
    let answer = &messages[call_at + 1];
    assert_eq!(answer["role"], "tool");
    assert_eq!(answer["tool_call_id"], "call_k");
    assert!(answer["content"]
        .as_str()
        .unwrap()
        .contains("the session ended"));
    assert_eq!(messages[call_at + 2]["role"], "user");
    assert_eq!(messages.iter().filter(|m| m["role"] == "tool").count(), 1);
}
