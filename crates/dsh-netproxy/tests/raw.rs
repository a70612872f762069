//! The proxy driven byte by byte: malformed and hostile input, the
//! protocols it refuses, its limits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `bytes`, then reads until the proxy closes (10 s at most).
async fn exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    read_all(&mut s).await
}

async fn read_all(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    assert!(
        read.is_ok(),
        "the proxy did not close the connection; got {out:?}"
    );
    out
}

fn get(host: &str, port: u16) -> Vec<u8> {
    format!("GET http://{host}:{port}/hello HTTP/1.1\r\nHost: {host}\r\n\r\n").into_bytes()
}

fn status_line(response: &[u8]) -> String {
    String::from_utf8_lossy(response)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_an_oversized_head_leave_the_proxy_serving() {
    let up = Upstream::start().await;
    let (served, addr) = serve(&proxy(&["allowed.test", "127.0.0.1"]));

    // A head that never ends: 431 once 64 KiB have arrived.
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut head = b"GET http://allowed.test/ HTTP/1.1\r\nX-Long: ".to_vec();
    head.resize(70 * 1024, b'a');
    s.write_all(&head).await.unwrap();
    let response = read_all(&mut s).await;
    assert_eq!(
        status_line(&response),
        "HTTP/1.1 431 Request Header Fields Too Large"
    );

    // A complete head just over the limit: 431 too.
    let mut head = b"GET http://allowed.test/ HTTP/1.1\r\nX-Long: ".to_vec();
    head.resize(64 * 1024, b'a');
    head.extend_from_slice(b"\r\n\r\n");
    assert_eq!(
        status_line(&exchange(addr, &head).await),
        "HTTP/1.1 431 Request Header Fields Too Large"
    );

    // Garbage with a blank line: 400.
    let response = exchange(addr, b"\x00\xff\xfe garbage \x01\r\n\r\n").await;
    assert_eq!(status_line(&response), "HTTP/1.1 400 Bad Request");
    // Garbage then a hang-up, mid-head and mid-SOCKS.
    for bytes in [
        &b"\xff\xff\xff"[..],
        b"GET http://allo",
        b"\x05\x02\x00",
        b"\x05\x01\x00\x05\x01\x00\x03\x40abc",
    ] {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(bytes).await.unwrap();
        drop(s);
    }
    // Origin-form and https:// in absolute form are not proxy requests.
    let response = exchange(addr, b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n").await;
    assert_eq!(status_line(&response), "HTTP/1.1 400 Bad Request");
    let response = exchange(addr, b"GET https://allowed.test/ HTTP/1.1\r\n\r\n").await;
    assert_eq!(status_line(&response), "HTTP/1.1 400 Bad Request");
    assert!(String::from_utf8_lossy(&response).contains("CONNECT"));

    // Still serving.
    let response = exchange(addr, &get("allowed.test", up.port())).await;
    assert_eq!(status_line(&response), "HTTP/1.1 200 OK");
    assert!(response.ends_with(HELLO.as_bytes()));
    assert!(served.denials().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socks4_and_unsupported_socks5_requests_are_refused() {
    let up = Upstream::start().await;
    let (served, addr) = serve(&proxy(&["allowed.test", "127.0.0.1"]));
    let port = up.port().to_be_bytes();
    // SOCKS4 CONNECT to 127.0.0.1: "request rejected".
    let socks4 = [4, 1, port[0], port[1], 127, 0, 0, 1, 0];
    assert_eq!(exchange(addr, &socks4).await, [0, 0x5B, 0, 0, 0, 0, 0, 0]);
    // Only username/password offered: no acceptable method.
    assert_eq!(exchange(addr, &[5, 1, 2]).await, [5, 0xFF]);
    // BIND and UDP ASSOCIATE: command not supported.
    for cmd in [2, 3] {
        let reply = exchange(
            addr,
            &[5, 1, 0, 5, cmd, 0, 1, 127, 0, 0, 1, port[0], port[1]],
        )
        .await;
        assert_eq!(reply, [5, 0, 5, 7, 0, 1, 0, 0, 0, 0, 0, 0]);
    }
    // An unknown address type.
    assert_eq!(
        exchange(addr, &[5, 1, 0, 5, 1, 0, 9]).await,
        [5, 0, 5, 8, 0, 1, 0, 0, 0, 0, 0, 0]
    );
    // CONNECT by IPv4 address, listed: succeeds, and the greeting and the
    // request may come in one write.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, port[0], port[1]])
        .await
        .unwrap();
    s.write_all(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let reply = read_all(&mut s).await;
    assert_eq!(reply[..12], [5, 0, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    assert!(reply.ends_with(HELLO.as_bytes()), "{reply:?}");
    assert!(served.denials().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_does_not_resolve_is_502_and_not_a_denial() {
    let (served, addr) = serve(&proxy(&["nowhere.test"]));
    let response = exchange(addr, &get("nowhere.test", 80)).await;
    assert_eq!(status_line(&response), "HTTP/1.1 502 Bad Gateway");
    assert!(String::from_utf8_lossy(&response).contains("could not resolve nowhere.test"));
    let mut socks = vec![5, 1, 0, 5, 1, 0, 3, 12];
    socks.extend_from_slice(b"nowhere.test");
    socks.extend_from_slice(&[0, 80]);
    assert_eq!(
        exchange(addr, &socks).await,
        [5, 0, 5, 4, 0, 1, 0, 0, 0, 0, 0, 0]
    );
    assert!(served.denials().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_502_and_socks_reply_05() {
    // A port nothing listens on: bind, note it, close.
    let port = std::net::TcpListener::bind((LOOPBACK, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (served, addr) = serve(&proxy(&["allowed.test", "127.0.0.1"]));
    let response = exchange(addr, &get("allowed.test", port)).await;
    assert_eq!(status_line(&response), "HTTP/1.1 502 Bad Gateway");
    let p = port.to_be_bytes();
    assert_eq!(
        exchange(addr, &[5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, p[0], p[1]]).await,
        [5, 0, 5, 5, 0, 1, 0, 0, 0, 0, 0, 0]
    );
    assert!(served.denials().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_are_closed_at_once() {
    let up = Upstream::start().await;
    let (_served, addr) = serve(&proxy(&["allowed.test", "127.0.0.1"]).with_max_connections(1));
    // The first connection holds the only slot, mid-head.
    let mut first = TcpStream::connect(addr).await.unwrap();
    let request = get("allowed.test", up.port());
    first.write_all(&request[..10]).await.unwrap();
    // The second is closed without an answer.
    let mut second = TcpStream::connect(addr).await.unwrap();
    let _ = second.write_all(&request).await; // may already see the close
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), second.read_to_end(&mut got))
        .await
        .unwrap();
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?} {got:?}");
    // The first is served to the end.
    first.write_all(&request[10..]).await.unwrap();
    let response = read_all(&mut first).await;
    assert_eq!(status_line(&response), "HTTP/1.1 200 OK");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_body_sent_with_the_head_reaches_the_upstream() {
    // An upstream that echoes what it reads after the head, then closes.
    let upstream = tokio::net::TcpListener::bind((LOOPBACK, 0)).await.unwrap();
    let port = upstream.local_addr().unwrap().port();
    let echo = tokio::spawn(async move {
        let (mut s, _) = upstream.accept().await.unwrap();
        let mut seen = Vec::new();
        let mut chunk = [0u8; 1024];
        while !seen.ends_with(b"payload") {
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "{:?}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&chunk[..n]);
        }
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .await
            .unwrap();
        String::from_utf8(seen).unwrap()
    });
    let (_served, addr) = serve(&proxy(&["allowed.test", "127.0.0.1"]));
    let request = format!(
        "POST http://allowed.test:{port}/in HTTP/1.1\r\nHost: allowed.test\r\nProxy-Authorization: Basic eDp5\r\nContent-Length: 7\r\n\r\npayload"
    );
    let response = exchange(addr, request.as_bytes()).await;
    assert!(
        response.ends_with(b"\r\n\r\nok"),
        "{:?}",
        String::from_utf8_lossy(&response)
    );
    let seen = echo.await.unwrap();
    assert_eq!(
        seen,
        format!("POST /in HTTP/1.1\r\nHost: allowed.test:{port}\r\nContent-Length: 7\r\nConnection: close\r\n\r\npayload")
    );
}
