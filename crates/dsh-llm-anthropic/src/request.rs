//! Request serialization: `ModelRequest` → the JSON body of
//! `POST /v1/messages`.
//!
//! The body borrows from the request (no text is copied before it is
//! written): `model` (the route's wire id), `max_tokens`, `system` (one text
//! block), `messages`, `tools`, `thinking`, `temperature`,
//! `stop_sequences`, `stream: true`, in that order, absent fields omitted.
//!
//! History mapping:
//! - Messages alternate `user` / `assistant`: consecutive messages of one
//!   role are merged into one, and within a user message the `tool_result`
//!   blocks come first (the API requires them right after the `tool_use`
//!   turn, ahead of any text; context logged while a call ran therefore
//!   follows the answers). A `system`-role history message is sent as user
//!   text. Messages left without content are skipped.
//! - Text: `text` blocks; empty text is dropped (the API rejects it).
//! - Tool calls: `tool_use {id, name, input}` with `input` the parsed
//!   arguments. Arguments that are not a JSON object (unparsable text from
//!   an earlier, broken reply, or a non-object value) are sent as `{}`: the
//!   turn is already in the history and its result already tells the model
//!   what went wrong; refusing the whole request would end the session.
//! - Tool results: `tool_result {tool_use_id, content, is_error?}` with text
//!   and image content; no content at all becomes the text `(no output)`.
//! - Reasoning: a block with a `signature` goes back as `thinking {thinking,
//!   signature}` verbatim; one without (another provider's) is dropped. An
//!   `Other` block of kind `redacted_thinking` goes back verbatim.
//! - Images: a `data:<type>;base64,<data>` URL becomes a base64 `image`
//!   source, an `http(s)` URL an `url` source, when the route takes images;
//!   otherwise (or for a type the API does not take) a text note
//!   `[image omitted: …]`.
//!
//! Prompt caching (`prompt_caching`): `cache_control: {"type":"ephemeral"}`
//! on the system block, the last tool, and the last content block of the
//! last two user messages: at most four breakpoints, the API's limit. The
//! `cache` hints on dsh blocks are not used (they could pass the limit).

use std::borrow::Cow;

use dsh_llm::{ContentBlock, ImageBlock, LlmError, LlmErrorKind, Message, ModelRequest, Role};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::config::AnthropicConfig;

/// The `UNSUPPORTED` message for requests with `prefill`.
pub const PREFILL_UNSUPPORTED: &str =
    "llm-anthropic: prefill is not supported by the Anthropic adapter";

/// The text sent instead of an image to a model that takes none.
pub const IMAGE_OMITTED: &str = "[image omitted: this model does not take images]";

/// The `Other` block kind kept for Anthropic's `redacted_thinking` blocks.
pub const REDACTED_THINKING: &str = "redacted_thinking";

/// Image media types the Messages API accepts.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// The body of `POST /v1/messages` as sent (see the module documentation
/// for every mapping rule).
///
/// `max_tokens` is the request's, else [`AnthropicConfig::max_tokens`].
/// With a thinking budget, `thinking` is sent when `max_tokens` is above the
/// budget (a short request, a title or a summary, goes without), and then
/// `temperature` is not (the API refuses it with thinking).
///
/// # Errors
/// `UNSUPPORTED` when `request.prefill` is present; `INVALID_REQUEST` if the
/// body cannot be serialized.
pub fn request_bytes(
    request: &ModelRequest,
    config: &AnthropicConfig,
) -> Result<Vec<u8>, LlmError> {
    if request.prefill.is_some() {
        return Err(LlmError::new(
            LlmErrorKind::Unsupported,
            PREFILL_UNSUPPORTED,
        ));
    }
    let route = config.route(&request.model);
    let wire_model = route.map_or(request.model.as_str(), |r| r.wire.as_str());
    let images = route.is_some_and(|r| r.images);
    let caching = config.prompt_caching;
    let max_tokens = request.max_tokens.unwrap_or(config.max_tokens);
    let thinking = config
        .thinking_budget
        .filter(|budget| max_tokens > *budget)
        .map(|budget_tokens| Thinking {
            kind: "enabled",
            budget_tokens,
        });
    let system = request
        .system
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(|text| {
            vec![Block::Text {
                text: Cow::Borrowed(text),
                cache_control: caching.then_some(EPHEMERAL),
            }]
        });
    let tools: Option<Vec<Tool<'_>>> =
        request.tools.as_ref().filter(|t| !t.is_empty()).map(|set| {
            let n = set.len();
            set.iter()
                .enumerate()
                .map(|(i, t)| Tool {
                    name: &t.name,
                    description: &t.description,
                    input_schema: &t.parameters,
                    cache_control: (caching && i + 1 == n).then_some(EPHEMERAL),
                })
                .collect()
        });
    let temperature = match thinking {
        Some(_) => None,
        None => request.temperature,
    };
    request.messages.with(|history| {
        let mut messages = wire_messages(history, images);
        if caching {
            mark_last_user_turns(&mut messages, 2);
        }
        let body = Body {
            model: wire_model,
            max_tokens,
            system,
            messages,
            tools,
            thinking,
            temperature,
            stop_sequences: request.stop.as_deref().filter(|s| !s.is_empty()),
            stream: true,
        };
        serde_json::to_vec(&body).map_err(|e| {
            LlmError::new(
                LlmErrorKind::InvalidRequest,
                format!("llm-anthropic: cannot serialize the request: {e}"),
            )
        })
    })
}

