//! The `openai-chat` adapter: the OpenAI chat-completions wire format, as
//! served by OpenAI, OpenRouter, Ollama, LM Studio, vLLM and llama.cpp's
//! server.
//!
//! Start reading at [`OpenAiConfig`] (one provider: base URL, optional key,
//! the models it serves as [`ModelRoute`]s, dialect [`Quirks`]) and
//! [`register`], which serves every configured model from one
//! [`OpenAiAdapter`]. The pipeline of one call is: [`request_bytes`]
//! (request → wire JSON) → `POST <base_url>/chat/completions` →
//! [`dsh_llm::sse::SseParser`] (bytes → data payloads) → [`Translator`]
//! (payloads → [`dsh_llm::StreamChunk`]s). Retries are the provider-neutral
//! retry plugin of `dsh-llm`.
//!
//! The translator takes what compatible servers actually send: reasoning
//! as `reasoning_content` or `reasoning`, tool calls without `index`, whole
//! in one delta, with `arguments` as an object, or re-sent whole; usage
//! from the final chunk; an `{"error":…}` object mid-stream. A stream that
//! ends without `[DONE]` after a `finish_reason` finishes normally; one that
//! ends before is `NETWORK` (retried while nothing was delivered).
//!
//! Not done here: prefill, non-streaming calls, passing reasoning back
//! (DeepSeek's thinking mode needs it: use `dsh-llm-deepseek` for DeepSeek),
//! the legacy `functions` field, `n > 1`.

#![warn(missing_docs)]

mod adapter;
mod config;
mod request;
mod translate;

pub use adapter::{register, status_error, OpenAiAdapter, ADAPTER_NAME, USER_AGENT};
pub use config::{
    check_api_key, MaxTokensField, ModelRoute, OpenAiConfig, Quirks, DEFAULT_BASE_URL,
    DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAX_EVENT_BYTES, DEFAULT_STREAM_IDLE_TIMEOUT_MS,
    MAX_CONNECT_TIMEOUT_MS, MAX_MAX_EVENT_BYTES, MAX_STREAM_IDLE_TIMEOUT_MS,
};
pub use request::{request_body, request_bytes, wire_messages, IMAGE_OMITTED, PREFILL_UNSUPPORTED};
pub use translate::{map_finish, Translator};
