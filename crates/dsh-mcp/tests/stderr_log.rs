//! The server's stderr reaches the `tracing` log, line by line, tagged with
//! the server's name.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_mcp::{McpServer, McpServerConfig};
use dsh_tools::ToolRegistry;

/// Collects everything the subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Starts the fixture as server "loud" with a capturing `tracing`
/// subscriber, runs `body` on it (with `waits_for` as the log line to wait
/// for afterwards), stops it and returns the whole log.
fn logged_run<F, Fut>(body: F, waits_for: &str) -> String
where
    F: FnOnce(Arc<ToolRegistry>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    // Thread-local: the current-thread runtime below runs every task here.
    let _default = tracing::subscriber::set_default(subscriber);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let registry = Arc::new(ToolRegistry::new());
        let server = McpServer::start(
            McpServerConfig::new("loud", env!("CARGO_BIN_EXE_dsh-mcp-fixture")),
            &registry,
        )
        .await
        .expect("fixture starts");
        body(registry).await;
        tokio::time::timeout(Duration::from_secs(20), async {
            while !captured.text().contains(waits_for) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the awaited stderr line is logged");
        server.shutdown().await;
    });
    captured.text()
}

#[test]
fn server_stderr_is_logged_with_the_server_name() {
    // The fixture writes `fixture: starting` before it initializes.
    let log = logged_run(|_| async {}, "fixture: starting");
    let line = log
        .lines()
        .find(|l| l.contains("fixture: starting"))
        .expect("logged");
    assert!(line.contains("dsh_mcp::stderr"), "{line}");
    assert!(line.contains("server=loud"), "{line}");
    assert!(log.contains("MCP server started"), "{log}");
}

#[test]
fn a_huge_stderr_line_is_cut_before_it_is_logged() {
    let log = logged_run(
        |registry| async move {
            let call = dsh_tools::ToolCall::new("c1", "mcp__loud__shout", r#"{"bytes": 3000000}"#);
            let r = registry.execute(&call, dsh_tools::CallEnv::default()).await;
            assert_eq!(r.text(), "shouted");
        },
        "fixture: shouted",
    );
    let line = log
        .lines()
        .find(|l| l.contains("sss"))
        .expect("the long line is logged");
    assert!(
        line.contains("… (3000000 bytes, cut)"),
        "{}",
        &line[line.len() - 80..]
    );
    assert!(line.len() < 64 * 1024 + 200, "logged {} bytes", line.len());
}
