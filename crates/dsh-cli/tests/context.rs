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
