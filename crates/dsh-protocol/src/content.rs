//! Message vocabulary: content blocks, messages, sources, finish reasons,
//! usage, tool schemas and stream chunks.
//!
//! Serde names are those of the reference harness (`tool-call`, `toolCallId`,
//! `isError`, …) so JSON logs interchange. Open sets (block kinds, message
//! sources, finish reasons) keep unknown kinds in an `Other` variant that
//! serializes back to the same JSON object.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::ids::CallId;
use crate::open::{other_to_value, split_tagged, value_from};
use crate::tool::ToolCall;

/// One block of message content. Open set: unknown `type`s round-trip as
/// [`ContentBlock::Other`].
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// Plain text.
    Text(TextBlock),
    /// Model reasoning ("thinking") text.
    Reasoning(ReasoningBlock),
    /// A tool call whose arguments are the raw JSON text the model produced,
    /// `{"type":"tool-call","id":…,"name":…,"arguments":…}` (the call id is
    /// spelled `id` in a block, `callId` in a `tool/call` event).
    ToolCall(ToolCall),
    /// The result of a tool call.
    ToolResult(ToolResultBlock),
    /// An image by URL or data URL.
    Image(ImageBlock),
    /// A block kind this crate does not know; `data` is the whole JSON object.
    Other {
        /// The `type` tag.
        kind: String,
        /// The complete JSON object, including the `type` field.
        data: Map<String, Value>,
    },
}

/// `{"type":"text","text":…,"cache"?:…}`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextBlock {
    /// The text.
    pub text: String,
    /// Provider cache hint (`"ephemeral"`); ignored by the DeepSeek adapter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<String>,
}

/// `{"type":"reasoning","text":…}`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasoningBlock {
    /// The reasoning text.
    pub text: String,
    /// The provider's opaque proof of the reasoning (Anthropic's thinking
    /// `signature`), passed back verbatim with the block on later requests;
    /// absent for providers that have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// `{"type":"tool-result","toolCallId":…,"content":[…],"isError"?:…}`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultBlock {
    /// The id of the call this answers.
    pub tool_call_id: CallId,
    /// The result content (in practice text blocks).
    pub content: Vec<ContentBlock>,
    /// Whether the result reports an error; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Provider cache hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<String>,
}

