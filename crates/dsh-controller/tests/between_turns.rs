//! Commands that run between turns (`/undo`, `/compact`, `/clear`): refused
//! at once while a turn runs, accepted as soon as a client saw the turn end
//! (the agent goes idle a moment after `turn_ended` is published).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::{open, read_until};
use dsh::Settings;
use dsh_controller::{Controller, EventBody, Reply, Session, SessionOptions};

fn controller(dir: &Path) -> Controller {
    Controller::new(Settings {
        cwd: Some(dir.join("ws")),
        ..common::echo_settings(dir, "")
    })
}

/// Prompts, then returns at the first event `stop` accepts.
async fn prompt_until(s: &Session, prompt: &str, stop: impl Fn(&EventBody) -> bool) {
    let from = s.next_seq();
    s.prompt(prompt).await.unwrap();
    read_until(s, from, stop).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_right_after_turn_ended_is_never_refused_as_running() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let c = controller(dir.path());
    let s = open(&c, SessionOptions::default()).await;
    let file = dir.path().join("ws/f.txt");
    for round in 0..8 {
        let call = format!(
            r#"call write {{"file_path":"{}","content":"round {round}\n"}}"#,
            file.display()
        );
        prompt_until(&s, &call, |b| matches!(b, EventBody::TurnEnded { .. })).await;
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            format!("round {round}\n")
        );
        // At once: the client has just seen `turn_ended`.
        match s.command("undo", "").await {
            Reply::Restored(r) => assert_eq!(r.action, "undo"),
            other => panic!("round {round}: {other:?}"),
        }
        let expected = if round == 0 {
            None
        } else {
            Some(format!("round {}\n", round - 1))
        };
        // The file is as it was before the turn: absent before the first,
        // else what the last round left (written again below).
        assert_eq!(
            std::fs::read_to_string(&file).ok(),
            expected,
            "round {round}"
        );
        // The state the next turn starts from (a change by hand).
        std::fs::write(&file, format!("round {round}\n")).unwrap();
    }
    c.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_turn_refuses_between_turn_commands_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let c = controller(dir.path());
    let s = open(&c, SessionOptions::default()).await;
    prompt_until(&s, "run sleep 5", |b| {
        matches!(b, EventBody::ToolRunning { .. })
    })
    .await;
    for name in ["undo", "compact", "clear"] {
        let asked = std::time::Instant::now();
        match s.command(name, "").await {
            Reply::Failed(e) => {
                assert_eq!(e.code, dsh_protocol::codes::TURN_RUNNING, "/{name}");
                assert!(
                    e.message.contains(&format!("/{name} runs between turns")),
                    "{}",
                    e.message
                );
            }
            other => panic!("/{name}: {other:?}"),
        }
        // The log says a turn is open: no settling wait.
        assert!(asked.elapsed() < Duration::from_secs(1), "/{name} waited");
    }
    s.abort("test over");
    c.shutdown("test over").await;
}
