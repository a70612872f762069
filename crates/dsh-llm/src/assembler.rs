//! `BlockAssembler`: the one canonical chunk → message algorithm.
//!
//! Semantics are the reference's (fact sheet §b). Decisions on malformed
//! sequences, each covered by a test:
//!
//! | input | outcome |
//! |---|---|
//! | delta for an index never started | block created with the delta's kind, assembled from deltas |
//! | delta after `block-end` for that index (straggler) | ignored |
//! | duplicate `block-start` (even with another type) | ignored; the first type wins |
//! | delta of the wrong kind for an open block (text on a tool call) | ignored |
//! | `block-end` without start or deltas | the block is appended in order at that point |
//! | second `block-end` for one index | the later block replaces the earlier in [`BlockAssembler::blocks`]; a block already handed out by [`BlockAssembler::flush_ready`] stays handed out |
//! | tool-call deltas that never carried an id | id `call-<index>`, name `""` |
//! | open block of a non-core type at the end | [`LlmErrorKind::IncompleteBlock`] on assembly |
//! | no `finish` | finish = `stop` |
//! | duplicate `finish` / `usage` | the last one wins |
//! | chunks after `finish` | processed (the assembler does not police the protocol) |
//!
//! State grows with the number of distinct indices plus the text received;
//! nothing else is retained.

use std::collections::HashMap;

use crate::error::{LlmError, LlmErrorKind};
use crate::types::{
    ContentBlock, FinishReason, Message, ModelResponse, ReasoningBlock, StreamChunk, TextBlock,
    TokenUsage, ToolCall,
};

#[derive(Debug, Clone)]
struct Partial {
    index: u32,
    block_type: BlockType,
    /// Text of text/reasoning blocks, arguments of tool calls.
    buffer: String,
    tool_call_id: Option<String>,
    tool_call_name: Option<String>,
    /// Set by `block-end`; freezes the partial.
    block: Option<ContentBlock>,
}

#[derive(Debug, Clone, PartialEq)]
enum BlockType {
    Text,
    Reasoning,
    ToolCall,
    Other(String),
}

impl BlockType {
    fn from_tag(tag: &str) -> Self {
        match tag {
            "text" => BlockType::Text,
            "reasoning" => BlockType::Reasoning,
            "tool-call" => BlockType::ToolCall,
            other => BlockType::Other(other.to_string()),
        }
    }
}

/// Assembles stream chunks into content blocks, usage and a finish reason.
///
/// Blocks are ordered by the first appearance of their index. `push` never
/// fails; assembly fails only for an open block of a type it cannot build.
#[derive(Debug, Default, Clone)]
pub struct BlockAssembler {
    partials: Vec<Partial>,
    positions: HashMap<u32, usize>,
    /// Cache of the last index looked up (deltas arrive in runs).
    last: Option<(u32, usize)>,
    flushed: usize,
    usage: Option<TokenUsage>,
    finish: Option<FinishReason>,
}

