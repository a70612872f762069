//! The whole stack with the offline echo model, for the tests that drive
//! an agent through it: a [`World`] (stack, main agent, its directory),
//! turns that wait for their own end, calls that return their result.
#![allow(dead_code)] // each test binary uses a part of this module
#![allow(unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dsh::{SandboxMode, Settings, Stack};
use dsh_agent::Agent;
use dsh_agent_loop::AgentHandle;
use dsh_llm::{ContentBlock, MessageSource};
use dsh_session::{EventPayload, TurnEndReason, TurnTrigger};
use dsh_tools::ToolResult;
use serde_json::Value;

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
    let stack = stack_in(dir, config, permission);
    let handle = stack.create_agent(None).unwrap();
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

    /// Disposes the agent and shuts the stack down.
    pub async fn close(self) {
        self.handle.dispose().await;
        self.stack.shutdown().await;
    }
}
