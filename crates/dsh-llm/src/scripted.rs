//! `ScriptedAdapter`: plays scripted turns as proper chunk streams.
//!
//! For tests and the offline demo. Each call to `stream` takes the next
//! scripted reply (or asks the responder), then plays it chunk by chunk with an
//! optional per-chunk delay, honouring the request's cancellation token.

use dsh_kernel::sync::lock;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{LlmError, LlmErrorKind};
use crate::service::{ChunkStream, LlmAdapter};
use crate::types::{
    ContentBlock, FinishReason, ModelRequest, ReasoningBlock, StreamChunk, TextBlock, TokenUsage,
    ToolCall,
};

/// One scripted model reply.
#[derive(Debug, Clone)]
pub enum ScriptedReply {
    /// Play these chunks in order.
    Chunks(Vec<StreamChunk>),
    /// Play these chunks, then fail with the error (no finish).
    ChunksThenError(Vec<StreamChunk>, LlmError),
    /// Play these chunks, then wait until the request is cancelled.
    ChunksThenHang(Vec<StreamChunk>),
}

type Responder = dyn Fn(&ModelRequest) -> ScriptedReply + Send + Sync;

/// An adapter that plays scripted replies. Records every request it receives.
pub struct ScriptedAdapter {
    replies: Mutex<VecDeque<ScriptedReply>>,
    responder: Option<Arc<Responder>>,
    delay: Duration,
    requests: Mutex<Vec<ModelRequest>>,
}

