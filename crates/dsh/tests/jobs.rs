//! Job control through the whole stack with the offline echo model and real
//! bash: background tasks are `bash-N` jobs of the agent that started them
//! (`job_output` with and without `wait`, `job_list`, `job_kill`, unknown
//! ids), and a task finishing while its agent is idle wakes it: a new turn
//! starts with the notice, at most three in a row until the user speaks.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_agent::AgentStatus;
use dsh_llm::{ContentBlock, MessageSource};
use dsh_session::{EventPayload, TurnEndReason, TurnTrigger};
use serde_json::json;

use common::{world, World};

impl World {
    async fn background(&self, command: &str) -> String {
        let r = self
            .call(
                "bash",
                json!({"command": command, "description": "test", "run_in_background": true}),
            )
            .await;
        assert!(!r.is_error, "{}", r.text());
        r.text()
            .strip_prefix("started background task ")
            .expect("a task id")
            .to_string()
    }

    /// The turns started so far and what started each.
    fn triggers(&self) -> Vec<MessageSource> {
        self.agent
            .session()
            .events()
            .iter()
            .filter_map(|e| match &e.data {
                EventPayload::TurnStart(t) => match &t.trigger {
                    TurnTrigger::Message { source } => Some(source.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    /// Context messages (not turns) the tools delivered so far.
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

    /// Waits until `n` turns have started and the agent is idle again.
    async fn settle(&self, n: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !(self.triggers().len() >= n && self.agent.status() == AgentStatus::Idle) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} turns, status {:?}, context {:?}, kinds {:?}",
                self.triggers().len(),
                self.agent.status(),
                self.context_texts(),
                self.agent
                    .session()
                    .events()
                    .iter()
                    .rev()
                    .take(12)
                    .map(|e| e.data.kind().to_string())
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn gate(&self, name: &str) -> PathBuf {
        let path = self.dir.join(name);
        let status = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(status.success());
        path
    }

    async fn open(&self, gate: &Path) {
        let gate = gate.to_path_buf();
        tokio::task::spawn_blocking(move || std::fs::write(gate, "go\n"))
            .await
            .unwrap()
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_tasks_are_jobs_of_their_agent() {
    let dir = tempfile::tempdir().unwrap();
    let w = world(dir.path(), "", None);
    let gate = w.gate("g");
    let id = w
        .background(&format!(
            "echo first; read x < {}; echo second",
            gate.display()
        ))
        .await;
    assert_eq!(id, "bash-1");
    let sleeper = w.background("sleep 300").await;

    let list = w.call("job_list", json!({})).await;
    let text = list.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{}", list.text());
    assert!(
        lines[0].starts_with("bash-1\t[status: running]\techo first"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("bash-2\t[status: running]\tsleep 300"),
        "{lines:?}"
    );

    // A short wait returns what is there while the job still runs.
    let r = w
        .call(
            "job_output",
            json!({"job_id": id, "wait": true, "timeout_ms": 50}),
        )
        .await;
    assert!(r.text().starts_with("first\n"), "{}", r.text());
    assert!(r.text().ends_with("[status: running]"), "{}", r.text());
    // A wait for the end returns once the job finished, with the new output.
    let waiting = w.call(
        "job_output",
        json!({"job_id": id, "wait": true, "timeout_ms": 20000}),
    );
    let opener = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        w.open(&gate).await;
    };
    let (r, ()) = tokio::join!(waiting, opener);
    assert_eq!(r.text(), "second\n\n[status: completed, exit code: 0]");

    let r = w
        .call("job_kill", json!({"job_id": sleeper, "reason": "done"}))
        .await;
    assert_eq!(r.text(), "killed background task bash-2");
    let r = w.call("job_output", json!({"job_id": "bash-9"})).await;
    assert!(r.is_error);
    assert_eq!(r.code(), Some("UNKNOWN_JOB"));
    assert_eq!(
        r.text(),
        "Error: no job \"bash-9\"; your jobs: bash-1, bash-2"
    );
    // The timeout is bounded by the schema: at most ten minutes.
    let r = w
        .call(
            "job_output",
            json!({"job_id": id, "wait": true, "timeout_ms": 600001}),
        )
        .await;
    assert_eq!(r.code(), Some("INVALID_ARGS"), "{}", r.text());
    // The old names still work.
    let r = w.call("bash_output", json!({"task_id": id})).await;
    assert!(!r.is_error, "{}", r.text());
    w.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_job_wakes_an_idle_agent_at_most_three_times_in_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let w = world(dir.path(), "", None);
    let gates: Vec<PathBuf> = (0..5).map(|i| w.gate(&format!("g{i}"))).collect();
    for g in &gates {
        w.background(&format!("read x < {}", g.display())).await;
    }
    let user_turns = 5;
    w.settle(user_turns).await;
    let plugin = MessageSource::plugin("tool-bash");

    // Three completions while idle: three turns, each started by its notice.
    for (i, g) in gates[..3].iter().enumerate() {
        w.open(g).await;
        w.settle(user_turns + i + 1).await;
    }
    let triggers = w.triggers();
    assert_eq!(
        triggers[user_turns..],
        [plugin.clone(), plugin.clone(), plugin.clone()]
    );
    assert!(w.context_texts().is_empty(), "{:?}", w.context_texts());

    // The fourth waits as a context message: no new turn.
    w.open(&gates[3]).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while w.context_texts().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "no notice");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(w.triggers().len(), user_turns + 3);
    assert!(
        w.context_texts()[0].starts_with("background bash task bash-4 finished"),
        "{:?}",
        w.context_texts()
    );

    // The user speaks: the next completion wakes the agent again.
    assert_eq!(w.turn("hello").await, TurnEndReason::Completed);
    w.open(&gates[4]).await;
    w.settle(user_turns + 5).await;
    assert_eq!(w.triggers().last(), Some(&plugin));
    w.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_ten_jobs_run_per_agent() {
    let dir = tempfile::tempdir().unwrap();
    let w = world(dir.path(), "", None);
    for i in 1..=10 {
        assert_eq!(w.background("sleep 300").await, format!("bash-{i}"));
    }
    let r = w
        .call(
            "bash",
            json!({"command": "sleep 300", "description": "one more", "run_in_background": true}),
        )
        .await;
    assert_eq!(r.code(), Some("TOO_MANY_JOBS"), "{}", r.text());
    assert!(r.text().contains("10 are running"), "{}", r.text());
    let r = w.call("job_kill", json!({"job_id": "bash-3"})).await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(w.background("sleep 300").await, "bash-11");
    w.close().await;
}

/// Issue 33, item 20: the model is offered `job_output` / `job_kill` only.
/// The old names are in no request's tool list, no tool description and
/// no part of the system prompt, yet a call to them still runs (validated
/// against their own schema), and a completion notice names `job_output`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_old_bash_job_names_work_but_are_not_offered() {
    let dir = tempfile::tempdir().unwrap();
    let w = world(dir.path(), "", None);
    let assembly = w.stack.prompt.assemble().await;
    let names: Vec<&str> = assembly.tools.iter().map(|t| t.name.as_str()).collect();
    for hidden in ["bash_output", "bash_kill"] {
        assert!(!names.contains(&hidden), "{names:?}");
        assert!(
            w.stack.tools.get(hidden).is_some(),
            "{hidden} stays callable"
        );
    }
    for name in ["bash", "job_output", "job_kill"] {
        assert!(names.contains(&name), "{names:?}");
    }
    let shown = serde_json::to_string(&*assembly.tools).unwrap();
    let system = dsh_prompt::render(&assembly);
    for text in [&shown, &system] {
        assert!(!text.contains("bash_output"), "{text}");
        assert!(!text.contains("bash_kill"), "{text}");
    }

    // The task ends only after the call's turn has ended, so its notice
    // wakes a turn of its own (a notice arriving during a turn is only
    // context of that turn).
    let gate = w.gate("done");
    let id = w
        .background(&format!("read x < {}; echo out", gate.display()))
        .await;
    w.settle(1).await;
    w.open(&gate).await;
    w.settle(2).await;
    let notice = w.context_texts().concat() + &format!("{:?}", w.triggers());
    let logged: String = w
        .agent
        .session()
        .events()
        .iter()
        .map(|e| serde_json::to_string(&**e).unwrap())
        .collect();
    assert!(
        logged.contains(&format!(
            "background bash task {id} finished [status: completed, exit code: 0]. Read its output with job_output."
        )),
        "{notice}"
    );
    let r = w.call("bash_output", json!({"task_id": id})).await;
    assert!(!r.is_error, "{}", r.text());
    assert!(r.text().starts_with("out\n"), "{}", r.text());
    let r = w.call("bash_kill", json!({})).await;
    assert_eq!(r.code(), Some("INVALID_ARGS"), "{}", r.text());
    assert!(r.text().contains("task_id"), "{}", r.text());
    w.close().await;
}
