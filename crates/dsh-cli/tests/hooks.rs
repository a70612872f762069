//! Command hooks end to end through `dsh run`, with real shell-script
//! hooks: `[[hooks.<Event>]]` in dsh.toml and a Claude Code `hooks.json`
//! beside it. Checks the world (files the hooks guard, what they were
//! given) and the session log (`hook/ran`), not only what dsh printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use dsh_testkit::cli::{output_within, Home, Outcome, LIMIT};
use serde_json::{json, Value};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// A private home with its user config directory made; dsh runs in `ws`.
fn new_home() -> Home {
    Home::new(DSH).in_dir("ws").with_config_dir()
}

/// Writes an executable script `name` (a `#!/bin/sh` body) in the home and
/// returns its path.
fn script(home: &Home, name: &str, body: &str) -> PathBuf {
    let path = home.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn run(home: &Home, prompt: &str) -> (i32, String, String) {
    run_with(home, prompt, &[])
}

fn run_with(home: &Home, prompt: &str, env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = home.dsh();
    c.envs(env.iter().copied()).args(["run", prompt]);
    Outcome::from(output_within(c, None, LIMIT)).into_parts()
}

/// Every event of the newest session.
fn newest_events(home: &Home) -> Vec<Value> {
    home.logs().pop().unwrap()
}

fn hook_runs(home: &Home) -> Vec<Value> {
    newest_events(home)
        .into_iter()
        .filter(|e| e["type"] == "hook/ran")
        .map(|e| e["data"].clone())
        .collect()
}

fn bash_call(command: &str) -> String {
    format!(
        "call bash {}",
        json!({"command": command, "description": "test"})
    )
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.display())
}

#[test]
fn a_pre_tool_use_hook_blocks_with_exit_2_and_its_stderr_reaches_the_model() {
    let home = new_home();
    let seen = home.path().join("seen.json");
    let hook = script(
        &home,
        "pre.sh",
        &format!(
            "input=$(cat)\nprintf '%s' \"$input\" > {}\ncase \"$input\" in *'rm -rf'*) echo 'rm -rf is not allowed here' >&2; exit 2;; esac\nexit 0",
            quote(&seen)
        ),
    );
    home.write_user_config(&format!(
        "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = {:?}\n",
        hook.display().to_string()
    ));
    let victim = home.cwd().join("keep.txt");
    std::fs::write(&victim, "mine").unwrap();

    let (code, stdout, stderr) = run(&home, &bash_call("rm -rf keep.txt"));
    assert_eq!(code, 0, "{stderr}");
    assert!(victim.exists(), "the blocked command did not run");
    assert!(
        stdout.contains(
            "permission denied: blocked by a PreToolUse hook: rm -rf is not allowed here"
        ),
        "{stdout}"
    );
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "bash");
    assert_eq!(
        input["tool_input"],
        json!({"command": "rm -rf keep.txt", "description": "test"})
    );
    assert_eq!(input["cwd"], json!(home.cwd()));
    assert_eq!(input["permission_mode"], "workspace-write");
    let session_id = input["session_id"].as_str().unwrap();
    assert!(input["transcript_path"]
        .as_str()
        .unwrap()
        .ends_with(&format!("{session_id}.jsonl")));
    let runs = hook_runs(&home);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["effect"], "block");
    assert_eq!(runs[0]["exit"], 2);

    // A harmless command passes, and a tool the matcher does not name
    // never reaches the hook.
    let (_, stdout, _) = run(&home, &bash_call("echo fine"));
    assert!(stdout.contains("fine"), "{stdout}");
    std::fs::remove_file(&seen).unwrap();
    let (_, stdout, _) = run(&home, "echo not bash");
    assert!(stdout.contains("not bash"), "{stdout}");
    assert!(!seen.exists(), "the bash matcher skipped the echo tool");
}

