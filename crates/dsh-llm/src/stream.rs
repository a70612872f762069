//! The streaming driver every HTTP adapter runs a call with.
//!
//! [`drive`] turns one [`ModelRequest`] into a [`ChunkStream`]: it opens the
//! call, reads the server-sent-events body piece by piece under the idle
//! timeout and the request's cancel token, hands each data payload to the
//! dialect's translator and emits the chunks in the order they were
//! produced; an error comes after the chunks produced before it.
//!
//! What differs per provider is a [`Dialect`]: sending the request and
//! mapping a bad status, reading one piece of the body and naming its
//! transport failure, translating a payload, judging a body that ends
//! without the dialect's terminator, and the wording of the limit errors.
//! The driver does no I/O of its own; the dialect does it.
//!
//! Guarantees of every driven stream:
//! - lazy: nothing happens before the first poll;
//! - cancelling `request.cancel` ends the stream with `ABORTED` at the next
//!   poll (or at once during a network wait), dropping the body and every
//!   chunk still queued;
//! - every error's `after_output` says whether a chunk was delivered before
//!   it (the retry plugin retries only when none was);
//! - after the first error, or after the dialect is done, the stream ends.

use std::collections::VecDeque;
use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::http::{guarded, Guarded};
use crate::sse::SseParser;
use crate::{ChunkStream, LlmError, ModelRequest, StreamChunk};

/// One streaming call's provider-specific half, run by [`drive`].
///
/// The driver calls [`open`](Self::open) once; then, until the dialect
/// [is done](Self::is_done), an error or cancellation, it hands every
/// complete data payload to [`translate`](Self::translate) in order and
/// otherwise [reads](Self::read) the next piece of the body. When the body
/// ends before the dialect is done it calls
/// [`end_of_body`](Self::end_of_body) once.
pub trait Dialect: Send + 'static {
    /// An open response whose body is read.
    type Body: Send;
    /// One piece of a body.
    type Bytes: AsRef<[u8]> + Send;

    /// Sends `request` and returns its response once its status says a
    /// stream follows. `cancel` is the request's token: a wait it ends may
    /// return any error (the driver reports `ABORTED` instead).
    ///
    /// # Errors
    /// The call's failure (bad status, transport failure, timeout, not an
    /// event stream): the stream's only item.
    fn open(
        &mut self,
        request: ModelRequest,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<Self::Body, LlmError>> + Send;

    /// The next piece of `body`, or `None` at its end. The driver (and
    /// [`read_head`]) bound the wait by a time limit and the cancel token,
    /// dropping the future when either comes first.
    ///
    /// # Errors
    /// The transport failure (`NETWORK`, `TIMEOUT`); it ends the stream.
    fn read(
        &mut self,
        body: &mut Self::Body,
    ) -> impl Future<Output = Result<Option<Self::Bytes>, LlmError>> + Send;

    /// Translates one data payload, appending the chunks it produces to
    /// `out`.
    ///
    /// # Errors
    /// A malformed payload or an error the server sent in the stream; the
    /// chunks appended before it are emitted first, then it ends the stream.
    fn translate(&mut self, payload: &str, out: &mut Vec<StreamChunk>) -> Result<(), LlmError>;

    /// Whether the dialect's terminator was translated: the stream ends
    /// once the chunks produced so far are delivered.
    fn is_done(&self) -> bool;

    /// The body ended before the dialect was [done](Self::is_done). `Ok`
    /// ends the stream normally after the chunks appended to `out`.
    ///
    /// # Errors
    /// What the early end means (`STREAM_CLOSED`, `NETWORK`,
    /// `EMPTY_RESPONSE`, …), emitted after the chunks appended to `out`.
    fn end_of_body(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), LlmError>;

    /// How long the stream may go without a data event (comments do not
    /// count) before [`idle_timeout_error`](Self::idle_timeout_error).
    fn idle_timeout(&self) -> Duration;

    /// The largest event the driver buffers before
    /// [`event_too_large_error`](Self::event_too_large_error).
    fn max_event_bytes(&self) -> usize;

    /// The error when no data event arrived within the idle timeout.
    fn idle_timeout_error(&self) -> LlmError;

    /// The error when one event grew past the maximum event size.
    fn event_too_large_error(&self) -> LlmError;
}

/// The stream of one call: `dialect` opens `request` on the first poll and
/// the body is read, translated and emitted as the [module](self) describes.
pub fn drive<D: Dialect>(dialect: D, request: ModelRequest) -> ChunkStream {
    let run = Run {
        cancel: request.cancel.clone(),
        dialect,
        phase: Phase::Init(Box::new(request)),
        queue: VecDeque::new(),
        scratch: Vec::new(),
        pending_error: None,
        emitted: false,
    };
    Box::pin(futures_util::stream::unfold(run, |mut run| async move {
        let item = run.step().await?;
        Some((item, run))
    }))
}

