//! DeepSeek chat-completions adapter: HTTP, SSE, translation, errors
