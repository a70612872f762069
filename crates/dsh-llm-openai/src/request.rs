//! Request serialization: `ModelRequest` → the JSON body of
//! `POST <base_url>/chat/completions` in the OpenAI chat-completions format.

use dsh_llm::{
    answers_first_order, ContentBlock, ImageBlock, LlmError, LlmErrorKind, Message, ModelRequest,
    Role, ToolResultBlock,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::config::{MaxTokensField, ModelRoute, OpenAiConfig};

/// The `UNSUPPORTED` message for requests with `prefill`.
pub const PREFILL_UNSUPPORTED: &str =
    "prefill is not supported by the openai-chat adapter (chat-completions has no assistant prefix)";

/// The text that replaces an image for a model that does not take images.
pub const IMAGE_OMITTED: &str = "[image omitted: this model does not take images]";

/// The request body as a JSON value: the bytes of [`request_bytes`] read
/// back, for inspection and tests.
///
/// # Errors
/// As [`request_bytes`].
pub fn request_body(request: &ModelRequest, config: &OpenAiConfig) -> Result<Value, LlmError> {
    let bytes = request_bytes(request, config)?;
    serde_json::from_slice(&bytes).map_err(|e| serialize_error(&e))
}

/// The exact body sent: `model` (the route's wire id), `messages`,
/// `stream: true`, `stream_options` (when [`Quirks::include_usage`](crate::Quirks::include_usage)),
/// then, when set, `reasoning_effort`, `tools`, `temperature`, the token
/// limit (`max_tokens` or `max_completion_tokens`), `stop`.
///
/// Messages: the system prompt first; user text as a string, or as content
/// parts when images are sent (`{"type":"image_url","image_url":{"url"}}`);
/// assistant text with `tool_calls` (`{id, type: "function", function:
/// {name, arguments}}`; empty arguments are sent as `{}`); reasoning is not
/// sent back. Each tool result is a `role: tool` message with
/// `tool_call_id` and its text (`(no output)` when empty); images in tool
/// results go in one user message right after the run of tool messages
/// (`[image from tool call <id>]` and the images). For a route without
/// images every image is replaced by [`IMAGE_OMITTED`]. Tool answers are
/// moved ahead of messages logged while the calls ran
/// ([`answers_first_order`]), and within one user message tool results come
/// before its text.
///
/// # Errors
/// `UNSUPPORTED` with `prefill`; `NO_ADAPTER` when `request.model` is not
/// one of the configured models.
pub fn request_bytes(request: &ModelRequest, config: &OpenAiConfig) -> Result<Vec<u8>, LlmError> {
    if request.prefill.is_some() {
        return Err(LlmError::new(
            LlmErrorKind::Unsupported,
            PREFILL_UNSUPPORTED,
        ));
    }
    let route = config.route(&request.model).ok_or_else(|| {
        LlmError::new(
            LlmErrorKind::NoAdapter,
            format!(
                "model {:?} is not configured for provider {:?} ([providers.{}] models)",
                request.model, config.provider, config.provider
            ),
        )
    })?;
    #[derive(Serialize)]
    struct StreamOptions {
        include_usage: bool,
    }
    #[derive(Serialize)]
    struct Body<'a> {
        model: &'a str,
        messages: Vec<Value>,
        stream: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        stream_options: Option<StreamOptions>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_effort: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tools: Option<&'a RawValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        temperature: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_tokens: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_completion_tokens: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        stop: Option<&'a [String]>,
    }
    let quirks = &config.quirks;
    let (max_tokens, max_completion_tokens) = match quirks.max_tokens_field {
        MaxTokensField::MaxTokens => (request.max_tokens, None),
        MaxTokensField::MaxCompletionTokens => (None, request.max_tokens),
    };
    let body = Body {
        model: &route.wire,
        messages: wire_messages(request, route),
        stream: true,
        stream_options: quirks.include_usage.then_some(StreamOptions {
            include_usage: true,
        }),
        reasoning_effort: quirks.reasoning_effort.as_deref(),
        tools: request
            .tools
            .as_ref()
            .filter(|t| !t.is_empty())
            .map(|t| t.wire_json()),
        // A non-finite temperature has no JSON form.
        temperature: request
            .temperature
            .map(|t| serde_json::Number::from_f64(t).map_or(Value::Null, Value::Number)),
        max_tokens,
        max_completion_tokens,
        stop: request.stop.as_deref().filter(|s| !s.is_empty()),
    };
    serde_json::to_vec(&body).map_err(|e| serialize_error(&e))
}

fn serialize_error(e: &serde_json::Error) -> LlmError {
    LlmError::new(
        LlmErrorKind::InvalidRequest,
        format!("llm-openai: cannot serialize the request: {e}"),
    )
}

