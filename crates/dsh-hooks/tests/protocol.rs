//! The hook protocol end to end against real `sh` hooks in a temp dir: the
//! stdin payload, exit codes and stdout JSON, combining several hooks,
//! matchers, timeouts, the environment, and killing hooks (timeout, a
//! dropped future, background children).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_hooks::{Effect, HookContext, HookEntry, HookEvent, HookSet, Hooks, HooksSection};
use serde_json::{json, Value};

/// A temp dir holding the hooks' files and, below it, the project the
/// hooks run in.
struct World {
    dir: tempfile::TempDir,
    cwd: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap().join("project");
        std::fs::create_dir(&cwd).unwrap();
        World { dir, cwd }
    }

    /// The absolute path of `name` in the temp dir.
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `name`'s absolute path, single-quoted for a shell command.
    fn q(&self, name: &str) -> String {
        let p = self.path(name);
        let s = p.to_str().unwrap();
        assert!(!s.contains('\''), "temp dir path with a quote: {s}");
        format!("'{s}'")
    }

    fn exists(&self, name: &str) -> bool {
        self.path(name).exists()
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name))
            .unwrap_or_else(|e| panic!("{name} was not written by the hook: {e}"))
    }

    fn read_json(&self, name: &str) -> Value {
        serde_json::from_str(&self.read(name)).unwrap()
    }

    /// Writes an executable `#!/bin/sh` script `name`; returns its quoted
    /// path (a command).
    fn script(&self, name: &str, body: &str) -> String {
        let p = self.path(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        self.q(name)
    }

    fn ctx(&self) -> HookContext {
        HookContext {
            session_id: "sess-123".into(),
            transcript_path: None,
            cwd: self.cwd.clone(),
            permission_mode: "workspace-write".into(),
        }
    }
}

/// The environment hooks get: just `PATH`.
fn path_env() -> Vec<(OsString, OsString)> {
    vec![(
        "PATH".into(),
        std::env::var_os("PATH").expect("PATH is set"),
    )]
}

fn entry(matcher: Option<&str>, command: impl Into<String>, timeout: Option<u64>) -> HookEntry {
    HookEntry {
        matcher: matcher.map(str::to_string),
        command: command.into(),
        timeout,
    }
}

fn hooks_of(section: HooksSection) -> Arc<Hooks> {
    Hooks::new(
        HookSet::from_section(&section, "test.toml").unwrap(),
        path_env(),
    )
}

/// Hooks with `entries` on `PreToolUse`.
fn pre_hooks(entries: Vec<HookEntry>) -> Arc<Hooks> {
    hooks_of(HooksSection {
        pre_tool_use: entries,
        ..Default::default()
    })
}

/// Hooks from a Claude Code `hooks.json`, with no warnings.
fn claude_hooks(text: &str) -> Arc<Hooks> {
    let (set, warnings) = HookSet::from_claude_json(text, "hooks.json").unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    Hooks::new(set, path_env())
}

const BASH_ARGS: &str = r#"{"command":"ls -la","timeout":5}"#;

// ---------------------------------------------------------------- stdin

#[tokio::test]
async fn pre_tool_use_payload_has_every_field_with_dsh_tool_names() {
    let w = World::new();
    let hooks = pre_hooks(vec![entry(None, format!("cat > {}", w.q("in.json")), None)]);
    let mut ctx = w.ctx();
    let transcript = w.path("session.jsonl");
    ctx.transcript_path = Some(transcript.clone());

    let out = hooks.pre_tool_use(&ctx, "bash", BASH_ARGS).await;
    assert_eq!(out.effect, Effect::Proceed);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.runs.len(), 1);
    assert_eq!(out.runs[0].exit, Some(0));
    assert_eq!(out.runs[0].event, HookEvent::PreToolUse);

    let raw = w.read("in.json");
    assert!(
        raw.ends_with('\n'),
        "payload is one line ending in a newline: {raw:?}"
    );
    let v: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(v["session_id"], "sess-123");
    assert_eq!(v["transcript_path"], json!(transcript.to_str().unwrap()));
    assert_eq!(v["cwd"], json!(w.cwd.to_str().unwrap()));
    assert_eq!(v["permission_mode"], "workspace-write");
    assert_eq!(v["hook_event_name"], "PreToolUse");
    assert_eq!(v["tool_name"], "bash");
    assert_eq!(v["tool_input"], json!({"command": "ls -la", "timeout": 5}));
    assert!(v.get("tool_response").is_none(), "{v}");
    assert!(v.get("prompt").is_none(), "{v}");
}

