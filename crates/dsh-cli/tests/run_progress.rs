//! Issue 36 item 2 through the binary: `dsh run` shows its progress on
//! stderr (a line per tool call and answer without a terminal, the live
//! status line on one; none with `--quiet`), prints what
//! `--output-format` asks on stdout (`text`, one `json` result object,
//! `stream-json` events as `--json` does), and sends prompt words with a
//! piped stdin as one message (stdin fenced after the words), reading
//! stdin only when it is a pipe or a file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use dsh_testkit::cli::{output_within, text, text_reply, Home};
use dsh_testkit::screen::Screen;
use dsh_testkit::{LoopbackServer, ScriptedResponse};
use serde_json::{json, Value};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// How long one run here may take.
const LIMIT: Duration = Duration::from_secs(60);

/// `dsh run ARGS…` in `home` with stdin as given (`None`: empty), bounded.
fn run(home: &Home, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = home.dsh();
    cmd.arg("run").args(args);
    output_within(cmd, stdin, LIMIT)
}

/// The `dsh: step` lines of `stderr`, each call's or step's time (`3.1s`)
/// written `T`.
fn step_lines(stderr: &[u8]) -> Vec<String> {
    text(stderr)
        .lines()
        .filter(|l| l.starts_with("dsh: step ") || l.starts_with("dsh: turn "))
        .map(untimed)
        .collect()
}

/// `line` with the time before its closing parenthesis (`, 3.1s)`)
/// written `T`; unchanged when it has none.
fn untimed(line: &str) -> String {
    let Some(body) = line.strip_suffix("s)") else {
        return line.to_string();
    };
    let Some((head, time)) = body.rsplit_once(", ") else {
        return line.to_string();
    };
    let timed = time.split_once('.').is_some_and(|(s, tenth)| {
        !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) && tenth.len() == 1
    });
    if timed {
        format!("{head}, T)")
    } else {
        line.to_string()
    }
}

