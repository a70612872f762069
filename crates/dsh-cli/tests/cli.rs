//! The real `dsh` binary: offline runs, `--json`, resume, exit codes, piped
//! chat, configuration errors, and `dsh run` against a loopback server that
//! speaks the DeepSeek SSE wire format.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use dsh_testkit::cli::{events as read_events, outcome as output, text_reply, Home};
use dsh_testkit::{LoopbackServer, ScriptedResponse};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

#[tokio::test]
async fn version_and_help() {
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.arg("--version");
    let out = output(c).await;
    assert_eq!(out.code, 0);
    assert_eq!(
        out.stdout.trim(),
        format!("dsh {}", env!("CARGO_PKG_VERSION"))
    );
    let mut c = sb.tokio_dsh();
    c.arg("--help");
    let out = output(c).await;
    assert_eq!(out.code, 0);
    for cmd in ["chat", "run", "tools", "schema", "session"] {
        assert!(out.stdout.contains(cmd), "help lists {cmd}: {}", out.stdout);
    }
}

#[tokio::test]
async fn offline_echo_run_prints_the_answer_and_writes_the_session() {
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.args(["run", "echo", "hi", "there"]);
    let out = output(c).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "The echo tool says: hi there\n");
    let files = sb.session_logs();
    assert_eq!(files.len(), 1);
    let events = read_events(&files[0]);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types[..5],
        [
            "session/workspace",
            "sandbox/mode",
            "sandbox/layers",
            "request/adapter",
            "user/message"
        ]
    );
    assert_eq!(
        events[0]["data"],
        json!({"cwd": sb.cwd().canonicalize().unwrap()})
    );
    assert_eq!(
        events[1]["data"],
        json!({"mode": "workspace-write", "source": "default"})
    );
    assert!(types.contains(&"tool/call") && types.contains(&"tool/result"));
    assert_eq!(types.last(), Some(&"turn/end"));
    let result = events.iter().find(|e| e["type"] == "tool/result").unwrap();
    assert_eq!(result["data"]["content"][0]["text"], "hi there");
    assert_eq!(result["data"]["isError"], false);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], i as u64);
    }
}

#[tokio::test]
async fn offline_bash_run_uses_the_real_bash_tool() {
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.args(["run", "run printf abc; exit 3"]);
    let out = output(c).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "The bash tool returned:\nabc\n[exit code: 3]\n");
}

#[tokio::test]
async fn json_prints_every_event_as_a_jsonl_line() {
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.args(["run", "--json", "echo x"]);
    let out = output(c).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert!(lines.len() > 6);
    for (i, e) in lines.iter().enumerate() {
        assert_eq!(e["seq"], i as u64);
        assert!(e["time"].is_u64());
        assert!(e["data"].is_object());
    }
    assert_eq!(lines.last().unwrap()["type"], "turn/end");
    assert_eq!(
        lines.last().unwrap()["data"]["reason"],
        json!({"kind": "completed"})
    );
    // Same format as the log file.
    let file = read_events(&sb.session_logs()[0]);
    assert_eq!(file, lines);
}