impl ScriptedAdapter {
    /// Plays `replies` in order, one per call; when they run out each call
    /// fails with `SERVER` "script exhausted".
    pub fn new(replies: impl IntoIterator<Item = ScriptedReply>) -> Self {
        Self {
            replies: Mutex::new(replies.into_iter().collect()),
            responder: None,
            delay: Duration::ZERO,
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Computes each reply from the request (used by the offline model).
    pub fn with_responder(
        responder: impl Fn(&ModelRequest) -> ScriptedReply + Send + Sync + 'static,
    ) -> Self {
        Self {
            replies: Mutex::new(VecDeque::new()),
            responder: Some(Arc::new(responder)),
            delay: Duration::ZERO,
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Waits `delay` before each chunk.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Appends replies to the script.
    pub fn push(&self, reply: ScriptedReply) {
        lock(&self.replies).push_back(reply);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        lock(&self.requests).clone()
    }

    fn next_reply(&self, options: &ModelRequest) -> ScriptedReply {
        if let Some(reply) = lock(&self.replies).pop_front() {
            return reply;
        }
        match &self.responder {
            Some(r) => r(options),
            None => ScriptedReply::ChunksThenError(
                Vec::new(),
                LlmError::new(LlmErrorKind::Server, "script exhausted"),
            ),
        }
    }
}

impl LlmAdapter for ScriptedAdapter {
    fn name(&self) -> &str {
        "scripted"
    }

    fn stream(&self, options: ModelRequest) -> ChunkStream {
        lock(&self.requests).push(options.clone());
        let reply = self.next_reply(&options);
        let (chunks, tail) = match reply {
            ScriptedReply::Chunks(c) => (c, Tail::End),
            ScriptedReply::ChunksThenError(c, e) => (c, Tail::Error(e)),
            ScriptedReply::ChunksThenHang(c) => (c, Tail::Hang),
        };
        let state = Play {
            chunks: chunks.into(),
            tail: Some(tail),
            delay: self.delay,
            cancel: options.cancel,
        };
        Box::pin(futures_util::stream::unfold(state, |mut st| async move {
            if st.cancel.is_cancelled() {
                st.tail.take()?;
                st.chunks.clear();
                return Some((Err(LlmError::aborted("aborted")), st));
            }
            if let Some(chunk) = st.chunks.pop_front() {
                if !st.delay.is_zero() {
                    tokio::select! {
                        _ = st.cancel.cancelled() => {
                            st.tail = None;
                            return Some((Err(LlmError::aborted("aborted")), st));
                        }
                        _ = tokio::time::sleep(st.delay) => {}
                    }
                }
                return Some((Ok(chunk), st));
            }
            match st.tail.take()? {
                Tail::End => None,
                Tail::Error(e) => Some((Err(e), st)),
                Tail::Hang => {
                    st.cancel.cancelled().await;
                    Some((Err(LlmError::aborted("aborted")), st))
                }
            }
        }))
    }
}

enum Tail {
    End,
    Error(LlmError),
    Hang,
}

struct Play {
    chunks: VecDeque<StreamChunk>,
    tail: Option<Tail>,
    delay: Duration,
    cancel: tokio_util::sync::CancellationToken,
}

/// Builds a well-formed chunk sequence the way a strict adapter emits it:
/// `block-start` before deltas, `block-end` for each block, usage, finish.
#[derive(Debug, Default, Clone)]
pub struct ReplyBuilder {
    chunks: Vec<StreamChunk>,
    ends: Vec<StreamChunk>,
    next_index: u32,
    usage: Option<TokenUsage>,
    finish: Option<FinishReason>,
    saw_tool_call: bool,
}

impl ReplyBuilder {
    /// An empty reply.
    pub fn new() -> Self {
        Self::default()
    }

    fn open(&mut self, block_type: &str) -> u32 {
        let index = self.next_index;
        self.next_index += 1;
        self.chunks.push(StreamChunk::BlockStart {
            index,
            block_type: block_type.to_string(),
        });
        index
    }

    /// A reasoning block streamed as the given deltas.
    pub fn reasoning(mut self, deltas: &[&str]) -> Self {
        let index = self.open("reasoning");
        for d in deltas {
            self.chunks.push(StreamChunk::ReasoningDelta {
                index,
                text: d.to_string(),
            });
        }
        self.ends.push(StreamChunk::BlockEnd {
            index,
            block: ContentBlock::Reasoning(ReasoningBlock {
                text: deltas.concat(),
                signature: None,
            }),
        });
        self
    }

    /// A text block streamed as the given deltas.
    pub fn text(mut self, deltas: &[&str]) -> Self {
        let index = self.open("text");
        for d in deltas {
            self.chunks.push(StreamChunk::TextDelta {
                index,
                text: d.to_string(),
            });
        }
        self.ends.push(StreamChunk::BlockEnd {
            index,
            block: ContentBlock::Text(TextBlock {
                text: deltas.concat(),
                cache: None,
            }),
        });
        self
    }

    /// A tool call whose raw arguments stream as the given fragments.
    pub fn tool_call(mut self, id: &str, name: &str, fragments: &[&str]) -> Self {
        let index = self.open("tool-call");
        self.saw_tool_call = true;
        let fragments: Vec<&str> = if fragments.is_empty() {
            vec![""]
        } else {
            fragments.to_vec()
        };
        for f in &fragments {
            self.chunks.push(StreamChunk::ToolCallDelta {
                index,
                id: id.to_string(),
                name: Some(name.to_string()),
                arguments_delta: f.to_string(),
            });
        }
        self.ends.push(StreamChunk::BlockEnd {
            index,
            block: ContentBlock::ToolCall(ToolCall {
                call_id: id.into(),
                name: name.to_string(),
                arguments: fragments.concat(),
            }),
        });
        self
    }

    /// Sets the usage chunk.
    pub fn usage(mut self, input: i64, output: i64) -> Self {
        self.usage = Some(TokenUsage {
            input_tokens: input,
            output_tokens: output,
            ..Default::default()
        });
        self
    }

    /// Sets the finish reason (default: `tool-calls` when a tool call was
    /// added, else `stop`).
    pub fn finish(mut self, reason: FinishReason) -> Self {
        self.finish = Some(reason);
        self
    }

    /// The chunks: starts and deltas, then all block-ends, usage, finish.
    pub fn build(self) -> Vec<StreamChunk> {
        let mut out = self.chunks;
        out.extend(self.ends);
        if let Some(usage) = self.usage {
            out.push(StreamChunk::Usage { usage });
        }
        let finish = self.finish.unwrap_or(if self.saw_tool_call {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        });
        out.push(StreamChunk::Finish { reason: finish });
        out
    }

    /// [`ReplyBuilder::build`] wrapped as a [`ScriptedReply::Chunks`].
    pub fn reply(self) -> ScriptedReply {
        ScriptedReply::Chunks(self.build())
    }
}
