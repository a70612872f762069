//! `dsh acp`: the time from `session/prompt` to the first
//! `agent_message_chunk` with the offline echo model, measured with the
//! official Rust ACP client over in-process pipes (the server is the same
//! `dsh_acp::serve` the `dsh acp` command runs on stdio), in sessions of
//! at most 50 turns (a new one is opened, untimed, every 50 prompts).
//!
//! The idle memory of a `dsh acp` process is printed once when a release
//! `dsh` binary is found next to this bench (`cargo build --release -p
//! dsh-cli`): its RSS after `initialize` and `session/new`.
//!
//! `cargo bench -p dsh-benches --bench acp`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionNotification,
    SessionUpdate, TextContent,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, ByteStreams, Client};
use criterion::{criterion_group, criterion_main, Criterion};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

fn first_chunk(c: &mut Criterion) {
    idle_process_memory();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("none.toml"), "").unwrap();
    let settings = dsh::Settings {
        model: Some("echo".into()),
        session_dir: Some(home.path().join("sessions")),
        config: Some(home.path().join("none.toml")),
        ..Default::default()
    };
    let cwd = home.path().to_path_buf();
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    let _server = rt.spawn(dsh_acp::serve(
        settings,
        ByteStreams::new(server_write.compat_write(), server_read.compat()),
    ));
    // Notifications reach the measuring loop through a channel.
    let (tx, rx) = std::sync::mpsc::channel::<Instant>();
    let (ready_tx, ready_rx) =
        std::sync::mpsc::channel::<(ConnectionTo<Agent>, String, std::path::PathBuf)>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    rt.spawn(async move {
        Client
            .v1()
            .on_receive_notification(
                async move |n: SessionNotification, _cx| {
                    if matches!(n.update, SessionUpdate::AgentMessageChunk(_)) {
                        let _ = tx.send(Instant::now());
                    }
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .connect_with(
                ByteStreams::new(client_write.compat_write(), client_read.compat()),
                async move |cx: ConnectionTo<Agent>| {
                    cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                        .block_task()
                        .await?;
                    let cwd_again = cwd.clone();
                    let new = cx
                        .send_request(NewSessionRequest::new(cwd))
                        .block_task()
                        .await?;
                    ready_tx
                        .send((cx.clone(), new.session_id.to_string(), cwd_again))
                        .unwrap();
                    let _ = stop_rx.await;
                    Ok(())
                },
            )
            .await
            .unwrap();
    });
    let (cx, mut session, cwd) = ready_rx.recv().unwrap();
    // A new session every `TURNS_PER_SESSION` prompts (not timed): the
    // figure is for a session of ordinary length, not one that criterion
    // grew to thousands of turns (each turn's request carries the whole
    // history, so the time grows with it).
    const TURNS_PER_SESSION: u64 = 50;
    let mut turns = 0u64;
    let mut g = c.benchmark_group("acp");
    g.bench_function("prompt_to_first_agent_message_chunk", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if turns == TURNS_PER_SESSION {
                    let new = rt
                        .block_on(
                            cx.send_request(NewSessionRequest::new(cwd.clone()))
                                .block_task(),
                        )
                        .unwrap();
                    session = new.session_id.to_string();
                    turns = 0;
                    // The new session's command list.
                    while rx.try_recv().is_ok() {}
                }
                turns += 1;
                let start = Instant::now();
                let reply = cx.send_request(PromptRequest::new(
                    session.clone(),
                    vec![ContentBlock::Text(TextContent::new("echo x"))],
                ));
                let first = rx.recv().unwrap();
                total += first.duration_since(start);
                rt.block_on(reply.block_task()).unwrap();
                // The turn's other chunks.
                while rx.try_recv().is_ok() {}
            }
            total
        })
    });
    g.finish();
    let _ = stop_tx.send(());
}

/// RSS of an idle `dsh acp` process (after `initialize` and `session/new`).
fn idle_process_memory() {
    let exe = std::env::current_exe().unwrap();
    let dsh = exe.parent().and_then(|d| d.parent()).unwrap().join("dsh");
    if !dsh.is_file() {
        println!(
            "idle dsh acp memory: not measured ({} is missing: cargo build --release -p dsh-cli)",
            dsh.display()
        );
        return;
    }
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("none.toml"), "").unwrap();
    let mut child = std::process::Command::new(&dsh)
        .args(["acp", "--model", "echo", "--config"])
        .arg(home.path().join("none.toml"))
        .current_dir(home.path())
        .env_remove("DEEPSEEK_API_KEY")
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answer = |id: u64| loop {
        let line = lines.next().unwrap().unwrap();
        if line.contains(&format!(r#""id":{id},"#)) {
            assert!(line.contains(r#""result""#), "{line}");
            return;
        }
    };
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":1,"clientCapabilities":{{}}}}}}"#).unwrap();
    answer(1);
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":2,"method":"session/new","params":{{"cwd":{:?},"mcpServers":[]}}}}"#,
        home.path()
    )
    .unwrap();
    answer(2);
    std::thread::sleep(Duration::from_millis(200));
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .unwrap_or("VmRSS: ?")
        .to_string();
    println!("idle dsh acp (one session): {rss}");
    drop(stdin);
    let _ = child.wait();
}

criterion_group!(benches, first_chunk);
criterion_main!(benches);
