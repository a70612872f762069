//! `dsh serve`: the controller API over JSON-RPC on a WebSocket, measured
//! from real WebSocket clients (tokio-tungstenite) on loopback.
//!
//! 1. Criterion, echo model: the time from sending `session/prompt` to
//!    the first `session.event` notification that follows it, and to the
//!    first `message_delta`, at a client subscribed to the session (the
//!    server in this process, `dsh_server::serve_http`, on its own
//!    runtime). A new session every 50 prompts (untimed), as in `acp`.
//! 2. Printed once: 100 sessions at once, each streaming the recorded
//!    2,000-event DeepSeek fixture (`testdata/deepseek-stream-2000.sse`)
//!    from a loopback DeepSeek server, one subscribed WebSocket client per
//!    session: the events per second delivered to the clients (every
//!    `session.event` from the prompt to the turn's end, over the wall
//!    time from the prompts to the last turn's end) and the latency per
//!    event, from the server's publishing (the event's `time`, stamped by
//!    the session's hub, milliseconds since the epoch) to the client's
//!    receipt (the same clock, `SystemTime::now()`). The `time` field has
//!    millisecond resolution, so each latency is over by 0–1 ms: the
//!    figures are upper bounds. Run twice: with the fixture sent as fast
//!    as the loopback server writes it (the server saturated: the
//!    throughput), and paced at one event every 5 ms per stream (200
//!    events/s per session, 20,000/s offered; a real DeepSeek stream is
//!    nearer 50/s).
//! 3. Printed once, when a release `dsh` is next to this bench (`cargo
//!    build --release -p dsh-cli`): the RSS of a `dsh serve` process,
//!    idle, after it started and after 10 sessions were created over a
//!    WebSocket.
//!
//! The servers, the loopback DeepSeek server and the clients each run on
//! their own tokio runtime, in this process on this machine's cores. The
//! clients set TCP_NODELAY, as browsers do; the server's sockets are as
//! `serve_http` makes them (a first event near 40 ms is Nagle's algorithm
//! on the server's socket meeting the client's delayed ACK).
//!
//! `cargo bench -p dsh-benches --bench serve`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::BufRead;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use criterion::{criterion_group, criterion_main, Criterion};
use dsh_controller::Controller;
use dsh_server::{serve_http, HttpOptions, Server};
use dsh_testkit::{LoopbackServer, RecordedRequest, ScriptedResponse};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::runtime::Runtime;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

/// The token of the in-process servers.
const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// Prompts per session in part 1 before a new one is opened (untimed).
const TURNS_PER_SESSION: u64 = 50;

/// Sessions (and clients) streaming at once in part 2.
const SESSIONS: usize = 100;

/// Sessions of the idle process in part 3.
const IDLE_SESSIONS: usize = 10;

/// How long a client waits for a frame before the bench fails.
const FRAME_TIMEOUT: Duration = Duration::from_secs(120);

fn runtime(workers: usize) -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

