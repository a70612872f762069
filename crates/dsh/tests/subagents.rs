//! Sub-agents through the whole stack with the offline echo model: the
//! foreground answer, background delivery and the wake-up, the depth
//! limit (the tools hidden and refused), the parent's permission mode,
//! child session files linked to the parent and resumable, and forks that
//! start from the parent's history.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use std::time::Duration;

use dsh::subagents::{SUBAGENT_SPAWNED_EVENT, SUBAGENT_START_EVENT};
use dsh::SandboxMode;
use dsh_agent::AgentStatus;
use dsh_llm::{ContentBlock, MessageSource};
use dsh_session::{EventPayload, SessionEvent, TurnEndReason, TurnTrigger};
use serde_json::{json, Value};

use common::{others, tool_results as results, world, World};

impl World {
    fn spawned(&self) -> Vec<Value> {
        others(&self.agent.session().events(), SUBAGENT_SPAWNED_EVENT)
    }

    /// The child's session log, read from its file.
    fn child_log(&self, session_id: &str) -> Vec<SessionEvent> {
        let path = self
            .dir
            .join("sessions")
            .join(format!("{session_id}.jsonl"));
        dsh_session::load_jsonl(&path).unwrap().events
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreground_subagent_answers_with_its_final_reply_from_its_own_linked_session() {
    let dir = tempfile::tempdir().unwrap();
    let w = world(dir.path(), "", None);
    let r = w
        .call(
            "subagent",
            json!({"description": "say hi", "prompt": "echo hello from the child"}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), "The echo tool says: hello from the child");

    let spawned = w.spawned();
    assert_eq!(spawned.len(), 1, "{spawned:?}");
    assert_eq!(spawned[0]["agentId"], "agent-1");
    assert_eq!(spawned[0]["background"], false);
    let child_session = spawned[0]["sessionId"].as_str().unwrap().to_string();
    let log = w.child_log(&child_session);
    // The first event links the child to the parent's session and call.
    let EventPayload::Other { kind, data } = &log[0].data else {
        panic!("first event {:?}", log[0]);
    };
    assert_eq!(kind, SUBAGENT_START_EVENT);
    assert_eq!(data["parentSessionId"], w.agent.session().id().as_str());
    assert_eq!(data["callId"], spawned[0]["callId"]);
    assert_eq!(data["depth"], 1);
    // Its history starts with the prompt: nothing of the parent's.
    let history = dsh_session::derive_messages(&log);
    assert_eq!(
        history[0].content,
        vec![ContentBlock::text("echo hello from the child")]
    );
    // The child was disposed once it answered.
    assert!(w.stack.agents.get("agent-1").is_none());

    // Its session resumes like any other.
    let prepared = w.stack.prepare_session(Some(&child_session)).unwrap();
    assert_eq!(prepared.seed().len(), log.len());
    drop(prepared);
    w.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_subagent_returns_at_once_and_its_answer_wakes_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    let w = world(dir.path(), "", None);
    let r = w
        .call(
            "subagent",
            json!({"description": "slow job", "prompt": "run sleep 0.3; echo finished", "run_in_background": true}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    assert!(
        r.text()
            .starts_with("started subagent agent-1 in the background"),
        "{}",
        r.text()
    );
    // The parent goes idle, then a turn starts with the child's answer.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let woken = loop {
        let found = w
            .agent
            .session()
            .events()
            .iter()
            .find_map(|e| match &e.data {
                EventPayload::TurnStart(t)
                    if t.trigger
                        == (TurnTrigger::Message {
                            source: MessageSource::plugin("subagent"),
                        }) =>
                {
                    Some(t.turn)
                }
                _ => None,
            });
        if let (Some(turn), AgentStatus::Idle) = (found, w.agent.status()) {
            break turn;
        }
        assert!(tokio::time::Instant::now() < deadline, "no wake-up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(woken, 2);
    let notice = w
        .agent
        .session()
        .events()
        .iter()
        .find_map(|e| match &e.data {
            EventPayload::UserMessage(m) if m.source == MessageSource::plugin("subagent") => Some(
                m.content
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .collect::<String>(),
            ),
            _ => None,
        })
        .unwrap();
    assert!(
        notice.starts_with("background subagent agent-1 (slow job) finished. Its answer:"),
        "{notice}"
    );
    assert!(notice.contains("finished"), "{notice}");
    // The job reads as completed.
    let list = w.call("job_list", json!({})).await;
    assert!(
        list.text()
            .starts_with("agent-1\t[status: completed]\tslow job"),
        "{}",
        list.text()
    );
    w.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_depth_limit_the_subagent_tools_are_hidden_and_refused() {
    let dir = tempfile::tempdir().unwrap();
    let w = world(dir.path(), "[subagents]\nmax_depth = 1\n", None);
    let inner = json!({"description": "nested", "prompt": "echo deeper"}).to_string();
    let r = w
        .call(
            "subagent",
            json!({"description": "outer", "prompt": format!("call subagent {inner}")}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    let child_session = w.spawned()[0]["sessionId"].as_str().unwrap().to_string();
    let log = w.child_log(&child_session);
    // The child's requests did not offer the subagent tools…
    let tools: Vec<Value> = log
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::Other { kind, data } if kind == "request/tools" => Some(data.clone()),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = tools[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"read"), "{names:?}");
    assert!(
        !names.contains(&"subagent") && !names.contains(&"subagent_fork"),
        "{names:?}"
    );
    // …and a call anyway is refused.
    let refused = results(&log);
    assert_eq!(
        refused[0].code(),
        Some("SUBAGENT_DEPTH_LIMIT"),
        "{}",
        refused[0].text()
    );
    // The parent (depth 0) still sees them.
    let parent_tools = others(&w.agent.session().events(), "request/tools");
    assert!(parent_tools[0].to_string().contains("\"subagent\""));
    w.close().await;

    let dir = tempfile::tempdir().unwrap();
    let w = world(dir.path(), "[subagents]\nmax_depth = 0\n", None);
    let r = w
        .call("subagent", json!({"description": "x", "prompt": "echo hi"}))
        .await;
    assert_eq!(r.code(), Some("SUBAGENT_DEPTH_LIMIT"));
    w.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_works_under_its_parents_permission_mode() {
    let dir = tempfile::tempdir().unwrap();
    let w = world(dir.path(), "", Some(SandboxMode::ReadOnly));
    let write = json!({"file_path": "made-by-child.txt", "content": "x"}).to_string();
    let r = w
        .call(
            "subagent",
            json!({"description": "writer", "prompt": format!("call write {write}")}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    assert!(r.text().contains("reported an error"), "{}", r.text());
    assert!(!w.dir.join("made-by-child.txt").exists());
    w.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_starts_from_the_parents_history() {
    let dir = tempfile::tempdir().unwrap();
    let w = world(dir.path(), "", None);
    assert_eq!(
        w.turn("echo remember the marker 4711").await,
        TurnEndReason::Completed
    );
    let r = w
        .call(
            "subagent_fork",
            json!({"description": "forked", "prompt": "echo forked child"}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), "The echo tool says: forked child");
    let spawned = w.spawned();
    assert_eq!(spawned[0]["fork"], true);
    let log = w.child_log(spawned[0]["sessionId"].as_str().unwrap());
    assert_eq!(log[0].data.kind(), SUBAGENT_START_EVENT);
    let history = dsh_session::derive_messages(&log);
    let texts: Vec<String> = history
        .iter()
        .flat_map(|m| {
            m.content
                .iter()
                .filter_map(ContentBlock::as_text)
                .map(str::to_string)
        })
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("remember the marker 4711")),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t == "echo forked child"), "{texts:?}");
    // The copy ends before the reply that made the fork call: no call of
    // the parent's is left unanswered in the child.
    assert!(dsh_session::repair_unfinished(&log).is_empty());
    // Forks are foreground only.
    let r = w
        .call(
            "subagent_fork",
            json!({"description": "f", "prompt": "echo x", "run_in_background": true}),
        )
        .await;
    assert_eq!(r.code(), Some("INVALID_ARGS"));
    w.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_runs_at_most_four_subagents_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let w = world(dir.path(), "", None);
    let gate = dir.path().join("go");
    // Each child waits in bash until the gate file exists.
    let prompt = format!("run while [ ! -e {} ]; do sleep 0.05; done", gate.display());
    for i in 1..=4 {
        let r = w
            .call(
                "subagent",
                json!({"description": format!("child {i}"), "prompt": prompt, "run_in_background": true}),
            )
            .await;
        assert!(!r.is_error, "{}", r.text());
    }
    let r = w
        .call(
            "subagent",
            json!({"description": "fifth", "prompt": "echo hi"}),
        )
        .await;
    assert_eq!(r.code(), Some("TOO_MANY_SUBAGENTS"), "{}", r.text());
    // Opening the gate lets every child finish; then another may start.
    std::fs::write(&gate, "").unwrap();
    // Waits from outside the agent: a `job_list` turn here would race the
    // children's completion notices, which wake the parent for turns of
    // their own. Settled: no job runs and the parent stayed idle a while.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let owner = w.agent.id().to_string();
    let mut idle_checks = 0;
    while idle_checks < 5 {
        let jobs = w.stack.jobs.jobs_of(&owner);
        let settled = jobs.iter().all(|j| !j.running) && w.agent.status() == AgentStatus::Idle;
        idle_checks = if settled { idle_checks + 1 } else { 0 };
        assert!(tokio::time::Instant::now() < deadline, "{jobs:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = w
        .call(
            "subagent",
            json!({"description": "later", "prompt": "echo hi"}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    w.close().await;
}
