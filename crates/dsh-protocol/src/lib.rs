//! The records dsh speaks, one struct per fact, serde only (no runtime, no
//! locks).
//!
//! - [`content`]: message content ([`ContentBlock`], [`Message`]), stream
//!   chunks, usage and tool schemas, serialized with the reference
//!   harness's names so logs interchange;
//! - [`tool`]: [`ToolCall`] and [`ToolResult`], the same records from the
//!   model's stream through validation, the tool body, the session log and
//!   the next request;
//! - [`event`]: the session log's [`SessionEvent`] envelope and its
//!   [`EventPayload`] kinds;
//! - [`ids`]: [`CallId`], [`SessionId`], [`AgentId`];
//! - [`image`]: the image formats a model may be sent, told by their magic
//!   bytes, with their dimensions read from the header alone;
//! - [`jsonrpc`]: a JSON-RPC message's `id` found in the raw bytes of a
//!   message too large to parse, so that an error can still answer it;
//! - [`codes`]: every stable error code with its meaning, whether it is
//!   transient and whether it goes back to the model or ends the turn, and
//!   the [`ErrorCode`] trait every coded error implements.
//!
//! Every other dsh crate depends on this one; it depends on nothing of dsh.

pub mod codes;
pub mod content;
pub mod event;
pub mod ids;
pub mod image;
pub mod jsonrpc;
pub mod open;
pub mod permission;
pub mod time;
pub mod tool;

pub use codes::{Code, Disposition, ErrorCode};
pub use content::{
    ContentBlock, FinishReason, ImageBlock, Message, MessageSource, ReasoningBlock, Role,
    StreamChunk, TextBlock, TokenUsage, ToolResultBlock, ToolSchema, ToolSet,
};
pub use event::{
    AssistantMessageEvent, ChunkEvent, CompactionEvent, ErrorEvent, EventPayload, MessageEvent,
    PruneEvent, RewindEvent, SessionEvent, SteeringEvent, StepEvent, ToolCallEvent,
    ToolResultEvent, TurnEndEvent, TurnEndReason, TurnStartEvent, TurnTrigger, UsageEvent,
    EVENT_KINDS,
};
pub use ids::{AgentId, CallId, SessionId};
pub use permission::SandboxMode;
pub use tool::{ToolCall, ToolFailure, ToolResult};
