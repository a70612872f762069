//! Shared test support: a loopback HTTP server that replays scripted
//! responses and records every request it receives.
//!
//! Start at [`LoopbackServer`]: bind it with [`LoopbackServer::start`], point
//! the client under test at [`LoopbackServer::base_url`], script replies with
//! [`ScriptedResponse`] (status, headers, a body given as byte pieces with
//! optional delays, ending normally, by dropping the connection, or by hanging)
//! and inspect what was sent with [`LoopbackServer::requests`] /
//! [`LoopbackServer::next_request`].
//!
//! The server answers any method on any path, one scripted response per
//! request in FIFO order. It deliberately knows nothing about DeepSeek beyond
//! the [`ScriptedResponse::sse`] convenience constructor.

// Test support: a panic is how a broken fixture reports itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![warn(missing_docs)]

pub mod cli;
pub mod procs;
pub mod screen;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::Router;
use bytes::Bytes;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// HTTP method (`POST`, …).
    pub method: String,
    /// Path and query (`/chat/completions`).
    pub path: String,
    /// Header names (lowercase) and values, in received order.
    pub headers: Vec<(String, String)>,
    /// The full request body.
    pub body: Bytes,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON.
    ///
    /// # Panics
    /// When the body is not JSON (this is test support).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("request body is not JSON")
    }

    /// The body as UTF-8 text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One step of a scripted body.
#[derive(Debug, Clone)]
enum Piece {
    Bytes(Bytes),
    Delay(Duration),
}

/// How long a [`BodyEnd::Drop`] body waits after its last piece before the
/// connection is dropped, so the pieces reach the client first.
pub const DROP_FLUSH_GRACE: Duration = Duration::from_millis(50);

/// How a scripted body ends after its last piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEnd {
    /// The body completes normally.
    Complete,
    /// The connection is dropped [`DROP_FLUSH_GRACE`] after the last piece
    /// (the body errors; the client sees a truncated chunked body).
    Drop,
    /// The body never completes; it ends only when the client goes away or
    /// the server shuts down.
    Hang,
}

/// A scripted HTTP response: status, headers, body pieces and how it ends.
#[derive(Debug, Clone)]
pub struct ScriptedResponse {
    status: u16,
    headers: Vec<(String, String)>,
    pieces: Vec<Piece>,
    end: BodyEnd,
}

impl ScriptedResponse {
    /// A response with `status`, no headers and an empty body.
    pub fn new(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            pieces: Vec::new(),
            end: BodyEnd::Complete,
        }
    }

    /// A `200 text/event-stream` response whose body is `data: <payload>\n\n`
    /// for every payload, one piece per event.
    pub fn sse<S: AsRef<str>>(payloads: &[S]) -> Self {
        let mut r = Self::new(200).header("content-type", "text/event-stream");
        for p in payloads {
            r = r.piece(format!("data: {}\n\n", p.as_ref()));
        }
        r
    }

    /// A `200 text/event-stream` response with the given raw body, one piece.
    pub fn sse_raw(body: impl Into<Bytes>) -> Self {
        Self::new(200)
            .header("content-type", "text/event-stream")
            .piece(body)
    }

    /// A response with `status` and a JSON body.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Self::new(status)
            .header("content-type", "application/json")
            .piece(body.to_string())
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Appends a body piece (sent as its own write / HTTP chunk).
    pub fn piece(mut self, bytes: impl Into<Bytes>) -> Self {
        self.pieces.push(Piece::Bytes(bytes.into()));
        self
    }

    /// Appends several body pieces.
    pub fn pieces<B: Into<Bytes>>(mut self, pieces: impl IntoIterator<Item = B>) -> Self {
        self.pieces
            .extend(pieces.into_iter().map(|b| Piece::Bytes(b.into())));
        self
    }

    /// Waits `delay` before sending the next piece (or the end).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.pieces.push(Piece::Delay(delay));
        self
    }

    /// Drops the connection after the pieces sent so far.
    pub fn then_drop(mut self) -> Self {
        self.end = BodyEnd::Drop;
        self
    }

    /// Keeps the body open forever after the pieces sent so far.
    pub fn then_hang(mut self) -> Self {
        self.end = BodyEnd::Hang;
        self
    }
}

/// Computes the response to a request (see [`LoopbackServer::start_with`]).
pub type Responder = Box<dyn Fn(&RecordedRequest) -> ScriptedResponse + Send + Sync>;