/// A `dsh serve` in this process: the HTTP server on a loopback port,
/// running on `rt`, stopped when dropped.
struct Served {
    addr: std::net::SocketAddr,
    controller: Arc<Controller>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Served {
    fn start(rt: &Runtime, settings: dsh::Settings) -> Served {
        rt.block_on(async {
            let controller = Arc::new(Controller::new(settings));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            tokio::spawn(serve_http(
                Server::new(controller.clone()),
                listener,
                HttpOptions {
                    token: TOKEN.into(),
                    assets: &[],
                },
                async move {
                    let _ = stopped.await;
                },
            ));
            Served {
                addr,
                controller,
                stop: Some(stop),
            }
        })
    }

    /// Closes the sessions, then stops the listener.
    fn shutdown(mut self, rt: &Runtime) {
        rt.block_on(self.controller.shutdown("the bench is over"));
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// One frame from the server, as much of it as the bench reads: an
/// answer (`id`, `result` or `error`) or a notification (`method`,
/// `params`).
#[derive(Deserialize)]
struct Frame {
    id: Option<u64>,
    method: Option<String>,
    params: Option<NoteParams>,
    result: Option<Value>,
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NoteParams {
    session_id: Option<String>,
    event: Option<EventHead>,
}

/// The fields of a `session.event` the bench looks at.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventHead {
    /// Milliseconds since the epoch when the server's hub published it.
    time: u64,
    #[serde(rename = "type")]
    kind: String,
    status: Option<String>,
    approval_id: Option<String>,
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A WebSocket client of the JSON-RPC API.
struct Client {
    ws: Ws,
    next_id: u64,
}

impl Client {
    async fn connect(addr: std::net::SocketAddr, token: &str) -> Client {
        let mut request = format!("ws://{addr}/api/ws").into_client_request().unwrap();
        request
            .headers_mut()
            .insert("Authorization", format!("Bearer {token}").parse().unwrap());
        // TCP_NODELAY on the client's socket, as browsers set it: a delay
        // measured is the server's.
        let (ws, _) = tokio_tungstenite::connect_async_with_config(request, None, true)
            .await
            .unwrap();
        Client { ws, next_id: 1 }
    }

    /// Sends a request; returns its id.
    async fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.ws
            .send(Message::text(frame.to_string()))
            .await
            .unwrap();
        id
    }

    /// The next text frame, parsed, and when it was read.
    async fn next(&mut self) -> (Frame, Instant, SystemTime) {
        loop {
            let msg = tokio::time::timeout(FRAME_TIMEOUT, self.ws.next())
                .await
                .expect("a frame in time")
                .expect("the socket is open")
                .unwrap();
            let (at, wall) = (Instant::now(), SystemTime::now());
            if let Message::Text(t) = msg {
                return (serde_json::from_str(t.as_str()).unwrap(), at, wall);
            }
        }
    }

    /// Sends a request and returns its result (notifications read
    /// meanwhile are dropped); panics on an error answer.
    async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params).await;
        loop {
            let (frame, _, _) = self.next().await;
            if frame.id == Some(id) {
                assert!(frame.error.is_none(), "{method}: {:?}", frame.error);
                return frame.result.unwrap_or(Value::Null);
            }
        }
    }

    /// A new session, subscribed from now; its id.
    async fn subscribed_session(&mut self) -> String {
        let r = self.call("session/create", json!({})).await;
        let id = r["sessionId"].as_str().unwrap().to_string();
        self.call("session/subscribe", json!({"sessionId": id}))
            .await;
        id
    }

    /// Sends `text` as a prompt to `session` and reads the turn: calls
    /// `seen` with each of the session's events and when it was read,
    /// rejects approval questions, and returns once the turn ended, the
    /// agent is idle again and the prompt was answered.
    async fn turn(
        &mut self,
        session: &str,
        text: &str,
        mut seen: impl FnMut(&EventHead, Instant, SystemTime),
    ) {
        let prompt = self
            .send(
                "session/prompt",
                json!({"sessionId": session, "text": text}),
            )
            .await;
        let (mut answered, mut ended, mut idle) = (false, false, false);
        while !(answered && ended && idle) {
            let (frame, at, wall) = self.next().await;
            if frame.id == Some(prompt) {
                assert!(frame.error.is_none(), "session/prompt: {:?}", frame.error);
                answered = true;
                continue;
            }
            if frame.method.as_deref() != Some("session.event") {
                continue;
            }
            let Some(NoteParams {
                session_id: Some(of),
                event: Some(event),
            }) = frame.params
            else {
                continue;
            };
            if of != session {
                continue;
            }
            seen(&event, at, wall);
            match event.kind.as_str() {
                "turn_ended" => ended = true,
                // The agent's status may come before or after the turn's
                // end; the last one says.
                "status" => idle = event.status.as_deref() == Some("idle"),
                "approval_asked" => {
                    let approval = event.approval_id.clone().unwrap_or_default();
                    self.send(
                        "session/answer",
                        json!({"sessionId": session, "approvalId": approval,
                               "decision": {"decision": "reject"}}),
                    )
                    .await;
                }
                _ => {}
            }
        }
    }
}

/// Part 1: prompt to first event and to first `message_delta`, echo model.
fn first_event(c: &mut Criterion) {
    // Never a real DeepSeek from the environment in part 2.
    std::env::remove_var("DEEPSEEK_BASE_URL");
    idle_process_memory();
    fan_out(None);
    fan_out(Some(Duration::from_millis(5)));

    let server_rt = runtime(2);
    let client_rt = runtime(1);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("none.toml"), "").unwrap();
    let served = Served::start(
        &server_rt,
        dsh::Settings {
            model: Some("echo".into()),
            cwd: Some(dir.path().to_path_buf()),
            session_dir: Some(dir.path().join("sessions")),
            config: Some(dir.path().join("none.toml")),
            ..Default::default()
        },
    );
    let mut client = client_rt.block_on(Client::connect(served.addr, TOKEN));
    let mut session = client_rt.block_on(client.subscribed_session());
    let mut turns = 0u64;
    let mut g = c.benchmark_group("serve");
    for (name, wanted) in [
        ("prompt_to_first_event", None),
        ("prompt_to_first_message_delta", Some("message_delta")),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                client_rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        if turns == TURNS_PER_SESSION {
                            client
                                .call("session/close", json!({"sessionId": session}))
                                .await;
                            session = client.subscribed_session().await;
                            turns = 0;
                        }
                        turns += 1;
                        let start = Instant::now();
                        let mut first = None;
                        client
                            .turn(&session, "echo x", |e, at, _| {
                                if first.is_none() && wanted.is_none_or(|w| e.kind == w) {
                                    first = Some(at);
                                }
                            })
                            .await;
                        total += first.expect("the wanted event came").duration_since(start);
                    }
                    total
                })
            })
        });
    }
    g.finish();
    drop(client);
    served.shutdown(&server_rt);
}