#[tokio::test]
async fn resume_continues_the_same_session() {
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.args(["run", "echo first"]);
    assert_eq!(output(c).await.code, 0);
    let files = sb.session_logs();
    let id = files[0].file_stem().unwrap().to_str().unwrap().to_string();
    let before = read_events(&files[0]).len();
    let mut c = sb.tokio_dsh();
    c.args(["run", "--resume", &id, "echo second"]);
    let out = output(c).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "The echo tool says: second\n");
    assert_eq!(
        sb.session_logs().len(),
        1,
        "resume appends to the same file"
    );
    let events = read_events(&files[0]);
    assert!(events.len() > before);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], i as u64, "seq continues across runs");
    }
    let turns: Vec<u64> = events
        .iter()
        .filter(|e| e["type"] == "turn/start")
        .map(|e| e["data"]["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(turns, [1, 2]);
    let mut c = sb.tokio_dsh();
    c.args(["run", "--resume", "no-such-session", "hi"]);
    let out = output(c).await;
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no-such-session"), "{}", out.stderr);
}

#[tokio::test]
async fn unknown_model_and_bad_config_are_usage_errors() {
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.args(["run", "--model", "gpt-x", "hi"]);
    let out = output(c).await;
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("unknown model \"gpt-x\"") && out.stderr.contains("echo"),
        "{}",
        out.stderr
    );

    std::fs::write(sb.path().join("dsh.toml"), "modle = \"echo\"\n").unwrap();
    let mut c = sb.tokio_dsh();
    c.args(["run", "hi"]);
    let out = output(c).await;
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("modle"), "{}", out.stderr);
    assert!(out.stderr.contains("dsh.toml"), "{}", out.stderr);

    std::fs::write(sb.path().join("dsh.toml"), "[bash]\ntimeout_ms = \"x\"\n").unwrap();
    let mut c = sb.tokio_dsh();
    c.args(["run", "hi"]);
    let out = output(c).await;
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("timeout_ms"), "{}", out.stderr);

    let mut c = sb.tokio_dsh();
    c.args(["run", "--config", "/nonexistent/dsh.toml", "hi"]);
    let out = output(c).await;
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("/nonexistent/dsh.toml"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn config_file_and_env_choose_the_model() {
    let sb = Home::new(DSH);
    std::fs::create_dir_all(sb.path().join("config/dsh")).unwrap();
    std::fs::write(
        sb.path().join("config/dsh/dsh.toml"),
        "model = \"deepseek-v4-pro\"\n",
    )
    .unwrap();
    let mut c = sb.tokio_dsh();
    c.args(["run", "hi"]);
    let out = output(c).await;
    assert_eq!(out.code, 2, "a DeepSeek model without a key is refused");
    assert!(out.stderr.contains("DEEPSEEK_API_KEY"), "{}", out.stderr);
    let mut c = sb.tokio_dsh();
    c.args(["run", "echo via env"]).env("DSH_MODEL", "echo");
    let out = output(c).await;
    assert_eq!(out.code, 0, "DSH_MODEL overrides the file: {}", out.stderr);
}

#[tokio::test]
async fn piped_chat_sends_every_line_and_exits() {
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.arg("chat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"echo one\n\nrun echo two\n")
        .await
        .unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("⏺ echo({\"text\":\"one\"})"), "{stdout}");
    assert!(stdout.contains("The echo tool says: one"), "{stdout}");
    assert!(stdout.contains("The bash tool returned:\ntwo"), "{stdout}");
    assert!(!stdout.contains('\x1b'), "no escape codes when piped");
    let events = read_events(&sb.session_logs()[0]);
    let turns = events.iter().filter(|e| e["type"] == "turn/start").count();
    assert_eq!(turns, 2, "one turn per line");
}

#[tokio::test]
async fn run_against_a_loopback_deepseek_server() {
    let call = ScriptedResponse::sse(&[
        json!({"choices":[{"index":0,"delta":{"reasoning_content":"Use glob."},"finish_reason":null}]}).to_string(),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"glob","arguments":""}}]},"finish_reason":null}]}).to_string(),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pattern\":\"*.zz\"}"}}]},"finish_reason":null}]}).to_string(),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}).to_string(),
        "[DONE]".to_string(),
    ]);
    let server = LoopbackServer::start([call, text_reply("pong")])
        .await
        .unwrap();
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.args(["run", "say ping"])
        .env("DEEPSEEK_API_KEY", "sk-test")
        .env("DEEPSEEK_BASE_URL", server.base_url());
    let out = output(c).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "pong\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-test"));
    let first = reqs[0].json();
    assert_eq!(
        first["model"], "deepseek-v4-flash",
        "the default model with a key"
    );
    assert_eq!(first["stream"], true);
    assert_eq!(first["messages"][0]["role"], "system");
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "bash",
            "job_output",
            "job_list",
            "job_kill",
            "read",
            "write",
            "edit",
            "glob",
            "grep",
            "todo_write",
            "exit_plan_mode",
            "subagent",
            "subagent_fork",
            "ask_user"
        ],
        "the default set with a real model: no echo"
    );
    let second = reqs[1].json();
    let msgs = second["messages"].as_array().unwrap();
    let assistant = &msgs[msgs.len() - 2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["reasoning_content"], "Use glob.",
        "reasoning passed back on tool turns"
    );
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        "{\"pattern\":\"*.zz\"}"
    );
    assert_eq!(
        msgs[msgs.len() - 1],
        json!({"role":"tool","tool_call_id":"call_1","content":"No files found"})
    );
}

