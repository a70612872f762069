//! `dsh acp` as a process: only JSON-RPC messages on stdout, a prompt
//! answered with updates and `end_turn`, exit 0 when the client closes
//! stdin. The end-to-end check with the official TypeScript client is
//! `scripts/acp-ts-check.sh` (needs node and npm), run by the ignored test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

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
