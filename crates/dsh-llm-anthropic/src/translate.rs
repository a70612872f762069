//! Translation of Anthropic stream events (SSE data payloads) into
//! [`StreamChunk`]s.
//!
//! Every Anthropic payload carries its event name as `"type"`, so the SSE
//! `event:` lines are not needed (the parser skips them). Events:
//!
//! | event | effect |
//! |---|---|
//! | `message_start` | usage: input, cache read, cache write tokens |
//! | `content_block_start` | `block-start` (`text`, `reasoning` for `thinking`, `tool-call` for `tool_use` with a first delta carrying id and name, the block's own type for any other) |
//! | `content_block_delta` | `text_delta` → text, `thinking_delta` → reasoning, `input_json_delta` → tool-call arguments, `signature_delta` → the reasoning block's signature |
//! | `content_block_stop` | `block-end` with the assembled block (authoritative: a reasoning block carries its signature; a `redacted_thinking` or unknown block is kept whole as [`ContentBlock::Other`]) |
//! | `message_delta` | stop reason, usage (output tokens; any other count it repeats replaces the earlier one) |
//! | `message_stop` | `block-end` of any block still open, `usage`, `finish`; the translator is done |
//! | `ping` | nothing |
//! | `error` | the stream fails with the mapped error ([`api_error_kind`]): `overloaded_error` is `SERVER` |
//!
//! Lenience: a delta for a block never started opens one of the delta's
//! kind; a delta of the wrong kind for its block is ignored; a payload that
//! is JSON but not an object, or an unknown event type, is ignored. Only
//! text that is not JSON (or an object of the wrong shape) is an error.
//!
//! Fast path: most payloads are one delta, identical to the previous one
//! except for the fragment string. After such a payload the translator keeps
//! the bytes before and after the fragment; a payload with the same bytes
//! around a middle free of `"`, `\` and control characters parses to the
//! same event with the middle as fragment (the tokenizer meets the same
//! bytes in the same state), so it is applied without parsing.

use std::borrow::Cow;
use std::collections::HashMap;

