//! Lasting permission rules end to end: `[permission] allow`/`deny`/`ask`
//! in the user config, a trusted project config and `permissions.toml`,
//! judged on real calls of the offline echo model in `dsh run`, and
//! listed by `dsh permissions list`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_testkit::cli::{outcome, Home};
use serde_json::{json, Value};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

const NO_USER: &str =
    "permission denied: no user to approve; run with --permission danger-full-access to allow";

fn landlock() -> bool {
    let ok = dsh_sandbox::probe().filesystem_full();
    if !ok {
        eprintln!("SKIP: Landlock unavailable: {}", dsh_sandbox::probe());
    }
    ok
}

async fn dsh(home: &Home, args: &[&str]) -> (i32, String, String) {
    let mut c = home.tokio_dsh();
    c.args(args);
    outcome(c).await.into_parts()
}

/// `call bash {...}` for `command`, escalating to `mode` when given.
fn bash(command: &str, mode: Option<&str>) -> String {
    let mut args = json!({"command": command, "description": "test"});
    if let Some(mode) = mode {
        args["sandbox_permissions"] = json!(mode);
        args["justification"] = json!("the test needs it");
    }
    format!("call bash {args}")
}

/// The session's events of `kind`, in order.
fn events(home: &Home, kind: &str) -> Vec<Value> {
    home.of_type(kind)
}

#[tokio::test]
async fn an_allow_rule_answers_a_workspace_write_escalation_without_a_user() {
    if !landlock() {
        return;
    }
    let home = Home::new(DSH);
    home.write_user_config("[permission]\nallow = [\"bash(touch:*)\"]\n");
    let (code, stdout, stderr) = dsh(
        &home,
        &[
            "run",
            "--permission",
            "read-only",
            &bash("touch made", Some("workspace-write")),
        ],
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains("permission denied"), "{stdout}");
    assert!(
        home.path().join("made").exists(),
        "the escalated command ran"
    );
    let decided = events(&home, "approval/decided");
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0]["by"], "rule");
    assert_eq!(decided[0]["rule"], "bash(touch:*)");
    assert_eq!(decided[0]["outcome"], "allowed-once");
}

#[tokio::test]
async fn an_allow_rule_neither_covers_other_commands_nor_widens_to_full_access() {
    if !landlock() {
        return;
    }
    let home = Home::new(DSH);
    home.write_user_config("[permission]\nallow = [\"bash(touch:*)\"]\n");
    // A chained command the rule does not cover: asked, nobody to answer.
    let (code, stdout, stderr) = dsh(
        &home,
        &[
            "run",
            "--permission",
            "read-only",
            &bash("touch made && rm -f x", Some("workspace-write")),
        ],
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(NO_USER), "{stdout}");
    assert!(!home.path().join("made").exists());
    // Full access is always asked.
    let home = Home::new(DSH);
    home.write_user_config("[permission]\nallow = [\"bash(touch:*)\"]\n");
    let (_, stdout, _) = dsh(
        &home,
        &[
            "run",
            "--permission",
            "read-only",
            &bash("touch made", Some("danger-full-access")),
        ],
    )
    .await;
    assert!(stdout.contains(NO_USER), "{stdout}");
    assert!(!home.path().join("made").exists());
    assert_eq!(events(&home, "approval/decided")[0]["by"], "nobody");
}

#[tokio::test]
async fn a_deny_rule_refuses_a_call_the_mode_allows_and_names_the_rule() {
    let home = Home::new(DSH);
    home.write_user_config("[permission]\ndeny = [\"bash(echo:*)\"]\n");
    let (code, stdout, stderr) = dsh(&home, &["run", &bash("echo hi > out", None)]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(
            "permission denied: denied by permission rule \"bash(echo:*)\" (~/config/dsh/dsh.toml)"
        ),
        "{stdout}"
    );
    assert!(!home.path().join("out").exists(), "nothing ran");
    let (_, stdout, _) = dsh(&home, &["run", &bash("true && echo hi > out", None)]).await;
    assert!(stdout.contains("denied by permission rule"), "{stdout}");
    assert!(!home.path().join("out").exists());
    // Other commands run as before.
    let (_, stdout, _) = dsh(&home, &["run", &bash("printf ok > out", None)]).await;
    assert!(!stdout.contains("permission denied"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(home.path().join("out")).unwrap(),
        "ok"
    );
}

#[tokio::test]
async fn an_ask_rule_asks_even_where_the_mode_allows_and_dsh_run_cannot_answer() {
    let home = Home::new(DSH);
    home.write_user_config("[permission]\nask = [\"Bash(printf:*)\"]\n");
    let (code, stdout, stderr) = dsh(&home, &["run", &bash("printf x > out", None)]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(NO_USER), "{stdout}");
    assert!(!home.path().join("out").exists());
    let asked = events(&home, "approval/asked");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        asked[0]["summary"],
        "run a command (permission rule \"Bash(printf:*)\" (~/config/dsh/dsh.toml) asks)"
    );
}

