//! Request serialization (fact sheet c.3–c.6): `ModelRequest` → the JSON
//! body of `POST /chat/completions`, keys in the reference's order.

use dsh_llm::{
    answers_first_order, ContentBlock, LlmError, LlmErrorKind, Message, ModelRequest, Role,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::config::DeepSeekConfig;

/// The `UNSUPPORTED` message for requests with `prefill`.
pub const PREFILL_UNSUPPORTED: &str =
    "prefill is not supported by the DeepSeek adapter (Beta chat-prefix completion is future work)";

/// Builds the request body as a JSON value (keys in emitted order): the
/// bytes of [`request_bytes`] read back, for inspection and tests.
///
/// # Errors
/// As [`request_bytes`].
pub fn request_body(options: &ModelRequest, config: &DeepSeekConfig) -> Result<Value, LlmError> {
    let bytes = request_bytes(options, config)?;
    serde_json::from_slice(&bytes).map_err(|e| serialize_error(&e))
}

/// The body of `POST /chat/completions` as sent: `model`, `messages`,
/// `stream`, `stream_options`, then `thinking`, `reasoning_effort`, `tools`,
/// `temperature`, `max_tokens`, `stop` when set. The tools are the set's
/// pre-serialized wire form ([`ToolSet::wire_json`](dsh_llm::ToolSet::wire_json)),
/// copied as bytes: no schema is cloned or re-serialized per request.
///
/// # Errors
/// `UNSUPPORTED` when `options.prefill` is present (even empty).
pub fn request_bytes(options: &ModelRequest, config: &DeepSeekConfig) -> Result<Vec<u8>, LlmError> {
    if options.prefill.is_some() {
        return Err(LlmError::new(
            LlmErrorKind::Unsupported,
            PREFILL_UNSUPPORTED,
        ));
    }
    #[derive(Serialize)]
    struct StreamOptions {
        include_usage: bool,
    }
    #[derive(Serialize)]
    struct ThinkingWire {
        #[serde(rename = "type")]
        kind: &'static str,
    }
    #[derive(Serialize)]
    struct Body<'a> {
        model: &'a str,
        messages: Vec<Value>,
        stream: bool,
        stream_options: StreamOptions,
        #[serde(skip_serializing_if = "Option::is_none")]
        thinking: Option<ThinkingWire>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_effort: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tools: Option<&'a RawValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        temperature: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_tokens: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        stop: Option<&'a [String]>,
    }
    let body = Body {
        model: &options.model,
        messages: wire_messages(options),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        thinking: config.thinking.map(|t| ThinkingWire { kind: t.as_str() }),
        reasoning_effort: config.reasoning_effort.map(|e| e.as_str()),
        tools: options
            .tools
            .as_ref()
            .filter(|t| !t.is_empty())
            .map(|t| t.wire_json()),
        // A non-finite temperature has no JSON form; `null` is what the
        // reference's JSON.stringify sends.
        temperature: options
            .temperature
            .map(|t| serde_json::Number::from_f64(t).map_or(Value::Null, Value::Number)),
        max_tokens: options.max_tokens,
        stop: options.stop.as_deref(),
    };
    serde_json::to_vec(&body).map_err(|e| serialize_error(&e))
}

/// `INVALID_REQUEST` for a body that does not serialize.
fn serialize_error(e: &serde_json::Error) -> LlmError {
    LlmError::new(
        LlmErrorKind::InvalidRequest,
        format!("llm-deepseek: cannot serialize the request: {e}"),
    )
}

/// The `messages` array (fact sheet c.4/c.5).
pub fn wire_messages(options: &ModelRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(options.messages.len() + 1);
    if let Some(system) = &options.system {
        out.push(role_content("system", Value::from(system.as_str())));
    }
    options.messages.with(|messages| {
        for i in answers_first_order(messages) {
            push_message(&messages[i], &mut out);
        }
    });
    out
}

fn push_message(m: &Message, out: &mut Vec<Value>) {
    warn_images(&m.content);
    match m.role {
        Role::System => out.push(role_content("system", Value::from(flatten(&m.content)))),
        Role::User => {
            let text = flatten(&m.content);
            let results: Vec<_> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolResult(r) => Some(r),
                    _ => None,
                })
                .collect();
            if !text.is_empty() || results.is_empty() {
                out.push(role_content("user", Value::from(text)));
            }
            for r in results {
                warn_images(&r.content);
                let mut content = flatten(&r.content);
                if content.is_empty() {
                    content.push_str("(no output)");
                }
                out.push(obj([
                    ("role", Value::from("tool")),
                    ("tool_call_id", Value::from(r.tool_call_id.as_str())),
                    ("content", Value::from(content)),
                ]));
            }
        }
        Role::Assistant => out.push(assistant_message(&m.content)),
    }
}

fn assistant_message(content: &[ContentBlock]) -> Value {
    let text = flatten(content);
    let reasoning: String = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Reasoning(r) => Some(r.text.as_str()),
            _ => None,
        })
        .collect();
    let calls: Vec<Value> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(obj([
                ("id", Value::from(c.call_id.as_str())),
                ("type", Value::from("function")),
                (
                    "function",
                    obj([
                        ("name", Value::from(c.name.as_str())),
                        ("arguments", Value::from(c.arguments.as_str())),
                    ]),
                ),
            ])),
            _ => None,
        })
        .collect();
    let mut m = Map::new();
    m.insert("role".into(), Value::from("assistant"));
    let content_value = if !text.is_empty() {
        Value::from(text)
    } else if !calls.is_empty() {
        Value::from("")
    } else {
        Value::Null
    };
    m.insert("content".into(), content_value);
    if !calls.is_empty() {
        // The reasoning pass-back rule: thinking mode requires the reasoning
        // of tool-call turns to be sent back; elsewhere it is dropped.
        if !reasoning.is_empty() {
            m.insert("reasoning_content".into(), Value::from(reasoning));
        }
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(m)
}

/// What an image block becomes: DeepSeek's models take no images, and the
/// model should know one was there.
pub const IMAGE_OMITTED: &str = "[image omitted: this model does not take images]";

/// Concatenation of the text of every `text` block, an image as
/// [`IMAGE_OMITTED`] on a line of its own; other kinds are ignored.
fn flatten(blocks: &[ContentBlock]) -> String {
    let mut s = String::new();
    let mut after_image = false;
    for b in blocks {
        match b {
            ContentBlock::Text(t) => {
                if after_image && !t.text.starts_with('\n') {
                    s.push('\n');
                }
                s.push_str(&t.text);
                after_image = false;
            }
            ContentBlock::Image(_) => {
                if !s.is_empty() && !s.ends_with('\n') {
                    s.push('\n');
                }
                s.push_str(IMAGE_OMITTED);
                after_image = true;
            }
            _ => {}
        }
    }
    s
}

fn warn_images(blocks: &[ContentBlock]) {
    let n = blocks
        .iter()
        .filter(|b| matches!(b, ContentBlock::Image(_)))
        .count();
    if n > 0 {
        tracing::warn!(
            images = n,
            "llm-deepseek: image blocks are not supported; each was sent as a text note"
        );
    }
}

fn role_content(role: &str, content: Value) -> Value {
    obj([("role", Value::from(role)), ("content", content)])
}

fn obj<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}