use dsh_llm::lenient::{LInt, LObj, LStr, Top};
use dsh_llm::{
    ContentBlock, FinishReason, LlmError, LlmErrorKind, ReasoningBlock, StreamChunk, TextBlock,
    TokenUsage, ToolCall,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::request::REDACTED_THINKING;

/// Translates Anthropic SSE data payloads into stream chunks.
///
/// Feed every payload to [`Translator::push`]; chunks are appended to the
/// caller's buffer. Guarantees: block indices `0,1,2,…` by first appearance
/// (the wire's own indices are only keys), a `block-start` before each
/// block's other chunks, a `block-end` at each `content_block_stop` (and for
/// blocks still open at `message_stop`), then `usage` (when any was
/// reported) and exactly one `finish` at `message_stop`. Nothing is emitted
/// after that.
#[derive(Debug, Default)]
pub struct Translator {
    /// Open blocks.
    open: Vec<Open>,
    /// Wire index → position in `open`, for streams with many open blocks.
    positions: HashMap<i64, usize>,
    /// The last wire index looked up and its position.
    last: Option<(i64, usize)>,
    next_index: u32,
    usage: UsageCounts,
    stop: Option<FinishReason>,
    done: bool,
    template: Option<Template>,
}

/// A one-fragment delta payload around its string.
#[derive(Debug)]
struct Template {
    /// Ends with the fragment's opening quote.
    prefix: String,
    /// Starts with its closing quote.
    suffix: String,
    wire: i64,
    kind: DeltaKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeltaKind {
    Text,
    Thinking,
    InputJson,
    Signature,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Thinking,
    ToolUse,
    /// `redacted_thinking` or a type this crate does not know: kept whole.
    Opaque,
}

#[derive(Debug)]
struct Open {
    wire: i64,
    index: u32,
    kind: Kind,
    /// Text, thinking, or tool-call arguments.
    text: String,
    signature: String,
    id: String,
    name: String,
    /// The `input` of a `tool_use` start, used when no argument delta came.
    start_input: Option<String>,
    /// The start object of an opaque block.
    data: Map<String, Value>,
}

#[derive(Debug, Default, Clone, Copy)]
struct UsageCounts {
    seen: bool,
    input: Option<i64>,
    output: Option<i64>,
    cache_read: Option<i64>,
    cache_write: Option<i64>,
}

/// Above this many open blocks the position map is consulted.
const SCAN_LIMIT: usize = 8;

impl Translator {
    /// A translator at the start of a response.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `message_stop` was processed (the chunk stream is complete).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Processes one payload, appending the chunks it produces to `out`.
    /// Payloads after `message_stop` are ignored.
    ///
    /// # Errors
    /// `MALFORMED_RESPONSE` (`malformed SSE payload: <first 120 chars>`)
    /// when the payload is not JSON or an object of the wrong shape; the
    /// mapped error of an `error` event (message `<message> (<type>)`).
    pub fn push(&mut self, payload: &str, out: &mut Vec<StreamChunk>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        if let Some((fragment, wire, kind)) = self.fill(payload) {
            self.delta(wire, kind, fragment, out);
            return Ok(());
        }
        let event = match serde_json::from_str::<Top<Event<'_>>>(payload) {
            Ok(Top::Object(e)) => e,
            // A scalar or an array: nothing Anthropic sends, ignored.
            Ok(Top::Other) => return Ok(()),
            Ok(Top::Null) | Err(_) => return Err(malformed(payload)),
        };
        self.template = None;
        match event.kind.0.as_deref() {
            Some("content_block_delta") => {
                let Some(delta) = event.delta.0 else {
                    return Ok(());
                };
                let (kind, fragment) = match delta.kind.0.as_deref() {
                    Some("text_delta") => (DeltaKind::Text, delta.text),
                    Some("thinking_delta") => (DeltaKind::Thinking, delta.thinking),
                    Some("input_json_delta") => (DeltaKind::InputJson, delta.partial_json),
                    Some("signature_delta") => (DeltaKind::Signature, delta.signature),
                    _ => return Ok(()),
                };
                let Some(fragment) = fragment.0 else {
                    return Ok(());
                };
                let wire = event.index.0.unwrap_or(0);
                if let Cow::Borrowed(f) = &fragment {
                    self.template = template_of(payload, f, wire, kind);
                }
                self.delta(wire, kind, &fragment, out);
            }
            Some("content_block_start") => {
                let block = match event.content_block {
                    Some(Value::Object(map)) => map,
                    _ => Map::new(),
                };
                self.start(event.index.0.unwrap_or(0), block, out);
            }
            Some("content_block_stop") => {
                let wire = event.index.0.unwrap_or(0);
                if let Some(pos) = self.find(wire) {
                    self.close(pos, out);
                }
            }
            Some("message_start") => {
                if let Some(usage) = event.message.as_ref().and_then(|m| m.get("usage")) {
                    self.usage.record(usage);
                }
            }
            Some("message_delta") => {
                let reason = event
                    .delta
                    .0
                    .as_ref()
                    .and_then(|d| d.stop_reason.0.as_deref());
                if let Some(reason) = reason {
                    self.stop = Some(map_stop_reason(reason));
                }
                if let Some(usage) = &event.usage {
                    self.usage.record(usage);
                }
            }
            Some("message_stop") => self.end(out),
            Some("error") => {
                let error = event.error.unwrap_or(Value::Null);
                let field = |k: &str| error.get(k).and_then(Value::as_str).unwrap_or("");
                return Err(api_error(None, field("type"), field("message")));
            }
            // `ping` and event types added later.
            _ => {}
        }
        Ok(())
    }

    /// Ends a payload sequence.
    ///
    /// # Errors
    /// `STREAM_CLOSED` (`SSE stream ended without message_stop`) unless
    /// `message_stop` was processed.
    pub fn finish(&self) -> Result<(), LlmError> {
        if self.done {
            Ok(())
        } else {
            Err(LlmError::new(
                LlmErrorKind::StreamClosed,
                STREAM_ENDED_EARLY,
            ))
        }
    }

    /// The fragment, wire index and kind of a payload fitting the template.
    fn fill<'p>(&self, payload: &'p str) -> Option<(&'p str, i64, DeltaKind)> {
        let t = self.template.as_ref()?;
        let middle = payload
            .strip_prefix(t.prefix.as_str())?
            .strip_suffix(t.suffix.as_str())?;
        let plain = middle.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\');
        plain.then_some((middle, t.wire, t.kind))
    }

    /// The position of the open block with wire index `wire`.
    fn find(&mut self, wire: i64) -> Option<usize> {
        if let Some((w, pos)) = self.last {
            if w == wire {
                return Some(pos);
            }
        }
        let pos = if self.open.len() <= SCAN_LIMIT {
            self.open.iter().position(|b| b.wire == wire)
        } else {
            self.positions.get(&wire).copied()
        }?;
        self.last = Some((wire, pos));
        Some(pos)
    }

    /// Opens a block and emits its `block-start`; returns its position.
    fn open(&mut self, wire: i64, kind: Kind, tag: &str, out: &mut Vec<StreamChunk>) -> usize {
        // A start for a wire index that is still open closes the old block.
        if let Some(pos) = self.find(wire) {
            self.close(pos, out);
        }
        let index = self.next_index;
        self.next_index = self.next_index.saturating_add(1);
        out.push(StreamChunk::BlockStart {
            index,
            block_type: tag.to_string(),
        });
        self.open.push(Open {
            wire,
            index,
            kind,
            text: String::new(),
            signature: String::new(),
            id: String::new(),
            name: String::new(),
            start_input: None,
            data: Map::new(),
        });
        let pos = self.open.len() - 1;
        if self.open.len() > SCAN_LIMIT {
            if self.positions.len() + 1 < self.open.len() {
                self.reindex();
            } else {
                self.positions.insert(wire, pos);
            }
        }
        self.last = Some((wire, pos));
        pos
    }

    fn reindex(&mut self) {
        self.positions = self
            .open
            .iter()
            .enumerate()
            .map(|(pos, b)| (b.wire, pos))
            .collect();
    }

    /// `content_block_start`.
    fn start(&mut self, wire: i64, block: Map<String, Value>, out: &mut Vec<StreamChunk>) {
        let str_field = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("");
        let tag = str_field("type").to_string();
        match tag.as_str() {
            "text" => {
                let initial = str_field("text").to_string();
                let pos = self.open(wire, Kind::Text, "text", out);
                if !initial.is_empty() {
                    self.append(pos, DeltaKind::Text, &initial, out);
                }
            }
            "thinking" => {
                let initial = str_field("thinking").to_string();
                let signature = str_field("signature").to_string();
                let pos = self.open(wire, Kind::Thinking, "reasoning", out);
                self.open[pos].signature = signature;
                if !initial.is_empty() {
                    self.append(pos, DeltaKind::Thinking, &initial, out);
                }
            }
            "tool_use" => {
                let (id, name) = (str_field("id").to_string(), str_field("name").to_string());
                let start_input = block
                    .get("input")
                    .filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
                    .map(Value::to_string);
                let pos = self.open(wire, Kind::ToolUse, "tool-call", out);
                let b = &mut self.open[pos];
                b.id = if id.is_empty() {
                    format!("call-{}", b.index)
                } else {
                    id
                };
                b.name = name;
                b.start_input = start_input;
                // The first delta announces the id and name.
                out.push(StreamChunk::ToolCallDelta {
                    index: b.index,
                    id: b.id.clone(),
                    name: Some(b.name.clone()),
                    arguments_delta: String::new(),
                });
            }
            _ => {
                let tag = if tag.is_empty() {
                    "unknown".into()
                } else {
                    tag
                };
                let pos = self.open(wire, Kind::Opaque, &tag, out);
                let mut data = block;
                data.insert("type".into(), Value::String(tag));
                self.open[pos].data = data;
            }
        }
    }

    /// `content_block_delta`.
    fn delta(&mut self, wire: i64, kind: DeltaKind, fragment: &str, out: &mut Vec<StreamChunk>) {
        let pos = match self.find(wire) {
            Some(pos) => pos,
            None => match kind {
                DeltaKind::Text => self.open(wire, Kind::Text, "text", out),
                DeltaKind::Thinking | DeltaKind::Signature => {
                    self.open(wire, Kind::Thinking, "reasoning", out)
                }
                DeltaKind::InputJson => {
                    let mut block = Map::new();
                    block.insert("type".into(), Value::from("tool_use"));
                    self.start(wire, block, out);
                    self.open.len() - 1
                }
            },
        };
        self.append(pos, kind, fragment, out);
    }

    fn append(&mut self, pos: usize, kind: DeltaKind, fragment: &str, out: &mut Vec<StreamChunk>) {
        let b = &mut self.open[pos];
        match (b.kind, kind) {
            (Kind::Text, DeltaKind::Text) => {
                b.text.push_str(fragment);
                out.push(StreamChunk::TextDelta {
                    index: b.index,
                    text: fragment.to_string(),
                });
            }
            (Kind::Thinking, DeltaKind::Thinking) => {
                b.text.push_str(fragment);
                out.push(StreamChunk::ReasoningDelta {
                    index: b.index,
                    text: fragment.to_string(),
                });
            }
            (Kind::Thinking, DeltaKind::Signature) => b.signature.push_str(fragment),
            (Kind::ToolUse, DeltaKind::InputJson) => {
                if fragment.is_empty() {
                    return;
                }
                b.text.push_str(fragment);
                out.push(StreamChunk::ToolCallDelta {
                    index: b.index,
                    id: b.id.clone(),
                    name: Some(b.name.clone()),
                    arguments_delta: fragment.to_string(),
                });
            }
            // A delta of another kind than its block: ignored.
            _ => {}
        }
    }

    /// Closes the block at `pos`, emitting its `block-end`.
    fn close(&mut self, pos: usize, out: &mut Vec<StreamChunk>) {
        let mut b = self.open.remove(pos);
        self.last = None;
        if self.open.len() > SCAN_LIMIT {
            self.reindex();
        } else {
            self.positions.clear();
        }
        let block = match b.kind {
            Kind::Text => ContentBlock::Text(TextBlock {
                text: b.text,
                cache: None,
            }),
            Kind::Thinking => ContentBlock::Reasoning(ReasoningBlock {
                text: b.text,
                signature: (!b.signature.is_empty()).then_some(b.signature),
            }),
            Kind::ToolUse => {
                if b.text.is_empty() {
                    // No argument delta: the start's input, else `{}`.
                    let args = b.start_input.take().unwrap_or_else(|| "{}".to_string());
                    out.push(StreamChunk::ToolCallDelta {
                        index: b.index,
                        id: b.id.clone(),
                        name: Some(b.name.clone()),
                        arguments_delta: args.clone(),
                    });
                    b.text = args;
                }
                ContentBlock::ToolCall(ToolCall {
                    call_id: b.id.into(),
                    name: b.name,
                    arguments: b.text,
                })
            }
            Kind::Opaque => {
                let kind = b
                    .data
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or(REDACTED_THINKING)
                    .to_string();
                ContentBlock::Other { kind, data: b.data }
            }
        };
        out.push(StreamChunk::BlockEnd {
            index: b.index,
            block,
        });
    }

    /// `message_stop`.
    fn end(&mut self, out: &mut Vec<StreamChunk>) {
        self.done = true;
        self.template = None;
        // Close in index order (= opening order = `open` order).
        while !self.open.is_empty() {
            self.close(0, out);
        }
        if let Some(usage) = self.usage.total() {
            out.push(StreamChunk::Usage { usage });
        }
        out.push(StreamChunk::Finish {
            reason: self.stop.take().unwrap_or(FinishReason::Stop),
        });
    }
}

