//! Test support shared by the integration tests of dsh-tool-bash: a registry
//! with the bash tools over a real [`LocalBashExecutor`], a recording fake
//! agent, and process probes from /proc.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_agent::{Agent, AgentError, AgentOptions, AgentStatus};
use dsh_bash::{BashExecutor, TaskInfo};
use dsh_bash_local::{LocalBashConfig, LocalBashExecutor};
use dsh_kernel::Registration;
use dsh_llm::{ContentBlock, MessageSource};
use dsh_session::Session;
use dsh_tools::{ToolExecution, ToolExecutionResult, ToolRegistry};
use serde_json::Value;
use tempfile::TempDir;

/// Upper bound for anything a test waits on; hitting it is a failure.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A registry with `bash`, `bash_output` and `bash_kill` installed over a
/// local executor whose cwd and spill directory live in a private temp dir.
pub struct Harness {
    pub exec: Arc<LocalBashExecutor>,
    pub registry: ToolRegistry,
    pub tmp: TempDir,
    pub installed: Registration,
    next_call: std::sync::atomic::AtomicU64,
}

impl Harness {
    /// Default config with a 200 ms kill grace; `tweak` adjusts it.
    pub fn new(tweak: impl FnOnce(&mut LocalBashConfig)) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut config = LocalBashConfig {
            kill_grace: Duration::from_millis(200),
            spill_dir: Some(tmp.path().to_path_buf()),
            cwd: Some(tmp.path().to_path_buf()),
            ..LocalBashConfig::default()
        };
        tweak(&mut config);
        let exec = Arc::new(LocalBashExecutor::new(config));
        let registry = ToolRegistry::new();
        let installed =
            dsh_tool_bash::install(&registry, exec.clone()).expect("bash tools install");
        Self {
            exec,
            registry,
            tmp,
            installed,
            next_call: std::sync::atomic::AtomicU64::new(1),
        }
    }

    /// A call of `tool` with `args` (serialized), a fresh token, no agent.
    pub fn execution(&self, tool: &str, args: &Value) -> ToolExecution {
        self.execution_raw(tool, &args.to_string())
    }

    /// A call of `tool` with the raw argument text `args`.
    pub fn execution_raw(&self, tool: &str, args: &str) -> ToolExecution {
        let n = self
            .next_call
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ToolExecution::new(format!("call-{n}"), tool, args)
    }

    /// Executes `exec` through the registry, failing after [`DEADLINE`].
    pub async fn execute(&self, exec: ToolExecution) -> ToolExecutionResult {
        tokio::time::timeout(DEADLINE, self.registry.execute(exec))
            .await
            .expect("tool call finished before the deadline")
    }

    /// Calls `tool` with `args` through the registry.
    pub async fn call(&self, tool: &str, args: Value) -> ToolExecutionResult {
        self.execute(self.execution(tool, &args)).await
    }

    /// Calls `tool` with the raw argument text `args`.
    pub async fn call_raw(&self, tool: &str, args: &str) -> ToolExecutionResult {
        self.execute(self.execution_raw(tool, args)).await
    }

    /// Runs `command` through the `bash` tool in the foreground.
    pub async fn bash(&self, command: &str) -> ToolExecutionResult {
        self.call(
            "bash",
            serde_json::json!({"command": command, "description": "Run a test command"}),
        )
        .await
    }

    /// Starts `command` through the `bash` tool in the background, with
    /// `agent` (if any) as the owning agent; returns the task id.
    pub async fn start(&self, command: &str, agent: Option<Arc<dyn Agent>>) -> String {
        let mut exec = self.execution(
            "bash",
            &serde_json::json!({
                "command": command,
                "description": "Run a background test command",
                "run_in_background": true
            }),
        );
        if let Some(agent) = agent {
            exec.extensions.insert(agent);
        }
        let result = self.execute(exec).await;
        let text = ok_text(&result);
        text.strip_prefix("started background task ")
            .unwrap_or_else(|| panic!("unexpected start result {text:?}"))
            .to_string()
    }

    /// `bash_output` of task `id`: the single text block of a success.
    pub async fn output(&self, id: &str) -> String {
        ok_text(
            &self
                .call("bash_output", serde_json::json!({"task_id": id}))
                .await,
        )
    }

    /// Waits (on the executor) until task `id` has completed and its
    /// completion listeners have run.
    pub async fn wait(&self, id: &str) -> TaskInfo {
        tokio::time::timeout(DEADLINE, self.exec.wait(id))
            .await
            .expect("task finished before the deadline")
            .expect("task known")
    }

    /// Disposes the executor, failing after [`DEADLINE`].
    pub async fn dispose(&self) {
        tokio::time::timeout(DEADLINE, self.exec.dispose())
            .await
            .expect("dispose finished before the deadline");
    }

    /// A FIFO in the harness's temp dir.
    pub fn fifo(&self, name: &str) -> PathBuf {
        let path = self.tmp.path().join(name);
        let status = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("mkfifo runs");
        assert!(status.success(), "mkfifo failed");
        path
    }
}

