//! Hostile servers (issue 13): silent connections, keep-alive-only streams,
//! HTML 200 answers, oversized events, bad config, AUTH never retried.
#![allow(unreachable_pub, clippy::unwrap_used, clippy::expect_used)] // the shared `common` helpers

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use dsh_kernel::ErrorCode;
use dsh_llm::{install_retry, LlmService, RetryConfig};
use dsh_llm_deepseek::{DeepSeekAdapter, DeepSeekConfig};
use dsh_protocol::codes;
use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the raw server does with each accepted connection.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Reads the request and never answers.
    Silent,
    /// Sends SSE headers, then only `: keep-alive` comments every 50 ms.
    KeepAlive,
    /// Sends a 200 with an HTML body.
    Html,
    /// Sends SSE headers, then one `data:` line of 32 MB (no terminator).
    HugeLine,
    /// Sends 401.
    Unauthorized,
}

struct RawServer {
    url: String,
    connections: Arc<AtomicUsize>,
    /// Set when a write to the client failed (the client closed).
    write_failed: Arc<AtomicUsize>,
    /// Bytes of body written before the client closed.
    written: Arc<AtomicUsize>,
}

async fn raw_server(b: Behaviour) -> RawServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let write_failed = Arc::new(AtomicUsize::new(0));
    let written = Arc::new(AtomicUsize::new(0));
    let (c, f, w) = (connections.clone(), write_failed.clone(), written.clone());
    tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            c.fetch_add(1, Ordering::SeqCst);
            let (f, w) = (f.clone(), w.clone());
            tokio::spawn(async move {
                if serve(sock, b, &w).await.is_err() {
                    f.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
    });
    RawServer {
        url,
        connections,
        write_failed,
        written,
    }
}

async fn read_request(sock: &mut TcpStream) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut piece = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = sock.read(&mut piece).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&piece[..n]);
    }
    Ok(())
}

const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