/// The message of the `STREAM_CLOSED` error of a stream without
/// `message_stop`.
pub const STREAM_ENDED_EARLY: &str = "llm-anthropic: SSE stream ended without message_stop";

impl UsageCounts {
    /// Records the counts present in a wire `usage` object (later reports
    /// replace earlier ones: `message_delta` counts are cumulative).
    fn record(&mut self, usage: &Value) {
        let Some(u) = usage.as_object() else {
            return;
        };
        let int = |k: &str| u.get(k).and_then(Value::as_i64);
        for (slot, key) in [
            (&mut self.input, "input_tokens"),
            (&mut self.output, "output_tokens"),
            (&mut self.cache_read, "cache_read_input_tokens"),
            (&mut self.cache_write, "cache_creation_input_tokens"),
        ] {
            if let Some(n) = int(key) {
                *slot = Some(n);
                self.seen = true;
            }
        }
    }

    /// dsh's usage: Anthropic's `input_tokens` already excludes the cached
    /// input, so the three input counts map one to one.
    fn total(&self) -> Option<TokenUsage> {
        self.seen.then(|| TokenUsage {
            input_tokens: self.input.unwrap_or(0),
            output_tokens: self.output.unwrap_or(0),
            cache_read_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
            reasoning_tokens: None,
        })
    }
}

