//! MCP servers driven through the tool registry: the fixture server
//! (`src/bin/dsh-mcp-fixture.rs`) over real child-process stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use common::{exec, guard, until_state, FIXTURE};
use dsh_kernel::ErrorCode;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_llm::ContentBlock;
use dsh_mcp::{codes, McpServer, McpServerConfig, McpServerState, RestartPolicy};
use dsh_tools::{CallEnv, ToolCall, ToolContext, ToolRegistry, ToolResult};
use tokio::sync::mpsc;

/// Every tool of the fixture, in listing order (it lists two per page).
/// `twin_tool` is missing: it collides with `twin.tool` after sanitising.
const FIXTURE_TOOLS: [&str; 14] = [
    "mcp__fx__add",
    "mcp__fx__echo",
    "mcp__fx__fail",
    "mcp__fx__sleep",
    "mcp__fx__crash",
    "mcp__fx__grow",
    "mcp__fx__image",
    "mcp__fx__env",
    "mcp__fx__header",
    "mcp__fx__stubborn",
    "mcp__fx__big",
    "mcp__fx__shout",
    "mcp__fx__twin_tool",
    "mcp__fx__doomed",
];

fn fixture(name: &str) -> McpServerConfig {
    McpServerConfig::new(name, FIXTURE)
}

async fn start(config: McpServerConfig) -> (Arc<ToolRegistry>, McpServer) {
    let registry = Arc::new(ToolRegistry::new());
    let server = guard("start", McpServer::start(config, &registry))
        .await
        .expect("fixture starts");
    (registry, server)
}

/// Counts `tools/change` emissions on a channel.
fn changes(registry: &ToolRegistry) -> (mpsc::UnboundedReceiver<()>, dsh_kernel::Registration) {
    let (tx, rx) = mpsc::unbounded_channel();
    let reg = registry.on_change().on(move |_| {
        // The receiver lives as long as the test.
        let _ = tx.send(());
    });
    (rx, reg)
}

