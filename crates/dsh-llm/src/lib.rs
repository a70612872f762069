//! The provider-neutral LLM layer of dsh.
//!
//! - [`types`]: the vocabulary (content blocks, messages, stream chunks, …),
//!   serde-compatible with the reference harness's JSON logs.
//! - [`BlockAssembler`]: the one canonical chunk → message algorithm.
//! - [`LlmAdapter`] and [`LlmService`]: the provider seam and the registry with
//!   its `llm/stream` and `llm/generate` waterfalls.
//! - [`scripted`]: a scripted adapter for tests and the offline model.
//! - `conformance` (feature `testkit`): the adapter conformance kit.
//!
//! Start reading at [`StreamChunk`] (the adapter output protocol) and
//! [`LlmService::stream`]. This crate does no I/O of its own and knows no
//! provider: adapters live in their own crates (`dsh-llm-deepseek`).

#![warn(missing_docs)]

mod assembler;
mod error;
mod history;
pub mod open;
pub mod scripted;
mod service;
pub mod types;

#[cfg(feature = "testkit")]
pub mod conformance;

pub use assembler::BlockAssembler;
pub use error::{LlmError, LlmErrorKind};
pub use history::History;
pub use service::{blocks_of, error_stream, BlockStream, ChunkStream, LlmAdapter, LlmService};
pub use types::{
    ContentBlock, FinishReason, GenerateOptions, GenerateResult, ImageBlock, Message,
    MessageSource, ReasoningBlock, Role, StreamChunk, TextBlock, TokenUsage, ToolCallBlock,
    ToolResultBlock, ToolSchema,
};
