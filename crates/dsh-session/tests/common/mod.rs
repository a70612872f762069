//! Shared test support: a realistic sample log and proptest strategies.
#![allow(dead_code)]
// Test helpers: pub for the test binaries.
#![allow(unreachable_pub)]

use dsh_llm::{ContentBlock, FinishReason, MessageSource, StreamChunk, TokenUsage, ToolCall};
use dsh_protocol::{ToolFailure, ToolResult};
use dsh_session::{
    AssistantMessageEvent, ChunkEvent, ErrorEvent, EventPayload, MessageEvent, SessionEvent,
    SteeringEvent, StepEvent, ToolCallEvent, ToolResultEvent, TurnEndEvent, TurnEndReason,
    TurnStartEvent, TurnTrigger, UsageEvent,
};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// A two-turn conversation with tool calls, an injection, steering, usage,
/// an error and a plugin event.
pub fn sample_log() -> Vec<EventPayload> {
    vec![
        EventPayload::UserMessage(MessageEvent {
            content: vec![ContentBlock::text("list files")],
            source: MessageSource::User,
        }),
        EventPayload::TurnStart(TurnStartEvent {
            turn: 1,
            trigger: TurnTrigger::Message {
                source: MessageSource::User,
            },
        }),
        EventPayload::StepStart(StepEvent { turn: 1, step: 1 }),
        EventPayload::AssistantChunk(ChunkEvent {
            turn: 1,
            step: 1,
            chunk: StreamChunk::TextDelta {
                index: 0,
                text: "Let me".into(),
            },
        }),
        EventPayload::AssistantMessage(AssistantMessageEvent {
            turn: 1,
            step: 1,
            content: vec![
                ContentBlock::text("Let me look."),
                ContentBlock::tool_call("call_1", "bash", r#"{"command":"ls"}"#),
            ],
        }),
        EventPayload::Usage(UsageEvent {
            turn: 1,
            step: 1,
            usage: TokenUsage {
                input_tokens: 100,
                output_tokens: 20,
                cache_read_tokens: Some(50),
                cache_write_tokens: None,
                reasoning_tokens: None,
            },
        }),
        EventPayload::ToolCall(ToolCallEvent {
            turn: 1,
            step: 1,
            call: ToolCall::new("call_1", "bash", r#"{"command":"ls"}"#),
        }),
        EventPayload::ToolResult(ToolResultEvent {
            turn: 1,
            step: 1,
            result: tool_result(
                "call_1",
                vec![ContentBlock::text("a.ts\nb.ts\n")],
                false,
                None,
            ),
        }),
        EventPayload::ContextMessage(MessageEvent {
            content: vec![ContentBlock::text("file changed: a.ts")],
            source: MessageSource::plugin("watcher"),
        }),
        EventPayload::StepEnd(StepEvent { turn: 1, step: 1 }),
        EventPayload::SteeringMessage(SteeringEvent {
            turn: 1,
            content: vec![ContentBlock::text("only .ts please")],
            source: MessageSource::User,
        }),
        EventPayload::StepStart(StepEvent { turn: 1, step: 2 }),
        EventPayload::AssistantMessage(AssistantMessageEvent {
            turn: 1,
            step: 2,
            content: vec![ContentBlock::text("a.ts and b.ts")],
        }),
        EventPayload::StepEnd(StepEvent { turn: 1, step: 2 }),
        EventPayload::TurnEnd(TurnEndEvent {
            turn: 1,
            reason: TurnEndReason::Completed,
        }),
        EventPayload::Other {
            kind: "plugin/note".into(),
            data: json!({"text": "ünïcode ✓"}),
        },
        EventPayload::UserMessage(MessageEvent {
            content: vec![ContentBlock::text("run it")],
            source: MessageSource::User,
        }),
        EventPayload::TurnStart(TurnStartEvent {
            turn: 2,
            trigger: TurnTrigger::Message {
                source: MessageSource::User,
            },
        }),
        EventPayload::StepStart(StepEvent { turn: 2, step: 1 }),
        EventPayload::ToolCall(ToolCallEvent {
            turn: 2,
            step: 1,
            call: ToolCall::new("call_2", "bash", "{not json"),
        }),
        EventPayload::ToolResult(ToolResultEvent {
            turn: 2,
            step: 1,
            result: tool_result(
                "call_2",
                vec![ContentBlock::text("Error: invalid JSON")],
                true,
                Some("INVALID_JSON".into()),
            ),
        }),
        EventPayload::Error(ErrorEvent {
            turn: 2,
            step: 1,
            message: "model stream aborted".into(),
            code: Some("ABORTED".into()),
        }),
        EventPayload::StepEnd(StepEvent { turn: 2, step: 1 }),
        EventPayload::TurnEnd(TurnEndEvent {
            turn: 2,
            reason: TurnEndReason::Error {
                message: "model stream aborted".into(),
                code: Some("ABORTED".into()),
            },
        }),
    ]
}

/// A tool result as the old flat record had it: `error_code` becomes a
/// failure with that code and no message or violations.
pub fn tool_result(
    call_id: &str,
    content: Vec<ContentBlock>,
    is_error: bool,
    error_code: Option<String>,
) -> ToolResult {
    ToolResult {
        call_id: call_id.into(),
        content,
        is_error,
        failure: error_code.map(|code| ToolFailure {
            code,
            message: String::new(),
            violations: Vec::new(),
        }),
    }
}

/// `data` as events with `seq` = position and a fixed time.
pub fn as_events(data: Vec<EventPayload>) -> Vec<SessionEvent> {
    data.into_iter()
        .enumerate()
        .map(|(i, data)| SessionEvent {
            seq: i as u64,
            time: 1_700_000_000_000 + i as u64,
            data,
        })
        .collect()
}

// ---------------------------------------------------------------------------
// proptest strategies

pub fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,12}",
        any::<String>().prop_map(|s| s.chars().take(16).collect()),
        Just("ünïcödé ✓ 日本語 \u{1F600}\n\t\"\\".to_string()),
    ]
}