/// The first `max` bytes of `body`, or more (the last piece is kept
/// whole), or fewer: a read that fails, outlasts `limit` or finds the end
/// stops it, losing only the rest. Read with the dialect's
/// [`read`](Dialect::read), for the message of a response that is no
/// event stream (an error status, a wrong content type).
///
/// # Errors
/// `ABORTED` when `cancel` fires first.
pub async fn read_head<D: Dialect>(
    dialect: &mut D,
    body: &mut D::Body,
    cancel: &CancellationToken,
    limit: Duration,
    max: usize,
) -> Result<Vec<u8>, LlmError> {
    let mut head = Vec::new();
    while head.len() < max {
        match guarded(cancel, Some(limit), dialect.read(body)).await {
            Guarded::Done(Ok(Some(bytes))) => head.extend_from_slice(bytes.as_ref()),
            Guarded::Cancelled => return Err(LlmError::aborted("aborted")),
            Guarded::Done(Ok(None) | Err(_)) | Guarded::TimedOut => break,
        }
    }
    Ok(head)
}

enum Phase<B> {
    Init(Box<ModelRequest>),
    Body(Box<Body<B>>),
    Finished,
}

struct Body<B> {
    response: B,
    /// When the stream is abandoned unless a data event arrives first.
    idle_deadline: Instant,
    parser: SseParser,
}

/// The state of one streaming call.
struct Run<D: Dialect> {
    dialect: D,
    cancel: CancellationToken,
    phase: Phase<D::Body>,
    queue: VecDeque<StreamChunk>,
    scratch: Vec<StreamChunk>,
    /// An error to report once the queued chunks are out.
    pending_error: Option<LlmError>,
    /// Whether a chunk was handed to the consumer.
    emitted: bool,
}

impl<D: Dialect> Run<D> {
    /// The next stream item, or `None` at the end.
    async fn step(&mut self) -> Option<Result<StreamChunk, LlmError>> {
        loop {
            let ended = matches!(self.phase, Phase::Finished)
                && self.queue.is_empty()
                && self.pending_error.is_none();
            if ended {
                return None;
            }
            // Cancellation wins over anything still queued.
            if self.cancel.is_cancelled() {
                return Some(Err(self.abort()));
            }
            if let Some(chunk) = self.queue.pop_front() {
                self.emitted = true;
                return Some(Ok(chunk));
            }
            if let Some(mut e) = self.pending_error.take() {
                e.after_output = self.emitted;
                return Some(Err(e));
            }
            match &mut self.phase {
                Phase::Finished => return None,
                Phase::Init(_) => self.start().await,
                Phase::Body(_) => {
                    if let Some(item) = self.body_step().await {
                        return Some(item);
                    }
                }
            }
        }
    }

    /// Opens the call; its failure becomes the pending error.
    async fn start(&mut self) {
        let Phase::Init(request) = std::mem::replace(&mut self.phase, Phase::Finished) else {
            return;
        };
        match self.dialect.open(*request, &self.cancel).await {
            Ok(response) => {
                self.phase = Phase::Body(Box::new(Body {
                    response,
                    idle_deadline: Instant::now() + self.dialect.idle_timeout(),
                    parser: SseParser::new(),
                }));
            }
            Err(e) => self.fail(e),
        }
    }

    /// Translates buffered payloads, else reads the next piece of the body.
    /// Returns an item only when the call was cancelled.
    async fn body_step(&mut self) -> Option<Result<StreamChunk, LlmError>> {
        let idle = self.dialect.idle_timeout();
        let max_event = self.dialect.max_event_bytes();
        let Phase::Body(body) = &mut self.phase else {
            return None;
        };
        let Body {
            response,
            idle_deadline,
            parser,
        } = &mut **body;
        let dialect = &mut self.dialect;
        let mut error = None;
        while let Some(payload) = parser.next_payload() {
            // Only data events reset the idle timer (comments do not).
            *idle_deadline = Instant::now() + idle;
            if let Err(e) = dialect.translate(payload, &mut self.scratch) {
                error = Some(e);
                break;
            }
            if dialect.is_done() {
                break;
            }
        }
        let mut finished = dialect.is_done();
        if error.is_none() && !finished && parser.is_exhausted() {
            match dialect.end_of_body(&mut self.scratch) {
                Ok(()) => finished = true,
                Err(e) => error = Some(e),
            }
        }
        self.queue.extend(self.scratch.drain(..));
        if let Some(e) = error {
            self.fail(e);
            return None;
        }
        if finished {
            self.phase = Phase::Finished;
            return None;
        }
        if !self.queue.is_empty() {
            return None;
        }
        // Everything complete was consumed: what is left is one partial
        // event. Bounded: at most the limit plus one network read.
        if parser.buffered() > max_event {
            let e = dialect.event_too_large_error();
            self.fail(e);
            return None;
        }
        let remaining = idle_deadline.saturating_duration_since(Instant::now());
        match guarded(&self.cancel, Some(remaining), dialect.read(response)).await {
            Guarded::Done(Ok(Some(bytes))) => parser.push(bytes.as_ref()),
            Guarded::Done(Ok(None)) => parser.end(),
            Guarded::Done(Err(e)) => self.fail(e),
            Guarded::TimedOut => {
                let e = dialect.idle_timeout_error();
                self.fail(e);
            }
            Guarded::Cancelled => return Some(Err(self.abort())),
        }
        None
    }

    /// Records `e` for after the queued chunks; nothing more is read.
    fn fail(&mut self, e: LlmError) {
        self.pending_error = Some(e);
        self.phase = Phase::Finished;
    }

    /// Drops the connection and everything queued; returns `ABORTED`.
    fn abort(&mut self) -> LlmError {
        self.phase = Phase::Finished;
        self.queue.clear();
        self.pending_error = None;
        let mut e = LlmError::aborted("aborted");
        e.after_output = self.emitted;
        e
    }
}