#[test]
fn a_pasted_claude_code_hooks_json_works_with_claude_code_names() {
    let home = new_home();
    // A script written for Claude Code: it expects tool_name "Bash".
    let hook = script(
        &home,
        "guard.sh",
        "input=$(cat)\ncase \"$input\" in *'\"tool_name\":\"Bash\"'*'curl'*) printf '%s' '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"no network from the agent\"}}';; esac\nexit 0",
    );
    let settings = json!({
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook, "timeout": 10}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "true"}]}]
        }
    });
    std::fs::write(home.config_dir().join("hooks.json"), settings.to_string()).unwrap();
    let (code, stdout, stderr) = run(&home, &bash_call("curl http://example.invalid"));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("blocked by a PreToolUse hook: no network from the agent"),
        "{stdout}"
    );
    assert!(
        stderr.contains("\"Notification\" is not supported by dsh"),
        "unsupported events are named: {stderr}"
    );
    let (_, stdout, _) = run(&home, &bash_call("echo allowed"));
    assert!(stdout.contains("allowed"), "{stdout}");
}

#[test]
fn post_tool_use_context_and_blocks_reach_the_model_after_the_call_ran() {
    let home = new_home();
    let seen = home.path().join("post.json");
    let hook = script(
        &home,
        "post.sh",
        &format!(
            "cat > {}\nprintf '%s' '{{\"decision\":\"block\",\"reason\":\"run the tests next\",\"additionalContext\":\"lint is clean\"}}'",
            quote(&seen)
        ),
    );
    home.write_user_config(&format!(
        "[[hooks.PostToolUse]]\nmatcher = \"bash\"\ncommand = {:?}\n",
        hook.display().to_string()
    ));
    let (code, stdout, stderr) = run(&home, &bash_call("echo made > out.txt; echo done"));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(home.cwd().join("out.txt")).unwrap(),
        "made\n",
        "the call ran before the hook"
    );
    assert!(
        stdout.contains("[PostToolUse hook: run the tests next]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[PostToolUse hook context: lint is clean]"),
        "{stdout}"
    );
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert!(input["tool_response"].as_str().unwrap().contains("done"));
}

#[test]
fn user_prompt_submit_adds_context_or_blocks_the_prompt() {
    let home = new_home();
    let hook = script(
        &home,
        "prompt.sh",
        "input=$(cat)\ncase \"$input\" in *secret*) echo 'prompts may not mention secrets' >&2; exit 2;; esac\necho 'the repository uses tabs'",
    );
    home.write_user_config(&format!(
        "[[hooks.UserPromptSubmit]]\ncommand = {:?}\n",
        hook.display().to_string()
    ));
    let (code, stdout, stderr) = run(&home, "echo hello");
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("hello"), "{stdout}");
    let user = newest_events(&home)
        .into_iter()
        .find(|e| e["type"] == "user/message")
        .unwrap();
    let texts: Vec<&str> = user["data"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "echo hello",
            "<user-prompt-submit-hook>\nthe repository uses tabs\n</user-prompt-submit-hook>"
        ]
    );

    let (code, stdout, stderr) = run(&home, "echo the secret");
    assert_eq!(code, 1, "a blocked prompt is a failed run");
    assert!(
        stderr
            .contains("prompt blocked by a UserPromptSubmit hook: prompts may not mention secrets"),
        "{stderr}"
    );
    assert!(!stdout.contains("secret"), "{stdout}");
    assert!(
        !newest_events(&home)
            .iter()
            .any(|e| e["type"] == "user/message"),
        "the blocked prompt never reached the agent"
    );
}

