//! `dsh serve` over WebSocket and HTTP, in process, with the offline echo
//! model: a client drives a session; tokens and origins are checked;
//! malformed frames are answered; a reconnecting client resumes; approvals
//! reach every client and the first answer wins; a client that stops
//! reading is dropped while its session lives; many clients at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use dsh_controller::Controller;
use dsh_server::{serve_http, HttpOptions, Server};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

struct Served {
    addr: std::net::SocketAddr,
    controller: Arc<Controller>,
    _dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn served(permission: Option<dsh::SandboxMode>) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    let controller = Arc::new(Controller::new(dsh::Settings {
        model: Some("echo".into()),
        cwd: Some(dir.path().to_path_buf()),
        session_dir: Some(dir.path().join("sessions")),
        config: Some(config),
        permission,
        ..Default::default()
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_http(
        Server::new(controller.clone()),
        listener,
        HttpOptions {
            token: TOKEN.into(),
            assets: dsh_server::web::ASSETS,
        },
        async move {
            let _ = stopped.await;
        },
    ));
    Served {
        addr,
        controller,
        _dir: dir,
        stop: Some(stop),
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A WebSocket client with a request id counter and the notifications it
/// read while waiting for answers.
struct Client {
    ws: Ws,
    next_id: u64,
    notes: std::collections::VecDeque<Value>,
}

impl Client {
    async fn connect(s: &Served) -> Client {
        Self::connect_with(s, &[("Authorization", &format!("Bearer {TOKEN}"))])
            .await
            .unwrap()
    }

    async fn connect_with(
        s: &Served,
        headers: &[(&str, &str)],
    ) -> Result<Client, tokio_tungstenite::tungstenite::Error> {
        let mut request = format!("ws://{}/api/ws", s.addr)
            .into_client_request()
            .unwrap();
        for (k, v) in headers {
            let name: tokio_tungstenite::tungstenite::http::HeaderName = k.parse().unwrap();
            request.headers_mut().insert(name, v.parse().unwrap());
        }
        let (ws, _) = tokio_tungstenite::connect_async(request).await?;
        Ok(Client {
            ws,
            next_id: 1,
            notes: Default::default(),
        })
    }

    async fn send_raw(&mut self, text: &str) {
        self.ws.send(Message::text(text)).await.unwrap();
    }

    async fn read(&mut self) -> Value {
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(20), self.ws.next())
                .await
                .expect("a frame in time")
                .expect("the socket is open")
                .unwrap();
            if let Message::Text(t) = msg {
                return serde_json::from_str(t.as_str()).unwrap();
            }
        }
    }

    /// Sends a request and returns its whole answer (result or error),
    /// keeping notifications read meanwhile.
    async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(&frame.to_string()).await;
        loop {
            let v = self.read().await;
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
            self.notes.push_back(v);
        }
    }

    async fn ok(&mut self, method: &str, params: Value) -> Value {
        let v = self.call(method, params).await;
        assert!(v.get("error").is_none(), "{method}: {v}");
        v["result"].clone()
    }

    /// The next `session.event`'s event.
    async fn event(&mut self) -> Value {
        loop {
            let v = match self.notes.pop_front() {
                Some(v) => v,
                None => self.read().await,
            };
            if v["method"] == "session.event" {
                return v["params"]["event"].clone();
            }
        }
    }

    async fn events_until(&mut self, kind: &str) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let e = self.event().await;
            let done = e["type"] == kind;
            seen.push(e);
            if done {
                return seen;
            }
        }
    }
}

