//! Provider-independent bounds on one model step's output.

use dsh_protocol::codes;

use crate::{ContentBlock, StreamChunk};

/// Default of [`StepLimits::max_tool_calls`].
pub const DEFAULT_MAX_TOOL_CALLS: usize = 128;

/// Default of [`StepLimits::max_output_bytes`] (4 MiB).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// Bounds on what one model step (one streamed reply) may produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepLimits {
    /// Most tool calls (distinct tool-call block indices) in one step;
    /// one more fails the step with `TOO_MANY_TOOL_CALLS`.
    pub max_tool_calls: usize,
    /// Most output bytes in one step: text + reasoning + tool-call argument
    /// deltas (UTF-8 bytes); more fails the step with `STEP_TOO_LARGE`.
    pub max_output_bytes: usize,
}

impl Default for StepLimits {
    /// 128 tool calls, 4 MiB of output.
    fn default() -> Self {
        Self {
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        }
    }
}

/// A step limit was exceeded: [`code`](Self::code) is
/// `TOO_MANY_TOOL_CALLS` or `STEP_TOO_LARGE`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StepLimitError {
    /// `codes::TOO_MANY_TOOL_CALLS` or `codes::STEP_TOO_LARGE`.
    pub code: &'static str,
    /// Human-readable message naming the limit.
    pub message: String,
}

/// Counts one step's chunks against [`StepLimits`]. Feed every chunk, in
/// order, to [`StepMeter::observe`]; the first chunk that crosses a limit
/// returns the error (and so does every later one).
#[derive(Debug, Clone)]
pub struct StepMeter {
    limits: StepLimits,
    bytes: usize,
    /// Indices of the tool-call blocks seen so far (a step has few).
    tool_calls: Vec<u32>,
    /// Indices of blocks whose deltas were counted.
    counted: Vec<u32>,
}

impl StepMeter {
    /// A meter at the start of a step.
    pub fn new(limits: StepLimits) -> Self {
        Self {
            limits,
            bytes: 0,
            tool_calls: Vec::new(),
            counted: Vec::new(),
        }
    }

    /// Output bytes counted so far.
    pub fn output_bytes(&self) -> usize {
        self.bytes
    }

    /// Tool calls counted so far.
    pub fn tool_calls(&self) -> usize {
        self.tool_calls.len()
    }

    /// Counts `chunk`.
    ///
    /// # Errors
    /// `TOO_MANY_TOOL_CALLS` when the step now has more than
    /// `max_tool_calls` tool calls; `STEP_TOO_LARGE` when it now has more
    /// than `max_output_bytes` of output. A `BlockEnd` whose block had no
    /// deltas counts its full content instead.
    pub fn observe(&mut self, chunk: &StreamChunk) -> Result<(), StepLimitError> {
        match chunk {
            StreamChunk::TextDelta { index, text }
            | StreamChunk::ReasoningDelta { index, text } => {
                self.add_bytes(*index, text.len());
            }
            StreamChunk::ToolCallDelta {
                index,
                arguments_delta,
                ..
            } => {
                self.add_tool_call(*index);
                self.add_bytes(*index, arguments_delta.len());
            }
            StreamChunk::BlockEnd { index, block } => {
                let size = match block {
                    ContentBlock::Text(t) => t.text.len(),
                    ContentBlock::Reasoning(r) => r.text.len(),
                    ContentBlock::ToolCall(c) => {
                        self.add_tool_call(*index);
                        c.arguments.len()
                    }
                    _ => 0,
                };
                if !self.counted.contains(index) {
                    self.add_bytes(*index, size);
                }
            }
            _ => {}
        }
        self.check()
    }

    fn add_tool_call(&mut self, index: u32) {
        if !self.tool_calls.contains(&index) {
            self.tool_calls.push(index);
        }
    }

    fn add_bytes(&mut self, index: u32, n: usize) {
        if !self.counted.contains(&index) {
            self.counted.push(index);
        }
        self.bytes = self.bytes.saturating_add(n);
    }

    fn check(&self) -> Result<(), StepLimitError> {
        if self.tool_calls.len() > self.limits.max_tool_calls {
            return Err(StepLimitError {
                code: codes::TOO_MANY_TOOL_CALLS,
                message: format!(
                    "the model asked for more than {} tool calls in one step (max_tool_calls); the step ended",
                    self.limits.max_tool_calls
                ),
            });
        }
        if self.bytes > self.limits.max_output_bytes {
            return Err(StepLimitError {
                code: codes::STEP_TOO_LARGE,
                message: format!(
                    "the model's output in one step exceeded {} bytes (max_output_bytes); the step ended",
                    self.limits.max_output_bytes
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_end_without_deltas_counts_its_content_once() {
        let limits = StepLimits {
            max_tool_calls: 1,
            max_output_bytes: 5,
        };
        let mut m = StepMeter::new(limits);
        let delta = StreamChunk::TextDelta {
            index: 0,
            text: "abc".into(),
        };
        let end = |i, t: &str| StreamChunk::BlockEnd {
            index: i,
            block: ContentBlock::text(t),
        };
        assert!(m.observe(&delta).is_ok());
        assert!(m.observe(&end(0, "abc")).is_ok(), "not counted twice");
        assert_eq!(m.output_bytes(), 3);
        let e = m.observe(&end(1, "xyz")).unwrap_err();
        assert_eq!(e.code, codes::STEP_TOO_LARGE);
        let mut m = StepMeter::new(limits);
        let call = |i| StreamChunk::ToolCallDelta {
            index: i,
            id: format!("c{i}"),
            name: Some("t".into()),
            arguments_delta: String::new(),
        };
        assert!(m.observe(&call(0)).is_ok());
        assert!(m.observe(&call(0)).is_ok(), "same call, same index");
        assert_eq!(
            m.observe(&call(1)).unwrap_err().code,
            codes::TOO_MANY_TOOL_CALLS
        );
    }
}
