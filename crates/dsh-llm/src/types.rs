//! The request/response records of the LLM layer ([`ModelRequest`],
//! [`ModelResponse`]); the message vocabulary they carry lives in
//! `dsh-protocol` and is re-exported here.

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::history::History;
pub use dsh_protocol::content::*;
pub use dsh_protocol::{CallId, ToolCall};

/// One model request. `model` is also the routing key of the adapter registry.
///
/// `cancel` aborts the request (connect and body reads); it is not serialized.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRequest {
    /// The model name.
    pub model: String,
    /// The conversation history (an O(1)-clone snapshot).
    pub messages: History,
    /// System prompt text for the provider's system slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The tools, shared and serialized once per tool set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolSet>,
    /// Assistant prefix continuation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill: Option<Vec<ContentBlock>>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Output token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
    /// Cancellation of this request.
    #[serde(skip)]
    pub cancel: CancellationToken,
}

/// What `generate` returns: the assembled assistant message, usage if any was
/// reported, and the finish reason (`stop` when none arrived).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// The assistant message.
    pub message: Message,
    /// Token usage, absent when the stream reported none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// Why the model stopped.
    pub finish: FinishReason,
}
