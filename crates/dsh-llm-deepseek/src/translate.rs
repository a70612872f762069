//! Translation of DeepSeek wire chunks (SSE data payloads) into
//! [`StreamChunk`]s: the state machine of fact sheet d.3–d.7.
//!
//! Wire chunks are deserialized into borrowed, *lenient* structs: every field
//! the translator reads accepts any JSON value and keeps it only when it has
//! the expected type (a non-string `content` is ignored, a non-object `usage`
//! is ignored, …), so no well-formed JSON can make translation fail or panic.
//! Only text that is not JSON at all, or the JSON `null`, is an error.
//!
//! Every DeepSeek chunk opens with the same envelope (`id`, `object`,
//! `created`, `model`, `system_fingerprint`) before `"choices":`; none of it
//! is read. The translator learns that prefix once it has checked it is a
//! run of complete top-level members other than `choices` and `usage`, and
//! for a payload starting with the same bytes it parses only
//! `{"choices":` + the rest: the same members the whole payload has, minus
//! ignored ones it would have skipped, so the result is the same (errors
//! still quote the payload as received).
//!
//! Most payloads are one delta: the same bytes as the previous payload
//! except for one string value (a reasoning or content fragment, or tool-call
//! argument text). After a payload whose only effect is such a fragment, the
//! translator keeps a [`Template`]: the bytes before the string's contents
//! and the bytes after them. A payload that starts and ends with those bytes
//! and whose middle holds no `"`, `\` or control character is that payload
//! with another string in the same place: the tokenizer meets the same bytes
//! in the same state before and after the string, so it parses to the same
//! chunk with the middle as the fragment. The translator then builds that
//! chunk directly and runs the same code on it as on a parsed one.

use std::borrow::Cow;
use std::collections::HashMap;

use dsh_llm::lenient::{LArr, LInt, LObj, LStr, Top};
use dsh_llm::{
    ContentBlock, FinishReason, LlmError, LlmErrorKind, ReasoningBlock, StreamChunk, TextBlock,
    TokenUsage, ToolCall,
};
use serde::de::IgnoredAny;
use serde::Deserialize;

use dsh_llm::sse::DONE;

/// Translates SSE data payloads into stream chunks.
///
/// Feed every payload to [`Translator::push`]; chunks are appended to the
/// caller's buffer. Guarantees: indices `0,1,2,…` by first appearance, a
/// `block-start` before each block's first delta, at most one text and one
/// reasoning block, tool blocks keyed by wire `index`; `block-end`s (in index
/// order), then `usage` (if any, last one wins), then exactly one `finish`,
/// all emitted only when `[DONE]` arrives. Nothing is emitted after that.
#[derive(Debug, Default)]
pub struct Translator {
    next_index: u32,
    reasoning: Option<OpenText>,
    text: Option<OpenText>,
    tools: Vec<OpenTool>,
    /// Wire tool-call `index` → position in `tools`.
    tool_slots: HashMap<Option<i64>, usize>,
    /// Opening order of blocks (= index order).
    opened: Vec<Opened>,
    pending_finish: Option<FinishReason>,
    pending_usage: Option<TokenUsage>,
    done: bool,
    /// The envelope prefix learnt from an earlier payload (see the module
    /// documentation), ending with `"choices":`.
    envelope: Option<String>,
    /// Payloads whose prefix did not match; learning stops after
    /// [`ENVELOPE_ATTEMPTS`] of them (a stream whose envelope changes).
    envelope_misses: u32,
    /// `{"choices":` + the rest of the payload, reused.
    scratch: String,
    /// The shape of the last one-fragment payload (see the module
    /// documentation).
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
    /// `arguments` of the only tool call, at this wire `index`, without `id`
    /// or `name`.
    Arguments(Option<i64>),
}

/// How many times the translator tries to learn an envelope.
const ENVELOPE_ATTEMPTS: u32 = 4;

/// The key the envelope ends before.
const CHOICES_KEY: &str = "\"choices\":";

#[derive(Debug)]
struct OpenText {
    index: u32,
    text: String,
}

