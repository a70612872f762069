//! Translation of OpenAI chat-completions stream chunks (SSE data payloads)
//! into [`StreamChunk`]s, tolerant of the ways compatible servers differ.
//!
//! Wire chunks are deserialized into borrowed, lenient structs
//! ([`dsh_llm::lenient`]): a field of an unexpected type reads as absent, so
//! no well-formed JSON makes translation fail or panic; only text that is
//! not JSON, or the JSON `null`, is `MALFORMED_RESPONSE`.
//!
//! Most payloads are one delta: the previous payload's bytes with one
//! string value changed (a content, reasoning or argument fragment). After a
//! payload whose only effect is such a fragment the translator keeps a
//! [`Template`] (the bytes around that string); a later payload with the
//! same bytes around a middle holding no `"`, `\` or control character is
//! the same chunk with another fragment, and is applied without parsing
//! (the technique of the DeepSeek adapter's translator).

use std::borrow::Cow;
use std::collections::HashMap;

use dsh_llm::lenient::{LArr, LInt, LObj, LStr, Top};
use dsh_llm::sse::DONE;
use dsh_llm::{
    ContentBlock, FinishReason, LlmError, LlmErrorKind, ReasoningBlock, StreamChunk, TextBlock,
    TokenUsage, ToolCall,
};
use serde::Deserialize;
use serde_json::value::RawValue;

/// Translates SSE data payloads into stream chunks.
///
/// Feed every payload to [`Translator::push`] and call
/// [`Translator::finish`] when the byte stream ends. Guarantees: block
/// indices `0,1,2,…` by first appearance, a `block-start` before each
/// block's first delta, at most one text and one reasoning block; every
/// tool-call delta carries the call's id (the wire id of its first delta, or
/// a made-up `call_<index>` when that delta had none); `block-end`s (in
/// index order), then `usage` (if any; the last one wins), then exactly one
/// `finish`, all emitted at `[DONE]` (or at [`finish`](Translator::finish)
/// after a `finish_reason`). Nothing is emitted after that.
///
/// Tool-call deltas are matched to calls by wire `index`; a delta without
/// `index` by `id`, and one with neither continues the last call. A delta
/// whose `index` names a call with a different wire id starts a new call.
/// `arguments` sent as a JSON object (or any non-string value) is taken as
/// its JSON text. A fragment that is a complete JSON value equal to the
/// call's arguments so far, when those are already complete JSON, is a
/// re-send and dropped.
#[derive(Debug, Default)]
pub struct Translator {
    next_index: u32,
    reasoning: Option<OpenText>,
    text: Option<OpenText>,
    tools: Vec<OpenTool>,
    /// Wire `index` → position in `tools`.
    by_index: HashMap<i64, usize>,
    /// Wire `id` → position in `tools`.
    by_id: HashMap<String, usize>,
    /// Opening order of blocks (= index order).
    opened: Vec<Opened>,
    pending_finish: Option<FinishReason>,
    pending_usage: Option<TokenUsage>,
    /// Whether any data payload (other than `[DONE]`) arrived.
    saw_payload: bool,
    done: bool,
    /// The shape of the last one-fragment payload (see the module docs).
    template: Option<Template>,
}

/// A one-fragment payload around its string: `prefix` ends with the opening
/// quote, `suffix` starts with the closing one.
#[derive(Debug)]
struct Template {
    prefix: String,
    suffix: String,
    hole: Hole,
}

/// Which field the fragment of a [`Template`] is.
#[derive(Debug, Clone, Copy)]
enum Hole {
    Reasoning,
    Content,
    /// `arguments` of the only tool call, at this wire `index` (if any),
    /// without `id` or `name`.
    Arguments(Option<i64>),
}

#[derive(Debug)]
struct OpenText {
    index: u32,
    text: String,
}

#[derive(Debug)]
struct OpenTool {
    index: u32,
    /// The id every delta carries (the wire id of the first delta, or a
    /// made-up one).
    id: String,
    /// Whether `id` came from the wire.
    wire_id: bool,
    name: Option<String>,
    arguments: String,
}

#[derive(Debug, Clone, Copy)]
enum Opened {
    Reasoning,
    Text,
    Tool(usize),
}

impl Translator {
    /// A translator at the start of a response.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the chunk stream is complete (`[DONE]` processed, or
    /// [`finish`](Self::finish) ended it).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether a `finish_reason` arrived (the model finished; only usage
    /// and `[DONE]` may follow).
    pub fn saw_finish(&self) -> bool {
        self.pending_finish.is_some()
    }

