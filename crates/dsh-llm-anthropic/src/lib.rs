//! The Anthropic Messages API adapter: HTTP, SSE, translation, prompt
//! caching, errors.
//!
//! Start reading at [`AnthropicAdapter`] (an [`dsh_llm::LlmAdapter`]) and
//! [`register`], which serves every configured [`ModelRoute`] from one
//! adapter. The pipeline of one call is: [`request_bytes`] (request → wire
//! JSON, with `cache_control` breakpoints and thinking) → `POST
//! <base_url>/v1/messages` → [`dsh_llm::sse::SseParser`] (bytes → data
//! payloads) → [`Translator`] (payloads → [`dsh_llm::StreamChunk`]s).
//! Retries are the provider-neutral retry plugin of `dsh-llm`.
//!
//! Not done here: prefill (refused with `UNSUPPORTED`), non-streaming
//! calls, server tools, `tool_choice`, documents. Reading the key from the
//! environment is the caller's job: [`AnthropicConfig`] takes it as given.

#![warn(missing_docs)]

mod adapter;
mod config;
mod request;
mod translate;

pub use adapter::{register, status_error, AnthropicAdapter, MISSING_KEY, USER_AGENT};
pub use config::{
    check_api_key, AnthropicConfig, ModelRoute, ANTHROPIC_VERSION, DEFAULT_BASE_URL,
    DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_TOKENS, DEFAULT_MODELS,
    DEFAULT_STREAM_IDLE_TIMEOUT_MS, MAX_CONNECT_TIMEOUT_MS, MAX_MAX_EVENT_BYTES,
    MAX_STREAM_IDLE_TIMEOUT_MS, MIN_THINKING_BUDGET,
};
pub use request::{
    request_body, request_bytes, IMAGE_OMITTED, PREFILL_UNSUPPORTED, REDACTED_THINKING,
};
pub use translate::{api_error_kind, map_stop_reason, Translator, STREAM_ENDED_EARLY};
