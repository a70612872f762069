//! Network by domain: a confined command with a `[sandbox] network` list
//! runs in a network namespace with only loopback and reaches the outside
//! through the session's proxy. World-checked with servers this test
//! starts on the host's loopback: what they received, not what the
//! command printed. Uses the real `curl` and `python3` (CI installs them).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Fixture;
use dsh_bash::BashExecutor;
use dsh_sandbox::SandboxMode;

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// A one-response-per-connection HTTP server on the host's loopback that
/// counts the requests it got.
struct Upstream {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl Upstream {
    fn start(body: &'static str) -> Self {
        let listener = TcpListener::bind((LOOPBACK, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                counted.fetch_add(1, Ordering::SeqCst);
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => break,
                    }
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self { port, hits }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// An executor whose commands get `allowed` through a proxy that knows
/// `registry.test` and `rebind.test` as 127.0.0.1; the proxy's denials
/// are also collected as the log would see them.
fn fixture(mode: SandboxMode, allowed: &[&str]) -> (Fixture, Arc<Mutex<Vec<String>>>) {
    common::proxied(mode, allowed, &["registry.test", "rebind.test"])
}

/// Whether the layer is here; prints why not.
fn layer_here() -> bool {
    common::network_layer_here()
}

fn curl(url: &str) -> String {
    format!("curl -sS --max-time 10 {url}; echo \" rc=$?\"")
}

#[tokio::test]
async fn a_listed_host_is_reached_through_the_proxy_in_every_confining_mode() {
    if !layer_here() {
        return;
    }
    let up = Upstream::start("registry says hi");
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let (f, denied) = fixture(mode, &["registry.test", "127.0.0.1"]);
        let before = up.hits();
        let r = f
            .run(&curl(&format!("http://registry.test:{}/pkg", up.port)))
            .await;
        assert_eq!(r.stdout.text, "registry says hi rc=0\n", "{mode}: {r:?}");
        assert_eq!(up.hits(), before + 1, "{mode}: the server saw the request");
        assert_eq!(r.sandbox_denial, None, "{mode}: {r:?}");
        // HTTPS-style tunnels (CONNECT) and SOCKS5 go through too.
        let r = f
            .run(&format!(
                "curl -sS --max-time 10 -p http://registry.test:{}/t; echo; \
                 curl -sS --max-time 10 -x \"$ALL_PROXY\" http://registry.test:{}/s",
                up.port, up.port
            ))
            .await;
        assert_eq!(
            r.stdout.text, "registry says hi\nregistry says hi",
            "{mode}: {r:?}"
        );
        assert_eq!(up.hits(), before + 3, "{mode}");
        assert!(denied.lock().unwrap().is_empty());
        f.exec.dispose().await;
    }
}

#[tokio::test]
async fn an_unlisted_host_is_refused_with_a_note_naming_it_and_the_list() {
    if !layer_here() {
        return;
    }
    let up = Upstream::start("never");
    let (f, denied) = fixture(SandboxMode::WorkspaceWrite, &["registry.test", "127.0.0.1"]);
    let r = f
        .run(&curl(&format!("http://unlisted.example:{}/", up.port)))
        .await;
    assert!(
        r.stdout.text.contains("dsh sandbox") || r.stdout.text.contains("denied"),
        "{r:?}"
    );
    assert_eq!(
        r.sandbox_denial.as_deref(),
        Some("[sandbox: network to unlisted.example denied; allowed: registry.test, 127.0.0.1]"),
        "{r:?}"
    );
    assert_eq!(*denied.lock().unwrap(), ["unlisted.example"]);
    assert_eq!(up.hits(), 0);
    f.exec.dispose().await;
}

#[tokio::test]
async fn a_listed_name_that_resolves_to_loopback_is_refused_unless_the_address_is_listed() {
    if !layer_here() {
        return;
    }
    let up = Upstream::start("lan secret");
    let (f, _) = fixture(SandboxMode::WorkspaceWrite, &["rebind.test"]);
    let r = f
        .run(&curl(&format!("http://rebind.test:{}/", up.port)))
        .await;
    assert!(!r.stdout.text.contains("lan secret"), "{r:?}");
    assert_eq!(
        r.sandbox_denial.as_deref(),
        Some("[sandbox: network to rebind.test denied; allowed: rebind.test]")
    );
    // An IP literal that is not listed is refused as well.
    let r = f
        .run(&format!(
            "curl -sS --max-time 10 --noproxy '' http://127.0.0.1:{}/; echo \" rc=$?\"",
            up.port
        ))
        .await;
    assert!(!r.stdout.text.contains("lan secret"), "{r:?}");
    assert_eq!(
        r.sandbox_denial.as_deref(),
        Some("[sandbox: network to 127.0.0.1 denied; allowed: rebind.test]")
    );
    assert_eq!(up.hits(), 0, "the host's server saw nothing");
    f.exec.dispose().await;
}

#[tokio::test]
async fn nothing_leaves_the_namespace_except_through_the_proxy() {
    if !layer_here() {
        return;
    }
    let up = Upstream::start("direct");
    let udp = UdpSocket::bind((LOOPBACK, 0)).unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let (f, _) = fixture(SandboxMode::WorkspaceWrite, &["registry.test", "127.0.0.1"]);
    // Direct TCP to the host's loopback (bypassing the proxy), UDP to the
    // host's loopback and to an outside resolver, and a DNS lookup.
    let r = f
        .run(&format!(
            "curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{port}/; echo \" tcp=$?\"; \
             python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('127.0.0.1', {udp_port}))\"; \
             python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'q', ('8.8.8.8', 53))\"; echo \" udp_out=$?\"; \
             getent hosts example.com; echo \" dns=$?\"",
            port = up.port
        ))
        .await;
    assert!(r.stdout.text.contains("tcp=7"), "connection refused: {r:?}");
    assert!(
        r.stdout.text.contains("udp_out=1"),
        "network unreachable: {r:?}"
    );
    assert!(
        r.stdout.text.contains("dns=2"),
        "no resolver reachable: {r:?}"
    );
    std::thread::sleep(Duration::from_millis(100));
    let mut buf = [0u8; 16];
    assert!(
        udp.recv_from(&mut buf).is_err(),
        "the host's UDP socket got a datagram"
    );
    assert_eq!(up.hits(), 0, "the host's server saw a direct connection");
    // The environment points at the proxy; loopback stays direct.
    let r = f
        .run("echo $HTTP_PROXY $https_proxy $ALL_PROXY $NO_PROXY")
        .await;
    assert_eq!(
        r.stdout.text,
        "http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128 localhost,127.0.0.1,::1\n"
    );
    // A server the command starts on its own loopback is reachable from it.
    let r = f
        .run(
            "python3 -m http.server 18080 --bind 127.0.0.1 >/dev/null 2>&1 & \
             for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:18080/ && break; sleep 0.1; done; \
             curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:18080/; kill %1",
        )
        .await;
    assert_eq!(r.stdout.text, "200", "{r:?}");
    f.exec.dispose().await;
}

#[tokio::test]
async fn without_a_confining_mode_the_host_network_is_used() {
    let up = Upstream::start("open");
    let (f, _) = fixture(SandboxMode::DangerFullAccess, &["registry.test"]);
    let r = f
        .run(&format!(
            "curl -sS --max-time 10 --noproxy '*' http://127.0.0.1:{}/; echo \" $HTTP_PROXY\"",
            up.port
        ))
        .await;
    assert_eq!(r.stdout.text, "open \n", "{r:?}");
    assert_eq!(up.hits(), 1);
    f.exec.dispose().await;
}
