//! `dsh chat`'s inline terminal UI as a person sees it: the real binary
//! on a pseudo-terminal, its output parsed by a terminal emulator
//! (`vt100`), keys pressed as a person presses them. Screens are compared
//! with reviewed snapshots (`insta`, under `tests/snapshots/`) after
//! masking what changes from run to run (times, ids, the spinner's frame,
//! temporary paths).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use dsh_testkit::cli::Home;
use dsh_testkit::screen::{key, vt100, Screen};
use dsh_testkit::{LoopbackServer, ScriptedResponse};
use serde_json::json;

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// The composer's prompt, drawn when the chat is ready for input.
const READY: &str = "type a message";

/// The chat is idle and its frame whole: the composer's hint, then the
/// status line under it.
fn idle(s: &str) -> bool {
    s.lines().rev().nth(1).is_some_and(|l| l.contains(READY))
}

/// `text` with what changes between runs masked: durations (`3.1s`,
/// `12s`, `1m05s`) as `Ns`, the spinner's frame as `*`, session ids as
/// `<id>`, `home`'s path as `<home>`.
fn mask(text: &str, home: &Home) -> String {
    let text = text.replace(&home.path().display().to_string(), "<home>");
    let mut out = String::new();
    for line in text.lines() {
        let words: Vec<String> = line
            .split(' ')
            .map(|w| {
                let core = w.trim_end_matches([',', ')', '.']);
                let tail = &w[core.len()..];
                let is_time = core.ends_with('s')
                    && core.len() > 1
                    && core[..core.len() - 1]
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == '.' || c == 'm')
                    && core.chars().next().is_some_and(|c| c.is_ascii_digit());
                let is_id = core.len() >= 30 && core.chars().filter(|c| *c == '-').count() >= 4;
                if is_time {
                    format!("Ns{tail}")
                } else if is_id {
                    format!("<id>{tail}")
                } else {
                    w.chars()
                        .map(|c| {
                            if ('\u{2800}'..='\u{28ff}').contains(&c) {
                                '*'
                            } else {
                                c
                            }
                        })
                        .collect()
                }
            })
            .collect();
        out.push_str(&words.join(" "));
        out.push('\n');
    }
    out
}

/// A DeepSeek reply streamed in pieces of `chunk` characters.
fn streamed(text: &str, chunk: usize) -> ScriptedResponse {
    let chars: Vec<char> = text.chars().collect();
    let mut payloads: Vec<String> = chars
        .chunks(chunk)
        .map(|c| {
            json!({"choices":[{"index":0,"delta":{"content": c.iter().collect::<String>()},"finish_reason":null}]})
                .to_string()
        })
        .collect();
    payloads.push(
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1200,"completion_tokens":42}})
            .to_string(),
    );
    payloads.push("[DONE]".to_string());
    ScriptedResponse::sse(&payloads)
}

/// A home whose model is the loopback server's, at a flat price (the
/// built-in one depends on the hour: the status line's cost would too).
fn home_with_model(server: &LoopbackServer) -> Home {
    let home = Home::new(DSH);
    home.write_user_config(&format!(
        "model = \"deepseek-v4-flash\"\n[deepseek]\napi_key = \"sk-test\"\nbase_url = \"{}\"\n[models.deepseek-v4-flash]\ninput_price = 1\noutput_price = 1\n",
        server.base_url()
    ));
    home
}

fn exit(s: &mut Screen) -> i32 {
    s.keys(key::CTRL_D);
    s.wait_exit(Duration::from_secs(30))
}

const ANSWER: &str = "## Summary\n\nThe fix is **small** and touches `main`.\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n- first point\n- second point\n\n> quoted words\n";

