//! The JSON shape of the event vocabulary: serde impls for [`SessionEvent`],
//! [`TurnTrigger`] and [`TurnEndReason`], byte-identical to the reference.
//!
//! Serialization borrows (no copies of content); deserialization reads the
//! envelope and, once `type` is known, deserializes `data` straight into the
//! typed variant.

use dsh_llm::open::{other_to_value, split_tagged};
use dsh_llm::{ContentBlock, MessageSource, StreamChunk, TokenUsage};
use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::event::{EventData, SessionEvent, TurnEndReason, TurnTrigger};

// ---------------------------------------------------------------------------
// Serde: open sets (helpers shared with dsh-llm's vocabulary)

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum TriggerRef<'a> {
    Message { source: &'a MessageSource },
    Continuation,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum TriggerRepr {
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
        let value = Value::deserialize(d)?;
        Ok(
            match split_tagged::<TriggerRepr, D::Error>(
                value,
                "kind",
                &["message", "continuation"],
            )? {
                Ok(TriggerRepr::Message { source }) => TurnTrigger::Message { source },
                Ok(TriggerRepr::Continuation) => TurnTrigger::Continuation,
                Err((kind, data)) => TurnTrigger::Other { kind, data },
            },
        )
    }
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum EndRepr {
    Completed,
    Aborted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    Error {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
    Disposed,
    MaxSteps,
}

const END_KINDS: &[&str] = &["completed", "aborted", "error", "disposed", "max-steps"];

impl Serialize for TurnEndReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            TurnEndReason::Completed => EndRepr::Completed.serialize(s),
            TurnEndReason::Aborted { reason } => EndRepr::Aborted {
                reason: reason.clone(),
            }
            .serialize(s),
            TurnEndReason::Error { message, code } => EndRepr::Error {
                message: message.clone(),
                code: code.clone(),
            }
            .serialize(s),
            TurnEndReason::Disposed => EndRepr::Disposed.serialize(s),
            TurnEndReason::MaxSteps => EndRepr::MaxSteps.serialize(s),
            TurnEndReason::Other { kind, data } => other_to_value("kind", kind, data).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for TurnEndReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Ok(
            match split_tagged::<EndRepr, D::Error>(value, "kind", END_KINDS)? {
                Ok(EndRepr::Completed) => TurnEndReason::Completed,
                Ok(EndRepr::Aborted { reason }) => TurnEndReason::Aborted { reason },
                Ok(EndRepr::Error { message, code }) => TurnEndReason::Error { message, code },
                Ok(EndRepr::Disposed) => TurnEndReason::Disposed,
                Ok(EndRepr::MaxSteps) => TurnEndReason::MaxSteps,
                Err((kind, data)) => TurnEndReason::Other { kind, data },
            },
        )
    }
}

// ---------------------------------------------------------------------------
// Serde: the event envelope

/// The `data` object of each built-in kind, borrowed for serialization.
#[derive(Serialize)]
#[serde(untagged)]
enum DataRef<'a> {
    TurnStart {
        turn: u64,
        trigger: &'a TurnTrigger,
    },
    TurnEnd {
        turn: u64,
        reason: &'a TurnEndReason,
    },
    Step {
        turn: u64,
        step: u64,
    },
    Message {
        content: &'a [ContentBlock],
        source: &'a MessageSource,
    },
    Chunk {
        turn: u64,
        step: u64,
        chunk: &'a StreamChunk,
    },
    Assistant {
        turn: u64,
        step: u64,
        content: &'a [ContentBlock],
    },
    #[serde(rename_all = "camelCase")]
    ToolCall {
        turn: u64,
        step: u64,
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        turn: u64,
        step: u64,
        call_id: &'a str,
        content: &'a [ContentBlock],
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        error_code: Option<&'a str>,
    },
    Steering {
        turn: u64,
        content: &'a [ContentBlock],
        source: &'a MessageSource,
    },
    Usage {
        turn: u64,
        step: u64,
        usage: &'a TokenUsage,
    },
    Error {
        turn: u64,
        step: u64,
        message: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<&'a str>,
    },
    Other(&'a Value),
}