    /// Whether any data payload other than `[DONE]` was pushed.
    pub fn saw_payload(&self) -> bool {
        self.saw_payload
    }

    /// Processes one payload, appending the chunks it produces to `out`.
    /// Payloads after the end are ignored.
    ///
    /// # Errors
    /// `MALFORMED_RESPONSE` (`malformed SSE payload: <first 120 chars>`) when
    /// the payload is not JSON or is `null`; for an `{"error": …}` payload
    /// (a server failing mid-stream) the error it describes: its numeric
    /// `code` (or `status`) mapped like an HTTP status
    /// ([`dsh_llm::http::status_error`]), else `SERVER`, with its message.
    pub fn push(&mut self, payload: &str, out: &mut Vec<StreamChunk>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        if payload == DONE {
            self.end_of_stream(out);
            return Ok(());
        }
        self.saw_payload = true;
        if let Some((fragment, hole)) = self.fill(payload) {
            self.apply(hole.chunk(fragment), out);
            return Ok(());
        }
        let chunk = match serde_json::from_str::<Top<WireChunk<'_>>>(payload) {
            Ok(Top::Object(c)) => c,
            Ok(Top::Other) => return Ok(()),
            Ok(Top::Null) | Err(_) => return Err(malformed(payload)),
        };
        if let Some(error) = chunk.error {
            return Err(stream_error(error.get(), payload));
        }
        self.template = template_of(&chunk, payload);
        self.apply(chunk, out);
        Ok(())
    }

    /// Ends the payload sequence when the byte stream ended. After
    /// `[DONE]` nothing happens; after a `finish_reason` without `[DONE]`
    /// the stream is finished normally (the block-ends, usage and finish
    /// are appended to `out`): the model's answer is complete, only the end
    /// marker was lost.
    ///
    /// # Errors
    /// `NETWORK` (transient, so retried while no output was delivered) when
    /// neither `[DONE]` nor a `finish_reason` arrived: the connection closed
    /// mid-answer.
    pub fn finish(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        if self.pending_finish.is_some() {
            self.end_of_stream(out);
            return Ok(());
        }
        Err(LlmError::new(
            LlmErrorKind::Network,
            "the stream ended before the model finished (no finish_reason and no [DONE])",
        ))
    }

    /// The fragment of `payload` when it fits the template.
    fn fill<'p>(&self, payload: &'p str) -> Option<(&'p str, Hole)> {
        let t = self.template.as_ref()?;
        let middle = payload
            .strip_prefix(t.prefix.as_str())?
            .strip_suffix(t.suffix.as_str())?;
        let plain = middle.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\');
        plain.then_some((middle, t.hole))
    }

    /// The effect of one parsed chunk.
    fn apply(&mut self, chunk: WireChunk<'_>, out: &mut Vec<StreamChunk>) {
        // Only the first choice: dsh asks for one (`n` is never sent).
        if let Some(choice) = chunk.choices.0.into_iter().next() {
            let delta = choice.delta.0.unwrap_or_default();
            if let Some(r) = delta.reasoning_text() {
                let index = open_text(
                    &mut self.reasoning,
                    &mut self.next_index,
                    &mut self.opened,
                    Opened::Reasoning,
                    out,
                );
                if let Some(b) = &mut self.reasoning {
                    b.text.push_str(&r);
                }
                out.push(StreamChunk::ReasoningDelta {
                    index,
                    text: r.into_owned(),
                });
            }
            if let Some(c) = delta.content.0.filter(|s| !s.is_empty()) {
                let index = open_text(
                    &mut self.text,
                    &mut self.next_index,
                    &mut self.opened,
                    Opened::Text,
                    out,
                );
                if let Some(b) = &mut self.text {
                    b.text.push_str(&c);
                }
                out.push(StreamChunk::TextDelta {
                    index,
                    text: c.into_owned(),
                });
            }
            for call in delta.tool_calls.0 {
                self.tool_delta(call, out);
            }
            if let Some(reason) = choice.finish_reason.0 {
                self.pending_finish = Some(map_finish(&reason));
            }
        }
        if let Some(u) = chunk.usage.0 {
            self.pending_usage = Some(map_usage(&u));
        }
    }

    /// The slot of the call a delta belongs to, opening one when it is new.
    fn slot_for(
        &mut self,
        index: Option<i64>,
        id: Option<&str>,
        out: &mut Vec<StreamChunk>,
    ) -> usize {
        let known = match (index, id) {
            (Some(i), id) => self.by_index.get(&i).copied().filter(|&s| {
                // The same index with another wire id is another call.
                let t = &self.tools[s];
                !(t.wire_id && id.is_some_and(|id| id != t.id))
            }),
            (None, Some(id)) => self.by_id.get(id).copied(),
            (None, None) => self.tools.len().checked_sub(1),
        };
        if let Some(slot) = known {
            return slot;
        }
        let index_of_block = self.next_index;
        self.next_index = self.next_index.saturating_add(1);
        let (id, wire_id) = match id {
            Some(id) => (id.to_string(), true),
            None => (format!("call_{index_of_block}"), false),
        };
        let slot = self.tools.len();
        if wire_id {
            self.by_id.insert(id.clone(), slot);
        }
        if let Some(i) = index {
            self.by_index.insert(i, slot);
        }
        self.tools.push(OpenTool {
            index: index_of_block,
            id,
            wire_id,
            name: None,
            arguments: String::new(),
        });
        self.opened.push(Opened::Tool(slot));
        out.push(StreamChunk::BlockStart {
            index: index_of_block,
            block_type: "tool-call".to_string(),
        });
        slot
    }

    fn tool_delta(&mut self, call: WireToolCall<'_>, out: &mut Vec<StreamChunk>) {
        let id = call.id.0.filter(|s| !s.is_empty());
        let slot = self.slot_for(call.index.0, id.as_deref(), out);
        let function = call.function.0.unwrap_or_default();
        let tool = &mut self.tools[slot];
        if tool.name.is_none() {
            tool.name = function
                .name
                .0
                .filter(|n| !n.is_empty())
                .map(Cow::into_owned);
        }
        let fragment = match (function.fragment, function.arguments) {
            (Some(f), _) => Cow::Borrowed(f),
            (None, Some(raw)) => arguments_text(raw),
            (None, None) => Cow::Borrowed(""),
        };
        if is_resend(&tool.arguments, &fragment) {
            return;
        }
        tool.arguments.push_str(&fragment);
        out.push(StreamChunk::ToolCallDelta {
            index: tool.index,
            id: tool.id.clone(),
            name: tool.name.clone(),
            arguments_delta: fragment.into_owned(),
        });
    }

    fn end_of_stream(&mut self, out: &mut Vec<StreamChunk>) {
        self.done = true;
        let had_calls = !self.tools.is_empty();
        for opened in std::mem::take(&mut self.opened) {
            let (index, block) = match opened {
                Opened::Reasoning => match self.reasoning.take() {
                    Some(b) => (
                        b.index,
                        ContentBlock::Reasoning(ReasoningBlock {
                            text: b.text,
                            signature: None,
                        }),
                    ),
                    None => continue,
                },
                Opened::Text => match self.text.take() {
                    Some(b) => (
                        b.index,
                        ContentBlock::Text(TextBlock {
                            text: b.text,
                            cache: None,
                        }),
                    ),
                    None => continue,
                },
                Opened::Tool(slot) => {
                    let t = &mut self.tools[slot];
                    (
                        t.index,
                        ContentBlock::ToolCall(ToolCall {
                            call_id: std::mem::take(&mut t.id).into(),
                            name: t.name.take().unwrap_or_default(),
                            arguments: std::mem::take(&mut t.arguments),
                        }),
                    )
                }
            };
            out.push(StreamChunk::BlockEnd { index, block });
        }
        if let Some(usage) = self.pending_usage.take() {
            out.push(StreamChunk::Usage { usage });
        }
        let reason = match self.pending_finish.take() {
            // Some servers (llama.cpp, Ollama) say `stop` after tool calls.
            Some(FinishReason::Stop) | None if had_calls => FinishReason::ToolCalls,
            Some(r) => r,
            None => FinishReason::Stop,
        };
        out.push(StreamChunk::Finish { reason });
    }
}

