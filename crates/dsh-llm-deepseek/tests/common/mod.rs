//! Shared fixtures of the DeepSeek adapter tests: the fact sheet's worked
//! example (§f) and helpers to run the adapter against the loopback server.
#![allow(dead_code)]

use dsh_kernel::ErrorCode;
use std::sync::Arc;
use std::time::Duration;

use dsh_llm::{LlmAdapter, LlmError, Message, ModelRequest, StreamChunk};
use dsh_llm_deepseek::{DeepSeekAdapter, DeepSeekConfig, SseParser, Translator};
use futures_util::StreamExt;
use serde_json::Value;

/// The `H` abbreviation of §f.
pub const H: &str = r#""id":"a1b2","object":"chat.completion.chunk","created":1767225600,"model":"deepseek-v4-flash""#;

/// The nine JSON payloads of §f (without `[DONE]`).
pub fn example_payloads() -> Vec<String> {
    [
        r#"{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":""},"logprobs":null,"finish_reason":null}"#,
        r#"{"index":0,"delta":{"content":null,"reasoning_content":"List the"},"logprobs":null,"finish_reason":null}"#,
        r#"{"index":0,"delta":{"content":null,"reasoning_content":" directory."},"logprobs":null,"finish_reason":null}"#,
        r#"{"index":0,"delta":{"content":"Checking.","reasoning_content":null},"logprobs":null,"finish_reason":null}"#,
        r#"{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_00_Xy12","type":"function","function":{"name":"bash","arguments":""}}]},"logprobs":null,"finish_reason":null}"#,
        r#"{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\": \"ls\", "}}]},"logprobs":null,"finish_reason":null}"#,
        r#"{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"description\": \"List files\"}"}}]},"logprobs":null,"finish_reason":null}"#,
    ]
    .iter()
    .map(|choice| format!("{{{H},\"choices\":[{choice}]}}"))
    .chain([
        format!(r#"{{{H},"choices":[{{"index":0,"delta":{{"content":""}},"logprobs":null,"finish_reason":"tool_calls"}}],"usage":null}}"#),
        format!(r#"{{{H},"choices":[],"usage":{USAGE}}}"#),
    ])
    .collect()
}

/// The usage object of §f.
pub const USAGE: &str = r#"{"prompt_tokens":1200,"completion_tokens":45,"total_tokens":1245,"prompt_tokens_details":{"cached_tokens":1024},"prompt_cache_hit_tokens":1024,"prompt_cache_miss_tokens":176,"completion_tokens_details":{"reasoning_tokens":12}}"#;

/// The SSE events of §f: keep-alive comment, nine payloads, `[DONE]`.
pub fn example_events() -> Vec<String> {
    let mut events = vec![": keep-alive\n\n".to_string()];
    for p in example_payloads() {
        events.push(format!("data: {p}\n\n"));
    }
    events.push("data: [DONE]\n\n".to_string());
    events
}

/// The required output of §f, one JSON value per chunk.
pub fn expected_chunks() -> Vec<Value> {
    [
        r#"{"type":"block-start","index":0,"blockType":"reasoning"}"#,
        r#"{"type":"reasoning-delta","index":0,"text":"List the"}"#,
        r#"{"type":"reasoning-delta","index":0,"text":" directory."}"#,
        r#"{"type":"block-start","index":1,"blockType":"text"}"#,
        r#"{"type":"text-delta","index":1,"text":"Checking."}"#,
        r#"{"type":"block-start","index":2,"blockType":"tool-call"}"#,
        r#"{"type":"tool-call-delta","index":2,"id":"call_00_Xy12","name":"bash","argumentsDelta":""}"#,
        r#"{"type":"tool-call-delta","index":2,"id":"call_00_Xy12","name":"bash","argumentsDelta":"{\"command\": \"ls\", "}"#,
        r#"{"type":"tool-call-delta","index":2,"id":"call_00_Xy12","name":"bash","argumentsDelta":"\"description\": \"List files\"}"}"#,
        r#"{"type":"block-end","index":0,"block":{"type":"reasoning","text":"List the directory."}}"#,
        r#"{"type":"block-end","index":1,"block":{"type":"text","text":"Checking."}}"#,
        r#"{"type":"block-end","index":2,"block":{"type":"tool-call","id":"call_00_Xy12","name":"bash","arguments":"{\"command\": \"ls\", \"description\": \"List files\"}"}}"#,
        r#"{"type":"usage","usage":{"inputTokens":176,"outputTokens":45,"cacheReadTokens":1024,"reasoningTokens":12}}"#,
        r#"{"type":"finish","reason":{"kind":"tool-calls"}}"#,
    ]
    .iter()
    .map(|s| serde_json::from_str(s).unwrap())
    .collect()
}

/// A config pointing at `base_url` with a test key.
pub fn config(base_url: &str) -> DeepSeekConfig {
    DeepSeekConfig {
        api_key: Some("sk-test".into()),
        base_url: Some(base_url.into()),
        stream_idle_timeout_ms: 10_000,
        connect_timeout_ms: 5_000,
        ..DeepSeekConfig::default()
    }
}

/// An adapter pointing at `base_url`.
pub fn adapter(base_url: &str) -> Arc<DeepSeekAdapter> {
    Arc::new(DeepSeekAdapter::new(config(base_url)).unwrap())
}

/// Options for a one-message conversation.
pub fn options() -> ModelRequest {
    ModelRequest {
        model: "deepseek-v4-flash".into(),
        messages: vec![Message::user_text("hi")].into(),
        ..Default::default()
    }
}

/// Drains one call.
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

/// Parses and translates `pieces` without any network: returns the chunks
/// and the error, if any.
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

/// The recorded 2,000-event stream `testdata/deepseek-stream-2000.sse`
/// (described in `testdata/README.md`). Panics with the path when the file
/// cannot be read: the fixture is part of the repository, so a missing file
/// is a broken checkout, not a reason to skip.
pub fn fixture() -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/deepseek-stream-2000.sse");
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("cannot read the SSE fixture {}: {e}", path.display()))
}