impl<'a> From<&'a EventData> for DataRef<'a> {
    fn from(d: &'a EventData) -> Self {
        match d {
            EventData::TurnStart { turn, trigger } => DataRef::TurnStart {
                turn: *turn,
                trigger,
            },
            EventData::TurnEnd { turn, reason } => DataRef::TurnEnd {
                turn: *turn,
                reason,
            },
            EventData::StepStart { turn, step } | EventData::StepEnd { turn, step } => {
                DataRef::Step {
                    turn: *turn,
                    step: *step,
                }
            }
            EventData::UserMessage { content, source }
            | EventData::ContextMessage { content, source } => DataRef::Message { content, source },
            EventData::AssistantChunk { turn, step, chunk } => DataRef::Chunk {
                turn: *turn,
                step: *step,
                chunk,
            },
            EventData::AssistantMessage {
                turn,
                step,
                content,
            } => DataRef::Assistant {
                turn: *turn,
                step: *step,
                content,
            },
            EventData::ToolCall {
                turn,
                step,
                call_id,
                name,
                arguments,
            } => DataRef::ToolCall {
                turn: *turn,
                step: *step,
                call_id,
                name,
                arguments,
            },
            EventData::ToolResult {
                turn,
                step,
                call_id,
                content,
                is_error,
                error_code,
            } => DataRef::ToolResult {
                turn: *turn,
                step: *step,
                call_id,
                content,
                is_error: *is_error,
                error_code: error_code.as_deref(),
            },
            EventData::SteeringMessage {
                turn,
                content,
                source,
            } => DataRef::Steering {
                turn: *turn,
                content,
                source,
            },
            EventData::Usage { turn, step, usage } => DataRef::Usage {
                turn: *turn,
                step: *step,
                usage,
            },
            EventData::Error {
                turn,
                step,
                message,
                code,
            } => DataRef::Error {
                turn: *turn,
                step: *step,
                message,
                code: code.as_deref(),
            },
            EventData::Other { data, .. } => DataRef::Other(data),
        }
    }
}

impl Serialize for SessionEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("SessionEvent", 4)?;
        st.serialize_field("type", self.data.kind())?;
        st.serialize_field("seq", &self.seq)?;
        st.serialize_field("time", &self.time)?;
        st.serialize_field("data", &DataRef::from(&self.data))?;
        st.end()
    }
}

#[derive(Deserialize)]
struct TurnStartIn {
    turn: u64,
    trigger: TurnTrigger,
}

#[derive(Deserialize)]
struct TurnEndIn {
    turn: u64,
    reason: TurnEndReason,
}

#[derive(Deserialize)]
struct StepIn {
    turn: u64,
    step: u64,
}

#[derive(Deserialize)]
struct MessageIn {
    content: Vec<ContentBlock>,
    #[serde(default)]
    source: MessageSource,
}

#[derive(Deserialize)]
struct ChunkIn {
    turn: u64,
    step: u64,
    chunk: StreamChunk,
}

