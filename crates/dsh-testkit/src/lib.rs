//! Shared test support: loopback HTTP servers speaking the DeepSeek SSE wire format
