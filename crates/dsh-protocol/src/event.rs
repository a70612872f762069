//! The session event vocabulary: [`SessionEvent`] (the envelope
//! `{"type", "seq", "time", "data"}`) and [`EventPayload`], one payload struct
//! per fact.
//!
//! The `type` → payload table is written once, in `event_kinds!`; serde is
//! derived on every payload struct, so the JSON shape of an event is the
//! shape of its struct. Field names are the reference's (`callId`,
//! `isError`, …); optional fields are omitted, never `null`, when absent.
//!
//! Open sets ([`EventPayload`], [`TurnTrigger`], [`TurnEndReason`]) keep
//! kinds they do not know in an `Other` variant that serializes back to the
//! same JSON, so nothing a plugin logged is dropped.

use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::content::{ContentBlock, MessageSource, StreamChunk, TokenUsage};
use crate::open::{other_to_value, split_tagged, value_from};
use crate::tool::{ToolCall, ToolResult};

/// One entry of a session log.
///
/// JSON: `{"type": <kind>, "seq": n, "time": ms, "data": {...}}`, in that
/// key order. `seq` is the 0-based position in the log; `time` is Unix epoch
/// milliseconds at append.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEvent {
    /// Position in the log (0-based).
    pub seq: u64,
    /// Unix epoch milliseconds at append.
    pub time: u64,
    /// The typed payload; [`EventPayload::kind`] is the JSON `type`.
    pub data: EventPayload,
}

/// `turn/start`: a turn began after draining queued messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnStartEvent {
    /// Turn number (1-based in the loop).
    pub turn: u64,
    /// What started it.
    pub trigger: TurnTrigger,
}

/// `turn/end`: a turn finished, for any reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnEndEvent {
    /// Turn number.
    pub turn: u64,
    /// Why it ended.
    pub reason: TurnEndReason,
}

/// `step/start` and `step/end`: the boundaries of one model step (a failed
/// step ends too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepEvent {
    /// Turn number.
    pub turn: u64,
    /// Step number within the turn (1-based).
    pub step: u64,
}

/// `user/message` (a queued message drained at turn start) and
/// `context/message` (injected at any time); neither has a turn number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageEvent {
    /// The message content.
    pub content: Vec<ContentBlock>,
    /// Who sent it (`user` when absent in the log).
    #[serde(default)]
    pub source: MessageSource,
}

/// `steering/message`: steering drained between steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteeringEvent {
    /// Turn number.
    pub turn: u64,
    /// The steering content.
    pub content: Vec<ContentBlock>,
    /// Who sent it (`user` when absent in the log).
    #[serde(default)]
    pub source: MessageSource,
}

/// `assistant/chunk`: one raw stream chunk as received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkEvent {
    /// Turn number.
    pub turn: u64,
    /// Step number.
    pub step: u64,
    /// The chunk.
    pub chunk: StreamChunk,
}

/// `assistant/message`: the assembled reply of a successful model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessageEvent {
    /// Turn number.
    pub turn: u64,
    /// Step number.
    pub step: u64,
    /// The reply's blocks.
    pub content: Vec<ContentBlock>,
}

/// `tool/call`: logged before a tool call runs.
/// JSON: `{"turn", "step", "callId", "name", "arguments"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallEvent {
    /// Turn number.
    pub turn: u64,
    /// Step number.
    pub step: u64,
    /// The call as the model produced it, except its id: an id the model
    /// repeated carries a unique suffix (`tool/call-renamed` records the
    /// change; the raw `assistant/chunk` events keep the model's id).
    #[serde(flatten)]
    pub call: ToolCall,
}

/// `tool/result`: logged after a tool call (also for calls a failed step
/// never ran). JSON: `{"turn", "step", "callId", "content", "isError",
/// "errorCode"?, "errorMessage"?, "violations"?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultEvent {
    /// Turn number.
    pub turn: u64,
    /// Step number.
    pub step: u64,
    /// The result, exactly as the model will read it.
    #[serde(flatten)]
    pub result: ToolResult,
}

