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
    /// The kind of delta the partial still takes: its type while open,
    /// `None` once `block-end` froze it (one compare on the delta path).
    accepts: Option<BlockType>,
    /// Text of text/reasoning blocks, arguments of tool calls.
    buffer: String,
    tool_call_id: Option<String>,
    tool_call_name: Option<String>,
    /// The tag of a block of a non-core type.
    other_tag: Option<String>,
    /// Set by `block-end`; freezes the partial.
    block: Option<ContentBlock>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockType {
    Text,
    Reasoning,
    ToolCall,
    Other,
}

impl BlockType {
    fn from_tag(tag: &str) -> Self {
        match tag {
            "text" => BlockType::Text,
            "reasoning" => BlockType::Reasoning,
            "tool-call" => BlockType::ToolCall,
            _ => BlockType::Other,
        }
    }
}

/// The first capacity of a block's buffer.
const INITIAL_BUFFER: usize = 4096;

/// Below this many blocks an index is found by scanning (no hashing).
const SCAN_LIMIT: usize = 16;

/// Assembles stream chunks into content blocks, usage and a finish reason.
///
/// Blocks are ordered by the first appearance of their index. `push` never
/// fails; assembly fails only for an open block of a type it cannot build.
/// A delta costs one index compare and one append: no allocation beyond the
/// block's growing buffer, no hashing while the index repeats (deltas arrive
/// in runs) or the response has at most 16 blocks.
#[derive(Debug, Default, Clone)]
pub struct BlockAssembler {
    partials: Vec<Partial>,
    /// Index → position, consulted only past [`SCAN_LIMIT`] blocks.
    positions: HashMap<u32, usize>,
    /// The last index looked up and its position.
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

    /// Feeds one chunk. Returns the block carried by a `block-end` (as
    /// stored, the first `block-end` of an index freezes it), `None` for
    /// every other chunk.
    #[inline(always)]
    pub fn push(&mut self, chunk: &StreamChunk) -> Option<&ContentBlock> {
        match chunk {
            StreamChunk::TextDelta { index, text } => {
                self.append(*index, BlockType::Text, text);
                None
            }
            StreamChunk::ReasoningDelta { index, text } => {
                self.append(*index, BlockType::Reasoning, text);
                None
            }
            StreamChunk::ToolCallDelta {
                index,
                id,
                name,
                arguments_delta,
            } => {
                self.tool_delta(*index, id, name.as_deref(), arguments_delta);
                None
            }
            _ => self.push_control(chunk),
        }
    }

    /// Appends a text or reasoning delta to an open block of that kind.
    #[inline(always)]
    fn append(&mut self, index: u32, kind: BlockType, text: &str) {
        let p = self.ensure(index, kind, None);
        if p.accepts == Some(kind) {
            p.buffer.push_str(text);
        }
    }

    /// Records a tool-call delta on an open tool-call block: the id and name
    /// (the last non-empty one wins), the argument text appended.
    #[inline(always)]
    fn tool_delta(&mut self, index: u32, id: &str, name: Option<&str>, arguments: &str) {
        let p = self.ensure(index, BlockType::ToolCall, None);
        if p.accepts == Some(BlockType::ToolCall) {
            if p.tool_call_id.as_deref() != Some(id) {
                p.tool_call_id = Some(id.to_string());
            }
            if let Some(name) = name.filter(|n| !n.is_empty()) {
                if p.tool_call_name.as_deref() != Some(name) {
                    p.tool_call_name = Some(name.to_string());
                }
            }
            p.buffer.push_str(arguments);
        }
    }

    /// The chunks that are not deltas: starts, ends, usage, finish.
    #[inline(never)]
    fn push_control(&mut self, chunk: &StreamChunk) -> Option<&ContentBlock> {
        match chunk {
            StreamChunk::BlockStart { index, block_type } => {
                self.ensure(*index, BlockType::from_tag(block_type), Some(block_type));
                None
            }
            StreamChunk::BlockEnd { index, block } => {
                let tag = block.kind();
                let p = self.ensure(*index, BlockType::from_tag(tag), Some(tag));
                p.accepts = None;
                p.buffer = String::new();
                Some(&*p.block.insert(block.clone()))
            }
            StreamChunk::Usage { usage } => {
                self.usage = Some(*usage);
                None
            }
            StreamChunk::Finish { reason } => {
                self.finish = Some(reason.clone());
                None
            }
            // Deltas are handled by `push`.
            StreamChunk::TextDelta { .. }
            | StreamChunk::ReasoningDelta { .. }
            | StreamChunk::ToolCallDelta { .. } => None,
        }
    }

