//! The context meter: with a context window in the options, the loop logs
//! `context/usage` after each model reply, anchored on the provider's
//! usage and adding an estimate for what was appended since.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use dsh_agent::AgentOptions;
use dsh_llm::scripted::ReplyBuilder;
use dsh_llm::ContentBlock;
use dsh_tools::{define_tool, NoArgs, ToolError};
use serde_json::Value;

fn readings(h: &dsh_session::Session) -> Vec<Value> {
    h.events()
        .iter()
        .filter(|e| e.data.kind() == dsh_agent_loop::CONTEXT_USAGE_KIND)
        .map(|e| match &e.data {
            dsh_session::EventPayload::Other { data, .. } => data.clone(),
            _ => unreachable!(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_anchors_the_meter_and_tool_output_is_estimated_on_top() {
    let mut h = Harness::scripted([
        ReplyBuilder::new()
            .tool_call("c1", "big", &["{}"])
            .usage(1000, 50)
            .reply(),
        ReplyBuilder::new().text(&["done"]).usage(2100, 3).reply(),
    ]);
    let tool = define_tool("big", "Returns 4,000 bytes", |_: NoArgs, _ctx| async {
        Ok::<_, ToolError>(vec![ContentBlock::text("z".repeat(3998))])
    });
    let reg = h.tools.register(tool.into_arc()).unwrap();
    h.keep(reg);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent_with(
        "a1",
        AgentOptions {
            model: Some(MODEL.into()),
            context_window: Some(8000),
            ..Default::default()
        },
    );
    let agent = handle.agent();
    send(&agent, "go");
    tap.idle().await;
    let r = readings(&agent.session());
    assert_eq!(r.len(), 2, "{r:?}");
    // Step 1: the provider counted 1,000 + 50.
    assert_eq!(r[0]["tokens"], 1050);
    assert_eq!(r[0]["window"], 8000);
    assert_eq!(r[0]["percent"], 13);
    assert_eq!(
        (r[0]["turn"].as_u64(), r[0]["step"].as_u64()),
        (Some(1), Some(1))
    );
    // Step 2 re-anchors on its own usage.
    assert_eq!(r[1]["tokens"], 2103);
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_window_nothing_is_logged_and_without_usage_bytes_are_counted() {
    let h = Harness::scripted([say(&["ok"])]);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    tap.idle().await;
    assert!(readings(&agent.session()).is_empty());
    handle.dispose().await;

    let h = Harness::scripted([ReplyBuilder::new().text(&["x".repeat(40).as_str()]).reply()]);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent_with(
        "a2",
        AgentOptions {
            model: Some(MODEL.into()),
            context_window: Some(1000),
            ..Default::default()
        },
    );
    let agent = handle.agent();
    send(&agent, &"y".repeat(400));
    tap.idle().await;
    let r = readings(&agent.session());
    // No usage: the 400-byte prompt and the 40-byte reply (no system
    // prompt, no tools) at 4 bytes a token.
    assert_eq!(r[0]["tokens"], 110);
    assert_eq!(r[0]["percent"], 11);
    handle.dispose().await;
}