async fn session(c: &mut Client) -> String {
    let r = c.ok("session/create", json!({})).await;
    r["sessionId"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_client_drives_a_session_from_prompt_to_turn_end() {
    let s = served(None).await;
    let mut c = Client::connect(&s).await;
    let init = c.ok("initialize", json!({"client": "test"})).await;
    assert_eq!(init["server"], "dsh");
    assert_eq!(init["protocol"], 1);
    assert!(init["methods"]
        .as_array()
        .unwrap()
        .contains(&json!("session/prompt")));
    let id = session(&mut c).await;
    let sub = c
        .ok("session/subscribe", json!({"sessionId": id, "fromSeq": 0}))
        .await;
    assert!(sub["nextSeq"].as_u64().unwrap() > 0);
    c.ok(
        "session/prompt",
        json!({"sessionId": id, "text": "echo over the wire"}),
    )
    .await;
    let events = c.events_until("turn_ended").await;
    assert_eq!(events[0]["type"], "session_started");
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let answer: String = events
        .iter()
        .filter(|e| e["type"] == "message_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(answer.contains("over the wire"), "{answer}");
    assert!(events
        .iter()
        .any(|e| e["type"] == "tool_finished" && e["name"] == "echo"));
    let end = events.last().unwrap();
    assert_eq!(end["reason"]["kind"], "completed", "{end}");
    // A prompt while a turn runs is refused: one client drives at a time.
    c.ok(
        "session/prompt",
        json!({"sessionId": id, "text": "run sleep 2"}),
    )
    .await;
    let busy = c
        .call("session/prompt", json!({"sessionId": id, "text": "echo b"}))
        .await;
    assert_eq!(busy["error"]["data"]["code"], "TURN_RUNNING", "{busy}");
    c.ok("session/abort", json!({"sessionId": id})).await;
    let ended = c.events_until("turn_ended").await;
    assert_eq!(ended.last().unwrap()["reason"]["kind"], "aborted");
    // The log reads back over the protocol and over REST.
    let log = c.ok("session/log", json!({"sessionId": id})).await;
    assert!(log["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["type"] == "turn/end"));
    let (status, body) = get(&s, &format!("/api/sessions/{id}/log?from=0&limit=3"), true).await;
    assert_eq!(status, 200, "{body}");
    let page: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(page["events"].as_array().unwrap().len(), 3);
    assert_eq!(page["nextSeq"], 3);
    let (status, body) = get(&s, "/api/sessions", true).await;
    assert_eq!(status, 200);
    let list: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(list["open"][0]["sessionId"], json!(id));
    let (status, _) = get(&s, "/api/sessions/s-unknown", true).await;
    assert_eq!(status, 404);
    s.controller.shutdown("test over").await;
}

/// A raw HTTP GET: (status, body).
async fn get_with(s: &Served, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let mut request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        s.addr
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text[9..12].parse().unwrap();
    (status, text)
}

async fn get(s: &Served, path: &str, authorised: bool) -> (u16, String) {
    let auth = format!("Bearer {TOKEN}");
    let headers: Vec<(&str, &str)> = if authorised {
        vec![("Authorization", auth.as_str())]
    } else {
        vec![]
    };
    let (status, text) = get_with(s, path, &headers).await;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_and_origins_are_checked_and_nothing_is_revealed() {
    let s = served(None).await;
    // No token, a wrong one, one of another length: 401, nothing else.
    for headers in [
        vec![],
        vec![("Authorization", "Bearer 0123456789abcdef0123456789abcdee")],
        vec![("Authorization", "Bearer short")],
        vec![("Cookie", "dsh_token=nope")],
    ] {
        let (status, text) = get_with(&s, "/api/sessions", &headers).await;
        assert_eq!(status, 401, "{headers:?}");
        assert!(text.ends_with("\r\n\r\nunauthorized\n"), "{text}");
        assert!(!text.contains("sessions"), "{text}");
        let ws = Client::connect_with(&s, &headers).await;
        match ws {
            Err(tokio_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status(), 401),
            other => panic!("{headers:?}: {:?}", other.err()),
        }
    }
    // The token in the query or a cookie is as good as the header.
    let (status, _) = get_with(&s, &format!("/api/sessions?token={TOKEN}"), &[]).await;
    assert_eq!(status, 200);
    let cookie = format!("a=b; dsh_token={TOKEN}");
    let (status, _) = get_with(&s, "/api/sessions", &[("Cookie", &cookie)]).await;
    assert_eq!(status, 200);
    // A foreign origin: 403, for REST and for the WebSocket upgrade.
    let auth = format!("Bearer {TOKEN}");
    let (status, _) = get_with(
        &s,
        "/api/sessions",
        &[("Authorization", &auth), ("Origin", "http://evil.example")],
    )
    .await;
    assert_eq!(status, 403);
    let hijack = Client::connect_with(
        &s,
        &[("Cookie", &cookie), ("Origin", "http://evil.example:80")],
    )
    .await;
    match hijack {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status(), 403),
        other => panic!("{:?}", other.err()),
    }
    // The served origin is fine.
    let own = format!("http://{}", s.addr);
    assert!(
        Client::connect_with(&s, &[("Cookie", &cookie), ("Origin", &own)])
            .await
            .is_ok()
    );
    // The printed link moves the token into a private cookie.
    let (status, text) = get_with(&s, &format!("/?token={TOKEN}"), &[]).await;
    assert_eq!(status, 303);
    let lower = text.to_ascii_lowercase();
    assert!(lower.contains("location: /\r\n"), "{text}");
    assert!(
        lower.contains(&format!(
            "set-cookie: dsh_token={TOKEN}; httponly; samesite=strict"
        )),
        "{text}"
    );
    // Every answer carries the policy, a 401 included.
    let (_, text) = get_with(&s, "/", &[]).await;
    assert!(
        text.to_ascii_lowercase()
            .contains("content-security-policy: default-src 'none'; script-src 'self'"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_frames_are_answered_and_the_connection_goes_on() {
    let s = served(None).await;
    let mut c = Client::connect(&s).await;
    c.send_raw("{not json").await;
    assert_eq!(c.read().await["error"]["code"], -32700);
    c.send_raw("[1, 2]").await;
    assert_eq!(c.read().await["error"]["code"], -32600);
    c.send_raw(r#"{"jsonrpc": "1.0", "id": 5, "method": "initialize"}"#)
        .await;
    let v = c.read().await;
    assert_eq!(
        (v["error"]["code"].clone(), v["id"].clone()),
        (json!(-32600), json!(5))
    );
    c.send_raw(r#"{"jsonrpc": "2.0", "id": {"x": 1}, "method": "initialize"}"#)
        .await;
    let v = c.read().await;
    assert_eq!(
        (v["error"]["code"].clone(), v["id"].clone()),
        (json!(-32600), Value::Null)
    );
    let v = c.call("session/nope", json!({})).await;
    assert_eq!(v["error"]["code"], -32601);
    let v = c.call("session/prompt", json!({"sessionId": 5})).await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert_eq!(v["error"]["data"]["code"], "INVALID_ARGS");
    let v = c
        .call("session/prompt", json!({"sessionId": "s-x", "text": "hi"}))
        .await;
    assert_eq!(v["error"]["code"], -32000);
    assert_eq!(v["error"]["data"]["code"], "UNKNOWN_SESSION");
    let v = c.call("initialize", json!({"unexpected": true})).await;
    assert_eq!(v["error"]["code"], -32602);
    c.ws.send(Message::binary(vec![1u8, 2, 3])).await.unwrap();
    assert_eq!(c.read().await["error"]["code"], -32600);
    // A notification asks for nothing and gets nothing; the next call works.
    c.send_raw(r#"{"jsonrpc": "2.0", "method": "initialize"}"#)
        .await;
    c.ok("initialize", json!({})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_frame_is_refused_and_the_session_lives() {
    let s = served(None).await;
    let mut c = Client::connect(&s).await;
    let id = session(&mut c).await;
    let huge = "x".repeat(dsh_server::http::MAX_MESSAGE_BYTES + 1);
    let frame = json!({"jsonrpc": "2.0", "id": 9, "method": "session/prompt",
        "params": {"sessionId": id, "text": huge}});
    let _ = c.ws.send(Message::text(frame.to_string())).await;
    // The server closes the socket instead of reading it whole.
    let closed = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match c.ws.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return true,
                Some(Ok(_)) => {}
            }
        }
    })
    .await
    .unwrap();
    assert!(closed);
    let mut other = Client::connect(&s).await;
    let info = other.ok("session/info", json!({"sessionId": id})).await;
    assert_eq!(info["sessionId"], json!(id));
    s.controller.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnecting_client_resumes_from_the_last_number_it_saw() {
    let s = served(None).await;
    let mut first = Client::connect(&s).await;
    let id = session(&mut first).await;
    first
        .ok("session/subscribe", json!({"sessionId": id, "fromSeq": 0}))
        .await;
    first
        .ok(
            "session/prompt",
            json!({"sessionId": id, "text": "echo resume me"}),
        )
        .await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(first.event().await);
    }
    let last = seen.last().unwrap()["seq"].as_u64().unwrap();
    drop(first);
    let mut second = Client::connect(&s).await;
    second
        .ok(
            "session/subscribe",
            json!({"sessionId": id, "fromSeq": last + 1}),
        )
        .await;
    seen.extend(second.events_until("turn_ended").await);
    // Nothing lost, nothing twice: the same as reading it all from 0.
    let mut third = Client::connect(&s).await;
    third
        .ok("session/subscribe", json!({"sessionId": id, "fromSeq": 0}))
        .await;
    let all = third.events_until("turn_ended").await;
    assert_eq!(seen, all);
    // The same history pages over REST.
    let (status, body) = get(
        &s,
        &format!("/api/sessions/{id}/events?from=0&limit=1000"),
        true,
    )
    .await;
    assert_eq!(status, 200);
    let page: Value = serde_json::from_str(&body).unwrap();
    let paged: Vec<Value> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .take(all.len())
        .cloned()
        .collect();
    assert_eq!(paged, all);
    s.controller.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_reaches_every_client_and_the_first_answer_wins() {
    let s = served(Some(dsh::SandboxMode::ReadOnly)).await;
    let mut a = Client::connect(&s).await;
    let mut b = Client::connect(&s).await;
    let id = session(&mut a).await;
    for c in [&mut a, &mut b] {
        c.ok("session/subscribe", json!({"sessionId": id})).await;
    }
    let target = s._dir.path().join("approved.txt");
    let args = json!({"file_path": target, "content": "yes\n",
        "sandbox_permissions": "workspace-write", "justification": "the test"});
    a.ok(
        "session/prompt",
        json!({"sessionId": id, "text": format!("call write {args}")}),
    )
    .await;
    let asked_a = a.events_until("approval_asked").await.pop().unwrap();
    let asked_b = b.events_until("approval_asked").await.pop().unwrap();
    assert_eq!(asked_a, asked_b);
    assert_eq!(asked_a["tool"], "write");
    let approval = asked_a["approvalId"].clone();
    b.ok(
        "session/answer",
        json!({"sessionId": id, "approvalId": approval, "decision": {"decision": "allow_once"}}),
    )
    .await;
    let late = a
        .call(
            "session/answer",
            json!({"sessionId": id, "approvalId": approval, "decision": {"decision": "reject"}}),
        )
        .await;
    assert_eq!(late["error"]["data"]["code"], "UNKNOWN_APPROVAL", "{late}");
    let rest = a.events_until("turn_ended").await;
    assert!(rest
        .iter()
        .any(|e| e["type"] == "approval_decided" && e["decision"]["decision"] == "allow_once"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "yes\n");
    s.controller.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_dropped_and_its_session_goes_on() {
    let s = served(None).await;
    let server = Server::new(s.controller.clone());
    let mut c = Client::connect(&s).await;
    let id = session(&mut c).await;
    // In process: a connection whose frames nobody takes.
    let (conn, frames) = dsh_server::Connection::new(server, false);
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "session/info",
        "params": {"sessionId": id}})
    .to_string();
    for _ in 0..(dsh_server::server::OUTBOUND_FRAMES + 10) {
        conn.handle(&request);
    }
    tokio::time::timeout(Duration::from_secs(20), conn.dropped())
        .await
        .expect("dropped once its queue filled");
    // What was queued is bounded; the session is untouched.
    assert!(frames.len() <= dsh_server::server::OUTBOUND_FRAMES);
    c.ok(
        "session/prompt",
        json!({"sessionId": id, "text": "echo still here"}),
    )
    .await;
    let info = c.ok("session/info", json!({"sessionId": id})).await;
    assert_eq!(info["sessionId"], json!(id));
    s.controller.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_clients_connect_at_once() {
    let s = served(None).await;
    let s = Arc::new(s);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..100 {
        let s = s.clone();
        tasks.spawn(async move {
            let mut c = Client::connect(&s).await;
            c.ok("initialize", json!({})).await["server"].clone()
        });
    }
    let mut n = 0;
    while let Some(r) = tasks.join_next().await {
        assert_eq!(r.unwrap(), "dsh");
        n += 1;
    }
    assert_eq!(n, 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_answers_long_and_broken_lines_and_ends_on_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let controller = Arc::new(Controller::new(dsh::Settings {
        model: Some("echo".into()),
        cwd: Some(dir.path().to_path_buf()),
        session_dir: Some(dir.path().join("sessions")),
        ..Default::default()
    }));
    let (client_in, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_out) = tokio::io::duplex(1 << 20);
    let (server_read, _) = tokio::io::split(server_in);
    let (_, server_write) = tokio::io::split(server_out);
    let served = tokio::spawn(dsh_server::serve_stdio(
        Server::new(controller.clone()),
        server_read,
        server_write,
        1024,
    ));
    let (mut out_read, _) = tokio::io::split(client_out);
    let (_, mut in_write) = tokio::io::split(client_in);
    let mut input = Vec::new();
    input.extend_from_slice(&vec![b'x'; 5000]);
    input.extend_from_slice(b"\n\xff\xfe\n");
    input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n");
    input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"shutdown\"}\n");
    in_write.write_all(&input).await.unwrap();
    let result = tokio::time::timeout(Duration::from_secs(20), served)
        .await
        .expect("shutdown ends it")
        .unwrap();
    assert!(result.is_ok(), "{result:?}");
    let mut text = String::new();
    out_read.read_to_string(&mut text).await.unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines.iter().any(|l| l["error"]["code"] == -32600
            && l["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Line too long")),
        "{text}"
    );
    assert!(lines.iter().any(|l| l["error"]["code"] == -32700), "{text}");
    assert!(
        lines
            .iter()
            .any(|l| l["id"] == 1 && l["result"]["server"] == "dsh"),
        "{text}"
    );
    controller.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closing_client_is_answered_and_a_closed_session_says_so_to_its_subscribers() {
    let s = served(None).await;
    let mut c = Client::connect(&s).await;
    let id = session(&mut c).await;
    c.ok("session/subscribe", json!({"sessionId": id})).await;
    c.ok("session/close", json!({"sessionId": id})).await;
    let closed = c.events_until("closed").await.pop().unwrap();
    assert_eq!(closed["reason"], "closed by a client");
    // The client's Close is answered with the server's (a clean close).
    c.ws.close(None).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), c.ws.next())
        .await
        .unwrap();
    assert!(
        matches!(answer, Some(Ok(Message::Close(_))) | None),
        "{answer:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_waits_for_a_client_that_reconnects_within_the_grace() {
    let s = served(Some(dsh::SandboxMode::ReadOnly)).await;
    let mut a = Client::connect(&s).await;
    let init = a.ok("initialize", json!({})).await;
    assert!(init["commands"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["name"] == "model" && c["hint"] == "name"));
    let id = session(&mut a).await;
    let info = a.ok("session/info", json!({"sessionId": id})).await;
    assert_eq!(info["info"]["models"], json!(["echo"]));
    a.ok("session/subscribe", json!({"sessionId": id})).await;
    let target = s._dir.path().join("after-reload.txt");
    let args = json!({"file_path": target, "content": "kept\n",
        "sandbox_permissions": "workspace-write", "justification": "the test"});
    a.ok(
        "session/prompt",
        json!({"sessionId": id, "text": format!("call write {args}")}),
    )
    .await;
    let asked = a.events_until("approval_asked").await.pop().unwrap();
    // The only answerer goes away (a tab reloads) and comes back.
    drop(a);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut b = Client::connect(&s).await;
    b.ok("session/subscribe", json!({"sessionId": id, "fromSeq": 0}))
        .await;
    b.ok(
        "session/answer",
        json!({"sessionId": id, "approvalId": asked["approvalId"], "decision": {"decision": "allow_once"}}),
    )
    .await;
    b.events_until("turn_ended").await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept\n");
    s.controller.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_questions_reach_every_client_and_the_first_fitting_reply_wins() {
    let s = served(None).await;
    let mut a = Client::connect(&s).await;
    let mut b = Client::connect(&s).await;
    let id = session(&mut a).await;
    for c in [&mut a, &mut b] {
        c.ok("session/subscribe", json!({"sessionId": id})).await;
    }
    let args = json!({"questions": [
        {"question": "Which database?", "header": "DB",
         "options": [{"label": "SQLite", "description": "one file"}, {"label": "Postgres"}]},
        {"question": "Anything else?"}
    ]});
    a.ok(
        "session/prompt",
        json!({"sessionId": id, "text": format!("call ask_user {args}")}),
    )
    .await;
    let asked_a = a.events_until("question_asked").await.pop().unwrap();
    let asked_b = b.events_until("question_asked").await.pop().unwrap();
    assert_eq!(asked_a, asked_b);
    assert_eq!(
        asked_a["questions"],
        json!([
            {"question": "Which database?", "header": "DB", "multiSelect": false,
             "options": [{"label": "SQLite", "description": "one file"}, {"label": "Postgres"}]},
            {"question": "Anything else?", "multiSelect": false, "options": []}
        ])
    );
    let question = asked_a["questionId"].clone();
    let unfit = a
        .call(
            "session/answer_question",
            json!({"sessionId": id, "questionId": question,
                   "reply": {"outcome": "answered", "answers": [{"selected": [5]}, {}]}}),
        )
        .await;
    assert_eq!(unfit["error"]["data"]["code"], "INVALID_ANSWER", "{unfit}");
    b.ok(
        "session/answer_question",
        json!({"sessionId": id, "questionId": question,
               "reply": {"outcome": "answered", "answers": [{"selected": [1]}, {"text": "no"}]}}),
    )
    .await;
    let late = a
        .call(
            "session/answer_question",
            json!({"sessionId": id, "questionId": question, "reply": {"outcome": "declined"}}),
        )
        .await;
    assert_eq!(late["error"]["data"]["code"], "UNKNOWN_QUESTION", "{late}");
    let rest = a.events_until("turn_ended").await;
    assert!(rest.iter().any(|e| e["type"] == "question_answered"
        && e["reply"]["outcome"] == "answered"
        && e["reply"]["answers"][0]["selected"] == json!([1])));
    let finished = rest
        .iter()
        .find(|e| e["type"] == "tool_finished")
        .expect("the call finished");
    assert_eq!(
        finished["output"],
        "Q: Which database?\nA: Postgres\nQ: Anything else?\nA: no"
    );
    s.controller.shutdown("test over").await;
}