    /// The partial of `index`, created with `block_type` (and the tag of a
    /// non-core type) when the index is new.
    #[inline(always)]
    fn ensure(&mut self, index: u32, block_type: BlockType, tag: Option<&str>) -> &mut Partial {
        let pos = match self.last {
            Some((i, pos)) if i == index => pos,
            _ => self.locate(index, block_type, tag),
        };
        &mut self.partials[pos]
    }

    /// [`BlockAssembler::ensure`] off the fast path: finds or creates the
    /// partial and remembers it as the last one.
    #[inline(never)]
    fn locate(&mut self, index: u32, block_type: BlockType, tag: Option<&str>) -> usize {
        let found = if self.partials.len() <= SCAN_LIMIT {
            self.partials.iter().position(|p| p.index == index)
        } else {
            self.positions.get(&index).copied()
        };
        let pos = match found {
            Some(pos) => pos,
            None => {
                let pos = self.partials.len();
                self.partials.push(Partial {
                    index,
                    block_type,
                    accepts: Some(block_type),
                    // Streamed answers run to kilobytes: start there rather
                    // than copying through a dozen doublings.
                    buffer: String::with_capacity(INITIAL_BUFFER),
                    tool_call_id: None,
                    tool_call_name: None,
                    other_tag: (block_type == BlockType::Other)
                        .then(|| tag.unwrap_or_default().to_string()),
                    block: None,
                });
                if pos == SCAN_LIMIT {
                    // From now on the map is consulted: fill it once.
                    self.positions = self
                        .partials
                        .iter()
                        .enumerate()
                        .map(|(pos, p)| (p.index, pos))
                        .collect();
                } else if pos > SCAN_LIMIT {
                    self.positions.insert(index, pos);
                }
                pos
            }
        };
        self.last = Some((index, pos));
        pos
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
                signature: None,
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
            BlockType::Other => {
                let tag = p.other_tag.as_deref().unwrap_or_default();
                return Err(LlmError::new(
                    LlmErrorKind::IncompleteBlock,
                    format!("cannot assemble incomplete block of type \"{tag}\""),
                ));
            }
        })
    }

    /// [`BlockAssembler::assemble`] taking the partial's buffers instead of
    /// copying them.
    fn assemble_owned(p: Partial) -> Result<ContentBlock, LlmError> {
        if let Some(block) = p.block {
            return Ok(block);
        }
        Ok(match p.block_type {
            BlockType::Text => ContentBlock::Text(TextBlock {
                text: p.buffer,
                cache: None,
            }),
            BlockType::Reasoning => ContentBlock::Reasoning(ReasoningBlock {
                text: p.buffer,
                signature: None,
            }),
            BlockType::ToolCall => ContentBlock::ToolCall(ToolCall {
                call_id: p
                    .tool_call_id
                    .unwrap_or_else(|| format!("call-{}", p.index))
                    .into(),
                name: p.tool_call_name.unwrap_or_default(),
                arguments: p.buffer,
            }),
            BlockType::Other => return Self::assemble(&p),
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

    /// `{message, usage, finish}`, consuming the assembler: the blocks take
    /// the assembled text without a copy (what [`LlmService::generate`]
    /// uses).
    ///
    /// [`LlmService::generate`]: crate::LlmService::generate
    ///
    /// # Errors
    /// As [`BlockAssembler::blocks`].
    pub fn into_result(self) -> Result<ModelResponse, LlmError> {
        let finish = self.finish.unwrap_or_default();
        let blocks = self
            .partials
            .into_iter()
            .map(Self::assemble_owned)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ModelResponse {
            message: Message::assistant(blocks),
            usage: self.usage,
            finish,
        })
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
