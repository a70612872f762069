//! `dsh acp` driven by the official Rust ACP client (the same crate's
//! client side) over in-process pipes, with the offline echo model: a
//! conversation with streamed updates, an edit's diff, a permission
//! request answered both ways, the todo list as a plan, a cancel during a
//! long command, `session/load` of a saved session (its history, its last
//! todo list, its mode), mode changes told once and before the answer,
//! MCP servers the client passes; and raw lines over the line limit.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapabilities,
    InitializeRequest, LoadSessionRequest, McpServer, McpServerHttp, McpServerStdio,
    NewSessionRequest, PromptRequest, ReadTextFileRequest, ReadTextFileResponse,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, SetSessionModeRequest,
    StopReason, TextContent, ToolCallContent, ToolCallStatus, WriteTextFileRequest,
    WriteTextFileResponse,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, ByteStreams, Client};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// What the client saw and how it answers permission requests.
#[derive(Default)]
struct Seen {
    updates: Mutex<Vec<SessionUpdate>>,
    asked: Mutex<Vec<RequestPermissionRequest>>,
    answers: Mutex<VecDeque<&'static str>>,
    /// The client's open buffers (only a client that advertises `fs` is
    /// asked for them).
    buffers: Mutex<HashMap<PathBuf, String>>,
    /// The fs requests it got: `read <path>` / `write <path>`.
    fs_log: Mutex<Vec<String>>,
}