#[test]
fn a_stop_hook_keeps_the_turn_going_once() {
    let home = new_home();
    let log = home.path().join("stop.log");
    let once = home.path().join("once");
    let hook = script(
        &home,
        "stop.sh",
        &format!(
            "cat >> {log}\necho >> {log}\nif [ ! -e {once} ]; then touch {once}; echo '{{\"decision\":\"block\",\"reason\":\"echo checked\"}}'; fi",
            log = quote(&log),
            once = quote(&once)
        ),
    );
    home.write_user_config(&format!(
        "[[hooks.Stop]]\ncommand = {:?}\n",
        hook.display().to_string()
    ));
    let (code, _, stderr) = run(&home, "echo first");
    assert_eq!(code, 0, "{stderr}");
    let inputs: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(inputs.len(), 2, "asked at both ends of the turn");
    assert_eq!(inputs[0]["stop_hook_active"], false);
    assert_eq!(inputs[1]["stop_hook_active"], true);
    let events = newest_events(&home);
    let steered = events
        .iter()
        .find(|e| e["type"] == "steering/message")
        .expect("the reason was steered to the model");
    assert!(steered
        .to_string()
        .contains("A Stop hook kept the turn going: echo checked"));
    let turn_ends = events.iter().filter(|e| e["type"] == "turn/end").count();
    assert_eq!(turn_ends, 1, "one turn that went on");
}

#[test]
fn a_hook_that_asks_is_denied_in_run_and_hooks_get_a_scrubbed_environment() {
    let home = new_home();
    let env_file = home.path().join("env.txt");
    let hook = script(
        &home,
        "ask.sh",
        &format!(
            "env > {}\nprintf '%s' '{{\"hookSpecificOutput\":{{\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"deploys need a human\"}}}}'",
            quote(&env_file)
        ),
    );
    home.write_user_config(&format!(
        "[[hooks.PreToolUse]]\ncommand = {:?}\n",
        hook.display().to_string()
    ));
    let marker = home.cwd().join("deployed");
    let (code, stdout, stderr) = run_with(
        &home,
        &bash_call(&format!("touch {}", marker.display())),
        &[("MY_API_TOKEN", "hunter2"), ("DSH_VISIBLE", "yes")],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!marker.exists());
    assert!(
        stdout.contains("no user to approve; run with --permission danger-full-access to allow"),
        "{stdout}"
    );
    let env = std::fs::read_to_string(&env_file).unwrap();
    assert!(env.contains("DSH_VISIBLE=yes"));
    assert!(!env.contains("hunter2"), "secrets are scrubbed:\n{env}");
    assert!(env.contains(&format!("CLAUDE_PROJECT_DIR={}", home.cwd().display())));
    let decided: Vec<Value> = newest_events(&home)
        .into_iter()
        .filter(|e| e["type"] == "approval/asked")
        .collect();
    assert_eq!(decided.len(), 1);
    assert!(decided[0]["data"]["summary"]
        .as_str()
        .unwrap()
        .contains("a PreToolUse hook asks: deploys need a human"));
}

#[test]
fn bad_hook_configuration_is_an_error_naming_the_file() {
    let home = new_home();
    home.write_user_config("[[hooks.PreToolUse]]\nmatcher = \"ba(sh\"\ncommand = \"true\"\n");
    let (code, _, stderr) = run(&home, "echo x");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("dsh.toml"), "{stderr}");
    assert!(
        stderr.contains("not a valid regular expression"),
        "{stderr}"
    );

    let home = new_home();
    std::fs::write(home.config_dir().join("hooks.json"), "{\"hooks\": [").unwrap();
    let (code, _, stderr) = run(&home, "echo x");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("hooks.json: not valid JSON"), "{stderr}");
}

#[test]
fn an_untrusted_project_hooks_json_is_refused_and_does_not_run() {
    let home = new_home();
    let ran = home.path().join("ran");
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": format!("touch {}", ran.display())}]}]}});
    std::fs::write(home.cwd().join("hooks.json"), settings.to_string()).unwrap();
    // `dsh run` refuses an untrusted project config that sets hooks.
    let (code, _, stderr) = run(&home, "echo hi");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("is not trusted: it sets hooks"), "{stderr}");
    assert!(!ran.exists(), "an untrusted project's hook never runs");
}
