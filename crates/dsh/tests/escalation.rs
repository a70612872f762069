//! Escalation of the file tools through the whole stack: a `write` or
//! `edit` outside the permission mode's roots runs only when it asks with
//! `sandbox_permissions` + `justification` and the person approves; what
//! it may then touch is exactly the asked mode's roots. Checks the files,
//! not only the results.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh::approval::Person;
use dsh::{SandboxMode, Settings, Stack, StackOptions};
use dsh_kernel::BoxFuture;
use dsh_tools::{Approval, CallEnv, Question, ToolCall, ToolResult};
use serde_json::json;

/// Answers from a script and remembers what it was asked.
struct Scripted {
    answers: Mutex<Vec<Approval>>,
    asked: Mutex<Vec<Question>>,
}

impl Person for Scripted {
    fn ask(&self, _call: &ToolCall, q: &Question) -> BoxFuture<'static, Approval> {
        self.asked.lock().unwrap().push(q.clone());
        let a = self.answers.lock().unwrap().remove(0);
        Box::pin(async move { a })
    }
}

struct World {
    stack: Stack,
    ws: tempfile::TempDir,
    outside: tempfile::TempDir,
    person: Arc<Scripted>,
}

fn world(mode: SandboxMode, answers: Vec<Approval>) -> World {
    let ws = tempfile::tempdir().unwrap();
    let outside = dsh_testkit::outside_temp_dir(env!("CARGO_TARGET_TMPDIR"), "outside-");
    let config = ws.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    let resolved = dsh::resolve(&Settings {
        model: Some("echo".into()),
        config: Some(config),
        cwd: Some(ws.path().to_path_buf()),
        session_dir: Some(ws.path().join("sessions")),
        permission: Some(mode),
        ..Default::default()
    })
    .unwrap();
    let stack = Stack::build_with(
        resolved,
        StackOptions {
            persist_sessions: false,
            ..Default::default()
        },
    )
    .unwrap();
    let person = Arc::new(Scripted {
        answers: Mutex::new(answers),
        asked: Mutex::new(Vec::new()),
    });
    stack.approver.set_person(Some(person.clone()));
    World {
        stack,
        ws,
        outside,
        person,
    }
}

impl World {
    async fn call(&self, tool: &str, args: serde_json::Value) -> ToolResult {
        let call = ToolCall::new("c1", tool, args.to_string());
        self.stack.tools.execute(&call, CallEnv::default()).await
    }

    fn out(&self, name: &str) -> PathBuf {
        self.outside.path().join(name)
    }

    fn asked(&self) -> usize {
        self.person.asked.lock().unwrap().len()
    }
}

fn code(r: &ToolResult) -> Option<&str> {
    r.failure.as_ref().map(|f| f.code.as_str())
}

fn escalated(path: &Path, mode: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut args = json!({
        "file_path": path,
        "sandbox_permissions": mode,
        "justification": "the user asked for this file",
    });
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    args
}

#[tokio::test]
async fn an_approved_write_escalates_once_and_a_plain_one_stays_fenced() {
    let w = world(SandboxMode::WorkspaceWrite, vec![Approval::AllowedOnce]);
    let target = w.out("notes.txt");
    let plain = w
        .call("write", json!({"file_path": target, "content": "x"}))
        .await;
    assert_eq!(code(&plain), Some("FS_SANDBOX_DENIED"), "{plain:?}");
    assert!(!target.exists());
    assert_eq!(w.asked(), 0, "a plain call asks nobody");

    let r = w
        .call(
            "write",
            escalated(
                &target,
                "danger-full-access",
                json!({"content": "approved\n"}),
            ),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "approved\n");
    let asked = w.person.asked.lock().unwrap()[0].clone();
    assert!(asked.summary.starts_with(&format!(
        "write {} under danger-full-access",
        target.display()
    )));
    assert_eq!(asked.detail.as_deref(), Some("approved\n"));

    // Once means once: the next plain write is fenced again.
    let again = w
        .call(
            "write",
            json!({"file_path": w.out("other.txt"), "content": "x"}),
        )
        .await;
    assert_eq!(code(&again), Some("FS_SANDBOX_DENIED"));
    assert!(!w.out("other.txt").exists());
}

#[tokio::test]
async fn a_rejected_edit_changes_nothing_and_the_note_reaches_the_model() {
    let w = world(
        SandboxMode::WorkspaceWrite,
        vec![Approval::Rejected {
            note: Some("leave that file alone".into()),
        }],
    );
    let target = w.out("config.ini");
    std::fs::write(&target, "debug = false\n").unwrap();
    let read = w.call("read", json!({"file_path": target})).await;
    assert!(!read.is_error, "reading is allowed everywhere: {read:?}");
    let r = w
        .call(
            "edit",
            escalated(
                &target,
                "danger-full-access",
                json!({"old_string": "false", "new_string": "true"}),
            ),
        )
        .await;
    assert_eq!(code(&r), Some("PERMISSION_DENIED"), "{r:?}");
    assert!(
        r.text()
            .contains("the user denied it: leave that file alone"),
        "{}",
        r.text()
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "debug = false\n");
    let asked = w.person.asked.lock().unwrap()[0].clone();
    assert_eq!(asked.detail.as_deref(), Some("-false\n+true"));
}

#[tokio::test]
async fn read_only_escalates_to_the_workspace_and_no_further() {
    let w = world(
        SandboxMode::ReadOnly,
        vec![Approval::AllowedOnce, Approval::AllowedOnce],
    );
    let inside = w.ws.path().join("made.txt");
    let plain = w
        .call("write", json!({"file_path": inside, "content": "x"}))
        .await;
    assert_eq!(code(&plain), Some("FS_SANDBOX_DENIED"));
    let r = w
        .call(
            "write",
            escalated(&inside, "workspace-write", json!({"content": "inside\n"})),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "inside\n");
    // workspace-write's roots do not include the outside directory.
    let target = w.out("far.txt");
    let r = w
        .call(
            "write",
            escalated(&target, "workspace-write", json!({"content": "x"})),
        )
        .await;
    assert_eq!(code(&r), Some("FS_SANDBOX_DENIED"), "{r:?}");
    assert!(!target.exists());
}

#[tokio::test]
async fn without_a_person_an_escalation_is_denied_and_lone_fields_are_invalid() {
    let w = world(SandboxMode::WorkspaceWrite, vec![]);
    w.stack.approver.set_person(None);
    let target = w.out("x.txt");
    let r = w
        .call(
            "write",
            escalated(&target, "danger-full-access", json!({"content": "x"})),
        )
        .await;
    assert_eq!(code(&r), Some("PERMISSION_DENIED"));
    assert!(r.text().contains(dsh::approval::NO_USER), "{}", r.text());
    assert!(!target.exists());
    let lone = w
        .call(
            "write",
            json!({"file_path": target, "content": "x", "sandbox_permissions": "danger-full-access"}),
        )
        .await;
    assert_eq!(code(&lone), Some("INVALID_ARGS"));
    assert!(lone
        .text()
        .contains(r#""sandbox_permissions" and "justification" must be given together; "justification" is missing"#));
    assert!(!target.exists());
}