/// The template of a one-fragment delta payload, when the fragment is the
/// literal's contents as they stand in `payload`.
fn template_of(payload: &str, fragment: &str, wire: i64, kind: DeltaKind) -> Option<Template> {
    let start = (fragment.as_ptr() as usize).checked_sub(payload.as_ptr() as usize)?;
    let end = start + fragment.len();
    let (prefix, suffix) = (payload.get(..start)?, payload.get(end..)?);
    if !prefix.ends_with('"') || !suffix.starts_with('"') {
        return None;
    }
    Some(Template {
        prefix: prefix.to_string(),
        suffix: suffix.to_string(),
        wire,
        kind,
    })
}

/// `MALFORMED_RESPONSE` with the first 120 characters of the payload.
fn malformed(payload: &str) -> LlmError {
    let excerpt: String = payload.chars().take(120).collect();
    LlmError::new(
        LlmErrorKind::MalformedResponse,
        format!("malformed SSE payload: {excerpt}"),
    )
}

/// Maps a wire `stop_reason`: `end_turn` and `stop_sequence` → stop,
/// `max_tokens` → max-tokens, `tool_use` → tool-calls, `refusal` → an
/// in-band error with code `CONTENT_FILTER`, any other → an in-band error
/// whose code is the reason in upper case.
pub fn map_stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::MaxTokens,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::Error {
            message: "the model declined to answer (refusal)".into(),
            code: Some("CONTENT_FILTER".into()),
        },
        other => FinishReason::Error {
            message: format!("model stopped: {other}"),
            code: Some(other.to_uppercase()),
        },
    }
}