struct Shared {
    script: Mutex<VecDeque<ScriptedResponse>>,
    /// Answers when the script is empty, instead of the 500.
    responder: Option<Responder>,
    requests: Mutex<Vec<RecordedRequest>>,
    request_arrived: Notify,
    bodies_dropped: Mutex<usize>,
    body_dropped: Notify,
    shutdown: CancellationToken,
}

/// A loopback HTTP/1.1 server on `127.0.0.1:<ephemeral>` that answers every
/// request with the next scripted response (FIFO) and records the request.
///
/// When the script is exhausted it answers `500` with the JSON body
/// `{"error":{"message":"loopback: no scripted response left"}}`.
/// Dropping the server (or [`LoopbackServer::shutdown`]) stops accepting and
/// ends every body still streaming.
pub struct LoopbackServer {
    addr: SocketAddr,
    base_url: String,
    shared: Arc<Shared>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl LoopbackServer {
    /// Binds `127.0.0.1:0` and starts serving on the current tokio runtime.
    ///
    /// # Errors
    /// When the socket cannot be bound.
    pub async fn start(
        script: impl IntoIterator<Item = ScriptedResponse>,
    ) -> std::io::Result<Self> {
        Self::serve(script.into_iter().collect(), None).await
    }

    /// Like [`LoopbackServer::start`] with an empty script: every request
    /// is answered by `responder` (which sees the recorded request, so a
    /// test can answer by content: a summary request differently from a
    /// step). Scripted responses pushed later still go first.
    ///
    /// # Errors
    /// When the socket cannot be bound.
    pub async fn start_with(
        responder: impl Fn(&RecordedRequest) -> ScriptedResponse + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        Self::serve(VecDeque::new(), Some(Box::new(responder))).await
    }

    async fn serve(
        script: VecDeque<ScriptedResponse>,
        responder: Option<Responder>,
    ) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script: Mutex::new(script),
            responder,
            requests: Mutex::new(Vec::new()),
            request_arrived: Notify::new(),
            bodies_dropped: Mutex::new(0),
            body_dropped: Notify::new(),
            shutdown: CancellationToken::new(),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let stop = shared.shutdown.clone();
        let task = tokio::spawn(async move {
            // An accept-loop error ends the server; tests then see connection
            // refused, which is the observable failure they should report.
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await;
        });
        Ok(Self {
            addr,
            base_url: format!("http://{addr}"),
            shared,
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:<port>` (no trailing slash).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The bound socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends a response to the script.
    pub fn push(&self, response: ScriptedResponse) {
        self.shared
            .script
            .lock()
            .expect("script lock poisoned")
            .push_back(response);
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared
            .requests
            .lock()
            .expect("requests lock poisoned")
            .clone()
    }

    /// Waits until at least `n` requests have arrived and returns the `n`-th
    /// (1-based).
    pub async fn nth_request(&self, n: usize) -> RecordedRequest {
        loop {
            let notified = self.shared.request_arrived.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(r) = self
                .shared
                .requests
                .lock()
                .expect("requests lock poisoned")
                .get(n.saturating_sub(1))
            {
                return r.clone();
            }
            notified.await;
        }
    }

    /// Waits for the first request (see [`LoopbackServer::nth_request`]).
    pub async fn next_request(&self) -> RecordedRequest {
        self.nth_request(1).await
    }

    /// How many response bodies were dropped before completing (the client
    /// went away, or a scripted drop/hang ended).
    pub fn bodies_dropped(&self) -> usize {
        *self
            .shared
            .bodies_dropped
            .lock()
            .expect("counter lock poisoned")
    }

    /// Waits until at least `n` response bodies were dropped before
    /// completing — e.g. because the client closed the connection.
    pub async fn wait_bodies_dropped(&self, n: usize) {
        loop {
            let notified = self.shared.body_dropped.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.bodies_dropped() >= n {
                return;
            }
            notified.await;
        }
    }

    /// Stops the server: no new connections, every streaming body ends.
    /// Waits (at most 5 s) for open connections to close, then aborts.
    pub async fn shutdown(mut self) {
        self.shared.shutdown.cancel();
        if let Some(mut task) = self.task.take() {
            // Timing out only means a client kept an idle connection open;
            // aborting the accept loop is then the intended outcome.
            if tokio::time::timeout(Duration::from_secs(5), &mut task)
                .await
                .is_err()
            {
                task.abort();
            }
        }
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    // A body that cannot be read is recorded as empty: the test then fails on
    // the content it expected, which names the problem well enough.
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let recorded = RecordedRequest {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_else(|| parts.uri.path().to_string()),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
    };
    let from_script = shared
        .script
        .lock()
        .expect("script lock poisoned")
        .pop_front();
    let scripted = from_script
        .or_else(|| shared.responder.as_ref().map(|r| r(&recorded)))
        .unwrap_or_else(|| {
            ScriptedResponse::json(
                500,
                &serde_json::json!({"error": {"message": "loopback: no scripted response left"}}),
            )
        });
    shared
        .requests
        .lock()
        .expect("requests lock poisoned")
        .push(recorded);
    shared.request_arrived.notify_waiters();
    build_response(scripted, shared)
}

fn build_response(scripted: ScriptedResponse, shared: Arc<Shared>) -> Response {
    let ScriptedResponse {
        status,
        headers,
        pieces,
        end,
    } = scripted;
    let guard = DropGuard {
        shared: shared.clone(),
        completed: false,
    };
    let state = BodyState {
        pieces: pieces.into(),
        end,
        guard,
        stop: shared.shutdown.clone(),
    };
    let stream = futures_util::stream::unfold(state, |mut st| async move {
        loop {
            match st.pieces.pop_front() {
                Some(Piece::Bytes(b)) => return Some((Ok::<Bytes, std::io::Error>(b), st)),
                Some(Piece::Delay(d)) => {
                    tokio::select! {
                        _ = st.stop.cancelled() => return None,
                        _ = tokio::time::sleep(d) => {}
                    }
                }
                None => match st.end {
                    BodyEnd::Complete => {
                        st.guard.completed = true;
                        drop(st);
                        return None;
                    }
                    BodyEnd::Drop => {
                        // Erroring the body at once would let hyper abort
                        // before the pieces reach the socket; give the
                        // pieces time to be written first.
                        tokio::time::sleep(DROP_FLUSH_GRACE).await;
                        st.end = BodyEnd::Complete;
                        return Some((
                            Err(std::io::Error::new(
                                std::io::ErrorKind::ConnectionAborted,
                                "loopback: scripted connection drop",
                            )),
                            st,
                        ));
                    }
                    BodyEnd::Hang => {
                        st.stop.cancelled().await;
                        return None;
                    }
                },
            }
        }
    });
    let mut response = Response::new(Body::from_stream(stream));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    for (name, value) in headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            response.headers_mut().append(n, v);
        }
    }
    response
}

struct BodyState {
    pieces: VecDeque<Piece>,
    end: BodyEnd,
    guard: DropGuard,
    stop: CancellationToken,
}

/// Counts bodies dropped before completing.
struct DropGuard {
    shared: Arc<Shared>,
    completed: bool,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.completed {
            *self
                .shared
                .bodies_dropped
                .lock()
                .expect("counter lock poisoned") += 1;
            self.shared.body_dropped.notify_waiters();
        }
    }
}

/// A fresh private directory outside the system temp directory: a place
/// the `workspace-write` sandbox must not write to, for tests that check
/// it does not (their workspaces live in the temp directory). The first of
/// `preferred` (a test's `CARGO_TARGET_TMPDIR`), `/var/tmp` and `$HOME`
/// that is outside the temp directory and accepts a new directory; a
/// checkout under `/tmp` puts `preferred` inside it.
///
/// # Panics
/// When none of them is usable, naming them: the test cannot say
/// anything about confinement then.
pub fn outside_temp_dir(preferred: &str, prefix: &str) -> tempfile::TempDir {
    let temp = std::env::temp_dir();
    let temp = temp.canonicalize().unwrap_or(temp);
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let candidates = [
        Some(std::path::PathBuf::from(preferred)),
        Some("/var/tmp".into()),
        home,
    ];
    for dir in candidates.into_iter().flatten() {
        let real = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        if real.starts_with(&temp) {
            continue;
        }
        if let Ok(made) = tempfile::Builder::new().prefix(prefix).tempdir_in(&real) {
            return made;
        }
    }
    panic!(
        "no directory outside the temp dir {} to test confinement with (tried {preferred}, /var/tmp, $HOME)",
        temp.display()
    )
}
