//! Long sessions against a loopback DeepSeek server: with
//! `context_window = 8000`, a 40-step task compacts at the threshold (same
//! system prompt and tools for the summary, call/result pairs intact, the
//! wire rules hold in every request) and finishes; a context-length 400
//! compacts and retries once; a second one ends the turn with
//! `CONTEXT_WINDOW_EXCEEDED`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dsh::Stack;
use dsh_agent::Agent;
use dsh_session::{EventPayload, TurnEndReason};
use dsh_testkit::{LoopbackServer, ScriptedResponse};
use serde_json::{json, Value};

use common::{
    assert_wire_valid, bash_reply as bash_call, bodies, compacting_server, deepseek_world,
    is_summary_request, text_reply as text, turn_within, DeepSeekWorld, SMALL_WINDOW,
};

const OVERFLOW: &str = "This model's maximum context length is 8000 tokens. However, you requested 9100 tokens (9000 in the messages, 100 in the completion). Please reduce the length of the messages or completion.";

fn tool_messages(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count())
}

fn world(server: &LoopbackServer) -> DeepSeekWorld {
    deepseek_world(server, SMALL_WINDOW)
}

/// Sends `prompt` and waits for the turn's end reason.
async fn turn(stack: &Stack, agent: &Arc<dyn Agent>, prompt: &str) -> TurnEndReason {
    turn_within(stack, agent, prompt, Duration::from_secs(120)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_tool_steps_compact_at_the_threshold_and_finish() {
    let steps = Arc::new(AtomicUsize::new(0));
    let st = steps.clone();
    let summary = "## User goal and constraints\nMake output forty times.\n## Current work\nStep N.\n## Next step\nContinue.";
    let server = compacting_server(summary, move |req, _body, prompt_tokens| {
        // Steps answered so far (the history no longer shows them all).
        let done = st.fetch_add(1, Ordering::SeqCst);
        if done >= 40 {
            text("all forty done", prompt_tokens)
        } else {
            bash_call(
                &format!("call_{}", req.body.len()),
                "head -c 1200 /dev/zero | tr '\\0' a",
                prompt_tokens,
            )
        }
    })
    .await;
    let w = world(&server);
    let handle = w.stack.create_agent(None).unwrap();
    let agent = handle.agent();
    let reason = turn(&w.stack, &agent, "make output forty times").await;
    assert_eq!(reason, TurnEndReason::Completed);

    let all = bodies(&server);
    let (summaries, steps): (Vec<&Value>, Vec<&Value>) =
        all.iter().partition(|b| is_summary_request(b));
    assert!(!summaries.is_empty(), "the session compacted");
    for b in &all {
        assert_wire_valid(b);
    }
    // The summary request reuses the step's system prompt and tools.
    let system = &steps[0]["messages"][0];
    assert_eq!(system["role"], "system");
    for s in &summaries {
        assert_eq!(&s["messages"][0], system);
        assert_eq!(s["tools"], steps[0]["tools"]);
    }
    // After the first compaction every request carries the summary, and
    // stays well inside the window.
    let first_summary = all.iter().position(is_summary_request).unwrap();
    for b in &all[first_summary + 1..] {
        let text = b.to_string();
        assert!(
            text.contains("<compacted-summary>"),
            "summary in the history"
        );
    }
    let last = all.last().unwrap();
    assert!(
        last.to_string().len() / 4 < 8000,
        "the final request fits the window"
    );
    // The log: 40 results, the compaction bracket, and replay derives the
    // history the session holds.
    let session = agent.session();
    let events: Vec<dsh_session::SessionEvent> =
        session.events().iter().map(|e| (**e).clone()).collect();
    let results = events
        .iter()
        .filter(|e| matches!(e.data, EventPayload::ToolResult(_)))
        .count();
    assert_eq!(results, 40);
    let kinds: Vec<&str> = events.iter().map(|e| e.data.kind()).collect();
    let start = kinds.iter().position(|k| *k == "compaction/start").unwrap();
    let EventPayload::Other { data, .. } = &events[start].data else {
        panic!("start is log-only")
    };
    assert_eq!(data["reason"], "threshold");
    assert_eq!(kinds[start + 1], "compaction/summary");
    assert_eq!(kinds[start + 2], "compaction/end");
    assert_eq!(
        dsh_session::derive_messages(&events),
        session.derive_messages().to_vec(),
        "replay derives the live history"
    );
    // The last request holds the system prompt plus one wire message per
    // history message (each tool result is one `tool` message).
    assert_eq!(
        last["messages"].as_array().unwrap().len(),
        1 + session.derive_messages().len() - 1,
        "the final answer is not in its own request"
    );
    handle.dispose().await;
    w.stack.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_length_400_compacts_and_retries_once_and_a_second_ends_the_turn() {
    // Steps 1–3 make output; the 4th step's first attempt overflows; after
    // the summary the retry is accepted and the model answers.
    let overflowed = Arc::new(AtomicUsize::new(0));
    let o = overflowed.clone();
    let server = compacting_server(
        "## Current work\nThree outputs made.",
        move |_req, body, prompt_tokens| {
            let done = tool_messages(body);
            let summarised = body.to_string().contains("<compacted-summary>");
            if done == 3 && !summarised {
                o.fetch_add(1, Ordering::SeqCst);
                return ScriptedResponse::json(
                    400,
                    &json!({"error":{"message": OVERFLOW, "type":"invalid_request_error"}}),
                );
            }
            if done >= 3 || summarised {
                text("finished after the overflow", prompt_tokens)
            } else {
                bash_call(&format!("c{done}"), "echo out", prompt_tokens)
            }
        },
    )
    .await;
    let w = world(&server);
    let handle = w.stack.create_agent(None).unwrap();
    let agent = handle.agent();
    assert_eq!(turn(&w.stack, &agent, "go").await, TurnEndReason::Completed);
    assert_eq!(overflowed.load(Ordering::SeqCst), 1);
    let all = bodies(&server);
    let n = all.len();
    assert!(
        is_summary_request(&all[n - 2]),
        "compacted right after the 400"
    );
    assert!(all[n - 1].to_string().contains("<compacted-summary>"));
    let session = agent.session();
    let kinds: Vec<String> = session
        .events()
        .iter()
        .map(|e| e.data.kind().to_string())
        .collect();
    assert!(kinds.iter().any(|k| k == "compaction/summary"));
    let start = session
        .events()
        .iter()
        .find(|e| e.data.kind() == "compaction/start")
        .map(|e| e.data.clone())
        .unwrap();
    let EventPayload::Other { data, .. } = start else {
        panic!("start is log-only")
    };
    assert_eq!(data["reason"], "overflow");
    handle.dispose().await;
    w.stack.shutdown().await;

    // Always overflowing: compaction, one retry, then the turn ends.
    let server = compacting_server(
        "## Current work\nnothing yet",
        |_req, body, prompt_tokens| {
            if tool_messages(body) == 0 && !body.to_string().contains("<compacted-summary>") {
                return bash_call("c0", "echo out", prompt_tokens);
            }
            ScriptedResponse::json(400, &json!({"error":{"message": OVERFLOW}}))
        },
    )
    .await;
    let w = world(&server);
    let handle = w.stack.create_agent(None).unwrap();
    let agent = handle.agent();
    let reason = turn(&w.stack, &agent, "go").await;
    match reason {
        TurnEndReason::Error { code, .. } => {
            assert_eq!(code.as_deref(), Some("CONTEXT_WINDOW_EXCEEDED"))
        }
        other => panic!("expected the overflow to end the turn, got {other:?}"),
    }
    let all = bodies(&server);
    let overflows = all
        .iter()
        .filter(|b| !is_summary_request(b) && tool_messages(b) >= 1)
        .count();
    assert_eq!(overflows, 2, "the step was tried twice, not more");
    handle.dispose().await;
    w.stack.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_request_is_rebuilt_from_the_log_byte_for_byte() {
    // Turn 1: one plain answer. Then a tool is added (the tool set
    // changes). Turn 2: 40 steps that cross a compaction.
    let steps = Arc::new(AtomicUsize::new(0));
    let st = steps.clone();
    let server = compacting_server(
        "## Current work\nMaking outputs.",
        move |_req, _body, prompt_tokens| {
            let n = st.fetch_add(1, Ordering::SeqCst);
            if n == 0 || n >= 41 {
                text("ok", prompt_tokens)
            } else {
                bash_call(
                    &format!("call_{n}"),
                    "head -c 1200 /dev/zero | tr '\\0' b",
                    prompt_tokens,
                )
            }
        },
    )
    .await;
    let w = world(&server);
    let handle = w.stack.create_agent(None).unwrap();
    let agent = handle.agent();
    w.stack.announce_permission(agent.as_ref());
    assert_eq!(
        turn(&w.stack, &agent, "hello").await,
        TurnEndReason::Completed
    );
    let extra =
        dsh_tools::define_tool("note", "Keeps a note", |_: dsh_tools::NoArgs, _ctx| async {
            Ok::<_, dsh_tools::ToolError>(Vec::new())
        });
    let _reg = w.stack.tools.register(extra.into_arc()).unwrap();
    assert_eq!(
        turn(&w.stack, &agent, "make forty outputs").await,
        TurnEndReason::Completed
    );

    let sent: Vec<Vec<u8>> = server
        .requests()
        .iter()
        .filter(|r| !is_summary_request(&r.json()))
        .map(|r| r.body.to_vec())
        .collect();
    let events: Vec<dsh_session::SessionEvent> = agent
        .session()
        .events()
        .iter()
        .map(|e| (**e).clone())
        .collect();
    let rebuilt = dsh::requests::step_requests(&events);
    assert_eq!(rebuilt.len(), sent.len(), "one marker per step request");
    assert!(
        events.iter().any(|e| e.data.kind() == "compaction/summary"),
        "the session crossed a compaction"
    );
    let tool_sets = events
        .iter()
        .filter(|e| e.data.kind() == "request/tools")
        .count();
    assert_eq!(
        tool_sets, 2,
        "the tools were logged again when they changed, only then"
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| e.data.kind() == "request/system")
            .count(),
        1,
        "the system prompt is written once"
    );
    for (i, (r, body)) in rebuilt.iter().zip(&sent).enumerate() {
        let mine = dsh::requests::deepseek_body(&r.request, &r.adapter).unwrap();
        assert!(
            mine == *body,
            "step {} (turn {}, step {}) differs:\nsent    {}\nrebuilt {}",
            i,
            r.turn,
            r.step,
            String::from_utf8_lossy(body),
            String::from_utf8_lossy(&mine)
        );
    }
    handle.dispose().await;
    w.stack.shutdown().await;
}