/// The error kind of an Anthropic error object `{type, message}`, with the
/// HTTP status when it came with one.
///
/// By type: `authentication_error` / `permission_error` → `AUTH`,
/// `rate_limit_error` → `RATE_LIMIT`, `overloaded_error` / `api_error` →
/// `SERVER`, `invalid_request_error` → `CONTEXT_WINDOW_EXCEEDED` when the
/// message says the prompt is too long, else `INVALID_REQUEST`,
/// `request_too_large` → `INVALID_REQUEST`. Without a known type, by
/// status: 401/403 `AUTH`, 429 `RATE_LIMIT`, 400/413 as above, ≥500 (529
/// included) `SERVER`, others `HTTP_<n>`; an unknown type in a stream is
/// `SERVER`.
pub fn api_error_kind(status: Option<u16>, kind: &str, message: &str) -> LlmErrorKind {
    let invalid = || {
        if is_context_overflow(message) {
            LlmErrorKind::ContextWindowExceeded
        } else {
            LlmErrorKind::InvalidRequest
        }
    };
    match kind {
        "authentication_error" | "permission_error" => return LlmErrorKind::Auth,
        "rate_limit_error" => return LlmErrorKind::RateLimit,
        "overloaded_error" | "api_error" => return LlmErrorKind::Server,
        "invalid_request_error" | "request_too_large" => return invalid(),
        _ => {}
    }
    match status {
        None => LlmErrorKind::Server,
        Some(401 | 403) => LlmErrorKind::Auth,
        Some(429) => LlmErrorKind::RateLimit,
        Some(400 | 413) => invalid(),
        Some(s) if s >= 500 => LlmErrorKind::Server,
        Some(s) => LlmErrorKind::Http(s),
    }
}