#[tokio::test]
async fn rules_saved_for_the_project_apply_there_only() {
    let home = Home::new(DSH).in_dir("proj");
    let key = std::fs::canonicalize(home.cwd()).unwrap();
    std::fs::create_dir_all(home.config_dir()).unwrap();
    std::fs::write(
        home.config_dir().join("permissions.toml"),
        format!(
            "[projects.{:?}]\ndeny = [\"bash(printf:*)\"]\n[projects.\"/somewhere/else\"]\ndeny = [\"bash(true)\"]\n",
            key.display().to_string()
        ),
    )
    .unwrap();
    let (_, stdout, _) = dsh(&home, &["run", &bash("printf x; true", None)]).await;
    assert!(
        stdout.contains(&format!(
            "denied by permission rule \"bash(printf:*)\" (permissions.toml [projects.{:?}])",
            key.display().to_string()
        )),
        "{stdout}"
    );
    let (_, stdout, _) = dsh(&home, &["run", &bash("true", None)]).await;
    assert!(!stdout.contains("permission denied"), "{stdout}");
}

#[tokio::test]
async fn a_rule_that_cannot_be_parsed_stops_dsh_naming_the_rule_and_the_file() {
    let home = Home::new(DSH);
    home.write_user_config("[permission]\nallow = [\"bash(cargo test\"]\n");
    let (code, stdout, stderr) = dsh(&home, &["run", "echo hi"]).await;
    assert_eq!(code, 2, "{stdout}");
    assert!(
        stderr.contains(
            "invalid permission rule \"bash(cargo test\" in ~/config/dsh/dsh.toml (allow list)"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("[PERMISSION_RULE_INVALID]"), "{stderr}");
    let (code, _, stderr) = dsh(&home, &["permissions", "list"]).await;
    assert_eq!(code, 2);
    assert!(stderr.contains("\"bash(cargo test\""), "{stderr}");
    // A broken permissions.toml is a configuration error too.
    let home = Home::new(DSH);
    std::fs::create_dir_all(home.config_dir()).unwrap();
    std::fs::write(home.config_dir().join("permissions.toml"), "[projects\n").unwrap();
    let (code, _, stderr) = dsh(&home, &["run", "echo hi"]).await;
    assert_eq!(code, 2);
    assert!(stderr.contains("permissions.toml"), "{stderr}");
}

#[tokio::test]
async fn permissions_list_shows_each_rule_with_its_source() {
    let home = Home::new(DSH).in_dir("proj");
    let (code, stdout, stderr) = dsh(&home, &["permissions", "list"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("no permission rules"), "{stdout}");

    home.write_user_config(
        "[permission]\nallow = [\"bash(cargo test:*)\", \"mcp__github__*\"]\ndeny = [\"bash(rm:*)\"]\n",
    );
    home.write_project_config("[permission]\nask = [\"edit(src/**)\"]\n");
    let key = std::fs::canonicalize(home.cwd())
        .unwrap()
        .display()
        .to_string();
    std::fs::write(
        home.config_dir().join("permissions.toml"),
        format!("[projects.{key:?}]\nallow = [\"bash(git status)\"]\n"),
    )
    .unwrap();
    // Untrusted: the project's rules are left out, with a warning.
    let (code, stdout, stderr) = dsh(&home, &["permissions", "list"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("ignoring permission from the untrusted project config"),
        "{stderr}"
    );
    let saved = format!("permissions.toml [projects.{key:?}]");
    assert_eq!(
        stdout,
        format!(
            "deny:\n  bash(rm:*)\t~/config/dsh/dsh.toml\nallow:\n  bash(cargo test:*)\t~/config/dsh/dsh.toml\n  mcp__github__*\t~/config/dsh/dsh.toml\n  bash(git status)\t{saved}\n"
        )
    );
    // Trusted for this run: its rules join in.
    let (code, stdout, stderr) =
        dsh(&home, &["permissions", "list", "--json", "--trust-project"]).await;
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        v["ask"],
        json!([{"rule": "edit(src/**)", "source": "./dsh.toml (trusted)"}])
    );
    assert_eq!(v["deny"][0]["rule"], "bash(rm:*)");
    assert_eq!(v["allow"].as_array().unwrap().len(), 3);
    assert_eq!(v["allow"][2]["source"], json!(saved));
}

#[tokio::test]
async fn an_allow_rule_answers_a_hooks_ask() {
    let home = Home::new(DSH);
    let hook = home.path().join("ask.sh");
    std::fs::write(
        &hook,
        "#!/bin/sh\nprintf '%s' '{\"hookSpecificOutput\":{\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"a human should look\"}}'\n",
    )
    .unwrap();
    let mut perms = std::fs::metadata(&hook).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&hook, perms).unwrap();
    let hooks = format!(
        "[[hooks.PreToolUse]]\ncommand = {:?}\n",
        hook.display().to_string()
    );
    // Without a rule the hook's question goes unanswered in `dsh run`.
    home.write_user_config(&hooks);
    let (_, stdout, _) = dsh(&home, &["run", &bash("printf x > out", None)]).await;
    assert!(stdout.contains(NO_USER), "{stdout}");
    assert!(!home.path().join("out").exists());
    // With one, the rule answers it.
    home.write_user_config(&format!(
        "[permission]\nallow = [\"bash(printf:*)\"]\n{hooks}"
    ));
    let (code, stdout, stderr) = dsh(&home, &["run", &bash("printf x > out", None)]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains("permission denied"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(home.path().join("out")).unwrap(),
        "x"
    );
}
