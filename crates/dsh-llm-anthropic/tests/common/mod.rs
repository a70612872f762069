//! Shared fixtures of the Anthropic adapter tests: a worked example stream
//! (thinking with a signature, text, a tool call), helpers to build events
//! and to run the adapter against the loopback server.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use dsh_kernel::ErrorCode;
use dsh_llm::sse::SseParser;
use dsh_llm::{LlmAdapter, LlmError, Message, ModelRequest, StreamChunk};
use dsh_llm_anthropic::{AnthropicAdapter, AnthropicConfig, ModelRoute, Translator};
use dsh_testkit::ScriptedResponse;
use futures_util::StreamExt;
use serde_json::{json, Value};

/// The registered model name the tests use, and its wire id.
pub const MODEL: &str = "claude-test";
pub const WIRE: &str = "claude-test-20990101";

/// One SSE event as Anthropic frames it: `event: <type>` then the data.
pub fn event(data: &Value) -> String {
    let kind = data["type"].as_str().unwrap_or("unknown");
    format!("event: {kind}\ndata: {data}\n\n")
}

/// A `200 text/event-stream` response with one piece per event.
pub fn sse(events: &[Value]) -> ScriptedResponse {
    ScriptedResponse::new(200)
        .header("content-type", "text/event-stream")
        .pieces(events.iter().map(|e| event(e).into_bytes()))
}

pub fn message_start(input: i64, cache_read: i64, cache_write: i64) -> Value {
    json!({"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant",
        "content":[],"model":WIRE,"stop_reason":null,"stop_sequence":null,
        "usage":{"input_tokens":input,"cache_creation_input_tokens":cache_write,
                 "cache_read_input_tokens":cache_read,"output_tokens":1}}})
}

pub fn block_start(index: u32, block: Value) -> Value {
    json!({"type":"content_block_start","index":index,"content_block":block})
}

pub fn delta(index: u32, delta: Value) -> Value {
    json!({"type":"content_block_delta","index":index,"delta":delta})
}

pub fn text_delta(index: u32, text: &str) -> Value {
    delta(index, json!({"type":"text_delta","text":text}))
}

pub fn block_stop(index: u32) -> Value {
    json!({"type":"content_block_stop","index":index})
}

pub fn message_delta(stop_reason: &str, output: i64) -> Value {
    json!({"type":"message_delta","delta":{"stop_reason":stop_reason,"stop_sequence":null},
           "usage":{"output_tokens":output}})
}

pub fn message_stop() -> Value {
    json!({"type":"message_stop"})
}

pub fn ping() -> Value {
    json!({"type":"ping"})
}

/// The worked example: thinking (two deltas and a signature), text, a tool
/// call whose input arrives in three pieces, `tool_use` stop, usage.
pub fn example_events() -> Vec<Value> {
    vec![
        message_start(176, 1024, 0),
        block_start(0, json!({"type":"thinking","thinking":""})),
        ping(),
        delta(0, json!({"type":"thinking_delta","thinking":"List the"})),
        delta(0, json!({"type":"thinking_delta","thinking":" directory."})),
        delta(
            0,
            json!({"type":"signature_delta","signature":"EqQBCgIYAh"}),
        ),
        block_stop(0),
        block_start(1, json!({"type":"text","text":""})),
        text_delta(1, "Checking."),
        block_stop(1),
        block_start(
            2,
            json!({"type":"tool_use","id":"toolu_01","name":"bash","input":{}}),
        ),
        delta(2, json!({"type":"input_json_delta","partial_json":""})),
        delta(
            2,
            json!({"type":"input_json_delta","partial_json":"{\"command\": \"ls\", "}),
        ),
        delta(
            2,
            json!({"type":"input_json_delta","partial_json":"\"description\": "}),
        ),
        delta(
            2,
            json!({"type":"input_json_delta","partial_json":"\"List files\"}"}),
        ),
        block_stop(2),
        message_delta("tool_use", 45),
        message_stop(),
    ]
}

