//! Bounded sessions: a tool result above `max_result_bytes` is cut before it
//! reaches the log and the model; the whole text stays in a private spill
//! file under the session's own directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;

#[test]
fn an_oversized_tool_result_is_cut_in_the_log_and_spilled_next_to_it() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("dsh.toml"), "max_result_bytes = 2000\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dsh"))
        .current_dir(home.path())
        .env_remove("DEEPSEEK_API_KEY")
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .args(["run", "run seq 1 20000"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sessions = home.path().join("data/dsh/sessions");
    let log = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a session log");
    let text = std::fs::read_to_string(&log).unwrap();
    let result = text
        .lines()
        .find(|l| l.contains("\"type\":\"tool/result\""))
        .expect("a tool/result event");
    assert!(
        result.len() < 4000,
        "the logged result is cut: {} bytes",
        result.len()
    );
    assert!(
        result.contains("more than max_result_bytes = 2000"),
        "{result}"
    );
    let event: serde_json::Value = serde_json::from_str(result).unwrap();
    let shown = event["data"]["content"][0]["text"].as_str().unwrap();
    let path = shown
        .split("the full text is in ")
        .nth(1)
        .and_then(|s| s.split(" …]").next())
        .unwrap();
    let id = log.file_stem().unwrap().to_str().unwrap();
    assert!(
        path.starts_with(&sessions.join(id).join("spill").display().to_string()),
        "{path}"
    );
    let full = std::fs::read_to_string(path).unwrap();
    assert!(
        full.contains("\n19999\n20000"),
        "the spill file holds the tail too"
    );
    assert!(full.len() > 50_000);
}

#[test]
fn a_large_result_of_any_tool_is_cut_to_its_head_and_readable_in_windows() {
    let home = tempfile::tempdir().unwrap();
    let run = |prompt: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_dsh"))
            .current_dir(home.path())
            .env_remove("DEEPSEEK_API_KEY")
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_DATA_HOME", home.path().join("data"))
            .args(["run", "--session-dir", "sessions", prompt])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // Not bash: the echo tool, 60,000 characters over the 50,000 default.
    let text: String = (0..6000).map(|i| format!("{i:09}\n")).collect();
    let out = run(&format!(
        r#"call echo {{"text": {}}}"#,
        serde_json::to_string(&text).unwrap()
    ));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(shown.contains("000000000\n000000001\n"), "the head is kept");
    assert!(!shown.contains("000005999"), "the tail is cut");
    assert!(
        shown.contains("more than max_result_bytes = 50000"),
        "{}",
        &shown[shown.len() - 300..]
    );
    let path = shown
        .split("the full text is in ")
        .nth(1)
        .and_then(|s| s.split(" …]").next())
        .unwrap()
        .to_string();
    // The model can read the spill in windows; read itself is never cut.
    let out = run(&format!(
        r#"call read {{"file_path": {}, "offset": 5999, "limit": 2}}"#,
        serde_json::to_string(&path).unwrap()
    ));
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        shown.contains("  5999\t000005998\n  6000\t000005999\n"),
        "{shown}"
    );
}

#[test]
fn max_parallel_out_of_range_is_an_error_naming_the_key() {
    for (config, ok) in [
        ("[tools]\nmax_parallel = 0\n", false),
        ("[tools]\nmax_parallel = 101\n", false),
        ("[tools]\nmax_parallel = 4\n", true),
    ] {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("dsh.toml"), config).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_dsh"))
            .current_dir(home.path())
            .env_remove("DEEPSEEK_API_KEY")
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_DATA_HOME", home.path().join("data"))
            .args(["run", "echo hi"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if ok {
            assert!(out.status.success(), "{config}: {err}");
        } else {
            assert_eq!(out.status.code(), Some(2), "{config}: {err}");
            assert!(err.contains("[tools] max_parallel"), "{err}");
            assert!(err.contains("dsh.toml"), "{err}");
        }
    }
}