/// `usage`: token usage of one model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageEvent {
    /// Turn number.
    pub turn: u64,
    /// Step number.
    pub step: u64,
    /// The counts.
    pub usage: TokenUsage,
}

/// `error`: a contained failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorEvent {
    /// Turn number.
    pub turn: u64,
    /// Step number (0 for failures outside a step).
    pub step: u64,
    /// Human-readable message.
    pub message: String,
    /// Stable code, omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// `compaction/summary`: the history derived from the events with `seq` in
/// `fromSeq..=toSeq` is replaced by one user message holding `summary`
/// wrapped in `<compacted-summary>` (the events themselves stay in the
/// log). JSON: `{"fromSeq", "toSeq", "summary", "tokensAfter"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEvent {
    /// First event whose message is replaced.
    pub from_seq: u64,
    /// Last event whose message is replaced.
    pub to_seq: u64,
    /// The summary text (without its wrapper).
    pub summary: String,
    /// Estimated tokens of the next request after the replacement (the
    /// token meter re-anchors on it).
    pub tokens_after: u64,
}

/// `compaction/prune`: the tool results logged as the events `seqs` are
/// shown to the model cut to their first `headChars` and last `tailChars`
/// characters with a marker between (the log keeps the full text). JSON:
/// `{"seqs", "headChars", "tailChars", "tokensAfter"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PruneEvent {
    /// The `tool/result` events cut, ascending.
    pub seqs: Vec<u64>,
    /// Characters kept from the start of each text.
    pub head_chars: usize,
    /// Characters kept from the end of each text.
    pub tail_chars: usize,
    /// Estimated tokens of the next request after the cut.
    pub tokens_after: u64,
}

/// `conversation/rewound`: the conversation goes back to before turn
/// `toTurn`. The events from `fromSeq` (that turn's `turn/start`) up to
/// this event stay in the log as an abandoned branch, but no longer count
/// for the model history: it is the history as it was just before
/// `fromSeq`. Turn numbers go on from the highest used (they never
/// repeat). JSON: `{"toTurn", "fromSeq"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RewindEvent {
    /// The turn the conversation went back to (it and every later turn
    /// of the branch are dropped from the history).
    pub to_turn: u64,
    /// The `seq` of that turn's `turn/start` event.
    pub from_seq: u64,
}

