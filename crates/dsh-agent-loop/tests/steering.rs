//! Steering (where it lands, what it forces), the blind-retry guard and the
//! step cap.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use dsh_agent::{Agent, AgentOptions, AgentStatus};
use dsh_llm::scripted::{ReplyBuilder, ScriptedAdapter, ScriptedReply};
use dsh_llm::{ContentBlock, LlmError, LlmErrorKind, MessageSource};
use dsh_session::{
    EventPayload, MessageEvent, SteeringEvent, StepEvent, ToolResultEvent, TurnEndReason,
};
use dsh_tools::{define_tool, NoArgs, ToolArgs, ToolError};

/// Arguments of the test tools.
#[derive(serde::Deserialize, ToolArgs)]
struct PathArgs {
    /// The file.
    path: String,
}

fn steering_events(agent: &Arc<dyn Agent>) -> Vec<(u64, String, MessageSource)> {
    agent
        .session()
        .events()
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::SteeringMessage(SteeringEvent {
                turn,
                content,
                source,
            }) => Some((*turn, text_of(content), source.clone())),
            _ => None,
        })
        .collect()
}

/// Registers a listener that steers `what` once, at the first chunk.
fn steer_at_first_chunk(h: &Harness, what: &'static str) -> dsh_kernel::Registration {
    let once = AtomicBool::new(false);
    h.registry.hooks().event.on(move |c| {
        if !matches!(c.event.data, EventPayload::AssistantChunk(_)) {
            return;
        }
        if !once.swap(true, Ordering::SeqCst) {
            assert_eq!(c.agent.status(), AgentStatus::Running);
            c.agent.steer(text(what), MessageSource::User).unwrap();
        }
    })
}

