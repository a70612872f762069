//! `dsh serve` over HTTP: JSON-RPC on a WebSocket (`GET /api/ws`), a small
//! REST surface for listing and reading sessions, the protocol document,
//! and (for `dsh web`) the browser app's files.
//!
//! Every request needs the token generated at start: `Authorization:
//! Bearer <token>`, the `dsh_token` cookie (set by opening
//! `/?token=<token>`, which redirects to `/`), or `?token=<token>` on the
//! URL (for WebSocket clients that cannot set headers). It is compared in
//! constant time; a missing or wrong one is `401` with nothing else said.
//! A request whose `Origin` is not the served origin is `403` (no
//! cross-site WebSocket hijacking or request forgery). Every response
//! carries a strict Content-Security-Policy (no inline script, nothing
//! from elsewhere).
//!
//! | route | what |
//! |---|---|
//! | `GET /api/ws` | the JSON-RPC WebSocket |
//! | `GET /api/sessions` | `session/list` |
//! | `GET /api/sessions/{id}` | `session/info` |
//! | `GET /api/sessions/{id}/events?from=&limit=` | `session/events` |
//! | `GET /api/sessions/{id}/log?from=&limit=` | `session/log` |
//! | `GET /api/protocol` | the protocol's JSON Schema |
//! | `GET /` and app files | the web app (`dsh web` only) |

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use crate::server::{Connection, Server};

/// The largest WebSocket message taken (a pasted file in a prompt fits).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The name of the cookie that carries the token in a browser.
pub const TOKEN_COOKIE: &str = "dsh_token";

/// The Content-Security-Policy of every response: this origin's files and
/// WebSocket only, no inline script or style, no frames.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One file of the browser app, served at `path`.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// Where it is served (`/`, `/app.js`).
    pub path: &'static str,
    /// Its content type.
    pub content_type: &'static str,
    /// Its bytes.
    pub body: &'static [u8],
}

/// What the HTTP server is.
pub struct HttpOptions {
    /// The token every request must carry.
    pub token: String,
    /// The browser app's files (`dsh web`), or none (`dsh serve`).
    pub assets: &'static [Asset],
}

struct Shared {
    server: Arc<Server>,
    token: String,
    /// The origins a browser may send (`http://127.0.0.1:<port>`, …).
    origins: Vec<String>,
    assets: &'static [Asset],
}

/// Serves on `listener` until `stop` resolves; then stops taking
/// connections and returns (the WebSocket clients are closed by their
/// connections ending).
///
/// # Errors
/// The listener failed.
pub async fn serve_http(
    server: Arc<Server>,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    let shared = Arc::new(Shared {
        server,
        token: options.token,
        origins: origins_of(addr),
        assets: options.assets,
    });
    let app = Router::new()
        .route("/api/ws", get(ws))
        .route("/api/sessions", get(list))
        .route("/api/sessions/{id}", get(info))
        .route("/api/sessions/{id}/events", get(events))
        .route("/api/sessions/{id}/log", get(log))
        .route("/api/protocol", get(protocol))
        .fallback(get(asset))
        .layer(middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared);
    // Small frames go out at once (a delta, an answer): without it each
    // waits on the client's delayed ACK (~40 ms, measured in the serve
    // bench).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(target: "dsh_server", "TCP_NODELAY not set: {e}");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
}

/// The origins a page of this server has: the address as bound, and its
/// loopback names.
fn origins_of(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut origins = vec![format!("http://{addr}")];
    if addr.ip().is_loopback() || addr.ip().is_unspecified() {
        origins.push(format!("http://localhost:{port}"));
        origins.push(format!("http://127.0.0.1:{port}"));
        origins.push(format!("http://[::1]:{port}"));
    }
    origins
}

/// Token, then origin, then the route; security headers on every answer.
async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let query_token = query_param(request.uri().query(), "token");
    let presented = bearer(request.headers())
        .or_else(|| cookie(request.headers(), TOKEN_COOKIE))
        .or(query_token.clone());
    let authorised = presented.is_some_and(|t| same(t.as_bytes(), shared.token.as_bytes()));
    let mut response = if !authorised {
        (StatusCode::UNAUTHORIZED, "unauthorized\n").into_response()
    } else if let Some(origin) = request.headers().get(header::ORIGIN) {
        let known = origin
            .to_str()
            .is_ok_and(|o| shared.origins.iter().any(|k| k == o));
        if known {
            next.run(request).await
        } else {
            (StatusCode::FORBIDDEN, "forbidden origin\n").into_response()
        }
    } else if request.uri().path() == "/" && query_token.is_some() {
        // The link printed at start: the token moves into a cookie and
        // out of the address bar and the history.
        let cookie = format!(
            "{TOKEN_COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            shared.token
        );
        let mut r = (StatusCode::SEE_OTHER, "").into_response();
        r.headers_mut()
            .insert(header::LOCATION, HeaderValue::from_static("/"));
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            r.headers_mut().insert(header::SET_COOKIE, v);
        }
        r
    } else {
        next.run(request).await
    };
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Equal in time that depends on the length only.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a
        .iter()
        .zip(b)
        .fold(0u8, |acc, (x, y)| acc | std::hint::black_box(x ^ y));
    diff == 0
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    value.strip_prefix("Bearer ").map(|t| t.trim().to_string())
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then(|| v.to_string())
        })
}

fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| v.to_string())
    })
}

async fn ws(State(shared): State<Arc<Shared>>, upgrade: WebSocketUpgrade) -> Response {
    upgrade
        .max_message_size(MAX_MESSAGE_BYTES)
        .max_frame_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| client(shared.server.clone(), socket))
}

/// One WebSocket client: frames in to its connection, its queue out,
/// until either side ends.
async fn client(server: Arc<Server>, mut socket: WebSocket) {
    let (conn, mut frames) = Connection::new(server, false);
    loop {
        tokio::select! {
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Text(text))) => conn.handle(text.as_str()),
                Some(Ok(Message::Binary(_))) => conn.handle_raw_answer(json!({
                    "jsonrpc": "2.0", "id": null,
                    "error": {"code": -32600, "message": "Invalid request: send JSON-RPC as text frames"},
                }).to_string()),
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
            },
            outgoing = frames.recv() => match outgoing {
                Some(frame) => {
                    if socket.send(Message::Text(frame.into())).await.is_err() {
                        break;
                    }
                }
                None => break,
            },
            () = conn.dropped() => break,
        }
    }
    conn.close();
    // Answers a client's Close (or sends ours) and flushes it.
    let _ = futures_util::SinkExt::close(&mut socket).await;
}

/// Runs `method` for a REST route: the answer's `result` as JSON, or its
/// error with a status (404 for an unknown session, 400 for bad input).
async fn rest(shared: &Shared, method: &str, params: Value) -> Response {
    match shared.server.call_once(method, params).await {
        Ok(result) => json_response(StatusCode::OK, &result),
        Err(error) => {
            let status = match error.data.as_ref().map(|d| d.code.as_str()) {
                Some("UNKNOWN_SESSION") => StatusCode::NOT_FOUND,
                _ if error.code == -32602 => StatusCode::BAD_REQUEST,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            };
            json_response(status, &json!({ "error": error }))
        }
    }
}

fn json_response(status: StatusCode, body: &impl serde::Serialize) -> Response {
    let text = serde_json::to_string(body).unwrap_or_else(|_| "null".into());
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        text,
    )
        .into_response()
}

async fn list(State(shared): State<Arc<Shared>>) -> Response {
    rest(&shared, "session/list", json!({})).await
}

async fn info(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    rest(&shared, "session/info", json!({ "sessionId": id })).await
}

/// `?from=&limit=` of the paged routes.
#[derive(serde::Deserialize)]
struct Page {
    from: Option<u64>,
    limit: Option<u32>,
}

async fn events(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    Query(page): Query<Page>,
) -> Response {
    let params = json!({ "sessionId": id, "fromSeq": page.from, "limit": page.limit });
    rest(&shared, "session/events", strip_nulls(params)).await
}

async fn log(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    Query(page): Query<Page>,
) -> Response {
    let params = json!({ "sessionId": id, "fromSeq": page.from, "limit": page.limit });
    rest(&shared, "session/log", strip_nulls(params)).await
}

fn strip_nulls(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.retain(|_, x| !x.is_null());
    }
    v
}

async fn protocol() -> Response {
    json_response(StatusCode::OK, &crate::protocol::schema_document())
}

async fn asset(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let path = request.uri().path();
    match shared.assets.iter().find(|a| a.path == path) {
        Some(a) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(a.content_type),
            )],
            a.body,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "not found\n").into_response(),
    }
}

/// A new token: 32 random bytes as hex.
///
/// # Errors
/// The system's random source failed.
pub fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole_and_are_found_where_clients_put_them() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer t1"));
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; dsh_token=t2"),
        );
        assert_eq!(bearer(&h).as_deref(), Some("t1"));
        assert_eq!(cookie(&h, TOKEN_COOKIE).as_deref(), Some("t2"));
        assert_eq!(
            query_param(Some("x=1&token=t3"), "token").as_deref(),
            Some("t3")
        );
        assert_eq!(query_param(Some("tokens=t3"), "token"), None);
        let t = new_token().unwrap();
        assert_eq!(t.len(), 64);
        assert_ne!(t, new_token().unwrap());
    }
}