async fn serve(mut sock: TcpStream, b: Behaviour, written: &AtomicUsize) -> std::io::Result<()> {
    read_request(&mut sock).await?;
    match b {
        Behaviour::Silent => {
            // Hold the connection open without answering.
            let mut sink = [0u8; 64];
            while sock.read(&mut sink).await? > 0 {}
        }
        Behaviour::KeepAlive => {
            sock.write_all(SSE_HEAD).await?;
            loop {
                sock.write_all(b": keep-alive\n\n").await?;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Behaviour::Html => {
            let body = "<html><body>Please log in to the Wi-Fi</body></html>";
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            sock.write_all(head.as_bytes()).await?;
            sock.write_all(body.as_bytes()).await?;
        }
        Behaviour::HugeLine => {
            sock.write_all(SSE_HEAD).await?;
            sock.write_all(b"data: ").await?;
            let piece = vec![b'x'; 64 * 1024];
            for _ in 0..(32 * 1024 * 1024 / piece.len()) {
                sock.write_all(&piece).await?;
                written.fetch_add(piece.len(), Ordering::SeqCst);
            }
        }
        Behaviour::Unauthorized => {
            let body = r#"{"error":{"message":"bad key"}}"#;
            let head = format!(
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            sock.write_all(head.as_bytes()).await?;
            sock.write_all(body.as_bytes()).await?;
        }
    }
    sock.shutdown().await
}

fn fast(url: &str) -> DeepSeekConfig {
    let mut cfg = config(url);
    cfg.connect_timeout_ms = 200;
    cfg.stream_idle_timeout_ms = 300;
    cfg
}

#[tokio::test]
async fn silent_server_fails_with_connect_timeout() {
    let server = raw_server(Behaviour::Silent).await;
    let a = DeepSeekAdapter::new(fast(&server.url)).unwrap();
    // On main there was no header deadline short of connect + read timeout
    // (30 s + 300 s), so `run`'s 30 s guard would fire instead.
    let (chunks, err) = split(run(&a, options()).await);
    assert!(chunks.is_empty());
    let err = err.unwrap();
    assert_eq!(err.code(), codes::TIMEOUT, "{}", err.message);
    assert!(
        err.message.contains("connect_timeout_ms"),
        "{}",
        err.message
    );
    assert!(err.is_transient());
}

#[tokio::test]
async fn keep_alive_comments_do_not_reset_the_idle_timeout() {
    let server = raw_server(Behaviour::KeepAlive).await;
    let a = DeepSeekAdapter::new(fast(&server.url)).unwrap();
    // Comments arrive every 50 ms, well inside the 300 ms idle limit: only
    // a timer that ignores comments can end this stream.
    let (chunks, err) = split(run(&a, options()).await);
    assert!(chunks.is_empty());
    let err = err.unwrap();
    assert_eq!(err.code(), codes::TIMEOUT, "{}", err.message);
    assert!(
        err.message.contains("stream_idle_timeout_ms"),
        "{}",
        err.message
    );
    assert!(err.is_transient(), "no output yet: retryable");
}

#[tokio::test]
async fn idle_timeout_is_retried_per_policy() {
    let server = raw_server(Behaviour::KeepAlive).await;
    let service = LlmService::new();
    let mut cfg = fast(&server.url);
    cfg.models = vec!["deepseek-v4-flash".into()];
    let _reg = dsh_llm_deepseek::register(&service, cfg).unwrap();
    let _retry = install_retry(
        &service,
        RetryConfig {
            max_retries: 1,
            base: Duration::from_millis(1),
            cap: Duration::from_millis(10),
        },
    );
    let items = tokio::time::timeout(
        Duration::from_secs(30),
        service.stream(options()).await.collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    let (_, err) = split(items);
    assert_eq!(err.unwrap().code(), codes::TIMEOUT);
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn html_200_is_malformed_and_names_the_content_type() {
    let server = raw_server(Behaviour::Html).await;
    let a = DeepSeekAdapter::new(fast(&server.url)).unwrap();
    let (chunks, err) = split(run(&a, options()).await);
    assert!(chunks.is_empty());
    let err = err.unwrap();
    assert_eq!(err.code(), codes::MALFORMED_RESPONSE, "{}", err.message);
    assert!(
        err.message
            .contains("expected text/event-stream, got text/html; charset=utf-8"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn oversized_event_fails_without_reading_it_all() {
    let server = raw_server(Behaviour::HugeLine).await;
    let mut cfg = fast(&server.url);
    cfg.max_event_bytes = 1024;
    cfg.stream_idle_timeout_ms = 10_000;
    let a = DeepSeekAdapter::new(cfg).unwrap();
    let (chunks, err) = split(run(&a, options()).await);
    assert!(chunks.is_empty());
    let err = err.unwrap();
    assert_eq!(err.code(), codes::MALFORMED_RESPONSE, "{}", err.message);
    assert!(
        err.message.contains("an SSE event exceeded 1024 bytes"),
        "{}",
        err.message
    );
    // The client dropped the connection after ~1 KiB (+ one read): the
    // server's 32 MB write fails long before the end (socket buffers hold
    // a few MB at most). Memory is bounded by construction: the check runs
    // before every read, so at most limit + one read is buffered.
    tokio::time::timeout(Duration::from_secs(20), async {
        while server.write_failed.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the server never saw the connection closed");
    assert!(server.written.load(Ordering::SeqCst) < 32 * 1024 * 1024);
}

#[tokio::test]
async fn auth_is_never_retried() {
    let server = raw_server(Behaviour::Unauthorized).await;
    let service = LlmService::new();
    let mut cfg = fast(&server.url);
    cfg.models = vec!["deepseek-v4-flash".into()];
    let _reg = dsh_llm_deepseek::register(&service, cfg).unwrap();
    let _retry = install_retry(
        &service,
        RetryConfig {
            max_retries: 3,
            base: Duration::from_millis(1),
            cap: Duration::from_millis(10),
        },
    );
    let items = service.stream(options()).await.collect::<Vec<_>>().await;
    let (_, err) = split(items);
    assert_eq!(err.unwrap().code(), codes::AUTH);
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}

#[test]
fn validate_names_the_key() {
    let mut cfg = DeepSeekConfig {
        base_url: Some("htp:/x".into()),
        ..DeepSeekConfig::default()
    };
    let e = cfg.validate().unwrap_err();
    assert!(
        e.starts_with("[deepseek] base_url \"htp:/x\" is not a valid URL"),
        "{e}"
    );
    cfg.base_url = Some("not a url".into());
    assert!(cfg.validate().unwrap_err().contains("base_url"));
    cfg.base_url = Some("ftp://example.com".into());
    assert!(cfg.validate().unwrap_err().contains("base_url"));
    cfg.base_url = None;
    assert_eq!(cfg.validate(), Ok(()));
    cfg.connect_timeout_ms = 0;
    assert!(cfg.validate().unwrap_err().contains("connect_timeout_ms"));
    cfg.connect_timeout_ms = 1;
    cfg.stream_idle_timeout_ms = 0;
    assert!(cfg
        .validate()
        .unwrap_err()
        .contains("stream_idle_timeout_ms"));
    cfg.stream_idle_timeout_ms = 1;
    cfg.max_event_bytes = 0;
    assert!(cfg.validate().unwrap_err().contains("max_event_bytes"));
}

#[test]
fn limits_above_their_ceiling_are_refused_naming_key_and_ceiling() {
    for (cfg, key, ceiling) in [
        (
            DeepSeekConfig {
                connect_timeout_ms: u64::MAX,
                ..DeepSeekConfig::default()
            },
            "connect_timeout_ms",
            dsh_llm_deepseek::MAX_CONNECT_TIMEOUT_MS.to_string(),
        ),
        (
            DeepSeekConfig {
                stream_idle_timeout_ms: dsh_llm_deepseek::MAX_STREAM_IDLE_TIMEOUT_MS + 1,
                ..DeepSeekConfig::default()
            },
            "stream_idle_timeout_ms",
            dsh_llm_deepseek::MAX_STREAM_IDLE_TIMEOUT_MS.to_string(),
        ),
        (
            DeepSeekConfig {
                max_event_bytes: usize::MAX,
                ..DeepSeekConfig::default()
            },
            "max_event_bytes",
            dsh_llm_deepseek::MAX_MAX_EVENT_BYTES.to_string(),
        ),
    ] {
        let e = cfg.validate().unwrap_err();
        assert!(e.contains(key) && e.contains(&ceiling), "{e}");
    }
    let at_ceiling = DeepSeekConfig {
        connect_timeout_ms: dsh_llm_deepseek::MAX_CONNECT_TIMEOUT_MS,
        stream_idle_timeout_ms: dsh_llm_deepseek::MAX_STREAM_IDLE_TIMEOUT_MS,
        max_event_bytes: dsh_llm_deepseek::MAX_MAX_EVENT_BYTES,
        ..DeepSeekConfig::default()
    };
    assert_eq!(at_ceiling.validate(), Ok(()));
}

#[test]
fn a_key_that_cannot_be_a_header_value_is_invalid_config_not_network() {
    for key in ["sk-abc\nx", "sk-abc\r\n", "sk-\u{7}abc"] {
        let cfg = DeepSeekConfig {
            api_key: Some(key.into()),
            ..DeepSeekConfig::default()
        };
        let err = DeepSeekAdapter::new(cfg).err().unwrap();
        assert_eq!(err.code(), codes::INVALID_CONFIG, "{key:?}");
        assert!(err.to_string().contains("api_key"), "{err}");
        assert!(
            !err.to_string().contains("sk-"),
            "never echoes the key: {err}"
        );
    }
    assert!(dsh_llm_deepseek::check_api_key("sk-0123abc").is_ok());
}

#[test]
fn bad_base_url_fails_construction_with_invalid_config() {
    let cfg = DeepSeekConfig {
        api_key: Some("sk-test".into()),
        base_url: Some("htp:/x".into()),
        ..DeepSeekConfig::default()
    };
    let err = DeepSeekAdapter::new(cfg.clone()).err().unwrap();
    assert_eq!(err.code(), codes::INVALID_CONFIG);
    assert!(
        err.message.contains("[deepseek] base_url"),
        "{}",
        err.message
    );
    let service = LlmService::new();
    let err = dsh_llm_deepseek::register(&service, cfg).err().unwrap();
    assert_eq!(err.code(), codes::INVALID_CONFIG);
}

#[test]
fn defaults_match_the_documentation() {
    let d = DeepSeekConfig::default();
    assert_eq!(d.connect_timeout_ms, 60_000);
    assert_eq!(d.stream_idle_timeout_ms, 300_000);
    assert_eq!(d.max_event_bytes, 16 * 1024 * 1024);
}

/// A real DeepSeek stream (from the loopback server) with three tool calls
/// crosses `max_tool_calls = 2` at the third call, as the loop counts it.
#[tokio::test]
async fn step_meter_counts_deepseek_tool_calls() {
    let mut body = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
    );
    for i in 0..3 {
        let payload = serde_json::json!({"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":i,"id":format!("call_{i}"),"type":"function","function":{"name":"bash","arguments":"{}"}}]},"finish_reason":null}]});
        body.push_str(&format!("data: {payload}\n\n"));
    }
    body.push_str("data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        read_request(&mut sock).await.unwrap();
        let _ = sock.write_all(body.as_bytes()).await;
        let _ = sock.shutdown().await;
    });
    let a = DeepSeekAdapter::new(fast(&url)).unwrap();
    let mut meter = dsh_llm::StepMeter::new(dsh_llm::StepLimits {
        max_tool_calls: 2,
        ..Default::default()
    });
    let mut crossed = None;
    for (n, item) in run(&a, options()).await.into_iter().enumerate() {
        if let Err(e) = meter.observe(&item.unwrap()) {
            crossed = Some((n, e.code));
            break;
        }
    }
    let (_, code) = crossed.expect("the meter never tripped");
    assert_eq!(code, codes::TOO_MANY_TOOL_CALLS);
    assert_eq!(meter.tool_calls(), 3);
}