/// The fixture's SSE payloads (the text after `data: ` of each event,
/// `[DONE]` last).
fn fixture_payloads() -> Vec<String> {
    let text = std::fs::read_to_string(dsh_benches::SSE_FIXTURE).unwrap_or_else(|e| {
        panic!(
            "cannot read the SSE fixture {}: {e}",
            dsh_benches::SSE_FIXTURE
        )
    });
    let payloads: Vec<String> = text
        .split("\n\n")
        .filter_map(|event| event.trim().strip_prefix("data: ").map(str::to_string))
        .collect();
    assert_eq!(payloads.len(), 2000, "the fixture has 2,000 events");
    payloads
}

/// An SSE reply saying `text`.
fn text_reply(text: &str) -> ScriptedResponse {
    ScriptedResponse::sse(&[
        json!({"choices":[{"index":0,"delta":{"role":"assistant","content":text},"finish_reason":null}]}).to_string(),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":3}}).to_string(),
        "[DONE]".to_string(),
    ])
}

/// The loopback DeepSeek's answer: the fixture to a session's first
/// request; `Done.` after the fixture's tool call (a request carrying a
/// tool result); a title to the title request.
fn answer(request: &RecordedRequest, fixture: &ScriptedResponse) -> ScriptedResponse {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if messages
        .iter()
        .any(|m| m["content"].as_str() == Some(dsh::title::TITLE_INSTRUCTION))
    {
        text_reply("Serve bench")
    } else if messages.iter().any(|m| m["role"] == "tool") {
        text_reply("Done.")
    } else {
        fixture.clone()
    }
}

/// What one client of part 2 saw: latencies in microseconds, events, and
/// when the turn ended.
struct Streamed {
    latencies_us: Vec<u64>,
    deltas: usize,
    ended: Instant,
}