#[test]
fn a_streamed_markdown_answer_is_rendered() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt
        .block_on(LoopbackServer::start([
            streamed(ANSWER, 7),
            streamed("\"Explaining the fix\"", 50),
        ]))
        .unwrap();
    let home = home_with_model(&server);
    let mut s = Screen::chat(&home, &[], 30, 100);
    s.wait_for("the composer", idle);
    s.keys("explain the fix");
    s.keys(key::ENTER);
    let history = s.wait_for_history("the answer", |t| t.contains("quoted words") && idle(t));
    for raw in ["## ", "**", "```", "`main`"] {
        assert!(!history.contains(raw), "{raw:?} shown as typed:\n{history}");
    }
    assert!(history.contains("Summary"), "{history}");
    assert!(history.contains("• first point"), "{history}");
    assert!(history.contains("│ quoted words"), "{history}");
    // The heading is bold, the code highlighted.
    let (r, c) = s.find("Summary").unwrap();
    assert!(s.with_screen(|sc| sc.cell(r, c).unwrap().bold()));
    let color = s.color_of("fn main").unwrap();
    assert_ne!(
        color,
        vt100::Color::Default,
        "code is highlighted:\n{}",
        s.text()
    );
    insta::assert_snapshot!("markdown_answer", mask(&s.text(), &home));
    assert_eq!(exit(&mut s), 0);
}

#[test]
fn a_tool_call_is_one_line_with_its_result_folded() {
    let home = Home::new(DSH);
    let mut s = Screen::chat(&home, &[], 30, 100);
    s.wait_for("the composer", idle);
    s.keys("run seq 1 30");
    s.keys(key::ENTER);
    let screen = s.wait_for("the folded result", |t| t.contains("+26 lines") && idle(t));
    assert!(
        screen.contains("● Bash seq 1 30 — exit 0, "),
        "one line with the outcome:\n{screen}"
    );
    assert!(screen.contains("⎿ 1\n"), "{screen}");
    assert!(!screen.contains("\n    30\n"), "folded:\n{screen}");
    assert_eq!(
        s.color_of("●"),
        Some(vt100::Color::Idx(2)),
        "a success is green"
    );
    insta::assert_snapshot!("tool_call", mask(&s.text(), &home));
    // Ctrl-O shows the last output whole.
    s.keys(key::CTRL_O);
    let history = s.wait_for_history("the whole output", |t| {
        t.contains("(whole output)") && t.contains("\n    30\n")
    });
    assert!(history.contains("\n    29\n"), "{history}");
    assert_eq!(exit(&mut s), 0);
}

