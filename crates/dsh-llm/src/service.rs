//! The adapter trait and the `LlmService` registry with its waterfalls.

use dsh_kernel::sync::{read, write};
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use dsh_kernel::{EmitHook, Registration, WaterfallHook};
use futures_core::Stream;
use futures_util::StreamExt;

use crate::assembler::BlockAssembler;
use crate::error::LlmError;
use crate::types::{ContentBlock, ModelRequest, ModelResponse, StreamChunk};

/// A stream of chunks; an `Err` item ends it (no item follows an error).
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<StreamChunk, LlmError>> + Send>>;

/// A stream of finished content blocks.
pub type BlockStream = Pin<Box<dyn Stream<Item = Result<ContentBlock, LlmError>> + Send>>;

/// A model provider. Streaming is the one required method.
///
/// `stream` is lazy: no I/O happens until the stream is first polled, and
/// every failure (including invalid options) arrives as an `Err` item. The
/// adapter honours `options.cancel`: once cancelled the stream ends promptly
/// with an `ABORTED` error (or `finish{aborted}`) and drops its connection.
/// The chunk contract is documented on [`StreamChunk`].
pub trait LlmAdapter: Send + Sync + 'static {
    /// A short name for logs (e.g. `"deepseek"`).
    fn name(&self) -> &str;

    /// Starts a streaming call.
    fn stream(&self, options: ModelRequest) -> ChunkStream;
}

/// A stream that yields one error and ends.
pub fn error_stream(err: LlmError) -> ChunkStream {
    Box::pin(futures_util::stream::once(async move { Err(err) }))
}

type AdapterTable = Vec<(String, Arc<dyn LlmAdapter>)>;

struct Inner {
    adapters: RwLock<AdapterTable>,
    on_stream: WaterfallHook<ModelRequest, ChunkStream>,
    on_generate: WaterfallHook<ModelRequest, Result<ModelResponse, LlmError>>,
    on_adapters_change: EmitHook<()>,
}

/// The adapter registry: model name → adapter, plus the `llm/stream` and
/// `llm/generate` waterfalls. Cloning yields a handle to the same registry.
#[derive(Clone)]
pub struct LlmService {
    inner: Arc<Inner>,
}

impl Default for LlmService {
    fn default() -> Self {
        Self::new()
    }
}