/// Part 2: [`SESSIONS`] sessions streaming the fixture at once; `pace`:
/// the delay between the fixture's events (none: as fast as written).
fn fan_out(pace: Option<Duration>) {
    let upstream_rt = runtime(1);
    let server_rt = runtime(2);
    let client_rt = runtime(2);
    let mut fixture = ScriptedResponse::new(200).header("content-type", "text/event-stream");
    for p in fixture_payloads() {
        fixture = fixture.piece(format!("data: {p}\n\n"));
        if let Some(pace) = pace {
            fixture = fixture.delay(pace);
        }
    }
    let upstream = upstream_rt
        .block_on(LoopbackServer::start_with(move |r| answer(r, &fixture)))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("dsh.toml");
    std::fs::write(
        &config,
        format!(
            "[deepseek]\napi_key = \"sk-bench\"\nbase_url = \"{}\"\nmax_retries = 0\n",
            upstream.base_url()
        ),
    )
    .unwrap();
    let served = Served::start(
        &server_rt,
        dsh::Settings {
            model: Some("deepseek-v4-flash".into()),
            cwd: Some(dir.path().to_path_buf()),
            session_dir: Some(dir.path().join("sessions")),
            config: Some(config),
            ..Default::default()
        },
    );
    let addr = served.addr;
    let (streams, wall) = client_rt.block_on(async move {
        let go = Arc::new(tokio::sync::Barrier::new(SESSIONS + 1));
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..SESSIONS {
            let go = go.clone();
            tasks.spawn(async move {
                let mut client = Client::connect(addr, TOKEN).await;
                let session = client.subscribed_session().await;
                go.wait().await;
                let mut out = Streamed {
                    latencies_us: Vec::with_capacity(2048),
                    deltas: 0,
                    ended: Instant::now(),
                };
                client
                    .turn(&session, "look around the repository", |e, _, wall| {
                        let received = wall
                            .duration_since(SystemTime::UNIX_EPOCH)
                            .unwrap()
                            .as_micros() as u64;
                        out.latencies_us
                            .push(received.saturating_sub(e.time * 1000));
                        if e.kind.ends_with("_delta") {
                            out.deltas += 1;
                        }
                    })
                    .await;
                out.ended = Instant::now();
                out
            });
        }
        go.wait().await;
        let start = Instant::now();
        let streams: Vec<Streamed> = tasks.join_all().await;
        let last = streams.iter().map(|s| s.ended).max().unwrap();
        (streams, last.duration_since(start))
    });
    served.shutdown(&server_rt);
    drop(upstream);

    let events: usize = streams.iter().map(|s| s.latencies_us.len()).sum();
    let deltas: usize = streams.iter().map(|s| s.deltas).sum();
    let mut all: Vec<u64> = streams.into_iter().flat_map(|s| s.latencies_us).collect();
    all.sort_unstable();
    let at = |q: f64| {
        let i = ((all.len() as f64 * q).ceil() as usize).clamp(1, all.len()) - 1;
        all[i] as f64 / 1000.0
    };
    let how = match pace {
        None => "flat out".to_string(),
        Some(p) => format!("paced {} ms/event", p.as_millis()),
    };
    println!(
        "serve/fan_out ({how}): {SESSIONS} sessions x 2,000-event fixture: {events} events ({deltas} deltas) \
         in {:.2} s = {:.0} events/s to the clients; latency publish->client (ms, +0..1 ms resolution): \
         p50 {:.1}, p99 {:.1}, max {:.1} [target p99 < 20 ms]",
        wall.as_secs_f64(),
        events as f64 / wall.as_secs_f64(),
        at(0.50),
        at(0.99),
        at(1.0),
    );
}

/// Part 3: RSS of an idle `dsh serve` process, after start and after
/// [`IDLE_SESSIONS`] sessions were created over a WebSocket.
fn idle_process_memory() {
    let exe = std::env::current_exe().unwrap();
    let dsh = exe.parent().and_then(|d| d.parent()).unwrap().join("dsh");
    if !dsh.is_file() {
        println!(
            "serve/idle_memory: not measured ({} is missing: cargo build --release -p dsh-cli)",
            dsh.display()
        );
        return;
    }
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("none.toml"), "").unwrap();
    let mut child = std::process::Command::new(&dsh)
        .args(["serve", "--model", "echo", "--config"])
        .arg(home.path().join("none.toml"))
        .current_dir(home.path())
        .env_remove("DEEPSEEK_API_KEY")
        .env_remove("DEEPSEEK_BASE_URL")
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut field = |name: &str| {
        let line = lines.next().unwrap().unwrap();
        line.strip_prefix(name)
            .unwrap_or_else(|| panic!("expected `{name}`, got {line:?}"))
            .to_string()
    };
    let url = field("url: http://");
    let token = field("token: ");
    let addr: std::net::SocketAddr = url.parse().unwrap();
    let rss = || {
        std::fs::read_to_string(format!("/proc/{}/status", child.id()))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .map_or("?".to_string(), |v| v.trim().to_string())
    };
    std::thread::sleep(Duration::from_millis(200));
    let started = rss();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(async {
        let mut client = Client::connect(addr, &token).await;
        client.call("initialize", json!({"client": "bench"})).await;
        for _ in 0..IDLE_SESSIONS {
            client.call("session/create", json!({})).await;
        }
        client
    });
    std::thread::sleep(Duration::from_millis(200));
    println!(
        "serve/idle_memory: dsh serve RSS {started} after start, {} with {IDLE_SESSIONS} sessions (one WebSocket client) [target < 30 MB]",
        rss()
    );
    drop(client);
    drop(rt);
    let _ = child.kill();
    let _ = child.wait();
}

criterion_group!(benches, first_event);
criterion_main!(benches);