/// Polls `cond` (a file the fixture writes) until it holds.
async fn eventually(what: &str, cond: impl Fn() -> bool) {
    guard(what, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

fn marker(test: &str) -> PathBuf {
    std::env::temp_dir().join(format!("dsh-mcp-{test}-{}", std::process::id()))
}

fn process_alive(pid: u32) -> bool {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid fits"));
    nix::sys::signal::kill(pid, None).is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registers_every_tool_across_pages_with_schemas_forwarded_raw() {
    let (registry, server) = start(fixture("fx")).await;
    assert_eq!(server.state(), McpServerState::Running);
    assert_eq!(server.tools(), FIXTURE_TOOLS);
    assert_eq!(registry.names(), FIXTURE_TOOLS);
    let skipped = server.skipped();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(
        (skipped[0].tool.as_str(), skipped[0].name.as_str()),
        ("twin_tool", "mcp__fx__twin_tool")
    );
    assert!(
        skipped[0].reason.contains("\"twin.tool\""),
        "{}",
        skipped[0].reason
    );
    assert_eq!(
        exec(&registry, "mcp__fx__twin_tool", "{}").await.text(),
        "twin.tool"
    );
    // A tool its server marks read-only runs alongside other safe calls;
    // the rest run alone.
    let concurrency = |name: &str| {
        registry.concurrency(&dsh_tools::ToolCall {
            call_id: "c".into(),
            name: name.into(),
            arguments: "{}".into(),
        })
    };
    assert_eq!(concurrency("mcp__fx__add"), dsh_tools::Concurrency::Safe);
    assert_eq!(
        concurrency("mcp__fx__echo"),
        dsh_tools::Concurrency::Exclusive
    );
    let add = registry
        .get("mcp__fx__add")
        .expect("registered")
        .schema()
        .clone();
    assert_eq!(add.description, "Adds two numbers");
    assert_eq!(
        add.parameters,
        serde_json::json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]})
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_map_results_and_errors() {
    let (registry, server) = start(fixture("fx")).await;

    let ok = exec(&registry, "mcp__fx__add", r#"{"a": 2, "b": 3.5}"#).await;
    assert!(!ok.is_error, "{ok:?}");
    assert_eq!(ok.text(), "5.5");
    assert_eq!(ok.call_id, "c1");

    // Arguments are not validated by the harness: the server sees them as sent.
    let echo = exec(
        &registry,
        "mcp__fx__echo",
        r#"{"x": [1, {"y": null}], "z": "s"}"#,
    )
    .await;
    assert_eq!(echo.text(), r#"{"x":[1,{"y":null}],"z":"s"}"#);
    let empty = exec(&registry, "mcp__fx__echo", "").await;
    assert_eq!(empty.text(), "{}");

    let fail = exec(&registry, "mcp__fx__fail", r#"{"message": "disk full"}"#).await;
    assert!(fail.is_error);
    assert_eq!(fail.code(), Some(codes::MCP_TOOL_ERROR));
    assert_eq!(fail.text(), "Error: disk full");

    // The server rejects bad arguments itself (JSON-RPC invalid params).
    let bad = exec(&registry, "mcp__fx__add", r#"{"a": "two"}"#).await;
    assert_eq!(bad.code(), Some(codes::MCP_CALL_FAILED));
    assert!(
        bad.text().contains("add needs numbers a and b"),
        "{}",
        bad.text()
    );

    let invalid = exec(&registry, "mcp__fx__add", r#"{"a": 1,"#).await;
    assert_eq!(invalid.code(), Some("INVALID_JSON"));
    let array = exec(&registry, "mcp__fx__add", "[1, 2]").await;
    assert_eq!(array.code(), Some("INVALID_ARGS"));
    assert!(array.text().contains("must be a JSON object, not an array"));

    let image = exec(&registry, "mcp__fx__image", "{}").await;
    assert!(!image.is_error);
    match &image.content[0] {
        ContentBlock::Image(img) => {
            assert!(
                img.url.starts_with("data:image/png;base64,iVBOR"),
                "{}",
                img.url
            );
            assert_eq!(img.mime_type.as_deref(), Some("image/png"));
        }
        other => panic!("expected an image block, got {other:?}"),
    }
    assert_eq!(
        image.content[1].as_text(),
        Some("[resource file:///note.txt]\na note")
    );

    // Still healthy after all that.
    assert_eq!(
        exec(&registry, "mcp__fx__add", r#"{"a": 1, "b": 1}"#)
            .await
            .text(),
        "2"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_the_timeout_is_a_timeout_result_and_the_server_keeps_working() {
    let (registry, server) = start(fixture("fx").timeout(Duration::from_millis(300))).await;
    let file = marker("timeout");
    let args = format!(
        r#"{{"ms": 30000, "marker": {:?}}}"#,
        file.display().to_string()
    );
    let began = Instant::now();
    let result = exec(&registry, "mcp__fx__sleep", &args).await;
    let took = began.elapsed();
    assert_eq!(result.code(), Some(codes::TIMEOUT), "{result:?}");
    assert!(result.text().contains("300 ms"), "{}", result.text());
    assert!(took < Duration::from_secs(3), "took {took:?}");
    // The server was told to cancel the call.
    eventually("the server to see the cancellation", || {
        std::fs::read_to_string(&file).is_ok_and(|s| s == "cancelled")
    })
    .await;
    assert_eq!(
        exec(&registry, "mcp__fx__add", r#"{"a": 1, "b": 2}"#)
            .await
            .text(),
        "3"
    );
    let _ = std::fs::remove_file(&file);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_above_max_message_bytes_is_too_large_at_once_and_the_server_keeps_working() {
    // 20 MB against the default 16 MiB limit; the call timeout is long so
    // that a wait for it would show.
    let (registry, server) = start(fixture("fx").timeout(Duration::from_secs(60))).await;
    let started = Instant::now();
    let r = exec(&registry, "mcp__fx__big", r#"{"bytes": 20000000}"#).await;
    assert!(r.is_error, "{r:?}");
    assert_eq!(r.code(), Some(codes::RESULT_TOO_LARGE), "{r:?}");
    let text = r.text();
    assert!(text.contains("max_message_bytes (16777216)"), "{text}");
    assert!(text.contains("mcp__fx__big"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(30), "not a timeout");
    // Just under a configured limit passes; the connection is intact.
    let ok = exec(&registry, "mcp__fx__add", r#"{"a": 1, "b": 2}"#).await;
    assert_eq!(ok.text(), "3");
    server.shutdown().await;

    let mut small = fixture("fx");
    small.max_message_bytes = 2000;
    let (registry, server) = start(small).await;
    let fits = exec(&registry, "mcp__fx__big", r#"{"bytes": 1000}"#).await;
    assert!(!fits.is_error, "{fits:?}");
    assert_eq!(fits.text().len(), 1000);
    let over = exec(&registry, "mcp__fx__big", r#"{"bytes": 3000}"#).await;
    assert_eq!(over.code(), Some(codes::RESULT_TOO_LARGE), "{over:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_args_checks_calls_locally_with_the_usual_wording() {
    let mut config = fixture("fx");
    config.validate_args = true;
    let (registry, server) = start(config).await;
    let checks = registry.schemas_with_checks();
    let add = checks
        .iter()
        .find(|(s, _)| s.name == "mcp__fx__add")
        .unwrap();
    assert_eq!(add.1, dsh_tools::ArgsCheck::Local);
    let r = exec(&registry, "mcp__fx__add", r#"{"a": "one"}"#).await;
    assert_eq!(r.code(), Some("INVALID_ARGS"), "{r:?}");
    assert_eq!(
        r.failure.as_ref().unwrap().violations,
        [
            r#""a" must be a number"#,
            r#"missing required property "b""#
        ]
    );
    let ok = exec(&registry, "mcp__fx__add", r#"{"a": 1, "b": 2}"#).await;
    assert_eq!(ok.text(), "3");
    server.shutdown().await;

    // Without it the server judges (and its own error comes back).
    let (registry, server) = start(fixture("fx")).await;
    let checks = registry.schemas_with_checks();
    assert_eq!(
        checks
            .iter()
            .find(|(s, _)| s.name == "mcp__fx__add")
            .unwrap()
            .1,
        dsh_tools::ArgsCheck::Server
    );
    let r = exec(&registry, "mcp__fx__add", r#"{"a": "one"}"#).await;
    assert_eq!(r.code(), Some(codes::MCP_CALL_FAILED), "{r:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_aborts_it_and_tells_the_server() {
    let (registry, server) = start(fixture("fx")).await;
    let file = marker("cancel");
    let args = format!(
        r#"{{"ms": 30000, "marker": {:?}}}"#,
        file.display().to_string()
    );
    let env = CallEnv::default();
    let cancel = env.cancel.clone();
    let running = tokio::spawn(registry.execute(&ToolCall::new("c9", "mcp__fx__sleep", args), env));
    eventually("the sleep to start", || {
        std::fs::read_to_string(&file).is_ok_and(|s| s == "started")
    })
    .await;
    cancel.cancel();
    let result = guard("the aborted call", running).await.expect("no panic");
    assert_eq!(result.code(), Some("ABORTED"), "{result:?}");
    assert_eq!(result.call_id, "c9");
    eventually("the server to see the cancellation", || {
        std::fs::read_to_string(&file).is_ok_and(|s| s == "cancelled")
    })
    .await;
    assert_eq!(server.state(), McpServerState::Running);
    assert_eq!(
        exec(&registry, "mcp__fx__add", r#"{"a": 4, "b": 4}"#)
            .await
            .text(),
        "8"
    );
    let _ = std::fs::remove_file(&file);
    server.shutdown().await;
}

/// Restarts quickly, but slowly enough that a call answered right after
/// the drop sees the server restarting.
fn quick_restarts(attempts: u32) -> RestartPolicy {
    RestartPolicy {
        initial_delay: Duration::from_millis(300),
        max_delay: Duration::from_millis(600),
        max_attempts: attempts,
        ..RestartPolicy::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_stdio_server_is_restarted_with_its_tools_kept() {
    let (registry, server) = start(fixture("fx").restart(quick_restarts(3))).await;
    let pid = server.pid().expect("a pid");
    let (mut changed, _reg) = changes(&registry);
    let stale = registry.get("mcp__fx__add").expect("registered");
    let file = marker("crash");
    let args = format!(
        r#"{{"ms": 30000, "marker": {:?}}}"#,
        file.display().to_string()
    );
    let in_flight = tokio::spawn(registry.execute(
        &ToolCall::new("c2", "mcp__fx__sleep", args),
        CallEnv::default(),
    ));
    eventually("the sleep to start", || {
        std::fs::read_to_string(&file).is_ok_and(|s| s == "started")
    })
    .await;

    let crash = exec(&registry, "mcp__fx__crash", r#"{"code": 7}"#).await;
    assert_eq!(
        crash.code(),
        Some(codes::MCP_SERVER_UNAVAILABLE),
        "{crash:?}"
    );
    let text = crash.text();
    assert!(text.contains("\"fx\" exited with code 7"), "{text}");
    assert!(text.contains("reconnecting (attempt 1 of 3)"), "{text}");
    let slept = guard("the in-flight call", in_flight)
        .await
        .expect("no panic");
    assert_eq!(
        slept.code(),
        Some(codes::MCP_SERVER_UNAVAILABLE),
        "{slept:?}"
    );
    // Meanwhile the tools stay registered and calls fail at once.
    assert_eq!(
        server.state(),
        McpServerState::Restarting { attempt: 1, of: 3 }
    );
    assert_eq!(server.state().to_string(), "restarting (attempt 1 of 3)");
    assert_eq!(registry.names(), FIXTURE_TOOLS);
    let early = exec(&registry, "mcp__fx__add", r#"{"a": 1, "b": 1}"#).await;
    assert_eq!(
        early.code(),
        Some(codes::MCP_SERVER_UNAVAILABLE),
        "{early:?}"
    );
    assert!(!process_alive(pid));

    until_state(&server, "the restart", |s| *s == McpServerState::Running).await;
    let new_pid = server.pid().expect("a pid");
    assert_ne!(new_pid, pid);
    assert!(process_alive(new_pid));
    assert_eq!(
        exec(&registry, "mcp__fx__add", r#"{"a": 1, "b": 1}"#)
            .await
            .text(),
        "2"
    );
    // A tool handle kept from before works with the new process.
    let ctx = ToolContext::detached("c3", "mcp__fx__add");
    let blocks = guard("stale call", stale.call(r#"{"a": 2, "b": 2}"#, ctx))
        .await
        .expect("works again");
    assert_eq!(blocks.content[0].as_text(), Some("4"));
    // The same tools came back: none was unregistered or registered again.
    assert_eq!(server.tools(), FIXTURE_TOOLS);
    assert!(changed.try_recv().is_err(), "tools/change fired");
    let _ = std::fs::remove_file(&file);
    server.shutdown().await;
    assert!(!process_alive(new_pid));
    assert!(registry.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_again_is_given_up_and_its_tools_unregistered() {
    // Starts the fixture once; every later start exits at once with code 5.
    let flag = marker("give-up");
    let _ = std::fs::remove_file(&flag);
    let script = format!(
        "if [ -e '{0}' ]; then echo 'fixture: not again' >&2; exit 5; fi; touch '{0}'; exec '{FIXTURE}'",
        flag.display()
    );
    let config = McpServerConfig::new("fx", "sh")
        .args(["-c", &script])
        .restart(RestartPolicy {
            initial_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(40),
            max_attempts: 3,
            ..RestartPolicy::default()
        });
    let (registry, server) = start(config).await;
    let stale = registry.get("mcp__fx__add").expect("registered");
    let (mut changed, _reg) = changes(&registry);
    let crash = exec(&registry, "mcp__fx__crash", "{}").await;
    assert!(crash.is_error, "{crash:?}");
    guard("giving up", server.exited()).await;
    let McpServerState::Failed(why) = server.state() else {
        panic!("expected Failed, got {:?}", server.state())
    };
    assert!(why.contains("3 attempts"), "{why}");
    assert!(why.contains("exited with code 5"), "{why}");
    assert!(why.contains("not again"), "stderr is in the reason: {why}");
    assert!(registry.is_empty(), "{:?}", registry.names());
    guard("tools/change", changed.recv())
        .await
        .expect("change fired");
    let ctx = ToolContext::detached("c3", "mcp__fx__add");
    let err = guard("stale call", stale.call("{}", ctx))
        .await
        .expect_err("server gone");
    assert_eq!(err.code(), codes::MCP_SERVER_EXITED);
    assert!(err.message().contains("3 attempts"), "{}", err.message());
    assert_eq!(
        exec(&registry, "mcp__fx__add", "{}").await.code(),
        Some("UNKNOWN_TOOL")
    );
    let _ = std::fs::remove_file(&flag);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_restarts_a_crash_unregisters_the_tools() {
    let (registry, server) = start(fixture("fx").restart(RestartPolicy::NEVER)).await;
    let pid = server.pid().expect("a pid");
    let crash = exec(&registry, "mcp__fx__crash", r#"{"code": 7}"#).await;
    assert_eq!(crash.code(), Some(codes::MCP_SERVER_EXITED), "{crash:?}");
    assert!(
        crash.text().contains("\"fx\" exited with code 7"),
        "{}",
        crash.text()
    );
    guard("exit", server.exited()).await;
    assert_eq!(server.state(), McpServerState::Exited(Some(7)));
    assert!(registry.is_empty());
    assert!(!process_alive(pid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_the_backoff_ends_it_at_once() {
    let (registry, server) = start(fixture("fx").restart(RestartPolicy {
        initial_delay: Duration::from_secs(30),
        max_delay: Duration::from_secs(30),
        max_attempts: 10,
        ..RestartPolicy::default()
    }))
    .await;
    let crash = exec(&registry, "mcp__fx__crash", "{}").await;
    assert_eq!(
        crash.code(),
        Some(codes::MCP_SERVER_UNAVAILABLE),
        "{crash:?}"
    );
    let began = Instant::now();
    guard("shutdown", server.shutdown()).await;
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    assert!(
        matches!(server.state(), McpServerState::Exited(_)),
        "{:?}",
        server.state()
    );
    assert!(registry.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_tool_prefix_gives_the_older_names() {
    let (registry, server) = start(fixture("fx").tool_prefix("")).await;
    assert!(
        registry.names().iter().all(|n| n.starts_with("fx__")),
        "{:?}",
        registry.names()
    );
    assert_eq!(
        exec(&registry, "fx__add", r#"{"a": 2, "b": 2}"#)
            .await
            .text(),
        "4"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_resyncs_the_registered_tools() {
    let (registry, server) = start(fixture("fx")).await;
    let (mut changed, _reg) = changes(&registry);
    assert_eq!(exec(&registry, "mcp__fx__grow", "{}").await.text(), "grown");
    guard("the re-sync", async {
        loop {
            changed.recv().await.expect("registry alive");
            let names = registry.names();
            if names.iter().any(|n| n == "mcp__fx__extra")
                && !names.iter().any(|n| n == "mcp__fx__doomed")
            {
                break;
            }
        }
    })
    .await;
    assert_eq!(
        exec(&registry, "mcp__fx__extra", "{}").await.text(),
        "extra"
    );
    assert!(server.tools().contains(&"mcp__fx__extra".to_string()));
    assert!(!server.tools().contains(&"mcp__fx__doomed".to_string()));
    assert_eq!(server.tools().len(), FIXTURE_TOOLS.len());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_command_is_a_start_error_naming_server_and_command() {
    let registry = Arc::new(ToolRegistry::new());
    let err = McpServer::start(
        McpServerConfig::new("ghost", "/nonexistent/mcp-server").args(["--flag", "a b"]),
        &registry,
    )
    .await
    .expect_err("cannot start");
    assert_eq!(err.code(), codes::MCP_START_FAILED);
    let msg = err.to_string();
    assert!(msg.contains("\"ghost\""), "{msg}");
    assert!(
        msg.contains("/nonexistent/mcp-server --flag 'a b'"),
        "{msg}"
    );
    assert!(msg.contains("no such program"), "{msg}");

    // A program that runs but is no MCP server: its exit and stderr are reported.
    let err = McpServer::start(
        McpServerConfig::new("liar", "sh").args(["-c", "echo 'not an MCP server' >&2; exit 9"]),
        &registry,
    )
    .await
    .expect_err("cannot initialize");
    let msg = err.to_string();
    assert!(msg.contains("\"liar\"") && msg.contains("sh -c"), "{msg}");
    assert!(msg.contains("exited with code 9"), "{msg}");
    assert!(msg.contains("not an MCP server"), "{msg}");

    // One that never answers hits the start-up timeout.
    let began = Instant::now();
    let err = McpServer::start(
        McpServerConfig::new("mute", "sleep")
            .args(["30"])
            .timeout(Duration::from_millis(300)),
        &registry,
    )
    .await
    .expect_err("times out");
    assert!(err.to_string().contains("timeout"), "{err}");
    assert!(
        began.elapsed() < Duration::from_secs(8),
        "{:?}",
        began.elapsed()
    );
    assert!(registry.is_empty());

    // Other servers are unaffected.
    let results = dsh_mcp::start_all(
        [
            McpServerConfig::new("ghost", "/nonexistent/x"),
            fixture("fx"),
            McpServerConfig {
                enabled: false,
                ..fixture("off")
            },
        ],
        &registry,
    )
    .await;
    assert_eq!(results.len(), 2);
    assert!(results[0].1.is_err());
    let fx = results[1].1.as_ref().expect("fx starts");
    assert_eq!(
        exec(&registry, "mcp__fx__add", r#"{"a": 1, "b": 1}"#)
            .await
            .text(),
        "2"
    );
    fx.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_sees_only_its_configured_environment() {
    // SAFETY-free in edition 2021; set before the server is spawned and
    // never read concurrently by this test's other threads.
    std::env::set_var("DSH_MCP_TEST_SECRET", "hunter2");
    let (registry, server) = start(fixture("fx").env("VISIBLE", "yes")).await;
    let env = |name: &str| {
        let registry = &registry;
        let args = format!(r#"{{"name": "{name}"}}"#);
        async move { exec(registry, "mcp__fx__env", &args).await.text() }
    };
    assert_eq!(env("DSH_MCP_TEST_SECRET").await, "<unset>");
    assert_eq!(env("VISIBLE").await, "yes");
    assert_eq!(
        env("PATH").await,
        std::env::var("PATH").unwrap_or_else(|_| "<unset>".into())
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_unregisters_and_reaps_the_process() {
    let (registry, server) = start(fixture("fx")).await;
    let pid = server.pid().expect("a pid");
    assert!(process_alive(pid));
    let (mut changed, _reg) = changes(&registry);
    guard("shutdown", server.shutdown()).await;
    assert!(!process_alive(pid), "pid {pid} still there after shutdown");
    assert!(registry.is_empty());
    assert!(matches!(server.state(), McpServerState::Exited(_)));
    guard("tools/change", changed.recv())
        .await
        .expect("change fired");
    // Idempotent.
    guard("second shutdown", server.shutdown()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_kills_a_server_that_ignores_eof_and_sigterm() {
    let (registry, server) = start(fixture("fx")).await;
    let pid = server.pid().expect("a pid");
    assert_eq!(
        exec(&registry, "mcp__fx__stubborn", "{}").await.text(),
        "stubborn"
    );
    let began = Instant::now();
    guard("shutdown", server.shutdown()).await;
    let took = began.elapsed();
    assert!(!process_alive(pid), "pid {pid} survived shutdown");
    // Two grace periods (after EOF, after SIGTERM), then SIGKILL.
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(8),
        "took {took:?}"
    );
    assert!(registry.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collisions_are_skipped_and_reported() {
    let registry = Arc::new(ToolRegistry::new());
    let a = guard("a", McpServer::start(fixture("fx"), &registry))
        .await
        .expect("starts");
    // Same name again: every tool collides with the first server's.
    let b = guard("b", McpServer::start(fixture("fx"), &registry))
        .await
        .expect("starts");
    assert!(b.tools().is_empty());
    assert_eq!(b.skipped().len(), FIXTURE_TOOLS.len() + 1);
    assert!(
        b.skipped()[0].reason.contains("already registered"),
        "{:?}",
        b.skipped()
    );
    assert_eq!(registry.names(), FIXTURE_TOOLS);
    b.shutdown().await;
    // b's shutdown does not touch a's tools.
    assert_eq!(registry.names(), FIXTURE_TOOLS);
    a.shutdown().await;
    assert!(registry.is_empty());
}

/// Against the reference server of the MCP project, when `npx` is there:
/// `cargo test -p dsh-mcp -- --ignored`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs npx and network access"]
async fn public_everything_server() {
    if std::process::Command::new("npx")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("npx not found; skipping");
        return;
    }
    let registry = Arc::new(ToolRegistry::new());
    let config =
        dsh_mcp::parse_mcp_flag("everything=npx -y @modelcontextprotocol/server-everything")
            .expect("valid flag")
            .timeout(Duration::from_secs(120));
    let server = McpServer::start(config, &registry)
        .await
        .expect("server-everything starts");
    assert!(
        server.tools().iter().any(|t| t == "mcp__everything__echo"),
        "{:?}",
        server.tools()
    );
    let echo = exec(&registry, "mcp__everything__echo", r#"{"message": "hi"}"#).await;
    assert!(!echo.is_error, "{echo:?}");
    assert!(echo.text().contains("hi"));
    server.shutdown().await;
}

/// Crashes the running server through its `crash` tool once it is up
/// again, and returns what the call said.
async fn crash_when_running(registry: &ToolRegistry, server: &McpServer) -> ToolResult {
    until_state(server, "the server to run", |s| {
        *s == McpServerState::Running
    })
    .await;
    exec(registry, "mcp__fx__crash", r#"{"code": 9}"#).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_after_every_start_is_given_up() {
    let policy = RestartPolicy {
        initial_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(40),
        max_attempts: 3,
        stable_after: Duration::from_secs(60),
        ..RestartPolicy::default()
    };
    let (registry, server) = start(fixture("fx").restart(policy)).await;
    // Each start works, but none stays up: the attempts add up.
    for attempt in 1..=3 {
        let r = crash_when_running(&registry, &server).await;
        assert_eq!(r.code(), Some(codes::MCP_SERVER_UNAVAILABLE), "{r:?}");
        assert!(
            r.text().contains(&format!("attempt {attempt} of 3")),
            "{}",
            r.text()
        );
    }
    crash_when_running(&registry, &server).await;
    guard("the give-up", server.exited()).await;
    match server.state() {
        McpServerState::Failed(why) => {
            assert!(why.contains("did not stay up after 3 attempts"), "{why}")
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    assert!(registry.names().iter().all(|n| !n.starts_with("mcp__")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stayed_up_starts_its_attempts_over() {
    let policy = RestartPolicy {
        initial_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(40),
        max_attempts: 2,
        stable_after: Duration::ZERO,
        ..RestartPolicy::default()
    };
    let (registry, server) = start(fixture("fx").restart(policy)).await;
    // More crashes than attempts, each after a connection that counts as
    // stable: every one is attempt 1 again.
    for _ in 0..4 {
        let r = crash_when_running(&registry, &server).await;
        assert!(r.text().contains("attempt 1 of 2"), "{}", r.text());
    }
    until_state(&server, "the last restart", |s| {
        *s == McpServerState::Running
    })
    .await;
    let sum = exec(&registry, "mcp__fx__add", r#"{"a": 2, "b": 2}"#).await;
    assert!(!sum.is_error, "{sum:?}");
    server.shutdown().await;
}

/// Issue 33 item 13: a server listing one tool whose `inputSchema` nests
/// 200 levels deep starts at once; its other tools register and work, and
/// the refused tool is named with the reason and the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_too_deep_tool_schema_is_refused_and_the_rest_start_at_once() {
    let started = Instant::now();
    let (registry, server) = start(fixture("fx").env("DSH_FIXTURE_DEEP", "200")).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "start-up took {:?}",
        started.elapsed()
    );
    assert_eq!(server.state(), McpServerState::Running);
    // `nest` is listed on the same page as `deep` (two per page).
    let mut every_other = FIXTURE_TOOLS.to_vec();
    every_other.insert(FIXTURE_TOOLS.len() - 1, "mcp__fx__nest");
    assert_eq!(server.tools(), every_other, "every other tool registers");
    assert_eq!(
        exec(&registry, "mcp__fx__add", r#"{"a": 2, "b": 3}"#)
            .await
            .text(),
        "5"
    );
    let refused: Vec<_> = server
        .skipped()
        .into_iter()
        .filter(|s| s.tool == "deep")
        .collect();
    assert_eq!(refused.len(), 1, "{:?}", server.skipped());
    assert_eq!(refused[0].name, "mcp__fx__deep");
    let reason = &refused[0].reason;
    assert!(
        reason.contains("depth") && reason.contains("200") && reason.contains("limit"),
        "{reason}"
    );
    assert!(!registry.names().iter().any(|n| n == "mcp__fx__deep"));
    // A call whose result is too deep to parse fails at once, saying so,
    // and the server keeps serving.
    let started = Instant::now();
    let result = exec(&registry, "mcp__fx__nest", r#"{"depth": 300}"#).await;
    assert!(result.is_error, "{}", result.text());
    assert!(
        result.text().contains("nested 30") && result.text().contains("depth limit"),
        "{}",
        result.text()
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        exec(&registry, "mcp__fx__nest", r#"{"depth": 20}"#)
            .await
            .text(),
        "nested"
    );
    assert_eq!(server.state(), McpServerState::Running);
    server.shutdown().await;
}