/// [`request_bytes`] read back as a JSON value, for inspection and tests.
///
/// # Errors
/// As [`request_bytes`].
pub fn request_body(request: &ModelRequest, config: &AnthropicConfig) -> Result<Value, LlmError> {
    let bytes = request_bytes(request, config)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        LlmError::new(
            LlmErrorKind::InvalidRequest,
            format!("llm-anthropic: cannot read the request back: {e}"),
        )
    })
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<Vec<Block<'a>>>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<Tool<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_sequences: Option<&'a [String]>,
    stream: bool,
}

#[derive(Serialize, Clone, Copy)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize, Clone, Copy)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Part<'a>>,
}

/// A content block: a typed one, or one passed back verbatim.
#[derive(Serialize)]
#[serde(untagged)]
enum Part<'a> {
    Typed(Block<'a>),
    Verbatim(&'a Map<String, Value>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a RawValue,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: Vec<Block<'a>>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ImageSource<'a> {
    Base64 { media_type: &'a str, data: &'a str },
    Url { url: &'a str },
}

impl Part<'_> {
    fn is_tool_result(&self) -> bool {
        matches!(self, Part::Typed(Block::ToolResult { .. }))
    }

    /// Sets the block's breakpoint; `false` for a block that cannot carry
    /// one (thinking, verbatim).
    fn set_cache(&mut self) -> bool {
        let slot = match self {
            Part::Typed(Block::Text { cache_control, .. })
            | Part::Typed(Block::Image { cache_control, .. })
            | Part::Typed(Block::ToolUse { cache_control, .. })
            | Part::Typed(Block::ToolResult { cache_control, .. }) => cache_control,
            Part::Typed(Block::Thinking { .. }) | Part::Verbatim(_) => return false,
        };
        *slot = Some(EPHEMERAL);
        true
    }
}

/// The `messages` array: roles alternate, tool results lead their message.
fn wire_messages(history: &[std::sync::Arc<Message>], images: bool) -> Vec<WireMessage<'_>> {
    let mut out: Vec<WireMessage<'_>> = Vec::with_capacity(history.len());
    for m in history {
        let (role, parts) = match m.role {
            Role::Assistant => ("assistant", assistant_parts(&m.content)),
            Role::User | Role::System => ("user", user_parts(&m.content, images)),
        };
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(parts),
            _ => out.push(WireMessage {
                role,
                content: parts,
            }),
        }
    }
    for m in &mut out {
        if m.role == "user" && m.content.iter().skip(1).any(Part::is_tool_result) {
            // Stable: results keep their order, the rest theirs.
            let (mut results, rest): (Vec<_>, Vec<_>) =
                m.content.drain(..).partition(Part::is_tool_result);
            results.extend(rest);
            m.content = results;
        }
    }
    out
}

