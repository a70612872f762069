//! The context meter through the CLI: `[models.<name>] context_window`
//! sets the window, `dsh run --json` carries `context/usage` events, a bad
//! value is an error naming the file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output, Stdio};

fn dsh(dir: &std::path::Path, config: &str, args: &[&str]) -> Output {
    std::fs::write(dir.join("dsh.toml"), config).unwrap();
    Command::new(env!("CARGO_BIN_EXE_dsh"))
        .current_dir(dir)
        .env_remove("DEEPSEEK_API_KEY")
        .env_remove("DSH_MODEL")
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .args(args)
        .arg("--config")
        .arg(dir.join("dsh.toml"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn run_json_carries_the_meter_with_the_configured_window() {
    let dir = tempfile::tempdir().unwrap();
    let out = dsh(
        dir.path(),
        "[models.echo]\ncontext_window = 8000\n",
        &["run", "--json", "run echo hi"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let readings: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "context/usage")
        .map(|e| e["data"].clone())
        .collect();
    assert_eq!(readings.len(), 2, "one per model reply: {readings:?}");
    for r in &readings {
        assert_eq!(r["window"], 8000);
        let tokens = r["tokens"].as_u64().unwrap();
        assert!(tokens > 100, "the system prompt and tools count: {r}");
        assert_eq!(r["percent"].as_u64().unwrap(), (tokens * 100 + 4000) / 8000);
    }
    assert!(
        readings[1]["tokens"].as_u64() > readings[0]["tokens"].as_u64(),
        "the tool result made the context grow"
    );
}

#[test]
fn a_zero_window_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dsh(
        dir.path(),
        "[models.echo]\ncontext_window = 0\n",
        &["run", "echo hi"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("dsh.toml"), "{err}");
    assert!(err.contains("context_window must be at least 1"), "{err}");
    let out = dsh(
        dir.path(),
        "[models.echo]\nwindow = 5\n",
        &["run", "echo hi"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("window"));
}

fn sse_text(t: &str) -> dsh_testkit::ScriptedResponse {
    dsh_testkit::ScriptedResponse::sse(&[
        serde_json::json!({"choices":[{"index":0,"delta":{"role":"assistant","content":t},"finish_reason":null}]}).to_string(),
        serde_json::json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":10}}).to_string(),
        "[DONE]".to_string(),
    ])
}

fn sse_call(id: &str) -> dsh_testkit::ScriptedResponse {
    let args = serde_json::json!({"command": "echo step output", "description": "d"}).to_string();
    dsh_testkit::ScriptedResponse::sse(&[
        serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":"bash","arguments":args}}]},"finish_reason":null}]}).to_string(),
        serde_json::json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":900,"completion_tokens":10}}).to_string(),
        "[DONE]".to_string(),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_compact_summarises_a_saved_session_with_the_focus() {
    let server = dsh_testkit::LoopbackServer::start([
        sse_call("c1"),
        sse_call("c2"),
        sse_call("c3"),
        sse_text("made three outputs"),
        sse_text("## Current work\nThree outputs were made.\n## Next step\nNone."),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "model = \"deepseek-v4-flash\"\n[deepseek]\napi_key = \"sk-test\"\nbase_url = \"{}\"\n",
        server.base_url()
    );
    let d = dir.path().to_path_buf();
    let c = config.clone();
    let out = tokio::task::spawn_blocking(move || dsh(&d, &c, &["run", "make three outputs"]))
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sessions = dir.path().join("data/dsh/sessions");
    let log = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let id = log.file_stem().unwrap().to_str().unwrap().to_string();
    let d = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        dsh(
            &d,
            &config,
            &["session", "compact", &id, "--focus", "the outputs"],
        )
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("the older history is now a summary"), "{err}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    let summary_req = reqs[4].json();
    let last = summary_req["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let instruction = last["content"].as_str().unwrap();
    assert!(instruction.contains("## Next step"), "{instruction}");
    assert!(
        instruction.ends_with("Focus the summary on: the outputs"),
        "{instruction}"
    );
    assert_eq!(
        summary_req["messages"][0],
        reqs[0].json()["messages"][0],
        "same system prompt"
    );
    assert_eq!(summary_req["tools"], reqs[0].json()["tools"], "same tools");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("\"type\":\"compaction/summary\""));
    assert!(text.contains("\"reason\":\"manual\""));
    // The step requests, rebuilt from the log, are the bytes sent.
    let shown = std::process::Command::new(env!("CARGO_BIN_EXE_dsh"))
        .args(["session", "show", "--requests", log.to_str().unwrap()])
        .output()
        .unwrap();
    let shown = String::from_utf8(shown.stdout).unwrap();
    let bodies: Vec<&str> = shown
        .lines()
        .collect::<Vec<_>>()
        .chunks(2)
        .map(|pair| {
            assert!(pair[0].starts_with("--- turn 1 step "), "{}", pair[0]);
            pair[1]
        })
        .collect();
    assert_eq!(bodies.len(), 4, "four steps, not the summary request");
    for (i, body) in bodies.iter().enumerate() {
        assert_eq!(body.as_bytes(), &reqs[i].body[..], "step {}", i + 1);
    }
    // Replay now starts from the summary.
    let replay = std::process::Command::new(env!("CARGO_BIN_EXE_dsh"))
        .args(["session", "replay", log.to_str().unwrap()])
        .output()
        .unwrap();
    let history: serde_json::Value = serde_json::from_slice(&replay.stdout).unwrap();
    let first = history[0]["content"][0]["text"].as_str().unwrap();
    assert!(
        first.starts_with("<compacted-summary>\n## Current work"),
        "{first}"
    );
}

#[test]
fn session_compact_on_the_echo_model_exits_2_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let out = dsh(dir.path(), "", &["session", "compact", "s-whatever"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("compaction needs a model"));
}

#[test]
fn chat_compact_is_a_command_not_a_message() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dsh.toml"), "").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dsh"))
        .current_dir(dir.path())
        .env_remove("DEEPSEEK_API_KEY")
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .args(["chat", "--config"])
        .arg(dir.path().join("dsh.toml"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"/compact keep the plan\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("compaction needs a model"));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("offline echo model. Try"),
        "the model never saw it"
    );
}