#[tokio::test]
async fn payload_without_transcript_and_with_unparsable_arguments() {
    let w = World::new();
    let hooks = pre_hooks(vec![entry(None, format!("cat > {}", w.q("in.json")), None)]);
    hooks.pre_tool_use(&w.ctx(), "write", "{not json").await;
    let v = w.read_json("in.json");
    assert!(
        v.get("transcript_path").is_none(),
        "no transcript_path when none is given: {v}"
    );
    assert_eq!(v["tool_name"], "write");
    assert_eq!(
        v["tool_input"],
        json!("{not json"),
        "unparsable arguments are the text"
    );
}

#[tokio::test]
async fn claude_json_hooks_see_claude_code_tool_names() {
    let w = World::new();
    let text = json!({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": format!("cat > {}", w.q("in.json"))}
    ]}]}})
    .to_string();
    let hooks = claude_hooks(&text);
    hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    let v = w.read_json("in.json");
    assert_eq!(v["tool_name"], "Bash");
    assert_eq!(v["hook_event_name"], "PreToolUse");
    assert_eq!(v["tool_input"], json!({"command": "ls -la", "timeout": 5}));

    // A tool without a Claude Code name keeps its dsh name.
    hooks.pre_tool_use(&w.ctx(), "no_such_tool", "{}").await;
    assert_eq!(w.read_json("in.json")["tool_name"], "no_such_tool");
    // An MCP tool gets the mcp__ prefix.
    // dsh's own MCP names already have that form.
    hooks.pre_tool_use(&w.ctx(), "mcp__mem__store", "{}").await;
    assert_eq!(w.read_json("in.json")["tool_name"], "mcp__mem__store");
    // The older form (`mcp_tool_prefix = ""`) gets the prefix.
    hooks.pre_tool_use(&w.ctx(), "mem__store", "{}").await;
    assert_eq!(w.read_json("in.json")["tool_name"], "mcp__mem__store");

    let text = json!({"PostToolUse": [{"matcher": "Write", "hooks": [
        {"type": "command", "command": format!("cat > {}", w.q("post.json"))}
    ]}]})
    .to_string();
    let hooks = claude_hooks(&text);
    hooks
        .post_tool_use(&w.ctx(), "write", r#"{"path":"a.txt"}"#, "wrote a.txt")
        .await;
    let v = w.read_json("post.json");
    assert_eq!(v["hook_event_name"], "PostToolUse");
    assert_eq!(v["tool_name"], "Write");
    assert_eq!(v["tool_input"], json!({"path": "a.txt"}));
    assert_eq!(v["tool_response"], "wrote a.txt");
}