/// `{"type":"image","url":…,"mimeType"?:…}`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageBlock {
    /// URL or data URL.
    pub url: String,
    /// MIME type when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Provider cache hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<String>,
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextBlock {
            text: text.into(),
            cache: None,
        })
    }

    /// A reasoning block.
    pub fn reasoning(text: impl Into<String>) -> Self {
        ContentBlock::Reasoning(ReasoningBlock {
            text: text.into(),
            signature: None,
        })
    }

    /// A tool-call block.
    pub fn tool_call(
        id: impl Into<CallId>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ContentBlock::ToolCall(ToolCall::new(id, name, arguments))
    }

    /// A tool-result block with `isError` set.
    pub fn tool_result(
        tool_call_id: impl Into<CallId>,
        content: Vec<ContentBlock>,
        is_error: bool,
    ) -> Self {
        ContentBlock::ToolResult(ToolResultBlock {
            tool_call_id: tool_call_id.into(),
            content,
            is_error: Some(is_error),
            cache: None,
        })
    }

    /// The block's `type` tag (`text`, `tool-call`, …, or the unknown kind).
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text(_) => "text",
            ContentBlock::Reasoning(_) => "reasoning",
            ContentBlock::ToolCall(_) => "tool-call",
            ContentBlock::ToolResult(_) => "tool-result",
            ContentBlock::Image(_) => "image",
            ContentBlock::Other { kind, .. } => kind,
        }
    }

    /// The text of a text block, `None` for every other kind.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum BlockRef<'a> {
    Text(&'a TextBlock),
    Reasoning(&'a ReasoningBlock),
    ToolCall(ToolCallInBlock<'a>),
    ToolResult(&'a ToolResultBlock),
    Image(&'a ImageBlock),
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum BlockOwned {
    Text(TextBlock),
    Reasoning(ReasoningBlock),
    ToolCall(ToolCallIn),
    ToolResult(ToolResultBlock),
    Image(ImageBlock),
}

/// A [`ToolCall`] spelled as a content block: the call id is `id`.
#[derive(Serialize)]
struct ToolCallInBlock<'a> {
    id: &'a CallId,
    name: &'a str,
    arguments: &'a str,
}

#[derive(Deserialize)]
struct ToolCallIn {
    id: CallId,
    name: String,
    arguments: String,
}

const BLOCK_KINDS: &[&str] = &["text", "reasoning", "tool-call", "tool-result", "image"];

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ContentBlock::Text(b) => BlockRef::Text(b).serialize(s),
            ContentBlock::Reasoning(b) => BlockRef::Reasoning(b).serialize(s),
            ContentBlock::ToolCall(c) => BlockRef::ToolCall(ToolCallInBlock {
                id: &c.call_id,
                name: &c.name,
                arguments: &c.arguments,
            })
            .serialize(s),
            ContentBlock::ToolResult(b) => BlockRef::ToolResult(b).serialize(s),
            ContentBlock::Image(b) => BlockRef::Image(b).serialize(s),
            ContentBlock::Other { kind, data } => other_to_value("type", kind, data).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = value_from(d)?;
        Ok(
            match split_tagged::<BlockOwned, D::Error>(value, "type", BLOCK_KINDS)? {
                Ok(BlockOwned::Text(b)) => ContentBlock::Text(b),
                Ok(BlockOwned::Reasoning(b)) => ContentBlock::Reasoning(b),
                Ok(BlockOwned::ToolCall(b)) => ContentBlock::ToolCall(ToolCall {
                    call_id: b.id,
                    name: b.name,
                    arguments: b.arguments,
                }),
                Ok(BlockOwned::ToolResult(b)) => ContentBlock::ToolResult(b),
                Ok(BlockOwned::Image(b)) => ContentBlock::Image(b),
                Err((kind, data)) => ContentBlock::Other { kind, data },
            },
        )
    }
}

/// Who speaks a message. Closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// System instructions.
    System,
    /// The user (tool results travel in user messages too).
    User,
    /// The model.
    Assistant,
}

/// `{role, content}`. There is no `tool` role: tool results are
/// `tool-result` blocks inside user messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The speaker.
    pub role: Role,
    /// The content blocks, in order.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// An assistant message with the given blocks.
    pub fn assistant(content: Vec<ContentBlock>) -> Self {
        Message {
            role: Role::Assistant,
            content,
        }
    }
}

/// Where a queued, injected or steering message came from. Open set tagged by
/// `kind`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum MessageSource {
    /// Typed by the user.
    #[default]
    User,
    /// Produced by a plugin.
    Plugin {
        /// The plugin's name.
        plugin: String,
    },
    /// Sent by another agent.
    Agent {
        /// The sending agent's id.
        agent_id: String,
    },
    /// A kind this crate does not know; `data` is the whole JSON object.
    Other {
        /// The `kind` tag.
        kind: String,
        /// The complete JSON object.
        data: Map<String, Value>,
    },
}

impl MessageSource {
    /// The `kind` tag: `user`, `plugin`, `agent` or the unknown kind.
    pub fn kind(&self) -> &str {
        match self {
            MessageSource::User => "user",
            MessageSource::Plugin { .. } => "plugin",
            MessageSource::Agent { .. } => "agent",
            MessageSource::Other { kind, .. } => kind,
        }
    }