fn open_text(
    slot: &mut Option<OpenText>,
    next_index: &mut u32,
    opened: &mut Vec<Opened>,
    kind: Opened,
    out: &mut Vec<StreamChunk>,
) -> u32 {
    if let Some(b) = slot {
        return b.index;
    }
    let index = *next_index;
    *next_index = next_index.saturating_add(1);
    *slot = Some(OpenText {
        index,
        text: String::new(),
    });
    opened.push(kind);
    out.push(StreamChunk::BlockStart {
        index,
        block_type: match kind {
            Opened::Reasoning => "reasoning",
            _ => "text",
        }
        .to_string(),
    });
    index
}

/// The text of an `arguments` value: a string's contents (borrowed when it
/// has no escapes), any other value's JSON text (an object some servers
/// send whole), nothing for `null`.
fn arguments_text(raw: &RawValue) -> Cow<'_, str> {
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') => serde_json::from_str::<Cow<'_, str>>(text).unwrap_or(Cow::Borrowed("")),
        Some(b'n') if text == "null" => Cow::Borrowed(""),
        _ => Cow::Borrowed(text),
    }
}

/// Whether `fragment` re-sends arguments already complete: both are whole
/// JSON values (cheap bracket checks first, so the common one-token
/// fragments never reach the parser) and equal.
fn is_resend(so_far: &str, fragment: &str) -> bool {
    fn bracketed(s: &str) -> bool {
        let s = s.trim();
        (s.starts_with('{') && s.ends_with('}')) || (s.starts_with('[') && s.ends_with(']'))
    }
    if so_far.is_empty() || !bracketed(fragment) || !bracketed(so_far) {
        return false;
    }
    let parse = |s: &str| serde_json::from_str::<serde_json::Value>(s).ok();
    match (parse(so_far), parse(fragment)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The template of a chunk whose only effect is one borrowed, non-empty
/// fragment (no finish, no usage, one choice; for a tool call, one call
/// without `id` or `name`).
fn template_of(chunk: &WireChunk<'_>, payload: &str) -> Option<Template> {
    if chunk.usage.0.is_some() {
        return None;
    }
    let [choice] = chunk.choices.0.as_slice() else {
        return None;
    };
    if choice.finish_reason.0.is_some() {
        return None;
    }
    let delta = choice.delta.0.as_ref()?;
    let effect = |s: &LStr<'_>| s.0.as_ref().is_some_and(|s| !s.is_empty());
    let fragment: &str = match (
        effect(&delta.reasoning_content),
        effect(&delta.reasoning),
        effect(&delta.content),
        delta.tool_calls.0.as_slice(),
    ) {
        (true, false, false, []) => borrowed(&delta.reasoning_content)?,
        (false, true, false, []) => borrowed(&delta.reasoning)?,
        (false, false, true, []) => borrowed(&delta.content)?,
        (false, false, false, [call]) => {
            let function = call.function.0.as_ref()?;
            if call.id.0.is_some() || function.name.0.is_some() {
                return None;
            }
            let raw = function.arguments?.get();
            // Only a string literal without escapes: its contents are
            // `raw` minus the quotes, in place in the payload.
            let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
            if inner.is_empty() || inner.contains('\\') {
                return None;
            }
            inner
        }
        _ => return None,
    };
    let hole = match (
        effect(&delta.reasoning_content) || effect(&delta.reasoning),
        effect(&delta.content),
        delta.tool_calls.0.first(),
    ) {
        (true, _, _) => Hole::Reasoning,
        (_, true, _) => Hole::Content,
        (_, _, Some(call)) => Hole::Arguments(call.index.0),
        _ => return None,
    };
    // A borrowed string is the literal's contents, in place in `payload`.
    let start = (fragment.as_ptr() as usize).checked_sub(payload.as_ptr() as usize)?;
    let end = start.checked_add(fragment.len())?;
    let (prefix, suffix) = (payload.get(..start)?, payload.get(end..)?);
    if !prefix.ends_with('"') || !suffix.starts_with('"') || payload.get(start..end)? != fragment {
        return None;
    }
    Some(Template {
        prefix: prefix.to_string(),
        suffix: suffix.to_string(),
        hole,
    })
}

/// The string of `s` when it is borrowed from the payload (held no escapes).
fn borrowed<'a>(s: &'a LStr<'_>) -> Option<&'a str> {
    match &s.0 {
        Some(Cow::Borrowed(b)) => Some(b),
        _ => None,
    }
}

impl Hole {
    /// The chunk a template payload with `fragment` in the hole parses to.
    fn chunk(self, fragment: &str) -> WireChunk<'_> {
        let text = LStr(Some(Cow::Borrowed(fragment)));
        let delta = match self {
            Hole::Reasoning => WireDelta {
                reasoning_content: text,
                ..WireDelta::default()
            },
            Hole::Content => WireDelta {
                content: text,
                ..WireDelta::default()
            },
            Hole::Arguments(index) => WireDelta {
                tool_calls: LArr(vec![WireToolCall {
                    index: LInt(index),
                    id: LStr(None),
                    function: LObj(Some(WireFunction {
                        name: LStr(None),
                        arguments: None,
                        fragment: Some(fragment),
                    })),
                }]),
                ..WireDelta::default()
            },
        };
        WireChunk {
            choices: LArr(vec![WireChoice {
                delta: LObj(Some(delta)),
                finish_reason: LStr(None),
            }]),
            usage: LObj(None),
            error: None,
        }
    }
}

/// `MALFORMED_RESPONSE` with the first 120 characters of the payload.
fn malformed(payload: &str) -> LlmError {
    let excerpt: String = payload.chars().take(120).collect();
    LlmError::new(
        LlmErrorKind::MalformedResponse,
        format!("malformed SSE payload: {excerpt}"),
    )
}

/// The error an in-stream `{"error": …}` object describes (see
/// [`Translator::push`]).
fn stream_error(error: &str, payload: &str) -> LlmError {
    let value: serde_json::Value = serde_json::from_str(error).unwrap_or_default();
    let message = value
        .get("message")
        .and_then(serde_json::Value::as_str)
        .or_else(|| value.as_str())
        .filter(|m| !m.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| {
            let excerpt: String = payload.chars().take(200).collect();
            format!("the server sent an error in the stream: {excerpt}")
        });
    let status = ["code", "status"]
        .iter()
        .filter_map(|k| value.get(*k).and_then(serde_json::Value::as_u64))
        .find(|s| (400..600).contains(s));
    let mut e = match status.and_then(|s| u16::try_from(s).ok()) {
        Some(status) => {
            let body = serde_json::json!({"error": {"message": message, "code": value.get("type").cloned()}});
            let mut e = dsh_llm::http::status_error("", status, body.to_string().as_bytes());
            e.status = None;
            e
        }
        None => {
            let code = value.get("code").and_then(serde_json::Value::as_str);
            let kind = if dsh_llm::http::is_context_overflow(code, Some(&message)) {
                LlmErrorKind::ContextWindowExceeded
            } else if code.is_some_and(|c| c.contains("rate_limit")) {
                LlmErrorKind::RateLimit
            } else {
                LlmErrorKind::Server
            };
            LlmError::new(kind, message.clone())
        }
    };
    e.message = message;
    e
}

/// Maps a wire `finish_reason`: `stop`, `length` (max tokens),
/// `tool_calls` and the legacy `function_call` (tool calls); anything else
/// (`content_filter`, `error`, …) is an in-band error with the reason in
/// upper case as its code (`CONTENT_FILTER`).
pub fn map_finish(reason: &str) -> FinishReason {
    match reason {
        "stop" | "eos" | "end_turn" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" | "max_tokens" => FinishReason::MaxTokens,
        other => FinishReason::Error {
            message: format!("model stopped: {other}"),
            code: Some(other.to_uppercase()),
        },
    }
}

fn map_usage(u: &WireUsage) -> TokenUsage {
    let cache_read = u
        .prompt_tokens_details
        .0
        .as_ref()
        .and_then(|d| d.cached_tokens.0);
    TokenUsage {
        input_tokens: u
            .prompt_tokens
            .0
            .unwrap_or(0)
            .saturating_sub(cache_read.unwrap_or(0))
            .max(0),
        output_tokens: u.completion_tokens.0.unwrap_or(0).max(0),
        cache_read_tokens: cache_read,
        cache_write_tokens: None,
        reasoning_tokens: u
            .completion_tokens_details
            .0
            .as_ref()
            .and_then(|d| d.reasoning_tokens.0),
    }
}

// ---------------------------------------------------------------------------
// Lenient borrowed wire types.

#[derive(Deserialize, Default)]
struct WireChunk<'a> {
    #[serde(default, borrow)]
    choices: LArr<WireChoice<'a>>,
    #[serde(default)]
    usage: LObj<WireUsage>,
    /// An error object (or string) a server sends instead of a chunk.
    #[serde(default, borrow, deserialize_with = "non_null_raw")]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct WireChoice<'a> {
    #[serde(default, borrow)]
    delta: LObj<WireDelta<'a>>,
    #[serde(default, borrow)]
    finish_reason: LStr<'a>,
}

