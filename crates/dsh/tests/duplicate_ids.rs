//! Repeated tool-call ids from the model (issue 33, item 12), against a
//! loopback DeepSeek server: a reply with two calls under one id, then a
//! later reply reusing it. Every request after them carries unique ids and
//! each tool message answers its own call; the log says what was renamed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dsh::Stack;
use dsh_agent::Agent;
use dsh_session::{EventPayload, SessionEvent, TurnEndReason};
use dsh_testkit::{LoopbackServer, ScriptedResponse};
use serde_json::{json, Value};

use common::{bodies, deepseek_world, text_reply, turn_within};

fn sse(payloads: Vec<Value>) -> ScriptedResponse {
    common::sse(payloads, 100)
}

/// One reply holding a `bash` call per `(id, word)`: `echo <word>`.
fn calls(calls: &[(&str, &str)]) -> ScriptedResponse {
    let deltas = calls
        .iter()
        .enumerate()
        .map(|(i, (id, word))| {
            let args = json!({"command": format!("echo {word}"), "description": "say"}).to_string();
            json!({"index": i, "id": id, "type": "function", "function": {"name": "bash", "arguments": args}})
        })
        .collect::<Vec<_>>();
    sse(vec![
        json!({"choices":[{"index":0,"delta":{"tool_calls": deltas},"finish_reason":null}]}),
    ])
}

fn text(t: &str) -> ScriptedResponse {
    text_reply(t, 100)
}

/// The provider's rules on ids: no two calls of the history share one,
/// every tool message answers a call made before it, every call is
/// answered. Returns each tool message's `(tool_call_id, content)`.
fn assert_ids_valid(body: &Value) -> Vec<(String, String)> {
    let mut ids = HashSet::new();
    let mut open: Vec<String> = Vec::new();
    let mut answers = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            let id = c["id"].as_str().unwrap().to_string();
            assert!(
                ids.insert(id.clone()),
                "call id {id} repeated in one request"
            );
            open.push(id);
        }
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap().to_string();
            let at = open.iter().position(|o| *o == id);
            assert!(at.is_some(), "tool message {id} answers no open call");
            open.remove(at.unwrap());
            answers.push((id, m["content"].as_str().unwrap_or_default().to_string()));
        }
    }
    assert!(open.is_empty(), "unanswered calls {open:?}");
    answers
}

fn world(server: &LoopbackServer) -> (Stack, tempfile::TempDir) {
    let w = deepseek_world(server, "");
    (w.stack, w.dir)
}

async fn turn(stack: &Stack, agent: &Arc<dyn Agent>, prompt: &str) -> TurnEndReason {
    turn_within(stack, agent, prompt, Duration::from_secs(60)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_call_ids_are_made_unique_and_every_result_answers_its_own_call() {
    let n = Arc::new(AtomicUsize::new(0));
    let counter = n.clone();
    let server = LoopbackServer::start_with(move |_req| {
        match counter.fetch_add(1, Ordering::SeqCst) {
            // Two calls under one id in one reply.
            0 => calls(&[("call_dup", "first"), ("call_dup", "second")]),
            // The same id again in a later step, next to a fresh one.
            1 => calls(&[("call_dup", "third"), ("call_new", "fourth")]),
            _ => text("done"),
        }
    })
    .await
    .unwrap();
    let (stack, _dir) = world(&server);
    let handle = stack.create_agent(None).unwrap();
    let agent = handle.agent();
    assert_eq!(turn(&stack, &agent, "go").await, TurnEndReason::Completed);

    let bodies = bodies(&server);
    assert_eq!(bodies.len(), 3, "three steps");
    for b in &bodies {
        assert_ids_valid(b);
    }
    // The last request: each output answers the call that produced it.
    let answers = assert_ids_valid(&bodies[2]);
    let calls: Vec<(String, String)> = bodies[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            let args: Value =
                serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
            (
                c["id"].as_str().unwrap().to_string(),
                args["command"].as_str().unwrap().replace("echo ", ""),
            )
        })
        .collect();
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[0].0, "call_dup", "the first call keeps its id");
    assert_eq!(calls[3].0, "call_new", "an unused id is kept");
    for (id, word) in &calls {
        let (_, output) = answers
            .iter()
            .find(|(a, _)| a == id)
            .unwrap_or_else(|| panic!("no answer to {id}"));
        assert!(
            output.contains(word.as_str()),
            "{id} ran `echo {word}` but its answer is {output:?}"
        );
    }

    // The log: the renames are recorded, the calls carry the new ids, and
    // replay derives the history that was sent.
    let events: Vec<SessionEvent> = agent
        .session()
        .events()
        .iter()
        .map(|e| (**e).clone())
        .collect();
    let renames: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::Other { kind, data } if kind == dsh_agent_loop::CALL_RENAMED_KIND => {
                Some((
                    data["from"].as_str().unwrap().to_string(),
                    data["to"].as_str().unwrap().to_string(),
                ))
            }
            _ => None,
        })
        .collect();
    assert_eq!(renames.len(), 2, "{renames:?}");
    assert!(renames.iter().all(|(from, _)| from == "call_dup"));
    let logged_calls: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::ToolCall(c) => Some(c.call.call_id.to_string()),
            _ => None,
        })
        .collect();
    let expected: Vec<String> = calls.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(logged_calls, expected);
    assert_eq!(
        dsh_session::derive_messages(&events),
        agent.session().derive_messages().to_vec()
    );
    handle.dispose().await;
    stack.shutdown().await;
}