/// A model step that calls `name` with `args` (a JSON object), whole.
fn tool_step(id: &str, name: &str, args: Value) -> ScriptedResponse {
    ScriptedResponse::sse(&[
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":name,"arguments":args.to_string()}}]},"finish_reason":null}]}).to_string(),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}).to_string(),
        "[DONE]".to_string(),
    ])
}

#[tokio::test]
async fn file_and_search_tools_run_through_the_loop_with_a_real_model_wire() {
    let sb = Home::new(DSH);
    std::fs::create_dir(sb.path().join("src")).unwrap();
    std::fs::write(
        sb.path().join("src/lib.rs"),
        "fn main() {\n    println!(\"old\");\n}\n",
    )
    .unwrap();
    let server = LoopbackServer::start([
        tool_step(
            "c1",
            "grep",
            json!({"pattern": "println", "include": "*.rs"}),
        ),
        // Editing before reading is refused; the model reads and retries.
        tool_step(
            "c2",
            "edit",
            json!({"file_path": "src/lib.rs", "old_string": "\"old\"", "new_string": "\"new\""}),
        ),
        tool_step("c3", "read", json!({"file_path": "src/lib.rs"})),
        tool_step(
            "c4",
            "edit",
            json!({"file_path": "src/lib.rs", "old_string": "\"old\"", "new_string": "\"new\""}),
        ),
        tool_step("c5", "glob", json!({"pattern": "**/*.rs"})),
        text_reply("edited"),
    ])
    .await
    .unwrap();
    let mut c = sb.tokio_dsh();
    c.args(["run", "change old to new"])
        .env("DEEPSEEK_API_KEY", "sk-test")
        .env("DEEPSEEK_BASE_URL", server.base_url());
    let out = output(c).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "edited\n");
    assert_eq!(
        std::fs::read_to_string(sb.path().join("src/lib.rs")).unwrap(),
        "fn main() {\n    println!(\"new\");\n}\n"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 6);
    // The result of step N is the last message of request N+1.
    let result = |n: usize| -> String {
        let body = reqs[n].json();
        let msgs = body["messages"].as_array().unwrap();
        msgs[msgs.len() - 1]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(result(1), "src/lib.rs:2:    println!(\"old\");");
    assert!(
        result(2).starts_with("Error: ") && result(2).ends_with("has not read it; read it first"),
        "{}",
        result(2)
    );
    assert!(
        result(3).starts_with("     1\tfn main() {"),
        "{}",
        result(3)
    );
    let diff = result(4);
    assert!(
        diff.contains("-    println!(\"old\");\n+    println!(\"new\");"),
        "{diff}"
    );
    assert_eq!(result(5), "src/lib.rs");
}

#[tokio::test]
async fn strict_tools_round_trip_through_the_beta_endpoint() {
    // A strict model sends every key; absent ones as null.
    let args = r#"{"command":"echo strict","description":"Say it","timeoutMs":null,"workdir":null,"run_in_background":null}"#;
    let call = ScriptedResponse::sse(&[
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":args}}]},"finish_reason":null}]}).to_string(),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}).to_string(),
        "[DONE]".to_string(),
    ]);
    let server = LoopbackServer::start([call, text_reply("done")])
        .await
        .unwrap();
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.args(["run", "--strict-tools", "say it"])
        .env("DEEPSEEK_API_KEY", "sk-test")
        .env("DEEPSEEK_BASE_URL", server.base_url());
    let out = output(c).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "done\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[0].path, "/beta/chat/completions",
        "strict needs the beta endpoint"
    );
    let first = reqs[0].json();
    let bash = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "bash")
        .unwrap()
        .clone();
    assert_eq!(bash["function"]["strict"], true);
    assert_eq!(
        bash["function"]["parameters"]["additionalProperties"],
        false
    );
    assert_eq!(
        bash["function"]["parameters"]["properties"]["workdir"]["type"],
        json!(["string", "null"])
    );
    // The nulls never reached the tool: it ran and its output went back.
    let second = reqs[1].json();
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(
        msgs[msgs.len() - 1],
        json!({"role":"tool","tool_call_id":"call_1","content":"strict\n"})
    );

    // Without the flag: the plain endpoint and no strict flag.
    let server = LoopbackServer::start([text_reply("plain")]).await.unwrap();
    let mut c = sb.tokio_dsh();
    c.args(["run", "hello"])
        .env("DEEPSEEK_API_KEY", "sk-test")
        .env("DEEPSEEK_BASE_URL", server.base_url());
    let out = output(c).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let req = &server.requests()[0];
    assert_eq!(req.path, "/chat/completions");
    assert!(req.json()["tools"][1]["function"].get("strict").is_none());
}

