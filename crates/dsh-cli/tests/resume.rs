//! Resuming without ids, run as the real binary against sessions it saved
//! with the offline echo model: an id's start or a title's part names a
//! session (several are listed), `-c` continues the newest session of the
//! working directory, a bare `--resume` opens the picker (on a pty), and a
//! chat where nothing was sent leaves nothing behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use dsh_testkit::cli::{events, output_within, stderr, stdout, Home};
use dsh_testkit::screen::{key, Screen};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");
const LIMIT: Duration = Duration::from_secs(60);

/// `dsh ARGS…` in `dir` (the home's working directory when `None`), with
/// `stdin`; its output.
fn dsh(home: &Home, dir: Option<&Path>, args: &[&str], stdin: Option<&str>) -> Output {
    let mut c = home.dsh();
    if let Some(dir) = dir {
        c.current_dir(dir);
    }
    c.args(args);
    output_within(c, stdin, LIMIT)
}

/// The ids of the saved sessions.
fn ids(home: &Home) -> Vec<String> {
    home.session_logs()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// `dsh run PROMPT` in `dir`; the id of the session it made.
fn new_session(home: &Home, dir: Option<&Path>, prompt: &str) -> String {
    let before = ids(home);
    let out = dsh(home, dir, &["run", prompt], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let made: Vec<String> = ids(home)
        .into_iter()
        .filter(|id| !before.contains(id))
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
    made[0].clone()
}

fn log_of(home: &Home, id: &str) -> PathBuf {
    home.sessions().join(format!("{id}.jsonl"))
}

/// The texts of the user messages of a session, in order.
fn prompts(home: &Home, id: &str) -> Vec<String> {
    events(&log_of(home, id))
        .iter()
        .filter(|e| e["type"] == "user/message")
        .map(|e| {
            e["data"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// The shortest start of `id` no other id starts with.
fn unique_prefix(id: &str, others: &[String]) -> String {
    (1..=id.len())
        .map(|n| &id[..n])
        .find(|p| others.iter().all(|o| o == id || !o.starts_with(p)))
        .unwrap()
        .to_string()
}

#[test]
fn a_start_of_an_id_or_a_part_of_a_title_names_a_session() {
    let home = Home::new(DSH);
    let parser = new_session(&home, None, "echo fix the parser bug");
    let docs = new_session(&home, None, "echo parser docs");
    let tests = new_session(&home, None, "echo add tests");
    let all = ids(&home);

    // A unique start of an id, with or without its `s-`.
    let prefix = unique_prefix(&parser, &all);
    for arg in [prefix.clone(), prefix.trim_start_matches("s-").to_string()] {
        let out = dsh(&home, None, &["session", "stats", &arg], None);
        assert_eq!(out.status.code(), Some(0), "{arg}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("session: 1 turns"),
            "{}",
            stdout(&out)
        );
    }

    // A part of the title, whatever its case.
    let out = dsh(&home, None, &["session", "show", "ADD TESTS"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("session {tests}:")),
        "{}",
        stdout(&out)
    );

    // Several matches: listed (id, time, title), exit 2, nothing shown.
    let out = dsh(&home, None, &["session", "show", "parser"], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("\"parser\" is in the title of 2 sessions"),
        "{err}"
    );
    let listed: Vec<&str> = err.lines().skip(1).collect();
    assert_eq!(listed.len(), 2, "{err}");
    assert!(
        listed[0].contains(&docs) && listed[0].contains("echo parser docs"),
        "{err}"
    );
    assert!(listed[1].contains(&parser) && listed[1].contains("echo fix the parser bug"));
    assert!(listed[0].contains(" 20"), "a date: {err}");
    assert!(stdout(&out).is_empty());

    // An ambiguous start of an id is listed the same way.
    let out = dsh(&home, None, &["session", "replay", "s-"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("\"s-\" is the start of 3 sessions"), "{err}");
    for id in &all {
        assert!(err.contains(id.as_str()), "{err}");
    }

    // `--resume` takes them too: the title's part continues that session.
    let out = dsh(
        &home,
        None,
        &["run", "--resume", "add tests", "echo again"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(prompts(&home, &tests), ["echo add tests", "echo again"]);
    let out = dsh(
        &home,
        None,
        &["run", "--resume", "parser", "echo again"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("pass more of the id"),
        "{}",
        stderr(&out)
    );
    assert_eq!(ids(&home).len(), 3, "an ambiguous resume starts nothing");

    // Nothing matches: the usual "no session".
    let out = dsh(&home, None, &["session", "stats", "no such thing"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no session \"no such thing\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn continue_takes_the_newest_session_of_the_working_directory() {
    let home = Home::new(DSH).in_dir("proj");
    let other = home.path().join("other");
    let empty = home.path().join("empty");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::create_dir_all(&empty).unwrap();
    let older = new_session(&home, None, "echo older here");
    let here = new_session(&home, None, "echo newest here");
    // Newer than both, but of another directory.
    let elsewhere = new_session(&home, Some(&other), "echo elsewhere");

    let out = dsh(&home, None, &["run", "--continue", "echo again"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(prompts(&home, &here), ["echo newest here", "echo again"]);
    assert_eq!(prompts(&home, &older), ["echo older here"]);
    assert_eq!(prompts(&home, &elsewhere), ["echo elsewhere"]);

    // `dsh -c` is `dsh chat --continue`.
    let out = dsh(&home, None, &["-c"], Some("echo from chat\n"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        prompts(&home, &here),
        ["echo newest here", "echo again", "echo from chat"]
    );
    let out = dsh(&home, Some(&other), &["chat", "-c"], Some("echo there\n"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(prompts(&home, &elsewhere), ["echo elsewhere", "echo there"]);
    assert_eq!(ids(&home).len(), 3, "nothing new was started");

    // A directory without sessions: a clear error, nothing started.
    let out = dsh(&home, Some(&empty), &["run", "-c", "echo hi"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no session to continue in"),
        "{}",
        stderr(&out)
    );
    assert_eq!(ids(&home).len(), 3);

    // Before a subcommand, -c is chat's.
    let out = dsh(&home, None, &["-c", "run", "echo hi"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("-c/--continue before a subcommand"));
}

#[test]
fn a_chat_where_nothing_was_sent_leaves_nothing() {
    let home = Home::new(DSH);
    for input in ["/exit\n", "", "/help\n/exit\n"] {
        let mut c = home.dsh();
        c.arg("chat").env("DSH_TUI", "0");
        let out = output_within(c, Some(input), LIMIT);
        assert_eq!(out.status.code(), Some(0), "{input:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("session saved"), "{}", stderr(&out));
        assert_eq!(home.session_entries(), Vec::<PathBuf>::new(), "{input:?}");
    }
    let out = dsh(&home, None, &["session", "list"], None);
    assert!(stderr(&out).contains("no sessions"), "{}", stderr(&out));

    // A message is kept; resuming it and sending nothing keeps it whole.
    let mut c = home.dsh();
    c.arg("chat").env("DSH_TUI", "0");
    let out = output_within(c, Some("echo keep me\n/exit\n"), LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = home.only_session();
    let mut c = home.dsh();
    c.args(["chat", "--resume", &id]).env("DSH_TUI", "0");
    let out = output_within(c, Some("/exit\n"), LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(home.only_session(), id);
    assert_eq!(prompts(&home, &id), ["echo keep me"]);
}

/// `dsh chat ARGS…` on a pty in `home`'s working directory.
fn chat_on_pty(home: &Home, args: &[&str]) -> Screen {
    Screen::chat(home, args, 30, 120)
}

#[test]
fn a_bare_resume_picks_from_a_list_and_typing_filters_it() {
    let home = Home::new(DSH).in_dir("proj");
    let other = home.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let alpha = new_session(&home, None, "echo alpha one");
    let beta = new_session(&home, None, "echo beta two");
    let gamma = new_session(&home, Some(&other), "echo gamma elsewhere");

    let mut s = chat_on_pty(&home, &["--resume"]);
    let screen = s.wait_for("the picker", |t| t.contains("3 of 3 sessions"));
    let row = |needle: &str| {
        screen
            .lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle}: {screen}"))
    };
    // This directory's first, newest first; the other directory's after.
    assert!(row("echo beta two") < row("echo alpha one"), "{screen}");
    assert!(
        row("echo alpha one") < row("echo gamma elsewhere"),
        "{screen}"
    );
    assert!(screen.contains("› echo beta two"), "{screen}");
    assert!(screen.contains("[other] echo gamma elsewhere"), "{screen}");
    assert!(
        screen.contains("1 turn") && screen.contains("now"),
        "{screen}"
    );
    s.keys("ALPHA");
    let screen = s.wait_for("the filter", |t| t.contains("1 of 3 sessions"));
    assert!(screen.contains("› echo alpha one"), "{screen}");
    assert!(!screen.contains("echo beta two"), "{screen}");
    s.keys(key::ENTER);
    s.wait_for("the resumed chat", |t| {
        t.contains(&format!("session {alpha}")) && t.contains("The echo tool says: alpha one")
    });
    s.keys(key::CTRL_D);
    assert_eq!(s.wait_exit(LIMIT), 0);
    assert_eq!(ids(&home), {
        let mut all = vec![alpha.clone(), beta, gamma];
        all.sort();
        all
    });

    // Up and Down move (the resumed session is now the newest); Esc
    // leaves without a session, exit 0.
    let mut s = chat_on_pty(&home, &["--resume"]);
    s.wait_for("the picker", |t| {
        t.contains("3 of 3 sessions") && t.contains("› echo alpha one")
    });
    s.keys(key::DOWN);
    s.wait_for("the move", |t| t.contains("› echo beta two"));
    s.keys(key::UP);
    s.wait_for("the move back", |t| t.contains("› echo alpha one"));
    s.keys(key::ESC);
    assert_eq!(s.wait_exit(LIMIT), 0);
    assert!(s.text().contains("no session chosen"), "{}", s.text());
    assert_eq!(ids(&home).len(), 3, "a cancelled pick starts nothing");

    // Without a terminal: an error saying to pass an id.
    let out = dsh(&home, None, &["chat", "--resume"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("pass an id"), "{}", stderr(&out));
}