/// The text of a successful single-block result; fails the test otherwise.
pub fn ok_text(result: &ToolExecutionResult) -> String {
    assert!(
        !result.is_error,
        "expected a success, got error {:?}",
        result.text()
    );
    assert_eq!(
        result.content.len(),
        1,
        "expected one block: {:?}",
        result.content
    );
    result.content[0]
        .as_text()
        .expect("a text block")
        .to_string()
}

/// Asserts an error result with exactly `text` (one block) and `code`.
pub fn assert_error(result: &ToolExecutionResult, code: &str, text: &str) {
    assert!(
        result.is_error,
        "expected an error, got {:?}",
        result.text()
    );
    assert_eq!(result.text(), text);
    assert_eq!(result.content.len(), 1, "{:?}", result.content);
    assert_eq!(result.code(), Some(code), "{:?}", result.failure);
}

/// Blocks (off the runtime) until a writer has written to the FIFO and closed
/// it; returns what was written. This is how tests learn that a command is
/// running, without sleeping.
pub async fn read_fifo(path: &Path) -> String {
    let path = path.to_path_buf();
    let read = tokio::task::spawn_blocking(move || std::fs::read_to_string(path));
    tokio::time::timeout(DEADLINE, read)
        .await
        .expect("fifo written before the deadline")
        .expect("reader task")
        .expect("fifo readable")
}

/// Opens the FIFO for writing (off the runtime), writes `text` and closes
/// it: releases a command blocked reading it.
pub async fn write_fifo(path: &Path, text: &str) {
    let (path, text) = (path.to_path_buf(), text.to_string());
    let write = tokio::task::spawn_blocking(move || std::fs::write(path, text));
    tokio::time::timeout(DEADLINE, write)
        .await
        .expect("fifo opened by a reader before the deadline")
        .expect("writer task")
        .expect("fifo writable");
}

// Each test binary uses a different subset of the shared helpers.
#[allow(unused_imports)]
pub use dsh_testkit::procs::{assert_gone, group_members, is_alive, pids};

/// One recorded `inject` call.
#[derive(Debug, Clone, PartialEq)]
pub struct Injected {
    pub content: Vec<ContentBlock>,
    pub source: MessageSource,
}

/// A fake agent that records `inject` calls; [`FakeAgent::disposed`] and
/// [`FakeAgent::failing`] make `inject` fail (after recording the attempt).
pub struct FakeAgent {
    id: String,
    options: AgentOptions,
    error: Option<AgentError>,
    pub injected: Mutex<Vec<Injected>>,
}

impl FakeAgent {
    /// A live agent.
    pub fn new(id: &str) -> Arc<Self> {
        Self::build(id, None)
    }

    /// An agent whose `inject` fails with `AgentError::Disposed`.
    pub fn disposed(id: &str) -> Arc<Self> {
        Self::build(id, Some(AgentError::Disposed(id.to_string())))
    }

    /// An agent whose `inject` fails with `error`.
    pub fn failing(id: &str, error: AgentError) -> Arc<Self> {
        Self::build(id, Some(error))
    }

    fn build(id: &str, error: Option<AgentError>) -> Arc<Self> {
        Arc::new(Self {
            id: id.to_string(),
            options: AgentOptions::default(),
            error,
            injected: Mutex::new(Vec::new()),
        })
    }

    /// The recorded inject calls so far.
    pub fn injected(&self) -> Vec<Injected> {
        self.injected.lock().expect("inject log lock").clone()
    }

    fn gate(&self) -> Result<(), AgentError> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

impl Agent for FakeAgent {
    fn id(&self) -> &str {
        &self.id
    }

    fn options(&self) -> &AgentOptions {
        &self.options
    }

    fn session(&self) -> Arc<Session> {
        Session::detached(self.id.clone(), vec![])
    }

    fn status(&self) -> AgentStatus {
        if matches!(self.error, Some(AgentError::Disposed(_))) {
            AgentStatus::Disposed
        } else {
            AgentStatus::Idle
        }
    }

    fn send(&self, _content: Vec<ContentBlock>, _source: MessageSource) -> Result<(), AgentError> {
        panic!("a completion notice must not send (it is not a wake-up)");
    }

    fn steer(&self, _content: Vec<ContentBlock>, _source: MessageSource) -> Result<(), AgentError> {
        panic!("a completion notice must not steer");
    }

    fn inject(&self, content: Vec<ContentBlock>, source: MessageSource) -> Result<(), AgentError> {
        self.injected
            .lock()
            .expect("inject log lock")
            .push(Injected { content, source });
        self.gate()
    }

    fn abort(&self, _reason: Option<String>) {}
}
