//! Shared support for the loopback tests: an upstream HTTP server, a proxy
//! on a fresh listener, and the real `curl`.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Output;
use std::sync::{Arc, Mutex};

use dsh_netproxy::{Allowlist, Proxy, Served, StaticResolver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

pub const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The body served at `/big`: 1 MiB of deterministic, non-repeating bytes.
pub fn big_body() -> Vec<u8> {
    pattern(0x1234_5678, 1 << 20)
}

/// `n` deterministic bytes from `seed` with no short period (xorshift), so
/// a dropped, doubled or moved chunk changes them.
pub fn pattern(seed: u32, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

pub const HELLO: &str = "hello from upstream\n";

/// A tiny HTTP/1 server on 127.0.0.1: `/big` → [`big_body`], anything else
/// → [`HELLO`]; one response per connection, then close. Records every
/// request head it read.
pub struct Upstream {
    pub addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    pub async fn start() -> Upstream {
        let listener = TcpListener::bind((LOOPBACK, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let big = Arc::new(big_body());
        let seen = Arc::clone(&heads);
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else {
                    return;
                };
                let seen = Arc::clone(&seen);
                let big = Arc::clone(&big);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let body: &[u8] = if head.starts_with("GET /big ") {
                        &big
                    } else {
                        HELLO.as_bytes()
                    };
                    seen.lock().unwrap().push(head);
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = s.write_all(reply.as_bytes()).await;
                    let _ = s.write_all(body).await;
                    let _ = s.shutdown().await;
                });
            }
        });
        Upstream { addr, heads }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The request heads received so far (one per connection that sent one).
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// The resolver of every test: both names point at loopback.
pub fn resolver() -> Arc<StaticResolver> {
    Arc::new(
        StaticResolver::new()
            .with("allowed.test", [LOOPBACK])
            .with("rebind.test", [LOOPBACK])
            .with("other.test", [LOOPBACK]),
    )
}

pub fn proxy(allow: &[&str]) -> Proxy {
    Proxy::new(Allowlist::parse(allow).unwrap(), resolver())
}

/// Serves `proxy` on a fresh 127.0.0.1 listener.
pub fn serve(proxy: &Proxy) -> (Served, SocketAddr) {
    let listener = std::net::TcpListener::bind((LOOPBACK, 0)).unwrap();
    let served = proxy.serve(listener).unwrap();
    let addr = served.local_addr().unwrap();
    (served, addr)
}

const CURL: &str = "curl";

/// Runs the real `curl` with `args` (after `-q -sS --max-time 20`), with
/// no proxy settings from the environment. Fails the test, saying to
/// install curl, when there is none.
pub async fn curl(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut cmd = std::process::Command::new(CURL);
        cmd.args(["-q", "-sS", "--max-time", "20"]).args(&args);
        for var in ["http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"] {
            cmd.env_remove(var);
        }
        match cmd.output() {
            Ok(out) => out,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
                "these tests drive the real curl binary, and there is no `curl` on PATH: install curl (e.g. apt-get install curl)"
            ),
            Err(e) => panic!("running curl: {e}"),
        }
    })
    .await
    .unwrap()
}

pub fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

pub fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