impl Seen {
    fn updates(&self) -> Vec<SessionUpdate> {
        self.updates.lock().unwrap().clone()
    }
    fn clear(&self) {
        self.updates.lock().unwrap().clear();
    }
    /// The agent's streamed text since the last clear.
    fn text(&self) -> String {
        self.updates()
            .iter()
            .filter_map(|u| match u {
                SessionUpdate::AgentMessageChunk(c) => match &c.content {
                    ContentBlock::Text(t) => Some(t.text.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }
}

fn settings(home: &Path) -> dsh::Settings {
    std::fs::write(home.join("none.toml"), "").unwrap();
    dsh::Settings {
        model: Some("echo".into()),
        session_dir: Some(home.join("sessions")),
        config: Some(home.join("none.toml")),
        ..Default::default()
    }
}

/// Starts `dsh_acp::serve_streams` on pipes and runs `body` as a client of it;
/// returns once the client is done and the server has shut down.
async fn with_client<F>(home: &Path, seen: Arc<Seen>, body: F)
where
    F: AsyncFnOnce(ConnectionTo<Agent>) -> Result<(), agent_client_protocol::Error>,
{
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    // The server side as `dsh acp` runs it (lines bounded, one writer).
    let server = tokio::spawn(dsh_acp::serve_streams(
        settings(home),
        server_read,
        server_write,
        dsh_acp::DEFAULT_MAX_LINE_BYTES,
    ));
    let (s1, s2, s3, s4) = (seen.clone(), seen.clone(), seen.clone(), seen.clone());
    let client = Client
        .v1()
        .name("dsh-acp-test")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                s1.updates.lock().unwrap().push(n.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest, responder, _cx| {
                s2.asked.lock().unwrap().push(req);
                let answer = s2.answers.lock().unwrap().pop_front();
                let outcome = match answer {
                    Some(id) => {
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
                    }
                    None => RequestPermissionOutcome::Cancelled,
                };
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ReadTextFileRequest, responder, _cx| {
                s3.fs_log
                    .lock()
                    .unwrap()
                    .push(format!("read {}", req.path.display()));
                let text = s3.buffers.lock().unwrap().get(&req.path).cloned();
                match text.or_else(|| std::fs::read_to_string(&req.path).ok()) {
                    Some(t) => responder.respond(ReadTextFileResponse::new(t)),
                    None => responder.respond_with_error(
                        agent_client_protocol::Error::invalid_params()
                            .data(serde_json::json!({"message": "no such file"})),
                    ),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: WriteTextFileRequest, responder, _cx| {
                s4.fs_log
                    .lock()
                    .unwrap()
                    .push(format!("write {}", req.path.display()));
                s4.buffers.lock().unwrap().insert(req.path, req.content);
                responder.respond(WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(
            ByteStreams::new(client_write.compat_write(), client_read.compat()),
            body,
        );
    tokio::time::timeout(Duration::from_secs(60), client)
        .await
        .expect("the client finished in time")
        .expect("the client succeeded");
    let _ = tokio::time::timeout(Duration::from_secs(30), server).await;
}

async fn init_and_new(cx: &ConnectionTo<Agent>, cwd: &Path) -> String {
    let init = cx
        .send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
        .unwrap();
    assert!(init.agent_capabilities.load_session);
    let new = cx
        .send_request(NewSessionRequest::new(cwd.to_path_buf()))
        .block_task()
        .await
        .unwrap();
    let modes = new.modes.expect("modes");
    assert_eq!(modes.current_mode_id.to_string(), "workspace-write");
    let ids: Vec<String> = modes
        .available_modes
        .iter()
        .map(|m| m.id.to_string())
        .collect();
    assert_eq!(
        ids,
        ["read-only", "workspace-write", "danger-full-access", "plan"]
    );
    new.session_id.to_string()
}

async fn prompt(cx: &ConnectionTo<Agent>, session: &str, text: &str) -> StopReason {
    cx.send_request(PromptRequest::new(
        session.to_string(),
        vec![ContentBlock::Text(TextContent::new(text))],
    ))
    .block_task()
    .await
    .unwrap()
    .stop_reason
}

/// The statuses calls ended with (`completed`, `failed`), in order.
fn final_status(updates: &[SessionUpdate]) -> Vec<ToolCallStatus> {
    statuses(updates)
        .into_iter()
        .filter(|s| *s != ToolCallStatus::InProgress)
        .collect()
}

/// Every status a `tool_call_update` carried, in order.
fn statuses(updates: &[SessionUpdate]) -> Vec<ToolCallStatus> {
    updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::ToolCallUpdate(t) => t.fields.status,
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_streams_text_tool_calls_diffs_plans_and_permission_requests() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let (s, dir) = (seen.clone(), cwd.path().to_path_buf());
    with_client(home.path(), seen.clone(), move |cx: ConnectionTo<Agent>| async move {
        let id = init_and_new(&cx, &dir).await;
        // The commands arrive once the session exists.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(s.updates().iter().any(|u| matches!(
            u,
            SessionUpdate::AvailableCommandsUpdate(c)
                if c.available_commands.iter().any(|c| c.name == "compact")
        )));
        let seen_before = s.updates();
        s.clear();

        assert_eq!(prompt(&cx, &id, "echo hi there").await, StopReason::EndTurn);
        assert!(s.text().ends_with("The echo tool says: hi there"), "{}", s.text());
        let updates = s.updates();
        let call = updates
            .iter()
            .find_map(|u| match u {
                SessionUpdate::ToolCall(c) => Some(c.clone()),
                _ => None,
            })
            .expect("a tool_call");
        // Pending when logged, in progress when it runs, then done.
        assert_eq!(call.status, ToolCallStatus::Pending);
        assert_eq!(
            statuses(&updates),
            [ToolCallStatus::InProgress, ToolCallStatus::Completed]
        );

        // An edit carries the file's text before and after.
        std::fs::write(dir.join("notes.txt"), "hello world\n").unwrap();
        prompt(&cx, &id, r#"call read {"file_path":"notes.txt"}"#).await;
        s.clear();
        let edit = r#"call edit {"file_path":"notes.txt","old_string":"hello","new_string":"goodbye"}"#;
        assert_eq!(prompt(&cx, &id, edit).await, StopReason::EndTurn);
        let updates = s.updates();
        let call = updates
            .iter()
            .find_map(|u| match u {
                SessionUpdate::ToolCall(c) => Some(c.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(call.title, "Edit notes.txt");
        assert_eq!(call.locations[0].path, dir.join("notes.txt"));
        let diff = updates
            .iter()
            .find_map(|u| match u {
                SessionUpdate::ToolCallUpdate(t) => t.fields.content.as_ref().and_then(|c| {
                    c.iter().find_map(|c| match c {
                        ToolCallContent::Diff(d) => Some(d.clone()),
                        _ => None,
                    })
                }),
                _ => None,
            })
            .expect("a diff");
        assert_eq!(diff.old_text.as_deref(), Some("hello world\n"));
        assert_eq!(diff.new_text, "goodbye world\n");

        // `/undo`, advertised with `/redo` and `/rewind`, sets the file back
        // from the session's checkpoint.
        let advertised: Vec<String> = s
            .updates()
            .iter()
            .chain(seen_before.iter())
            .filter_map(|u| match u {
                SessionUpdate::AvailableCommandsUpdate(c) => {
                    Some(c.available_commands.iter().map(|c| c.name.clone()).collect::<Vec<_>>())
                }
                _ => None,
            })
            .flatten()
            .collect();
        for name in ["undo", "redo", "rewind"] {
            assert!(advertised.iter().any(|n| n == name), "{name}: {advertised:?}");
        }
        assert_eq!(
            std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
            "goodbye world\n"
        );
        s.clear();
        prompt(&cx, &id, "/undo").await;
        assert_eq!(
            std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
            "hello world\n",
            "{}",
            s.text()
        );

        // The todo list becomes a plan.
        s.clear();
        let todo = r#"call todo_write {"todos":[{"content":"look","status":"completed"},{"content":"fix","status":"in_progress"}]}"#;
        prompt(&cx, &id, todo).await;
        let plan = s
            .updates()
            .into_iter()
            .find_map(|u| match u {
                SessionUpdate::Plan(p) => Some(p),
                _ => None,
            })
            .expect("a plan");
        let entries: Vec<&str> = plan.entries.iter().map(|e| e.content.as_str()).collect();
        assert_eq!(entries, ["look", "fix"]);

        // In read-only mode an escalated write asks; a rejection denies it,
        // an approval lets it run.
        cx.send_request(SetSessionModeRequest::new(id.clone(), "read-only"))
            .block_task()
            .await
            .unwrap();
        let write = |name: &str| {
            format!(
                r#"call write {{"file_path":"{name}","content":"x","sandbox_permissions":"workspace-write","justification":"the test asks"}}"#
            )
        };
        s.answers.lock().unwrap().push_back("reject-once");
        s.clear();
        prompt(&cx, &id, &write("denied.txt")).await;
        assert!(!dir.join("denied.txt").exists());
        // A rejected call never ran: no in_progress, straight to failed.
        assert_eq!(statuses(&s.updates()), [ToolCallStatus::Failed]);
        s.answers.lock().unwrap().push_back("allow-once");
        s.clear();
        prompt(&cx, &id, &write("allowed.txt")).await;
        assert_eq!(
            statuses(&s.updates()),
            [ToolCallStatus::InProgress, ToolCallStatus::Completed]
        );
        assert_eq!(std::fs::read_to_string(dir.join("allowed.txt")).unwrap(), "x");
        let asked = s.asked.lock().unwrap();
        assert_eq!(asked.len(), 2);
        let options: Vec<String> = asked[0]
            .options
            .iter()
            .map(|o| o.option_id.to_string())
            .collect();
        assert_eq!(options, ["allow-once", "allow-always", "reject-once"]);
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_long_command_returns_cancelled_at_once_and_kills_it() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let dir = cwd.path().to_path_buf();
    let pid_file = dir.join("pid");
    let pf = pid_file.clone();
    let marker = sleep_marker();
    with_client(
        home.path(),
        seen,
        move |cx: ConnectionTo<Agent>| async move {
            let id = init_and_new(&cx, &dir).await;
            let sent = cx.send_request(PromptRequest::new(
                id.clone(),
                vec![ContentBlock::Text(TextContent::new(format!(
                    "run echo $$ > {}; exec sleep {marker}",
                    pf.display()
                )))],
            ));
            let reply = tokio::spawn(sent.block_task());
            let deadline = Instant::now() + Duration::from_secs(20);
            let pid = loop {
                // The command may run in its own PID namespace: the pid it
                // wrote is only the sign it started; the host's pid of the
                // marked sleep is what must go away.
                if std::fs::read_to_string(&pf).is_ok_and(|t| !t.trim().is_empty()) {
                    if let [pid] = marked_sleeps(&marker)[..] {
                        break pid;
                    }
                }
                assert!(Instant::now() < deadline, "the command never started");
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            let cancelled = Instant::now();
            cx.send_notification(CancelNotification::new(id.clone()))
                .unwrap();
            let response = tokio::time::timeout(Duration::from_secs(1), reply)
                .await
                .expect("the prompt returned within 1 s")
                .unwrap()
                .unwrap();
            assert_eq!(response.stop_reason, StopReason::Cancelled);
            assert!(cancelled.elapsed() < Duration::from_secs(1));
            // The shell (exec'd into sleep) is gone.
            let gone = Instant::now() + Duration::from_secs(1);
            while Path::new(&format!("/proc/{pid}")).exists() {
                assert!(Instant::now() < gone, "process {pid} still runs");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok(())
        },
    )
    .await;
    assert!(pid_file.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_session_loads_replays_and_continues() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let first = Arc::new(Mutex::new(String::new()));
    let (f, dir) = (first.clone(), cwd.path().to_path_buf());
    with_client(
        home.path(),
        Arc::new(Seen::default()),
        move |cx: ConnectionTo<Agent>| async move {
            let id = init_and_new(&cx, &dir).await;
            prompt(&cx, &id, "echo remember this").await;
            *f.lock().unwrap() = id;
            Ok(())
        },
    )
    .await;
    let id = first.lock().unwrap().clone();
    let log = home.path().join("sessions").join(format!("{id}.jsonl"));
    assert!(log.is_file());

    let seen = Arc::new(Seen::default());
    let (s, dir) = (seen.clone(), cwd.path().to_path_buf());
    let sid = id.clone();
    with_client(
        home.path(),
        seen.clone(),
        move |cx: ConnectionTo<Agent>| async move {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await
                .unwrap();
            cx.send_request(LoadSessionRequest::new(sid.clone(), dir.clone()))
                .block_task()
                .await
                .unwrap();
            // The replay came before the response.
            let replayed = s.updates();
            assert!(replayed.iter().any(|u| matches!(
                u,
                SessionUpdate::UserMessageChunk(c)
                    if matches!(&c.content, ContentBlock::Text(t) if t.text == "echo remember this")
            )));
            assert!(
                s.text().contains("The echo tool says: remember this"),
                "{}",
                s.text()
            );
            assert!(final_status(&replayed).contains(&ToolCallStatus::Completed));
            s.clear();
            assert_eq!(
                prompt(&cx, &sid, "echo and more").await,
                StopReason::EndTurn
            );
            assert!(s.text().ends_with("The echo tool says: and more"));
            Ok(())
        },
    )
    .await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("echo remember this") && text.contains("echo and more"));
}

/// The locations of the `tool_call`s in `updates`, in order.
fn call_locations(updates: &[SessionUpdate]) -> Vec<PathBuf> {
    updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::ToolCall(c) => Some(c.locations.iter().map(|l| l.path.clone())),
            _ => None,
        })
        .flatten()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_tool_call_has_the_location_it_had_live() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("a.txt"), "alpha\n").unwrap();
    let first = Arc::new(Mutex::new(String::new()));
    let seen = Arc::new(Seen::default());
    let (f, s, dir) = (first.clone(), seen.clone(), cwd.path().to_path_buf());
    with_client(
        home.path(),
        seen.clone(),
        move |cx: ConnectionTo<Agent>| async move {
            let id = init_and_new(&cx, &dir).await;
            s.clear();
            let read = r#"call read {"file_path":"a.txt"}"#;
            assert_eq!(prompt(&cx, &id, read).await, StopReason::EndTurn);
            assert_eq!(call_locations(&s.updates()), [dir.join("a.txt")]);
            *f.lock().unwrap() = id;
            Ok(())
        },
    )
    .await;
    let id = first.lock().unwrap().clone();
    let seen = Arc::new(Seen::default());
    let (s, dir) = (seen.clone(), cwd.path().to_path_buf());
    with_client(
        home.path(),
        seen.clone(),
        move |cx: ConnectionTo<Agent>| async move {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await
                .unwrap();
            cx.send_request(LoadSessionRequest::new(id.clone(), dir.clone()))
                .block_task()
                .await
                .unwrap();
            // The replay resolves against the session's cwd, as live.
            assert_eq!(call_locations(&s.updates()), [dir.join("a.txt")]);
            Ok(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cwd_that_is_missing_or_a_file_is_refused_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let file = cwd.path().join("f.txt");
    std::fs::write(&file, "").unwrap();
    let missing = cwd.path().join("gone");
    with_client(
        home.path(),
        Arc::new(Seen::default()),
        move |cx: ConnectionTo<Agent>| async move {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await
                .unwrap();
            for (path, why) in [(&missing, "does not exist"), (&file, "not a directory")] {
                let err = cx
                    .send_request(NewSessionRequest::new(path.clone()))
                    .block_task()
                    .await
                    .unwrap_err();
                assert_eq!(err.code, agent_client_protocol::ErrorCode::INVALID_PARAMS);
                assert!(err.message.contains(&path.display().to_string()), "{err:?}");
                assert!(err.message.contains(why), "{err:?}");
                let err = cx
                    .send_request(LoadSessionRequest::new("s-1", path.clone()))
                    .block_task()
                    .await
                    .unwrap_err();
                assert_eq!(err.code, agent_client_protocol::ErrorCode::INVALID_PARAMS);
                assert!(err.message.contains(why), "{err:?}");
            }
            Ok(())
        },
    )
    .await;
}

/// The MCP test fixture server, built into the same target directory by
/// the workspace's tests (`dsh-mcp`'s `fixture` feature).
fn mcp_fixture() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let p = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("dsh-mcp-fixture");
    assert!(
        p.is_file(),
        "{} is not built: run the workspace tests, or `cargo build -p dsh-mcp --features fixture`",
        p.display()
    );
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_mcp_servers_are_started_and_their_tools_called() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let (s, dir) = (seen.clone(), cwd.path().to_path_buf());
    let fixture = mcp_fixture();
    with_client(
        home.path(),
        seen,
        move |cx: ConnectionTo<Agent>| async move {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await
                .unwrap();
            let new = cx
                .send_request(
                    NewSessionRequest::new(dir.clone())
                        .mcp_servers(vec![McpServer::Stdio(McpServerStdio::new("fx", fixture))]),
                )
                .block_task()
                .await
                .unwrap();
            let id = new.session_id.to_string();
            let tool = mcp_name("fx", "add");
            prompt(&cx, &id, &format!(r#"call {tool} {{"a": 2, "b": 3}}"#)).await;
            let results: Vec<String> = s
                .updates()
                .iter()
                .filter_map(|u| match u {
                    SessionUpdate::ToolCallUpdate(t) => t.fields.content.as_ref().map(|c| {
                        c.iter()
                            .filter_map(|c| match c {
                                ToolCallContent::Content(c) => match &c.content {
                                    ContentBlock::Text(t) => Some(t.text.clone()),
                                    _ => None,
                                },
                                _ => None,
                            })
                            .collect::<String>()
                    }),
                    _ => None,
                })
                .collect();
            assert_eq!(
                final_status(&s.updates()),
                [ToolCallStatus::Completed],
                "{results:?}"
            );
            assert!(results[0].contains('5'), "{results:?}");
            Ok(())
        },
    )
    .await;
}

/// A `sleep` argument no other process has (`30.<pid><nanos>`, 30 s and a
/// bit), to find the command's sleep from the host whatever PID namespace
/// it runs in.
fn sleep_marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("30.{}{nanos:09}", std::process::id())
}

/// Host pids of the live `sleep <marker>` processes.
fn marked_sleeps(marker: &str) -> Vec<i32> {
    dsh_testkit::procs::live_with("sleep", &format!("sleep {marker}"))
}

/// The registry name of MCP tool `tool` of server `server`.
fn mcp_name(server: &str, tool: &str) -> String {
    dsh_mcp::tool_name(dsh_mcp::DEFAULT_TOOL_PREFIX, server, tool)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_turn_leaves_no_process() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let dir = cwd.path().to_path_buf();
    let pid_file = dir.join("pid");
    let pf = pid_file.clone();
    let marker = sleep_marker();
    let mark = marker.clone();
    with_client(
        home.path(),
        Arc::new(Seen::default()),
        move |cx: ConnectionTo<Agent>| async move {
            let id = init_and_new(&cx, &dir).await;
            let sent = cx.send_request(PromptRequest::new(
                id,
                vec![ContentBlock::Text(TextContent::new(format!(
                    "run echo $$ > {}; exec sleep {mark}",
                    pf.display()
                )))],
            ));
            drop(tokio::spawn(sent.block_task()));
            let deadline = Instant::now() + Duration::from_secs(20);
            while std::fs::read_to_string(&pf).map_or(true, |t| t.trim().is_empty())
                || marked_sleeps(&mark).len() != 1
            {
                assert!(Instant::now() < deadline, "the command never started");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            // Returning closes the connection with the turn still running.
            Ok(())
        },
    )
    .await;
    let gone = Instant::now() + Duration::from_secs(5);
    while let [pid, ..] = marked_sleeps(&marker)[..] {
        assert!(
            Instant::now() < gone,
            "process {pid} outlived the connection"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advertised_slash_commands_run_without_a_model_turn() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let (s, dir) = (seen.clone(), cwd.path().to_path_buf());
    with_client(
        home.path(),
        seen,
        move |cx: ConnectionTo<Agent>| async move {
            let id = init_and_new(&cx, &dir).await;
            s.clear();
            assert_eq!(
                prompt(&cx, &id, "/permission read-only").await,
                StopReason::EndTurn
            );
            assert_eq!(s.text(), "permission mode: read-only");
            s.clear();
            prompt(&cx, &id, "/plan").await;
            assert_eq!(s.text(), "plan mode: on");
            s.clear();
            prompt(&cx, &id, "/session").await;
            assert!(
                s.text().starts_with(&format!("session {id}\nlog ")),
                "{}",
                s.text()
            );
            s.clear();
            prompt(&cx, &id, "/todo").await;
            assert_eq!(s.text(), "no todo list");
            s.clear();
            prompt(&cx, &id, "/model").await;
            assert_eq!(s.text(), "model: echo (models: echo)");
            s.clear();
            prompt(&cx, &id, "/model nope").await;
            assert!(
                s.text().starts_with("unknown model \"nope\""),
                "{}",
                s.text()
            );
            // /clear: a new dsh session under the same ACP session, which goes on.
            s.clear();
            prompt(&cx, &id, "/clear").await;
            assert!(s.text().starts_with("new session: s-"), "{}", s.text());
            assert!(s.text().contains(&format!("{id} is saved")), "{}", s.text());
            s.clear();
            assert_eq!(
                prompt(&cx, &id, "echo after clear").await,
                StopReason::EndTurn
            );
            assert!(
                s.text().ends_with("The echo tool says: after clear"),
                "{}",
                s.text()
            );
            // /exit ends it: the next prompt is an error.
            prompt(&cx, &id, "/exit").await;
            let after = cx
                .send_request(PromptRequest::new(
                    id.clone(),
                    vec![ContentBlock::Text(TextContent::new("echo gone"))],
                ))
                .block_task()
                .await;
            assert!(after.is_err(), "{after:?}");
            Ok(())
        },
    )
    .await;
    // The first session's log: no turn ran in it.
    let sessions = home.path().join("sessions");
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    logs.sort();
    assert_eq!(logs.len(), 2, "{logs:?}");
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    // No turn ran: the log has no user message.
    assert!(!text.contains("\"type\":\"user/message\""), "{text}");
    assert!(text.contains("\"mode\":\"read-only\""), "{text}");
}

/// The agent's text of the last `tool_call_update` carrying text.
fn last_result(updates: &[SessionUpdate]) -> (Option<ToolCallStatus>, String) {
    updates
        .iter()
        .rev()
        .find_map(|u| match u {
            SessionUpdate::ToolCallUpdate(t) => t.fields.content.as_ref().map(|c| {
                let text = c
                    .iter()
                    .filter_map(|c| match c {
                        ToolCallContent::Content(c) => match &c.content {
                            ContentBlock::Text(t) => Some(t.text.clone()),
                            _ => None,
                        },
                        _ => None,
                    })
                    .collect::<String>();
                (t.fields.status, text)
            }),
            _ => None,
        })
        .expect("a tool_call_update")
}

fn last_diff(updates: &[SessionUpdate]) -> Option<agent_client_protocol::v1::schema::Diff> {
    updates.iter().rev().find_map(|u| match u {
        SessionUpdate::ToolCallUpdate(t) => t.fields.content.as_ref().and_then(|c| {
            c.iter().find_map(|c| match c {
                ToolCallContent::Diff(d) => Some(d.clone()),
                _ => None,
            })
        }),
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_serves_files_gets_the_file_tools_reads_and_writes() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let (s, dir) = (seen.clone(), cwd.path().to_path_buf());
    with_client(
        home.path(),
        seen.clone(),
        move |cx: ConnectionTo<Agent>| async move {
            let fs = FileSystemCapabilities::new()
                .read_text_file(true)
                .write_text_file(true);
            cx.send_request(
                InitializeRequest::new(ProtocolVersion::V1)
                    .client_capabilities(ClientCapabilities::new().fs(fs)),
            )
            .block_task()
            .await
            .unwrap();
            let id = cx
                .send_request(NewSessionRequest::new(dir.clone()))
                .block_task()
                .await
                .unwrap()
                .session_id
                .to_string();
            let file = dir.join("a.txt");
            std::fs::write(&file, "on disk\n").unwrap();
            // The user has unsaved changes in the editor.
            s.buffers
                .lock()
                .unwrap()
                .insert(file.clone(), "in the buffer, one\n".into());

            s.clear();
            prompt(&cx, &id, r#"call read {"file_path":"a.txt"}"#).await;
            let (status, text) = last_result(&s.updates());
            assert_eq!(status, Some(ToolCallStatus::Completed));
            assert!(text.contains("in the buffer, one"), "{text}");
            assert_eq!(
                *s.fs_log.lock().unwrap(),
                [format!("read {}", file.display())]
            );

            // The edit lands in the editor (with the diff it took); the disk
            // is the editor's to save.
            s.clear();
            let edit = r#"call edit {"file_path":"a.txt","old_string":"one","new_string":"two"}"#;
            assert_eq!(prompt(&cx, &id, edit).await, StopReason::EndTurn);
            assert_eq!(s.buffers.lock().unwrap()[&file], "in the buffer, two\n");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "on disk\n");
            let diff = last_diff(&s.updates()).expect("a diff");
            assert_eq!(diff.path, file);
            assert_eq!(diff.old_text.as_deref(), Some("in the buffer, one\n"));
            assert_eq!(diff.new_text, "in the buffer, two\n");

            // The user types again: the buffer is newer than what the model
            // read, and the guard says so.
            s.buffers
                .lock()
                .unwrap()
                .insert(file.clone(), "in the buffer, three\n".into());
            s.clear();
            let edit = r#"call edit {"file_path":"a.txt","old_string":"two","new_string":"four"}"#;
            prompt(&cx, &id, edit).await;
            let (status, text) = last_result(&s.updates());
            assert_eq!(status, Some(ToolCallStatus::Failed));
            assert!(text.contains("changed since you read it"), "{text}");
            assert_eq!(s.buffers.lock().unwrap()[&file], "in the buffer, three\n");

            // A new file is the client's to create: its diff has no old text.
            s.clear();
            prompt(
                &cx,
                &id,
                r#"call write {"file_path":"new.txt","content":"fresh\n"}"#,
            )
            .await;
            assert_eq!(s.buffers.lock().unwrap()[&dir.join("new.txt")], "fresh\n");
            assert!(!dir.join("new.txt").exists());
            let diff = last_diff(&s.updates()).expect("a diff");
            assert_eq!((diff.old_text, diff.new_text.as_str()), (None, "fresh\n"));
            Ok(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_fs_is_never_asked_for_files() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let (s, dir) = (seen.clone(), cwd.path().to_path_buf());
    with_client(
        home.path(),
        seen.clone(),
        move |cx: ConnectionTo<Agent>| async move {
            let id = init_and_new(&cx, &dir).await;
            std::fs::write(dir.join("b.txt"), "disk\n").unwrap();
            prompt(&cx, &id, r#"call read {"file_path":"b.txt"}"#).await;
            let edit =
                r#"call edit {"file_path":"b.txt","old_string":"disk","new_string":"edited"}"#;
            prompt(&cx, &id, edit).await;
            assert_eq!(
                std::fs::read_to_string(dir.join("b.txt")).unwrap(),
                "edited\n"
            );
            assert!(s.fs_log.lock().unwrap().is_empty());
            Ok(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_sent_right_after_the_prompt_still_cancels_it() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let dir = cwd.path().to_path_buf();
    let marker = dir.join("ran");
    let m = marker.clone();
    with_client(
        home.path(),
        seen,
        move |cx: ConnectionTo<Agent>| async move {
            let id = init_and_new(&cx, &dir).await;
            for _ in 0..5 {
                // No wait between the two: the cancel is handled before the
                // turn has started.
                let sent = cx.send_request(PromptRequest::new(
                    id.clone(),
                    vec![ContentBlock::Text(TextContent::new(format!(
                        "run sleep 30; touch {}",
                        m.display()
                    )))],
                ));
                let reply = tokio::spawn(sent.block_task());
                cx.send_notification(CancelNotification::new(id.clone()))
                    .unwrap();
                let response = tokio::time::timeout(Duration::from_secs(2), reply)
                    .await
                    .expect("the prompt returned within 2 s")
                    .unwrap()
                    .unwrap();
                assert_eq!(response.stop_reason, StopReason::Cancelled);
            }
            // The session still works after the cancels.
            assert_eq!(prompt(&cx, &id, "echo after").await, StopReason::EndTurn);
            Ok(())
        },
    )
    .await;
    assert!(!marker.exists(), "a cancelled command ran to its end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_http_mcp_servers_are_reached_over_http() {
    use std::io::BufRead;
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let (s, dir) = (seen.clone(), cwd.path().to_path_buf());
    // The fixture serves MCP over streamable HTTP on a loopback port and
    // prints its address.
    let mut server = std::process::Command::new(mcp_fixture())
        .args(["--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut addr = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut addr)
        .unwrap();
    let url = format!("http://{}/mcp", addr.trim());
    with_client(
        home.path(),
        seen,
        move |cx: ConnectionTo<Agent>| async move {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await
                .unwrap();
            assert!(init.agent_capabilities.mcp_capabilities.http);
            let new = cx
                .send_request(
                    NewSessionRequest::new(dir.clone())
                        .mcp_servers(vec![McpServer::Http(McpServerHttp::new("web", url))]),
                )
                .block_task()
                .await
                .unwrap();
            let id = new.session_id.to_string();
            let tool = mcp_name("web", "add");
            prompt(&cx, &id, &format!(r#"call {tool} {{"a": 20, "b": 22}}"#)).await;
            let (status, text) = last_result(&s.updates());
            assert_eq!(status, Some(ToolCallStatus::Completed), "{text}");
            assert!(text.contains("42"), "{text}");
            Ok(())
        },
    )
    .await;
    let _ = server.kill();
    let _ = server.wait();
}

/// Sends each line to a server limited to `max` bytes a line, closes its
/// input and returns every line it answered, once it has shut down.
async fn raw_answers(max: usize, lines: &[Vec<u8>]) -> Vec<serde_json::Value> {
    let home = tempfile::tempdir().unwrap();
    let settings = settings(home.path());
    let (client, server) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server);
    let (client_read, mut client_write) = tokio::io::split(client);
    let served = tokio::spawn(dsh_acp::serve_streams(
        settings,
        server_read,
        server_write,
        max,
    ));
    // Read while writing: the answers must not fill the pipe.
    let reader = tokio::spawn(async move {
        let mut out = Vec::new();
        let mut lines = BufReader::new(client_read).lines();
        while let Some(line) = lines.next_line().await.unwrap() {
            out.push(serde_json::from_str::<serde_json::Value>(&line).unwrap());
        }
        out
    });
    for line in lines {
        client_write.write_all(line).await.unwrap();
        client_write.write_all(b"\n").await.unwrap();
    }
    client_write.shutdown().await.unwrap();
    drop(client_write);
    tokio::time::timeout(Duration::from_secs(60), served)
        .await
        .expect("the server ended with its input")
        .unwrap()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(60), reader)
        .await
        .expect("the output ended")
        .unwrap()
}

fn json_line(value: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&value).unwrap()
}

/// `dsh_acp::serve_streams` fed raw lines, as `dsh acp` reads stdin: a
/// request on a line over the limit is answered for its own id (so the
/// editor's request fails at once instead of waiting for ever), a line
/// that is no request is answered for `null`, and serving goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_long_request_is_answered_for_its_id_and_serving_goes_on() {
    let big = "x".repeat(1 << 20);
    let prompt = |id: serde_json::Value| {
        json_line(serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": big}]},
        }))
    };
    let got = raw_answers(
        1024,
        &[
            prompt(serde_json::json!(7)),
            prompt(serde_json::json!("req-8")),
            // A response (no method) over the limit: not answered for its id.
            json_line(serde_json::json!({"jsonrpc": "2.0", "id": 9, "result": {"text": big}})),
            // Under the limit: the protocol crate answers it (an
            // `initialize`, so it succeeds).
            json_line(serde_json::json!({
                "jsonrpc": "2.0",
                "id": 10,
                "method": "initialize",
                "params": {"protocolVersion": 1},
            })),
        ],
    )
    .await;
    assert_eq!(got.len(), 4, "{got:?}");
    for (answer, id) in got.iter().zip([
        serde_json::json!(7),
        serde_json::json!("req-8"),
        serde_json::Value::Null,
    ]) {
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert_eq!(answer["error"]["message"], "Line too long", "{answer}");
        assert_eq!(answer["error"]["data"]["maxLineBytes"], 1024, "{answer}");
    }
    assert_eq!(got[3]["id"], 10, "{}", got[3]);
    assert!(
        got[3]["result"]["protocolVersion"].is_number(),
        "{}",
        got[3]
    );
}

/// The mode ids of the `current_mode_update`s in `updates`, in order.
fn mode_updates(updates: &[SessionUpdate]) -> Vec<String> {
    updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::CurrentModeUpdate(m) => Some(m.current_mode_id.to_string()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mode_changes_reach_the_client_once_and_before_the_answer() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let (s, dir) = (seen.clone(), cwd.path().to_path_buf());
    with_client(
        home.path(),
        seen,
        move |cx: ConnectionTo<Agent>| async move {
            let id = init_and_new(&cx, &dir).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            // Opening the session told nothing beyond its response.
            assert_eq!(mode_updates(&s.updates()), Vec::<String>::new());
            s.clear();
            cx.send_request(SetSessionModeRequest::new(id.clone(), "read-only"))
                .block_task()
                .await
                .unwrap();
            // The client's own change is confirmed once (a command waits
            // for every update before its answer).
            prompt(&cx, &id, "/todo").await;
            assert_eq!(mode_updates(&s.updates()), ["read-only"]);

            // A change the client did not make is told before the answer.
            s.clear();
            prompt(&cx, &id, "/plan").await;
            let updates = s.updates();
            assert_eq!(mode_updates(&updates), ["plan"]);
            let told = updates
                .iter()
                .position(|u| matches!(u, SessionUpdate::CurrentModeUpdate(_)))
                .unwrap();
            let answered = updates
                .iter()
                .position(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)))
                .unwrap();
            assert!(told < answered, "{updates:?}");
            s.clear();
            prompt(&cx, &id, "/plan off").await;
            assert_eq!(mode_updates(&s.updates()), ["read-only"]);
            assert_eq!(s.text(), "plan mode: off");

            // The permission request carries the call's arguments.
            s.answers.lock().unwrap().push_back("allow-once");
            s.clear();
            let write = r#"call write {"file_path":"w.txt","content":"x","sandbox_permissions":"workspace-write","justification":"the test asks"}"#;
            assert_eq!(prompt(&cx, &id, write).await, StopReason::EndTurn);
            let asked = s.asked.lock().unwrap().clone();
            assert_eq!(asked.len(), 1);
            let input = asked[0].tool_call.fields.raw_input.clone().unwrap();
            assert_eq!(input["file_path"], "w.txt", "{input}");
            // Everything the turn sent came before its response.
            assert_eq!(
                statuses(&s.updates()),
                [ToolCallStatus::InProgress, ToolCallStatus::Completed]
            );
            Ok(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_session_shows_its_last_todo_list_once_after_its_history() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let first = Arc::new(Mutex::new(String::new()));
    let (f, dir) = (first.clone(), cwd.path().to_path_buf());
    let todo = |items: &str| format!(r#"call todo_write {{"todos":[{items}]}}"#);
    let (one, two) = (
        todo(r#"{"content":"look","status":"in_progress"}"#),
        todo(r#"{"content":"look","status":"completed"},{"content":"fix","status":"pending"}"#),
    );
    let prompts = [one.clone(), two.clone()];
    with_client(
        home.path(),
        Arc::new(Seen::default()),
        move |cx: ConnectionTo<Agent>| async move {
            let id = init_and_new(&cx, &dir).await;
            prompt(&cx, &id, &one).await;
            prompt(&cx, &id, &two).await;
            prompt(&cx, &id, "/plan").await;
            *f.lock().unwrap() = id;
            Ok(())
        },
    )
    .await;
    let id = first.lock().unwrap().clone();
    let seen = Arc::new(Seen::default());
    let (s, dir) = (seen.clone(), cwd.path().to_path_buf());
    with_client(
        home.path(),
        seen,
        move |cx: ConnectionTo<Agent>| async move {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await
                .unwrap();
            let loaded = cx
                .send_request(LoadSessionRequest::new(id.clone(), dir.clone()))
                .block_task()
                .await
                .unwrap();
            // The resumed session keeps its mode; the replay tells none.
            assert_eq!(loaded.modes.unwrap().current_mode_id.to_string(), "plan");
            let updates = s.updates();
            assert_eq!(mode_updates(&updates), Vec::<String>::new());
            let users: Vec<String> = updates
                .iter()
                .filter_map(|u| match u {
                    SessionUpdate::UserMessageChunk(c) => match &c.content {
                        ContentBlock::Text(t) => Some(t.text.clone()),
                        _ => None,
                    },
                    _ => None,
                })
                .collect();
            assert_eq!(users, prompts);
            let plans: Vec<Vec<String>> = updates
                .iter()
                .filter_map(|u| match u {
                    SessionUpdate::Plan(p) => {
                        Some(p.entries.iter().map(|e| e.content.clone()).collect())
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(plans, [["look", "fix"]]);
            // After the history (the commands are announced after the
            // response, and may have arrived already).
            let history: Vec<&SessionUpdate> = updates
                .iter()
                .filter(|u| !matches!(u, SessionUpdate::AvailableCommandsUpdate(_)))
                .collect();
            assert!(
                matches!(history.last(), Some(SessionUpdate::Plan(_))),
                "{updates:?}"
            );
            assert_eq!(final_status(&updates), [ToolCallStatus::Completed; 2]);
            // No diff in a replay, and no in_progress: those were live.
            assert!(last_diff(&updates).is_none());
            assert_eq!(statuses(&updates), [ToolCallStatus::Completed; 2]);
            Ok(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_questions_become_permission_requests_one_per_question() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("w");
    std::fs::create_dir(&dir).unwrap();
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    with_client(home.path(), seen, async move |cx| {
        let id = init_and_new(&cx, &dir).await;
        let ask = r#"call ask_user {"questions":[{"question":"Which database?","header":"DB","options":[{"label":"SQLite","description":"one file"},{"label":"Postgres"}]},{"question":"Anything else?"}]}"#;
        // The second option, then skip the open question.
        s.answers.lock().unwrap().extend(["1", "skip"]);
        prompt(&cx, &id, ask).await;
        let (status, text) = last_result(&s.updates());
        assert_eq!(status, Some(ToolCallStatus::Completed));
        assert_eq!(
            text,
            "Q: Which database?\nA: Postgres\nQ: Anything else?\nA: (no answer)"
        );
        {
            let asked = s.asked.lock().unwrap();
            assert_eq!(asked.len(), 2, "one request per question");
            let options: Vec<(String, String)> = asked[0]
                .options
                .iter()
                .map(|o| (o.option_id.to_string(), o.name.clone()))
                .collect();
            assert_eq!(
                options,
                [
                    ("0".to_string(), "SQLite — one file".to_string()),
                    ("1".to_string(), "Postgres".to_string()),
                    ("decline".to_string(), "Decline to answer".to_string()),
                ]
            );
            assert_eq!(
                asked[0].tool_call.fields.title.as_deref(),
                Some("DB: Which database?")
            );
            let open: Vec<String> = asked[1]
                .options
                .iter()
                .map(|o| o.option_id.to_string())
                .collect();
            assert_eq!(open, ["skip", "decline"]);
        }

        // Declining the first question declines the call; the second is
        // never asked.
        s.asked.lock().unwrap().clear();
        s.answers.lock().unwrap().push_back("decline");
        s.clear();
        prompt(&cx, &id, ask).await;
        let (status, text) = last_result(&s.updates());
        assert_eq!(status, Some(ToolCallStatus::Failed));
        assert!(text.contains("the user declined to answer"), "{text}");
        assert_eq!(s.asked.lock().unwrap().len(), 1);
        Ok(())
    })
    .await;
}
