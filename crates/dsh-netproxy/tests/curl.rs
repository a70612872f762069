//! The proxy driven by the real `curl`: plain HTTP (`-x`), CONNECT
//! (`--proxytunnel`) and SOCKS5 (`--socks5-hostname`), against a loopback
//! upstream, with names pinned by a static resolver.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use dsh_netproxy::{Denial, DenialReason};

fn proxy_url(addr: std::net::SocketAddr) -> String {
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_delivers_the_body_intact_in_origin_form() {
    let up = Upstream::start().await;
    let (served, addr) = serve(&proxy(&["allowed.test", "127.0.0.1"]));
    let out = curl(args(&[
        "-x",
        &proxy_url(addr),
        &format!("http://allowed.test:{}/big", up.port()),
    ]))
    .await;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(out.stdout.len(), 1 << 20);
    assert!(out.stdout == big_body(), "the body changed on the way");
    let heads = up.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    let head = &heads[0];
    assert!(head.starts_with("GET /big HTTP/1.1\r\n"), "{head}");
    assert!(
        head.contains(&format!("\r\nHost: allowed.test:{}\r\n", up.port())),
        "{head}"
    );
    assert!(head.contains("\r\nConnection: close\r\n"), "{head}");
    assert!(
        !head.to_ascii_lowercase().contains("proxy-connection"),
        "{head}"
    );
    assert!(served.denials().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_tunnel_delivers_the_body_intact() {
    let up = Upstream::start().await;
    let (served, addr) = serve(&proxy(&["allowed.test", "127.0.0.1"]));
    let out = curl(args(&[
        "-p",
        "-x",
        &proxy_url(addr),
        &format!("http://allowed.test:{}/big", up.port()),
    ]))
    .await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        out.stdout == big_body(),
        "the body changed on the way ({} bytes)",
        out.stdout.len()
    );
    // Through a tunnel curl speaks to the upstream directly.
    assert!(up.heads()[0].starts_with("GET /big HTTP/1.1\r\n"));
    assert!(served.denials().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socks5_delivers_the_body_intact() {
    let up = Upstream::start().await;
    let (served, addr) = serve(&proxy(&["allowed.test", "127.0.0.1"]));
    let out = curl(args(&[
        "--socks5-hostname",
        &addr.to_string(),
        &format!("http://allowed.test:{}/big", up.port()),
    ]))
    .await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        out.stdout == big_body(),
        "the body changed on the way ({} bytes)",
        out.stdout.len()
    );
    assert!(served.denials().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlisted_name_gets_403_and_the_note() {
    let up = Upstream::start().await;
    let (served, addr) = serve(&proxy(&["allowed.test", "127.0.0.1"]));
    let target = format!("http://evil.test:{}/hello", up.port());
    let out = curl(args(&[
        "-i",
        "--fail-with-body",
        "-x",
        &proxy_url(addr),
        &target,
    ]))
    .await;
    assert_eq!(out.status.code(), Some(22), "{}", text(&out));
    let response = String::from_utf8_lossy(&out.stdout);
    assert!(
        response.starts_with("HTTP/1.1 403 Forbidden\r\n"),
        "{response}"
    );
    assert!(
        response.contains("\r\nX-Dsh-Sandbox: network-denied\r\n"),
        "{response}"
    );
    assert!(
        response.contains("\r\nContent-Type: text/plain; charset=utf-8\r\n"),
        "{response}"
    );
    let explained = format!(
        "network to evil.test:{} denied: evil.test is not in [sandbox] network (allowed: allowed.test, 127.0.0.1)\n",
        up.port()
    );
    assert!(
        response.ends_with(&format!("\r\n\r\n{explained}")),
        "{response}"
    );
    let denials = served.denials();
    assert_eq!(
        denials,
        [Denial {
            host: "evil.test".into(),
            port: up.port(),
            reason: DenialReason::NotListed
        }]
    );
    let allow = dsh_netproxy::Allowlist::parse(&["allowed.test", "127.0.0.1"]).unwrap();
    assert_eq!(
        denials[0].note(&allow),
        "[sandbox: network to evil.test denied; allowed: allowed.test, 127.0.0.1]"
    );
    assert!(up.heads().is_empty(), "the upstream was reached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_to_an_unlisted_name_fails_and_is_recorded() {
    let up = Upstream::start().await;
    let (served, addr) = serve(&proxy(&["allowed.test", "127.0.0.1"]));
    let out = curl(args(&[
        "-p",
        "-x",
        &proxy_url(addr),
        &format!("http://evil.test:{}/hello", up.port()),
    ]))
    .await;
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("403"),
        "{}",
        text(&out)
    );
    assert_eq!(
        served.denials(),
        [Denial {
            host: "evil.test".into(),
            port: up.port(),
            reason: DenialReason::NotListed
        }]
    );
    assert!(up.heads().is_empty(), "the upstream was reached");
}

/// Fetches `http://<host>:<upstream port>/hello` through a proxy allowing
/// `allowed`, and checks the refusal: curl's exit 22, the 403's header and
/// `reason_text` (with `{port}` for the upstream's port) in its body, one
/// recorded denial of `host` for `reason`, and an upstream never reached.
async fn refused_over_http(allowed: &[&str], host: &str, reason_text: &str, reason: DenialReason) {
    let up = Upstream::start().await;
    let (served, addr) = serve(&proxy(allowed));
    let out = curl(args(&[
        "-i",
        "--fail-with-body",
        "-x",
        &proxy_url(addr),
        &format!("http://{host}:{}/hello", up.port()),
    ]))
    .await;
    assert_eq!(out.status.code(), Some(22), "{}", text(&out));
    let response = String::from_utf8_lossy(&out.stdout);
    assert!(
        response.contains("X-Dsh-Sandbox: network-denied"),
        "{response}"
    );
    let expected = reason_text.replace("{port}", &up.port().to_string());
    assert!(response.contains(&expected), "{response}");
    assert_eq!(
        served.denials(),
        [Denial {
            host: host.into(),
            port: up.port(),
            reason
        }]
    );
    assert!(up.heads().is_empty(), "the upstream was reached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlisted_ip_literal_is_denied() {
    refused_over_http(
        &["allowed.test"],
        "127.0.0.1",
        "the address 127.0.0.1 is not in [sandbox] network (allowed: allowed.test)",
        DenialReason::AddressNotListed,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_name_resolving_to_loopback_is_denied_as_non_public() {
    refused_over_http(
        &["rebind.test"],
        "rebind.test",
        "network to rebind.test:{port} denied: it resolves to 127.0.0.1, a loopback address, which is not listed",
        DenialReason::NonPublicAddress(LOOPBACK),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socks5_denial_fails_curl_and_is_recorded() {
    let up = Upstream::start().await;
    let (served, addr) = serve(&proxy(&["allowed.test", "127.0.0.1"]));
    let out = curl(args(&[
        "--socks5-hostname",
        &addr.to_string(),
        &format!("http://evil.test:{}/hello", up.port()),
    ]))
    .await;
    assert!(!out.status.success(), "{}", text(&out));
    assert!(out.stdout.is_empty(), "{}", text(&out));
    assert_eq!(
        served.denials(),
        [Denial {
            host: "evil.test".into(),
            port: up.port(),
            reason: DenialReason::NotListed
        }]
    );
    assert!(up.heads().is_empty(), "the upstream was reached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_observer_is_called_once_per_denial() {
    let up = Upstream::start().await;
    let seen: Arc<Mutex<Vec<Denial>>> = Arc::default();
    let log = Arc::clone(&seen);
    let proxy = proxy(&["allowed.test", "127.0.0.1"]).with_observer(Arc::new(move |d: &Denial| {
        log.lock().unwrap().push(d.clone())
    }));
    let (served, addr) = serve(&proxy);
    let port = up.port();
    let http = |host: &str| {
        args(&[
            "-x",
            &proxy_url(addr),
            &format!("http://{host}:{port}/hello"),
        ])
    };
    let socks = |host: &str| {
        args(&[
            "--socks5-hostname",
            &addr.to_string(),
            &format!("http://{host}:{port}/hello"),
        ])
    };
    curl(http("evil.test")).await;
    curl(socks("other.test")).await;
    curl(http("evil.test")).await;
    let ok = curl(http("allowed.test")).await;
    assert_eq!(ok.stdout, HELLO.as_bytes(), "{}", text(&ok));
    let hosts: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|d| d.host.clone())
        .collect();
    assert_eq!(hosts, ["evil.test", "other.test", "evil.test"]);
    // The listener folds the repeat.
    let recorded: Vec<String> = served.denials().into_iter().map(|d| d.host).collect();
    assert_eq!(recorded, ["evil.test", "other.test"]);
}

// One thread: nothing runs between `drop` and the connect, so this proves
// the socket is closed by the time `drop` returns.
#[tokio::test(flavor = "current_thread")]
async fn dropping_served_closes_the_listener() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let up = Upstream::start().await;
    let (served, addr) = serve(&proxy(&["allowed.test", "127.0.0.1"]));
    let target = format!("http://allowed.test:{}/hello", up.port());
    let out = curl(args(&["-x", &proxy_url(addr), &target])).await;
    assert_eq!(out.stdout, HELLO.as_bytes(), "{}", text(&out));
    // A connection in the middle of its handshake when the listener goes.
    let mut pending = tokio::net::TcpStream::connect(addr).await.unwrap();
    pending
        .write_all(b"GET http://allowed.test/")
        .await
        .unwrap();
    drop(served);
    // Nothing listens there any more. (Another test of this binary may be
    // handed the freed port at once; then the connection must at least not
    // reach this proxy: a proxied request gets no answer from it.)
    match std::net::TcpStream::connect(addr) {
        Err(refused) => assert_eq!(
            refused.kind(),
            std::io::ErrorKind::ConnectionRefused,
            "{refused}"
        ),
        Ok(stranger) => {
            use std::io::{Read, Write};
            let mut stranger = stranger;
            stranger
                .set_read_timeout(Some(std::time::Duration::from_millis(500)))
                .unwrap();
            let request =
                format!("GET {target} HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n");
            let _ = stranger.write_all(request.as_bytes());
            let mut answer = Vec::new();
            let _ = stranger.read_to_end(&mut answer);
            assert!(
                !String::from_utf8_lossy(&answer).contains(HELLO),
                "the dropped proxy still served a request"
            );
        }
    }
    let mut rest = Vec::new();
    let ended = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        pending.read_to_end(&mut rest),
    )
    .await;
    match ended {
        Ok(Ok(0)) | Ok(Err(_)) => {}
        other => panic!("the pending connection was not closed: {other:?} {rest:?}"),
    }
    let out = curl(args(&["-x", &proxy_url(addr), &target])).await;
    assert!(!out.status.success(), "{}", text(&out));
}
