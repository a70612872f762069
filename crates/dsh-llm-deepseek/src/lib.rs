//! The DeepSeek chat-completions adapter: HTTP, SSE, translation, errors.
//!
//! Start reading at [`DeepSeekAdapter`] (an [`dsh_llm::LlmAdapter`]) and
//! [`register`], which serves every configured model name from one adapter.
//! The pipeline of one call is: [`request_bytes`] (options → wire JSON) →
//! `POST <base_url>/chat/completions` → [`SseParser`] (bytes → data payloads)
//! → [`Translator`] (payloads → [`dsh_llm::StreamChunk`]s). The
//! provider-neutral retry plugin lives in `dsh-llm` (`install_retry`).
//!
//! The wire format is specified in `docs/reference/deepseek-wire.md`
//! (sections c–f, the labels the comments here cite). The crate does not
//! do prefill (Beta chat-prefix completion), vision, or non-streaming calls.

#![warn(missing_docs)]

mod adapter;
mod config;
mod request;
mod translate;

pub use adapter::{register, status_error, DeepSeekAdapter, MISSING_KEY, USER_AGENT};
pub use config::{
    check_api_key, DeepSeekConfig, ReasoningEffort, Thinking, CONTEXT_WINDOW, DEFAULT_BASE_URL,
    DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAX_EVENT_BYTES, DEFAULT_MODELS,
    DEFAULT_STREAM_IDLE_TIMEOUT_MS, MAX_CONNECT_TIMEOUT_MS, MAX_MAX_EVENT_BYTES,
    MAX_STREAM_IDLE_TIMEOUT_MS,
};
pub use dsh_llm::parse_retry_after;
pub use dsh_llm::sse::{SseParser, DONE};
pub use request::{request_body, request_bytes, wire_messages, IMAGE_OMITTED, PREFILL_UNSUPPORTED};
pub use translate::{map_finish, Translator};