#[tokio::test]
async fn provider_errors_exit_1_with_the_code() {
    let server = LoopbackServer::start([ScriptedResponse::json(
        401,
        &json!({"error":{"message":"Authentication Fails (no such user)"}}),
    )])
    .await
    .unwrap();
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.args(["run", "hi"])
        .env("DEEPSEEK_API_KEY", "sk-bad")
        .env("DEEPSEEK_BASE_URL", server.base_url());
    let out = output(c).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("[AUTH]") && out.stderr.contains("Authentication Fails"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn sigint_aborts_the_turn_with_exit_130() {
    let hang = ScriptedResponse::sse(&[
        json!({"choices":[{"index":0,"delta":{"content":"partial"},"finish_reason":null}]})
            .to_string(),
    ])
    .then_hang();
    let server = LoopbackServer::start([hang]).await.unwrap();
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.args(["run", "--json", "hi"])
        .env("DEEPSEEK_API_KEY", "sk-test")
        .env("DEEPSEEK_BASE_URL", server.base_url())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    // Wait until the partial chunk was logged: the turn is mid-stream.
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        use tokio::io::AsyncBufReadExt;
        loop {
            let mut line = String::new();
            if stdout.read_line(&mut line).await.unwrap() == 0 {
                panic!("dsh exited early: {seen}");
            }
            seen.push_str(&line);
            if line.contains("assistant/chunk") && line.contains("partial") {
                break;
            }
        }
    })
    .await
    .expect("the chunk arrives");
    let pid = child.id().unwrap();
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("dsh exits after SIGINT")
        .unwrap();
    assert_eq!(out.status.code(), Some(130));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("aborted: user interrupt"), "{stderr}");
    let events = read_events(&sb.session_logs()[0]);
    let end = events.last().unwrap();
    assert_eq!(end["type"], "turn/end");
    assert_eq!(
        end["data"]["reason"],
        json!({"kind":"aborted","reason":"user interrupt"})
    );
}

#[tokio::test]
async fn tools_list_prints_the_schemas_the_model_sees() {
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.args(["tools", "list", "--schemas"]);
    let out = output(c).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let tools: Value = serde_json::from_str(&out.stdout).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "echo",
            "bash",
            "job_output",
            "job_list",
            "job_kill",
            "read",
            "write",
            "edit",
            "glob",
            "grep",
            "todo_write",
            "exit_plan_mode",
            "subagent",
            "subagent_fork",
            "ask_user"
        ],
        "offline (no key): echo leads the default set"
    );
    assert_eq!(
        tools[1]["parameters"]["required"],
        json!(["command", "description"])
    );
    assert!(
        !sb.sessions().exists(),
        "listing tools writes no session directory"
    );
}

#[tokio::test]
async fn an_unusable_session_dir_is_a_usage_error() {
    let sb = Home::new(DSH);
    let file = sb.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let dir = file.join("sessions");
    let mut c = sb.tokio_dsh();
    c.args(["run", "--session-dir", dir.to_str().unwrap(), "echo hi"]);
    let out = output(c).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("not-a-dir"), "{}", out.stderr);
    assert!(out.stdout.is_empty(), "no turn ran: {}", out.stdout);
}