impl LlmService {
    /// An empty registry.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                adapters: RwLock::new(Vec::new()),
                on_stream: WaterfallHook::new("llm/stream"),
                on_generate: WaterfallHook::new("llm/generate"),
                on_adapters_change: EmitHook::new("llm/adapters-change"),
            }),
        }
    }

    /// The `llm/stream` waterfall: listeners may rewrite options, wrap or
    /// replace the chunk stream (the retry plugin lives here).
    pub fn on_stream(&self) -> &WaterfallHook<ModelRequest, ChunkStream> {
        &self.inner.on_stream
    }

    /// The `llm/generate` waterfall around [`LlmService::generate`].
    pub fn on_generate(&self) -> &WaterfallHook<ModelRequest, Result<ModelResponse, LlmError>> {
        &self.inner.on_generate
    }

    /// Emitted after adapters were registered or removed.
    pub fn on_adapters_change(&self) -> &EmitHook<()> {
        &self.inner.on_adapters_change
    }

    /// Registers `adapter` for every name in `models`, all or nothing.
    ///
    /// # Errors
    /// `DUPLICATE_ADAPTER` naming the first model already served (nothing is
    /// registered then).
    pub fn register_adapter<S: AsRef<str>>(
        &self,
        models: &[S],
        adapter: Arc<dyn LlmAdapter>,
    ) -> Result<Registration, LlmError> {
        let names: Vec<String> = models.iter().map(|m| m.as_ref().to_string()).collect();
        {
            let mut table = write(&self.inner.adapters);
            for (i, name) in names.iter().enumerate() {
                if table.iter().any(|(n, _)| n == name) || names[..i].contains(name) {
                    return Err(LlmError::duplicate_adapter(name));
                }
            }
            for name in &names {
                table.push((name.clone(), adapter.clone()));
            }
        }
        // Listener failures are contained and logged by the hook.
        self.inner.on_adapters_change.emit(&());
        let inner = Arc::downgrade(&self.inner);
        Ok(Registration::new(move || {
            if let Some(inner) = inner.upgrade() {
                write(&inner.adapters)
                    .retain(|(n, a)| !(names.contains(n) && Arc::ptr_eq(a, &adapter)));
                inner.on_adapters_change.emit(&());
            }
        }))
    }

    /// Registered model names in registration order.
    pub fn models(&self) -> Vec<String> {
        read(&self.inner.adapters)
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// The adapter serving `model`.
    pub fn adapter(&self, model: &str) -> Option<Arc<dyn LlmAdapter>> {
        read(&self.inner.adapters)
            .iter()
            .find(|(n, _)| n == model)
            .map(|(_, a)| a.clone())
    }

    /// Streams a call through `llm/stream`. An unknown model yields a stream
    /// with one `NO_ADAPTER` error.
    pub async fn stream(&self, options: ModelRequest) -> ChunkStream {
        let weak = Arc::downgrade(&self.inner);
        self.inner
            .on_stream
            .call(options, move |opts| {
                let weak = weak.clone();
                async move {
                    let adapter = weak.upgrade().and_then(|inner| {
                        read(&inner.adapters)
                            .iter()
                            .find(|(n, _)| *n == opts.model)
                            .map(|(_, a)| a.clone())
                    });
                    match adapter {
                        Some(a) => a.stream(opts),
                        None => error_stream(LlmError::no_adapter(&opts.model)),
                    }
                }
            })
            .await
    }

    /// Drains [`LlmService::stream`] into a [`BlockAssembler`], through the
    /// `llm/generate` waterfall.
    ///
    /// # Errors
    /// The first error of the stream, or `INCOMPLETE_BLOCK` from assembly.
    pub async fn generate(&self, options: ModelRequest) -> Result<ModelResponse, LlmError> {
        let service = self.clone();
        self.inner
            .on_generate
            .call(options, move |opts| {
                let service = service.clone();
                async move {
                    let mut stream = service.stream(opts).await;
                    let mut asm = BlockAssembler::new();
                    while let Some(chunk) = stream.next().await {
                        asm.push(&chunk?);
                    }
                    asm.into_result()
                }
            })
            .await
    }

    /// Streams finished blocks: after each chunk the blocks ready so far, at
    /// the end the rest. The sequence equals `generate().message.content`
    /// (when no `llm/generate` listener rewrites it).
    pub async fn stream_blocks(&self, options: ModelRequest) -> BlockStream {
        let chunks = self.stream(options).await;
        blocks_of(chunks)
    }
}

/// Turns a chunk stream into a stream of finished blocks (see
/// [`LlmService::stream_blocks`]).
pub fn blocks_of(chunks: ChunkStream) -> BlockStream {
    struct State {
        chunks: ChunkStream,
        asm: BlockAssembler,
        ready: std::collections::VecDeque<ContentBlock>,
        done: bool,
    }
    let state = State {
        chunks,
        asm: BlockAssembler::new(),
        ready: Default::default(),
        done: false,
    };
    Box::pin(futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(b) = st.ready.pop_front() {
                return Some((Ok(b), st));
            }
            if st.done {
                return None;
            }
            match st.chunks.next().await {
                Some(Ok(chunk)) => {
                    st.asm.push(&chunk);
                    st.ready.extend(st.asm.flush_ready());
                }
                Some(Err(e)) => {
                    st.done = true;
                    return Some((Err(e), st));
                }
                None => {
                    st.done = true;
                    match st.asm.flush_remaining() {
                        Ok(rest) => st.ready.extend(rest),
                        Err(e) => return Some((Err(e), st)),
                    }
                }
            }
        }
    }))
}