impl BlockAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk. Returns the block carried by a `block-end`, `None`
    /// for every other chunk.
    pub fn push(&mut self, chunk: &StreamChunk) -> Option<ContentBlock> {
        match chunk {
            StreamChunk::BlockStart { index, block_type } => {
                self.ensure(*index, || BlockType::from_tag(block_type));
                None
            }
            StreamChunk::TextDelta { index, text } => {
                let p = self.ensure(*index, || BlockType::Text);
                if p.block.is_none() && p.block_type == BlockType::Text {
                    p.buffer.push_str(text);
                }
                None
            }
            StreamChunk::ReasoningDelta { index, text } => {
                let p = self.ensure(*index, || BlockType::Reasoning);
                if p.block.is_none() && p.block_type == BlockType::Reasoning {
                    p.buffer.push_str(text);
                }
                None
            }
            StreamChunk::ToolCallDelta {
                index,
                id,
                name,
                arguments_delta,
            } => {
                let p = self.ensure(*index, || BlockType::ToolCall);
                if p.block.is_none() && p.block_type == BlockType::ToolCall {
                    if p.tool_call_id.as_deref() != Some(id.as_str()) {
                        p.tool_call_id = Some(id.clone());
                    }
                    if let Some(name) = name.as_deref().filter(|n| !n.is_empty()) {
                        if p.tool_call_name.as_deref() != Some(name) {
                            p.tool_call_name = Some(name.to_string());
                        }
                    }
                    p.buffer.push_str(arguments_delta);
                }
                None
            }
            StreamChunk::BlockEnd { index, block } => {
                let p = self.ensure(*index, || BlockType::from_tag(block.kind()));
                p.block = Some(block.clone());
                p.buffer = String::new();
                Some(block.clone())
            }
            StreamChunk::Usage { usage } => {
                self.usage = Some(*usage);
                None
            }
            StreamChunk::Finish { reason } => {
                self.finish = Some(reason.clone());
                None
            }
        }
    }

    fn ensure(&mut self, index: u32, block_type: impl FnOnce() -> BlockType) -> &mut Partial {
        let pos = match self.last {
            Some((i, pos)) if i == index => pos,
            _ => {
                let pos = match self.positions.get(&index) {
                    Some(&pos) => pos,
                    None => {
                        let pos = self.partials.len();
                        self.partials.push(Partial {
                            index,
                            block_type: block_type(),
                            buffer: String::new(),
                            tool_call_id: None,
                            tool_call_name: None,
                            block: None,
                        });
                        self.positions.insert(index, pos);
                        pos
                    }
                };
                self.last = Some((index, pos));
                pos
            }
        };
        &mut self.partials[pos]
    }

    fn assemble(p: &Partial) -> Result<ContentBlock, LlmError> {
        if let Some(block) = &p.block {
            return Ok(block.clone());
        }
        Ok(match &p.block_type {
            BlockType::Text => ContentBlock::Text(TextBlock {
                text: p.buffer.clone(),
                cache: None,
            }),
            BlockType::Reasoning => ContentBlock::Reasoning(ReasoningBlock {
                text: p.buffer.clone(),
            }),
            BlockType::ToolCall => ContentBlock::ToolCall(ToolCall {
                call_id: p
                    .tool_call_id
                    .clone()
                    .unwrap_or_else(|| format!("call-{}", p.index))
                    .into(),
                name: p.tool_call_name.clone().unwrap_or_default(),
                arguments: p.buffer.clone(),
            }),
            BlockType::Other(tag) => {
                return Err(LlmError::new(
                    LlmErrorKind::IncompleteBlock,
                    format!("cannot assemble incomplete block of type \"{tag}\""),
                ))
            }
        })
    }

    /// Every block in first-appearance order, open ones assembled from their
    /// deltas.
    ///
    /// # Errors
    /// `INCOMPLETE_BLOCK` for an open block of a non-core type.
    pub fn blocks(&self) -> Result<Vec<ContentBlock>, LlmError> {
        self.partials.iter().map(Self::assemble).collect()
    }

    /// The closed blocks not yet handed out, up to the first still-open one.
    /// Never hands out a block twice.
    pub fn flush_ready(&mut self) -> Vec<ContentBlock> {
        let mut out = Vec::new();
        while let Some(p) = self.partials.get(self.flushed) {
            match &p.block {
                Some(block) => out.push(block.clone()),
                None => break,
            }
            self.flushed += 1;
        }
        out
    }

    /// Every block not yet handed out, open ones assembled from their deltas.
    ///
    /// # Errors
    /// `INCOMPLETE_BLOCK` for an open block of a non-core type (nothing is
    /// marked as handed out then).
    pub fn flush_remaining(&mut self) -> Result<Vec<ContentBlock>, LlmError> {
        let out = self.partials[self.flushed..]
            .iter()
            .map(Self::assemble)
            .collect::<Result<Vec<_>, _>>()?;
        self.flushed = self.partials.len();
        Ok(out)
    }

    /// The last usage seen.
    pub fn usage(&self) -> Option<TokenUsage> {
        self.usage
    }

    /// The last finish seen, `stop` when none arrived.
    pub fn finish(&self) -> FinishReason {
        self.finish.clone().unwrap_or_default()
    }

    /// Whether a `finish` chunk arrived.
    pub fn has_finish(&self) -> bool {
        self.finish.is_some()
    }

    /// Number of distinct block indices seen (the size of the state).
    pub fn block_count(&self) -> usize {
        self.partials.len()
    }

    /// The assistant message of [`BlockAssembler::blocks`].
    ///
    /// # Errors
    /// As [`BlockAssembler::blocks`].
    pub fn message(&self) -> Result<Message, LlmError> {
        Ok(Message::assistant(self.blocks()?))
    }

    /// `{message, usage, finish}`.
    ///
    /// # Errors
    /// As [`BlockAssembler::blocks`].
    pub fn result(&self) -> Result<ModelResponse, LlmError> {
        Ok(ModelResponse {
            message: self.message()?,
            usage: self.usage,
            finish: self.finish(),
        })
    }
}