#[tokio::test]
async fn post_tool_use_prompt_and_stop_payloads() {
    let w = World::new();
    let hooks = hooks_of(HooksSection {
        post_tool_use: vec![entry(None, format!("cat > {}", w.q("post.json")), None)],
        user_prompt_submit: vec![entry(None, format!("cat > {}", w.q("prompt.json")), None)],
        stop: vec![entry(None, format!("cat > {}", w.q("stop.json")), None)],
        ..Default::default()
    });
    let ctx = w.ctx();

    hooks
        .post_tool_use(&ctx, "bash", BASH_ARGS, "total 0\nfile.txt\n")
        .await;
    let post = w.read_json("post.json");
    assert_eq!(post["hook_event_name"], "PostToolUse");
    assert_eq!(post["tool_name"], "bash");
    assert_eq!(
        post["tool_input"],
        json!({"command": "ls -la", "timeout": 5})
    );
    assert_eq!(post["tool_response"], "total 0\nfile.txt\n");
    assert_eq!(post["session_id"], "sess-123");
    assert_eq!(post["cwd"], json!(w.cwd.to_str().unwrap()));

    hooks
        .user_prompt_submit(&ctx, "fix the \"bug\"\nplease")
        .await;
    let prompt = w.read_json("prompt.json");
    assert_eq!(prompt["hook_event_name"], "UserPromptSubmit");
    assert_eq!(prompt["prompt"], "fix the \"bug\"\nplease");
    assert_eq!(prompt["permission_mode"], "workspace-write");
    assert!(prompt.get("tool_name").is_none(), "{prompt}");
    assert!(prompt.get("tool_input").is_none(), "{prompt}");

    hooks.stop(&ctx, true).await;
    let stop = w.read_json("stop.json");
    assert_eq!(stop["hook_event_name"], "Stop");
    assert_eq!(stop["stop_hook_active"], json!(true));
    assert!(stop.get("tool_name").is_none(), "{stop}");
    hooks.stop(&ctx, false).await;
    assert_eq!(w.read_json("stop.json")["stop_hook_active"], json!(false));
}

// ---------------------------------------------------- exit codes, stdout

#[tokio::test]
async fn exit_zero_proceeds() {
    let w = World::new();
    let hooks = pre_hooks(vec![entry(
        None,
        format!("touch {}; exit 0", w.q("ran")),
        None,
    )]);
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert!(w.exists("ran"));
    assert_eq!(out.effect, Effect::Proceed);
    assert!(out.warnings.is_empty() && out.context.is_empty(), "{out:?}");
    assert_eq!(out.runs[0].exit, Some(0));
    assert_eq!(out.runs[0].effect, Effect::Proceed);
    assert!(!out.runs[0].timed_out);
}

#[tokio::test]
async fn exit_two_blocks_with_trimmed_stderr() {
    let w = World::new();
    let cmd = w.script(
        "block.sh",
        &format!(
            "touch {}\necho 'ignored stdout'\nprintf '  no rm -rf here \\n\\n' >&2\nexit 2",
            w.q("ran")
        ),
    );
    let hooks = pre_hooks(vec![entry(None, cmd.clone(), None)]);
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert!(w.exists("ran"));
    assert_eq!(out.effect, Effect::Block("no rm -rf here".into()));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.runs[0].exit, Some(2));
    assert_eq!(out.runs[0].command, cmd);
    assert_eq!(out.runs[0].effect, Effect::Block("no rm -rf here".into()));
    let logged = out.runs[0].to_json();
    assert_eq!(logged["effect"], "block");
    assert_eq!(logged["reason"], "no rm -rf here");
    assert_eq!(logged["exit"], 2);
}

#[tokio::test]
async fn exit_two_without_stderr_blocks_naming_the_hook() {
    let w = World::new();
    let hooks = pre_hooks(vec![entry(None, "exit 2", None)]);
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert_eq!(out.effect, Effect::Block("blocked by hook `exit 2`".into()));
}

#[tokio::test]
async fn exit_one_warns_with_stderr_and_proceeds() {
    let w = World::new();
    let hooks = pre_hooks(vec![entry(
        None,
        format!(
            "touch {}; echo 'linter crashed: E42' >&2; exit 1",
            w.q("ran")
        ),
        None,
    )]);
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert!(w.exists("ran"));
    assert_eq!(out.effect, Effect::Proceed);
    assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
    assert!(
        out.warnings[0].contains("linter crashed: E42"),
        "{:?}",
        out.warnings
    );
    assert!(
        out.warnings[0].contains("exited with code 1"),
        "{:?}",
        out.warnings
    );
    assert_eq!(out.runs[0].exit, Some(1));
}