#[tokio::test]
async fn the_model_boundary_through_the_binary() {
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.args(["run", r#"call echo {"txt": "hi"}"#]);
    let out = output(c).await;
    assert_eq!(
        out.code, 0,
        "a tool error is a result, not a failed turn: {}",
        out.stderr
    );
    assert!(
        out.stdout.starts_with("The echo tool reported an error:\nError: invalid arguments: missing required property \"text\""),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(r#"note: argument "txt" is not a parameter of echo and was ignored; did you mean "text"?"#),
        "{}",
        out.stdout
    );
    let events = read_events(&sb.session_logs()[0]);
    let result = events.iter().find(|e| e["type"] == "tool/result").unwrap();
    assert_eq!(result["data"]["isError"], true);
    assert_eq!(result["data"]["errorCode"], "INVALID_ARGS");
}

/// The MCP test fixture server, built by `dsh-mcp`'s tests into the same
/// target directory (`cargo test --workspace` builds it before any test
/// runs). Missing, the test fails rather than passing without checking.
fn mcp_fixture() -> PathBuf {
    let p = Path::new(env!("CARGO_BIN_EXE_dsh")).with_file_name("dsh-mcp-fixture");
    assert!(
        p.is_file(),
        "{} is not built: run the workspace tests (cargo test --workspace), or build it with `cargo build -p dsh-mcp --features fixture`",
        p.display()
    );
    p
}

#[tokio::test]
async fn mcp_servers_from_the_flag_and_the_config() {
    let fixture = mcp_fixture();
    let sb = Home::new(DSH);
    let flag = format!("fx={}", fixture.display());
    let mut c = sb.tokio_dsh();
    c.args([
        "run",
        "--mcp",
        &flag,
        r#"call mcp__fx__add {"a": 2, "b": 3}"#,
    ]);
    let out = output(c).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "The mcp__fx__add tool returned:\n5\n");

    std::fs::write(
        sb.path().join("dsh.toml"),
        format!(
            "[mcp.servers.cfg]\ncommand = \"{}\"\n\n[mcp.servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n",
            fixture.display()
        ),
    )
    .unwrap();
    // A project config: trusted for this run.
    let mut c = sb.tokio_dsh();
    c.args(["mcp", "list", "--trust-project"]);
    let out = output(c).await;
    assert_eq!(out.code, 1, "a server failed to start: {}", out.stdout);
    assert!(out.stdout.contains("cfg\trunning\t"), "{}", out.stdout);
    assert!(out.stdout.contains("mcp__cfg__add"), "{}", out.stdout);
    assert!(out.stdout.contains("broken\tfailed"), "{}", out.stdout);
    assert!(
        out.stderr.contains("/nonexistent/mcp-server"),
        "{}",
        out.stderr
    );

    // A broken server does not stop the agent.
    let mut c = sb.tokio_dsh();
    c.args([
        "run",
        "--trust-project",
        r#"call mcp__cfg__add {"a": 1, "b": 1}"#,
    ]);
    let out = output(c).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "The mcp__cfg__add tool returned:\n2\n");

    // `mcp_tool_prefix = ""` keeps the older `<server>__<tool>` names.
    std::fs::write(
        sb.path().join("dsh.toml"),
        format!(
            "mcp_tool_prefix = \"\"\n[mcp.servers.cfg]\ncommand = \"{}\"\n",
            fixture.display()
        ),
    )
    .unwrap();
    let mut c = sb.tokio_dsh();
    c.args([
        "run",
        "--trust-project",
        r#"call cfg__add {"a": 2, "b": 2}"#,
    ]);
    let out = output(c).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "The cfg__add tool returned:\n4\n");
}

#[tokio::test]
async fn an_mcp_server_over_http_from_the_flag() {
    let fixture = mcp_fixture();
    let mut server = std::process::Command::new(&fixture)
        .args(["--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut addr = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.stdout.take().unwrap()),
        &mut addr,
    )
    .unwrap();
    let sb = Home::new(DSH);
    let flag = format!("web=http://{}/mcp", addr.trim());
    let mut c = sb.tokio_dsh();
    c.args([
        "run",
        "--mcp",
        &flag,
        r#"call mcp__web__add {"a": 20, "b": 22}"#,
    ]);
    let out = output(c).await;
    let _ = server.kill(); // it may have exited already
    let _ = server.wait();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "The mcp__web__add tool returned:\n42\n");
}

