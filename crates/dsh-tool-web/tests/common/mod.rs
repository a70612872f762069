//! Test support for dsh-tool-web: a tiny HTTP/1.1 server on loopback
//! (one request per connection, `Connection: close`) whose answers a test
//! scripts per request, recording every request it got; and helpers to call
//! the tools through a registry.
#![allow(dead_code)] // each test binary uses a different subset
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic
#![allow(unreachable_pub)] // shared by several test binaries

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_tools::{CallEnv, ToolCall, ToolRegistry, ToolResult};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request the server got.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// Header names lower-case.
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The decoded query parameters.
    pub fn query(&self) -> HashMap<String, String> {
        let url = reqwest::Url::parse(&format!("http://x{}", self.target)).unwrap();
        url.query_pairs().into_owned().collect()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// What the server answers.
pub enum Reply {
    /// A whole response.
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// `then`, after `delay`.
    Delay(Duration, Box<Reply>),
    /// 200 with `content_type`, a Content-Length of `total` bytes, and that
    /// many bytes of `x` written 64 KiB at a time until the client goes.
    Stream { content_type: String, total: u64 },
}

impl Reply {
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply::Full {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
        }
    }

    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Full {
            status,
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: body.as_bytes().to_vec(),
        }
    }

    pub fn redirect(location: &str) -> Reply {
        Reply::Full {
            status: 302,
            headers: vec![("Location".into(), location.into())],
            body: Vec::new(),
        }
    }
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// A loopback server; dropped, it stops accepting.
pub struct Server {
    pub addr: SocketAddr,
    pub requests: Arc<Mutex<Vec<Request>>>,
    /// Body bytes written by `Reply::Stream` answers.
    pub streamed: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    pub async fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let streamed = Arc::new(AtomicU64::new(0));
        let handler: Arc<Handler> = Arc::new(handler);
        let (reqs, stream_count) = (requests.clone(), streamed.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((conn, _)) = listener.accept().await else {
                    return;
                };
                let (handler, reqs, stream_count) =
                    (handler.clone(), reqs.clone(), stream_count.clone());
                tokio::spawn(async move {
                    // A client that goes away mid-answer is expected.
                    let _ = serve(conn, handler, reqs, stream_count).await;
                });
            }
        });
        Server {
            addr,
            requests,
            streamed,
            task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    pub fn hits(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

async fn serve(
    mut conn: TcpStream,
    handler: Arc<Handler>,
    reqs: Arc<Mutex<Vec<Request>>>,
    streamed: Arc<AtomicU64>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        assert!(buf.len() < 65536, "request head too large");
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_string();
    let target = first.next().unwrap_or("").to_string();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let request = Request {
        method,
        target,
        headers,
        body,
    };
    let mut reply = handler(&request);
    reqs.lock().unwrap().push(request);
    loop {
        match reply {
            Reply::Delay(d, then) => {
                tokio::time::sleep(d).await;
                reply = *then;
            }
            Reply::Full {
                status,
                headers,
                body,
            } => {
                let mut out = format!(
                    "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Length: {}\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str("\r\n");
                conn.write_all(out.as_bytes()).await?;
                conn.write_all(&body).await?;
                return conn.shutdown().await;
            }
            Reply::Stream {
                content_type,
                total,
            } => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: {content_type}\r\nContent-Length: {total}\r\n\r\n"
                );
                conn.write_all(head.as_bytes()).await?;
                let block = vec![b'x'; 64 << 10];
                let mut sent = 0u64;
                while sent < total {
                    let n = block.len().min((total - sent) as usize);
                    conn.write_all(&block[..n]).await?;
                    sent += n as u64;
                    streamed.fetch_add(n as u64, Ordering::Relaxed);
                }
                return Ok(());
            }
        }
    }
}

/// Calls `tool` with `args` through `registry` (schema validation
/// included).
pub async fn call(registry: &ToolRegistry, tool: &str, args: serde_json::Value) -> ToolResult {
    registry
        .execute(
            &ToolCall::new("c1", tool, args.to_string()),
            CallEnv::default(),
        )
        .await
}