fn any_id() -> impl Strategy<Value = String> {
    "[a-z0-9_]{1,8}"
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        any_text().prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec(("[a-z]{1,4}", inner), 0..3)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

pub fn any_block() -> impl Strategy<Value = ContentBlock> {
    prop_oneof![
        any_text().prop_map(ContentBlock::text),
        any_text().prop_map(ContentBlock::reasoning),
        (any_id(), any_id(), any_text()).prop_map(|(i, n, a)| ContentBlock::tool_call(i, n, a)),
        (any_id(), any_text(), any::<bool>()).prop_map(|(i, t, e)| ContentBlock::tool_result(
            i,
            vec![ContentBlock::text(t)],
            e
        )),
        ("plugin-[a-z]{1,5}", any_text()).prop_map(|(kind, t)| {
            let mut data = Map::new();
            data.insert("type".into(), Value::String(kind.clone()));
            data.insert("payload".into(), Value::String(t));
            ContentBlock::Other { kind, data }
        }),
    ]
}

fn blocks() -> impl Strategy<Value = Vec<ContentBlock>> {
    prop::collection::vec(any_block(), 0..3)
}

pub fn any_source() -> impl Strategy<Value = MessageSource> {
    prop_oneof![
        Just(MessageSource::User),
        any_text().prop_map(MessageSource::plugin),
        any_id().prop_map(|agent_id| MessageSource::Agent { agent_id }),
        "[a-z\"\\\\ü]{1,6}".prop_map(|kind| {
            let mut data = Map::new();
            data.insert("kind".into(), Value::String(kind.clone()));
            MessageSource::Other { kind, data }
        }),
    ]
}

fn any_reason() -> impl Strategy<Value = TurnEndReason> {
    prop_oneof![
        Just(TurnEndReason::Completed),
        prop::option::of(any_text()).prop_map(|reason| TurnEndReason::Aborted { reason }),
        (any_text(), prop::option::of("[A-Z_]{1,8}"))
            .prop_map(|(message, code)| TurnEndReason::Error { message, code }),
        Just(TurnEndReason::Disposed),
        Just(TurnEndReason::MaxSteps),
        Just(TurnEndReason::Interrupted),
    ]
}

fn any_usage() -> impl Strategy<Value = TokenUsage> {
    (
        0i64..10_000,
        0i64..10_000,
        prop::option::of(0i64..100),
        prop::option::of(0i64..100),
        prop::option::of(0i64..100),
    )
        .prop_map(|(i, o, r, w, z)| TokenUsage {
            input_tokens: i,
            output_tokens: o,
            cache_read_tokens: r,
            cache_write_tokens: w,
            reasoning_tokens: z,
        })
}

fn any_chunk() -> impl Strategy<Value = StreamChunk> {
    prop_oneof![
        (0u32..4, any_text()).prop_map(|(index, text)| StreamChunk::TextDelta { index, text }),
        (0u32..4, any_text()).prop_map(|(index, text)| StreamChunk::ReasoningDelta { index, text }),
        (0u32..4, any_block()).prop_map(|(index, block)| StreamChunk::BlockEnd { index, block }),
        any_usage().prop_map(|usage| StreamChunk::Usage { usage }),
        Just(StreamChunk::Finish {
            reason: FinishReason::Stop
        }),
    ]
}

/// Events that contribute a message to the history.
pub fn message_event() -> impl Strategy<Value = EventPayload> {
    let t = 0u64..5;
    prop_oneof![
        (blocks(), any_source()).prop_map(|(content, source)| EventPayload::UserMessage(
            MessageEvent { content, source }
        )),
        (blocks(), any_source()).prop_map(|(content, source)| EventPayload::ContextMessage(
            MessageEvent { content, source }
        )),
        (t.clone(), t.clone(), blocks()).prop_map(|(turn, step, content)| {
            EventPayload::AssistantMessage(AssistantMessageEvent {
                turn,
                step,
                content,
            })
        }),
        (
            t.clone(),
            t.clone(),
            any_id(),
            blocks(),
            any::<bool>(),
            prop::option::of("[A-Z_]{1,8}")
        )
            .prop_map(|(turn, step, call_id, content, is_error, error_code)| {
                EventPayload::ToolResult(ToolResultEvent {
                    turn,
                    step,
                    result: tool_result(&call_id, content, is_error, error_code),
                })
            }),
        (t, blocks(), any_source()).prop_map(|(turn, content, source)| {
            EventPayload::SteeringMessage(SteeringEvent {
                turn,
                content,
                source,
            })
        }),
    ]
}

/// Events that contribute nothing to the history.
pub fn non_message_event() -> impl Strategy<Value = EventPayload> {
    let t = 0u64..5;
    prop_oneof![
        (t.clone(), any_source()).prop_map(|(turn, source)| EventPayload::TurnStart(
            TurnStartEvent {
                turn,
                trigger: TurnTrigger::Message { source },
            }
        )),
        t.clone()
            .prop_map(|turn| EventPayload::TurnStart(TurnStartEvent {
                turn,
                trigger: TurnTrigger::Continuation,
            })),
        (t.clone(), any_reason())
            .prop_map(|(turn, reason)| EventPayload::TurnEnd(TurnEndEvent { turn, reason })),
        (t.clone(), t.clone())
            .prop_map(|(turn, step)| EventPayload::StepStart(StepEvent { turn, step })),
        (t.clone(), t.clone())
            .prop_map(|(turn, step)| EventPayload::StepEnd(StepEvent { turn, step })),
        (t.clone(), t.clone(), any_chunk()).prop_map(|(turn, step, chunk)| {
            EventPayload::AssistantChunk(ChunkEvent { turn, step, chunk })
        }),
        (t.clone(), t.clone(), any_id(), any_id(), any_text()).prop_map(
            |(turn, step, call_id, name, arguments)| EventPayload::ToolCall(ToolCallEvent {
                turn,
                step,
                call: ToolCall::new(call_id, name, arguments),
            })
        ),
        (t.clone(), t.clone(), any_usage())
            .prop_map(|(turn, step, usage)| EventPayload::Usage(UsageEvent { turn, step, usage })),
        (t.clone(), t, any_text(), prop::option::of("[A-Z_]{1,8}")).prop_map(
            |(turn, step, message, code)| EventPayload::Error(ErrorEvent {
                turn,
                step,
                message,
                code,
            })
        ),
        ("(plugin|x)/[a-z]{1,6}", any_json())
            .prop_map(|(kind, data)| EventPayload::Other { kind, data }),
    ]
}

/// Compaction events (summaries and prunes) over seqs of a short log.
pub fn compaction_event() -> impl Strategy<Value = EventPayload> {
    prop_oneof![
        (0u64..40, 0u64..40, any_text(), 0u64..10_000).prop_map(|(a, b, summary, tokens_after)| {
            EventPayload::Compaction(dsh_session::CompactionEvent {
                from_seq: a.min(b),
                to_seq: a.max(b),
                summary,
                tokens_after,
            })
        }),
        (
            prop::collection::btree_set(0u64..40, 0..5),
            0usize..8,
            0usize..8,
            0u64..10_000
        )
            .prop_map(|(seqs, head_chars, tail_chars, tokens_after)| {
                EventPayload::Prune(dsh_session::PruneEvent {
                    seqs: seqs.into_iter().collect(),
                    head_chars,
                    tail_chars,
                    tokens_after,
                })
            }),
    ]
}

pub fn any_event_data() -> impl Strategy<Value = EventPayload> {
    prop_oneof![
        4 => message_event(),
        4 => non_message_event(),
        1 => compaction_event()
    ]
}

pub fn any_log(max: usize) -> impl Strategy<Value = Vec<EventPayload>> {
    prop::collection::vec(any_event_data(), 0..max)
}