/// Puts a breakpoint on the last block of each of the last `n` user
/// messages.
fn mark_last_user_turns(messages: &mut [WireMessage<'_>], n: usize) {
    let mut left = n;
    for m in messages.iter_mut().rev() {
        if left == 0 {
            break;
        }
        if m.role != "user" {
            continue;
        }
        if m.content.last_mut().is_some_and(Part::set_cache) {
            left -= 1;
        }
    }
}

fn user_parts(content: &[ContentBlock], images: bool) -> Vec<Part<'_>> {
    let mut parts = Vec::with_capacity(content.len());
    for b in content {
        match b {
            ContentBlock::Text(t) if !t.text.is_empty() => parts.push(Part::Typed(text(&t.text))),
            ContentBlock::Image(i) => parts.push(Part::Typed(image(i, images))),
            ContentBlock::ToolResult(r) => {
                let mut content: Vec<Block<'_>> = r
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) if !t.text.is_empty() => Some(text(&t.text)),
                        ContentBlock::Image(i) => Some(image(i, images)),
                        _ => None,
                    })
                    .collect();
                if content.is_empty() {
                    content.push(text("(no output)"));
                }
                parts.push(Part::Typed(Block::ToolResult {
                    tool_use_id: r.tool_call_id.as_str(),
                    content,
                    is_error: r.is_error == Some(true),
                    cache_control: None,
                }));
            }
            // Empty text, reasoning, tool calls and unknown kinds have no
            // place in a user turn.
            _ => {}
        }
    }
    parts
}

fn assistant_parts(content: &[ContentBlock]) -> Vec<Part<'_>> {
    let mut parts = Vec::with_capacity(content.len());
    for b in content {
        match b {
            ContentBlock::Text(t) if !t.text.is_empty() => parts.push(Part::Typed(text(&t.text))),
            ContentBlock::Reasoning(r) => {
                if let Some(signature) = r.signature.as_deref().filter(|s| !s.is_empty()) {
                    parts.push(Part::Typed(Block::Thinking {
                        thinking: &r.text,
                        signature,
                    }));
                }
            }
            ContentBlock::ToolCall(c) => parts.push(Part::Typed(Block::ToolUse {
                id: c.call_id.as_str(),
                name: &c.name,
                input: tool_input(&c.arguments),
                cache_control: None,
            })),
            ContentBlock::Other { kind, data } if kind == REDACTED_THINKING => {
                parts.push(Part::Verbatim(data));
            }
            _ => {}
        }
    }
    parts
}

fn text(text: &str) -> Block<'_> {
    Block::Text {
        text: Cow::Borrowed(text),
        cache_control: None,
    }
}

/// The arguments as a JSON object, borrowed; `{}` when they are not one.
fn tool_input(arguments: &str) -> &RawValue {
    const EMPTY: &str = "{}";
    match serde_json::from_str::<&RawValue>(arguments) {
        Ok(raw) if raw.get().starts_with('{') => raw,
        _ => {
            if !arguments.trim().is_empty() {
                tracing::debug!(
                    "llm-anthropic: tool-call arguments are not a JSON object; sent as {{}}"
                );
            }
            // A literal `{}` always parses.
            serde_json::from_str::<&RawValue>(EMPTY).unwrap_or_else(|_| unreachable_raw())
        }
    }
}

#[cold]
fn unreachable_raw() -> &'static RawValue {
    // `{}` is valid JSON, so this is never reached; a static fallback keeps
    // the function total without a panic.
    static EMPTY: std::sync::OnceLock<Box<RawValue>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| RawValue::from_string("{}".to_string()).unwrap_or_default())
}

/// The image block for `image`, or the text note saying why it is left out.
fn image(image: &ImageBlock, takes_images: bool) -> Block<'_> {
    if !takes_images {
        return text(IMAGE_OMITTED);
    }
    let url = image.url.as_str();
    if let Some(rest) = url.strip_prefix("data:") {
        let Some((meta, data)) = rest.split_once(',') else {
            return omitted("the data URL has no data".into());
        };
        let Some(media) = meta.strip_suffix(";base64") else {
            return omitted("the data URL is not base64".into());
        };
        let media = if media.is_empty() {
            image.mime_type.as_deref().unwrap_or_default()
        } else {
            media
        };
        if !IMAGE_TYPES.contains(&media) {
            return omitted(format!("type {media:?} is not one of jpeg, png, gif, webp"));
        }
        return Block::Image {
            source: ImageSource::Base64 {
                media_type: media,
                data,
            },
            cache_control: None,
        };
    }
    if url.starts_with("https://") || url.starts_with("http://") {
        return Block::Image {
            source: ImageSource::Url { url },
            cache_control: None,
        };
    }
    omitted("the URL is neither a data: nor an http(s) URL".into())
}

fn omitted(why: String) -> Block<'static> {
    Block::Text {
        text: Cow::Owned(format!("[image omitted: {why}]")),
        cache_control: None,
    }
}
