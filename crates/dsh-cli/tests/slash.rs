//! Chat commands in piped `dsh chat` with the offline echo model: `/help`
//! lists the table, an unknown command is answered and never sent, and
//! `/permission`, `/model`, `/session`, `/todo`, `/clear` and `/exit` do
//! what they say (checked in the session logs and on disk).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use dsh_testkit::cli::{events, output_within, Home, Outcome, LIMIT};
use serde_json::Value;

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// Runs `dsh chat` in `home` with `lines` on a pipe.
fn chat(home: &Home, lines: &[&str]) -> Outcome {
    let mut c = home.dsh();
    c.arg("chat");
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    output_within(c, Some(&input), LIMIT).into()
}

/// The texts of the user messages of a log.
fn user_texts(path: &Path) -> Vec<String> {
    events(path)
        .iter()
        .filter(|e| e["type"] == "user/message")
        .map(|e| e["data"].to_string())
        .collect()
}

/// The value after `label: ` on the line that starts with it.
fn field<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{label}: ")))
        .unwrap_or_else(|| panic!("no {label:?} line in {text}"))
}

#[test]
fn help_lists_every_command() {
    let home = Home::new(DSH);
    let out = chat(&home, &["/help"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for name in [
        "/help",
        "/model [name]",
        "/permission [mode]",
        "/plan",
        "/compact [focus]",
        "/todo",
        "/session",
        "/clear",
        "/exit",
    ] {
        assert!(
            out.stderr.lines().any(|l| l.trim_start().starts_with(name)),
            "{name} listed: {}",
            out.stderr
        );
    }
}

#[test]
fn an_unknown_command_is_answered_and_never_sent() {
    let home = Home::new(DSH);
    let out = chat(&home, &["/xyz", "/usr/bin/ls is broken"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "unknown command /xyz; commands: {}",
            dsh::commands::names()
        )),
        "{}",
        out.stderr
    );
    let texts = user_texts(&home.session_logs()[0]);
    assert_eq!(
        texts.len(),
        1,
        "only the path line reached the model: {texts:?}"
    );
    assert!(texts[0].contains("/usr/bin/ls is broken"), "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains("/xyz")));
}

#[test]
fn permission_read_only_denies_a_write() {
    let home = Home::new(DSH);
    let out = chat(
        &home,
        &[
            "/permission",
            "/permission read-only",
            r#"call write {"file_path": "a.txt", "content": "x"}"#,
            "/permission sideways",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("permission mode: workspace-write (change with"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("permission mode: read-only (was workspace-write)"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("read-only") && out.stderr.contains("sideways"),
        "{}",
        out.stderr
    );
    assert!(!home.path().join("a.txt").exists(), "{}", out.stdout);
    let results: Vec<Value> = events(&home.session_logs()[0])
        .into_iter()
        .filter(|e| e["type"] == "tool/result")
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["data"]["isError"], true, "{results:?}");
    assert_eq!(
        results[0]["data"]["errorCode"], "FS_SANDBOX_DENIED",
        "{results:?}"
    );
}

#[test]
fn model_shows_the_model_and_refuses_an_unknown_one() {
    let home = Home::new(DSH);
    let out = chat(&home, &["/model", "/model nope", "/model echo"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("model: echo (models: echo;"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("unknown model \"nope\"; available models: echo"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("model is already echo"),
        "{}",
        out.stderr
    );
    // Nothing was sent: the chat is not saved.
    assert!(home.session_logs().is_empty(), "{:?}", home.session_logs());
}

#[test]
fn todo_shows_the_list_the_model_wrote() {
    let home = Home::new(DSH);
    let out = chat(
        &home,
        &[
            "/todo",
            r#"call todo_write {"todos": [{"content": "write tests", "status": "in_progress"}, {"content": "ship", "status": "pending"}]}"#,
            "/todo",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (before, after) = out.stderr.split_once("Todo list").expect(&out.stderr);
    assert!(before.contains("no todo list"), "{}", out.stderr);
    assert!(
        after.contains("[~] write tests") && after.contains("[ ] ship"),
        "{}",
        out.stderr
    );
}

#[test]
fn session_and_clear_start_a_new_session() {
    let home = Home::new(DSH);
    let out = chat(
        &home,
        &[
            "echo before",
            "/session",
            "/clear",
            "/session",
            "echo after",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (first, second) = out.stderr.split_once("new session: ").expect(&out.stderr);
    let (old_id, new_id) = (field(first, "session"), field(second, "session"));
    assert_ne!(old_id, new_id);
    let (old_log, new_log) = (
        PathBuf::from(field(first, "log")),
        PathBuf::from(field(second, "log")),
    );
    assert!(old_log.is_file() && new_log.is_file(), "{}", out.stderr);
    assert!(old_log.to_string_lossy().contains(old_id));
    assert!(field(first, "tokens").starts_with("ctx "), "{}", out.stderr);
    let old_texts = user_texts(&old_log);
    assert_eq!(old_texts.len(), 1);
    assert!(old_texts[0].contains("echo before"));
    let new_texts = user_texts(&new_log);
    assert_eq!(new_texts.len(), 1, "{new_texts:?}");
    assert!(new_texts[0].contains("echo after"), "{new_texts:?}");
    // The old log is complete: its turn ended before the new session began.
    assert!(events(&old_log).iter().any(|e| e["type"] == "turn/end"));
    assert_eq!(home.session_logs().len(), 2);
}

#[test]
fn exit_leaves_chat_and_sends_nothing_after_it() {
    let home = Home::new(DSH);
    let out = chat(&home, &["/exit", "echo never"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("never"), "{}", out.stdout);
    for f in home.session_logs() {
        assert!(user_texts(&f).is_empty());
    }
}
