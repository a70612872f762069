//! Permission modes from the command line, the environment, dsh.toml and
//! `/permission` in chat: what a confined command or file write leaves on
//! disk, and the `sandbox/mode` events in the session log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use dsh_testkit::cli::{outcome, Home};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

async fn run(c: Command) -> (i32, String, String) {
    outcome(c).await.into_parts()
}

fn landlock() -> bool {
    let ok = dsh_sandbox::probe().filesystem_full();
    if !ok {
        eprintln!("SKIP: Landlock unavailable: {}", dsh_sandbox::probe());
    }
    ok
}

#[tokio::test]
async fn read_only_from_the_flag_blocks_writes_in_the_workspace() {
    if !landlock() {
        return;
    }
    let home = Home::new(DSH);
    let mut c = home.tokio_dsh();
    c.args(["run", "--permission", "read-only", "run echo x > made"]);
    let (code, stdout, stderr) = run(c).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(!home.path().join("made").exists());
    assert!(
        stdout.contains("[sandbox: write denied under read-only mode]"),
        "{stdout}"
    );
    assert_eq!(
        home.of_type("sandbox/mode"),
        [json!({"mode": "read-only", "source": "--permission"})]
    );
}

#[tokio::test]
async fn the_default_is_workspace_write_and_the_file_tools_are_fenced() {
    if !landlock() {
        return;
    }
    let home = Home::new(DSH);
    let outside = dsh_testkit::outside_temp_dir(env!("CARGO_TARGET_TMPDIR"), "outside-");
    let target = outside.path().join("x.txt");
    let call = format!(
        "call write {}",
        json!({"file_path": target, "content": "escaped"})
    );
    let mut c = home.tokio_dsh();
    c.args(["run", &call]);
    let (code, stdout, stderr) = run(c).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(!target.exists(), "{stdout}");
    assert!(
        stdout.contains("outside the writable roots of workspace-write mode"),
        "{stdout}"
    );

    let mut c = home.tokio_dsh();
    c.args(["run", "run echo inside > made && cat made"]);
    let (_, stdout, _) = run(c).await;
    assert!(stdout.contains("inside"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(home.path().join("made")).unwrap(),
        "inside\n"
    );
}

#[tokio::test]
async fn env_and_config_set_the_mode_and_bad_values_are_usage_errors() {
    let home = Home::new(DSH);
    let mut c = home.tokio_dsh();
    c.args(["run", "echo hi"]).env("DSH_PERMISSION", "yolo");
    let (code, _, stderr) = run(c).await;
    assert_eq!(code, 2);
    assert!(
        stderr.contains("DSH_PERMISSION (environment): unknown permission mode \"yolo\""),
        "{stderr}"
    );

    let mut c = home.tokio_dsh();
    c.args(["run", "--permission", "off", "echo hi"]);
    let (code, _, stderr) = run(c).await;
    assert_eq!(code, 2, "{stderr}");

    let cfg = home.path().join("perm.toml");
    std::fs::write(
        &cfg,
        "[permission]\nmode = \"danger-full-access\"\napproval = \"never\"\n",
    )
    .unwrap();
    let mut c = home.tokio_dsh();
    c.args(["run", "--config"]).arg(&cfg).arg("echo hi");
    let (code, _, stderr) = run(c).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        home.of_type("sandbox/mode"),
        [json!({"mode": "danger-full-access", "source": cfg.display().to_string()})]
    );

    std::fs::write(&cfg, "[permission]\nmode = \"everything\"\n").unwrap();
    let mut c = home.tokio_dsh();
    c.args(["run", "--config"]).arg(&cfg).arg("echo hi");
    let (code, _, stderr) = run(c).await;
    assert_eq!(code, 2);
    assert!(
        stderr.contains("everything") || stderr.contains("mode"),
        "{stderr}"
    );
}

