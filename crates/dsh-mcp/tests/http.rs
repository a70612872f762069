//! MCP over streamable HTTP: the fixture server (`dsh-mcp-fixture --http`)
//! on a loopback port, dropped and brought back.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use common::{exec, guard, until_state, FIXTURE};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use dsh_kernel::ErrorCode;
use dsh_mcp::{codes, McpServer, McpServerConfig, McpServerState, RestartPolicy};
use dsh_tools::{CallEnv, ToolCall, ToolRegistry};

/// The fixture serving HTTP; killed when dropped.
struct HttpFixture {
    child: Child,
    addr: SocketAddr,
}

impl HttpFixture {
    /// Starts the fixture on `addr` (port 0: any free port) and waits for
    /// the address it prints once it listens.
    fn start(addr: &str) -> HttpFixture {
        let mut child = Command::new(FIXTURE)
            .args(["--http", addr])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("fixture spawns");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("reads the address");
        let addr = line.trim().parse().expect("an address");
        HttpFixture { child, addr }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    fn kill(&mut self) {
        let _ = self.child.kill(); // already gone is fine
        let _ = self.child.wait();
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        self.kill();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_over_http_reach_the_server_with_expanded_headers() {
    let fixture = HttpFixture::start("127.0.0.1:0");
    // SAFETY-free in edition 2021; set before the server starts and never
    // read concurrently by this test's other threads.
    std::env::set_var("DSH_MCP_HTTP_TEST_TOKEN", "s3cret");
    let registry = Arc::new(ToolRegistry::new());
    let config = McpServerConfig::http("web", fixture.url())
        .header("Authorization", "Bearer ${DSH_MCP_HTTP_TEST_TOKEN}")
        .header("X-Plain", "plain");
    let server = guard("start", McpServer::start(config, &registry))
        .await
        .expect("starts over HTTP");
    assert_eq!(server.state(), McpServerState::Running);
    assert_eq!(server.pid(), None);
    assert!(
        registry.names().iter().any(|n| n == "mcp__web__add"),
        "{:?}",
        registry.names()
    );
    let sum = exec(&registry, "mcp__web__add", r#"{"a": 2, "b": 3}"#).await;
    assert!(!sum.is_error, "{sum:?}");
    assert_eq!(sum.text(), "5");
    let auth = exec(
        &registry,
        "mcp__web__header",
        r#"{"name": "authorization"}"#,
    )
    .await;
    assert_eq!(auth.text(), "Bearer s3cret");
    let plain = exec(&registry, "mcp__web__header", r#"{"name": "x-plain"}"#).await;
    assert_eq!(plain.text(), "plain");
    let fail = exec(&registry, "mcp__web__fail", r#"{"message": "nope"}"#).await;
    assert_eq!(fail.code(), Some(codes::MCP_TOOL_ERROR));
    server.shutdown().await;
    assert!(registry.is_empty());
    assert!(matches!(server.state(), McpServerState::Exited(None)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unset_header_variable_fails_the_start_naming_it() {
    let fixture = HttpFixture::start("127.0.0.1:0");
    let registry = Arc::new(ToolRegistry::new());
    let config = McpServerConfig::http("web", fixture.url())
        .header("X-Visible-Secret", "hunter2")
        .header("Authorization", "Bearer ${DSH_MCP_TEST_SURELY_UNSET}");
    let err = guard("start", McpServer::start(config, &registry))
        .await
        .expect_err("cannot start");
    assert_eq!(err.code(), codes::MCP_START_FAILED);
    let msg = err.to_string();
    assert!(msg.contains("DSH_MCP_TEST_SURELY_UNSET"), "{msg}");
    assert!(msg.contains("\"web\""), "{msg}");
    assert!(msg.contains(&format!("url: {}", fixture.url())), "{msg}");
    assert!(!msg.contains("hunter2"), "a header value leaked: {msg}");
    assert!(registry.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_not_there_fails_the_start() {
    // Bind and drop: a port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let registry = Arc::new(ToolRegistry::new());
    let err = guard(
        "start",
        McpServer::start(
            McpServerConfig::http("gone", format!("http://127.0.0.1:{port}/mcp")),
            &registry,
        ),
    )
    .await
    .expect_err("nothing listens");
    assert_eq!(err.code(), codes::MCP_START_FAILED);
    let text = err.to_string();
    assert!(text.contains("initialize"), "{err}");
    // The cause in words, not the SDK's transport types.
    assert!(text.contains("Connection refused"), "{err}");
    assert!(!text.contains("WorkerTransport"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_http_server_is_reconnected_once_it_is_back() {
    let mut fixture = HttpFixture::start("127.0.0.1:0");
    let addr = fixture.addr.to_string();
    let registry = Arc::new(ToolRegistry::new());
    let config = McpServerConfig::http("web", fixture.url()).restart(RestartPolicy {
        initial_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(200),
        max_attempts: 1000,
        ..RestartPolicy::default()
    });
    let server = guard("start", McpServer::start(config, &registry))
        .await
        .expect("starts");
    let tools = registry.names();
    assert_eq!(
        exec(&registry, "mcp__web__add", r#"{"a": 1, "b": 1}"#)
            .await
            .text(),
        "2"
    );

    // A call in flight when the server goes away.
    let marker = std::env::temp_dir().join(format!("dsh-mcp-http-drop-{}", std::process::id()));
    let args = format!(
        r#"{{"ms": 30000, "marker": {:?}}}"#,
        marker.display().to_string()
    );
    let in_flight = tokio::spawn({
        let registry = registry.clone();
        async move {
            registry
                .execute(
                    &ToolCall::new("c2", "mcp__web__sleep", args),
                    CallEnv::default(),
                )
                .await
        }
    });
    guard("the sleep to start", async {
        while !std::fs::read_to_string(&marker).is_ok_and(|s| s == "started") {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let _ = std::fs::remove_file(&marker);
    fixture.kill();
    let slept = guard("the in-flight call", in_flight)
        .await
        .expect("no panic");
    assert_eq!(
        slept.code(),
        Some(codes::MCP_SERVER_UNAVAILABLE),
        "{slept:?}"
    );

    let down = exec(&registry, "mcp__web__add", r#"{"a": 1, "b": 2}"#).await;
    assert_eq!(down.code(), Some(codes::MCP_SERVER_UNAVAILABLE), "{down:?}");
    assert!(down.text().contains("reconnecting"), "{}", down.text());
    assert!(
        matches!(server.state(), McpServerState::Restarting { .. }),
        "{:?}",
        server.state()
    );
    // The tools stay registered meanwhile.
    assert_eq!(registry.names(), tools);

    let _back = HttpFixture::start(&addr);
    until_state(&server, "the reconnect", |s| *s == McpServerState::Running).await;
    assert_eq!(
        exec(&registry, "mcp__web__add", r#"{"a": 1, "b": 2}"#)
            .await
            .text(),
        "3"
    );
    assert_eq!(registry.names(), tools);
    server.shutdown().await;
    assert!(registry.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_above_max_message_bytes_fails_the_call_clearly() {
    let fixture = HttpFixture::start("127.0.0.1:0");
    let registry = Arc::new(ToolRegistry::new());
    let mut config = McpServerConfig::http("web", fixture.url());
    config.max_message_bytes = 2000;
    let server = guard("start", McpServer::start(config, &registry))
        .await
        .expect("starts");
    let fits = exec(&registry, "mcp__web__big", r#"{"bytes": 1000}"#).await;
    assert_eq!(fits.text().len(), 1000, "{fits:?}");
    let over = exec(&registry, "mcp__web__big", r#"{"bytes": 100000}"#).await;
    assert!(over.is_error, "{over:?}");
    assert!(over.text().contains("max_message_bytes"), "{}", over.text());
    assert_eq!(over.code(), Some(codes::MCP_CALL_FAILED), "{over:?}");
    // The server is still up and the connection usable.
    assert_eq!(server.state(), McpServerState::Running);
    assert_eq!(
        exec(&registry, "mcp__web__add", r#"{"a": 1, "b": 2}"#)
            .await
            .text(),
        "3"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_http_server_that_goes_away_is_noticed_without_a_call() {
    let mut fixture = HttpFixture::start("127.0.0.1:0");
    let addr = fixture.addr.to_string();
    let registry = Arc::new(ToolRegistry::new());
    let config = McpServerConfig::http("web", fixture.url()).restart(RestartPolicy {
        initial_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(200),
        max_attempts: 1000,
        probe_every: Duration::from_millis(50),
        ..RestartPolicy::default()
    });
    let server = guard("start", McpServer::start(config, &registry))
        .await
        .expect("starts");
    // Pings that are answered change nothing.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(server.state(), McpServerState::Running);

    fixture.kill();
    // Nobody calls: the probe notices.
    until_state(&server, "the drop to be noticed", |s| {
        matches!(s, McpServerState::Restarting { .. })
    })
    .await;
    let tools = registry.names();
    assert!(tools.iter().any(|n| n == "mcp__web__add"), "{tools:?}");

    let _back = HttpFixture::start(&addr);
    until_state(&server, "the reconnect", |s| *s == McpServerState::Running).await;
    assert_eq!(
        exec(&registry, "mcp__web__add", r#"{"a": 4, "b": 5}"#)
            .await
            .text(),
        "9"
    );
    server.shutdown().await;
}
