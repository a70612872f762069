//! The controller with the offline echo model: sessions open, stream
//! typed events a reconnecting reader can resume, take commands, put
//! approval questions to any client (the first answer wins), fork and
//! close.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{open, read_until};
use dsh::{SandboxMode, Settings};
use dsh_controller::{Controller, Decision, Event, EventBody, OpenError, Reply, SessionOptions};
use dsh_session::TurnEndReason;
use serde_json::json;

/// A controller on the echo model in `dir` (workspace; sessions under
/// `sessions/`), with an empty config file.
fn controller(dir: &Path, permission: Option<SandboxMode>) -> Controller {
    Controller::new(Settings {
        permission,
        ..common::echo_settings(dir, "")
    })
}

fn kinds(events: &[Arc<Event>]) -> Vec<&'static str> {
    events.iter().map(|e| e.body.kind()).collect()
}

fn turn_ended(b: &EventBody) -> bool {
    matches!(b, EventBody::TurnEnded { .. })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_streams_as_typed_events_that_a_second_reader_sees_identically() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path(), None);
    let s = open(&c, SessionOptions::default()).await;
    s.prompt("echo hello there").await.unwrap();
    assert!(s.busy(), "a prompt sent makes the session busy at once");
    let events = read_until(&s, 0, turn_ended).await;
    // The end is logged: a client that saw it may prompt (the agent's own
    // status may still say running for a moment).
    assert!(!s.busy());
    let k = kinds(&events);
    assert_eq!(k[0], "session_started", "{k:?}");
    // The order of a tool turn: the message, the call start, its run, its
    // result, then the answer's text and the end.
    let pos = |kind: &str| k.iter().position(|x| *x == kind).unwrap_or(usize::MAX);
    assert!(pos("user_message") < pos("turn_started") || pos("turn_started") < pos("user_message"));
    assert!(pos("tool_started") < pos("tool_running"), "{k:?}");
    assert!(pos("tool_running") < pos("tool_finished"), "{k:?}");
    assert!(pos("tool_finished") < pos("turn_ended"), "{k:?}");
    assert!(k.contains(&"message_delta"), "{k:?}");
    assert!(!k.contains(&"log"), "log events only on request: {k:?}");
    // Numbered from 0 without gaps (log events are skipped, so the
    // numbers jump over them but never go back).
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
    let finished = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ToolFinished {
                name,
                is_error,
                output,
                ..
            } => Some((name.clone(), *is_error, output.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(finished.0, "echo");
    assert!(!finished.1);
    assert!(finished.2.contains("hello there"), "{finished:?}");
    let answer: String = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::MessageDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(answer.contains("hello there"), "{answer}");
    match &events.last().unwrap().body {
        EventBody::TurnEnded { reason, turn, .. } => {
            assert_eq!(*reason, TurnEndReason::Completed);
            assert_eq!(*turn, 1);
        }
        other => panic!("{other:?}"),
    }
    // What the agent does, told on each change: it thinks, streams, runs
    // the tool (named), thinks and streams again, then idles.
    let activity: Vec<(String, Option<String>)> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Activity { state, detail } => Some((state.clone(), detail.clone())),
            _ => None,
        })
        .collect();
    let states: Vec<&str> = activity.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        states,
        vec!["thinking", "streaming", "running", "thinking", "streaming"],
        "{activity:?}"
    );
    assert_eq!(activity[2].1.as_deref(), Some("echo"));
    let after = read_until(
        &s,
        events.last().unwrap().seq + 1,
        |b| matches!(b, EventBody::Activity { state, .. } if state == "idle"),
    )
    .await;
    assert!(!after.is_empty());
    // A reader that reconnects from the middle gets exactly the same events.
    let mid = events[events.len() / 2].seq;
    let again = read_until(&s, mid, turn_ended).await;
    let tail: Vec<&Arc<Event>> = events.iter().filter(|e| e.seq >= mid).collect();
    assert_eq!(again.len(), tail.len());
    for (a, b) in again.iter().zip(tail) {
        assert_eq!(**a, **b);
    }
    // The JSON shape: flat, tagged by type, camelCase fields.
    let v = serde_json::to_value(&*events[0]).unwrap();
    assert_eq!(v["type"], "session_started");
    assert_eq!(v["seq"], 0);
    assert_eq!(v["sessionId"], json!(s.id()));
    assert_eq!(v["model"], "echo");
    c.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_events_come_in_log_order_for_readers_that_ask() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path(), None);
    let s = open(&c, SessionOptions::default()).await;
    let mut sub = s.subscribe(Some(0)).with_log(true);
    s.prompt("echo a").await.unwrap();
    let mut logged = Vec::new();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(20), sub.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match &e.body {
            EventBody::Log { event } => logged.push(event.seq),
            EventBody::TurnEnded { .. } => break,
            _ => {}
        }
    }
    assert!(!logged.is_empty());
    assert!(logged.windows(2).all(|w| w[1] == w[0] + 1), "{logged:?}");
    c.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_goes_to_every_watcher_and_the_first_answer_wins() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path(), Some(SandboxMode::ReadOnly));
    let s = open(&c, SessionOptions::default()).await;
    let _first = s.attach_approver();
    let _second = s.attach_approver();
    let target = dir.path().join("made.txt");
    let args = json!({
        "file_path": target,
        "content": "approved\n",
        "sandbox_permissions": "workspace-write",
        "justification": "the test asks for it",
    });
    let from = s.next_seq();
    s.prompt(&format!("call write {args}")).await.unwrap();
    let asked = read_until(&s, from, |b| matches!(b, EventBody::ApprovalAsked { .. })).await;
    let (id, tool, detail) = match &asked.last().unwrap().body {
        EventBody::ApprovalAsked {
            approval_id,
            tool,
            detail,
            ..
        } => (approval_id.clone(), tool.clone(), detail.clone()),
        _ => unreachable!(),
    };
    assert_eq!(tool, "write");
    assert_eq!(detail.as_deref(), Some("approved\n"));
    let waiting = read_until(
        &s,
        from,
        |b| matches!(b, EventBody::Activity { state, .. } if state == "waiting"),
    )
    .await;
    assert!(matches!(
        &waiting.last().unwrap().body,
        EventBody::Activity { detail: Some(d), .. } if d.starts_with("Write ")
    ));
    assert_eq!(s.waiting_approvals(), vec![id.clone()]);
    s.answer(&id, Decision::AllowOnce).unwrap();
    // The second answer finds nothing to answer.
    let late = s.answer(&id, Decision::Reject { note: None }).unwrap_err();
    assert_eq!(late.code, "UNKNOWN_APPROVAL");
    let rest = read_until(&s, from, turn_ended).await;
    let decided: Vec<&Decision> = rest
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ApprovalDecided { decision, .. } => Some(decision),
            _ => None,
        })
        .collect();
    assert_eq!(decided, vec![&Decision::AllowOnce]);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "approved\n");
    // The call's diff: created (no text before), the text after.
    let diff = rest
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ToolFinished { diff, .. } => diff.clone(),
            _ => None,
        })
        .expect("a diff");
    assert_eq!(diff.old_text, None);
    assert_eq!(diff.new_text, "approved\n");
    c.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_nobody_watching_an_escalation_is_denied_and_a_leaving_watcher_withdraws_its_question()
{
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path(), Some(SandboxMode::ReadOnly));
    let s = open(&c, SessionOptions::default()).await;
    let target = dir.path().join("made.txt");
    let args = json!({
        "file_path": target,
        "content": "x",
        "sandbox_permissions": "workspace-write",
        "justification": "the test asks for it",
    });
    let from = s.next_seq();
    s.prompt(&format!("call write {args}")).await.unwrap();
    let events = read_until(&s, from, turn_ended).await;
    assert!(!kinds(&events).contains(&"approval_asked"));
    let failed = events
        .iter()
        .any(|e| matches!(&e.body, EventBody::ToolFinished { is_error: true, .. }));
    assert!(failed, "{:?}", kinds(&events));
    assert!(!target.exists());

    // A watcher that leaves while asked: the question is withdrawn.
    let guard = s.attach_approver();
    let from = s.next_seq();
    s.prompt(&format!("call write {args}")).await.unwrap();
    read_until(&s, from, |b| matches!(b, EventBody::ApprovalAsked { .. })).await;
    drop(guard);
    let events = read_until(&s, from, turn_ended).await;
    let decided: Vec<&Decision> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ApprovalDecided { decision, .. } => Some(decision),
            _ => None,
        })
        .collect();
    assert_eq!(decided, vec![&Decision::Cancelled]);
    assert!(!target.exists());
    assert!(s.waiting_approvals().is_empty());
    c.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_reply_as_data_and_change_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path(), Some(SandboxMode::WorkspaceWrite));
    let s = open(&c, SessionOptions::default()).await;
    assert_eq!(
        s.command("permission", "read-only").await,
        Reply::PermissionChanged {
            from: SandboxMode::WorkspaceWrite,
            to: SandboxMode::ReadOnly
        }
    );
    assert_eq!(s.permission().unwrap(), SandboxMode::ReadOnly);
    assert_eq!(
        s.command("permission", "read-only").await,
        Reply::PermissionUnchanged {
            mode: SandboxMode::ReadOnly
        }
    );
    assert_eq!(
        s.command("plan", "").await,
        Reply::Plan {
            on: true,
            changed: true
        }
    );
    assert!(s.plan_mode());
    match s.command("model", "nope").await {
        Reply::Failed(e) => {
            assert_eq!(e.code, "INVALID_COMMAND");
            assert!(e.message.starts_with("unknown model \"nope\""), "{e:?}");
        }
        other => panic!("{other:?}"),
    }
    match s.command("plan", "maybe").await {
        Reply::Failed(e) => assert_eq!(e.message, "usage: /plan [on|off]"),
        other => panic!("{other:?}"),
    }
    match s.command("xyz", "").await {
        Reply::Failed(e) => assert!(e.message.starts_with("unknown command /xyz"), "{e:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.command("todo", "").await.text(), "no todo list");
    match s.command("session", "").await {
        Reply::Session(info) => {
            assert_eq!(info.id, s.id());
            assert_eq!(info.permission, "read-only");
            assert!(info.plan_mode);
        }
        other => panic!("{other:?}"),
    }
    // The changes are events too.
    let events = read_until(&s, 0, |b| {
        matches!(b, EventBody::PlanModeChanged { on: true })
    })
    .await;
    assert!(events.iter().any(|e| matches!(
        &e.body,
        EventBody::PermissionChanged { mode } if mode == "read-only"
    )));
    // /clear: a new log, the same stream and key.
    let key = s.key().to_string();
    let old = s.id();
    let (was, now) = match s.command("clear", "").await {
        Reply::Cleared { old, new } => (old, new),
        other => panic!("{other:?}"),
    };
    assert_eq!(was, old);
    assert_ne!(now, old);
    assert_eq!(s.id(), now);
    assert_eq!(s.key(), key);
    assert!(Arc::ptr_eq(&c.get(&key).unwrap(), &c.get(&now).unwrap()));
    let from = s.next_seq();
    s.prompt("echo after clear").await.unwrap();
    let events = read_until(&s, from, turn_ended).await;
    assert!(events.iter().any(|e| matches!(
        &e.body,
        EventBody::ToolFinished { output, .. } if output.contains("after clear")
    )));
    c.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_session_ends_its_streams_and_refuses_commands() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path(), None);
    let s = open(&c, SessionOptions::default()).await;
    let key = s.key().to_string();
    let mut sub = s.subscribe(None);
    c.close(&key, "closed by the test").await.unwrap();
    let mut last = None;
    while let Some(item) = sub.next().await {
        last = Some(item.unwrap());
    }
    assert!(matches!(
        &last.unwrap().body,
        EventBody::Closed { reason } if reason == "closed by the test"
    ));
    assert_eq!(s.prompt("echo x").await.unwrap_err().code, "SESSION_CLOSED");
    assert_eq!(c.get(&key).err().unwrap().code, "UNKNOWN_SESSION");
    assert_eq!(
        c.close(&key, "again").await.unwrap_err().code,
        "UNKNOWN_SESSION"
    );
    assert!(c.list().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_replays_its_history_and_a_fork_copies_it() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path(), None);
    let s = open(&c, SessionOptions::default()).await;
    s.prompt("echo first words").await.unwrap();
    read_until(&s, 0, turn_ended).await;
    let id = s.id();
    c.close(&id, "done").await.unwrap();

    let resumed = open(
        &c,
        SessionOptions {
            resume: Some(id.clone()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(resumed.id(), id);
    let live_from = resumed.live_from();
    let mut sub = resumed.subscribe(Some(0));
    let history: Vec<Arc<Event>> = std::iter::from_fn(|| sub.try_next())
        .map(|e| e.unwrap())
        .take_while(|e| e.seq < live_from)
        .collect();
    assert!(matches!(
        &history[0].body,
        EventBody::SessionStarted { resumed: true, .. }
    ));
    assert!(history.iter().any(|e| matches!(
        &e.body,
        EventBody::UserMessage { text, .. } if text == "echo first words"
    )));
    assert!(history
        .iter()
        .any(|e| matches!(&e.body, EventBody::TurnEnded { .. })));
    // Opening it twice is refused.
    match c
        .open(SessionOptions {
            resume: Some(id.clone()),
            ..Default::default()
        })
        .await
    {
        Err(OpenError::Failed { error, .. }) => {
            assert!(error.to_string().contains("already open"), "{error}")
        }
        _ => panic!("opened twice"),
    }

    let fork = match c.fork(&id, SessionOptions::default()).await {
        Ok(f) => f,
        Err(_) => panic!("fork failed"),
    };
    assert_ne!(fork.id(), id);
    let from = fork.next_seq();
    fork.prompt("echo in the fork").await.unwrap();
    read_until(&fork, from, turn_ended).await;
    let info = fork.info().unwrap();
    c.shutdown("test over").await;
    // The fork's log starts with the link, holds the original's words and
    // its own; the original's log does not have the fork's.
    let fork_log = std::fs::read_to_string(info.log.unwrap()).unwrap();
    let first: serde_json::Value = serde_json::from_str(fork_log.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "session/fork");
    assert_eq!(first["data"]["from"], json!(id));
    assert!(fork_log.contains("first words"));
    assert!(fork_log.contains("in the fork"));
    let original =
        std::fs::read_to_string(dir.path().join("sessions").join(format!("{id}.jsonl"))).unwrap();
    assert!(!original.contains("in the fork"));
    // Both are saved; the list has them.
    let saved: Vec<String> = c.saved().unwrap().into_iter().map(|s| s.id).collect();
    assert!(saved.contains(&id) && saved.contains(&info.id), "{saved:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_or_unusable_open_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path(), None);
    match c
        .open(SessionOptions {
            resume: Some("s-nope".into()),
            ..Default::default()
        })
        .await
    {
        Err(OpenError::Failed { error, .. }) => {
            assert!(error.to_string().contains("no session"), "{error}")
        }
        _ => panic!("opened a missing session"),
    }
    match c
        .open(SessionOptions {
            cwd: Some(dir.path().join("missing")),
            ..Default::default()
        })
        .await
    {
        Err(OpenError::Failed { .. }) => {}
        Ok(_) => panic!("opened in a missing directory"),
        Err(OpenError::Stopped(never)) => match never {},
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_named_by_a_file_call_does_not_hang_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("ff");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let c = controller(dir.path(), Some(SandboxMode::WorkspaceWrite));
    let s = open(&c, SessionOptions::default()).await;
    let args = json!({"file_path": fifo, "content": "x"});
    s.prompt(&format!("call write {args}")).await.unwrap();
    // read_until fails the test when the turn does not end in time.
    let events = read_until(&s, 0, turn_ended).await;
    let finished = events.iter().find_map(|e| match &e.body {
        EventBody::ToolFinished { is_error, diff, .. } => Some((*is_error, diff.clone())),
        _ => None,
    });
    assert_eq!(finished, Some((true, None)));
    c.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_for_completion_match_the_path_and_leave_ignored_ones_out() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("src/deep")).unwrap();
    std::fs::create_dir_all(ws.join("target")).unwrap();
    for f in [
        "src/main.rs",
        "src/deep/Main.rs",
        "target/main.o",
        ".secret_main",
        "README.md",
    ] {
        std::fs::write(ws.join(f), "x").unwrap();
    }
    std::fs::write(ws.join(".gitignore"), "target/\n").unwrap();
    let c = controller(dir.path(), None);
    let s = open(
        &c,
        SessionOptions {
            cwd: Some(ws.clone()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(
        s.files("main", 10).unwrap(),
        vec!["src/main.rs".to_string(), "src/deep/Main.rs".to_string()]
    );
    assert_eq!(s.files("", 1).unwrap(), vec!["README.md".to_string()]);
    assert!(s.files("nothing-like-it", 10).unwrap().is_empty());
    c.shutdown("test over").await;
}
