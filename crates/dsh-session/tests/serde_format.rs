//! Byte-exact JSON of every event kind, against lines written by hand from
//! the reference's field names.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_llm::{ContentBlock, FinishReason, MessageSource, StreamChunk, TokenUsage, ToolCall};
use dsh_protocol::{ToolFailure, ToolResult};
use dsh_session::{
    AssistantMessageEvent, ChunkEvent, ErrorEvent, EventPayload, MessageEvent, SessionEvent,
    SteeringEvent, StepEvent, ToolCallEvent, ToolResultEvent, TurnEndEvent, TurnEndReason,
    TurnStartEvent, TurnTrigger, UsageEvent,
};
use serde_json::json;

fn ev(seq: u64, data: EventPayload) -> SessionEvent {
    SessionEvent {
        seq,
        time: 1_700_000_000_123,
        data,
    }
}

/// Serializes `event`, compares with `line`, and checks that `line` parses
/// back into `event`.
fn check(event: SessionEvent, line: &str) {
    let got = serde_json::to_string(&event).unwrap();
    assert_eq!(got, line);
    let back: SessionEvent = serde_json::from_str(line).unwrap();
    assert_eq!(back, event);
}

#[test]
fn turn_and_step_boundaries() {
    check(
        ev(
            0,
            EventPayload::TurnStart(TurnStartEvent {
                turn: 1,
                trigger: TurnTrigger::Message {
                    source: MessageSource::User,
                },
            }),
        ),
        r#"{"type":"turn/start","seq":0,"time":1700000000123,"data":{"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}}}"#,
    );
    check(
        ev(
            1,
            EventPayload::TurnStart(TurnStartEvent {
                turn: 2,
                trigger: TurnTrigger::Continuation,
            }),
        ),
        r#"{"type":"turn/start","seq":1,"time":1700000000123,"data":{"turn":2,"trigger":{"kind":"continuation"}}}"#,
    );
    check(
        ev(2, EventPayload::StepStart(StepEvent { turn: 1, step: 3 })),
        r#"{"type":"step/start","seq":2,"time":1700000000123,"data":{"turn":1,"step":3}}"#,
    );
    check(
        ev(3, EventPayload::StepEnd(StepEvent { turn: 1, step: 3 })),
        r#"{"type":"step/end","seq":3,"time":1700000000123,"data":{"turn":1,"step":3}}"#,
    );
}

