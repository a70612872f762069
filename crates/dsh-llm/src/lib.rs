//! The provider-neutral LLM layer of dsh.
//!
//! - [`types`]: [`ModelRequest`] and [`ModelResponse`], and the message
//!   vocabulary of `dsh-protocol` (content blocks, messages, stream chunks).
//! - [`BlockAssembler`]: the one canonical chunk → message algorithm.
//! - [`CallIds`]: keeps a conversation's tool-call ids unique (a repeated
//!   id gets a suffix before the reply is recorded).
//! - [`LlmAdapter`] and [`LlmService`]: the provider seam and the registry with
//!   its `llm/stream` and `llm/generate` waterfalls.
//! - [`install_retry`]: the retry plugin on `llm/stream` (backoff with
//!   jitter, `Retry-After`, never after output).
//! - [`scripted`]: a scripted adapter for tests and the offline model.
//! - [`sse`]: the incremental server-sent-events parser every HTTP adapter
//!   reads its stream with (pure bytes → payloads, no I/O).
//! - [`stream`]: the streaming driver every HTTP adapter runs a call with
//!   (idle timeout, cancellation, chunk order); a [`stream::Dialect`] is
//!   the provider's part.
//! - [`http`]: provider-neutral helpers of HTTP adapters (status → error,
//!   transport errors, the cancel/timeout guard); [`lenient`]: the lenient
//!   wire field types their translators deserialize chunks with.
//! - `conformance` (feature `testkit`): the adapter conformance kit.
//!
//! Start reading at [`StreamChunk`] (the adapter output protocol) and
//! [`LlmService::stream`]. This crate does no I/O of its own and knows no
//! provider: adapters live in their own crates (`dsh-llm-deepseek`).

#![warn(missing_docs)]

mod assembler;
mod call_ids;
mod error;
mod history;
pub mod http;
pub mod lenient;
mod limits;
pub mod open;
mod order;
mod retry;
pub mod scripted;
mod service;
pub mod sse;
pub mod stream;
pub mod types;

#[cfg(feature = "testkit")]
pub mod conformance;

pub use assembler::BlockAssembler;
pub use call_ids::{CallIds, RenamedCall};
pub use error::{LlmError, LlmErrorKind};
pub use history::History;
pub use limits::{
    StepLimitError, StepLimits, StepMeter, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_TOOL_CALLS,
};
pub use order::answers_first_order;
pub use retry::{install_retry, parse_retry_after, RetryConfig};
pub use service::{blocks_of, error_stream, BlockStream, ChunkStream, LlmAdapter, LlmService};
pub use types::{
    CallId, ContentBlock, FinishReason, ImageBlock, Message, MessageSource, ModelRequest,
    ModelResponse, ReasoningBlock, Role, StreamChunk, TextBlock, TokenUsage, ToolCall,
    ToolResultBlock, ToolSchema, ToolSet,
};
