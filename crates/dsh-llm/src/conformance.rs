//! The adapter conformance kit (feature `testkit`): a reusable suite that
//! checks an adapter's chunk stream against the contract of
//! [`crate::StreamChunk`].
//!
//! Two layers:
//! - [`check_chunks`]: a pure checker over a recorded item sequence, usable
//!   from any test (and property tests).
//! - [`check_adapter`]: runs every [`Scenario`] against an adapter built by a
//!   caller-supplied factory and panics with a precise message on the first
//!   violation. The per-scenario functions ([`check_text_reply`],
//!   [`check_tool_call_reply`], [`check_abort`], [`check_cancelled_before_start`])
//!   return `Result` instead, for callers that want to assert differently.
//!
//! Rules checked on every stream (stricter than consumers need, equal to what
//! the shipped adapters guarantee):
//! 1. each new block index, at its first appearance, is greater than every
//!    index seen before (monotonic first appearance);
//! 2. a `block-start` is unique per index and precedes the block's other
//!    chunks; deltas match the block's type;
//! 3. no delta and no second `block-end` after a block's `block-end`; the
//!    `block-end` block agrees with the deltas streamed for it;
//! 4. tool-call deltas carry a non-empty id, the same for the whole block;
//! 5. `usage` at most once and before `finish`;
//! 6. exactly one `finish` and nothing after it — unless the stream ends with
//!    an error item, which must then be its last item (and there is no finish);
//! 7. abort: once `options.cancel` fires on a stalled stream, the stream ends
//!    with an error or `finish{aborted}` within [`ABORT_DEADLINE`].

use dsh_kernel::ErrorCode;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

use crate::assembler::BlockAssembler;
use crate::error::LlmError;
use crate::service::{ChunkStream, LlmAdapter};
use crate::types::{ContentBlock, FinishReason, ModelRequest, ModelResponse, StreamChunk};

/// How long a cancelled stream may take to end.
pub const ABORT_DEADLINE: Duration = Duration::from_millis(100);

/// Upper bound for a whole non-abort scenario (guards against hangs).
pub const SCENARIO_TIMEOUT: Duration = Duration::from_secs(20);

/// What the factory must set up for each scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// A reply with at least one non-empty text block and no tool call,
    /// finishing with `stop`.
    TextReply,
    /// A reply with at least one tool call (id and name set), finishing with
    /// `tool-calls`.
    ToolCallReply,
    /// A reply that delivers at least one chunk and then stalls until the
    /// request is cancelled (the kit cancels `options.cancel`).
    Abort,
    /// Any reply; the kit cancels `options.cancel` before the first poll.
    CancelledBeforeStart,
}

impl Scenario {
    /// Every scenario, in the order [`check_adapter`] runs them.
    pub const ALL: [Scenario; 4] = [
        Scenario::TextReply,
        Scenario::ToolCallReply,
        Scenario::Abort,
        Scenario::CancelledBeforeStart,
    ];
}

/// An adapter and the options of one call.
pub struct Setup {
    /// The adapter under test.
    pub adapter: Arc<dyn LlmAdapter>,
    /// The options to call it with (`cancel` is the token the kit fires).
    pub options: ModelRequest,
}

impl Setup {
    /// Bundles an adapter and options.
    pub fn new(adapter: Arc<dyn LlmAdapter>, options: ModelRequest) -> Self {
        Self { adapter, options }
    }
}

/// A broken rule: where (item position, 0-based) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Position of the offending item in the stream (or the stream length
    /// for rules about the end).
    pub position: usize,
    /// What was wrong.
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "item {}: {}", self.position, self.message)
    }
}

impl std::error::Error for Violation {}

/// One stream item as recorded by the kit.
pub type Item = Result<StreamChunk, LlmError>;

/// Runs every scenario against adapters built by `factory`, panicking with the
/// scenario and the violation on the first failure.
///
/// # Panics
/// On any contract violation (this is test support).
pub async fn check_adapter<F, Fut>(mut factory: F)
where
    F: FnMut(Scenario) -> Fut,
    Fut: Future<Output = Setup>,
{
    for scenario in Scenario::ALL {
        let setup = factory(scenario).await;
        let outcome = match scenario {
            Scenario::TextReply => check_text_reply(setup).await.map(|_| ()),
            Scenario::ToolCallReply => check_tool_call_reply(setup).await.map(|_| ()),
            Scenario::Abort => check_abort(setup).await.map(|_| ()),
            Scenario::CancelledBeforeStart => check_cancelled_before_start(setup).await.map(|_| ()),
        };
        if let Err(v) = outcome {
            panic!("adapter conformance: scenario {scenario:?}: {v}");
        }
    }
}

