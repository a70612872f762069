//! `dsh acp` as a process: only JSON-RPC messages on stdout, a prompt
//! answered with updates and `end_turn`, exit 0 when the client closes
//! stdin; a line of invalid UTF-8 or one over `--max-line-bytes` is
//! answered with an error and serving goes on; a `cwd` that is missing, a
//! file or relative is refused with `INVALID_PARAMS` naming it. The end-to-end check with the official TypeScript client is
//! `scripts/acp-ts-check.sh` (needs node and npm), run by the ignored test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

#[test]
fn dsh_acp_speaks_only_json_rpc_on_stdout() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("none.toml"), "").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dsh"))
        .args(["acp", "--model", "echo", "--config"])
        .arg(home.path().join("none.toml"))
        .current_dir(home.path())
        .env_remove("DEEPSEEK_API_KEY")
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |v: serde_json::Value| writeln!(stdin, "{v}").unwrap();
    let mut until_id = |id: u64| -> Vec<serde_json::Value> {
        let mut seen = Vec::new();
        loop {
            let line = lines.next().expect("a line").unwrap();
            let v: serde_json::Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout holds only JSON-RPC: {e}: {line}"));
            assert_eq!(v["jsonrpc"], "2.0", "{line}");
            let done = v["id"] == id && (v.get("result").is_some() || v.get("error").is_some());
            seen.push(v);
            if done {
                return seen;
            }
        }
    };
    send(
        serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}),
    );
    let init = until_id(1);
    assert_eq!(
        init.last().unwrap()["result"]["agentCapabilities"]["loadSession"],
        true
    );
    send(
        serde_json::json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd": home.path(),"mcpServers":[]}}),
    );
    let new = until_id(2);
    let session = new.last().unwrap()["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    send(
        serde_json::json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId": session,"prompt":[{"type":"text","text":"echo over stdio"}]}}),
    );
    let turn = until_id(3);
    assert_eq!(turn.last().unwrap()["result"]["stopReason"], "end_turn");
    let text: String = turn
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|m| {
            m["params"]["update"]["content"]["text"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    assert!(text.ends_with("The echo tool says: over stdio"), "{text}");
    // An unknown session is an error response, not a crash.
    send(
        serde_json::json!({"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}),
    );
    let bad = until_id(4);
    assert!(bad.last().unwrap().get("error").is_some(), "{bad:?}");
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    // The session was saved.
    let log = home
        .path()
        .join("data/dsh/sessions")
        .join(format!("{session}.jsonl"));
    assert!(log.is_file(), "{}", log.display());
}

#[test]
#[ignore = "needs node and the npm registry; run scripts/acp-ts-check.sh by hand"]
fn acp_typescript_client() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let status = Command::new("bash")
        .arg(root.join("scripts/acp-ts-check.sh"))
        .env("DSH", env!("CARGO_BIN_EXE_dsh"))
        .status()
        .unwrap();
    assert!(status.success());
}

/// `dsh acp` with the echo model in a private home, read line by line on
/// a thread so a test that waits for a message fails after a minute
/// instead of hanging.
struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    home: tempfile::TempDir,
}

impl Acp {
    fn start(extra: &[&str]) -> Acp {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("none.toml"), "").unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_dsh"))
            .args(["acp", "--model", "echo", "--config"])
            .arg(home.path().join("none.toml"))
            .args(extra)
            .current_dir(home.path())
            .env_remove("DEEPSEEK_API_KEY")
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Acp {
            child,
            stdin,
            lines,
            home,
        }
    }

    fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, v: serde_json::Value) {
        self.send_bytes(format!("{v}\n").as_bytes());
    }

    /// The next message on stdout (each one JSON-RPC 2.0).
    fn next(&self) -> serde_json::Value {
        let line = match self.lines.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("no message from dsh acp within 60 s"),
            Err(RecvTimeoutError::Disconnected) => panic!("dsh acp closed its stdout"),
        };
        let v: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout holds only JSON-RPC: {e}: {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        v
    }

    /// Messages up to the response with `id` (notifications skipped).
    fn response(&self, id: serde_json::Value) -> serde_json::Value {
        loop {
            let v = self.next();
            if v["id"] == id && (v.get("result").is_some() || v.get("error").is_some()) {
                return v;
            }
        }
    }

    fn initialize(&mut self, id: u64) {
        self.send(serde_json::json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}));
        let init = self.response(serde_json::json!(id));
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    }

    /// Closes stdin and expects exit 0.
    fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

