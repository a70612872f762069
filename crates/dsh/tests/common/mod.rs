//! The whole stack with the offline echo model, for the tests that drive
//! an agent through it: a [`World`] (stack, main agent, its directory),
//! turns that wait for their own end, calls that return their result.
//! Also the stack against a loopback DeepSeek server ([`deepseek_world`])
//! with the SSE replies it is scripted with, the wire checks on what it
//! was sent, and readers of a session's events.
#![allow(dead_code)] // each test binary uses a part of this module
#![allow(unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::borrow::Borrow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dsh::{SandboxMode, Settings, Stack};
use dsh_agent::Agent;
use dsh_agent_loop::AgentHandle;
use dsh_llm::{ContentBlock, MessageSource};
use dsh_session::{EventPayload, SessionEvent, TurnEndReason, TurnTrigger};
use dsh_testkit::{LoopbackServer, RecordedRequest, ScriptedResponse};
use dsh_tools::ToolResult;
use serde_json::{json, Value};

/// A stack in `dir` (its working directory, sessions under `sessions/`)
/// and its main agent.
pub struct World {
    pub stack: Stack,
    pub handle: AgentHandle,
    pub agent: Arc<dyn Agent>,
    pub dir: PathBuf,
}

/// The echo model's stack in `dir`, configured by `config` (a dsh.toml
/// text), under `permission` when given.
pub fn stack_in(dir: &Path, config: &str, permission: Option<SandboxMode>) -> Stack {
    std::fs::write(dir.join("test.toml"), config).unwrap();
    let resolved = dsh::resolve(&Settings {
        model: Some("echo".into()),
        cwd: Some(dir.to_path_buf()),
        session_dir: Some(dir.join("sessions")),
        config: Some(dir.join("test.toml")),
        permission,
        ..Default::default()
    })
    .unwrap();
    Stack::build(resolved).unwrap()
}

/// [`stack_in`] and its main agent (a new session).
pub fn world(dir: &Path, config: &str, permission: Option<SandboxMode>) -> World {
    world_resuming(dir, config, permission, None)
}

/// [`stack_in`] and its main agent: the session `resume` names, or a new
/// one.
pub fn world_resuming(
    dir: &Path,
    config: &str,
    permission: Option<SandboxMode>,
    resume: Option<&str>,
) -> World {
    let stack = stack_in(dir, config, permission);
    let handle = stack.create_agent(resume).unwrap();
    let agent = handle.agent();
    World {
        stack,
        handle,
        agent,
        dir: dir.to_path_buf(),
    }
}

impl World {
    /// Sends `prompt` and waits for the end of the turn it started (turns
    /// that background notices start may run before or after it).
    pub async fn turn(&self, prompt: &str) -> TurnEndReason {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mine = std::sync::Mutex::new(None);
        let id = self.agent.id().clone();
        let reg = self.stack.agents.hooks().event.on(move |e| {
            if *e.agent.id() != id {
                return;
            }
            match &e.event.data {
                EventPayload::TurnStart(t)
                    if t.trigger
                        == (TurnTrigger::Message {
                            source: MessageSource::User,
                        }) =>
                {
                    *mine.lock().unwrap() = Some(t.turn);
                }
                EventPayload::TurnEnd(end) if *mine.lock().unwrap() == Some(end.turn) => {
                    let _ = tx.send(end.reason.clone());
                }
                _ => {}
            }
        });
        self.agent
            .send(vec![ContentBlock::text(prompt)], MessageSource::User)
            .unwrap();
        let reason = tokio::time::timeout(Duration::from_secs(60), rx.recv())
            .await
            .expect("the turn ended in time")
            .unwrap();
        reg.undo();
        reason
    }

    /// Calls `tool` with `args` through the echo model and returns the
    /// call's result.
    pub async fn call(&self, tool: &str, args: Value) -> ToolResult {
        let before = self.agent.session().len();
        assert_eq!(
            self.turn(&format!("call {tool} {args}")).await,
            TurnEndReason::Completed
        );
        self.agent
            .session()
            .events_since(before)
            .iter()
            .find_map(|e| match &e.data {
                EventPayload::ToolResult(r) => Some(r.result.clone()),
                _ => None,
            })
            .expect("the call has a result")
    }

    /// The data of the main session's `Other` events of `kind`.
    pub fn others(&self, kind: &str) -> Vec<Value> {
        others(&self.agent.session().events(), kind)
    }

    /// Disposes the agent and shuts the stack down.
    pub async fn close(self) {
        self.handle.dispose().await;
        self.stack.shutdown().await;
    }
}

/// Sends `prompt` to `agent` and waits (at most `limit`) for the end of the
/// next turn any agent of `stack` ends; its reason.
pub async fn turn_within(
    stack: &Stack,
    agent: &Arc<dyn Agent>,
    prompt: &str,
    limit: Duration,
) -> TurnEndReason {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let reg = stack.agents.hooks().event.on(move |e| {
        if let EventPayload::TurnEnd(end) = &e.event.data {
            let _ = tx.send(end.reason.clone());
        }
    });
    agent
        .send(vec![ContentBlock::text(prompt)], MessageSource::User)
        .unwrap();
    let reason = tokio::time::timeout(limit, rx.recv())
        .await
        .expect("the turn ended in time")
        .unwrap();
    reg.undo();
    reason
}

