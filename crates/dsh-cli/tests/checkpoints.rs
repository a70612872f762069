//! Checkpoints end to end with the real binary, the offline echo model, a
//! real workspace and the real private git store: every turn is
//! checkpointed (bash changes as well as the file tools'), `/undo` and
//! `/redo` in the chat set the files back and forth and tell the model,
//! hand edits are left alone unless forced, `dsh session rewind` restores
//! files and/or forks the conversation, and the user's own git repository
//! is never touched.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use dsh_testkit::cli::{events, output_within, Home, Outcome, LIMIT};
use serde_json::{json, Value};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// `dsh chat` in `home` with `lines` piped in (line mode).
fn chat(home: &Home, args: &[&str], lines: &[&str]) -> Outcome {
    let mut c = home.dsh();
    c.arg("chat").args(args);
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    output_within(c, Some(&input), LIMIT).into()
}

/// `dsh run ARGS…` in `home`.
fn run(home: &Home, args: &[&str]) -> Outcome {
    let mut c = home.dsh();
    c.arg("run").args(args);
    output_within(c, None, LIMIT).into()
}

/// The echo model's line that calls `tool` with `args`.
fn call(tool: &str, args: Value) -> String {
    format!("call {tool} {args}")
}

fn write(path: &str, content: &str) -> String {
    call("write", json!({"file_path": path, "content": content}))
}

fn bash(command: &str) -> String {
    call(
        "bash",
        json!({"command": command, "description": "change files"}),
    )
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn log_of(home: &Home) -> Vec<Value> {
    events(
        &home
            .sessions()
            .join(format!("{}.jsonl", home.only_session())),
    )
}

fn of_kind<'a>(log: &'a [Value], kind: &str) -> Vec<&'a Value> {
    log.iter().filter(|e| e["type"] == kind).collect()
}

