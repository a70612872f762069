//! Bulk relaying through the proxy: megabytes both ways at once, a
//! half-close from the client, and more megabytes back after it — every
//! byte compared, so a relay that drops, repeats or reorders bytes fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Sent by the client.
const UP: usize = 6 << 20;
/// Sent by the upstream after the client's half-close.
const TRAILER: usize = 3 << 20;

/// An upstream for one connection: echoes what it reads as it reads it;
/// once the client has finished sending, sends `trailer` and closes.
/// Resolves to everything it read.
async fn echo_upstream(trailer: Vec<u8>) -> (u16, JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind((LOOPBACK, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let (s, _) = listener.accept().await.unwrap();
        let (mut read, mut write) = s.into_split();
        let mut seen = Vec::new();
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            let n = read.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            write.write_all(&buf[..n]).await.unwrap();
        }
        write.write_all(&trailer).await.unwrap();
        write.shutdown().await.unwrap();
        seen
    });
    (port, task)
}

/// Opens a tunnel to 127.0.0.1:`port` through the proxy at `proxy` with
/// `handshake` and the start of `sent` in the same write (so some of the
/// payload arrives with the request); sends the rest while reading, then
/// half-closes. Returns everything read, the proxy's own reply first.
async fn exchange(proxy: SocketAddr, handshake: Vec<u8>, sent: &[u8]) -> Vec<u8> {
    let s = TcpStream::connect(proxy).await.unwrap();
    let (mut read, mut write) = s.into_split();
    let body = sent.to_vec();
    let writer = tokio::spawn(async move {
        let mut first = handshake;
        first.extend_from_slice(&body[..1000]);
        write.write_all(&first).await.unwrap();
        write.write_all(&body[1000..]).await.unwrap();
        // The half-close; the echo and the trailer still come back.
        write.shutdown().await.unwrap();
        write
    });
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), read.read_to_end(&mut got))
        .await
        .expect("the relay delivered everything and closed")
        .unwrap();
    let _write = writer.await.unwrap();
    got
}

/// What the client and the upstream must have seen.
fn check(got: &[u8], reply_len: usize, sent: &[u8], trailer: &[u8], seen: &[u8]) {
    assert!(
        seen == sent,
        "the upstream got {} bytes, not the {} sent in order",
        seen.len(),
        sent.len()
    );
    let back = &got[reply_len..];
    assert_eq!(back.len(), sent.len() + trailer.len());
    assert!(back[..sent.len()] == *sent, "the echo came back altered");
    assert!(
        back[sent.len()..] == *trailer,
        "the bytes after the half-close came back altered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_tunnel_relays_megabytes_both_ways_across_a_half_close() {
    let (sent, trailer) = (pattern(3, UP), pattern(5, TRAILER));
    let (port, upstream) = echo_upstream(trailer.clone()).await;
    let (served, addr) = serve(&proxy(&["127.0.0.1"]));
    let head = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    let got = exchange(addr, head.into_bytes(), &sent).await;
    let reply = b"HTTP/1.1 200 Connection established\r\n\r\n";
    assert!(got.starts_with(reply), "{:?}", &got[..got.len().min(80)]);
    check(&got, reply.len(), &sent, &trailer, &upstream.await.unwrap());
    assert!(served.denials().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socks5_relays_megabytes_both_ways_across_a_half_close() {
    let (sent, trailer) = (pattern(13, UP), pattern(17, TRAILER));
    let (port, upstream) = echo_upstream(trailer.clone()).await;
    let (served, addr) = serve(&proxy(&["127.0.0.1"]));
    let p = port.to_be_bytes();
    let handshake = vec![5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, p[0], p[1]];
    let got = exchange(addr, handshake, &sent).await;
    // Method "no authentication", then "succeeded".
    let reply = [5, 0, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    assert_eq!(got[..reply.len()], reply);
    check(&got, reply.len(), &sent, &trailer, &upstream.await.unwrap());
    assert!(served.denials().is_empty());
}
