//! The DeepSeek chat-completions adapter: HTTP, SSE, translation, errors.
//!
//! Start reading at [`DeepSeekAdapter`] (an [`dsh_llm::LlmAdapter`]) and
//! [`register`], which serves every configured model name from one adapter.
//! The pipeline of one call is: [`request_body`] (options → wire JSON) →
//! `POST <base_url>/chat/completions` → [`SseParser`] (bytes → data payloads)
//! → [`Translator`] (payloads → [`dsh_llm::StreamChunk`]s). [`install_retry`]
//! adds the provider-neutral retry plugin to the `llm/stream` waterfall.
//!
//! The wire format follows the reference fact sheet
//! (`shared/reference/llm-and-deepseek.md`, sections c–f). The crate does not
//! do prefill (Beta chat-prefix completion), vision, or non-streaming calls.

#![warn(missing_docs)]

mod adapter;
mod config;
mod request;
mod retry;
mod sse;
mod translate;

pub use adapter::{
    parse_retry_after, register, status_error, DeepSeekAdapter, MISSING_KEY, USER_AGENT,
};
pub use config::{DeepSeekConfig, ReasoningEffort, Thinking, DEFAULT_BASE_URL, DEFAULT_MODELS};
pub use request::{request_body, wire_messages, PREFILL_UNSUPPORTED};
pub use retry::{install_retry, RetryConfig};
pub use sse::{SseParser, DONE};
pub use translate::{map_finish, Translator};