#[test]
fn every_turn_is_checkpointed_and_undo_redo_cover_bash_changes_too() {
    let home = Home::new(DSH).in_dir("ws");
    let ws = home.cwd().to_path_buf();
    std::fs::write(ws.join("kept.txt"), "original\n").unwrap();
    let out = chat(
        &home,
        &[],
        &[
            &write(&ws.join("new.txt").display().to_string(), "made by the model\n"),
            &bash("sed -i 's/original/edited by sed/' kept.txt && mkdir -p gen && echo x > gen/out.txt"),
            "/undo",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The last turn (bash) is undone: sed's edit and the generated file.
    assert_eq!(read(&ws.join("kept.txt")).as_deref(), Some("original\n"));
    assert!(!ws.join("gen/out.txt").exists(), "{}", out.stderr);
    assert!(!ws.join("gen").exists(), "an emptied directory goes too");
    // The turn before (write) is not.
    assert_eq!(
        read(&ws.join("new.txt")).as_deref(),
        Some("made by the model\n")
    );
    assert!(
        out.stderr.contains("undid the file changes of turn 2"),
        "{}",
        out.stderr
    );
    let log = log_of(&home);
    let created = of_kind(&log, "checkpoint/created");
    for turn in [1, 2] {
        for at in ["turn-start", "step-end"] {
            let c = created
                .iter()
                .find(|c| c["data"]["turn"] == turn && c["data"]["at"] == at)
                .unwrap_or_else(|| panic!("turn {turn} {at}: {created:?}"));
            let tree = c["data"]["tree"].as_str().unwrap();
            assert_eq!(tree.len(), 40, "{c}");
            assert!(c["data"]["step"].is_u64());
        }
    }
    // The turn's own events end with `turn/end`; the checkpoint after the
    // write came before it.
    let ends: Vec<usize> = (0..log.len())
        .filter(|i| log[*i]["type"] == "turn/end")
        .collect();
    let first_end = created
        .iter()
        .find(|c| c["data"]["turn"] == 1 && c["data"]["at"] == "step-end")
        .unwrap()["seq"]
        .as_u64()
        .unwrap() as usize;
    assert!(
        first_end < ends[0],
        "step-end {first_end} before turn/end {}",
        ends[0]
    );
    let restored = of_kind(&log, "checkpoint/restored");
    assert_eq!(restored.len(), 1);
    assert_eq!(restored[0]["data"]["action"], "undo");
    assert_eq!(restored[0]["data"]["turn"], 2);
    // The model is told what was undone.
    let told = of_kind(&log, "context/message").iter().any(|m| {
        m["data"]
            .to_string()
            .contains("undid the file changes of turn 2")
    });
    assert!(told, "{log:?}");

    // A second /undo takes the turn before; /redo brings it back.
    let id = home.only_session();
    let out = chat(&home, &["--resume", &id], &["/undo"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!ws.join("new.txt").exists(), "{}", out.stderr);
    let out = chat(&home, &["--resume", &id], &["/redo"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        read(&ws.join("new.txt")).as_deref(),
        Some("made by the model\n"),
        "{}",
        out.stderr
    );
    let out = chat(&home, &["--resume", &id], &["/redo"]);
    assert!(
        out.stderr.contains("redid the file changes of turn 2"),
        "{}",
        out.stderr
    );
    assert_eq!(
        read(&ws.join("kept.txt")).as_deref(),
        Some("edited by sed\n")
    );
    let out = chat(&home, &["--resume", &id], &["/redo"]);
    assert!(out.stderr.contains("nothing to redo"), "{}", out.stderr);
}

#[test]
fn files_changed_by_hand_are_left_alone_unless_forced() {
    let home = Home::new(DSH).in_dir("ws");
    let ws = home.cwd().to_path_buf();
    let file = ws.join("a.txt");
    let out = run(&home, &[&write(&file.display().to_string(), "model\n")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    std::fs::write(&file, "mine\n").unwrap();
    let id = home.only_session();
    let out = chat(&home, &["--resume", &id], &["/undo"]);
    assert_eq!(read(&file).as_deref(), Some("mine\n"), "{}", out.stderr);
    assert!(
        out.stderr.contains("left alone") && out.stderr.contains("a.txt"),
        "{}",
        out.stderr
    );
    // The undo did nothing, so the turn can still be undone, by force.
    let out = chat(&home, &["--resume", &id], &["/undo --force"]);
    assert!(!file.exists(), "{}", out.stderr);
}

#[test]
fn session_rewind_restores_files_and_forks_the_conversation() {
    let home = Home::new(DSH).in_dir("ws");
    let ws = home.cwd().to_path_buf();
    let file = ws.join("notes.md");
    let out = run(&home, &[&bash("echo one > notes.md")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let id = home.only_session();
    for text in ["two", "three"] {
        let out = run(
            &home,
            &["--resume", &id, &bash(&format!("echo {text} > notes.md"))],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    assert_eq!(read(&file).as_deref(), Some("three\n"));
    let before = log_of(&home).len();

    // Files only: back to before turn 2, the conversation stays.
    let mut c = home.dsh();
    c.args(["session", "rewind", &id, "--to-turn", "2", "--files-only"]);
    let out: Outcome = output_within(c, None, LIMIT).into();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(read(&file).as_deref(), Some("one\n"));
    assert!(of_kind(&log_of(&home), "conversation/rewound").is_empty());

    // The conversation, run from another directory: the branch is kept in
    // the log, the history loses turns 2 and 3.
    let elsewhere = tempfile::tempdir().unwrap();
    let mut c = home.dsh();
    c.current_dir(elsewhere.path()).args([
        "session",
        "rewind",
        &id,
        "--to-turn",
        "2",
        "--conversation-only",
    ]);
    let out: Outcome = output_within(c, None, LIMIT).into();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let log = log_of(&home);
    assert!(log.len() > before, "nothing is removed");
    let rewound = of_kind(&log, "conversation/rewound");
    assert_eq!(rewound.len(), 1, "{rewound:?}");
    assert_eq!(rewound[0]["data"]["toTurn"], 2);
    let mut c = home.dsh();
    c.args(["session", "replay", &id]);
    let out: Outcome = output_within(c, None, LIMIT).into();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("echo one"), "{}", out.stdout);
    assert!(!out.stdout.contains("three"), "{}", out.stdout);
    // `session show` marks the branch point.
    let mut c = home.dsh();
    c.args(["session", "show", &id]);
    let out: Outcome = output_within(c, None, LIMIT).into();
    assert!(
        out.stdout.contains("conversation rewound to before turn 2"),
        "{}",
        out.stdout
    );

    // A turn that is not on the branch any more is a usage error.
    let mut c = home.dsh();
    c.args(["session", "rewind", &id, "--to-turn", "3"]);
    let out: Outcome = output_within(c, None, LIMIT).into();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("not on this session's branch"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_users_git_repository_is_never_touched() {
    let home = Home::new(DSH).in_dir("repo");
    let ws = home.cwd().to_path_buf();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&ws)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .expect("git runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "-q"]);
    std::fs::write(ws.join("tracked.txt"), "v1\n").unwrap();
    std::fs::write(ws.join(".gitignore"), "ignored/\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "first"]);
    std::fs::write(ws.join("tracked.txt"), "v2 staged\n").unwrap();
    git(&["add", "tracked.txt"]);
    let index = std::fs::read(ws.join(".git/index")).unwrap();
    let status = git(&["status", "--porcelain"]);
    let refs = git(&["show-ref"]);

    let out = run(
        &home,
        &[&bash(
            "echo v3 > tracked.txt && mkdir -p ignored && echo y > ignored/x",
        )],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let id = home.only_session();
    let out = chat(&home, &["--resume", &id], &["/undo"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        read(&ws.join("tracked.txt")).as_deref(),
        Some("v2 staged\n")
    );
    assert_eq!(
        read(&ws.join("ignored/x")).as_deref(),
        Some("y\n"),
        "ignored files are not snapshotted"
    );
    // A file tool writing an ignored file: /undo says it could not restore it.
    let ignored = ws.join("ignored/made.txt");
    let out = chat(
        &home,
        &["--resume", &id],
        &[&write(&ignored.display().to_string(), "z\n"), "/undo"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(ignored.exists());
    assert!(
        out.stderr.contains("not restored") && out.stderr.contains("made.txt (ignored)"),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read(ws.join(".git/index")).unwrap(), index);
    assert_eq!(git(&["status", "--porcelain"]), status);
    assert_eq!(git(&["show-ref"]), refs);
    assert!(git(&["stash", "list"]).is_empty());
}

#[test]
fn a_deleted_store_changes_nothing_and_says_so() {
    let home = Home::new(DSH).in_dir("ws");
    let file = home.cwd().join("a.txt");
    // The file's first content is only in the store: deleting the store
    // loses it (an emptied file could be undone from nothing).
    std::fs::write(&file, "first\n").unwrap();
    let out = run(&home, &[&bash("echo model > a.txt")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let id = home.only_session();
    std::fs::remove_dir_all(home.sessions().join(&id).join("checkpoints")).unwrap();
    let out = chat(&home, &["--resume", &id], &["/undo"]);
    assert_eq!(read(&file).as_deref(), Some("model\n"));
    assert!(
        out.stderr.contains("no file was changed") || out.stderr.contains("no files were changed"),
        "{}",
        out.stderr
    );
}
