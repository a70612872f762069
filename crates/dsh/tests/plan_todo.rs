//! The todo list and plan mode through the whole stack, driven by the
//! offline echo model (`call <tool> <json>`): `todo_write` replaces the
//! list kept in the session log (a resumed session has it), at most one
//! item in progress unless configured; in plan mode the changing tools are
//! denied (the files on disk say so), the mode is announced to the model,
//! and `exit_plan_mode` leaves it only when the person approves.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use std::sync::{Arc, Mutex};

use dsh::approval::Person;
use dsh::plan::{PlanReview, ENTERED_TEXT, LEFT_TEXT, PLAN_MODE_EVENT};
use dsh::tools::todo::TODO_UPDATE_EVENT;
use dsh::tools::{TodoItem, TodoStatus};
use dsh_kernel::BoxFuture;
use dsh_llm::ContentBlock;
use dsh_session::EventPayload;
use dsh_tools::{Approval, Question, ToolCall, ToolResult};
use serde_json::json;

use common::{world_resuming, World};

/// Answers from a script and remembers what it was asked.
struct Scripted {
    answers: Mutex<Vec<Approval>>,
    asked: Mutex<Vec<(String, Question)>>,
}

impl Person for Scripted {
    fn ask(&self, call: &ToolCall, q: &Question) -> BoxFuture<'static, Approval> {
        self.asked
            .lock()
            .unwrap()
            .push((call.name.clone(), q.clone()));
        let a = self.answers.lock().unwrap().remove(0);
        Box::pin(async move { a })
    }
}

fn world_in(dir: &std::path::Path, config: &str, resume: Option<&str>) -> World {
    world_resuming(dir, config, None, resume)
}

impl World {
    fn context_texts(&self) -> Vec<String> {
        self.agent
            .session()
            .events()
            .iter()
            .filter_map(|e| match &e.data {
                EventPayload::ContextMessage(m) => Some(
                    m.content
                        .iter()
                        .filter_map(ContentBlock::as_text)
                        .collect::<String>(),
                ),
                _ => None,
            })
            .collect()
    }

    fn person(&self, answers: Vec<Approval>) -> Arc<Scripted> {
        let person = Arc::new(Scripted {
            answers: Mutex::new(answers),
            asked: Mutex::new(Vec::new()),
        });
        self.stack.approver.set_person(Some(person.clone()));
        person
    }
}

fn code(r: &ToolResult) -> Option<&str> {
    r.failure.as_ref().map(|f| f.code.as_str())
}