/// The text of the one session's first user message.
fn user_message(home: &Home) -> String {
    let message = home.of_type("user/message").remove(0);
    message["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

// ------------------------------------------------------------ progress lines

/// Without a terminal: a line per tool call as it finishes (a real bash
/// call with its exit code, a read, a failed edit) and one for the step
/// that answers, numbered by the turn's model requests; the answer alone
/// on stdout.
#[tokio::test]
async fn each_call_and_the_answer_is_one_stderr_line_without_a_terminal() {
    let server = LoopbackServer::start([
        tool_step("c1", "read", json!({"file_path": "a.txt"})),
        tool_step(
            "c2",
            "bash",
            json!({"command": "echo out; exit 3", "description": "fail on purpose"}),
        ),
        tool_step(
            "c3",
            "edit",
            json!({"file_path": "missing.txt", "old_string": "a", "new_string": "b"}),
        ),
        text_reply("done"),
    ])
    .await
    .unwrap();
    let home = Home::new(DSH);
    std::fs::write(home.path().join("a.txt"), "hello\n").unwrap();
    let mut cmd = home.dsh();
    cmd.env("DEEPSEEK_API_KEY", "sk-test")
        .env("DEEPSEEK_BASE_URL", server.base_url())
        .args(["run", "do", "it"]);
    let out = tokio::task::spawn_blocking(move || output_within(cmd, None, LIMIT))
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "done\n");
    assert_eq!(
        step_lines(&out.stderr),
        [
            "dsh: step 1 · read a.txt (ok, T)",
            "dsh: step 2 · bash echo out; exit 3 (exit 3, T)",
            "dsh: step 3 · edit missing.txt (error, T)",
            "dsh: step 4 · answered (2 tokens, T)",
        ],
        "{}",
        text(&out.stderr)
    );
    server.shutdown().await;
}

/// The offline echo model: a bash call that exits 0, and an answer whose
/// tokens are estimated (the echo model reports none); the time is the
/// command's (a `sleep 0.3` takes at least 0.3 s).
#[test]
fn a_bash_call_says_exit_0_and_its_time() {
    let home = Home::new(DSH);
    let out = run(&home, &["run sleep 0.3"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("dsh: step")).collect();
    assert_eq!(lines.len(), 2, "{err}");
    let (head, time) = lines[0].rsplit_once(", ").unwrap();
    assert_eq!(head, "dsh: step 1 · bash sleep 0.3 (exit 0", "{err}");
    let secs: f64 = time.strip_suffix("s)").unwrap().parse().unwrap();
    assert!((0.3..30.0).contains(&secs), "{err}");
    // "The bash tool returned:\n(no output)": 35 characters, ~9 tokens.
    assert_eq!(untimed(lines[1]), "dsh: step 2 · answered (~9 tokens, T)");
}

/// `--quiet` (`-q`): no progress at all; the answer still on stdout.
#[test]
fn quiet_silences_the_progress() {
    for flag in ["--quiet", "-q"] {
        let home = Home::new(DSH);
        let out = run(&home, &[flag, "run true"], None);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "The bash tool returned:\n(no output)\n");
        assert_eq!(text(&out.stderr), "", "{flag}");
    }
}

/// A background job the run waits for is said once, and the wake-up turn
/// its notice starts numbers its lines with its turn.
#[test]
fn the_wait_for_jobs_and_the_wake_up_turn_are_told() {
    let home = Home::new(DSH);
    let out = run(
        &home,
        &[r#"call bash {"command":"sleep 0.5","description":"bg","run_in_background":true}"#],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let lines = step_lines(&out.stderr);
    assert_eq!(
        lines[0], "dsh: step 1 · bash sleep 0.5 (started bash-1, T)",
        "{err}"
    );
    // "The bash tool returned:\nstarted background task bash-1": 54
    // characters, ~14 tokens.
    assert_eq!(lines[1], "dsh: step 2 · answered (~14 tokens, T)", "{err}");
    assert!(
        err.contains("dsh: waiting for 1 background job (at most 10m)\n"),
        "{err}"
    );
    assert!(
        lines[2..]
            .iter()
            .any(|l| l.starts_with("dsh: turn 2 · step 1 · ")),
        "{err}"
    );
}

// ------------------------------------------------------------ output formats

/// `--output-format json`: one object at the end, Claude Code's shape,
/// with the provider's usage.
#[tokio::test]
async fn json_is_one_result_object() {
    let server = LoopbackServer::start([text_reply("pong")]).await.unwrap();
    let home = Home::new(DSH);
    let mut cmd = home.dsh();
    cmd.env("DEEPSEEK_API_KEY", "sk-test")
        .env("DEEPSEEK_BASE_URL", server.base_url())
        .args(["run", "--output-format", "json", "ping"]);
    let out = tokio::task::spawn_blocking(move || output_within(cmd, None, LIMIT))
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "pong");
    assert_eq!(result["session_id"], home.only_session());
    assert_eq!(result["num_turns"], 1);
    assert!(result["duration_ms"].as_u64().is_some(), "{result}");
    assert_eq!(
        result["usage"],
        json!({"input_tokens": 11, "output_tokens": 2, "cache_read_input_tokens": 0})
    );
    assert!(result.get("error").is_none(), "{result}");
    // Progress still goes to stderr.
    assert_eq!(
        step_lines(&out.stderr),
        ["dsh: step 1 · answered (2 tokens, T)"]
    );
    server.shutdown().await;
}

/// A turn that fails: subtype `error`, its code and message, exit 1.
#[tokio::test]
async fn json_reports_an_error_with_its_code() {
    let server = LoopbackServer::start([ScriptedResponse::json(
        401,
        &json!({"error": {"message": "bad key"}}),
    )])
    .await
    .unwrap();
    let home = Home::new(DSH);
    let mut cmd = home.dsh();
    cmd.env("DEEPSEEK_API_KEY", "sk-test")
        .env("DEEPSEEK_BASE_URL", server.base_url())
        .args(["run", "--output-format", "json", "-q", "ping"]);
    let out = tokio::task::spawn_blocking(move || output_within(cmd, None, LIMIT))
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["subtype"], "error", "{result}");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["num_turns"], 1);
    let code = result["error"]["code"].as_str().unwrap();
    assert!(!code.is_empty(), "{result}");
    assert!(
        text(&out.stderr).contains(&format!("[{code}]")),
        "the same error on stderr: {}",
        text(&out.stderr)
    );
    assert!(
        !result["error"]["message"].as_str().unwrap().is_empty(),
        "{result}"
    );
    server.shutdown().await;
}

