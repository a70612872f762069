//! `dsh session show|replay|list`, run as the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// A two-turn log written from the reference's field names.
const LOG: &str = r#"{"type":"user/message","seq":0,"time":1700000000000,"data":{"content":[{"type":"text","text":"list files"}],"source":{"kind":"user"}}}
{"type":"turn/start","seq":1,"time":1700000000001,"data":{"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}}}
{"type":"step/start","seq":2,"time":1700000000002,"data":{"turn":1,"step":1}}
{"type":"assistant/chunk","seq":3,"time":1700000000003,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"Let me"}}}
{"type":"assistant/message","seq":4,"time":1700000000100,"data":{"turn":1,"step":1,"content":[{"type":"text","text":"Let me look."},{"type":"tool-call","id":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"}]}}
{"type":"usage","seq":5,"time":1700000000101,"data":{"turn":1,"step":1,"usage":{"inputTokens":100,"outputTokens":20,"cacheReadTokens":50}}}
{"type":"tool/call","seq":6,"time":1700000000102,"data":{"turn":1,"step":1,"callId":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"}}
{"type":"tool/result","seq":7,"time":1700000000200,"data":{"turn":1,"step":1,"callId":"call_1","content":[{"type":"text","text":"a.ts\nb.ts\n"}],"isError":false}}
{"type":"context/message","seq":8,"time":1700000000201,"data":{"content":[{"type":"text","text":"file changed: a.ts"}],"source":{"kind":"plugin","plugin":"watcher"}}}
{"type":"step/end","seq":9,"time":1700000000202,"data":{"turn":1,"step":1}}
{"type":"step/start","seq":10,"time":1700000000203,"data":{"turn":1,"step":2}}
{"type":"tool/call","seq":11,"time":1700000000204,"data":{"turn":1,"step":2,"callId":"call_2","name":"bash","arguments":"{oops"}}
{"type":"tool/result","seq":12,"time":1700000000205,"data":{"turn":1,"step":2,"callId":"call_2","content":[{"type":"text","text":"Error: invalid JSON"}],"isError":true,"errorCode":"INVALID_JSON"}}
{"type":"usage","seq":13,"time":1700000000206,"data":{"turn":1,"step":2,"usage":{"inputTokens":10,"outputTokens":5,"reasoningTokens":2}}}
{"type":"error","seq":14,"time":1700000000207,"data":{"turn":1,"step":2,"message":"rate limited","code":"RATE_LIMIT"}}
{"type":"step/end","seq":15,"time":1700000000208,"data":{"turn":1,"step":2}}
{"type":"turn/end","seq":16,"time":1700000000209,"data":{"turn":1,"reason":{"kind":"error","message":"rate limited","code":"RATE_LIMIT"}}}
{"type":"plugin/note","seq":17,"time":1700000000210,"data":{"text":"ünïcode"}}
{"type":"user/message","seq":18,"time":1700000001000,"data":{"content":[{"type":"text","text":"again"}],"source":{"kind":"user"}}}
{"type":"turn/start","seq":19,"time":1700000001001,"data":{"turn":2,"trigger":{"kind":"message","source":{"kind":"user"}}}}
{"type":"turn/end","seq":20,"time":1700000001002,"data":{"turn":2,"reason":{"kind":"completed"}}}
"#;

fn dsh(args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(DSH);
    cmd.args(args)
        .env_remove("XDG_DATA_HOME")
        .env_remove("DEEPSEEK_API_KEY");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("dsh runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `dsh session list --session-dir DIR`: its stdout, after checking it
/// exited 0.
fn session_list(dir: &Path) -> String {
    let out = dsh(
        &["session", "list", "--session-dir", dir.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

fn write_log(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn replay_prints_the_derived_history() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "s-1.jsonl", LOG);
    let out = dsh(&["session", "replay", path.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let history: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let expected = serde_json::json!([
        {"role":"user","content":[{"type":"text","text":"list files"}]},
        {"role":"assistant","content":[
            {"type":"text","text":"Let me look."},
            {"type":"tool-call","id":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"}]},
        {"role":"user","content":[{"type":"tool-result","toolCallId":"call_1",
            "content":[{"type":"text","text":"a.ts\nb.ts\n"}],"isError":false}]},
        {"role":"user","content":[
            {"type":"text","text":"<context source=\"plugin\">"},
            {"type":"text","text":"file changed: a.ts"},
            {"type":"text","text":"</context>"}]},
        {"role":"user","content":[{"type":"tool-result","toolCallId":"call_2",
            "content":[{"type":"text","text":"Error: invalid JSON"}],"isError":true}]},
        {"role":"user","content":[{"type":"text","text":"again"}]}
    ]);
    assert_eq!(history, expected);
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn replay_of_a_corrupt_log_exits_2_with_the_line_number() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines: Vec<&str> = LOG.lines().collect();
    lines[3] = "{not json";
    let path = write_log(dir.path(), "bad.jsonl", &(lines.join("\n") + "\n"));
    let out = dsh(&["session", "replay", path.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("bad.jsonl:4:"), "{err}");
    assert!(err.contains("CORRUPT") || err.contains("corrupt"), "{err}");
    assert!(stdout(&out).is_empty());
}

#[test]
fn a_torn_last_line_is_reported_but_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(
        dir.path(),
        "torn.jsonl",
        &format!("{LOG}{{\"type\":\"step/start\",\"se"),
    );
    let out = dsh(&["session", "replay", path.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("torn.jsonl:22: torn last line"),
        "{}",
        stderr(&out)
    );
    let history: Vec<serde_json::Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(history.len(), 6);

    let out = dsh(&["session", "show", path.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("torn last line"));
}

#[test]
fn missing_file_exits_2() {
    let out = dsh(&["session", "show", "/nonexistent/dsh/x.jsonl"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("/nonexistent/dsh/x.jsonl"));
}

#[test]
fn show_prints_the_timeline_and_totals() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "s-1.jsonl", LOG);
    let out = dsh(
        &["session", "show", "--timeline", path.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "session s-1: 21 events, started 2023-11-14 22:13:20",
        "turn 1 start (message from user)",
        "step 1 start",
        r#"tool call bash [call_1] {"command":"ls"}"#,
        "tool result [call_1] is_error=false",
        "tool result [call_2] is_error=true [INVALID_JSON]",
        r#"text "a.ts\nb.ts\n""#,
        "context message (plugin watcher)",
        "error [RATE_LIMIT]: rate limited",
        "turn 1 end: error [RATE_LIMIT]: rate limited",
        "turn 2 end: completed",
        "plugin/note: {\"text\":\"ünïcode\"}",
        "usage: input 100, output 20, cache read 50",
        "totals: 2 turns, 2 steps, 2 tool calls (1 failed), 1 errors, 1 chunks",
        "usage (2 reports): input 110, output 25, cache read 50, cache write 0, reasoning 2",
        "+0.100s",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert!(!text.contains("text-delta"), "chunks hidden by default");
    let out = dsh(
        &["session", "show", "--chunks", path.to_str().unwrap()],
        &[],
    );
    assert!(stdout(&out).contains(r#"chunk text-delta 0 "Let me""#));
}

#[test]
fn list_shows_saved_sessions() {
    let dir = tempfile::tempdir().unwrap();
    write_log(dir.path(), "s-a.jsonl", LOG);
    write_log(
        dir.path(),
        "s-b.jsonl",
        r#"{"type":"step/start","seq":0,"time":1800000000000,"data":{"turn":1,"step":1}}
"#,
    );
    let text = session_list(dir.path());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("ID"));
    assert!(
        lines[0].ends_with("TURNS     TOKENS       COST  TITLE"),
        "{}",
        lines[0]
    );
    // Newest first.
    assert!(lines[1].starts_with("s-b"));
    assert!(lines[1].ends_with('-'));
    assert!(lines[2].starts_with("s-a"));
    assert!(lines[2].contains("2023-11-14 22:13:20"));
    assert!(lines[2].ends_with("  list files"), "{}", lines[2]);
    assert!(lines[2].contains("    2  "), "{}", lines[2]);
    // 100 + 20 + 50 cached, then 10 + 5.
    assert!(lines[2].contains("  185  "), "{}", lines[2]);
}

#[test]
fn list_prefers_a_logged_title_and_cuts_a_long_first_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let long = "refactor ".repeat(12);
    write_log(
        dir.path(),
        "s-long.jsonl",
        &format!(
            "{}\n",
            serde_json::json!({"type":"user/message","seq":0,"time":1700000000000u64,"data":{"content":[{"type":"text","text":long}]}})
        ),
    );
    write_log(
        dir.path(),
        "s-titled.jsonl",
        r#"{"type":"user/message","seq":0,"time":1700000001000,"data":{"content":[{"type":"text","text":"please fix it"}]}}
{"type":"session/title","seq":1,"time":1700000001001,"data":{"title":"Fix the flaky build"}}
"#,
    );
    let text = session_list(dir.path());
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[1].starts_with("s-titled") && lines[1].ends_with("  Fix the flaky build"),
        "{text}"
    );
    let cut: String = long.trim_end().chars().take(60).collect();
    assert!(lines[2].ends_with(&format!("  {cut}…")), "{text}");
}

#[test]
fn list_defaults_to_the_xdg_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("dsh/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    write_log(&sessions, "s-x.jsonl", LOG);
    let out = dsh(&["session", "list"], &[("XDG_DATA_HOME", dir.path())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("s-x"));

    // Fallback: $HOME/.local/share/dsh/sessions.
    let home = tempfile::tempdir().unwrap();
    let sessions = home.path().join(".local/share/dsh/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    write_log(&sessions, "s-home.jsonl", LOG);
    let out = dsh(&["session", "list"], &[("HOME", home.path())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("s-home"));

    // An empty directory is not an error.
    let empty = tempfile::tempdir().unwrap();
    let out = dsh(
        &[
            "session",
            "list",
            "--session-dir",
            empty.path().to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).is_empty());
    assert!(stderr(&out).contains("no sessions"));
}

#[test]
fn a_failed_call_logs_its_violations_and_show_lists_them() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let out = dsh(
        &[
            "run",
            "--model",
            "echo",
            "--session-dir",
            sessions.to_str().unwrap(),
            r#"call echo {"text": 5, "extra": true}"#,
        ],
        &[("XDG_CONFIG_HOME", dir.path())],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a session log");
    // The structured failure is in the log, additive to the reference fields.
    let text = std::fs::read_to_string(&log).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(r#"{"type":"tool/result""#))
        .expect("a tool/result line");
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(v["data"]["isError"], true);
    assert_eq!(v["data"]["errorCode"], "INVALID_ARGS");
    assert_eq!(
        v["data"]["errorMessage"],
        r#"invalid arguments: "text" must be a string"#
    );
    assert_eq!(
        v["data"]["violations"],
        serde_json::json!([r#""text" must be a string"#])
    );
    let shown = dsh(
        &["session", "show", "--timeline", log.to_str().unwrap()],
        &[],
    );
    let s = stdout(&shown);
    assert!(
        s.contains("violations:") && s.contains(r#"- "text" must be a string"#),
        "{s}"
    );
}

// ---------------------------------------------------------------------------
// dsh session stats

/// `dsh ARGS` in `home` (HOME, config and data there), stdin closed.
fn dsh_in(home: &Path, args: &[&str]) -> Output {
    Command::new(DSH)
        .current_dir(home)
        .args(args)
        .env_remove("DEEPSEEK_API_KEY")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("dsh runs")
}

fn stats_json(home: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["session", "stats", "--json"];
    all.extend_from_slice(args);
    let out = dsh_in(home, &all);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn stats_of_a_real_session_count_the_failed_call_and_no_correction_across_turns() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    // bash requires `description`: INVALID_ARGS.
    let out = dsh_in(
        home,
        &[
            "run",
            "--model",
            "echo",
            "--session-dir",
            "sessions",
            r#"call bash {"command":"echo hi"}"#,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a session log");
    let id = log.file_stem().unwrap().to_str().unwrap().to_string();

    let v = stats_json(home, &["--session-dir", "sessions", &id]);
    assert_eq!(v["turns"], 1);
    assert_eq!(v["steps"], 2);
    assert_eq!(v["toolCalls"], 1);
    assert_eq!(v["failures"], 1);
    assert_eq!(v["selfCorrections"], 0);
    assert_eq!(v["selfCorrectionRate"], 0.0);
    assert_eq!(v["meanStepsToRecovery"], serde_json::Value::Null);
    // The echo model reports zero usage and no cache figures.
    assert_eq!(
        v["tokens"],
        serde_json::json!({"input": 0, "output": 0, "cacheRead": null,
            "cacheWrite": null, "reasoning": null})
    );
    assert_eq!(
        v["tools"],
        serde_json::json!({"bash": {
            "calls": 1, "failures": 1,
            "failuresByCode": {"INVALID_ARGS": 1},
            "topViolationPaths": [{"path": "description", "count": 1}],
            "selfCorrections": 0, "selfCorrectionRate": 0.0,
            "meanStepsToRecovery": null
        }})
    );

    // The corrected call in the next turn is not a self-correction.
    let out = dsh_in(
        home,
        &[
            "run",
            "--model",
            "echo",
            "--session-dir",
            "sessions",
            "--resume",
            &id,
            r#"call bash {"command":"echo hi","description":"say hi"}"#,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // By path this time.
    let v = stats_json(home, &[log.to_str().unwrap()]);
    assert_eq!(v["turns"], 2);
    assert_eq!(v["tools"]["bash"]["calls"], 2);
    assert_eq!(v["tools"]["bash"]["failures"], 1);
    assert_eq!(v["tools"]["bash"]["selfCorrections"], 0);
    assert_eq!(v["toolCalls"], 2);

    // The human form: a row per tool and the session line.
    let out = dsh_in(
        home,
        &["session", "stats", "--session-dir", "sessions", &id],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0], "TOOL  CALLS  FAILED  CORRECTED  RATE  MEAN STEPS  TOP CODES",
        "{text}"
    );
    assert_eq!(
        lines[1], "bash      2       1          0    0%           -  INVALID_ARGS 1",
        "{text}"
    );
    assert!(
        text.contains(r#"violations bash: "description" 1"#),
        "{text}"
    );
    assert!(
        text.contains("session: 2 turns, 4 steps, 2 tool calls, 1 failed, 0 self-corrected"),
        "{text}"
    );
    assert!(
        text.contains("tokens: input 0, output 0, cache read -, cache write -, reasoning -"),
        "{text}"
    );
}

/// One turn: bash fails at step 1 (two violations) and succeeds at step 2
/// (corrected after 1 step); read fails at step 1 without a code and
/// succeeds only at step 4 (too late); grep's result was synthesized (no
/// `tool/call`, named from the assistant message) and fails at step 4,
/// then grep succeeds at step 6 (corrected after 2 steps).
const STATS_LOG: &str = r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}}}
{"type":"step/start","seq":1,"time":2,"data":{"turn":1,"step":1}}
{"type":"usage","seq":2,"time":3,"data":{"turn":1,"step":1,"usage":{"inputTokens":100,"outputTokens":20,"cacheReadTokens":50}}}
{"type":"tool/call","seq":3,"time":4,"data":{"turn":1,"step":1,"callId":"a","name":"bash","arguments":"{}"}}
{"type":"tool/result","seq":4,"time":5,"data":{"turn":1,"step":1,"callId":"a","content":[{"type":"text","text":"Error: bad"}],"isError":true,"errorCode":"INVALID_ARGS","errorMessage":"bad","violations":["missing required property \"description\"","\"timeout\" must be an integer"]}}
{"type":"tool/call","seq":5,"time":6,"data":{"turn":1,"step":1,"callId":"b","name":"read","arguments":"{}"}}
{"type":"tool/result","seq":6,"time":7,"data":{"turn":1,"step":1,"callId":"b","content":[{"type":"text","text":"Error: ?"}],"isError":true}}
{"type":"step/end","seq":7,"time":8,"data":{"turn":1,"step":1}}
{"type":"step/start","seq":8,"time":9,"data":{"turn":1,"step":2}}
{"type":"usage","seq":9,"time":10,"data":{"turn":1,"step":2,"usage":{"inputTokens":10,"outputTokens":5,"reasoningTokens":2}}}
{"type":"tool/call","seq":10,"time":11,"data":{"turn":1,"step":2,"callId":"c","name":"bash","arguments":"{}"}}
{"type":"tool/result","seq":11,"time":12,"data":{"turn":1,"step":2,"callId":"c","content":[{"type":"text","text":"ok"}],"isError":false}}
{"type":"step/end","seq":12,"time":13,"data":{"turn":1,"step":2}}
{"type":"assistant/message","seq":13,"time":14,"data":{"turn":1,"step":4,"content":[{"type":"tool-call","id":"g","name":"grep","arguments":"{}"}]}}
{"type":"tool/result","seq":14,"time":15,"data":{"turn":1,"step":4,"callId":"g","content":[{"type":"text","text":"Error: gone"}],"isError":true,"errorCode":"INTERRUPTED"}}
{"type":"tool/call","seq":15,"time":16,"data":{"turn":1,"step":4,"callId":"d","name":"read","arguments":"{}"}}
{"type":"tool/result","seq":16,"time":17,"data":{"turn":1,"step":4,"callId":"d","content":[{"type":"text","text":"ok"}],"isError":false}}
{"type":"tool/call","seq":17,"time":18,"data":{"turn":1,"step":6,"callId":"e","name":"grep","arguments":"{}"}}
{"type":"tool/result","seq":18,"time":19,"data":{"turn":1,"step":6,"callId":"e","content":[{"type":"text","text":"ok"}],"isError":false}}
{"type":"turn/end","seq":19,"time":20,"data":{"turn":1,"reason":{"kind":"completed"}}}
"#;

#[test]
fn stats_of_a_crafted_log_count_self_corrections_within_two_steps() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let sessions = home.join("data/dsh/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    write_log(&sessions, "s-stats.jsonl", STATS_LOG);
    // By id, in the default session directory.
    let mut v = stats_json(home, &["s-stats"]);
    // The cost (no model named in this log: unknown) is tested in cost_cli.rs.
    let cost = v.as_object_mut().unwrap().remove("cost").unwrap();
    assert_eq!(cost["text"], "?", "{cost}");
    let expected = serde_json::json!({
        "turns": 1, "steps": 2, "toolCalls": 6, "failures": 3,
        "selfCorrections": 2, "selfCorrectionRate": 2.0 / 3.0,
        "meanStepsToRecovery": 1.5,
        "tokens": {"input": 110, "output": 25, "cacheRead": 50,
            "cacheWrite": null, "reasoning": 2},
        "tools": {
            "bash": {"calls": 2, "failures": 1,
                "failuresByCode": {"INVALID_ARGS": 1},
                "topViolationPaths": [{"path": "description", "count": 1},
                    {"path": "timeout", "count": 1}],
                "selfCorrections": 1, "selfCorrectionRate": 1.0,
                "meanStepsToRecovery": 1.0},
            "grep": {"calls": 2, "failures": 1,
                "failuresByCode": {"INTERRUPTED": 1},
                "topViolationPaths": [],
                "selfCorrections": 1, "selfCorrectionRate": 1.0,
                "meanStepsToRecovery": 2.0},
            "read": {"calls": 2, "failures": 1,
                "failuresByCode": {"UNKNOWN": 1},
                "topViolationPaths": [],
                "selfCorrections": 0, "selfCorrectionRate": 0.0,
                "meanStepsToRecovery": null}
        }
    });
    assert_eq!(v, expected);

    let out = dsh_in(home, &["session", "stats", "s-stats"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "bash      2       1          1  100%        1.00  INVALID_ARGS 1",
        "grep      2       1          1  100%        2.00  INTERRUPTED 1",
        "read      2       1          0    0%           -  UNKNOWN 1",
        r#"violations bash: "description" 1, "timeout" 1"#,
        "session: 1 turns, 2 steps, 6 tool calls, 3 failed, 2 self-corrected (rate 67%, mean steps 1.50)",
        "tokens: input 110, output 25, cache read 50, cache write -, reasoning 2",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn stats_of_an_unknown_session_or_a_corrupt_log_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    std::fs::create_dir_all(home.join("sessions")).unwrap();
    let out = dsh_in(
        home,
        &["session", "stats", "--session-dir", "sessions", "s-nope"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(r#"dsh: no session "s-nope""#),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());

    // Not a valid id either: no path escapes the directory.
    write_log(home, "outside.jsonl", STATS_LOG);
    let out = dsh_in(
        home,
        &[
            "session",
            "stats",
            "--session-dir",
            "sessions",
            "../outside",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(r#"no session "../outside""#));

    let mut lines: Vec<&str> = STATS_LOG.lines().collect();
    lines[4] = "{not json";
    write_log(
        &home.join("sessions"),
        "s-bad.jsonl",
        &(lines.join("\n") + "\n"),
    );
    for args in [
        &["session", "stats", "--session-dir", "sessions", "s-bad"][..],
        &["session", "stats", "--json", "sessions/s-bad.jsonl"],
    ] {
        let out = dsh_in(home, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains("s-bad.jsonl:5:"), "{}", stderr(&out));
        assert!(stdout(&out).is_empty());
    }
}

#[test]
fn stats_escape_control_characters_in_tool_names() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let log = concat!(
        r#"{"type":"tool/call","seq":0,"time":1,"data":{"turn":1,"step":1,"callId":"a","name":"x\u001b]52;c;AAAA\u0007\u009b","arguments":"{}"}}"#,
        "\n",
        r#"{"type":"tool/result","seq":1,"time":2,"data":{"turn":1,"step":1,"callId":"a","content":[],"isError":true,"errorCode":"E\u001b[2J"}}"#,
        "\n"
    );
    let path = write_log(home, "s-esc.jsonl", log);
    for json in [false, true] {
        let mut args = vec!["session", "stats", path.to_str().unwrap()];
        if json {
            args.push("--json");
        }
        let out = dsh_in(home, &args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let raw = &out.stdout;
        assert!(
            !raw.contains(&0x1b) && !raw.contains(&0x07),
            "{}",
            stdout(&out)
        );
        assert!(!stdout(&out).contains('\u{9b}'));
        if json {
            let v: serde_json::Value = serde_json::from_slice(raw).unwrap();
            assert_eq!(v["tools"]["x\u{1b}]52;c;AAAA\u{7}\u{9b}"]["failures"], 1);
        } else {
            assert!(
                stdout(&out).contains(r"x\x1b]52;c;AAAA\x07\u{9b}"),
                "{}",
                stdout(&out)
            );
        }
    }
}

#[test]
fn sub_agent_sessions_show_as_links_and_as_a_tree() {
    let home = tempfile::tempdir().unwrap();
    let inner = r#"{\"description\":\"inner\",\"prompt\":\"echo deep\"}"#;
    let prompt =
        format!(r#"call subagent {{"description":"outer","prompt":"call subagent {inner}"}}"#);
    let out = dsh_in(home.path(), &["run", &prompt]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("The echo tool says: deep"),
        "{}",
        stdout(&out)
    );

    let out = dsh_in(home.path(), &["session", "list", "--tree"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{text}");
    // Parent, its child indented by two, the grandchild by four.
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r.split_whitespace().next().unwrap())
        .collect();
    assert!(!rows[0].starts_with(' '), "{text}");
    assert!(
        rows[1].starts_with("  s-") && !rows[1].starts_with("   "),
        "{text}"
    );
    assert!(rows[2].starts_with("    s-"), "{text}");
    // A flat list shows the same three sessions, none indented.
    let flat = stdout(&dsh_in(home.path(), &["session", "list"]));
    assert!(flat.lines().skip(1).all(|l| !l.starts_with(' ')), "{flat}");

    // The parent's timeline links to the child's session.
    let out = dsh_in(home.path(), &["session", "show", "--timeline", ids[0]]);
    let show = stdout(&out);
    let link = show
        .lines()
        .find(|l| l.contains("↳ subagent agent-1 \"outer\""))
        .unwrap_or_else(|| panic!("{show}"));
    assert!(link.contains(&format!("session {}", ids[1])), "{link}");
    let child = stdout(&dsh_in(
        home.path(),
        &["session", "show", "--timeline", ids[1]],
    ));
    assert!(
        child.contains(&format!("subagent of session {}", ids[0])),
        "{child}"
    );
}

// ---------------------------------------------------------------------------
// dsh session show: the chat's transcript

#[test]
fn show_prints_the_session_as_the_chat_showed_it() {
    let home = dsh_testkit::cli::Home::new(DSH);
    let (out, _) = home.run(
        &["run", "--model", "echo", "run seq 1 30"],
        std::time::Duration::from_secs(60),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let id = home.only_session();
    let (out, _) = home.run(
        &["session", "show", &id],
        std::time::Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("› run seq 1 30"), "{text}");
    assert!(text.contains("● Bash seq 1 30 — exit 0, "), "{text}");
    assert!(text.contains("  ⎿ 1\n"), "{text}");
    assert!(text.contains("… +26 lines"), "folded:\n{text}");
    assert!(!text.contains("\n    30\n"), "folded:\n{text}");
    assert!(text.contains("totals: 1 turns"), "{text}");
    assert!(
        !text.contains('\x1b'),
        "no escape codes in a pipe:\n{text:?}"
    );
    // --full: the result whole.
    let (out, _) = home.run(
        &["session", "show", "--full", &id],
        std::time::Duration::from_secs(30),
    );
    let full = stdout(&out);
    assert!(full.contains("\n    30\n"), "{full}");
    assert!(!full.contains("+26 lines"), "{full}");
    // --full and --timeline are different views.
    let (out, _) = home.run(
        &["session", "show", "--full", "--timeline", &id],
        std::time::Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
}