    /// A plugin source.
    pub fn plugin(name: impl Into<String>) -> Self {
        MessageSource::Plugin {
            plugin: name.into(),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
enum SourceRepr {
    User,
    Plugin { plugin: String },
    Agent { agent_id: String },
}

impl Serialize for MessageSource {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MessageSource::User => SourceRepr::User.serialize(s),
            MessageSource::Plugin { plugin } => SourceRepr::Plugin {
                plugin: plugin.clone(),
            }
            .serialize(s),
            MessageSource::Agent { agent_id } => SourceRepr::Agent {
                agent_id: agent_id.clone(),
            }
            .serialize(s),
            MessageSource::Other { kind, data } => other_to_value("kind", kind, data).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for MessageSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = value_from(d)?;
        Ok(
            match split_tagged::<SourceRepr, D::Error>(value, "kind", &["user", "plugin", "agent"])?
            {
                Ok(SourceRepr::User) => MessageSource::User,
                Ok(SourceRepr::Plugin { plugin }) => MessageSource::Plugin { plugin },
                Ok(SourceRepr::Agent { agent_id }) => MessageSource::Agent { agent_id },
                Err((kind, data)) => MessageSource::Other { kind, data },
            },
        )
    }
}

/// Why a model stopped. Open set tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum FinishReason {
    /// Natural end.
    #[default]
    Stop,
    /// The model asked for tool calls.
    ToolCalls,
    /// The token limit was hit.
    MaxTokens,
    /// The stream was aborted.
    Aborted,
    /// An in-band provider error.
    Error {
        /// Human-readable message.
        message: String,
        /// Stable code when known (e.g. `CONTENT_FILTER`).
        code: Option<String>,
    },
    /// A kind this crate does not know; `data` is the whole JSON object.
    Other {
        /// The `kind` tag.
        kind: String,
        /// The complete JSON object.
        data: Map<String, Value>,
    },
}

impl FinishReason {
    /// The `kind` tag.
    pub fn kind(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool-calls",
            FinishReason::MaxTokens => "max-tokens",
            FinishReason::Aborted => "aborted",
            FinishReason::Error { .. } => "error",
            FinishReason::Other { kind, .. } => kind,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum FinishRepr {
    Stop,
    ToolCalls,
    MaxTokens,
    Aborted,
    Error {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
}

impl Serialize for FinishReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            FinishReason::Stop => FinishRepr::Stop.serialize(s),
            FinishReason::ToolCalls => FinishRepr::ToolCalls.serialize(s),
            FinishReason::MaxTokens => FinishRepr::MaxTokens.serialize(s),
            FinishReason::Aborted => FinishRepr::Aborted.serialize(s),
            FinishReason::Error { message, code } => FinishRepr::Error {
                message: message.clone(),
                code: code.clone(),
            }
            .serialize(s),
            FinishReason::Other { kind, data } => other_to_value("kind", kind, data).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for FinishReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = value_from(d)?;
        let known = &["stop", "tool-calls", "max-tokens", "aborted", "error"];
        Ok(
            match split_tagged::<FinishRepr, D::Error>(value, "kind", known)? {
                Ok(FinishRepr::Stop) => FinishReason::Stop,
                Ok(FinishRepr::ToolCalls) => FinishReason::ToolCalls,
                Ok(FinishRepr::MaxTokens) => FinishReason::MaxTokens,
                Ok(FinishRepr::Aborted) => FinishReason::Aborted,
                Ok(FinishRepr::Error { message, code }) => FinishReason::Error { message, code },
                Err((kind, data)) => FinishReason::Other { kind, data },
            },
        )
    }
}

/// Token counts of one model call. Input-side counts are disjoint: billed
/// input = `input_tokens + cache_read_tokens + cache_write_tokens`. Optional
/// counts are absent (not 0) when the provider did not report them. Signed
/// because providers can report inconsistent numbers and nothing is clamped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Uncached input tokens.
    pub input_tokens: i64,
    /// Output tokens (including reasoning tokens).
    pub output_tokens: i64,
    /// Input tokens served from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<i64>,
    /// Input tokens written to the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<i64>,
    /// Reasoning tokens (a subset of output tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<i64>,
}

/// A tool as shown to the model: `{name, description, parameters, strict?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// The tool's name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// A JSON Schema object describing the arguments.
    pub parameters: Value,
    /// Provider strict-mode flag, passed through when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// The tools of a request: the schemas in the order the model is shown
/// them, shared (an O(1) clone), with their chat-completions wire form (the
/// `tools` array `[{"type":"function","function":{name, description,
/// parameters, strict?}}, …]` that DeepSeek and other OpenAI-compatible
/// providers take) serialized once, on first use.
///
/// Build one when the tool set changes and hand out clones: a step then
/// costs no schema copy and no serialization. Equality is by content (two
/// clones compare by pointer first). Serializes as the array of schemas.
#[derive(Clone, Default)]
pub struct ToolSet {
    inner: std::sync::Arc<ToolSetInner>,
}

#[derive(Default)]
struct ToolSetInner {
    schemas: Vec<ToolSchema>,
    wire: std::sync::OnceLock<Box<serde_json::value::RawValue>>,
}

impl ToolSet {
    /// A set of `schemas`, in this order.
    pub fn new(schemas: Vec<ToolSchema>) -> Self {
        ToolSet {
            inner: std::sync::Arc::new(ToolSetInner {
                schemas,
                wire: std::sync::OnceLock::new(),
            }),
        }
    }