#[derive(Debug)]
struct OpenTool {
    index: u32,
    id: Option<String>,
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

    /// Whether `[DONE]` was processed (the chunk stream is complete).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Processes one payload, appending the chunks it produces to `out`.
    /// Payloads after `[DONE]` are ignored.
    ///
    /// # Errors
    /// `MALFORMED_RESPONSE` (`malformed SSE payload: <first 120 chars>`) when
    /// the payload is not JSON or is the JSON `null`.
    pub fn push(&mut self, payload: &str, out: &mut Vec<StreamChunk>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        if payload == DONE {
            self.end_of_stream(out);
            return Ok(());
        }
        if let Some((fragment, hole)) = self.fill(payload) {
            let chunk = hole.chunk(fragment);
            self.apply(chunk, out);
            return Ok(());
        }
        if let Some(rest) = self
            .envelope
            .as_deref()
            .and_then(|e| payload.strip_prefix(e))
        {
            let mut text = std::mem::take(&mut self.scratch);
            text.clear();
            text.push('{');
            text.push_str(CHOICES_KEY);
            text.push_str(rest);
            let cut = self.envelope.as_ref().map_or(0, String::len);
            let result = self.translate(&text, payload, (1 + CHOICES_KEY.len(), cut), out);
            self.scratch = text;
            return result;
        }
        if self.envelope_misses < ENVELOPE_ATTEMPTS {
            self.envelope_misses += 1;
            self.envelope = learn_envelope(payload);
        }
        self.translate(payload, payload, (0, 0), out)
    }