fn item(content: &str, status: TodoStatus) -> TodoItem {
    TodoItem {
        content: content.into(),
        status,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn todo_write_replaces_the_list_logs_it_and_a_resumed_session_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let w = world_in(dir.path(), "", None);
    assert!(w.stack.todos(w.agent.as_ref()).is_empty());
    let first = json!({"todos": [
        {"content": "Read the code", "status": "completed"},
        {"content": "Write the tool", "status": "in_progress"},
        {"content": "Test it", "status": "pending"},
    ]});
    let r = w.call("todo_write", first.clone()).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(
        r.text(),
        "Todo list updated (1/3 completed):\n[x] Read the code\n[~] Write the tool\n[ ] Test it"
    );
    assert_eq!(w.others(TODO_UPDATE_EVENT), [first]);

    let second = json!({"todos": [
        {"content": "Test it", "status": "in_progress"},
        {"content": "Document it", "status": "pending"},
    ]});
    let r = w.call("todo_write", second.clone()).await;
    assert_eq!(
        r.text(),
        "Todo list updated (0/2 completed):\n[~] Test it\n[ ] Document it"
    );
    let expected = vec![
        item("Test it", TodoStatus::InProgress),
        item("Document it", TodoStatus::Pending),
    ];
    assert_eq!(
        w.stack.todos(w.agent.as_ref()),
        expected,
        "the list is replaced, not merged"
    );
    assert_eq!(w.others(TODO_UPDATE_EVENT).len(), 2);
    assert_eq!(w.others(TODO_UPDATE_EVENT)[1], second);

    // An empty item is the model's mistake, caught at the boundary.
    let bad = w
        .call(
            "todo_write",
            json!({"todos": [{"content": "", "status": "pending"}]}),
        )
        .await;
    assert_eq!(code(&bad), Some("INVALID_ARGS"), "{bad:?}");
    let bad = w
        .call(
            "todo_write",
            json!({"todos": [{"content": "x", "status": "started"}]}),
        )
        .await;
    assert_eq!(code(&bad), Some("INVALID_ARGS"), "{bad:?}");
    assert_eq!(w.stack.todos(w.agent.as_ref()), expected);

    let id = w.agent.session().id().to_string();
    w.close().await;
    let resumed = world_in(dir.path(), "", Some(&id));
    assert_eq!(resumed.stack.todos(resumed.agent.as_ref()), expected);
    let r = resumed.call("todo_write", json!({"todos": []})).await;
    assert_eq!(r.text(), "Todo list cleared (no items).");
    assert!(resumed.stack.todos(resumed.agent.as_ref()).is_empty());
    resumed.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_items_in_progress_are_refused_unless_the_config_allows_them() {
    let two = json!({"todos": [
        {"content": "Fix the parser", "status": "in_progress"},
        {"content": "Fix the printer", "status": "in_progress"},
    ]});
    let dir = tempfile::tempdir().unwrap();
    let w = world_in(dir.path(), "", None);
    let one = json!({"todos": [{"content": "Fix the parser", "status": "in_progress"}]});
    assert!(!w.call("todo_write", one).await.is_error);
    let r = w.call("todo_write", two.clone()).await;
    assert_eq!(code(&r), Some("TODO_TOO_MANY_IN_PROGRESS"), "{r:?}");
    assert!(
        r.text().contains(
            r##"2 items are in_progress (#1 "Fix the parser", #2 "Fix the printer"); at most one may be"##
        ),
        "{}",
        r.text()
    );
    assert_eq!(
        w.stack.todos(w.agent.as_ref()),
        [item("Fix the parser", TodoStatus::InProgress)],
        "a refused list changes nothing"
    );
    assert_eq!(w.others(TODO_UPDATE_EVENT).len(), 1);
    w.close().await;

    let dir = tempfile::tempdir().unwrap();
    let w = world_in(
        dir.path(),
        "[todo]\nallow_parallel_in_progress = true\n",
        None,
    );
    let r = w.call("todo_write", two).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(w.stack.todos(w.agent.as_ref()).len(), 2);
    w.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_denies_changes_allows_reading_and_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let w = world_in(dir.path(), "", None);
    let existing = w.dir.join("notes.txt");
    std::fs::write(&existing, "old\n").unwrap();
    assert!(!w.stack.plan_mode());
    assert!(w.stack.set_plan_mode(true, "test", Some(w.agent.as_ref())));
    assert!(
        !w.stack.set_plan_mode(true, "test", Some(w.agent.as_ref())),
        "already on"
    );
    assert!(w.stack.plan_mode());
    assert_eq!(
        w.others(PLAN_MODE_EVENT),
        [json!({"active": true, "source": "test"})],
        "one event per change"
    );
    assert_eq!(w.context_texts(), [ENTERED_TEXT]);

    let read = w.call("read", json!({"file_path": existing})).await;
    assert!(
        !read.is_error,
        "reading is allowed while planning: {read:?}"
    );

    let new_file = w.dir.join("new.txt");
    let r = w
        .call("write", json!({"file_path": new_file, "content": "x"}))
        .await;
    assert_eq!(code(&r), Some("PERMISSION_DENIED"), "{r:?}");
    assert!(
        r.text().starts_with(
            "Error: permission denied: plan mode: write is not allowed while planning"
        ),
        "{}",
        r.text()
    );
    assert!(r.text().contains("call exit_plan_mode with your plan"));
    assert!(!new_file.exists(), "nothing was written");

    let r = w
        .call(
            "edit",
            json!({"file_path": existing, "old_string": "old", "new_string": "new"}),
        )
        .await;
    assert_eq!(code(&r), Some("PERMISSION_DENIED"), "{r:?}");
    assert!(r.text().contains("plan mode: edit is not allowed"));
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "old\n");

    let touched = w.dir.join("touched");
    let r = w
        .call(
            "bash",
            json!({"command": format!("touch {}", touched.display()), "description": "touch"}),
        )
        .await;
    assert_eq!(code(&r), Some("PERMISSION_DENIED"), "{r:?}");
    assert!(r.text().contains("plan mode: bash is not allowed"));
    assert!(!touched.exists(), "the command never ran");

    // The tool list is the same in both modes.
    let planning = w.stack.tools.names();
    assert!(planning.contains(&"exit_plan_mode".to_string()));
    assert!(w.stack.set_plan_mode(false, "test", Some(w.agent.as_ref())));
    assert_eq!(w.stack.tools.names(), planning);
    assert_eq!(w.context_texts(), [ENTERED_TEXT, LEFT_TEXT]);
    let r = w
        .call("write", json!({"file_path": new_file, "content": "x"}))
        .await;
    assert!(!r.is_error, "{r:?}");
    assert!(new_file.exists());
    w.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_plan_mode_outside_plan_mode_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let w = world_in(dir.path(), "", None);
    let person = w.person(vec![]);
    let r = w.call("exit_plan_mode", json!({"plan": "# Plan"})).await;
    assert_eq!(code(&r), Some("PLAN_MODE_INACTIVE"), "{r:?}");
    assert!(r.text().contains("plan mode is not active"), "{}", r.text());
    assert!(person.asked.lock().unwrap().is_empty(), "nobody was asked");
    assert!(w.others(PLAN_MODE_EVENT).is_empty());
    w.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_plan_stays_in_plan_mode_and_an_approved_one_leaves_it() {
    let dir = tempfile::tempdir().unwrap();
    let w = world_in(dir.path(), "", None);
    let person = w.person(vec![
        Approval::Rejected {
            note: Some("also update the README".into()),
        },
        Approval::AllowedOnce,
    ]);
    w.stack.set_plan_mode(true, "/plan", Some(w.agent.as_ref()));
    let plan = "# Plan\n1. Edit src/lib.rs\n2. Run the tests";
    let r = w.call("exit_plan_mode", json!({ "plan": plan })).await;
    assert_eq!(code(&r), Some("PLAN_NOT_APPROVED"), "{r:?}");
    assert!(
        r.text()
            .contains("the user rejected the plan and said: also update the README"),
        "{}",
        r.text()
    );
    assert!(r.text().contains("still in plan mode"));
    assert!(w.stack.plan_mode(), "a rejected plan keeps planning");
    let target = w.dir.join("out.txt");
    let denied = w
        .call("write", json!({"file_path": target, "content": "x"}))
        .await;
    assert_eq!(code(&denied), Some("PERMISSION_DENIED"));

    let r = w.call("exit_plan_mode", json!({ "plan": plan })).await;
    assert!(!r.is_error, "{r:?}");
    assert!(
        r.text().starts_with("The user approved the plan."),
        "{}",
        r.text()
    );
    assert!(!w.stack.plan_mode());
    {
        let asked = person.asked.lock().unwrap();
        assert_eq!(asked.len(), 2);
        assert_eq!(asked[0].0, "exit_plan_mode");
        assert_eq!(
            asked[0].1.detail.as_deref(),
            Some(plan),
            "the plan is shown whole"
        );
    }
    assert_eq!(
        w.others(PLAN_MODE_EVENT),
        [
            json!({"active": true, "source": "/plan"}),
            json!({"active": false, "source": "exit_plan_mode"}),
        ]
    );
    assert_eq!(w.context_texts(), [ENTERED_TEXT, LEFT_TEXT]);
    let decided = w.others(dsh::approval::DECIDED_KIND);
    assert_eq!(decided.len(), 2, "both answers are logged");
    assert_eq!(decided[0]["outcome"], "rejected");
    assert_eq!(decided[1]["outcome"], "allowed-once");

    let r = w
        .call("write", json!({"file_path": target, "content": "done\n"}))
        .await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "done\n");
    w.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_presented_plan_ends_the_turn_without_another_step() {
    let dir = tempfile::tempdir().unwrap();
    let w = world_in(dir.path(), "", None);
    w.stack.plan.set_review(PlanReview::Present);
    w.stack
        .set_plan_mode(true, "--plan", Some(w.agent.as_ref()));
    let r = w.call("exit_plan_mode", json!({"plan": "# P\n- a"})).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(w.stack.plan.take_presented().as_deref(), Some("# P\n- a"));
    assert!(w.stack.plan_mode(), "presenting is not approving");
    let steps = w
        .agent
        .session()
        .events()
        .iter()
        .filter(|e| matches!(e.data, EventPayload::StepStart(_)))
        .count();
    assert_eq!(steps, 1, "no model step after the plan");
    w.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_keeps_plan_mode() {
    let dir = tempfile::tempdir().unwrap();
    let w = world_in(dir.path(), "", None);
    w.stack.set_plan_mode(true, "/plan", Some(w.agent.as_ref()));
    let id = w.agent.session().id().to_string();
    w.close().await;
    let resumed = world_in(dir.path(), "", Some(&id));
    assert!(resumed.stack.plan_mode());
    assert_eq!(
        resumed.others(PLAN_MODE_EVENT).len(),
        1,
        "restoring announces nothing new"
    );
    resumed.close().await;
}
