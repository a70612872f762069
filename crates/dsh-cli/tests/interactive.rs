//! Interactive `dsh chat` on a real terminal, driven through tmux: a line
//! typed while a turn runs steers it, Ctrl-C aborts the running step, Ctrl-D
//! exits; an untrusted project config is asked about before anything runs.
//! Skipped (with a message) where tmux is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use dsh_testkit::cli::{Home, Tmux};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

#[test]
fn steer_abort_and_exit_on_a_terminal() {
    Tmux::require();
    let dir = Home::new(DSH);
    let t = Tmux::chat(&dir, "steer");
    t.wait_for("the prompt", |s| s.contains("› "));

    // A plain turn.
    t.keys(&["echo hello", "Enter"]);
    t.wait_for("the echo answer", |s| {
        s.contains("The echo tool says: hello")
    });
    // The context meter after the turn.
    t.wait_for("the meter", |s| {
        s.contains("ctx 0% · ") && s.contains("/1.0M")
    });

    // Steering: typed while `sleep` runs, delivered after the tool result.
    t.keys(&["run sleep 1; echo slept", "Enter"]);
    t.wait_for("the bash call", |s| s.contains("⏺ bash("));
    t.keys(&["echo steered", "Enter"]);
    t.wait_for("the steered echo", |s| {
        s.contains("The echo tool says: steered")
    });

    // Ctrl-C aborts a running step; the prompt stays.
    t.keys(&["run sleep 30", "Enter"]);
    // The call's line, not the typed text (which says `sleep 30` at once):
    // the step runs when Ctrl-C comes.
    t.wait_for("the long bash call", |s| {
        s.contains(r#"⏺ bash({"command":"sleep 30""#)
    });
    t.keys(&["C-c"]);
    t.wait_for("the abort notice", |s| {
        s.contains("[aborted: user interrupt]")
    });
    assert!(t.alive(), "Ctrl-C during a turn must not exit");

    // Ctrl-D at the idle prompt exits.
    t.keys(&["C-d"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while t.alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!t.alive(), "Ctrl-D exits dsh");

    let sessions = dir.path().join("data/dsh/sessions");
    let file = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a session file");
    let log = std::fs::read_to_string(file).unwrap();
    assert!(
        log.contains("\"type\":\"steering/message\""),
        "steering is logged"
    );
    assert!(log.contains("\"reason\":{\"kind\":\"aborted\",\"reason\":\"user interrupt\"}"));
}

#[test]
fn chat_asks_before_trusting_a_project_config_and_remembers_the_answer() {
    Tmux::require();
    let dir = Home::new(DSH);
    let marker = dir.path().join("pwned");
    std::fs::write(
        dir.path().join("dsh.toml"),
        format!(
            "[mcp.servers.evil]\ncommand = \"touch\"\nargs = [\"{}\"]\n",
            marker.display()
        ),
    )
    .unwrap();
    let t = Tmux::chat(&dir, "trust-no");
    let screen = t.wait_for("the trust question", |s| {
        s.contains("it can run commands and change where your key is sent [y/N]")
    });
    assert!(screen.contains("trust the configuration in"), "{screen}");
    assert!(
        screen.contains(r#"mcp server "evil" runs the command "touch""#),
        "the question shows what the config would do: {screen}"
    );
    assert!(!marker.exists(), "nothing ran before the answer");
    t.keys(&["n", "Enter"]);
    t.wait_for("the prompt after refusing", |s| s.contains("› "));
    let screen = t.screen();
    assert!(screen.contains("ignoring mcp"), "{screen}");
    assert!(!marker.exists(), "refused: the MCP command never ran");
    t.keys(&["C-d"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while t.alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let record = std::fs::read_to_string(dir.path().join("config/dsh/trusted.toml")).unwrap();
    assert!(record.contains("trusted = false"), "{record}");
    drop(t);

    // The refusal is remembered: no question the second time.
    let t = Tmux::chat(&dir, "trust-again");
    let screen = t.wait_for("the prompt", |s| s.contains("› "));
    assert!(!screen.contains("[y/N]"), "{screen}");
    assert!(!marker.exists());
}

/// The session log of the only session under `dir`.
fn only_log(dir: &Path) -> String {
    let sessions = dir.join("data/dsh/sessions");
    let file = std::fs::read_dir(&sessions)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a session file");
    std::fs::read_to_string(file).unwrap()
}

#[test]
fn escalations_are_asked_on_the_terminal_once_always_no_and_ctrl_c() {
    Tmux::require();
    if !dsh_sandbox::probe().filesystem_full() {
        eprintln!("SKIP: Landlock unavailable: {}", dsh_sandbox::probe());
        return;
    }
    let dir = Home::new(DSH);
    // Outside the workspace and the system temp dir: only an escalation
    // can write here.
    let outside = dsh_testkit::outside_temp_dir(env!("CARGO_TARGET_TMPDIR"), "approve-");
    let target = outside.path().join("out");
    let call = |line: &str| {
        format!(
            r#"call bash {{"command":"echo {line} >> {}","description":"append","sandbox_permissions":"danger-full-access","justification":"the file is outside"}}"#,
            target.display()
        )
    };
    let content = || std::fs::read_to_string(&target).unwrap_or_default();
    let t = Tmux::chat(&dir, "approve");
    t.wait_for("the prompt", |s| s.contains("› "));

    // Without escalation the sandbox stops the write.
    t.keys(&[&format!("run echo plain >> {}", target.display()), "Enter"]);
    t.wait_for("the sandbox line", |s| {
        s.contains("[sandbox: write denied under workspace-write mode]")
    });
    assert_eq!(content(), "");

    // `n` with a note: denied, and the note reaches the model.
    t.keys(&[&call("denied"), "Enter"]);
    t.wait_for("the question", |s| {
        s.contains("? bash wants to run a command under danger-full-access")
            && s.contains("justification: the file is outside")
    });
    t.keys(&["perhaps", "Enter"]);
    t.wait_for("the options again", |s| {
        s.matches("allow? [y] once").count() >= 2
    });
    t.keys(&["n use the workspace", "Enter"]);
    t.wait_for("the denial", |s| {
        s.contains("permission denied: the user denied it: use the workspace")
    });
    assert_eq!(content(), "");

    // Ctrl-C denies without ending the turn or chat.
    t.keys(&[&call("cancelled"), "Enter"]);
    t.wait_for("the second question", |s| {
        s.matches("? bash wants to").count() >= 2
    });
    t.keys(&["C-c"]);
    t.wait_for("the cancellation", |s| {
        s.contains("permission denied: the user cancelled the approval")
    });
    assert!(t.alive(), "Ctrl-C at a question must not exit");
    assert_eq!(content(), "");

    // `y` runs it once; the same command asks again.
    t.keys(&[&call("once"), "Enter"]);
    t.wait_for("the third question", |s| {
        s.matches("? bash wants to").count() >= 3
    });
    t.keys(&["y", "Enter"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while content() != "once\n" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(content(), "once\n");

    // `a` runs it and allows the exact command for the session.
    t.keys(&[&call("always"), "Enter"]);
    t.wait_for("the fourth question", |s| {
        s.matches("? bash wants to").count() >= 4
    });
    t.keys(&["a", "Enter"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while content() != "once\nalways\n" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    t.wait_for("the turn to end", |s| s.trim_end().ends_with('›'));
    t.keys(&[&call("always"), "Enter"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while content() != "once\nalways\nalways\n" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(content(), "once\nalways\nalways\n");
    let screen = t.screen();
    assert_eq!(
        screen.matches("? bash wants to").count(),
        4,
        "the grant answered the repeat:\n{screen}"
    );

    t.keys(&["C-d"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while t.alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = only_log(dir.path());
    let decided: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("approval/decided"))
        .collect();
    let outcomes: Vec<&str> = decided
        .iter()
        .map(|l| {
            [
                "\"outcome\":\"rejected\"",
                "\"outcome\":\"cancelled\"",
                "\"outcome\":\"allowed-once\"",
                "\"outcome\":\"allowed-for-session\"",
            ]
            .into_iter()
            .find(|o| l.contains(o))
            .unwrap_or("?")
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            "\"outcome\":\"rejected\"",
            "\"outcome\":\"cancelled\"",
            "\"outcome\":\"allowed-once\"",
            "\"outcome\":\"allowed-for-session\"",
            "\"outcome\":\"allowed-for-session\"",
        ]
    );
    assert!(decided[0].contains("\"note\":\"use the workspace\""));
    assert!(decided[4].contains("\"by\":\"session grant\""));
    assert_eq!(log.matches("approval/asked").count(), 5);
}

#[test]
fn chat_with_a_model_titles_the_session_after_the_first_turn() {
    Tmux::require();
    use dsh_testkit::{LoopbackServer, ScriptedResponse};
    use serde_json::json;
    let reply = |text: &str| {
        ScriptedResponse::sse(&[
            json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]}).to_string(),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":3}}).to_string(),
            "[DONE]".to_string(),
        ])
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt
        .block_on(LoopbackServer::start([
            reply("hello there"),
            reply("\"Greeting the user politely, twice over.\""),
        ]))
        .unwrap();
    let dir = Home::new(DSH);
    std::fs::create_dir_all(dir.path().join("config/dsh")).unwrap();
    std::fs::write(
        dir.path().join("config/dsh/dsh.toml"),
        format!(
            "model = \"deepseek-v4-flash\"\n[deepseek]\napi_key = \"sk-test\"\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let t = Tmux::chat(&dir, "title");
    t.wait_for("the prompt", |s| s.contains("› "));
    t.keys(&["say hello", "Enter"]);
    t.wait_for("the answer", |s| s.contains("hello there"));
    t.keys(&["C-d"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while t.alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!t.alive());
    let log = only_log(dir.path());
    let title: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("session/title"))
        .collect();
    assert_eq!(title.len(), 1, "{log}");
    assert!(
        title[0].contains("\"title\":\"Greeting the user politely, twice\""),
        "five words, quotes and the period gone: {}",
        title[0]
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let asked = reqs[1].json();
    assert!(asked["messages"][0]["content"]
        .as_str()
        .unwrap()
        .starts_with("Write a title of at most five words"));
    assert_eq!(asked["messages"][1]["content"], "say hello");
    assert!(asked.get("tools").is_none(), "no tools for a title");
}

#[test]
fn plan_mode_in_chat_denies_writes_until_the_plan_is_approved() {
    Tmux::require();
    let dir = Home::new(DSH);
    let target = dir.path().join("planned.txt");
    let write = format!(
        r#"call write {{"file_path":"{}","content":"done\n"}}"#,
        target.display()
    );
    let t = Tmux::chat(&dir, "plan");
    t.wait_for("the prompt", |s| s.contains("› "));

    t.keys(&["/plan", "Enter"]);
    t.wait_for("plan mode on and its prompt", |s| {
        s.contains("plan mode: on") && s.contains("plan › ")
    });

    t.keys(&[&write, "Enter"]);
    t.wait_for("the denial", |s| {
        s.contains("permission denied: plan mode: write is not allowed while planning")
    });
    assert!(!target.exists(), "nothing is written while planning");

    t.keys(&[
        r#"call todo_write {"todos":[{"content":"Explore","status":"completed"},{"content":"Write the file","status":"in_progress"}]}"#,
        "Enter",
    ]);
    t.wait_for("the checklist under the call", |s| {
        s.contains(
            "⏺ todo_write\n  ⎿ Todo list (1/2 completed)\n    [x] Explore\n    [~] Write the file",
        )
    });

    // A rejected plan keeps planning; the feedback reaches the model.
    let present = r##"call exit_plan_mode {"plan":"# Plan\n1. Write planned.txt"}"##;
    t.keys(&[present, "Enter"]);
    t.wait_for("the plan and its question", |s| {
        s.contains("? the model's plan:\n    # Plan\n    1. Write planned.txt")
            && s.contains("approve the plan? [y] yes")
    });
    t.keys(&["n say why first", "Enter"]);
    t.wait_for("the rejection", |s| {
        s.contains("the user rejected the plan and said: say why first")
    });
    t.keys(&[&write, "Enter"]);
    t.wait_for("the second denial", |s| {
        s.matches("plan mode: write is not allowed").count() >= 4
    });
    assert!(!target.exists());

    // Approved: plan mode ends and the write goes through.
    t.keys(&[present, "Enter"]);
    t.wait_for("the second question", |s| {
        s.matches("approve the plan? [y] yes").count() >= 2
    });
    t.keys(&["y", "Enter"]);
    t.wait_for("the approval", |s| {
        s.contains("The user approved the plan.")
    });
    t.wait_for("the turn to end", |s| s.trim_end().ends_with('›'));
    t.keys(&[&write, "Enter"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !target.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "done\n");

    t.keys(&["C-d"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while t.alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = only_log(dir.path());
    let modes: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"plan/mode\""))
        .collect();
    assert_eq!(modes.len(), 2, "{modes:?}");
    assert!(modes[0].contains(r#""active":true,"source":"/plan""#));
    assert!(modes[1].contains(r#""active":false,"source":"exit_plan_mode""#));
}

#[test]
fn tab_completes_chat_commands_and_their_arguments() {
    Tmux::require();
    let dir = Home::new(DSH);
    let t = Tmux::chat(&dir, "complete");
    t.wait_for("the prompt", |s| s.contains("› "));
    t.keys(&["/per", "Tab"]);
    t.wait_for("the completed command", |s| s.contains("› /permission"));
    t.keys(&[" re", "Tab"]);
    t.wait_for("the completed mode", |s| {
        s.contains("› /permission read-only")
    });
    t.keys(&["Enter"]);
    t.wait_for("the reply, then the prompt", |s| {
        s.contains("permission mode: read-only (was workspace-write)\n› ")
    });
    t.keys(&["/help", "Enter"]);
    t.wait_for("the command list, then the prompt", |s| {
        s.contains("Leave the chat\n› ")
    });
    t.keys(&["/exit", "Enter"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while t.alive() {
        assert!(
            Instant::now() < deadline,
            "/exit ends chat; screen:\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_line_mode_offers_to_save_an_always_allow_answer() {
    Tmux::require();
    let dir = Home::new(DSH);
    dir.write_user_config("[permission]\nmode = \"read-only\"\n");
    let t = Tmux::chat(&dir, "offer");
    t.wait_for("the prompt", |s| s.contains("› "));
    t.keys(&[
        r#"call bash {"command":"touch kept.txt","description":"make a file","sandbox_permissions":"workspace-write","justification":"the task needs it"}"#,
        "Enter",
    ]);
    t.wait_for("the question", |s| s.contains("[a]"));
    t.keys(&["a", "Enter"]);
    t.wait_for("the offer", |s| {
        s.contains("? always allow bash(touch kept.txt:*) in this project (still inside the sandbox)? [y/N]")
    });
    t.keys(&["y", "Enter"]);
    t.wait_for("the saved rule", |s| {
        s.contains("saved: always allow bash(touch kept.txt:*) in this project")
    });
    let saved = std::fs::read_to_string(dir.config_dir().join("permissions.toml")).unwrap();
    assert!(saved.contains("bash(touch kept.txt:*)"), "{saved}");
}
