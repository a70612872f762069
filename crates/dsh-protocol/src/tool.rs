//! The tool-call records: [`ToolCall`] (what the model asked for) and
//! [`ToolResult`] (what it gets back), the same structs from the model's
//! stream through validation, the tool, the session log and the next request.

use serde::{Deserialize, Serialize};

use crate::content::ContentBlock;
use crate::ids::CallId;

/// One tool call as the model produced it.
///
/// Wire form in a `tool/call` event: `{"callId", "name", "arguments"}`; in a
/// content block the id is spelled `id` (see [`ContentBlock::ToolCall`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The provider's call id, copied into the result.
    pub call_id: CallId,
    /// The tool name the model asked for.
    pub name: String,
    /// The raw JSON text of the arguments, exactly as produced; may be
    /// invalid or cut off (`""` means `{}`).
    pub arguments: String,
}

impl ToolCall {
    /// A call.
    pub fn new(
        call_id: impl Into<CallId>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            call_id: call_id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// The answer to one [`ToolCall`]; never a Rust error: failures are
/// `is_error` results the model reads.
///
/// Wire form in a `tool/result` event: `{"callId", "content", "isError",
/// "errorCode"?, "errorMessage"?, "violations"?}`; the three failure fields
/// are present only for a structured failure (`errorMessage` and
/// `violations` only when non-empty).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: CallId,
    /// What the model reads. For an error the first block is the text
    /// `Error: <message>`; notes follow as further text blocks.
    pub content: Vec<ContentBlock>,
    /// Whether the call failed.
    pub is_error: bool,
    /// The structured failure (code, message, violations); `None` on
    /// success and for error results logged without one.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<ToolFailure>,
}

/// The structured side of an error result: what plugins (retry guards, UIs,
/// `dsh session stats`) route on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFailure {
    /// The stable code (`INVALID_ARGS`, `UNKNOWN_TOOL`, … or a tool's own).
    #[serde(rename = "errorCode")]
    pub code: String,
    /// The model-facing message, without the `Error: ` prefix.
    #[serde(
        rename = "errorMessage",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub message: String,
    /// The violations of an `INVALID_ARGS` failure, in validation order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<String>,
}

impl ToolResult {
    /// A successful result.
    pub fn success(call_id: impl Into<CallId>, content: Vec<ContentBlock>) -> Self {
        ToolResult {
            call_id: call_id.into(),
            content,
            is_error: false,
            failure: None,
        }
    }

    /// The failure code, `None` on success.
    pub fn code(&self) -> Option<&str> {
        self.failure.as_ref().map(|f| f.code.as_str())
    }

    /// The text blocks joined with `\n` (for logs and tests).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The `tool-result` block that carries this result in the model history
    /// (`isError` always set).
    pub fn to_block(&self) -> ContentBlock {
        ContentBlock::tool_result(self.call_id.clone(), self.content.clone(), self.is_error)
    }
}
