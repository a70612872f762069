//! `dsh serve` as a process: over stdio it speaks only JSON-RPC on stdout
//! and SIGTERM ends a running turn cleanly (aborted in the log, its
//! command killed, exit 143); over HTTP it prints its address and writes
//! the token where asked (mode 0600), and refuses requests without it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use dsh_testkit::cli::wait_exit;
use serde_json::{json, Value};

fn dsh(home: &std::path::Path) -> Command {
    std::fs::write(home.join("none.toml"), "").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dsh"));
    cmd.current_dir(home)
        .env_remove("DEEPSEEK_API_KEY")
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

#[test]
fn sigterm_ends_a_running_turn_cleanly_over_stdio() {
    let home = tempfile::tempdir().unwrap();
    let mut child = dsh(home.path())
        .args(["serve", "--stdio", "--model", "echo", "--config"])
        .arg(home.path().join("none.toml"))
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout holds only JSON-RPC: {e}: {line}"));
            if tx.send(v).is_err() {
                return;
            }
        }
    });
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    let until = |pred: &dyn Fn(&Value) -> bool| -> Value {
        loop {
            let v = rx.recv_timeout(Duration::from_secs(30)).expect("a frame");
            assert_eq!(v["jsonrpc"], "2.0");
            if pred(&v) {
                return v;
            }
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/create", "params": {}}));
    let created = until(&|v| v["id"] == 1);
    let id = created["result"]["sessionId"].as_str().unwrap().to_string();
    let log = created["result"]["info"]["log"]
        .as_str()
        .unwrap()
        .to_string();
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/subscribe", "params": {"sessionId": id}}),
    );
    until(&|v| v["id"] == 2);
    let marker = "sleep 31.5";
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": id, "text": format!("run {marker}")}}),
    );
    until(&|v| v["method"] == "session.event" && v["params"]["event"]["type"] == "tool_running");
    // The command runs now.
    std::thread::sleep(Duration::from_millis(300));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(wait_exit(&mut child, Duration::from_secs(30)), 143);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let ends: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "turn/end")
        .collect();
    assert_eq!(ends.len(), 1, "{text}");
    assert_eq!(ends[0]["data"]["reason"]["kind"], "aborted", "{text}");
    assert_eq!(
        ends[0]["data"]["reason"]["reason"], "terminated (SIGTERM)",
        "{text}"
    );
    assert!(err.contains("stopping"), "{err}");
    let ps = Command::new("ps").args(["-eo", "args"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&ps.stdout).contains(marker),
        "the turn's command outlived the server"
    );
}

#[test]
fn over_http_it_prints_its_address_and_guards_with_a_private_token_file() {
    let home = tempfile::tempdir().unwrap();
    let token_file = home.path().join("token");
    let mut child = dsh(home.path())
        .args(["serve", "--model", "echo", "--port", "0", "--token-file"])
        .arg(&token_file)
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut url = String::new();
    out.read_line(&mut url).unwrap();
    let mut second = String::new();
    out.read_line(&mut second).unwrap();
    let addr = url
        .trim()
        .strip_prefix("url: http://")
        .unwrap_or_else(|| panic!("{url}"))
        .to_string();
    assert_eq!(
        second.trim(),
        format!("token-file: {}", token_file.display())
    );
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(token.len(), 64);
    assert!(token.chars().all(|c| c.is_ascii_hexdigit()));
    let get = |auth: Option<&str>| -> String {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        let mut req =
            format!("GET /api/sessions HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
        if let Some(t) = auth {
            req.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    };
    assert!(get(None).starts_with("HTTP/1.1 401"));
    let ok = get(Some(&token));
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert!(ok.contains("\"open\":[]"), "{ok}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(wait_exit(&mut child, Duration::from_secs(30)), 143);
}

#[test]
fn stdio_ends_with_zero_when_the_client_closes_its_input() {
    let home = tempfile::tempdir().unwrap();
    let mut child = dsh(home.path())
        .args(["serve", "--stdio", "--model", "echo"])
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize"})
        )
        .unwrap();
    }
    let mut text = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(wait_exit(&mut child, Duration::from_secs(30)), 0);
    let v: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["result"]["server"], "dsh");
}