#[tokio::test]
async fn a_hook_killed_by_a_signal_warns_and_proceeds() {
    let w = World::new();
    let hooks = pre_hooks(vec![entry(None, "kill -9 $$", None)]);
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert_eq!(out.effect, Effect::Proceed);
    assert_eq!(out.runs[0].exit, None);
    assert!(!out.runs[0].timed_out);
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("killed by a signal")),
        "{:?}",
        out.warnings
    );
}

#[tokio::test]
async fn stdout_json_decision_block() {
    let w = World::new();
    let cmd = w.script(
        "json-block.sh",
        &format!(
            "cat > {}\necho '{{\"decision\":\"block\",\"reason\":\"r\"}}'",
            w.q("in.json")
        ),
    );
    let hooks = pre_hooks(vec![entry(None, cmd, None)]);
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert_eq!(w.read_json("in.json")["tool_name"], "bash");
    assert_eq!(out.effect, Effect::Block("r".into()));
    assert_eq!(out.runs[0].exit, Some(0));
}

#[tokio::test]
async fn stdout_json_permission_decision_ask() {
    let w = World::new();
    let cmd = w.script(
        "json-ask.sh",
        r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"q"}}'"#,
    );
    let hooks = pre_hooks(vec![entry(None, cmd, None)]);
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert_eq!(out.effect, Effect::Ask("q".into()));
    assert_eq!(out.runs[0].effect, Effect::Ask("q".into()));
}

#[tokio::test]
async fn stdout_json_additional_context_and_system_message() {
    let w = World::new();
    let cmd = w.script(
        "json-ctx.sh",
        r#"echo '{"additionalContext":"tests live in t/","systemMessage":"heads up"}'"#,
    );
    let cmd2 = w.script(
        "json-ctx2.sh",
        r#"echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"formatted the file"}}'"#,
    );
    let hooks = hooks_of(HooksSection {
        pre_tool_use: vec![entry(None, cmd, None)],
        post_tool_use: vec![entry(None, cmd2, None)],
        ..Default::default()
    });
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert_eq!(out.effect, Effect::Proceed);
    assert_eq!(out.context, vec!["tests live in t/".to_string()]);
    assert_eq!(out.context_text().as_deref(), Some("tests live in t/"));
    assert_eq!(out.warnings, vec!["heads up".to_string()]);

    let out = hooks.post_tool_use(&w.ctx(), "write", "{}", "ok").await;
    assert_eq!(out.effect, Effect::Proceed);
    assert_eq!(out.context, vec!["formatted the file".to_string()]);
}

#[tokio::test]
async fn plain_stdout_is_context_only_for_user_prompt_submit() {
    let w = World::new();
    let say = "echo 'today is Friday'";
    let hooks = hooks_of(HooksSection {
        pre_tool_use: vec![entry(None, say, None)],
        user_prompt_submit: vec![entry(None, format!("cat > {}; {say}", w.q("p.json")), None)],
        ..Default::default()
    });
    let out = hooks.user_prompt_submit(&w.ctx(), "hello").await;
    assert_eq!(w.read_json("p.json")["prompt"], "hello");
    assert_eq!(out.effect, Effect::Proceed);
    assert_eq!(out.context, vec!["today is Friday".to_string()]);

    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert_eq!(out.runs.len(), 1);
    assert!(out.context.is_empty(), "{:?}", out.context);
}

#[tokio::test]
async fn user_prompt_submit_and_stop_can_block() {
    let w = World::new();
    let hooks = hooks_of(HooksSection {
        user_prompt_submit: vec![entry(
            None,
            "echo 'no secrets in prompts' >&2; exit 2",
            None,
        )],
        stop: vec![entry(
            None,
            r#"echo '{"decision":"block","reason":"tests still fail"}'"#,
            None,
        )],
        ..Default::default()
    });
    let out = hooks.user_prompt_submit(&w.ctx(), "the key is 123").await;
    assert_eq!(out.effect, Effect::Block("no secrets in prompts".into()));
    let out = hooks.stop(&w.ctx(), false).await;
    assert_eq!(out.effect, Effect::Block("tests still fail".into()));
}

