//! Property tests of `session_stats`: the figures are consistent for any
//! log, and the JSON always serializes.

mod common;

use dsh_llm::{ContentBlock, ToolCall};
use dsh_protocol::{ToolFailure, ToolResult};
use dsh_session::{
    session_stats, AssistantMessageEvent, EventPayload, ToolCallEvent, ToolResultEvent,
    CORRECTION_WINDOW_STEPS, TOP_VIOLATION_PATHS,
};
use proptest::prelude::*;

/// Tool events over a small pool of ids, names, turns and steps, so calls,
/// results and assistant blocks meet (the generic generators rarely match).
fn tool_event() -> impl Strategy<Value = EventPayload> {
    let id = prop::sample::select(vec!["c1", "c2", "c3"]);
    let name = prop::sample::select(vec!["bash", "read", "\u{1b}[31mx"]);
    let turn = 1u64..3;
    let step = prop_oneof![1u64..5, Just(0), Just(u64::MAX)];
    let violation = prop_oneof![
        Just(r#"missing required property "a""#.to_string()),
        Just(r#""b.c[1]" must be a string"#.to_string()),
        Just("(root) must be an object".to_string()),
        common::any_text(),
    ];
    let failure = prop::option::of(("[A-Z_]{1,8}", prop::collection::vec(violation, 0..4)));
    prop_oneof![
        (turn.clone(), step.clone(), id.clone(), name.clone()).prop_map(
            |(turn, step, id, name)| EventPayload::ToolCall(ToolCallEvent {
                turn,
                step,
                call: ToolCall::new(id, name, "{}"),
            })
        ),
        (
            turn.clone(),
            step.clone(),
            id.clone(),
            any::<bool>(),
            failure
        )
            .prop_map(
                |(turn, step, id, is_error, failure)| EventPayload::ToolResult(ToolResultEvent {
                    turn,
                    step,
                    result: ToolResult {
                        call_id: id.into(),
                        content: vec![ContentBlock::text("r")],
                        is_error,
                        failure: failure.map(|(code, violations)| ToolFailure {
                            code,
                            message: String::new(),
                            violations,
                        }),
                    },
                })
            ),
        (turn, step, id, name).prop_map(|(turn, step, id, name)| {
            EventPayload::AssistantMessage(AssistantMessageEvent {
                turn,
                step,
                content: vec![ContentBlock::tool_call(id, name, "{}")],
            })
        }),
    ]
}

fn mixed_log() -> impl Strategy<Value = Vec<EventPayload>> {
    prop::collection::vec(
        prop_oneof![3 => tool_event(), 1 => common::any_event_data()],
        0..60,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn corrections_never_exceed_failures_nor_failures_calls(log in mixed_log()) {
        let events = common::as_events(log);
        let stats = session_stats(&events);
        let mut calls = 0;
        let mut failures = 0;
        let mut corrections = 0;
        for (name, t) in &stats.tools {
            prop_assert!(t.self_corrections <= t.failures, "{name}: {t:?}");
            prop_assert!(t.failures <= t.calls, "{name}: {t:?}");
            prop_assert_eq!(t.failures_by_code.values().sum::<u64>(), t.failures);
            prop_assert!(t.top_violation_paths.len() <= TOP_VIOLATION_PATHS);
            prop_assert!(t
                .top_violation_paths
                .windows(2)
                .all(|w| w[0].count > w[1].count
                    || (w[0].count == w[1].count && w[0].path < w[1].path)));
            match t.self_correction_rate {
                None => prop_assert_eq!(t.failures, 0),
                Some(r) => prop_assert!((0.0..=1.0).contains(&r)),
            }
            match t.mean_steps_to_recovery {
                None => prop_assert_eq!(t.self_corrections, 0),
                Some(m) => prop_assert!((0.0..=CORRECTION_WINDOW_STEPS as f64).contains(&m)),
            }
            calls += t.calls;
            failures += t.failures;
            corrections += t.self_corrections;
        }
        prop_assert_eq!(calls, stats.tool_calls);
        prop_assert_eq!(failures, stats.failures);
        prop_assert_eq!(corrections, stats.self_corrections);
        let json = serde_json::to_value(&stats);
        prop_assert!(json.is_ok());
        let json = json.unwrap_or_default();
        prop_assert_eq!(json["toolCalls"].as_u64(), Some(stats.tool_calls));
    }

    #[test]
    fn any_generated_log_gives_serializable_stats(log in common::any_log(40)) {
        let stats = session_stats(&common::as_events(log));
        for t in stats.tools.values() {
            prop_assert!(t.self_corrections <= t.failures && t.failures <= t.calls);
        }
        prop_assert!(serde_json::to_string_pretty(&stats).is_ok());
    }
}