/// The error for an Anthropic error object: kind by [`api_error_kind`],
/// message `<message> (<type>)` (`Anthropic API error (HTTP <n>)` or
/// `Anthropic API error` when there is no message).
pub(crate) fn api_error(status: Option<u16>, kind: &str, message: &str) -> LlmError {
    let mut text = if message.is_empty() {
        match status {
            Some(s) => format!("Anthropic API error (HTTP {s})"),
            None => "Anthropic API error".to_string(),
        }
    } else {
        message.to_string()
    };
    if !kind.is_empty() {
        text.push_str(&format!(" ({kind})"));
    }
    let err = LlmError::new(api_error_kind(status, kind, message), text);
    match status {
        Some(s) => err.with_status(s),
        None => err,
    }
}

/// Whether an error message says the prompt does not fit the context
/// ("prompt is too long: 208310 tokens > 200000 maximum", "input length and
/// `max_tokens` exceed context limit").
fn is_context_overflow(message: &str) -> bool {
    dsh_llm::http::is_context_overflow(None, Some(message))
        || message
            .to_ascii_lowercase()
            .contains("exceed context limit")
}

// ---------------------------------------------------------------------------
// Wire types: borrowed where the hot path reads them, owned values for the
// rare events.

#[derive(Deserialize, Default)]
struct Event<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: LStr<'a>,
    #[serde(default)]
    index: LInt,
    #[serde(default, borrow)]
    delta: LObj<Delta<'a>>,
    #[serde(default)]
    content_block: Option<Value>,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize, Default)]
struct Delta<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: LStr<'a>,
    #[serde(default, borrow)]
    text: LStr<'a>,
    #[serde(default, borrow)]
    thinking: LStr<'a>,
    #[serde(default, borrow)]
    partial_json: LStr<'a>,
    #[serde(default, borrow)]
    signature: LStr<'a>,
    #[serde(default, borrow)]
    stop_reason: LStr<'a>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(text: &str) -> String {
        format!(
            r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{text}"}}}}"#
        )
    }

    #[test]
    fn one_fragment_payloads_leave_a_template_later_ones_fill() {
        let mut t = Translator::new();
        let mut out = Vec::new();
        t.push(&delta("Hello"), &mut out).unwrap();
        let tpl = t.template.as_ref().expect("a template");
        assert!(tpl.prefix.ends_with(r#""text":""#), "{}", tpl.prefix);
        assert_eq!(tpl.suffix, r#""}}"#);
        assert_eq!(t.fill(&delta(" world")).map(|f| f.0), Some(" world"));
        assert_eq!(t.fill(&delta("")).map(|f| f.0), Some(""));
        for refused in [r#"q"uote"#, r#"a\"b"#, "raw\ttab"] {
            assert!(t.fill(&delta(refused)).is_none(), "{refused:?}");
        }
        // An escaped fragment is parsed and leaves no template.
        t.push(&delta(r#"a\nb"#), &mut out).unwrap();
        assert!(t.template.is_none());
    }
}