#[tokio::test]
async fn ask_after_the_fact_is_proceed() {
    let w = World::new();
    let hooks = hooks_of(HooksSection {
        post_tool_use: vec![entry(
            None,
            r#"echo '{"decision":"ask","reason":"?"}'"#,
            None,
        )],
        ..Default::default()
    });
    let out = hooks.post_tool_use(&w.ctx(), "bash", BASH_ARGS, "").await;
    assert_eq!(out.effect, Effect::Proceed);
}

// ------------------------------------------------------ several hooks

#[tokio::test]
async fn several_hooks_combine_to_the_most_restrictive_in_order() {
    let w = World::new();
    // The first hook finishes last: the runs still follow configuration
    // order, not completion order.
    let proceed = format!("sleep 0.4; touch {}", w.q("a"));
    let ask = format!(
        r#"touch {}; echo '{{"hookSpecificOutput":{{"permissionDecision":"ask","permissionDecisionReason":"sure?"}}}}'"#,
        w.q("b")
    );
    let block = format!("touch {}; echo 'nope' >&2; exit 2", w.q("c"));
    let hooks = pre_hooks(vec![
        entry(None, proceed.clone(), None),
        entry(Some("bash"), ask.clone(), None),
        entry(Some("*"), block.clone(), None),
    ]);
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert!(w.exists("a") && w.exists("b") && w.exists("c"));
    assert_eq!(out.effect, Effect::Block("nope".into()));
    let commands: Vec<&str> = out.runs.iter().map(|r| r.command.as_str()).collect();
    assert_eq!(
        commands,
        vec![proceed.as_str(), ask.as_str(), block.as_str()]
    );
    let effects: Vec<&Effect> = out.runs.iter().map(|r| &r.effect).collect();
    assert_eq!(
        effects,
        vec![
            &Effect::Proceed,
            &Effect::Ask("sure?".into()),
            &Effect::Block("nope".into())
        ]
    );
    assert!(out.runs[0].duration_ms >= 300, "{:?}", out.runs[0]);
}