/// Declares [`EventPayload`] from the one `type` → payload table: the enum,
/// [`EventPayload::kind`], [`EVENT_KINDS`] and the serde dispatch.
macro_rules! event_kinds {
    ($( $(#[$doc:meta])* $variant:ident($ty:ty) = $kind:literal, )*) => {
        /// The payload of a [`SessionEvent`], one variant per event `type`.
        #[derive(Debug, Clone, PartialEq)]
        pub enum EventPayload {
            $( $(#[$doc])* $variant($ty), )*
            /// A plugin-defined kind, kept untouched. `kind` must not be one of
            /// the built-in kinds (such an event would not load back).
            Other {
                /// The event `type`.
                kind: String,
                /// The event's `data` value, verbatim.
                data: Value,
            },
        }

        /// The built-in event kinds, in the order of the reference's table.
        pub const EVENT_KINDS: &[&str] = &[$($kind),*];

        impl EventPayload {
            /// The event `type`: `turn/start`, …, `error`, or the plugin's kind.
            pub fn kind(&self) -> &str {
                match self {
                    $( EventPayload::$variant(_) => $kind, )*
                    EventPayload::Other { kind, .. } => kind,
                }
            }

            fn serialize_data<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( EventPayload::$variant(p) => p.serialize(s), )*
                    EventPayload::Other { data, .. } => data.serialize(s),
                }
            }

            /// Deserializes the `data` of an event of type `kind`: the typed
            /// payload for built-in kinds, [`EventPayload::Other`] otherwise.
            fn deserialize_data<'de, D: Deserializer<'de>>(
                kind: String,
                d: D,
            ) -> Result<Self, D::Error> {
                Ok(match kind.as_str() {
                    $( $kind => EventPayload::$variant(<$ty>::deserialize(d)?), )*
                    _ => EventPayload::Other {
                        data: Value::deserialize(d)?,
                        kind,
                    },
                })
            }
        }
    };
}

event_kinds! {
    /// `turn/start`
    TurnStart(TurnStartEvent) = "turn/start",
    /// `turn/end`
    TurnEnd(TurnEndEvent) = "turn/end",
    /// `step/start`
    StepStart(StepEvent) = "step/start",
    /// `step/end`
    StepEnd(StepEvent) = "step/end",
    /// `user/message`
    UserMessage(MessageEvent) = "user/message",
    /// `context/message`
    ContextMessage(MessageEvent) = "context/message",
    /// `assistant/chunk`
    AssistantChunk(ChunkEvent) = "assistant/chunk",
    /// `assistant/message`
    AssistantMessage(AssistantMessageEvent) = "assistant/message",
    /// `tool/call`
    ToolCall(ToolCallEvent) = "tool/call",
    /// `tool/result`
    ToolResult(ToolResultEvent) = "tool/result",
    /// `steering/message`
    SteeringMessage(SteeringEvent) = "steering/message",
    /// `usage`
    Usage(UsageEvent) = "usage",
    /// `error`
    Error(ErrorEvent) = "error",
    /// `compaction/summary`
    Compaction(CompactionEvent) = "compaction/summary",
    /// `compaction/prune`
    Prune(PruneEvent) = "compaction/prune",
    /// `conversation/rewound`
    Rewind(RewindEvent) = "conversation/rewound",
}

impl EventPayload {
    /// The turn number the event carries, if its kind has one.
    pub fn turn(&self) -> Option<u64> {
        match self {
            EventPayload::TurnStart(e) => Some(e.turn),
            EventPayload::TurnEnd(e) => Some(e.turn),
            EventPayload::StepStart(e) | EventPayload::StepEnd(e) => Some(e.turn),
            EventPayload::AssistantChunk(e) => Some(e.turn),
            EventPayload::AssistantMessage(e) => Some(e.turn),
            EventPayload::ToolCall(e) => Some(e.turn),
            EventPayload::ToolResult(e) => Some(e.turn),
            EventPayload::SteeringMessage(e) => Some(e.turn),
            EventPayload::Usage(e) => Some(e.turn),
            EventPayload::Error(e) => Some(e.turn),
            EventPayload::UserMessage(_)
            | EventPayload::ContextMessage(_)
            | EventPayload::Compaction(_)
            | EventPayload::Prune(_)
            | EventPayload::Rewind(_)
            | EventPayload::Other { .. } => None,
        }
    }

    /// Builds the typed payload of an event `type` from its JSON `data`.
    /// Unknown kinds become [`EventPayload::Other`].
    ///
    /// # Errors
    /// When a built-in kind's `data` lacks a field or has a wrong type.
    pub fn from_parts(kind: String, data: Value) -> Result<Self, serde_json::Error> {
        Self::deserialize_data(kind, data)
    }
}

/// What started a turn. Open set tagged by `kind`.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnTrigger {
    /// `{"kind":"message","source":…}`: queued messages; `source` is the first one's.
    Message {
        /// Source of the first drained message.
        source: MessageSource,
    },
    /// `{"kind":"continuation"}` (in the vocabulary; the loop never produces it).
    Continuation,
    /// A kind this crate does not know; `data` is the whole JSON object.
    Other {
        /// The `kind` tag.
        kind: String,
        /// The complete JSON object, including `kind`.
        data: Map<String, Value>,
    },
}

impl TurnTrigger {
    /// The `kind` tag.
    pub fn kind(&self) -> &str {
        match self {
            TurnTrigger::Message { .. } => "message",
            TurnTrigger::Continuation => "continuation",
            TurnTrigger::Other { kind, .. } => kind,
        }
    }
}

/// Why a turn ended. Open set tagged by `kind`.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEndReason {
    /// `{"kind":"completed"}`
    Completed,
    /// `{"kind":"aborted","reason"?:…}`
    Aborted {
        /// Why, when known (omitted when `None`).
        reason: Option<String>,
    },
    /// `{"kind":"error","message":…,"code"?:…}`
    Error {
        /// Human-readable message.
        message: String,
        /// Stable code, omitted when `None`.
        code: Option<String>,
    },
    /// `{"kind":"disposed"}`
    Disposed,
    /// `{"kind":"max-steps"}`: the step limit was reached.
    MaxSteps,
    /// `{"kind":"interrupted"}`: the process died during the turn; written
    /// when the log is loaded for resuming, never by a live loop.
    Interrupted,
    /// A kind this crate does not know; `data` is the whole JSON object.
    Other {
        /// The `kind` tag.
        kind: String,
        /// The complete JSON object, including `kind`.
        data: Map<String, Value>,
    },
}

