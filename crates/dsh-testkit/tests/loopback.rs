//! The loopback server over a raw HTTP/1.1 client.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

use std::time::Duration;

use dsh_testkit::{LoopbackServer, ScriptedResponse};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn raw_request(server: &LoopbackServer, body: &str) -> String {
    let mut sock = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let req = format!(
        "POST /chat/completions?x=1 HTTP/1.1\r\nHost: localhost\r\nX-Test: yes\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    sock.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    // A dropped connection ends the read with an error or EOF; both are fine.
    let _ = sock.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn records_requests_and_plays_the_script_in_order() {
    let server = LoopbackServer::start([
        ScriptedResponse::sse(&["{}", "[DONE]"]).header("x-reply", "1"),
        ScriptedResponse::new(429)
            .header("retry-after", "3")
            .piece("slow")
            .delay(Duration::from_millis(5))
            .piece("down"),
    ])
    .await
    .unwrap();
    assert!(server.base_url().starts_with("http://127.0.0.1:"));
    let first = raw_request(&server, "hello").await;
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    assert!(first.contains("content-type: text/event-stream"));
    assert!(first.contains("x-reply: 1"));
    assert!(first.contains("data: {}\n\n"));
    assert!(first.contains("data: [DONE]\n\n"));
    let second = raw_request(&server, "").await;
    assert!(second.starts_with("HTTP/1.1 429"));
    assert!(second.contains("retry-after: 3"));
    assert!(second.contains("slow") && second.contains("down"));
    let third = raw_request(&server, "").await;
    assert!(third.starts_with("HTTP/1.1 500"));
    assert!(third.contains("no scripted response left"));

    let req = server.next_request().await;
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/chat/completions?x=1");
    assert_eq!(req.header("x-test"), Some("yes"));
    assert_eq!(req.text(), "hello");
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.bodies_dropped(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn drop_and_hang_end_bodies_early() {
    let server = LoopbackServer::start([
        ScriptedResponse::new(200).piece("partial").then_drop(),
        ScriptedResponse::new(200).piece("forever").then_hang(),
    ])
    .await
    .unwrap();
    let dropped = raw_request(&server, "").await;
    assert!(dropped.contains("partial"));
    // A chunked body cut short never sends its terminating zero chunk.
    assert!(!dropped.ends_with("0\r\n\r\n"));
    server.wait_bodies_dropped(1).await;

    let mut sock = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    sock.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let mut got = String::new();
    while !got.contains("forever") {
        let n = sock.read(&mut buf).await.unwrap();
        assert!(n > 0);
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    drop(sock);
    // The client went away: the hanging body ends once the server notices
    // (at the latest at shutdown).
    server.shutdown().await;
}
