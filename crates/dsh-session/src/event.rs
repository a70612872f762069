//! The event vocabulary: [`SessionEvent`] and its [`EventData`], with the
//! reference's JSON shape `{"type", "seq", "time", "data"}`.
//!
//! Open sets ([`EventData`], [`TurnTrigger`], [`TurnEndReason`]) keep kinds
//! they do not know in an `Other` variant that serializes back to the same
//! JSON, so nothing a plugin logged is dropped.

use dsh_llm::{ContentBlock, MessageSource, StreamChunk, TokenUsage};
use serde_json::{Map, Value};

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
    /// The typed payload; [`EventData::kind`] is the JSON `type`.
    pub data: EventData,
}

/// The payload of a [`SessionEvent`], one variant per event `type`.
///
/// Field names in JSON are those of the reference (`callId`, `isError`, …).
/// Optional fields (`code`, `errorCode`) are omitted, not `null`, when absent.
#[derive(Debug, Clone, PartialEq)]
pub enum EventData {
    /// `turn/start`: a turn began after draining queued messages.
    TurnStart {
        /// Turn number (1-based in the loop).
        turn: u64,
        /// What started it.
        trigger: TurnTrigger,
    },
    /// `turn/end`: a turn finished, for any reason.
    TurnEnd {
        /// Turn number.
        turn: u64,
        /// Why it ended.
        reason: TurnEndReason,
    },
    /// `step/start`: one model step began.
    StepStart {
        /// Turn number.
        turn: u64,
        /// Step number within the turn.
        step: u64,
    },
    /// `step/end`: one model step ended (also failed steps).
    StepEnd {
        /// Turn number.
        turn: u64,
        /// Step number within the turn.
        step: u64,
    },
    /// `user/message`: a queued message drained at turn start (no turn number).
    UserMessage {
        /// The message content.
        content: Vec<ContentBlock>,
        /// Who sent it.
        source: MessageSource,
    },
    /// `context/message`: an injected message (any time, no turn number).
    ContextMessage {
        /// The injected content.
        content: Vec<ContentBlock>,
        /// Who injected it.
        source: MessageSource,
    },
    /// `assistant/chunk`: one raw stream chunk as received.
    AssistantChunk {
        /// Turn number.
        turn: u64,
        /// Step number.
        step: u64,
        /// The chunk.
        chunk: StreamChunk,
    },
    /// `assistant/message`: the assembled reply of a successful model call.
    AssistantMessage {
        /// Turn number.
        turn: u64,
        /// Step number.
        step: u64,
        /// The reply's blocks.
        content: Vec<ContentBlock>,
    },
    /// `tool/call`: logged before a tool call runs.
    ToolCall {
        /// Turn number.
        turn: u64,
        /// Step number.
        step: u64,
        /// The call id (`callId`).
        call_id: String,
        /// The tool name.
        name: String,
        /// The raw argument text the model produced.
        arguments: String,
    },
    /// `tool/result`: logged after a tool call.
    ToolResult {
        /// Turn number.
        turn: u64,
        /// Step number.
        step: u64,
        /// The call id (`callId`).
        call_id: String,
        /// The result content.
        content: Vec<ContentBlock>,
        /// Whether the result is an error (`isError`).
        is_error: bool,
        /// Stable error code (`errorCode`, an extension of the reference),
        /// omitted when `None`.
        error_code: Option<String>,
    },
    /// `steering/message`: steering drained between steps.
    SteeringMessage {
        /// Turn number.
        turn: u64,
        /// The steering content.
        content: Vec<ContentBlock>,
        /// Who sent it.
        source: MessageSource,
    },
    /// `usage`: token usage of one model call.
    Usage {
        /// Turn number.
        turn: u64,
        /// Step number.
        step: u64,
        /// The counts.
        usage: TokenUsage,
    },
    /// `error`: a contained failure.
    Error {
        /// Turn number.
        turn: u64,
        /// Step number (0 for failures outside a step).
        step: u64,
        /// Human-readable message.
        message: String,
        /// Stable code, omitted when `None`.
        code: Option<String>,
    },
    /// A plugin-defined kind, kept untouched. `kind` must not be one of the
    /// built-in kinds (such an event would not load back).
    Other {
        /// The event `type`.
        kind: String,
        /// The event's `data` value, verbatim.
        data: Value,
    },
}

/// The built-in event kinds, in the order of the reference's table.
pub const EVENT_KINDS: &[&str] = &[
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    "user/message",
    "context/message",
    "assistant/chunk",
    "assistant/message",
    "tool/call",
    "tool/result",
    "steering/message",
    "usage",
    "error",
];

impl EventData {
    /// The event `type`: `turn/start`, …, `error`, or the plugin's kind.
    pub fn kind(&self) -> &str {
        match self {
            EventData::TurnStart { .. } => "turn/start",
            EventData::TurnEnd { .. } => "turn/end",
            EventData::StepStart { .. } => "step/start",
            EventData::StepEnd { .. } => "step/end",
            EventData::UserMessage { .. } => "user/message",
            EventData::ContextMessage { .. } => "context/message",
            EventData::AssistantChunk { .. } => "assistant/chunk",
            EventData::AssistantMessage { .. } => "assistant/message",
            EventData::ToolCall { .. } => "tool/call",
            EventData::ToolResult { .. } => "tool/result",
            EventData::SteeringMessage { .. } => "steering/message",
            EventData::Usage { .. } => "usage",
            EventData::Error { .. } => "error",
            EventData::Other { kind, .. } => kind,
        }
    }

    /// The turn number the event carries, if its kind has one.
    pub fn turn(&self) -> Option<u64> {
        match self {
            EventData::TurnStart { turn, .. }
            | EventData::TurnEnd { turn, .. }
            | EventData::StepStart { turn, .. }
            | EventData::StepEnd { turn, .. }
            | EventData::AssistantChunk { turn, .. }
            | EventData::AssistantMessage { turn, .. }
            | EventData::ToolCall { turn, .. }
            | EventData::ToolResult { turn, .. }
            | EventData::SteeringMessage { turn, .. }
            | EventData::Usage { turn, .. }
            | EventData::Error { turn, .. } => Some(*turn),
            EventData::UserMessage { .. }
            | EventData::ContextMessage { .. }
            | EventData::Other { .. } => None,
        }
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

impl TurnEndReason {
    /// The `kind` tag.
    pub fn kind(&self) -> &str {
        match self {
            TurnEndReason::Completed => "completed",
            TurnEndReason::Aborted { .. } => "aborted",
            TurnEndReason::Error { .. } => "error",
            TurnEndReason::Disposed => "disposed",
            TurnEndReason::MaxSteps => "max-steps",
            TurnEndReason::Other { kind, .. } => kind,
        }
    }
}