#[derive(Deserialize)]
struct AssistantIn {
    turn: u64,
    step: u64,
    content: Vec<ContentBlock>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolCallIn {
    turn: u64,
    step: u64,
    call_id: String,
    name: String,
    arguments: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolResultIn {
    turn: u64,
    step: u64,
    call_id: String,
    content: Vec<ContentBlock>,
    is_error: bool,
    #[serde(default)]
    error_code: Option<String>,
}

#[derive(Deserialize)]
struct SteeringIn {
    turn: u64,
    content: Vec<ContentBlock>,
    #[serde(default)]
    source: MessageSource,
}

#[derive(Deserialize)]
struct UsageIn {
    turn: u64,
    step: u64,
    usage: TokenUsage,
}

#[derive(Deserialize)]
struct ErrorIn {
    turn: u64,
    step: u64,
    message: String,
    #[serde(default)]
    code: Option<String>,
}

/// Deserializes the `data` of an event of type `kind` from `d`: the typed
/// variant for built-in kinds, [`EventData::Other`] (data kept verbatim)
/// otherwise.
fn typed_data<'de, D: Deserializer<'de>>(kind: String, d: D) -> Result<EventData, D::Error> {
    Ok(match kind.as_str() {
        "turn/start" => {
            let x = TurnStartIn::deserialize(d)?;
            EventData::TurnStart {
                turn: x.turn,
                trigger: x.trigger,
            }
        }
        "turn/end" => {
            let x = TurnEndIn::deserialize(d)?;
            EventData::TurnEnd {
                turn: x.turn,
                reason: x.reason,
            }
        }
        "step/start" => {
            let x = StepIn::deserialize(d)?;
            EventData::StepStart {
                turn: x.turn,
                step: x.step,
            }
        }
        "step/end" => {
            let x = StepIn::deserialize(d)?;
            EventData::StepEnd {
                turn: x.turn,
                step: x.step,
            }
        }
        "user/message" => {
            let x = MessageIn::deserialize(d)?;
            EventData::UserMessage {
                content: x.content,
                source: x.source,
            }
        }
        "context/message" => {
            let x = MessageIn::deserialize(d)?;
            EventData::ContextMessage {
                content: x.content,
                source: x.source,
            }
        }
        "assistant/chunk" => {
            let x = ChunkIn::deserialize(d)?;
            EventData::AssistantChunk {
                turn: x.turn,
                step: x.step,
                chunk: x.chunk,
            }
        }
        "assistant/message" => {
            let x = AssistantIn::deserialize(d)?;
            EventData::AssistantMessage {
                turn: x.turn,
                step: x.step,
                content: x.content,
            }
        }
        "tool/call" => {
            let x = ToolCallIn::deserialize(d)?;
            EventData::ToolCall {
                turn: x.turn,
                step: x.step,
                call_id: x.call_id,
                name: x.name,
                arguments: x.arguments,
            }
        }
        "tool/result" => {
            let x = ToolResultIn::deserialize(d)?;
            EventData::ToolResult {
                turn: x.turn,
                step: x.step,
                call_id: x.call_id,
                content: x.content,
                is_error: x.is_error,
                error_code: x.error_code,
            }
        }
        "steering/message" => {
            let x = SteeringIn::deserialize(d)?;
            EventData::SteeringMessage {
                turn: x.turn,
                content: x.content,
                source: x.source,
            }
        }
        "usage" => {
            let x = UsageIn::deserialize(d)?;
            EventData::Usage {
                turn: x.turn,
                step: x.step,
                usage: x.usage,
            }
        }
        "error" => {
            let x = ErrorIn::deserialize(d)?;
            EventData::Error {
                turn: x.turn,
                step: x.step,
                message: x.message,
                code: x.code,
            }
        }
        _ => EventData::Other {
            data: Value::deserialize(d)?,
            kind,
        },
    })
}

impl EventData {
    /// Builds the typed payload of an event `type` from its JSON `data`.
    /// Unknown kinds become [`EventData::Other`].
    ///
    /// # Errors
    /// When a built-in kind's `data` lacks a field or has a wrong type.
    pub fn from_parts(kind: String, data: Value) -> Result<Self, serde_json::Error> {
        typed_data(kind, data)
    }
}

/// Deserializes `data` directly into its typed variant once `type` is known.
struct DataSeed(String);

impl<'de> DeserializeSeed<'de> for DataSeed {
    type Value = EventData;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<EventData, D::Error> {
        let kind = self.0.clone();
        typed_data(self.0, d).map_err(|e| D::Error::custom(format!("\"{kind}\" data: {e}")))
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
        let mut data: Option<EventData> = None;
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