/// The data of every `Other` event of `kind` in `events`.
pub fn others<E: Borrow<SessionEvent>>(events: &[E], kind: &str) -> Vec<Value> {
    events
        .iter()
        .filter_map(|e| match &e.borrow().data {
            EventPayload::Other { kind: k, data } if k == kind => Some(data.clone()),
            _ => None,
        })
        .collect()
}

/// The result of every tool call in `events`, in order.
pub fn tool_results<E: Borrow<SessionEvent>>(events: &[E]) -> Vec<ToolResult> {
    events
        .iter()
        .filter_map(|e| match &e.borrow().data {
            EventPayload::ToolResult(r) => Some(r.result.clone()),
            _ => None,
        })
        .collect()
}

/// A stack against the DeepSeek server `server` (model
/// `deepseek-v4-flash`, no retries) in a fresh directory (its working
/// directory, sessions under `sessions/`); `extra` is appended to its
/// dsh.toml.
pub struct DeepSeekWorld {
    pub stack: Stack,
    pub dir: tempfile::TempDir,
}

/// See [`DeepSeekWorld`].
pub fn deepseek_world(server: &LoopbackServer, extra: &str) -> DeepSeekWorld {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("dsh.toml");
    std::fs::write(
        &config,
        format!(
            "model = \"deepseek-v4-flash\"\n[deepseek]\napi_key = \"sk-test\"\nbase_url = \"{}\"\nmax_retries = 0\n{extra}",
            server.base_url()
        ),
    )
    .unwrap();
    let resolved = dsh::resolve(&Settings {
        config: Some(config),
        cwd: Some(dir.path().to_path_buf()),
        session_dir: Some(dir.path().join("sessions")),
        ..Default::default()
    })
    .unwrap();
    DeepSeekWorld {
        stack: Stack::build(resolved).unwrap(),
        dir,
    }
}

/// The `[models]` entry giving `deepseek-v4-flash` an 8000-token window,
/// for [`deepseek_world`]'s `extra`.
pub const SMALL_WINDOW: &str = "[models.\"deepseek-v4-flash\"]\ncontext_window = 8000\n";

/// An SSE reply: the `payloads` (chunks), then a `stop` chunk whose usage
/// says `prompt_tokens` (20 completion tokens), then `[DONE]`.
pub fn sse(payloads: Vec<Value>, prompt_tokens: usize) -> ScriptedResponse {
    let mut all: Vec<String> = payloads.into_iter().map(|p| p.to_string()).collect();
    all.push(
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":prompt_tokens,"completion_tokens":20}})
            .to_string(),
    );
    all.push("[DONE]".into());
    ScriptedResponse::sse(&all)
}

/// An SSE reply saying `t`.
pub fn text_reply(t: &str, prompt_tokens: usize) -> ScriptedResponse {
    sse(
        vec![
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":t},"finish_reason":null}]}),
        ],
        prompt_tokens,
    )
}

/// An SSE reply calling `bash` with `command` under the call id `id`.
pub fn bash_reply(id: &str, command: &str, prompt_tokens: usize) -> ScriptedResponse {
    let args = json!({"command": command, "description": "make output"}).to_string();
    sse(
        vec![
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":"bash","arguments":args}}]},"finish_reason":null}]}),
        ],
        prompt_tokens,
    )
}

/// A loopback DeepSeek server for compaction tests: a summary request is
/// answered with the text `summary`, any other with `step(request, body,
/// prompt_tokens)`; a request counts as its bytes / 4 prompt tokens.
pub async fn compacting_server(
    summary: &'static str,
    step: impl Fn(&RecordedRequest, &Value, usize) -> ScriptedResponse + Send + Sync + 'static,
) -> LoopbackServer {
    LoopbackServer::start_with(move |req| {
        let body = req.json();
        let prompt_tokens = req.body.len() / 4;
        if is_summary_request(&body) {
            return text_reply(summary, prompt_tokens);
        }
        step(req, &body, prompt_tokens)
    })
    .await
    .unwrap()
}

/// Whether `body` (a chat request) is the request for a summary.
pub fn is_summary_request(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .is_some_and(|c| c.starts_with("Your context window is nearly full"))
}

/// The wire rules: every tool call answered by a tool message after it,
/// no tool message without its call. Returns how many messages carry a
/// `<compacted-summary>`.
pub fn assert_wire_valid(body: &Value) -> usize {
    let mut open: Vec<String> = Vec::new();
    let mut summaries = 0;
    for m in body["messages"].as_array().unwrap() {
        if let Some(calls) = m["tool_calls"].as_array() {
            for c in calls {
                open.push(c["id"].as_str().unwrap().to_string());
            }
        }
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap();
            let at = open.iter().position(|o| o == id);
            assert!(at.is_some(), "orphan tool message {id}");
            open.remove(at.unwrap());
        }
        if m.to_string().contains("<compacted-summary>") {
            summaries += 1;
        }
    }
    assert!(open.is_empty(), "unanswered calls {open:?}");
    summaries
}

/// The JSON body of every request `server` received.
pub fn bodies(server: &LoopbackServer) -> Vec<Value> {
    server
        .requests()
        .iter()
        .map(RecordedRequest::json)
        .collect()
}
