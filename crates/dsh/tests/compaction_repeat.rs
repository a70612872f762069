//! Compaction more than once in one session (issue 33, item 5): a long
//! turn against a loopback DeepSeek server with `context_window = 8000`
//! compacts several times; every compaction names a range in order
//! (`fromSeq <= toSeq`), replaces what it names (each compaction makes
//! the next request smaller), and the model is asked for a summary only
//! when the window is full again, not before every step.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dsh::Stack;
use dsh_agent::Agent;
use dsh_llm::ContentBlock;
use dsh_session::{EventPayload, SessionEvent, TurnEndReason};
use dsh_testkit::{LoopbackServer, ScriptedResponse};

use common::{
    assert_wire_valid, bash_reply, bodies, compacting_server, deepseek_world, is_summary_request,
    text_reply as text, turn_within, DeepSeekWorld, SMALL_WINDOW,
};

/// Tool steps in the turn: enough output for four or five compactions.
const STEPS: usize = 70;

fn bash_call(id: &str, prompt_tokens: usize) -> ScriptedResponse {
    bash_reply(id, "head -c 1200 /dev/zero | tr '\\0' a", prompt_tokens)
}

fn world(server: &LoopbackServer) -> DeepSeekWorld {
    deepseek_world(
        server,
        &format!("{SMALL_WINDOW}[tools]\nenabled = [\"bash\"]\n"),
    )
}

/// Sends `prompt` and waits for the turn's end reason.
async fn turn(stack: &Stack, agent: &Arc<dyn Agent>, prompt: &str) -> TurnEndReason {
    turn_within(stack, agent, prompt, Duration::from_secs(240)).await
}

/// The `(fromSeq, toSeq)` of every event of `kind` in `events`.
fn ranges(events: &[SessionEvent], kind: &str) -> Vec<(u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::Other { kind: k, data } if k == kind => Some((
                data["fromSeq"].as_u64().unwrap(),
                data["toSeq"].as_u64().unwrap(),
            )),
            EventPayload::Compaction(c) if kind == "compaction/summary" => {
                Some((c.from_seq, c.to_seq))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_turn_compacts_again_and_again_with_ordered_ranges_and_few_summary_requests() {
    let steps = Arc::new(AtomicUsize::new(0));
    let st = steps.clone();
    let summary = "## User goal and constraints\nMake output many times.\n## Current work\nStep N.\n## Next step\nContinue.";
    let server = compacting_server(summary, move |_req, _body, prompt_tokens| {
        let done = st.fetch_add(1, Ordering::SeqCst);
        if done >= STEPS {
            text("all done", prompt_tokens)
        } else {
            bash_call(&format!("call_{done}"), prompt_tokens)
        }
    })
    .await;
    let w = world(&server);
    let handle = w.stack.create_agent(None).unwrap();
    let agent = handle.agent();
    let reason = turn(&w.stack, &agent, "make output many times").await;
    assert_eq!(reason, TurnEndReason::Completed);

    let all = bodies(&server);
    for b in &all {
        let summaries = assert_wire_valid(b);
        assert!(summaries <= 1, "{summaries} summaries in one request");
    }
    let session = agent.session();
    let events: Vec<SessionEvent> = session.events().iter().map(|e| (**e).clone()).collect();

    // Several compactions, each over an ordered range.
    let starts = ranges(&events, "compaction/start");
    let summaries = ranges(&events, "compaction/summary");
    assert!(
        summaries.len() >= 2,
        "the session compacted more than once: {summaries:?}"
    );
    for (from, to) in starts.iter().chain(&summaries) {
        assert!(from <= to, "inverted range {from}..{to}: {starts:?}");
    }

    // A summary request only when the window is full again: one per
    // compaction (a retry at most), never one before every step.
    let summary_requests = all.iter().filter(|b| is_summary_request(b)).count();
    let step_requests = all.len() - summary_requests;
    assert_eq!(step_requests, STEPS + 1, "every step asked the model once");
    assert!(
        summary_requests <= summaries.len() + 2 && summary_requests * 5 <= step_requests,
        "{summary_requests} summary requests for {} compactions in {step_requests} steps",
        summaries.len()
    );

    // Each compaction made the request smaller: the step request after a
    // summary request is smaller than the one before it.
    for (i, b) in all.iter().enumerate() {
        if !is_summary_request(b) || i == 0 {
            continue;
        }
        let before = all[..i].iter().rev().find(|b| !is_summary_request(b));
        let after = all[i + 1..].iter().find(|b| !is_summary_request(b));
        if let (Some(before), Some(after)) = (before, after) {
            let (before, after) = (before.to_string().len(), after.to_string().len());
            assert!(
                after < before,
                "request {i}: the compaction did not shrink the request ({before} → {after} bytes)"
            );
        }
    }

    // Replay derives the history the session holds, with one summary.
    let replayed = dsh_session::derive_messages(&events);
    assert_eq!(replayed, session.derive_messages().to_vec());
    let summaries_in_history = replayed
        .iter()
        .filter(|m| {
            m.content
                .first()
                .and_then(ContentBlock::as_text)
                .is_some_and(|t| t.starts_with("<compacted-summary>"))
        })
        .count();
    assert_eq!(summaries_in_history, 1);
    handle.dispose().await;
    w.stack.shutdown().await;
}