/// Checks a text reply (see [`Scenario::TextReply`]); returns the assembled
/// result.
///
/// # Errors
/// The first violated rule.
pub async fn check_text_reply(setup: Setup) -> Result<ModelResponse, Violation> {
    let items = collect(setup.adapter.stream(setup.options)).await?;
    let result = check_completed(&items)?;
    let end = items.len();
    let content = &result.message.content;
    if !content
        .iter()
        .any(|b| b.as_text().is_some_and(|t| !t.is_empty()))
    {
        return Err(violation(end, "expected a non-empty text block"));
    }
    if content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolCall(_)))
    {
        return Err(violation(end, "a text reply must not contain tool calls"));
    }
    if result.finish != FinishReason::Stop {
        return Err(violation(
            end,
            format!("expected finish stop, got {:?}", result.finish),
        ));
    }
    Ok(result)
}

/// Checks a tool-call reply (see [`Scenario::ToolCallReply`]); returns the
/// assembled result.
///
/// # Errors
/// The first violated rule.
pub async fn check_tool_call_reply(setup: Setup) -> Result<ModelResponse, Violation> {
    let items = collect(setup.adapter.stream(setup.options)).await?;
    let result = check_completed(&items)?;
    let end = items.len();
    let calls: Vec<_> = result
        .message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(c),
            _ => None,
        })
        .collect();
    if calls.is_empty() {
        return Err(violation(end, "expected at least one tool-call block"));
    }
    if let Some(c) = calls
        .iter()
        .find(|c| c.call_id.is_empty() || c.name.is_empty())
    {
        return Err(violation(
            end,
            format!("tool call without id or name: {c:?}"),
        ));
    }
    if result.finish != FinishReason::ToolCalls {
        return Err(violation(
            end,
            format!("expected finish tool-calls, got {:?}", result.finish),
        ));
    }
    Ok(result)
}

/// Checks abort handling (see [`Scenario::Abort`]): waits for the first
/// chunk, cancels, and requires the stream to end within [`ABORT_DEADLINE`]
/// with an error or `finish{aborted}`. Returns every item seen.
///
/// # Errors
/// The first violated rule.
pub async fn check_abort(setup: Setup) -> Result<Vec<Item>, Violation> {
    let cancel = setup.options.cancel.clone();
    let mut stream = setup.adapter.stream(setup.options);
    let mut items = Vec::new();
    match tokio::time::timeout(SCENARIO_TIMEOUT, stream.next()).await {
        Ok(Some(Ok(chunk))) => items.push(Ok(chunk)),
        Ok(other) => {
            return Err(violation(
                0,
                format!("the abort scenario must deliver a chunk before stalling, got {other:?}"),
            ))
        }
        Err(_) => return Err(violation(0, "no first chunk within the scenario timeout")),
    }
    cancel.cancel();
    let drained = tokio::time::timeout(ABORT_DEADLINE, async {
        while let Some(item) = stream.next().await {
            items.push(item);
        }
    })
    .await;
    if drained.is_err() {
        return Err(violation(
            items.len(),
            format!("stream did not end within {ABORT_DEADLINE:?} of cancellation"),
        ));
    }
    check_chunks(&items)?;
    ended_by_abort(&items)?;
    Ok(items)
}

/// Checks a request cancelled before its first poll: the stream must end
/// within [`ABORT_DEADLINE`] with an error or `finish{aborted}`.
///
/// # Errors
/// The first violated rule.
pub async fn check_cancelled_before_start(setup: Setup) -> Result<Vec<Item>, Violation> {
    setup.options.cancel.cancel();
    let stream = setup.adapter.stream(setup.options);
    let items = match tokio::time::timeout(ABORT_DEADLINE, stream.collect::<Vec<_>>()).await {
        Ok(items) => items,
        Err(_) => {
            return Err(violation(
                0,
                format!("a pre-cancelled stream did not end within {ABORT_DEADLINE:?}"),
            ))
        }
    };
    check_chunks(&items)?;
    ended_by_abort(&items)?;
    Ok(items)
}

/// Drains a stream (bounded by [`SCENARIO_TIMEOUT`]).
///
/// # Errors
/// A violation when the stream does not end in time.
pub async fn collect(stream: ChunkStream) -> Result<Vec<Item>, Violation> {
    tokio::time::timeout(SCENARIO_TIMEOUT, stream.collect::<Vec<_>>())
        .await
        .map_err(|_| violation(0, format!("stream did not end within {SCENARIO_TIMEOUT:?}")))
}

/// Checks rules 1–6 on a recorded stream; then requires a successful end
/// (a `finish`, no error) and returns the assembled result.
///
/// # Errors
/// The first violated rule, or the stream's error.
pub fn check_completed(items: &[Item]) -> Result<ModelResponse, Violation> {
    check_chunks(items)?;
    let mut asm = BlockAssembler::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            Ok(chunk) => {
                asm.push(chunk);
            }
            Err(e) => {
                return Err(violation(
                    i,
                    format!("stream failed: {} {}", e.code(), e.message),
                ))
            }
        }
    }
    if !asm.has_finish() {
        return Err(violation(items.len(), "stream ended without finish"));
    }
    asm.result()
        .map_err(|e| violation(items.len(), format!("assembly failed: {e}")))
}

fn ended_by_abort(items: &[Item]) -> Result<(), Violation> {
    match items.last() {
        Some(Err(_)) => Ok(()),
        Some(Ok(StreamChunk::Finish {
            reason: FinishReason::Aborted,
        })) => Ok(()),
        other => Err(violation(
            items.len(),
            format!("a cancelled stream must end with an error or finish{{aborted}}, ended with {other:?}"),
        )),
    }
}

