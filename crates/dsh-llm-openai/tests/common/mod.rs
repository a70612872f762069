//! Shared fixtures of the openai-chat adapter tests: configs, payload
//! builders, helpers to run the adapter against the loopback server and to
//! translate bytes without a network.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use dsh_kernel::ErrorCode;
use dsh_llm::sse::SseParser;
use dsh_llm::{BlockAssembler, LlmAdapter, LlmError, Message, ModelRequest, StreamChunk};
use dsh_llm_openai::{ModelRoute, OpenAiAdapter, OpenAiConfig, Translator};
use dsh_testkit::ScriptedResponse;
use futures_util::StreamExt;
use serde_json::{json, Value};

/// The registered model name the tests use.
pub const MODEL: &str = "local-qwen";
/// Its wire id.
pub const WIRE: &str = "qwen3-coder:30b";

/// A config for the loopback server at `base_url` (its `/v1` path), no key.
pub fn config(base_url: &str) -> OpenAiConfig {
    OpenAiConfig {
        provider: "local".into(),
        api_key: None,
        base_url: format!("{base_url}/v1"),
        models: vec![ModelRoute {
            name: MODEL.into(),
            wire: WIRE.into(),
            images: false,
        }],
        connect_timeout_ms: 5_000,
        stream_idle_timeout_ms: 10_000,
        ..OpenAiConfig::default()
    }
}

/// An adapter for `base_url`.
pub fn adapter(base_url: &str) -> Arc<OpenAiAdapter> {
    Arc::new(OpenAiAdapter::new(config(base_url)).unwrap())
}

/// A one-message request for [`MODEL`].
pub fn options() -> ModelRequest {
    ModelRequest {
        model: MODEL.into(),
        messages: vec![Message::user_text("hi")].into(),
        ..Default::default()
    }
}

/// One chunk payload with one choice.
pub fn delta(delta: Value, finish: Option<&str>) -> String {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": WIRE,
        "system_fingerprint": "fp_1",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
    })
    .to_string()
}

/// The final usage-only chunk (`choices: []`).
pub fn usage_chunk(usage: Value) -> String {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": WIRE, "choices": [], "usage": usage}).to_string()
}

/// A `200 text/event-stream` response, one piece per payload.
pub fn sse<S: AsRef<str>>(payloads: &[S]) -> ScriptedResponse {
    ScriptedResponse::sse(payloads)
}

/// Drains one call (30 s guard).
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

/// Splits items into the chunks and the final error, if any.
pub fn split(items: Vec<Result<StreamChunk, LlmError>>) -> (Vec<StreamChunk>, Option<LlmError>) {
    let mut chunks = Vec::new();
    let mut err = None;
    for i in items {
        match i {
            Ok(c) => {
                assert!(err.is_none(), "a chunk after the error");
                chunks.push(c);
            }
            Err(e) => {
                assert!(err.is_none(), "two errors");
                err = Some(e);
            }
        }
    }
    (chunks, err)
}

/// The chunks assembled into a response; panics on an error item.
pub fn assemble(items: &[Result<StreamChunk, LlmError>]) -> dsh_llm::ModelResponse {
    let mut a = BlockAssembler::new();
    for i in items {
        match i {
            Ok(c) => {
                a.push(c);
            }
            Err(e) => panic!("unexpected error {} {}", e.code(), e.message),
        }
    }
    a.result().unwrap()
}

/// Parses and translates `pieces` without a network, ending like the
/// adapter does: returns the chunks and the error, if any.
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
    let err = tr.finish(&mut out).err();
    (out, err)
}

/// The recorded DeepSeek fixture (`testdata/deepseek-stream-2000.sse`)
/// turned into the plain OpenAI dialect: `reasoning_content` becomes
/// `reasoning` (OpenRouter's and Ollama's field) and the DeepSeek-only usage
/// fields go; content, tool calls and usage stay.
pub fn openai_fixture() -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/deepseek-stream-2000.sse");
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("cannot read the SSE fixture {}: {e}", path.display()));
    let text = String::from_utf8(bytes).unwrap();
    let mut out = String::new();
    for event in text.split("\n\n").filter(|e| !e.is_empty()) {
        let payload = event.strip_prefix("data: ").unwrap();
        if payload == "[DONE]" {
            out.push_str("data: [DONE]\n\n");
            continue;
        }
        let mut v: Value = serde_json::from_str(payload).unwrap();
        if let Some(delta) = v
            .pointer_mut("/choices/0/delta")
            .and_then(Value::as_object_mut)
        {
            if let Some(r) = delta.remove("reasoning_content") {
                delta.insert("reasoning".into(), r);
            }
        }
        if let Some(u) = v.get_mut("usage").and_then(Value::as_object_mut) {
            u.remove("prompt_cache_hit_tokens");
            u.remove("prompt_cache_miss_tokens");
        }
        out.push_str("data: ");
        out.push_str(&v.to_string());
        out.push_str("\n\n");
    }
    out.into_bytes()
}