/// `--output-format stream-json` prints what `--json` prints: every
/// session event as a JSON line (same types in the same order; times and
/// ids differ), and nothing else.
#[test]
fn stream_json_is_json() {
    let types = |args: &[&str]| {
        let home = Home::new(DSH);
        let out = run(&home, args, None);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
            .lines()
            .map(|l| {
                let event: Value = serde_json::from_str(l).unwrap();
                event["type"].as_str().unwrap().to_string()
            })
            .collect::<Vec<_>>()
    };
    let json = types(&["--json", "echo hi"]);
    assert!(json.len() > 10, "{json:?}");
    assert_eq!(json.last().unwrap(), "turn/end");
    assert_eq!(types(&["--output-format", "stream-json", "echo hi"]), json);
    assert_eq!(
        types(&["--json", "--output-format", "stream-json", "echo hi"]),
        json
    );
}

/// `--json` with another explicit format is a usage error; `text` is
/// today's answer.
#[test]
fn json_conflicts_with_another_format() {
    let home = Home::new(DSH);
    for other in ["json", "text"] {
        let out = run(
            &home,
            &["--json", "--output-format", other, "echo hi"],
            None,
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains(&format!(
                "--json is --output-format stream-json; it conflicts with --output-format {other}"
            )),
            "{}",
            text(&out.stderr)
        );
    }
    let out = run(&home, &["--output-format", "text", "echo hi"], None);
    assert_eq!(text(&out.stdout), "The echo tool says: hi\n");
}

// ------------------------------------------------------------ stdin

/// Prompt words and a piped stdin: one message, stdin fenced after the
/// words (the fence longer than the backticks inside).
#[test]
fn piped_stdin_is_appended_to_the_prompt_words() {
    let home = Home::new(DSH);
    let input = "line one\n```rust\nfn x() {}\n```\n";
    let out = run(&home, &["summarise", "this"], Some(input));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        user_message(&home),
        "summarise this\n\n````\nline one\n```rust\nfn x() {}\n```\n````"
    );
    // An empty (or blank) stdin adds nothing.
    let home = Home::new(DSH);
    let out = run(&home, &["echo", "alone"], Some(" \n"));
    assert_eq!(text(&out.stdout), "The echo tool says: alone\n");
    assert_eq!(user_message(&home), "echo alone");
}

/// A regular file on stdin is read like a pipe.
#[test]
fn a_file_on_stdin_is_appended_too() {
    let home = Home::new(DSH);
    let file = home.path().join("input.txt");
    std::fs::write(&file, "from a file\n").unwrap();
    let mut cmd = home.dsh();
    cmd.args(["run", "look"])
        .stdin(Stdio::from(std::fs::File::open(&file).unwrap()));
    let out = output_within(cmd, None, LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(user_message(&home), "look\n\n```\nfrom a file\n```");
}

/// stdin that is not a pipe or a file is not read: `/dev/null` (the
/// testkit's default), and a socket nobody closes (reading it would hang).
#[test]
fn stdin_that_is_no_pipe_or_file_is_ignored() {
    let home = Home::new(DSH);
    let out = run(&home, &["echo", "null"], None);
    assert_eq!(text(&out.stdout), "The echo tool says: null\n");
    assert_eq!(user_message(&home), "echo null");

    let home = Home::new(DSH);
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut cmd = home.dsh();
    cmd.args(["run", "echo", "socket"])
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)));
    let started = Instant::now();
    let out = output_within(cmd, None, LIMIT);
    drop(ours);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(user_message(&home), "echo socket");
    assert!(
        !text(&out.stderr).contains("stdin"),
        "{}",
        text(&out.stderr)
    );
}