/// The chunks the worked example must produce.
pub fn expected_chunks() -> Vec<Value> {
    let args = r#"{"command": "ls", "description": "List files"}"#;
    vec![
        json!({"type":"block-start","index":0,"blockType":"reasoning"}),
        json!({"type":"reasoning-delta","index":0,"text":"List the"}),
        json!({"type":"reasoning-delta","index":0,"text":" directory."}),
        json!({"type":"block-end","index":0,"block":{"type":"reasoning","text":"List the directory.","signature":"EqQBCgIYAh"}}),
        json!({"type":"block-start","index":1,"blockType":"text"}),
        json!({"type":"text-delta","index":1,"text":"Checking."}),
        json!({"type":"block-end","index":1,"block":{"type":"text","text":"Checking."}}),
        json!({"type":"block-start","index":2,"blockType":"tool-call"}),
        json!({"type":"tool-call-delta","index":2,"id":"toolu_01","name":"bash","argumentsDelta":""}),
        json!({"type":"tool-call-delta","index":2,"id":"toolu_01","name":"bash","argumentsDelta":"{\"command\": \"ls\", "}),
        json!({"type":"tool-call-delta","index":2,"id":"toolu_01","name":"bash","argumentsDelta":"\"description\": "}),
        json!({"type":"tool-call-delta","index":2,"id":"toolu_01","name":"bash","argumentsDelta":"\"List files\"}"}),
        json!({"type":"block-end","index":2,"block":{"type":"tool-call","id":"toolu_01","name":"bash","arguments":args}}),
        json!({"type":"usage","usage":{"inputTokens":176,"outputTokens":45,"cacheReadTokens":1024,"cacheWriteTokens":0}}),
        json!({"type":"finish","reason":{"kind":"tool-calls"}}),
    ]
}

/// The worked example's SSE bytes.
pub fn example_bytes() -> Vec<u8> {
    example_events()
        .iter()
        .map(event)
        .collect::<String>()
        .into_bytes()
}

/// A text-only reply (`end_turn`).
pub fn text_events(text: &[&str]) -> Vec<Value> {
    let mut v = vec![
        message_start(10, 0, 0),
        block_start(0, json!({"type":"text","text":""})),
    ];
    v.extend(text.iter().map(|t| text_delta(0, t)));
    v.extend([block_stop(0), message_delta("end_turn", 2), message_stop()]);
    v
}

/// A config pointing at `base_url` with a test key and one route.
pub fn config(base_url: &str) -> AnthropicConfig {
    AnthropicConfig {
        api_key: Some("sk-ant-test".into()),
        base_url: base_url.into(),
        models: vec![ModelRoute {
            name: MODEL.into(),
            wire: WIRE.into(),
            images: true,
        }],
        stream_idle_timeout_ms: 10_000,
        connect_timeout_ms: 5_000,
        ..AnthropicConfig::default()
    }
}

/// An adapter pointing at `base_url`.
pub fn adapter(base_url: &str) -> Arc<AnthropicAdapter> {
    Arc::new(AnthropicAdapter::new(config(base_url)).unwrap())
}

/// A request for a one-message conversation.
pub fn options() -> ModelRequest {
    ModelRequest {
        model: MODEL.into(),
        messages: vec![Message::user_text("hi")].into(),
        ..Default::default()
    }
}

/// Drains one call (bounded by 30 s).
pub async fn run(
    adapter: &dyn LlmAdapter,
    options: ModelRequest,
) -> Vec<Result<StreamChunk, LlmError>> {
    tokio::time::timeout(
        Duration::from_secs(30),
        adapter.stream(options).collect::<Vec<_>>(),
    )
    .await
    .expect("stream did not end within 30 s")
}

/// The chunks as JSON; panics on an error item.
pub fn chunks_json(items: &[Result<StreamChunk, LlmError>]) -> Vec<Value> {
    items
        .iter()
        .map(|i| match i {
            Ok(c) => serde_json::to_value(c).unwrap(),
            Err(e) => panic!("unexpected error {} {}", e.code(), e.message),
        })
        .collect()
}

/// Splits items into the chunks (as JSON) and the final error, if any.
pub fn split(items: Vec<Result<StreamChunk, LlmError>>) -> (Vec<Value>, Option<LlmError>) {
    let mut chunks = Vec::new();
    let mut err = None;
    for i in items {
        match i {
            Ok(c) => chunks.push(serde_json::to_value(&c).unwrap()),
            Err(e) => {
                assert!(err.is_none(), "two errors");
                err = Some(e);
            }
        }
    }
    (chunks, err)
}

/// Parses and translates `pieces` without any network: the chunks and the
/// error, if any.
pub fn translate_pieces<'a>(
    pieces: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<StreamChunk>, Option<LlmError>) {
    let mut parser = SseParser::new();
    let mut tr = Translator::new();
    let mut out = Vec::new();
    let drain = |parser: &mut SseParser, tr: &mut Translator, out: &mut Vec<StreamChunk>| {
        while let Some(p) = parser.next_payload() {
            tr.push(p, out)?;
        }
        Ok::<(), LlmError>(())
    };
    for piece in pieces {
        parser.push(piece);
        if let Err(e) = drain(&mut parser, &mut tr, &mut out) {
            return (out, Some(e));
        }
    }
    parser.end();
    if let Err(e) = drain(&mut parser, &mut tr, &mut out) {
        return (out, Some(e));
    }
    let err = tr.finish().err();
    (out, err)
}