#[tokio::test]
async fn two_blocks_join_their_reasons_and_contexts_keep_order() {
    let w = World::new();
    let hooks = pre_hooks(vec![
        entry(
            None,
            r#"sleep 0.3; echo '{"additionalContext":"first"}'"#,
            None,
        ),
        entry(None, "echo one >&2; exit 2", None),
        entry(None, r#"echo '{"additionalContext":"second"}'"#, None),
        entry(None, "echo two >&2; exit 2", None),
    ]);
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert_eq!(out.effect, Effect::Block("one; two".into()));
    assert_eq!(out.context, vec!["first".to_string(), "second".to_string()]);
    assert_eq!(out.context_text().as_deref(), Some("first\n\nsecond"));
}

#[tokio::test]
async fn hooks_run_concurrently() {
    let w = World::new();
    let hooks = pre_hooks(vec![
        entry(None, format!("sleep 1; touch {}", w.q("one")), None),
        entry(None, format!("sleep 1; touch {}", w.q("two")), None),
    ]);
    let started = Instant::now();
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    let took = started.elapsed();
    assert!(w.exists("one") && w.exists("two"));
    assert_eq!(out.runs.len(), 2);
    assert!(out.runs.iter().all(|r| r.exit == Some(0)), "{:?}", out.runs);
    assert!(took >= Duration::from_millis(950), "{took:?}");
    assert!(
        took < Duration::from_millis(1800),
        "hooks ran one after the other: {took:?}"
    );
}

#[tokio::test]
async fn no_matching_hook_is_outcome_none() {
    let w = World::new();
    let hooks = pre_hooks(vec![entry(None, format!("touch {}", w.q("ran")), None)]);
    assert!(hooks.has(HookEvent::PreToolUse));
    assert!(!hooks.has(HookEvent::Stop));
    let out = hooks.stop(&w.ctx(), false).await;
    assert_eq!(out, dsh_hooks::Outcome::none());
    assert!(!w.exists("ran"));
}

// ------------------------------------------------------------ matchers

#[tokio::test]
async fn matchers_select_hooks_by_tool() {
    let w = World::new();
    let hooks = pre_hooks(vec![
        entry(Some("write|edit"), format!("touch {}", w.q("we")), None),
        entry(Some("Write"), format!("touch {}", w.q("claude-name")), None),
    ]);
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert!(out.runs.is_empty(), "{:?}", out.runs);
    assert!(!w.exists("we"), "write|edit ran for bash");
    assert!(!w.exists("claude-name"));

    // Matched whole: `write` does not match `write_file`.
    hooks.pre_tool_use(&w.ctx(), "write_file", "{}").await;
    assert!(!w.exists("we"), "write|edit ran for write_file");

    let out = hooks.pre_tool_use(&w.ctx(), "write", "{}").await;
    assert!(w.exists("we"), "write|edit did not run for write");
    assert!(w.exists("claude-name"), "Write did not run for write");
    assert_eq!(out.runs.len(), 2);
}

#[tokio::test]
async fn claude_json_matcher_uses_claude_code_names() {
    let w = World::new();
    let text = json!({"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": format!("touch {}", w.q("bash"))}]},
        {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": format!("touch {}", w.q("edit"))}]}
    ]})
    .to_string();
    let hooks = claude_hooks(&text);
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert!(
        w.exists("bash"),
        "matcher Bash did not run for dsh tool bash"
    );
    assert!(!w.exists("edit"), "matcher Edit|Write ran for bash");
    assert_eq!(out.runs.len(), 1);
    hooks.pre_tool_use(&w.ctx(), "edit", "{}").await;
    assert!(w.exists("edit"));
}

#[tokio::test]
async fn matchers_do_not_apply_to_events_without_tools() {
    let w = World::new();
    let hooks = hooks_of(HooksSection {
        user_prompt_submit: vec![entry(Some("bash"), format!("touch {}", w.q("p")), None)],
        ..Default::default()
    });
    hooks.user_prompt_submit(&w.ctx(), "hi").await;
    assert!(w.exists("p"));
}

// ------------------------------------------------------------ timeouts

#[tokio::test]
async fn a_hook_past_its_timeout_is_killed_with_its_group() {
    let w = World::new();
    let cmd = format!(
        "touch {started}; (sleep 2; touch {child}) & sleep 30; touch {late}",
        started = w.q("started"),
        child = w.q("late-child"),
        late = w.q("late"),
    );
    let hooks = pre_hooks(vec![entry(None, cmd, Some(1))]);
    let t = Instant::now();
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    let took = t.elapsed();
    assert!(w.exists("started"));
    assert!(took >= Duration::from_millis(950), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(out.effect, Effect::Proceed);
    assert!(
        out.warnings.iter().any(|m| m.contains("timed out")),
        "{:?}",
        out.warnings
    );
    assert!(out.runs[0].timed_out);
    assert_eq!(out.runs[0].exit, None);
    assert_eq!(out.runs[0].to_json()["timedOut"], json!(true));

    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!w.exists("late"), "the timed-out hook went on");
    assert!(
        !w.exists("late-child"),
        "the timed-out hook's child went on"
    );
}