#[derive(Deserialize, Default)]
struct WireDelta<'a> {
    #[serde(default, borrow)]
    reasoning_content: LStr<'a>,
    #[serde(default, borrow)]
    reasoning: LStr<'a>,
    #[serde(default, borrow)]
    content: LStr<'a>,
    #[serde(default, borrow)]
    tool_calls: LArr<WireToolCall<'a>>,
}

impl<'a> WireDelta<'a> {
    /// The reasoning fragment: `reasoning_content` (DeepSeek, vLLM before
    /// 0.10, LM Studio) when non-empty, else `reasoning` (OpenRouter,
    /// Ollama, newer vLLM). A server that sends both with the same text is
    /// counted once.
    fn reasoning_text(&self) -> Option<Cow<'a, str>> {
        let non_empty = |s: &LStr<'a>| s.0.clone().filter(|s| !s.is_empty());
        non_empty(&self.reasoning_content).or_else(|| non_empty(&self.reasoning))
    }
}

#[derive(Deserialize, Default)]
struct WireToolCall<'a> {
    #[serde(default)]
    index: LInt,
    #[serde(default, borrow)]
    id: LStr<'a>,
    #[serde(default, borrow)]
    function: LObj<WireFunction<'a>>,
}

#[derive(Deserialize, Default)]
struct WireFunction<'a> {
    #[serde(default, borrow)]
    name: LStr<'a>,
    /// The raw `arguments` value: a string, or an object some servers send.
    #[serde(default, borrow, deserialize_with = "non_null_raw")]
    arguments: Option<&'a RawValue>,
    /// A fragment filled in by a template (never deserialized).
    #[serde(skip)]
    fragment: Option<&'a str>,
}