    /// The fragment of `payload` when it fits the template: same prefix and
    /// suffix, a middle without `"`, `\` or control characters.
    fn fill<'p>(&self, payload: &'p str) -> Option<(&'p str, Hole)> {
        let t = self.template.as_ref()?;
        let middle = payload
            .strip_prefix(t.prefix.as_str())?
            .strip_suffix(t.suffix.as_str())?;
        let plain = middle.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\');
        plain.then_some((middle, t.hole))
    }

    /// Translates the JSON `text`: the payload, or the payload with its
    /// envelope cut, where byte `i >= shift.0` of `text` is byte
    /// `i - shift.0 + shift.1` of the payload. Errors quote `payload`.
    fn translate(
        &mut self,
        text: &str,
        payload: &str,
        shift: (usize, usize),
        out: &mut Vec<StreamChunk>,
    ) -> Result<(), LlmError> {
        let chunk = match serde_json::from_str::<TopLevel<'_>>(text) {
            Ok(Top::Object(c)) => c,
            Ok(Top::Other) => return Ok(()),
            Ok(Top::Null) | Err(_) => return Err(malformed(payload)),
        };
        self.template = template_of(&chunk, text, payload, shift);
        self.apply(chunk, out);
        Ok(())
    }

    /// The effect of one parsed chunk.
    fn apply(&mut self, chunk: WireChunk<'_>, out: &mut Vec<StreamChunk>) {
        for choice in chunk.choices.0 {
            let delta = choice.delta.0.unwrap_or_default();
            if let Some(r) = delta.reasoning_content.0.filter(|s| !s.is_empty()) {
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

    /// Ends a payload sequence that had no `[DONE]`.
    ///
    /// # Errors
    /// `STREAM_CLOSED` (`SSE payload stream ended without [DONE]`) unless
    /// `[DONE]` was processed.
    pub fn finish(&self) -> Result<(), LlmError> {
        if self.done {
            Ok(())
        } else {
            Err(LlmError::new(
                LlmErrorKind::StreamClosed,
                "SSE payload stream ended without [DONE]",
            ))
        }
    }

    fn tool_delta(&mut self, call: WireToolCall<'_>, out: &mut Vec<StreamChunk>) {
        let wire_index = call.index.0;
        let slot = match self.tool_slots.get(&wire_index) {
            Some(&i) => i,
            None => {
                let index = self.next_index;
                self.next_index = self.next_index.saturating_add(1);
                self.tools.push(OpenTool {
                    index,
                    id: None,
                    name: None,
                    arguments: String::new(),
                });
                let slot = self.tools.len() - 1;
                self.tool_slots.insert(wire_index, slot);
                self.opened.push(Opened::Tool(slot));
                out.push(StreamChunk::BlockStart {
                    index,
                    block_type: "tool-call".to_string(),
                });
                slot
            }
        };
        let tool = &mut self.tools[slot];
        if let Some(id) = call.id.0 {
            tool.id = Some(id.into_owned());
        }
        let function = call.function.0.unwrap_or_default();
        if let Some(name) = function.name.0 {
            tool.name = Some(name.into_owned());
        }
        let fragment = function.arguments.0.unwrap_or(Cow::Borrowed(""));
        tool.arguments.push_str(&fragment);
        out.push(StreamChunk::ToolCallDelta {
            index: tool.index,
            id: tool.id.clone().unwrap_or_default(),
            name: tool.name.clone(),
            arguments_delta: fragment.into_owned(),
        });
    }

    fn end_of_stream(&mut self, out: &mut Vec<StreamChunk>) {
        self.done = true;
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
                            call_id: t.id.take().unwrap_or_default().into(),
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
        out.push(StreamChunk::Finish {
            reason: self.pending_finish.take().unwrap_or(FinishReason::Stop),
        });
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

/// The payload's envelope: the text up to and including the first
/// `"choices":`, when what comes before it is `{` and complete top-level
/// members (compact: the last one ends with `,`), none named `choices` or
/// `usage` (also when spelt with escapes). `None` otherwise: such payloads
/// are parsed whole.
fn learn_envelope(payload: &str) -> Option<String> {
    let at = memchr::memmem::find(payload.as_bytes(), CHOICES_KEY.as_bytes())?;
    let members = payload.get(..at)?.strip_prefix('{')?.strip_suffix(',')?;
    // The members parse as an object on their own: so `"choices":` stood at
    // a key position of the top level, not inside a string or a value.
    let probe = format!("{{{members}}}");
    let keys: HashMap<Cow<'_, str>, IgnoredAny> = serde_json::from_str(&probe).ok()?;
    if keys.contains_key("choices") || keys.contains_key("usage") {
        return None;
    }
    Some(payload[..at + CHOICES_KEY.len()].to_string())
}

/// The template of a chunk whose only effect is one borrowed, non-empty
/// fragment (no finish, no usage, one choice; for a tool call, one call
/// without `id` or `name`), located in `payload` through `shift` (see
/// [`Translator::translate`]).
fn template_of(
    chunk: &WireChunk<'_>,
    text: &str,
    payload: &str,
    shift: (usize, usize),
) -> Option<Template> {
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
    let (fragment, hole) = match (
        effect(&delta.reasoning_content),
        effect(&delta.content),
        delta.tool_calls.0.as_slice(),
    ) {
        (true, false, []) => (&delta.reasoning_content, Hole::Reasoning),
        (false, true, []) => (&delta.content, Hole::Content),
        (false, false, [call]) => {
            let function = call.function.0.as_ref()?;
            if call.id.0.is_some() || function.name.0.is_some() {
                return None;
            }
            (&function.arguments, Hole::Arguments(call.index.0))
        }
        _ => return None,
    };
    let Some(Cow::Borrowed(fragment)) = &fragment.0 else {
        return None;
    };
    // A borrowed string is the literal's contents, unescaped, inside `text`.
    let start = (fragment.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let start = start.checked_sub(shift.0)? + shift.1;
    let end = start + fragment.len();
    let (prefix, suffix) = (payload.get(..start)?, payload.get(end..)?);
    if !prefix.ends_with('"') || !suffix.starts_with('"') || payload.get(start..end)? != *fragment {
        return None;
    }
    Some(Template {
        prefix: prefix.to_string(),
        suffix: suffix.to_string(),
        hole,
    })
}

impl Hole {
    /// The chunk a template payload with `fragment` in the hole parses to.
    fn chunk(self, fragment: &str) -> WireChunk<'_> {
        fn text(s: &str) -> LStr<'_> {
            LStr(Some(Cow::Borrowed(s)))
        }
        let delta = match self {
            Hole::Reasoning => WireDelta {
                reasoning_content: text(fragment),
                ..Default::default()
            },
            Hole::Content => WireDelta {
                content: text(fragment),
                ..Default::default()
            },
            Hole::Arguments(index) => WireDelta {
                tool_calls: LArr(vec![WireToolCall {
                    index: LInt(index),
                    id: LStr(None),
                    function: LObj(Some(WireFunction {
                        name: LStr(None),
                        arguments: text(fragment),
                    })),
                }]),
                ..Default::default()
            },
        };
        WireChunk {
            choices: LArr(vec![WireChoice {
                delta: LObj(Some(delta)),
                finish_reason: LStr(None),
            }]),
            usage: LObj(None),
        }
    }
}

/// `MALFORMED_RESPONSE` with the first 120 characters of the payload.
pub(crate) fn malformed(payload: &str) -> LlmError {
    let excerpt: String = payload.chars().take(120).collect();
    LlmError::new(
        LlmErrorKind::MalformedResponse,
        format!("malformed SSE payload: {excerpt}"),
    )
}

/// Maps a wire `finish_reason` (fact sheet d.5).
pub fn map_finish(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "tool_calls" => FinishReason::ToolCalls,
        "length" => FinishReason::MaxTokens,
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
        .and_then(|d| d.cached_tokens.0)
        .or(u.prompt_cache_hit_tokens.0);
    TokenUsage {
        input_tokens: u
            .prompt_tokens
            .0
            .unwrap_or(0)
            .saturating_sub(cache_read.unwrap_or(0)),
        output_tokens: u.completion_tokens.0.unwrap_or(0),
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

type TopLevel<'a> = Top<WireChunk<'a>>;

#[derive(Deserialize, Default)]
struct WireChunk<'a> {
    #[serde(default, borrow)]
    choices: LArr<WireChoice<'a>>,
    #[serde(default)]
    usage: LObj<WireUsage>,
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
    content: LStr<'a>,
    #[serde(default, borrow)]
    tool_calls: LArr<WireToolCall<'a>>,
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
    #[serde(default, borrow)]
    arguments: LStr<'a>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: LInt,
    #[serde(default)]
    completion_tokens: LInt,
    #[serde(default)]
    prompt_cache_hit_tokens: LInt,
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

    const ENVELOPE: &str =
        r#"{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":"#;

    fn payload(field: &str, fragment: &str) -> String {
        format!(
            r#"{ENVELOPE}[{{"index":0,"delta":{{"{field}":"{fragment}"}},"finish_reason":null}}]}}"#
        )
    }

    #[test]
    fn one_fragment_payloads_learn_a_template_that_later_ones_fill() {
        let mut t = Translator::new();
        let mut out = Vec::new();
        // The first payload is parsed whole (and teaches the envelope), the
        // second through the envelope, both leave a template.
        for (i, f) in ["Okay", ", the"].into_iter().enumerate() {
            t.push(&payload("reasoning_content", f), &mut out).unwrap();
            let tpl = t
                .template
                .as_ref()
                .unwrap_or_else(|| panic!("template after {i}"));
            assert!(
                tpl.prefix.ends_with(r#""reasoning_content":""#),
                "{}",
                tpl.prefix
            );
            assert_eq!(tpl.suffix, r#""},"finish_reason":null}]}"#);
        }
        assert!(t.envelope.is_some());
        let p = payload("reasoning_content", " user");
        assert_eq!(t.fill(&p).map(|(f, _)| f), Some(" user"));
        assert_eq!(
            t.fill(&payload("reasoning_content", "")).map(|(f, _)| f),
            Some("")
        );
        for refused in [r#"q"uote"#, r#"a\"b"#, "raw\ttab"] {
            assert!(
                t.fill(&payload("reasoning_content", refused)).is_none(),
                "{refused:?}"
            );
        }
        assert!(t.fill(&payload("content", "x")).is_none());
    }
}