#[tokio::test]
async fn a_background_child_of_a_finished_hook_is_killed() {
    let w = World::new();
    let cmd = format!(
        r#"(sleep 2; touch {bg}) & touch {ran}; echo '{{"decision":"block","reason":"bgr"}}'"#,
        bg = w.q("bg"),
        ran = w.q("ran"),
    );
    let hooks = pre_hooks(vec![entry(None, cmd, None)]);
    let t = Instant::now();
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    let took = t.elapsed();
    assert!(w.exists("ran"));
    // The child holds stdout open; the hook's answer is still read, and
    // quickly.
    assert_eq!(out.effect, Effect::Block("bgr".into()));
    assert!(took < Duration::from_millis(1500), "{took:?}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!w.exists("bg"), "the hook's background child outlived it");
}

#[tokio::test]
async fn a_background_child_with_closed_pipes_is_killed_too() {
    let w = World::new();
    let cmd = format!(
        "(sleep 2; touch {bg}) </dev/null >/dev/null 2>&1 & exit 0",
        bg = w.q("bg"),
    );
    let hooks = pre_hooks(vec![entry(None, cmd, None)]);
    let t = Instant::now();
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(out.effect, Effect::Proceed);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!w.exists("bg"), "the hook's background child outlived it");
}

// --------------------------------------------------------- environment

#[tokio::test]
async fn hooks_get_exactly_the_given_environment_and_run_in_cwd() {
    let w = World::new();
    let mut env = path_env();
    env.push(("DSH_TEST_PASSED".into(), "passed value".into()));
    // A stale project dir in the given env is replaced by the context's.
    env.push(("CLAUDE_PROJECT_DIR".into(), "/stale".into()));
    let section = HooksSection {
        pre_tool_use: vec![entry(
            None,
            format!("env > {}; pwd > {}", w.q("env.txt"), w.q("pwd.txt")),
            None,
        )],
        ..Default::default()
    };
    let hooks = Hooks::new(HookSet::from_section(&section, "test.toml").unwrap(), env);
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert_eq!(out.runs[0].exit, Some(0), "{out:?}");

    let text = w.read("env.txt");
    let vars: Vec<(&str, &str)> = text
        .lines()
        .map(|l| l.split_once('=').unwrap_or((l, "")))
        .collect();
    let get = |name: &str| -> Vec<&str> {
        vars.iter()
            .filter(|(k, _)| *k == name)
            .map(|(_, v)| *v)
            .collect()
    };
    let cwd = w.cwd.to_str().unwrap();
    assert_eq!(get("DSH_TEST_PASSED"), vec!["passed value"], "{text}");
    assert_eq!(
        get("PATH"),
        vec![std::env::var("PATH").unwrap().as_str()],
        "{text}"
    );
    assert_eq!(get("CLAUDE_PROJECT_DIR"), vec![cwd], "{text}");
    assert_eq!(get("DSH_PROJECT_DIR"), vec![cwd], "{text}");
    assert!(get("HOME").is_empty(), "HOME leaked into the hook: {text}");
    // Nothing else but what the shell itself sets.
    let allowed = [
        "PATH",
        "DSH_TEST_PASSED",
        "CLAUDE_PROJECT_DIR",
        "DSH_PROJECT_DIR",
        "PWD",
        "OLDPWD",
        "SHLVL",
        "_",
    ];
    for (k, _) in &vars {
        assert!(
            allowed.contains(k),
            "unexpected variable {k} in the hook: {text}"
        );
    }
    assert_eq!(w.read("pwd.txt").trim(), cwd);
}

// ----------------------------------------------------- dropping the future

#[tokio::test]
async fn dropping_the_future_kills_the_hook() {
    let w = World::new();
    let cmd = format!(
        "touch {started}; (sleep 1; touch {child}) & sleep 1; touch {leader}",
        started = w.q("started"),
        child = w.q("child"),
        leader = w.q("leader"),
    );
    let hooks = pre_hooks(vec![entry(None, cmd, None)]);
    let ctx = w.ctx();
    let waited = tokio::time::timeout(
        Duration::from_millis(300),
        hooks.pre_tool_use(&ctx, "bash", BASH_ARGS),
    )
    .await;
    assert!(
        waited.is_err(),
        "the hook finished within 300 ms: {waited:?}"
    );
    assert!(w.exists("started"), "the hook never started");
    tokio::time::sleep(Duration::from_millis(1700)).await;
    assert!(!w.exists("leader"), "the dropped hook went on");
    assert!(!w.exists("child"), "the dropped hook's child went on");
}