#[test]
fn an_invalid_utf8_line_is_a_parse_error_and_serving_goes_on() {
    let mut acp = Acp::start(&[]);
    acp.send_bytes(b"\xff\xfe bad\n");
    let err = acp.next();
    assert_eq!(err["id"], serde_json::Value::Null, "{err}");
    assert_eq!(err["error"]["code"], -32700, "{err}");
    let text = err["error"].to_string();
    assert!(text.contains("UTF-8"), "{err}");
    acp.initialize(1);
    // Still serving: a session opens after it.
    let cwd = acp.home.path().to_path_buf();
    acp.send(serde_json::json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd": cwd,"mcpServers":[]}}));
    let new = acp.response(serde_json::json!(2));
    assert!(new["result"]["sessionId"].is_string(), "{new}");
    // A bad line in the middle of a session does not end it either.
    acp.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x\xc3\x28\"}\n");
    let err = acp.response(serde_json::Value::Null);
    assert_eq!(err["error"]["code"], -32700, "{err}");
    acp.finish();
}

#[test]
fn a_line_over_max_line_bytes_is_refused_and_serving_goes_on() {
    let mut acp = Acp::start(&["--max-line-bytes", "1024"]);
    // 1 MB of one JSON-RPC request (a prompt no session has), in one line.
    let big = "x".repeat(1 << 20);
    acp.send(serde_json::json!({"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":big}]}}));
    let err = acp.next();
    assert_eq!(err["id"], 7, "{err}");
    assert_eq!(err["error"]["code"], -32600, "{err}");
    assert!(err["error"].to_string().contains("1024"), "{err}");
    acp.initialize(1);
    // A line under the limit still passes.
    acp.send(serde_json::json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}));
    let bad = acp.response(serde_json::json!(2));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    // An over-long last line without a newline is answered at the end too.
    acp.send_bytes("y".repeat(5000).as_bytes());
    drop(acp.stdin.take());
    let err = acp.next();
    assert_eq!(err["error"]["code"], -32600, "{err}");
    acp.finish();
}

#[test]
fn max_line_bytes_is_documented_with_its_default() {
    let out = Command::new(env!("CARGO_BIN_EXE_dsh"))
        .args(["acp", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--max-line-bytes"), "{help}");
    assert!(help.contains("67108864"), "{help}");
}

#[test]
fn session_new_refuses_a_missing_file_or_relative_cwd_naming_it() {
    let mut acp = Acp::start(&[]);
    acp.initialize(1);
    let missing = acp.home.path().join("no-such-dir");
    let file = acp.home.path().join("none.toml");
    let cases = [
        (missing.display().to_string(), "does not exist"),
        (file.display().to_string(), "not a directory"),
        ("relative/dir".to_string(), "absolute"),
    ];
    for (i, (cwd, why)) in cases.iter().enumerate() {
        let id = 10 + i as u64;
        acp.send(serde_json::json!({"jsonrpc":"2.0","id":id,"method":"session/new","params":{"cwd": cwd,"mcpServers":[]}}));
        let err = acp.response(serde_json::json!(id));
        assert_eq!(err["error"]["code"], -32602, "{err}");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(message.contains(cwd.as_str()), "{err}");
        assert!(message.contains(why), "{err}");
    }
    // session/load the same way.
    acp.send(serde_json::json!({"jsonrpc":"2.0","id":20,"method":"session/load","params":{"sessionId":"20260101-000000-abcd","cwd": missing,"mcpServers":[]}}));
    let err = acp.response(serde_json::json!(20));
    assert_eq!(err["error"]["code"], -32602, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&missing.display().to_string()),
        "{err}"
    );
    acp.finish();
}