    /// The schemas, in the order the model is shown them.
    pub fn schemas(&self) -> &[ToolSchema] {
        &self.inner.schemas
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.inner.schemas.len()
    }

    /// Whether the set has no tool.
    pub fn is_empty(&self) -> bool {
        self.inner.schemas.is_empty()
    }

    /// Whether `other` is this very set (a clone of it): no comparison of
    /// content.
    pub fn same(&self, other: &ToolSet) -> bool {
        std::sync::Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The chat-completions `tools` array as compact JSON, serialized on
    /// the first call and then returned as is.
    pub fn wire_json(&self) -> &serde_json::value::RawValue {
        self.inner.wire.get_or_init(|| {
            #[derive(Serialize)]
            struct Function<'a> {
                name: &'a str,
                description: &'a str,
                parameters: &'a Value,
                #[serde(skip_serializing_if = "Option::is_none")]
                strict: Option<bool>,
            }
            #[derive(Serialize)]
            struct WireTool<'a> {
                #[serde(rename = "type")]
                kind: &'static str,
                function: Function<'a>,
            }
            let tools: Vec<WireTool<'_>> = self
                .inner
                .schemas
                .iter()
                .map(|t| WireTool {
                    kind: "function",
                    function: Function {
                        name: &t.name,
                        description: &t.description,
                        parameters: &t.parameters,
                        strict: t.strict,
                    },
                })
                .collect();
            // Strings and JSON values always serialize; the fallback is
            // unreachable but keeps this total.
            serde_json::value::to_raw_value(&tools).unwrap_or_else(|_| {
                serde_json::value::RawValue::from_string("[]".to_string()).unwrap_or_default()
            })
        })
    }
}

impl From<Vec<ToolSchema>> for ToolSet {
    fn from(schemas: Vec<ToolSchema>) -> Self {
        ToolSet::new(schemas)
    }
}

impl std::ops::Deref for ToolSet {
    type Target = [ToolSchema];

    fn deref(&self) -> &[ToolSchema] {
        &self.inner.schemas
    }
}

impl PartialEq for ToolSet {
    fn eq(&self, other: &Self) -> bool {
        self.same(other) || self.inner.schemas == other.inner.schemas
    }
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.inner.schemas).finish()
    }
}

impl Serialize for ToolSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.inner.schemas.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<ToolSchema>::deserialize(deserializer).map(ToolSet::new)
    }
}

/// One element of an adapter's output stream.
///
/// Contract every adapter keeps: `usage` (at most once) before `finish`;
/// nothing after `finish`; tool-call arguments stay raw strings; failures
/// either return an error from the stream or end it with
/// `finish{error|aborted}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum StreamChunk {
    /// A block opens at `index` with the given block type tag.
    BlockStart {
        /// Block index (opaque; ordered by first appearance).
        index: u32,
        /// The block's `type` tag.
        block_type: String,
    },
    /// Text appended to a text block.
    TextDelta {
        /// Block index.
        index: u32,
        /// The fragment.
        text: String,
    },
    /// Text appended to a reasoning block.
    ReasoningDelta {
        /// Block index.
        index: u32,
        /// The fragment.
        text: String,
    },
    /// A fragment of a tool call's arguments.
    ToolCallDelta {
        /// Block index.
        index: u32,
        /// The call id.
        id: String,
        /// The tool name, once known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// The raw arguments fragment.
        arguments_delta: String,
    },
    /// A block is complete; `block` is authoritative.
    BlockEnd {
        /// Block index.
        index: u32,
        /// The fully assembled block.
        block: ContentBlock,
    },
    /// Token usage of the call.
    Usage {
        /// The counts.
        usage: TokenUsage,
    },
    /// The end of the response.
    Finish {
        /// Why the model stopped.
        reason: FinishReason,
    },
}