#[tokio::test]
async fn dropping_the_future_of_a_subshell_hook_kills_the_subshell() {
    let w = World::new();
    // With only the `sh -c` leader killed, the forked subshell would go on.
    let cmd = format!(
        "touch {started}; (sleep 1; touch {sub}); true",
        started = w.q("started"),
        sub = w.q("sub"),
    );
    let hooks = pre_hooks(vec![entry(None, cmd, None)]);
    let ctx = w.ctx();
    let fut = hooks.pre_tool_use(&ctx, "bash", BASH_ARGS);
    let waited = tokio::time::timeout(Duration::from_millis(300), fut).await;
    assert!(waited.is_err());
    assert!(w.exists("started"));
    tokio::time::sleep(Duration::from_millis(1700)).await;
    assert!(!w.exists("sub"), "the dropped hook's subshell went on");
}

// ------------------------------------------------------- not starting

#[tokio::test]
async fn a_command_not_found_warns_and_proceeds() {
    let w = World::new();
    let hooks = pre_hooks(vec![entry(None, "dsh-no-such-command-xyz --flag", None)]);
    let out = hooks.pre_tool_use(&w.ctx(), "bash", BASH_ARGS).await;
    assert_eq!(out.effect, Effect::Proceed);
    assert_eq!(out.runs[0].exit, Some(127));
    assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
    assert!(out.warnings[0].contains("127"), "{:?}", out.warnings);
    assert!(
        out.warnings[0].contains("dsh-no-such-command-xyz"),
        "{:?}",
        out.warnings
    );
}

#[tokio::test]
async fn a_missing_cwd_is_a_spawn_error_and_proceeds() {
    let w = World::new();
    let mut ctx = w.ctx();
    ctx.cwd = w.path("does-not-exist");
    let hooks = pre_hooks(vec![entry(None, format!("touch {}", w.q("ran")), None)]);
    let out = hooks.pre_tool_use(&ctx, "bash", BASH_ARGS).await;
    assert!(!w.exists("ran"));
    assert_eq!(out.effect, Effect::Proceed);
    assert_eq!(out.runs[0].exit, None);
    assert!(
        out.warnings.iter().any(|m| m.contains("could not start")),
        "{:?}",
        out.warnings
    );
}

// ------------------------------------------------------- run_command

#[tokio::test]
async fn run_command_feeds_stdin_and_bounds_output() {
    let w = World::new();
    let run = dsh_hooks::run::run_command(
        "cat; echo err >&2; exit 3",
        b"hello hook\n",
        &w.cwd,
        &path_env(),
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(run.exit, Some(3));
    assert_eq!(run.stdout, "hello hook\n");
    assert_eq!(run.stderr, "err\n");
    assert!(!run.timed_out);
    assert!(run.spawn_error.is_none());

    let big = dsh_hooks::run::run_command(
        "head -c 600000 /dev/zero | tr '\\0' a",
        b"",
        &w.cwd,
        &path_env(),
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(big.exit, Some(0));
    assert_eq!(big.stdout.len(), dsh_hooks::run::MAX_CAPTURE);
    assert!(big.stdout.bytes().all(|b| b == b'a'));
}

#[tokio::test]
async fn a_hook_that_ignores_a_large_stdin_still_runs() {
    let w = World::new();
    let hooks = pre_hooks(vec![entry(None, format!("touch {}", w.q("ran")), None)]);
    let huge = json!({"content": "x".repeat(1 << 20)}).to_string();
    let out = hooks.pre_tool_use(&w.ctx(), "write", &huge).await;
    assert!(w.exists("ran"));
    assert_eq!(out.effect, Effect::Proceed);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.runs[0].exit, Some(0));
}