#[test]
fn turn_end_reasons() {
    let cases = [
        (TurnEndReason::Completed, r#"{"kind":"completed"}"#),
        (
            TurnEndReason::Aborted { reason: None },
            r#"{"kind":"aborted"}"#,
        ),
        (
            TurnEndReason::Aborted {
                reason: Some("user".into()),
            },
            r#"{"kind":"aborted","reason":"user"}"#,
        ),
        (
            TurnEndReason::Error {
                message: "boom".into(),
                code: None,
            },
            r#"{"kind":"error","message":"boom"}"#,
        ),
        (
            TurnEndReason::Error {
                message: "boom".into(),
                code: Some("SERVER".into()),
            },
            r#"{"kind":"error","message":"boom","code":"SERVER"}"#,
        ),
        (TurnEndReason::Disposed, r#"{"kind":"disposed"}"#),
        (TurnEndReason::MaxSteps, r#"{"kind":"max-steps"}"#),
        (TurnEndReason::Interrupted, r#"{"kind":"interrupted"}"#),
    ];
    for (reason, json) in cases {
        check(
            ev(
                9,
                EventPayload::TurnEnd(TurnEndEvent {
                    turn: 4,
                    reason: reason.clone(),
                }),
            ),
            &format!(
                r#"{{"type":"turn/end","seq":9,"time":1700000000123,"data":{{"turn":4,"reason":{json}}}}}"#
            ),
        );
    }
}

#[test]
fn unknown_reason_and_trigger_kinds_round_trip() {
    let line = r#"{"type":"turn/end","seq":0,"time":5,"data":{"turn":1,"reason":{"kind":"budget","limit":3,"nested":{"a":[1,"x"]}}}}"#;
    let event: SessionEvent = serde_json::from_str(line).unwrap();
    match &event.data {
        EventPayload::TurnEnd(TurnEndEvent {
            reason: TurnEndReason::Other { kind, .. },
            ..
        }) => assert_eq!(kind, "budget"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(serde_json::to_string(&event).unwrap(), line);

    let line = r#"{"type":"turn/start","seq":0,"time":5,"data":{"turn":1,"trigger":{"kind":"timer","every":"5m"}}}"#;
    let event: SessionEvent = serde_json::from_str(line).unwrap();
    assert!(matches!(
        &event.data,
        EventPayload::TurnStart(TurnStartEvent {
            trigger: TurnTrigger::Other { kind, .. },
            ..
        }) if kind == "timer"
    ));
    assert_eq!(serde_json::to_string(&event).unwrap(), line);
}

#[test]
fn messages() {
    check(
        ev(
            4,
            EventPayload::UserMessage(MessageEvent {
                content: vec![ContentBlock::text("hi")],
                source: MessageSource::User,
            }),
        ),
        r#"{"type":"user/message","seq":4,"time":1700000000123,"data":{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}}"#,
    );
    check(
        ev(
            5,
            EventPayload::ContextMessage(MessageEvent {
                content: vec![ContentBlock::text("file changed: a.ts")],
                source: MessageSource::plugin("watcher"),
            }),
        ),
        r#"{"type":"context/message","seq":5,"time":1700000000123,"data":{"content":[{"type":"text","text":"file changed: a.ts"}],"source":{"kind":"plugin","plugin":"watcher"}}}"#,
    );
    check(
        ev(
            6,
            EventPayload::SteeringMessage(SteeringEvent {
                turn: 2,
                content: vec![ContentBlock::text("stop")],
                source: MessageSource::Agent {
                    agent_id: "a-1".into(),
                },
            }),
        ),
        r#"{"type":"steering/message","seq":6,"time":1700000000123,"data":{"turn":2,"content":[{"type":"text","text":"stop"}],"source":{"kind":"agent","agentId":"a-1"}}}"#,
    );
    check(
        ev(
            7,
            EventPayload::AssistantMessage(AssistantMessageEvent {
                turn: 1,
                step: 1,
                content: vec![
                    ContentBlock::reasoning("hmm"),
                    ContentBlock::text("ok"),
                    ContentBlock::tool_call("call_1", "bash", r#"{"command":"ls"}"#),
                ],
            }),
        ),
        r#"{"type":"assistant/message","seq":7,"time":1700000000123,"data":{"turn":1,"step":1,"content":[{"type":"reasoning","text":"hmm"},{"type":"text","text":"ok"},{"type":"tool-call","id":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"}]}}"#,
    );
}

#[test]
fn chunks_usage_and_tools() {
    check(
        ev(
            8,
            EventPayload::AssistantChunk(ChunkEvent {
                turn: 1,
                step: 2,
                chunk: StreamChunk::TextDelta {
                    index: 0,
                    text: "he".into(),
                },
            }),
        ),
        r#"{"type":"assistant/chunk","seq":8,"time":1700000000123,"data":{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"he"}}}"#,
    );
    check(
        ev(
            9,
            EventPayload::AssistantChunk(ChunkEvent {
                turn: 1,
                step: 2,
                chunk: StreamChunk::Finish {
                    reason: FinishReason::ToolCalls,
                },
            }),
        ),
        r#"{"type":"assistant/chunk","seq":9,"time":1700000000123,"data":{"turn":1,"step":2,"chunk":{"type":"finish","reason":{"kind":"tool-calls"}}}}"#,
    );
    check(
        ev(
            10,
            EventPayload::ToolCall(ToolCallEvent {
                turn: 1,
                step: 2,
                call: ToolCall {
                    call_id: "call_1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                },
            }),
        ),
        r#"{"type":"tool/call","seq":10,"time":1700000000123,"data":{"turn":1,"step":2,"callId":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"}}"#,
    );
    check(
        ev(
            11,
            EventPayload::ToolResult(ToolResultEvent {
                turn: 1,
                step: 2,
                result: ToolResult {
                    call_id: "call_1".into(),
                    content: vec![ContentBlock::text("a.txt\n")],
                    is_error: false,
                    failure: None,
                },
            }),
        ),
        r#"{"type":"tool/result","seq":11,"time":1700000000123,"data":{"turn":1,"step":2,"callId":"call_1","content":[{"type":"text","text":"a.txt\n"}],"isError":false}}"#,
    );
    check(
        ev(
            12,
            EventPayload::ToolResult(ToolResultEvent {
                turn: 1,
                step: 2,
                result: ToolResult {
                    call_id: "call_2".into(),
                    content: vec![ContentBlock::text("Error: bad")],
                    is_error: true,
                    failure: Some(ToolFailure {
                        code: "INVALID_ARGS".into(),
                        message: String::new(),
                        violations: Vec::new(),
                    }),
                },
            }),
        ),
        r#"{"type":"tool/result","seq":12,"time":1700000000123,"data":{"turn":1,"step":2,"callId":"call_2","content":[{"type":"text","text":"Error: bad"}],"isError":true,"errorCode":"INVALID_ARGS"}}"#,
    );
    check(
        ev(
            13,
            EventPayload::Usage(UsageEvent {
                turn: 1,
                step: 2,
                usage: TokenUsage {
                    input_tokens: 10,
                    output_tokens: 5,
                    cache_read_tokens: Some(3),
                    cache_write_tokens: None,
                    reasoning_tokens: Some(2),
                },
            }),
        ),
        r#"{"type":"usage","seq":13,"time":1700000000123,"data":{"turn":1,"step":2,"usage":{"inputTokens":10,"outputTokens":5,"cacheReadTokens":3,"reasoningTokens":2}}}"#,
    );
    check(
        ev(
            14,
            EventPayload::Error(ErrorEvent {
                turn: 1,
                step: 0,
                message: "listener failed".into(),
                code: None,
            }),
        ),
        r#"{"type":"error","seq":14,"time":1700000000123,"data":{"turn":1,"step":0,"message":"listener failed"}}"#,
    );
    check(
        ev(
            15,
            EventPayload::Error(ErrorEvent {
                turn: 1,
                step: 2,
                message: "rate limited".into(),
                code: Some("RATE_LIMIT".into()),
            }),
        ),
        r#"{"type":"error","seq":15,"time":1700000000123,"data":{"turn":1,"step":2,"message":"rate limited","code":"RATE_LIMIT"}}"#,
    );
    check(
        ev(
            16,
            EventPayload::Compaction(dsh_session::CompactionEvent {
                from_seq: 0,
                to_seq: 9,
                summary: "Goal: fix it".into(),
                tokens_after: 812,
            }),
        ),
        r#"{"type":"compaction/summary","seq":16,"time":1700000000123,"data":{"fromSeq":0,"toSeq":9,"summary":"Goal: fix it","tokensAfter":812}}"#,
    );
    check(
        ev(
            17,
            EventPayload::Prune(dsh_session::PruneEvent {
                seqs: vec![4, 7],
                head_chars: 4096,
                tail_chars: 1024,
                tokens_after: 5000,
            }),
        ),
        r#"{"type":"compaction/prune","seq":17,"time":1700000000123,"data":{"seqs":[4,7],"headChars":4096,"tailChars":1024,"tokensAfter":5000}}"#,
    );
}

#[test]
fn plugin_kinds_round_trip_untouched() {
    let lines = [
        r#"{"type":"plugin/metrics","seq":3,"time":9,"data":{"z":1,"a":[true,null,{"k":"ü"}]}}"#,
        r#"{"type":"x","seq":4,"time":9,"data":"just a string"}"#,
        r#"{"type":"x","seq":5,"time":9,"data":[1,2]}"#,
    ];
    for line in lines {
        let event: SessionEvent = serde_json::from_str(line).unwrap();
        assert!(matches!(event.data, EventPayload::Other { .. }));
        assert_eq!(serde_json::to_string(&event).unwrap(), line);
    }
    let event: SessionEvent = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(event.data.kind(), "plugin/metrics");
    assert_eq!(
        event.data,
        EventPayload::Other {
            kind: "plugin/metrics".into(),
            data: json!({"z":1,"a":[true,null,{"k":"ü"}]}),
        }
    );
}

#[test]
fn malformed_known_kinds_are_errors() {
    for line in [
        r#"{"type":"tool/call","seq":0,"time":1,"data":{"turn":1,"step":1,"call_id":"x","name":"n","arguments":"{}"}}"#,
        r#"{"type":"step/start","seq":0,"time":1,"data":{"turn":"1","step":1}}"#,
        r#"{"type":"step/start","time":1,"data":{"turn":1,"step":1}}"#,
        r#"{"seq":0,"time":1,"data":{}}"#,
        r#"[1,2]"#,
    ] {
        assert!(
            serde_json::from_str::<SessionEvent>(line).is_err(),
            "accepted {line}"
        );
    }
}

#[test]
fn kind_names_match_the_reference_table() {
    assert_eq!(
        dsh_session::EVENT_KINDS,
        &[
            "turn/start",
            "turn/end",
            "step/start",
            "step/end",
            "user/message",
            "context/message",
            "assistant/chunk",
            "assistant/message",
            "tool/call",
            "tool/result",
            "steering/message",
            "usage",
            "error",
            "compaction/summary",
            "compaction/prune",
            "conversation/rewound",
        ]
    );
}

#[test]
fn envelope_key_order_does_not_matter_on_load() {
    let reordered =
        r#"{"data":{"turn":1,"step":2},"time":3,"extra":[1],"seq":0,"type":"step/start"}"#;
    let event: SessionEvent = serde_json::from_str(reordered).unwrap();
    assert_eq!(
        event.data,
        EventPayload::StepStart(StepEvent { turn: 1, step: 2 })
    );
    assert_eq!(
        serde_json::to_string(&event).unwrap(),
        r#"{"type":"step/start","seq":0,"time":3,"data":{"turn":1,"step":2}}"#
    );
    let plugin = r#"{"data":{"x":1},"type":"p/x","seq":1,"time":2}"#;
    let event: SessionEvent = serde_json::from_str(plugin).unwrap();
    assert_eq!(
        event.data,
        EventPayload::Other {
            kind: "p/x".into(),
            data: json!({"x":1})
        }
    );
    let err = serde_json::from_str::<SessionEvent>(
        r#"{"data":{"turn":1},"type":"step/start","seq":0,"time":3}"#,
    )
    .unwrap_err();
    assert!(err.to_string().contains("step"), "{err}");
}
