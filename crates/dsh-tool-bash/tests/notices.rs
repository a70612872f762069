//! Completion notices (§10.4): injected into the agent that started the
//! background task, as plugin context, exactly once; never without an owner,
//! never after disposal, and a disposed agent is skipped silently.

mod common;

use std::sync::Arc;

use common::{pids, read_fifo, write_fifo, FakeAgent, Harness, Injected};
use dsh_agent::{Agent, AgentError};
use dsh_bash::{BashExecutor, TaskInfo, TaskStatus};
use dsh_llm::{ContentBlock, MessageSource};

fn notice(text: &str) -> Injected {
    Injected {
        content: vec![ContentBlock::text(text)],
        source: MessageSource::plugin("tool-bash"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owner_receives_one_notice_as_plugin_context() {
    let h = Harness::new(|_| {});
    let agent = FakeAgent::new("a1");
    let gate = h.fifo("gate");
    let id = h
        .start(
            &format!("read x < {}; echo done", gate.display()),
            Some(agent.clone() as Arc<dyn Agent>),
        )
        .await;
    assert!(agent.injected().is_empty(), "nothing before completion");
    write_fifo(&gate, "go\n").await;
    h.wait(&id).await;
    assert_eq!(
        agent.injected(),
        [notice(
            "background bash task bash-1 finished [status: completed, exit code: 0]. Read its output with bash_output."
        )]
    );
    // Reading the output afterwards adds nothing.
    assert_eq!(
        h.output(&id).await,
        "done\n\n[status: completed, exit code: 0]"
    );
    h.dispose().await;
    assert_eq!(agent.injected().len(), 1, "exactly once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notice_carries_the_exit_code_and_the_kill_signal() {
    let h = Harness::new(|_| {});
    let agent = FakeAgent::new("a1");
    let owner = Some(agent.clone() as Arc<dyn Agent>);
    let failing = h.start("exit 4", owner.clone()).await;
    h.wait(&failing).await;
    let fifo = h.fifo("pid");
    let sleeper = h
        .start(&format!("echo $$ > {}; sleep 300", fifo.display()), owner)
        .await;
    pids(&read_fifo(&fifo).await);
    assert!(h.exec.kill(&sleeper).expect("known task"));
    h.wait(&sleeper).await;
    assert_eq!(
        agent.injected(),
        [
            notice("background bash task bash-1 finished [status: completed, exit code: 4]. Read its output with bash_output."),
            notice("background bash task bash-2 finished [status: killed by SIGTERM]. Read its output with bash_output."),
        ]
    );
    h.dispose().await;
}

/// A task started without an agent in the extensions notifies nobody; the
/// owner of another task hears only about its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_without_an_owner_notify_nobody() {
    let h = Harness::new(|_| {});
    let agent = FakeAgent::new("a1");
    let unowned = h.start("echo alone", None).await;
    h.wait(&unowned).await;
    let owned = h.start("true", Some(agent.clone() as Arc<dyn Agent>)).await;
    h.wait(&owned).await;
    assert_eq!(
        agent.injected(),
        [notice(
            "background bash task bash-2 finished [status: completed, exit code: 0]. Read its output with bash_output."
        )]
    );
    h.dispose().await;
}

/// Each task's notice goes to the agent that started it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notices_go_to_their_own_owner() {
    let h = Harness::new(|_| {});
    let (a, b) = (FakeAgent::new("a"), FakeAgent::new("b"));
    let ta = h.start("exit 1", Some(a.clone() as Arc<dyn Agent>)).await;
    let tb = h.start("exit 2", Some(b.clone() as Arc<dyn Agent>)).await;
    h.wait(&ta).await;
    h.wait(&tb).await;
    assert_eq!(
        a.injected(),
        [notice("background bash task bash-1 finished [status: completed, exit code: 1]. Read its output with bash_output.")]
    );
    assert_eq!(
        b.injected(),
        [notice("background bash task bash-2 finished [status: completed, exit code: 2]. Read its output with bash_output.")]
    );
    h.dispose().await;
}

/// Commands that finish at once race the owner bookkeeping in the tool
/// against the completion listener; every one must still be announced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_tasks_are_announced_too() {
    let h = Harness::new(|_| {});
    let agent = FakeAgent::new("a1");
    const N: usize = 100;
    for _ in 0..N {
        let id = h.start("true", Some(agent.clone() as Arc<dyn Agent>)).await;
        h.wait(&id).await;
    }
    let got = agent.injected();
    let missing: Vec<usize> = (1..=N)
        .filter(|n| {
            !got.contains(&notice(&format!(
                "background bash task bash-{n} finished [status: completed, exit code: 0]. Read its output with bash_output."
            )))
        })
        .collect();
    assert!(missing.is_empty(), "no notice for tasks {missing:?}");
    assert_eq!(got.len(), N);
    h.dispose().await;
}

/// `inject` failing with `AgentError::Disposed` is dropped silently: no
/// panic, no retry, and the tools keep working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disposed_agent_is_skipped_silently() {
    let h = Harness::new(|_| {});
    let gone = FakeAgent::disposed("gone");
    let id = h.start("true", Some(gone.clone() as Arc<dyn Agent>)).await;
    h.wait(&id).await;
    assert_eq!(gone.injected().len(), 1, "tried once, not retried");
    let live = FakeAgent::new("live");
    let id = h.start("true", Some(live.clone() as Arc<dyn Agent>)).await;
    h.wait(&id).await;
    assert_eq!(live.injected().len(), 1);
    assert_eq!(
        h.output("bash-1").await,
        "(no new output)\n[status: completed, exit code: 0]"
    );
    h.dispose().await;
}