/// The `messages` array for `route` (see [`request_bytes`]).
pub fn wire_messages(request: &ModelRequest, route: &ModelRoute) -> Vec<Value> {
    let mut w = Writer {
        out: Vec::with_capacity(request.messages.len() + 1),
        images: route.images,
        tool_images: Vec::new(),
    };
    if let Some(system) = &request.system {
        w.push(json!({"role": "system", "content": system}));
    }
    request.messages.with(|messages| {
        for i in answers_first_order(messages) {
            w.message(&messages[i]);
        }
    });
    w.flush_tool_images();
    w.out
}

struct Writer {
    out: Vec<Value>,
    /// Whether the route takes images.
    images: bool,
    /// Content parts of the user message owed after the current run of
    /// tool messages (images from tool results).
    tool_images: Vec<Value>,
}

impl Writer {
    /// Appends a non-tool message, first the images owed by tool results.
    fn push(&mut self, m: Value) {
        self.flush_tool_images();
        self.out.push(m);
    }

    fn flush_tool_images(&mut self) {
        if !self.tool_images.is_empty() {
            let parts = std::mem::take(&mut self.tool_images);
            self.out
                .push(json!({"role": "user", "content": Value::Array(parts)}));
        }
    }

    fn message(&mut self, m: &Message) {
        match m.role {
            Role::System => {
                let content = self.content(&m.content);
                self.push(json!({"role": "system", "content": content}));
            }
            Role::Assistant => self.push(assistant_message(&m.content)),
            Role::User => {
                for block in &m.content {
                    if let ContentBlock::ToolResult(r) = block {
                        self.tool_result(r);
                    }
                }
                let has_other = m
                    .content
                    .iter()
                    .any(|b| !matches!(b, ContentBlock::ToolResult(_)));
                if has_other || m.content.is_empty() {
                    let content = self.content(&m.content);
                    self.push(json!({"role": "user", "content": content}));
                }
            }
        }
    }

    /// A user or system message's content: a string, or content parts when
    /// an image is sent.
    fn content(&self, blocks: &[ContentBlock]) -> Value {
        let sends_image = self.images && blocks.iter().any(|b| matches!(b, ContentBlock::Image(_)));
        if !sends_image {
            return Value::from(text_of(blocks));
        }
        let mut parts = Vec::new();
        for b in blocks {
            match b {
                ContentBlock::Text(t) if !t.text.is_empty() => {
                    parts.push(json!({"type": "text", "text": t.text}));
                }
                ContentBlock::Image(i) => parts.push(image_part(i)),
                _ => {}
            }
        }
        Value::Array(parts)
    }

    fn tool_result(&mut self, r: &ToolResultBlock) {
        let images: Vec<&ImageBlock> = r
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Image(i) => Some(i),
                _ => None,
            })
            .collect();
        let mut text = if self.images {
            r.content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect()
        } else {
            text_of(&r.content)
        };
        if text.is_empty() {
            text.push_str(if self.images && !images.is_empty() {
                "(the image follows in the next message)"
            } else {
                "(no output)"
            });
        }
        self.out.push(json!({
            "role": "tool",
            "tool_call_id": r.tool_call_id.as_str(),
            "content": text,
        }));
        if self.images && !images.is_empty() {
            self.tool_images.push(json!({
                "type": "text",
                "text": format!("[image from tool call {}]", r.tool_call_id.as_str()),
            }));
            self.tool_images.extend(images.into_iter().map(image_part));
        }
    }
}

fn image_part(i: &ImageBlock) -> Value {
    json!({"type": "image_url", "image_url": {"url": i.url}})
}

/// The text of `blocks` with every image replaced by [`IMAGE_OMITTED`] on a
/// line of its own; other kinds are ignored.
fn text_of(blocks: &[ContentBlock]) -> String {
    let mut s = String::new();
    for b in blocks {
        match b {
            ContentBlock::Text(t) => s.push_str(&t.text),
            ContentBlock::Image(_) => {
                if !s.is_empty() && !s.ends_with('\n') {
                    s.push('\n');
                }
                s.push_str(IMAGE_OMITTED);
                s.push('\n');
            }
            _ => {}
        }
    }
    if s.ends_with(&format!("{IMAGE_OMITTED}\n")) {
        s.pop();
    }
    s
}

fn assistant_message(content: &[ContentBlock]) -> Value {
    let text: String = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let calls: Vec<Value> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(json!({
                "id": c.call_id.as_str(),
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": if c.arguments.trim().is_empty() { "{}" } else { c.arguments.as_str() },
                },
            })),
            _ => None,
        })
        .collect();
    let mut m = Map::new();
    m.insert("role".into(), Value::from("assistant"));
    m.insert("content".into(), Value::from(text));
    if !calls.is_empty() {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(m)
}