/// A pipe that stays open and silent (a stdin inherited from a shell)
/// does not hang the run: after 3 s it goes on with the words alone,
/// saying so.
#[test]
fn a_silent_pipe_is_given_up_after_3s() {
    let home = Home::new(DSH);
    let mut cmd = home.dsh();
    cmd.args(["run", "echo", "waited"]).stdin(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    // Held open, never written.
    let pipe = child.stdin.take().unwrap();
    dsh_testkit::cli::wait_exit(&mut child, LIMIT);
    let took = started.elapsed();
    drop(pipe);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(took >= Duration::from_secs(3), "{took:?}");
    assert_eq!(text(&out.stdout), "The echo tool says: waited\n");
    assert!(
        text(&out.stderr).contains("dsh: nothing came on stdin in 3s; going on without it"),
        "{}",
        text(&out.stderr)
    );
}

// ------------------------------------------------------------ a terminal

/// stderr on a terminal: the status line (cyan spinner and what runs)
/// shows while a slow command runs, and is gone at the end (the cursor
/// shown again); the answer alone on stdout.
#[test]
fn the_status_line_shows_on_a_terminal_and_is_cleared() {
    let home = Home::new(DSH);
    let mut cmd = home.dsh();
    cmd.args(["run", "run sleep 2"])
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR");
    let mut screen = Screen::spawn_stderr(&cmd, 10, 100);
    let shown = screen.wait_for("the status line", |t| {
        t.contains(" running bash: sleep 2 · ") && t.contains("echo · workspace-write")
    });
    let row = shown
        .lines()
        .find(|l| l.contains("running bash"))
        .unwrap()
        .to_string();
    assert!(
        "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏".contains(row.chars().next().unwrap()),
        "a spinner first: {row}"
    );
    // Cyan: the terminal's colour 6.
    assert_eq!(
        format!("{:?}", screen.color_of("running bash")),
        "Some(Idx(6))"
    );
    let code = screen.wait_exit(LIMIT);
    assert_eq!(code, 0);
    assert_eq!(
        screen.text(),
        "",
        "the line is cleared: {:?}",
        screen.text()
    );
    let raw = String::from_utf8_lossy(&screen.raw()).into_owned();
    assert!(raw.contains("\x1b[?25l"), "the cursor hidden while drawing");
    assert!(raw.ends_with("\x1b[?25h"), "and shown at the end: {raw:?}");
    assert_eq!(screen.stdout(), "The bash tool returned:\n(no output)\n");
}

/// The progress lines are for pipes and files: `TERM=dumb` on a terminal
/// gets them too, and no escape codes.
#[test]
fn a_dumb_terminal_gets_lines() {
    let home = Home::new(DSH);
    let mut cmd = home.dsh();
    cmd.args(["run", "run true"]).env("TERM", "dumb");
    let mut screen = Screen::spawn_stderr(&cmd, 10, 100);
    assert_eq!(screen.wait_exit(LIMIT), 0);
    let raw = String::from_utf8_lossy(&screen.raw()).into_owned();
    assert!(!raw.contains('\x1b'), "{raw:?}");
    assert!(screen.text().contains("dsh: step 1 · bash true (exit 0, "));
}

/// A model step that calls `name` with `args` (a JSON object), whole.
fn tool_step(id: &str, name: &str, args: Value) -> ScriptedResponse {
    ScriptedResponse::sse(&[
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":name,"arguments":args.to_string()}}]},"finish_reason":null}]}).to_string(),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}).to_string(),
        "[DONE]".to_string(),
    ])
}