#[tokio::test]
async fn tool_listings_say_who_validates_the_arguments() {
    let fixture = mcp_fixture();
    let sb = Home::new(DSH);
    std::fs::write(
        sb.path().join("dsh.toml"),
        format!(
            "[mcp.servers.loc]\ncommand = \"{0}\"\nvalidate_args = true\n\n[mcp.servers.srv]\ncommand = \"{0}\"\n",
            fixture.display()
        ),
    )
    .unwrap();
    let mut c = sb.tokio_dsh();
    c.args(["tools", "list", "--json", "--trust-project"]);
    let out = output(c).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let check = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["validation"].clone())
    };
    assert_eq!(check("bash"), Some("dsh".into()));
    assert_eq!(check("mcp__loc__add"), Some("local".into()));
    assert_eq!(check("mcp__srv__add"), Some("server".into()));
    // A bad call to a locally validated server never leaves dsh.
    let mut c = sb.tokio_dsh();
    c.args([
        "run",
        "--trust-project",
        r#"call mcp__loc__add {"a": "x", "b": 1}"#,
    ]);
    let out = output(c).await;
    assert!(
        out.stdout.contains(r#""a" must be a number"#),
        "{}",
        out.stdout
    );
    let mut c = sb.tokio_dsh();
    c.args(["mcp", "list", "--trust-project"]);
    let out = output(c).await;
    assert!(
        out.stdout.contains("  mcp__loc__add\targs: local"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("  mcp__srv__add\targs: server"),
        "{}",
        out.stdout
    );
}

#[tokio::test]
async fn resuming_a_session_in_use_is_refused() {
    let sb = Home::new(DSH);
    let mut c = sb.tokio_dsh();
    c.args(["run", "echo first"]);
    assert_eq!(output(c).await.code, 0);
    let file = sb.session_logs()[0].clone();
    let id = file.file_stem().unwrap().to_str().unwrap().to_string();
    // Another writer holds the log.
    let held = std::fs::File::open(&file).unwrap();
    held.try_lock().unwrap();
    let before = std::fs::read(&file).unwrap();
    let mut c = sb.tokio_dsh();
    c.args(["run", "--resume", &id, "echo second"]);
    let out = output(c).await;
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("in use by another dsh process"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the log is untouched"
    );
    drop(held);
    let mut c = sb.tokio_dsh();
    c.args(["run", "--resume", &id, "echo second"]);
    assert_eq!(output(c).await.code, 0);
}

#[tokio::test]
async fn the_tool_set_is_chosen_by_config_or_flag_and_unknown_names_are_errors() {
    let sb = Home::new(DSH);
    let names = |stdout: &str| -> Vec<String> {
        serde_json::from_str::<serde_json::Value>(stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    std::fs::write(sb.path().join("dsh.toml"), "tools = [\"bash\", \"edit\"]\n").unwrap();
    let mut c = sb.tokio_dsh();
    c.args(["tools", "list", "--schemas"]);
    let out = output(c).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(names(&out.stdout), ["bash", "edit"]);
    let mut c = sb.tokio_dsh();
    c.args(["tools", "list", "--schemas", "--tools", "read,job_kill"]);
    let out = output(c).await;
    assert_eq!(
        names(&out.stdout),
        ["job_kill", "read"],
        "the flag wins, registration order"
    );
    let mut c = sb.tokio_dsh();
    c.args([
        "tools",
        "list",
        "--schemas",
        "--tools",
        "bash,str_replace_editor",
    ]);
    let out = output(c).await;
    assert_eq!(
        names(&out.stdout),
        ["bash", "str_replace_editor"],
        "the benchmark set"
    );
    let mut c = sb.tokio_dsh();
    c.args(["tools", "list", "--schemas", "--tools", "bash,grepp"]);
    let out = output(c).await;
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("--tools: unknown tool \"grepp\" in tools; known tools: echo, bash"),
        "{}",
        out.stderr
    );
    std::fs::write(sb.path().join("dsh.toml"), "tools = [\"sh\"]\n").unwrap();
    let mut c = sb.tokio_dsh();
    c.args(["run", "hi"]);
    let out = output(c).await;
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("unknown tool \"sh\""), "{}", out.stderr);
}
