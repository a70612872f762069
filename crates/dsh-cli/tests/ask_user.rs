//! The model's `ask_user` questions in every `dsh` face that has a person:
//! the inline UI's choice dialog (a pseudo-terminal read by `vt100`), the
//! line mode (tmux), and `dsh run`, which has nobody to ask. Driven by the
//! offline echo model's `call ask_user {…}`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use dsh_testkit::cli::{Home, Tmux};
use dsh_testkit::screen::{key, Screen};
use serde_json::{json, Value};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

const TWO: &str = r#"call ask_user {"questions":[{"question":"Which database?","header":"DB","options":[{"label":"SQLite","description":"one file, no server"},{"label":"Postgres"}]},{"question":"Which platforms?","multi_select":true,"options":[{"label":"linux"},{"label":"mac"},{"label":"windows"}]}]}"#;

const OPEN: &str = r#"call ask_user {"questions":[{"question":"Anything else?"}]}"#;

/// The chat is idle: the composer's hint above the status line.
fn idle(s: &str) -> bool {
    s.lines()
        .rev()
        .nth(1)
        .is_some_and(|l| l.contains("type a message"))
}

/// The `question/answered` events logged so far, once there are `n`.
fn answered(home: &Home, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = home.of_type("question/answered");
        if got.len() >= n || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_inline_ui_asks_in_a_dialog_numbers_pick_and_toggle_text_and_esc() {
    let home = Home::new(DSH);
    let mut s = Screen::chat(&home, &[], 40, 100);
    s.wait_for("the composer", idle);
    s.keys(TWO);
    s.keys(key::ENTER);
    let screen = s.wait_for("the dialog", |t| t.contains("Question 1/2: DB"));
    for shown in [
        "Which database?",
        "1. SQLite",
        "one file, no server",
        "2. Postgres",
        "3. Type an answer",
        "number picks",
    ] {
        assert!(screen.contains(shown), "{shown:?} missing:\n{screen}");
    }
    assert!(!idle(&screen), "the dialog has the focus:\n{screen}");
    // The status line says whose move it is: an answer, not an approval.
    s.wait_for("the status line", |t| {
        t.contains(" waiting for your answer · ")
    });
    let screen = s.wait_for("the call's line", |t| {
        t.contains("Ask \"Which database?\" (+1 more) — waiting for your answer")
    });
    assert!(!screen.contains("waiting for approval"), "{screen}");
    s.keys("2");
    let screen = s.wait_for("the second question", |t| t.contains("Question 2/2"));
    assert!(screen.contains("1. [ ] linux"), "{screen}");
    s.keys("3");
    s.keys("1");
    s.wait_for("the ticks", |t| {
        t.contains("1. [x] linux") && t.contains("3. [x] windows")
    });
    s.keys(key::ENTER);
    s.wait_for("the answer", |t| {
        t.contains("A: Postgres") && t.contains("A: linux, windows") || idle(t)
    });
    let got = answered(&home, 1);
    // Ticked options read in their order.
    assert_eq!(got[0]["answers"], json!(["Postgres", "linux, windows"]));

    // An open question takes text at once; Enter sends it.
    s.wait_for("the composer again", idle);
    s.keys(OPEN);
    s.keys(key::ENTER);
    s.wait_for("the open question", |t| {
        t.contains("Anything else?") && t.contains("answer:")
    });
    s.keys("keep it small");
    s.keys(key::ENTER);
    let got = answered(&home, 2);
    assert_eq!(got[1]["answers"], json!(["keep it small"]));

    // Esc declines the whole call; the chat goes on.
    s.wait_for("the composer again", idle);
    s.keys(TWO);
    s.keys(key::ENTER);
    s.wait_for("the dialog", |t| t.contains("Question 1/2: DB"));
    s.keys(key::ESC);
    let got = answered(&home, 3);
    assert_eq!(got[2]["declined"], json!(true));
    s.wait_for("the composer after declining", idle);
    assert!(s.alive());
    s.keys(key::CTRL_D);
    assert_eq!(s.wait_exit(Duration::from_secs(30)), 0);
}

#[test]
fn the_line_mode_prints_the_questions_and_reads_one_line_each() {
    Tmux::require();
    let home = Home::new(DSH);
    let t = Tmux::chat(&home, "ask-user");
    t.wait_for("the prompt", |s| s.contains("› "));
    t.keys(&["-l", TWO]);
    t.keys(&["Enter"]);
    let screen = t.wait_for("the first question", |s| {
        s.contains("? [DB] Which database? (1/2)")
    });
    assert!(
        screen.contains("1. SQLite — one file, no server"),
        "{screen}"
    );
    assert!(screen.contains("2. Postgres"), "{screen}");
    t.keys(&["2", "Enter"]);
    t.wait_for("the second question", |s| {
        s.contains("Which platforms? (2/2)")
    });
    t.keys(&["1,3", "Enter"]);
    let got = answered(&home, 1);
    assert_eq!(got[0]["answers"], json!(["Postgres", "linux, windows"]));

    // Free text, then an empty line skips.
    t.keys(&["-l", TWO]);
    t.keys(&["Enter"]);
    t.wait_for("the question again", |s| {
        s.matches("? [DB] Which database? (1/2)").count() == 2
    });
    t.keys(&["-l", "whatever is simplest"]);
    t.keys(&["Enter"]);
    t.wait_for("the second question again", |s| {
        s.matches("Which platforms? (2/2)").count() == 2
    });
    t.keys(&["Enter"]);
    let got = answered(&home, 2);
    assert_eq!(got[1]["answers"], json!(["whatever is simplest", null]));

    // Ctrl-C declines.
    t.keys(&["-l", OPEN]);
    t.keys(&["Enter"]);
    t.wait_for("the open question", |s| s.contains("? Anything else?"));
    t.keys(&["C-c"]);
    let got = answered(&home, 3);
    assert_eq!(got[2]["declined"], json!(true));
    assert!(t.alive(), "the chat goes on");
    t.keys(&["C-d"]);
}

#[test]
fn dsh_run_has_no_user_to_ask_and_says_so_to_the_model() {
    let home = Home::new(DSH);
    let (out, _) = home.run(&["run", TWO], Duration::from_secs(60));
    assert!(out.status.success(), "{out:?}");
    let got = answered(&home, 1);
    assert_eq!(got[0]["noUser"], json!(true));
    let log = serde_json::to_string(&home.only_log()).unwrap();
    assert!(log.contains("no user to ask"), "{log}");
    assert!(log.contains("Decide yourself and say what you assumed"));
    assert_eq!(home.of_type("question/asked").len(), 1);
    // The saved session shows the call as the question it asked.
    let id = home.only_session();
    let (shown, _) = home.run(&["session", "show", &id], Duration::from_secs(30));
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("Ask \"Which database?\" (+1 more)"),
        "{shown}"
    );
}