fn register_noop(h: &mut Harness) {
    let tool = define_tool("noop", "Does nothing", |_: NoArgs, _ctx| async {
        Ok::<_, ToolError>(vec![ContentBlock::text("done")])
    });
    let reg = h.tools.register(tool.into_arc()).unwrap();
    h.keep(reg);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_during_streaming_is_delivered_after_the_step_and_forces_continuation() {
    // A text-only step would end the turn; the steering forces step 2.
    let h = Harness::scripted([say(&["first"]), say(&["second"])]);
    let mut tap = Tap::install(&h.registry);
    let reg = steer_at_first_chunk(&h, "look at b.ts");
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    tap.idle().await;

    let k = kinds(&agent.session());
    let i = k
        .iter()
        .position(|x| x == "steering/message")
        .expect("steering logged");
    assert_eq!(
        &k[i - 2..i + 3],
        [
            "assistant/message",
            "usage",
            "steering/message",
            "step/end",
            "step/start"
        ]
    );
    assert_eq!(
        steering_events(&agent),
        vec![(1, "look at b.ts".into(), MessageSource::User)]
    );
    let reqs = h.model.requests();
    assert_eq!(reqs.len(), 2, "steering forced a second step");
    assert_eq!(
        text_of(&reqs[1].messages.last().unwrap().content),
        "<steering source=\"user\">look at b.ts</steering>"
    );
    assert_eq!(
        turn_ends(&agent.session()),
        vec![(1, TurnEndReason::Completed)]
    );
    let all = tap.all();
    assert!(all.contains(&Obs::Queued {
        text: "look at b.ts".into(),
        steering: true
    }));
    let steer_at = all
        .iter()
        .position(|o| *o == Obs::Steering(1, "look at b.ts".into()))
        .unwrap();
    let end_at = all.iter().position(|o| *o == Obs::StepEnd(1, 1)).unwrap();
    assert!(steer_at < end_at);
    assert!(!kinds(&agent.session())
        .iter()
        .skip(1)
        .any(|x| x == "user/message"));
    reg.undo();
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_during_tools_lands_after_the_tool_results() {
    let mut h = Harness::scripted([call("c1", "steerer", "{}"), say(&["ok"])]);
    let tool = define_tool(
        "steerer",
        "Steers its own agent",
        |_: NoArgs, ctx| async move {
            let agent = ctx.get::<Arc<dyn Agent>>().unwrap().clone();
            agent
                .steer(text("from the tool"), MessageSource::plugin("t"))
                .unwrap();
            Ok::<_, ToolError>(vec![ContentBlock::text("steered")])
        },
    );
    let reg = h.tools.register(tool.into_arc()).unwrap();
    h.keep(reg);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    tap.idle().await;
    let k = kinds(&agent.session());
    let i = k.iter().position(|x| x == "steering/message").unwrap();
    assert_eq!(
        &k[i - 2..i + 2],
        ["tool/call", "tool/result", "steering/message", "step/end"]
    );
    let reqs = h.model.requests();
    let second = reqs[1].messages.to_vec();
    assert!(matches!(
        &second[second.len() - 2].content[0],
        ContentBlock::ToolResult(_)
    ));
    assert_eq!(
        text_of(&second.last().unwrap().content),
        "<steering source=\"plugin\">from the tool</steering>"
    );
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_from_a_step_end_listener_forces_another_step_and_opens_it() {
    let h = Harness::scripted([say(&["one"]), say(&["two"])]);
    let mut tap = Tap::install(&h.registry);
    let once = AtomicBool::new(false);
    let reg = h.registry.hooks().event.on(move |s| {
        if !matches!(s.event.data, EventPayload::StepEnd(_)) {
            return;
        }
        if !once.swap(true, Ordering::SeqCst) {
            s.agent
                .steer(text("one more thing"), MessageSource::User)
                .unwrap();
        }
    });
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    tap.idle().await;
    let k = kinds(&agent.session());
    let i = k.iter().position(|x| x == "steering/message").unwrap();
    // Drained at the start of step 2, before its step/start.
    assert_eq!(
        &k[i - 1..i + 2],
        ["step/end", "steering/message", "step/start"]
    );
    assert_eq!(h.model.requests().len(), 2);
    assert_eq!(
        turn_ends(&agent.session()),
        vec![(1, TurnEndReason::Completed)]
    );
    reg.undo();
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_in_a_failed_step_becomes_a_new_turn() {
    let failing = ScriptedReply::ChunksThenError(
        ReplyBuilder::new().text(&["par"]).build()[..2].to_vec(),
        LlmError::new(LlmErrorKind::Server, "boom"),
    );
    let h = Harness::scripted([failing, say(&["recovered"])]);
    let mut tap = Tap::install(&h.registry);
    let reg = steer_at_first_chunk(&h, "try again");
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    assert_eq!(
        tap.turn_end().await,
        (
            1,
            TurnEndReason::Error {
                message: "boom".into(),
                code: Some("SERVER".into())
            }
        )
    );
    assert_eq!(tap.turn_end().await, (2, TurnEndReason::Completed));
    tap.idle().await;
    assert!(
        steering_events(&agent).is_empty(),
        "never delivered as steering"
    );
    let events = agent.session().events();
    let users: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::UserMessage(MessageEvent { content, .. }) => Some(text_of(content)),
            _ => None,
        })
        .collect();
    assert_eq!(users, ["hi", "try again"]);
    let k = kinds(&agent.session());
    let second = k.iter().rposition(|x| x == "turn/start").unwrap();
    assert_eq!(
        &k[second - 2..=second],
        ["turn/end", "user/message", "turn/start"]
    );
    // Re-queued silently: one agent/queued (steering: true), no idle in between.
    let queued: Vec<Obs> = tap
        .all()
        .into_iter()
        .filter(|o| matches!(o, Obs::Queued { .. }))
        .collect();
    assert_eq!(queued.len(), 2);
    assert_eq!(
        tap.statuses(),
        vec![AgentStatus::Running, AgentStatus::Idle]
    );
    reg.undo();
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_identical_failures_get_the_schema_then_a_steering_note() {
    let bad = r#"{"path": 1}"#;
    let mut h = Harness::scripted([
        call("c1", "edit", bad),
        call("c2", "edit", bad),
        call("c3", "edit", bad),
        say(&["I will stop."]),
    ]);
    let tool = define_tool("edit", "Edits a file", |args: PathArgs, _ctx| async move {
        Ok::<_, ToolError>(vec![ContentBlock::text(format!("edited {}", args.path))])
    });
    let reg = h.tools.register(tool.into_arc()).unwrap();
    h.keep(reg);
    let params = serde_json::to_string(&h.tools.get("edit").unwrap().schema().parameters).unwrap();
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "edit it");
    tap.idle().await;

    let violation = r#"Error: invalid arguments: "path" must be a string"#;
    let results = tool_results(&agent.session());
    assert_eq!(results.len(), 3);
    assert_eq!(results[0].1, violation, "first failure: no note");
    for (n, r) in results.iter().enumerate().skip(1) {
        let mut lines = r.1.lines();
        assert_eq!(lines.next(), Some(violation));
        let note = lines.next().expect("a note block");
        assert!(note.starts_with("note: "), "{note}");
        assert!(note.contains(&format!("{} times", n + 1)), "{note}");
        assert!(
            note.contains(&params),
            "the note carries the schema: {note}"
        );
        assert_eq!(r.3.as_deref(), Some("INVALID_ARGS"));
    }
    // Only the third failure steers, right after its result.
    let steering = steering_events(&agent);
    assert_eq!(steering.len(), 1);
    assert_eq!(steering[0].2, MessageSource::plugin("agent-loop"));
    assert!(
        steering[0].1.contains("Stop repeating this call"),
        "{}",
        steering[0].1
    );
    let events = agent.session().events();
    let at = events
        .iter()
        .position(|e| matches!(e.data, EventPayload::SteeringMessage(_)))
        .unwrap();
    assert!(
        matches!(&events[at - 1].data, EventPayload::ToolResult(ToolResultEvent { result, .. }) if result.call_id == "c3")
    );
    assert!(matches!(
        events[at + 1].data,
        EventPayload::StepEnd(StepEvent { step: 3, .. })
    ));
    let reqs = h.model.requests();
    assert_eq!(reqs.len(), 4);
    assert!(text_of(&reqs[3].messages.last().unwrap().content)
        .starts_with("<steering source=\"plugin\">"));
    assert_eq!(
        turn_ends(&agent.session()),
        vec![(1, TurnEndReason::Completed)]
    );
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retry_guard_tells_different_failures_apart_and_honours_its_limit() {
    let mut h = Harness::scripted([
        call("c1", "edit", r#"{"path": 1}"#),
        call("c2", "edit", r#"{}"#),
        call("c3", "edit", r#"{}"#),
        say(&["ok"]),
    ]);
    let tool = define_tool("edit", "Edits a file", |args: PathArgs, _ctx| async move {
        Ok::<_, ToolError>(vec![ContentBlock::text(format!("edited {}", args.path))])
    });
    let reg = h.tools.register(tool.into_arc()).unwrap();
    h.keep(reg);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent_with(
        "a1",
        AgentOptions {
            model: Some(MODEL.into()),
            repeat_failure_limit: 2,
            ..Default::default()
        },
    );
    let agent = handle.agent();
    send(&agent, "edit it");
    tap.idle().await;
    let results = tool_results(&agent.session());
    assert_eq!(
        results[1].1, r#"Error: invalid arguments: missing required property "path""#,
        "a different violation is a first failure"
    );
    assert!(results[2].1.contains("note: "));
    let steering = steering_events(&agent);
    assert_eq!(
        steering.len(),
        1,
        "limit 2 steers at the second identical failure"
    );
    let events = agent.session().events();
    let at = events
        .iter()
        .position(|e| matches!(e.data, EventPayload::SteeringMessage(_)))
        .unwrap();
    assert!(
        matches!(&events[at - 1].data, EventPayload::ToolResult(ToolResultEvent { result, .. }) if result.call_id == "c3")
    );
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_step_cap_ends_the_turn_with_max_steps() {
    let n = Arc::new(AtomicUsize::new(0));
    let model = ScriptedAdapter::with_responder(move |_| {
        let i = n.fetch_add(1, Ordering::SeqCst);
        call(&format!("c{i}"), "noop", "{}")
    });
    let mut h = Harness::new(model);
    register_noop(&mut h);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent_with(
        "a1",
        AgentOptions {
            model: Some(MODEL.into()),
            max_steps: 3,
            ..Default::default()
        },
    );
    let agent = handle.agent();
    send(&agent, "loop forever");
    let (turn, reason) = tap.turn_end().await;
    assert_eq!((turn, &reason), (1, &TurnEndReason::MaxSteps));
    assert_eq!(reason.kind(), "max-steps");
    tap.idle().await;
    assert_eq!(h.model.requests().len(), 3);
    assert_eq!(tool_results(&agent.session()).len(), 3);
    assert!(error_events(&agent.session()).is_empty());
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_from_a_turn_start_listener_opens_the_first_step() {
    let h = Harness::scripted([say(&["ok"])]);
    let mut tap = Tap::install(&h.registry);
    let once = AtomicBool::new(false);
    let reg = h.registry.hooks().event.on(move |t| {
        if !matches!(t.event.data, EventPayload::TurnStart(_)) {
            return;
        }
        if !once.swap(true, Ordering::SeqCst) {
            t.agent.steer(text("early"), MessageSource::User).unwrap();
        }
    });
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    tap.idle().await;
    assert_eq!(
        kinds(&agent.session())[..4],
        [
            "user/message",
            "turn/start",
            "steering/message",
            "step/start"
        ]
    );
    let first = h.model.requests()[0].messages.to_vec();
    assert_eq!(
        text_of(&first[1].content),
        "<steering source=\"user\">early</steering>"
    );
    assert_eq!(
        h.model.requests().len(),
        1,
        "delivered, not forcing a second step"
    );
    reg.undo();
    handle.dispose().await;
    h.assert_no_violations();
}
