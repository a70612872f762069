//! `Stack::set_model`: the next request of the main agent goes to the
//! model switched to, the request log records it, and an unknown model is
//! refused with the list of the models served.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use std::sync::Arc;
use std::time::Duration;

use dsh::{Stack, StackError};
use dsh_agent::Agent;
use dsh_llm::scripted::{ReplyBuilder, ScriptedAdapter};
use dsh_session::EventPayload;

use common::{stack_in, turn_within};

async fn turn(stack: &Stack, agent: &Arc<dyn Agent>, prompt: &str) {
    turn_within(stack, agent, prompt, Duration::from_secs(30)).await;
}

#[tokio::test]
async fn set_model_sends_the_next_request_to_the_other_model() {
    let dir = tempfile::tempdir().unwrap();
    let stack = stack_in(dir.path(), "", None);
    let other = Arc::new(ScriptedAdapter::new([ReplyBuilder::new()
        .text(&["from other"])
        .reply()]));
    stack.add_adapter(&["other"], other.clone()).unwrap();
    let handle = stack.create_agent(None).unwrap();
    let agent = handle.agent();

    turn(&stack, &agent, "echo first").await;
    assert!(other.requests().is_empty(), "the first turn is echo's");
    assert_eq!(stack.model(), "echo");

    let err = stack
        .set_model("nope", "/model", Some(agent.as_ref()))
        .unwrap_err();
    assert!(matches!(err, StackError::Usage(_)));
    assert!(err.to_string().contains("echo, other"), "{err}");
    assert_eq!(stack.model(), "echo", "a refused switch changes nothing");

    stack
        .set_model("other", "/model", Some(agent.as_ref()))
        .unwrap();
    assert_eq!(stack.model(), "other");
    turn(&stack, &agent, "second").await;
    let sent = other.requests();
    assert_eq!(sent.len(), 1, "the second turn went to the other model");
    assert_eq!(sent[0].model, "other");

    let events: Vec<_> = agent
        .session()
        .events()
        .iter()
        .map(|e| (**e).clone())
        .collect();
    let change = events
        .iter()
        .find_map(|e| match &e.data {
            EventPayload::Other { kind, data } if kind == dsh::MODEL_CHANGE_EVENT => {
                Some(data.clone())
            }
            _ => None,
        })
        .expect("the switch is logged");
    assert_eq!(change["model"], "other");
    assert_eq!(change["source"], "/model");
    let models: Vec<String> = dsh::requests::step_requests(&events)
        .iter()
        .map(|r| r.request.model.clone())
        .collect();
    assert_eq!(models.first().map(String::as_str), Some("echo"));
    assert_eq!(
        models.last().map(String::as_str),
        Some("other"),
        "{models:?}"
    );
    let last_text = events.iter().rev().find_map(|e| match &e.data {
        EventPayload::AssistantMessage(m) => Some(format!("{:?}", m.content)),
        _ => None,
    });
    assert!(last_text.unwrap().contains("from other"));

    handle.dispose().await;
    stack.shutdown().await;
}