#[derive(Default)]
struct BlockState {
    kind: String,
    started: bool,
    ended: bool,
    text: String,
    tool_id: Option<String>,
    tool_name: Option<String>,
}

/// Checks rules 1–6 (see the module docs) on a recorded item sequence. A
/// sequence is complete when it ends with `finish` or an error; a sequence
/// that simply stops is accepted here only if it is empty or was cut by the
/// caller (use [`check_completed`] to require an end).
///
/// # Errors
/// The first violated rule.
pub fn check_chunks(items: &[Item]) -> Result<(), Violation> {
    let mut blocks: HashMap<u32, BlockState> = HashMap::new();
    let mut max_index: Option<u32> = None;
    let mut usage_seen = false;
    let mut finish_seen = false;
    for (i, item) in items.iter().enumerate() {
        if finish_seen {
            return Err(violation(i, format!("item after finish: {item:?}")));
        }
        let chunk = match item {
            Ok(c) => c,
            Err(e) => {
                if i + 1 != items.len() {
                    return Err(violation(
                        i + 1,
                        format!("item after the error {}", e.code()),
                    ));
                }
                continue;
            }
        };
        let index = match chunk {
            StreamChunk::BlockStart { index, .. }
            | StreamChunk::TextDelta { index, .. }
            | StreamChunk::ReasoningDelta { index, .. }
            | StreamChunk::ToolCallDelta { index, .. }
            | StreamChunk::BlockEnd { index, .. } => Some(*index),
            StreamChunk::Usage { .. } => {
                if usage_seen {
                    return Err(violation(i, "second usage chunk"));
                }
                usage_seen = true;
                None
            }
            StreamChunk::Finish { .. } => {
                finish_seen = true;
                None
            }
        };
        let Some(index) = index else { continue };
        let fresh = !blocks.contains_key(&index);
        if fresh {
            if max_index.is_some_and(|m| index <= m) {
                return Err(violation(
                    i,
                    format!("block index {index} first appears after index {max_index:?}"),
                ));
            }
            max_index = Some(index);
        }
        let block = blocks.entry(index).or_default();
        let expected_kind = match chunk {
            StreamChunk::BlockStart { block_type, .. } => block_type.as_str(),
            StreamChunk::TextDelta { .. } => "text",
            StreamChunk::ReasoningDelta { .. } => "reasoning",
            StreamChunk::ToolCallDelta { .. } => "tool-call",
            StreamChunk::BlockEnd { block, .. } => block.kind(),
            _ => unreachable!("only block chunks reach here"),
        };
        if fresh {
            block.kind = expected_kind.to_string();
        } else if block.kind != expected_kind {
            return Err(violation(
                i,
                format!(
                    "{expected_kind} chunk on block {index} of type {}",
                    block.kind
                ),
            ));
        }
        if let StreamChunk::BlockStart { .. } = chunk {
            if !fresh {
                return Err(violation(
                    i,
                    format!("block-start for block {index} after its first chunk"),
                ));
            }
            block.started = true;
            continue;
        }
        if block.ended {
            return Err(violation(
                i,
                format!("chunk for block {index} after its block-end"),
            ));
        }
        match chunk {
            StreamChunk::TextDelta { text, .. } | StreamChunk::ReasoningDelta { text, .. } => {
                block.text.push_str(text);
            }
            StreamChunk::ToolCallDelta {
                id,
                name,
                arguments_delta,
                ..
            } => {
                if id.is_empty() {
                    return Err(violation(
                        i,
                        format!("tool-call delta on block {index} without id"),
                    ));
                }
                match &block.tool_id {
                    Some(prev) if prev != id => {
                        return Err(violation(
                            i,
                            format!("tool-call id changed on block {index}: {prev} → {id}"),
                        ))
                    }
                    _ => block.tool_id = Some(id.clone()),
                }
                if let Some(n) = name.as_ref().filter(|n| !n.is_empty()) {
                    block.tool_name = Some(n.clone());
                }
                block.text.push_str(arguments_delta);
            }
            StreamChunk::BlockEnd { block: b, .. } => {
                block.ended = true;
                let streamed = block.tool_id.is_some() || !block.text.is_empty();
                if streamed {
                    let agrees = match b {
                        ContentBlock::Text(t) => t.text == block.text,
                        ContentBlock::Reasoning(r) => r.text == block.text,
                        ContentBlock::ToolCall(c) => {
                            c.arguments == block.text
                                && block.tool_id.as_ref().is_none_or(|id| *id == c.call_id)
                                && block.tool_name.as_ref().is_none_or(|n| *n == c.name)
                        }
                        _ => true,
                    };
                    if !agrees {
                        return Err(violation(
                            i,
                            format!("block-end of block {index} disagrees with its deltas: {b:?}"),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn violation(position: usize, message: impl Into<String>) -> Violation {
    Violation {
        position,
        message: message.into(),
    }
}