#[tokio::test]
async fn slash_permission_in_chat_changes_the_mode_and_logs_it() {
    if !landlock() {
        return;
    }
    let home = Home::new(DSH);
    let mut c = home.tokio_dsh();
    c.arg("chat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(
            b"/permission read-only\nrun echo a > a.txt\n/permission bogus\n/permission workspace-write\nrun echo b > b.txt\n/permission\n",
        )
        .await
        .unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!home.path().join("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(home.path().join("b.txt")).unwrap(),
        "b\n"
    );
    assert!(
        stderr.contains("permission mode: read-only (was workspace-write)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("unknown permission mode \"bogus\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("permission mode: workspace-write (change with"),
        "{stderr}"
    );
    assert_eq!(
        home.of_type("sandbox/mode"),
        [
            json!({"mode": "workspace-write", "source": "default"}),
            json!({"mode": "read-only", "source": "/permission"}),
            json!({"mode": "workspace-write", "source": "/permission"}),
        ]
    );
}

#[tokio::test]
async fn doctor_reports_the_sandbox_the_config_the_model_and_the_servers() {
    let home = Home::new(DSH);
    let cfg = home.path().join("doc.toml");
    std::fs::write(&cfg, "[permission]\nmode = \"read-only\"\n").unwrap();
    let mut c = home.tokio_dsh();
    c.args([
        "doctor",
        "--mcp",
        "tools=dsh-no-such-server --flag",
        "--config",
    ])
    .arg(&cfg);
    let (code, stdout, stderr) = run(c).await;
    let support = dsh_sandbox::probe();
    assert_eq!(
        code,
        if support.filesystem_full() { 0 } else { 1 },
        "{stderr}"
    );
    assert!(stdout.contains(&format!("sandbox: {support}")), "{stdout}");
    let namespaces = dsh_sandbox::probe_namespaces();
    let expected = if support.filesystem_full() && namespaces.layer.is_ok() {
        "enforcement: full (Landlock and seccomp, inside user, mount and PID namespaces)"
    } else if support.filesystem_full() {
        "enforcement: partial"
    } else {
        "enforcement: none"
    };
    assert!(stdout.contains(expected), "{stdout}");
    let ns_line = match &namespaces.layer {
        Ok(()) => "  namespaces: active ([sandbox] namespaces = \"auto\"".to_string(),
        Err(why) => format!("  namespaces: unavailable ({why})"),
    };
    assert!(stdout.contains(&ns_line), "{stdout}");
    let scoping = format!("  scoping: {}\n", support.scoping_summary());
    assert!(stdout.contains(&scoping), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "permission: read-only (from {}), approval ask",
            cfg.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("  {} (--config)", cfg.display())),
        "{stdout}"
    );
    assert!(stdout.contains("model: echo"), "{stdout}");
    assert!(stdout.contains("DeepSeek key: not set"), "{stdout}");
    assert!(
        stdout.contains(
            "tools: dsh-no-such-server --flag (enabled, but `dsh-no-such-server` is not found)"
        ),
        "{stdout}"
    );
}

/// A `call bash` line that asks to write `target` under `mode`.
fn escalation(target: &Path, mode: &str, justification: Option<&str>) -> String {
    let mut args = json!({
        "command": format!("echo escaped > {}", target.display()),
        "description": "write outside",
        "sandbox_permissions": mode,
    });
    if let Some(j) = justification {
        args["justification"] = json!(j);
    }
    format!("call bash {args}")
}

/// The `approval/decided` events of the only session.
fn decisions(home: &Home) -> Vec<Value> {
    let dir = home.path().join("data/dsh/sessions");
    let file = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "approval/decided")
        .map(|e| e["data"].clone())
        .collect()
}

#[tokio::test]
async fn run_has_nobody_to_ask_so_an_escalation_is_denied_with_the_way_out() {
    if !landlock() {
        return;
    }
    let home = Home::new(DSH);
    let outside = dsh_testkit::outside_temp_dir(env!("CARGO_TARGET_TMPDIR"), "outside-");
    let target = outside.path().join("x.txt");
    let mut c = home.tokio_dsh();
    c.args([
        "run",
        &escalation(&target, "danger-full-access", Some("needs it")),
    ]);
    let (code, stdout, stderr) = run(c).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(!target.exists(), "nothing ran");
    assert!(
        stdout.contains(
            "permission denied: no user to approve; run with --permission danger-full-access to allow"
        ),
        "{stdout}"
    );
    let d = decisions(&home);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["outcome"], "unavailable");
    assert_eq!(d[0]["by"], "nobody");
}

#[tokio::test]
async fn the_policy_never_denies_without_asking_and_says_why() {
    if !landlock() {
        return;
    }
    let home = Home::new(DSH);
    std::fs::create_dir_all(home.path().join("config/dsh")).unwrap();
    std::fs::write(
        home.path().join("config/dsh/dsh.toml"),
        "[permission]\napproval = \"never\"\n",
    )
    .unwrap();
    let outside = dsh_testkit::outside_temp_dir(env!("CARGO_TARGET_TMPDIR"), "outside-");
    let target = outside.path().join("x.txt");
    let mut c = home.tokio_dsh();
    c.args([
        "run",
        &escalation(&target, "danger-full-access", Some("needs it")),
    ]);
    let (code, stdout, stderr) = run(c).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(!target.exists());
    assert!(stdout.contains("approval policy is \"never\""), "{stdout}");
    assert_eq!(decisions(&home)[0]["by"], "policy");
}

#[tokio::test]
async fn escalation_needs_both_fields_and_a_wider_mode() {
    let home = Home::new(DSH);
    let outside = dsh_testkit::outside_temp_dir(env!("CARGO_TARGET_TMPDIR"), "outside-");
    let target = outside.path().join("x.txt");
    // Both or neither: validation names the missing one; nobody is asked.
    let mut c = home.tokio_dsh();
    c.args(["run", &escalation(&target, "danger-full-access", None)]);
    let (code, stdout, stderr) = run(c).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(
            r#""sandbox_permissions" and "justification" must be given together; "justification" is missing"#
        ),
        "{stdout}"
    );
    assert!(decisions(&home).is_empty());
    // Not wider than the current mode: denied, with what to do instead.
    let home = Home::new(DSH);
    let mut c = home.tokio_dsh();
    c.args([
        "run",
        "--permission",
        "danger-full-access",
        &escalation(&target, "workspace-write", Some("why not")),
    ]);
    let (code, stdout, stderr) = run(c).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(!target.exists());
    assert!(
        stdout.contains("is not wider than the current mode danger-full-access"),
        "{stdout}"
    );
}