/// `Option<&RawValue>` where `null` is `None`.
fn non_null_raw<'de, D>(d: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let raw = <&'de RawValue>::deserialize(d)?;
    Ok((raw.get() != "null").then_some(raw))
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: LInt,
    #[serde(default)]
    completion_tokens: LInt,
    #[serde(default)]
    prompt_tokens_details: LObj<WirePromptDetails>,
    #[serde(default)]
    completion_tokens_details: LObj<WireCompletionDetails>,
}

#[derive(Deserialize, Default)]
struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: LInt,
}

#[derive(Deserialize, Default)]
struct WireCompletionDetails {
    #[serde(default)]
    reasoning_tokens: LInt,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(delta: &str) -> String {
        format!(
            r#"{{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{delta},"finish_reason":null}}]}}"#
        )
    }

    #[test]
    fn one_fragment_payloads_leave_a_template_that_later_ones_fill() {
        for (delta, filled, hole) in [
            (r#"{"content":"Hel"}"#, r#"{"content":"lo"}"#, "lo"),
            (r#"{"reasoning":"Hm"}"#, r#"{"reasoning":"m."}"#, "m."),
            (
                r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\""}}]}"#,
                r#"{"tool_calls":[{"index":0,"function":{"arguments":"ARG"}}]}"#,
                "ARG",
            ),
        ] {
            let mut t = Translator::new();
            let mut out = Vec::new();
            t.push(&payload(delta), &mut out).unwrap();
            // An argument fragment with an escape is not a template.
            if delta.contains("tool_calls") {
                assert!(t.template.is_none());
                t.push(&payload(filled), &mut out).unwrap();
            }
            assert!(t.template.is_some(), "{delta}");
            assert_eq!(t.fill(&payload(filled)).map(|(f, _)| f), Some(hole));
            for refused in [r#"q"uote"#, r#"a\"b"#, "raw\ttab"] {
                let p = payload(&filled.replace(hole, refused));
                assert!(t.fill(&p).is_none(), "{refused:?}");
            }
        }
    }

    #[test]
    fn resends_are_whole_equal_json_values_only() {
        assert!(is_resend(r#"{"a":[1,2]}"#, r#" { "a" : [1, 2] } "#));
        assert!(!is_resend(r#"{"a":1}"#, r#"{"a":2}"#));
        assert!(!is_resend(r#"{"a":"#, r#"{"a":1}"#));
        assert!(!is_resend("", "{}"));
        assert!(!is_resend("{}", "}"));
    }
}