impl TurnEndReason {
    /// The `kind` tag.
    pub fn kind(&self) -> &str {
        match self {
            TurnEndReason::Completed => "completed",
            TurnEndReason::Aborted { .. } => "aborted",
            TurnEndReason::Error { .. } => "error",
            TurnEndReason::Disposed => "disposed",
            TurnEndReason::MaxSteps => "max-steps",
            TurnEndReason::Interrupted => "interrupted",
            TurnEndReason::Other { kind, .. } => kind,
        }
    }
}

// ---------------------------------------------------------------------------
// Serde: the open sets. Known kinds go through a borrowed (serialize) or
// owned (deserialize) tagged enum; unknown kinds keep their whole object.

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum TriggerRef<'a> {
    Message { source: &'a MessageSource },
    Continuation,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum TriggerOwned {
    Message { source: MessageSource },
    Continuation,
}

impl Serialize for TurnTrigger {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            TurnTrigger::Message { source } => TriggerRef::Message { source }.serialize(s),
            TurnTrigger::Continuation => TriggerRef::Continuation.serialize(s),
            TurnTrigger::Other { kind, data } => other_to_value("kind", kind, data).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for TurnTrigger {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = value_from(d)?;
        let known = &["message", "continuation"];
        Ok(
            match split_tagged::<TriggerOwned, D::Error>(value, "kind", known)? {
                Ok(TriggerOwned::Message { source }) => TurnTrigger::Message { source },
                Ok(TriggerOwned::Continuation) => TurnTrigger::Continuation,
                Err((kind, data)) => TurnTrigger::Other { kind, data },
            },
        )
    }
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum EndRef<'a> {
    Completed,
    Aborted {
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
    },
    Error {
        message: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<&'a str>,
    },
    Disposed,
    MaxSteps,
    Interrupted,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum EndOwned {
    Completed,
    Aborted {
        #[serde(default)]
        reason: Option<String>,
    },
    Error {
        message: String,
        #[serde(default)]
        code: Option<String>,
    },
    Disposed,
    MaxSteps,
    Interrupted,
}

const END_KINDS: &[&str] = &[
    "completed",
    "aborted",
    "error",
    "disposed",
    "max-steps",
    "interrupted",
];

impl Serialize for TurnEndReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            TurnEndReason::Completed => EndRef::Completed.serialize(s),
            TurnEndReason::Aborted { reason } => EndRef::Aborted {
                reason: reason.as_deref(),
            }
            .serialize(s),
            TurnEndReason::Error { message, code } => EndRef::Error {
                message,
                code: code.as_deref(),
            }
            .serialize(s),
            TurnEndReason::Disposed => EndRef::Disposed.serialize(s),
            TurnEndReason::MaxSteps => EndRef::MaxSteps.serialize(s),
            TurnEndReason::Interrupted => EndRef::Interrupted.serialize(s),
            TurnEndReason::Other { kind, data } => other_to_value("kind", kind, data).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for TurnEndReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = value_from(d)?;
        Ok(
            match split_tagged::<EndOwned, D::Error>(value, "kind", END_KINDS)? {
                Ok(EndOwned::Completed) => TurnEndReason::Completed,
                Ok(EndOwned::Aborted { reason }) => TurnEndReason::Aborted { reason },
                Ok(EndOwned::Error { message, code }) => TurnEndReason::Error { message, code },
                Ok(EndOwned::Disposed) => TurnEndReason::Disposed,
                Ok(EndOwned::MaxSteps) => TurnEndReason::MaxSteps,
                Ok(EndOwned::Interrupted) => TurnEndReason::Interrupted,
                Err((kind, data)) => TurnEndReason::Other { kind, data },
            },
        )
    }
}