/// What the listener reports to the executor's hook (which contains and
/// logs failures): `Ok` for a disposed agent, the error for any other inject
/// failure. Driven by emitting a completion on the hook directly while the
/// real task is parked on a FIFO.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_disposed_failure_is_swallowed() {
    let h = Harness::new(|_| {});
    let gone = FakeAgent::disposed("gone");
    let broken = FakeAgent::failing(
        "broken",
        AgentError::MissingService("no session store".into()),
    );
    let (gate1, gate2) = (h.fifo("gate1"), h.fifo("gate2"));
    let t1 = h
        .start(
            &format!("read x < {}", gate1.display()),
            Some(gone.clone() as Arc<dyn Agent>),
        )
        .await;
    let t2 = h
        .start(
            &format!("read x < {}", gate2.display()),
            Some(broken.clone() as Arc<dyn Agent>),
        )
        .await;
    let done = |id: &str| TaskInfo {
        id: id.to_string(),
        command: "read".into(),
        status: TaskStatus::Completed,
        exit_code: Some(0),
        signal: None,
    };
    assert!(
        h.exec.on_task_done().emit(&done(&t1)).is_ok(),
        "disposed agent: dropped silently"
    );
    let err = h
        .exec
        .on_task_done()
        .emit(&done(&t2))
        .expect_err("any other inject failure is re-raised");
    assert!(err.to_string().contains("no session store"), "{err}");
    assert_eq!((gone.injected().len(), broken.injected().len()), (1, 1));
    // The owners were consumed: the real completions notify nobody again.
    write_fifo(&gate1, "go\n").await;
    write_fifo(&gate2, "go\n").await;
    h.wait(&t1).await;
    h.wait(&t2).await;
    assert_eq!((gone.injected().len(), broken.injected().len()), (1, 1));
    h.dispose().await;
}

/// The tools hold the owner weakly: an agent dropped before its task ends is
/// not kept alive by the task and nothing fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_agent_is_not_kept_alive() {
    let h = Harness::new(|_| {});
    let agent = FakeAgent::new("a1");
    let weak = Arc::downgrade(&agent);
    let gate = h.fifo("gate");
    let id = h
        .start(
            &format!("read x < {}", gate.display()),
            Some(agent as Arc<dyn Agent>),
        )
        .await;
    assert!(weak.upgrade().is_none(), "the task does not own the agent");
    write_fifo(&gate, "go\n").await;
    h.wait(&id).await;
    h.dispose().await;
}

/// Tasks still running at disposal are killed without a notice, and tasks
/// finishing afterwards cannot produce one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_notice_after_dispose() {
    let h = Harness::new(|_| {});
    let agent = FakeAgent::new("a1");
    let fifo = h.fifo("pid");
    let id = h
        .start(
            &format!("echo $$ > {}; sleep 300", fifo.display()),
            Some(agent.clone() as Arc<dyn Agent>),
        )
        .await;
    let pid = pids(&read_fifo(&fifo).await);
    h.dispose().await;
    common::assert_gone(pid[0], &pid);
    assert!(h.exec.wait(&id).await.is_none(), "disposal forgets tasks");
    assert!(
        agent.injected().is_empty(),
        "no notice for a task killed by disposal: {:?}",
        agent.injected()
    );
}
