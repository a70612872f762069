//! Step limits (issue 13): a model step with too many tool calls or too much
//! output ends the turn with a code, and the log stays valid.

#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use common::*;
use dsh_agent::AgentOptions;
use dsh_agent_loop::{AgentHandle, AgentLoop, LoopSetup};
use dsh_llm::scripted::ReplyBuilder;
use dsh_llm::StepLimits;
use dsh_protocol::codes;
use dsh_session::TurnEndReason;

fn limited_agent(h: &Harness, limits: StepLimits) -> AgentHandle {
    AgentLoop::create_with(
        &h.kernel,
        "a1",
        AgentOptions {
            model: Some(MODEL.into()),
            ..Default::default()
        },
        LoopSetup {
            step_limits: limits,
            ..Default::default()
        },
    )
    .expect("agent created")
}

fn code_of(reason: &TurnEndReason) -> Option<&str> {
    match reason {
        TurnEndReason::Error { code, .. } => code.as_deref(),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_tool_calls_ends_the_turn_and_keeps_the_log_valid() {
    let three_calls = ReplyBuilder::new()
        .tool_call("c1", "t", &["{}"])
        .tool_call("c2", "t", &["{}"])
        .tool_call("c3", "t", &["{}"])
        .reply();
    let h = Harness::scripted([three_calls, say(&["after"])]);
    let mut tap = Tap::install(&h.registry);
    let handle = limited_agent(
        &h,
        StepLimits {
            max_tool_calls: 2,
            ..Default::default()
        },
    );
    let agent = handle.agent();
    send(&agent, "go");
    let (turn, reason) = tap.turn_end().await;
    assert_eq!(turn, 1);
    assert_eq!(
        code_of(&reason),
        Some(codes::TOO_MANY_TOOL_CALLS),
        "{reason:?}"
    );
    tap.idle().await;
    let log = agent.session();
    let k = kinds(&log);
    assert!(!k.iter().any(|x| x == "assistant/message"), "{k:?}");
    assert!(
        !k.iter().any(|x| x == "tool/call"),
        "no call was dispatched"
    );
    assert_eq!(&k[k.len() - 3..], ["step/end", "error", "turn/end"]);

    // The next turn's request has no dangling call.
    send(&agent, "continue");
    assert_eq!(tap.turn_end().await, (2, TurnEndReason::Completed));
    tap.idle().await;
    let reqs = h.model.requests();
    assert_eq!(reqs.len(), 2);
    assert_calls_answered(&reqs[1].messages.to_vec());
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_much_output_ends_the_turn_with_step_too_large() {
    let big = ReplyBuilder::new()
        .reasoning(&["think "])
        .text(&["0123456789", "0123456789"])
        .reply();
    let h = Harness::scripted([big]);
    let mut tap = Tap::install(&h.registry);
    let handle = limited_agent(
        &h,
        StepLimits {
            max_output_bytes: 16,
            ..Default::default()
        },
    );
    send(&handle.agent(), "go");
    let (_, reason) = tap.turn_end().await;
    assert_eq!(code_of(&reason), Some(codes::STEP_TOO_LARGE), "{reason:?}");
    if let TurnEndReason::Error { message, .. } = &reason {
        assert!(message.contains("max_output_bytes"), "{message}");
    }
    tap.idle().await;
    let k = kinds(&handle.agent().session());
    assert!(!k.iter().any(|x| x == "assistant/message"), "{k:?}");
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn within_the_limits_the_step_completes() {
    let h = Harness::scripted([say(&["0123456789"])]);
    let mut tap = Tap::install(&h.registry);
    let handle = limited_agent(
        &h,
        StepLimits {
            max_output_bytes: 10,
            max_tool_calls: 0,
        },
    );
    send(&handle.agent(), "go");
    assert_eq!(tap.turn_end().await, (1, TurnEndReason::Completed));
    tap.idle().await;
    handle.dispose().await;
    h.assert_no_violations();
}

#[test]
fn default_limits() {
    assert_eq!(
        StepLimits::default(),
        StepLimits {
            max_tool_calls: 128,
            max_output_bytes: 4 * 1024 * 1024
        }
    );
    assert_eq!(LoopSetup::default().step_limits, StepLimits::default());
}