#[test]
fn file_changes_show_as_coloured_diffs_with_line_numbers() {
    let home = Home::new(DSH);
    let mut s = Screen::chat(&home, &[], 40, 100);
    s.wait_for("the composer", idle);
    s.keys(r#"call write {"file_path":"notes.txt","content":"alpha\nbeta\ngamma\n"}"#);
    s.keys(key::ENTER);
    s.wait_for("the write", |t| {
        t.contains("Write notes.txt (+3 −0)") && idle(t)
    });
    s.keys(r#"call read {"file_path":"notes.txt"}"#);
    s.keys(key::ENTER);
    s.wait_for("the read", |t| {
        t.contains("Read notes.txt (lines 1-3)") && idle(t)
    });
    s.keys(r#"call edit {"file_path":"notes.txt","old_string":"beta","new_string":"BETA"}"#);
    s.keys(key::ENTER);
    let screen = s.wait_for("the edit", |t| {
        t.contains("Edit notes.txt (+1 −1)") && idle(t)
    });
    assert!(screen.contains("2 - beta"), "{screen}");
    assert!(screen.contains("2 + BETA"), "{screen}");
    assert_eq!(
        s.color_of("- beta"),
        Some(vt100::Color::Idx(1)),
        "removed: red"
    );
    assert_eq!(
        s.color_of("+ BETA"),
        Some(vt100::Color::Idx(2)),
        "added: green"
    );
    assert_eq!(
        std::fs::read_to_string(home.cwd().join("notes.txt")).unwrap(),
        "alpha\nBETA\ngamma\n"
    );
    insta::assert_snapshot!("diff", mask(&s.text(), &home));
    assert_eq!(exit(&mut s), 0);
}

#[test]
fn a_slow_tool_shows_the_spinner_and_what_runs() {
    let home = Home::new(DSH);
    let mut s = Screen::chat(&home, &[], 24, 100);
    s.wait_for("the composer", idle);
    s.keys("run sleep 3");
    s.keys(key::ENTER);
    let screen = s.wait_for("the running call", |t| {
        t.contains("○ Bash sleep 3 — running 1s") || t.contains("○ Bash sleep 3 — running 2s")
    });
    let status = screen.lines().last().unwrap();
    assert!(
        status
            .chars()
            .next()
            .is_some_and(|c| ('\u{2800}'..='\u{28ff}').contains(&c)),
        "a spinner leads the status line: {status:?}"
    );
    assert!(status.contains("running"), "{status}");
    // It moves: a later frame differs.
    std::thread::sleep(Duration::from_millis(300));
    assert_ne!(
        s.text().lines().last().unwrap(),
        status,
        "the status line moves"
    );
    s.wait_for("the end", |t| {
        t.contains("● Bash sleep 3 — exit 0") && idle(t)
    });
    assert_eq!(exit(&mut s), 0);
}

#[test]
fn an_approval_question_is_a_dialog_answered_n_with_a_note() {
    let home = Home::new(DSH);
    let mut s = Screen::chat(&home, &["--permission", "read-only"], 30, 100);
    s.wait_for("the composer", idle);
    s.keys(r#"call bash {"command":"touch made.txt","description":"make a file","sandbox_permissions":"workspace-write","justification":"the task needs the file"}"#);
    s.keys(key::ENTER);
    // The whole frame, down to the status line under the dialog.
    let screen = s.wait_for("the dialog", |t| {
        t.contains("Allow bash?") && t.lines().last().is_some_and(|l| l.contains("read-only"))
    });
    assert!(screen.contains("touch made.txt"), "{screen}");
    assert!(screen.contains("why: the task needs the file"), "{screen}");
    assert!(screen.contains("y allow once"), "{screen}");
    assert!(
        !screen.contains(READY),
        "the dialog has the focus:\n{screen}"
    );
    insta::assert_snapshot!("approval_dialog", mask(&screen, &home));
    s.keys("n");
    s.wait_for("the note field", |t| t.contains("note for the model"));
    s.keys("use the scratch dir");
    s.keys(key::ENTER);
    let screen = s.wait_for("the denial", |t| {
        t.contains("— denied: use the scratch") && idle(t)
    });
    assert!(!screen.contains("Allow bash?"), "{screen}");
    assert!(
        screen.contains("the user denied it: use the scratch dir"),
        "the note reached the model:\n{screen}"
    );
    assert!(!home.cwd().join("made.txt").exists());
    // Ctrl-C withdraws an open question: the call is denied, the chat goes on.
    s.keys(r#"call bash {"command":"touch other.txt","description":"another file","sandbox_permissions":"workspace-write","justification":"again"}"#);
    s.keys(key::ENTER);
    s.wait_for("the second dialog", |t| t.contains("Allow bash?"));
    s.keys(key::CTRL_C);
    s.wait_for("the withdrawal", |t| t.contains("— cancelled") && idle(t));
    assert!(s.alive());
    assert!(!home.cwd().join("other.txt").exists());
    let decided = home.of_type("approval/decided");
    assert_eq!(decided.len(), 2);
    assert!(
        decided[0].to_string().contains("use the scratch dir"),
        "{decided:?}"
    );
    assert_eq!(exit(&mut s), 0);
}

#[test]
fn ctrl_c_clears_then_aborts_then_exits_on_a_second_press() {
    let home = Home::new(DSH);
    let mut s = Screen::chat(&home, &[], 24, 100);
    s.wait_for("the composer", idle);
    // Text in the composer: cleared.
    s.keys("half a thought");
    s.wait_for("the text", |t| t.contains("› half a thought"));
    s.keys(key::CTRL_C);
    s.wait_for("an empty composer", |t| {
        idle(t) && !t.contains("half a thought")
    });
    // A running turn: aborted, the typed text stays.
    s.keys("run sleep 30");
    s.keys(key::ENTER);
    s.wait_for("the running call", |t| t.contains("running"));
    s.keys("keep me");
    s.keys(key::CTRL_C);
    let screen = s.wait_for("the abort", |t| t.contains("[aborted: user interrupt]"));
    assert!(screen.contains("› keep me"), "the text stays:\n{screen}");
    assert!(s.alive(), "Ctrl-C during a turn does not exit");
    // Esc aborts too.
    s.keys(key::CTRL_U);
    s.keys("run sleep 30");
    s.keys(key::ENTER);
    s.wait_for("the second call", |t| {
        t.matches("Bash sleep 30").count() >= 1 && t.contains("running")
    });
    s.keys(key::ESC);
    s.wait_for_history("the second abort", |t| {
        t.matches("[aborted: user interrupt]").count() == 2
    });
    // Idle and empty: a first Ctrl-C warns, a second exits.
    s.wait_for("idle", idle);
    s.keys(key::CTRL_C);
    s.wait_for("the warning", |t| t.contains("press Ctrl-C again to exit"));
    assert!(s.alive());
    s.keys(key::CTRL_C);
    assert_eq!(s.wait_exit(Duration::from_secs(30)), 0);
    let log = home.only_log();
    let aborted = log
        .iter()
        .filter(|e| e["type"] == "turn/end" && e.to_string().contains("aborted"))
        .count();
    assert_eq!(aborted, 2);
}

#[test]
fn a_message_typed_during_a_turn_waits_in_the_live_area() {
    let home = Home::new(DSH);
    let mut s = Screen::chat(&home, &[], 30, 100);
    s.wait_for("the composer", idle);
    s.keys("run sleep 2");
    s.keys(key::ENTER);
    s.wait_for("the running call", |t| t.contains("running"));
    s.keys("echo steered");
    s.keys(key::ENTER);
    let screen = s.wait_for("the queued message", |t| {
        t.contains("↳ queued: echo steered")
    });
    assert!(!screen.contains("› echo steered"), "not echoed:\n{screen}");
    assert!(
        screen.contains("1 queued"),
        "the status line counts it:\n{screen}"
    );
    let history = s.wait_for_history("the steered turn", |t| {
        t.contains("The echo tool says: steered") && idle(t)
    });
    assert!(history.contains("› echo steered"), "{history}");
    assert!(!s.text().contains("↳ queued"), "{}", s.text());
    assert_eq!(exit(&mut s), 0);
}

#[test]
fn narrow_terminals_wrap_words_and_a_resize_rewraps() {
    let home = Home::new(DSH);
    let mut s = Screen::chat(&home, &[], 24, 40);
    s.wait_for("the composer", idle);
    let words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa";
    s.keys(&format!("echo {words}"));
    s.keys(key::ENTER);
    let history = s.wait_for_history("the answer", |t| t.contains("papa") && idle(t));
    let answer: Vec<&str> = history
        .lines()
        .skip_while(|l| !l.contains("The echo tool says"))
        .take_while(|l| !l.trim().is_empty())
        .collect();
    assert!(answer.len() > 1, "wrapped:\n{history}");
    for l in &answer {
        assert!(l.chars().count() <= 40, "{l:?} is wider than 40");
    }
    let joined = answer.join(" ");
    for w in words.split(' ') {
        assert!(
            joined.split(' ').any(|x| x == w),
            "{w} split mid-word:\n{history}"
        );
    }
    insta::assert_snapshot!("narrow", mask(&s.text(), &home));
    s.resize(24, 90);
    // Redrawn at the new width: the composer's hint is no longer cut.
    s.wait_for("the redraw", |t| t.contains("@ files · Ctrl-D exits"));
    s.keys("echo after the resize the lines are longer than forty columns wide");
    s.keys(key::ENTER);
    let screen = s.wait_for("the second answer", |t| {
        t.contains("columns wide") && idle(t)
    });
    assert!(
        screen
            .lines()
            .any(|l| l.chars().count() > 40 && l.contains("The echo tool says")),
        "rewrapped at 90:\n{screen}"
    );
    assert_eq!(exit(&mut s), 0);
}

#[test]
fn no_color_writes_no_colour() {
    let home = Home::new(DSH);
    let mut cmd = home.dsh();
    cmd.arg("chat")
        .env("TERM", "xterm-256color")
        .env("NO_COLOR", "1");
    let mut s = Screen::spawn(&cmd, 24, 80);
    s.wait_for("the composer", idle);
    s.keys("run echo hello");
    s.keys(key::ENTER);
    s.wait_for("the call", |t| t.contains("● Bash echo hello") && idle(t));
    let raw = String::from_utf8_lossy(&s.raw()).into_owned();
    assert!(!has_sgr_colour(&raw), "colour written under NO_COLOR");
    assert_eq!(s.color_of("●"), Some(vt100::Color::Default));
    assert_eq!(exit(&mut s), 0);
}

/// Whether `raw` holds an SGR sequence setting a colour or an attribute.
fn has_sgr_colour(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    let mut i = 0;
    while let Some(at) = raw[i..].find("\x1b[") {
        let start = i + at + 2;
        let mut j = start;
        while j < bytes.len() && (bytes[j].is_ascii_digit() || bytes[j] == b';') {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b'm' && j > start && &raw[start..j] != "0" {
            return true;
        }
        i = start;
    }
    false
}

#[test]
fn a_dumb_terminal_gets_the_line_mode() {
    let home = Home::new(DSH);
    let mut cmd = home.dsh();
    cmd.arg("chat").env("TERM", "dumb");
    let mut s = Screen::spawn(&cmd, 24, 80);
    s.wait_for("the prompt", |t| t.lines().any(|l| l == "›"));
    s.keys("echo plain");
    s.keys(key::ENTER);
    s.wait_for("the answer", |t| t.contains("The echo tool says: plain"));
    s.keys(key::CTRL_D);
    assert_eq!(s.wait_exit(Duration::from_secs(30)), 0);
    let raw = String::from_utf8_lossy(&s.raw()).into_owned();
    assert!(
        !raw.contains("\x1b[?2026h"),
        "no live area on a dumb terminal"
    );
    assert!(!raw.contains(READY));
}

#[test]
fn a_resumed_chat_shows_the_last_turns_first() {
    let home = Home::new(DSH);
    let input: String = (1..=12).map(|i| format!("echo turn {i}\n")).collect();
    let out = dsh_testkit::cli::output_within(
        {
            let mut c = home.dsh();
            c.arg("chat");
            c
        },
        Some(&input),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{}", dsh_testkit::cli::stderr(&out));
    let id = home.only_session();
    let mut s = Screen::chat(&home, &["--resume", &id], 40, 100);
    let history = s.wait_for_history("the earlier conversation", |t| {
        t.contains("The echo tool says: turn 12") && idle(t)
    });
    assert!(history.contains("… 2 earlier turns not shown"), "{history}");
    assert!(!history.contains("› echo turn 2\n"), "{history}");
    assert!(history.contains("› echo turn 3"), "{history}");
    assert_eq!(exit(&mut s), 0);
}

#[test]
fn the_composer_completes_recalls_and_takes_several_lines() {
    let home = Home::new(DSH);
    std::fs::write(home.cwd().join("alpha_notes.md"), "x").unwrap();
    let mut s = Screen::chat(&home, &[], 30, 100);
    s.wait_for("the composer", idle);
    // `/` lists the matching commands with their descriptions.
    s.keys("/per");
    let screen = s.wait_for("the popup", |t| t.contains("▸ /permission"));
    assert!(screen.contains("Show the permission mode"), "{screen}");
    s.keys(key::TAB);
    s.wait_for("the completion", |t| {
        t.contains("› /permission") && !t.contains("▸")
    });
    s.keys("read-only");
    s.keys(key::ENTER);
    s.wait_for("the new mode", |t| {
        idle(t) && t.lines().last().is_some_and(|l| l.contains("read-only"))
    });
    // `@` lists the workspace's files, matched fuzzily.
    s.keys("look at @alnot");
    s.wait_for("the file popup", |t| t.contains("▸ alpha_notes.md"));
    s.keys(key::TAB);
    s.wait_for("the path", |t| t.contains("› look at @alpha_notes.md"));
    // Alt-Enter and a trailing backslash make new lines; Enter sends.
    s.keys(key::ALT_ENTER);
    s.keys("second line\\");
    s.keys(key::ENTER);
    s.keys("third");
    let screen = s.wait_for("three lines", |t| t.contains("\n  third"));
    assert!(
        screen.contains("› look at @alpha_notes.md\n  second line\n  third"),
        "{screen}"
    );
    s.keys(key::ENTER);
    s.wait_for_history("the message", |t| {
        t.contains("› look at @alpha_notes.md\n  second line\n  third") && idle(t)
    });
    // Up recalls it whole.
    s.keys(key::UP);
    s.wait_for("the recalled message", |t| {
        !idle(t) && t.lines().rev().nth(1).is_some_and(|l| l == "  third")
    });
    s.keys(key::CTRL_C);
    s.wait_for("an empty composer", idle);
    // Ctrl-R finds an older entry.
    s.keys(key::CTRL_R);
    s.keys("permis");
    s.wait_for("the search", |t| {
        t.contains("(reverse-i-search)'permis': /permission read-only")
    });
    s.keys(key::ENTER);
    s.wait_for("the found entry", |t| t.contains("› /permission read-only"));
    s.keys(key::CTRL_C);
    s.wait_for("an empty composer", idle);
    // A bracketed paste keeps its new lines and is not sent.
    s.keys(&key::paste("pasted\nblock"));
    let screen = s.wait_for("the paste", |t| t.contains("› pasted\n  block"));
    assert!(!screen.contains("Calling"), "{screen}");
    s.keys(key::CTRL_C);
    s.wait_for("an empty composer", idle);
    assert_eq!(exit(&mut s), 0);
    let history = std::fs::read_to_string(home.path().join("state/dsh/history")).unwrap();
    assert!(history.starts_with("#V2\n"), "{history}");
    assert!(history.contains("/permission read-only\n"), "{history}");
    assert!(
        history.contains("look at @alpha_notes.md \\nsecond line\\nthird\n"),
        "{history}"
    );
}

/// A DeepSeek reply that reasons, says a line and calls one tool.
fn calls(
    reasoning: &str,
    text: &str,
    id: &str,
    tool: &str,
    arguments: &serde_json::Value,
) -> ScriptedResponse {
    let delta = |d: serde_json::Value| {
        json!({"choices":[{"index":0,"delta":d,"finish_reason":null}]}).to_string()
    };
    ScriptedResponse::sse(&[
        delta(json!({"role":"assistant","reasoning_content":reasoning})),
        delta(json!({"content":text})),
        delta(json!({"tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":tool,"arguments":arguments.to_string()}}]})),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5200,"completion_tokens":60}}).to_string(),
        "[DONE]".to_string(),
    ])
}

/// A whole session with the scripted model: reasoning, a failing test
/// run, a read, an edit shown as a diff, a markdown answer. Its screen is
/// the README's screenshot: `DSH_WRITE_SCREENSHOT=1 cargo test -p dsh-cli
/// --test tui -- a_session_reads_as` writes `docs/tui-screenshot.svg`.
#[test]
fn a_session_reads_as_a_person_follows_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt
        .block_on(LoopbackServer::start([
            calls(
                "The user says the last line goes missing. Run the tests first.",
                "Let me run the tests first.",
                "call_1",
                "bash",
                &json!({"command":"printf 'running 3 tests\\ntest parse ... ok\\ntest render_keeps_last_line ... FAILED\\ntest wrap ... ok\\n\\nfailures:\\n    render_keeps_last_line\\n'; exit 101","description":"Run the tests"}),
            ),
            calls("", "One test fails; reading the renderer.", "call_2", "read", &json!({"file_path":"render.rs"})),
            calls(
                "",
                "The loop stops one line early.",
                "call_3",
                "edit",
                &json!({"file_path":"render.rs","old_string":"for i in 0..lines.len() - 1 {","new_string":"for i in 0..lines.len() {"}),
            ),
            streamed(
                "## Fixed\n\nThe loop in `render` stopped **one line early**, so the last line never reached the screen:\n\n```rust\nfor i in 0..lines.len() {\n    out.push(wrap(&lines[i], width));\n}\n```\n\n- `render_keeps_last_line` passes now\n- no other caller depended on the old bound\n",
                9,
            ),
            streamed("\"Fixing the missing last line\"", 50),
        ]))
        .unwrap();
    let home = home_with_model(&server);
    std::fs::write(
        home.cwd().join("render.rs"),
        "pub fn render(lines: &[String], width: usize) -> Vec<String> {\n    let mut out = Vec::new();\n    for i in 0..lines.len() - 1 {\n        out.push(wrap(&lines[i], width));\n    }\n    out\n}\n",
    )
    .unwrap();
    let mut s = Screen::chat(&home, &[], 44, 100);
    s.wait_for("the composer", idle);
    s.keys("the last line of the output goes missing; fix it");
    s.keys(key::ENTER);
    let screen = s.wait_for("the answer", |t| t.contains("no other caller") && idle(t));
    for part in [
        "✻ The user says the last line goes missing. Run the tests first.",
        "● Bash printf",
        "— exit 101, ",
        "● Read render.rs (lines 1-7)",
        "● Edit render.rs (+1 −1)",
        "3 - ",
        "3 + ",
        "• render_keeps_last_line passes now",
    ] {
        assert!(screen.contains(part), "{part:?} missing:\n{screen}");
    }
    let (r, c) = s.find("Fixed").unwrap();
    assert!(
        s.with_screen(|sc| sc.cell(r, c).unwrap().bold()),
        "the heading is bold"
    );
    if std::env::var_os("DSH_WRITE_SCREENSHOT").is_some() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tui-screenshot.svg");
        std::fs::write(path, s.svg()).unwrap();
    }
    assert!(s.svg().contains("Edit render.rs"));
    assert_eq!(exit(&mut s), 0);
}

