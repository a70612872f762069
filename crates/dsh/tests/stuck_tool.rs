//! A tool stuck in a blocking system call holds neither an abort nor the
//! shutdown (issue 33, item 1): the call runs on a thread of its own, an
//! abort answers it `ABORTED` and leaves the thread behind, and
//! `Stack::shutdown` returns within its bound.
//!
//! The stuck tool blocks its thread the way a file tool's `open()` of a
//! FIFO did (inside the future's poll, not in `spawn_blocking`), on a
//! channel the test releases at the end, so the test runtime can exit.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use std::time::{Duration, Instant};

use dsh_llm::{ContentBlock, MessageSource};
use dsh_session::{EventPayload, TurnEndReason};
use dsh_tools::{define_tool, ToolContext};

use common::{tool_results, world};

/// Unblocks the stuck tool when dropped (also when the test fails).
struct Release(#[allow(dead_code)] std::sync::mpsc::Sender<()>);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_and_the_shutdown_do_not_wait_for_a_tool_blocked_in_a_system_call() {
    let dir = tempfile::tempdir().unwrap();
    let w = world(dir.path(), "", None);
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let release_rx = std::sync::Mutex::new(release_rx);
    let _release = Release(release_tx);
    let (entered_tx, mut entered_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let stuck = define_tool(
        "stuck",
        "blocks its thread",
        move |_: dsh_jobs::JobListArgs, _ctx: ToolContext| {
            let _ = entered_tx.send(());
            // Blocks the polling thread, like open() on a FIFO.
            let _ = release_rx.lock().unwrap().recv();
            async { Ok(vec![ContentBlock::text("released")]) }
        },
    )
    .into_arc();
    let _tool = w.stack.tools.register(stuck).unwrap();

    let (end_tx, mut end_rx) = tokio::sync::mpsc::unbounded_channel();
    let _ends = w.stack.agents.hooks().event.on(move |e| {
        if let EventPayload::TurnEnd(end) = &e.event.data {
            let _ = end_tx.send(end.reason.clone());
        }
    });
    w.agent
        .send(
            vec![ContentBlock::text("call stuck {}")],
            MessageSource::User,
        )
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), entered_rx.recv())
        .await
        .expect("the tool started");

    let aborted_at = Instant::now();
    w.agent.abort(Some("test abort".into()));
    let reason = tokio::time::timeout(Duration::from_secs(5), end_rx.recv())
        .await
        .expect("the aborted turn ended although its tool is blocked")
        .unwrap();
    assert!(
        matches!(reason, TurnEndReason::Aborted { .. }),
        "{reason:?}"
    );
    let result = tool_results(&w.agent.session().events())
        .into_iter()
        .next()
        .expect("the blocked call is answered");
    assert!(result.is_error);
    assert_eq!(
        result.failure.as_ref().map(|f| f.code.as_str()),
        Some("ABORTED")
    );

    tokio::time::timeout(Duration::from_secs(5), w.close())
        .await
        .expect("the shutdown did not wait for the blocked call");
    assert!(
        aborted_at.elapsed() < Duration::from_secs(5),
        "abort to shutdown took {:?}",
        aborted_at.elapsed()
    );
}