// ---------------------------------------------------------------------------
// Serde: the envelope. `data` is deserialized straight into its payload once
// `type` is known (no intermediate value on the common path).

/// Serializes an event's `data`.
struct DataOf<'a>(&'a EventPayload);

impl Serialize for DataOf<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_data(s)
    }
}

/// So code reading a log takes `&[SessionEvent]` and `&[Arc<SessionEvent>]`
/// alike (`impl AsRef<SessionEvent>`).
impl AsRef<SessionEvent> for SessionEvent {
    fn as_ref(&self) -> &SessionEvent {
        self
    }
}

impl Serialize for SessionEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("SessionEvent", 4)?;
        st.serialize_field("type", self.data.kind())?;
        st.serialize_field("seq", &self.seq)?;
        st.serialize_field("time", &self.time)?;
        st.serialize_field("data", &DataOf(&self.data))?;
        st.end()
    }
}

/// Deserializes `data` directly into its typed payload once `type` is known.
struct DataSeed(String);

impl<'de> DeserializeSeed<'de> for DataSeed {
    type Value = EventPayload;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<EventPayload, D::Error> {
        let kind = self.0.clone();
        EventPayload::deserialize_data(self.0, d)
            .map_err(|e| D::Error::custom(format!("\"{kind}\" data: {e}")))
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum EnvelopeField {
    Type,
    Seq,
    Time,
    Data,
    #[serde(other)]
    Unknown,
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = SessionEvent;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a session event object {\"type\", \"seq\", \"time\", \"data\"}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SessionEvent, A::Error> {
        let mut kind: Option<String> = None;
        let mut seq: Option<u64> = None;
        let mut time: Option<u64> = None;
        let mut data: Option<EventPayload> = None;
        // `data` seen before `type` (not how dsh writes, but valid JSON).
        let mut early_data: Option<Value> = None;
        while let Some(field) = map.next_key::<EnvelopeField>()? {
            match field {
                EnvelopeField::Type => kind = Some(map.next_value()?),
                EnvelopeField::Seq => seq = Some(map.next_value()?),
                EnvelopeField::Time => time = Some(map.next_value()?),
                EnvelopeField::Data => match &kind {
                    Some(k) => data = Some(map.next_value_seed(DataSeed(k.clone()))?),
                    None => early_data = Some(map.next_value()?),
                },
                EnvelopeField::Unknown => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let kind = kind.ok_or_else(|| A::Error::missing_field("type"))?;
        let seq = seq.ok_or_else(|| A::Error::missing_field("seq"))?;
        let time = time.ok_or_else(|| A::Error::missing_field("time"))?;
        let data = match data {
            Some(d) => d,
            None => DataSeed(kind)
                .deserialize(early_data.unwrap_or(Value::Null))
                .map_err(A::Error::custom)?,
        };
        Ok(SessionEvent { seq, time, data })
    }
}

impl<'de> Deserialize<'de> for SessionEvent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(EnvelopeVisitor)
    }
}