#[test]
fn a_plan_is_asked_about_in_a_dialog_and_approving_it_ends_plan_mode() {
    let home = Home::new(DSH);
    let mut s = Screen::chat(&home, &[], 30, 100);
    s.wait_for("the composer", idle);
    s.keys("/plan");
    s.keys(key::ENTER);
    s.wait_for("plan mode", |t| {
        t.contains("plan › ") && t.lines().last().is_some_and(|l| l.contains("plan"))
    });
    s.keys(r###"call exit_plan_mode {"plan":"## Plan\n\n1. Read **main.rs**\n2. Fix the loop"}"###);
    s.keys(key::ENTER);
    let screen = s.wait_for("the plan dialog", |t| {
        t.contains("Approve the plan?") && t.lines().last().is_some_and(|l| l.contains("waiting"))
    });
    assert!(
        screen.contains("1. Read main.rs"),
        "rendered markdown:\n{screen}"
    );
    let dialog = &screen[screen.find("Approve the plan?").unwrap()..];
    assert!(
        !dialog.contains("## Plan") && !dialog.contains("**"),
        "{screen}"
    );
    assert!(screen.contains("y approve and leave plan mode"), "{screen}");
    s.keys("y");
    let screen = s.wait_for("the approval", |t| {
        t.contains("the plan — approved") && idle(t)
    });
    assert!(
        screen.contains("› type a message"),
        "the plan prompt is gone:\n{screen}"
    );
    assert!(!screen.lines().last().unwrap().contains("plan"), "{screen}");
    assert_eq!(exit(&mut s), 0);
}

#[test]
fn allowing_for_the_session_offers_to_save_a_lasting_rule() {
    let home = Home::new(DSH);
    let mut s = Screen::chat(&home, &["--permission", "read-only"], 30, 100);
    s.wait_for("the composer", idle);
    let call = |file: &str| {
        format!(
            r#"call bash {{"command":"touch {file}","description":"make a file","sandbox_permissions":"workspace-write","justification":"the task needs it"}}"#
        )
    };
    s.keys(&call("one.txt"));
    s.keys(key::ENTER);
    s.wait_for("the dialog", |t| t.contains("Allow bash?"));
    s.keys("a");
    let screen = s.wait_for("the offer", |t| t.contains("Save a permission rule?"));
    assert!(
        screen.contains("Always allow bash(touch one.txt:*) in this project?"),
        "{screen}"
    );
    s.keys("y");
    s.wait_for("the saved rule", |t| {
        t.contains("saved: always allow bash(touch one.txt:*)") && idle(t)
    });
    assert!(home.cwd().join("one.txt").exists());
    let saved = std::fs::read_to_string(home.config_dir().join("permissions.toml")).unwrap();
    assert!(saved.contains("bash(touch one.txt:*)"), "{saved}");
    assert_eq!(exit(&mut s), 0);
    // A new chat asks no more for that command: the rule answers.
    let mut s = Screen::chat(&home, &["--permission", "read-only"], 30, 100);
    s.wait_for("the composer", idle);
    std::fs::remove_file(home.cwd().join("one.txt")).unwrap();
    s.keys(&call("one.txt"));
    s.keys(key::ENTER);
    let screen = s.wait_for("the call", |t| {
        t.contains("● Bash touch one.txt") && idle(t)
    });
    assert!(!screen.contains("Allow bash?"), "{screen}");
    assert!(home.cwd().join("one.txt").exists());
    assert_eq!(exit(&mut s), 0);
}
