//! Test support shared by the integration tests of dsh-tool-bash: a registry
//! with the bash tools over a real [`LocalBashExecutor`], a recording fake
//! context sink (the agent's side of completion notices), and process probes
//! from /proc.
#![allow(dead_code)] // each test binary uses a different subset
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic
#![allow(unreachable_pub)] // shared by several test binaries

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_agent::AgentError;
use dsh_bash::{BashExecutor, TaskInfo};
use dsh_bash_local::{LocalBashConfig, LocalBashExecutor};
use dsh_kernel::{DshError, Registration};
use dsh_llm::{ContentBlock, MessageSource};
use dsh_tools::{CallEnv, ContextSink, ToolCall, ToolRegistry, ToolResult};
use serde_json::Value;
use tempfile::TempDir;

/// Upper bound for anything a test waits on; hitting it is a failure.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// One call to execute: the call as the model made it and its environment
/// (token, extensions).
pub struct Exec {
    pub call: ToolCall,
    pub env: CallEnv,
}

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
    /// Default config with a 200 ms kill grace and without the sandbox's
    /// namespace layer (these tests compare `$$`/`$!` with host pids; the
    /// layer is tested in dsh-bash-local); `tweak` adjusts it.
    pub fn new(tweak: impl FnOnce(&mut LocalBashConfig)) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut config = LocalBashConfig {
            kill_grace: Duration::from_millis(200),
            spill_dir: Some(tmp.path().to_path_buf()),
            cwd: Some(tmp.path().to_path_buf()),
            namespaces: dsh_sandbox::NamespaceMode::Off,
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

    /// A call of `tool` with `args` (serialized), a fresh token, no sink.
    pub fn execution(&self, tool: &str, args: &Value) -> Exec {
        self.execution_raw(tool, &args.to_string())
    }

    /// A call of `tool` with the raw argument text `args`.
    pub fn execution_raw(&self, tool: &str, args: &str) -> Exec {
        let n = self
            .next_call
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Exec {
            call: ToolCall::new(format!("call-{n}"), tool, args),
            env: CallEnv::default(),
        }
    }

    /// Executes `exec` through the registry, failing after [`DEADLINE`].
    pub async fn execute(&self, exec: Exec) -> ToolResult {
        tokio::time::timeout(DEADLINE, self.registry.execute(&exec.call, exec.env))
            .await
            .expect("tool call finished before the deadline")
    }

    /// Calls `tool` with `args` through the registry.
    pub async fn call(&self, tool: &str, args: Value) -> ToolResult {
        self.execute(self.execution(tool, &args)).await
    }

    /// Calls `tool` with the raw argument text `args`.
    pub async fn call_raw(&self, tool: &str, args: &str) -> ToolResult {
        self.execute(self.execution_raw(tool, args)).await
    }

    /// Runs `command` through the `bash` tool in the foreground.
    pub async fn bash(&self, command: &str) -> ToolResult {
        self.call(
            "bash",
            serde_json::json!({"command": command, "description": "Run a test command"}),
        )
        .await
    }

    /// Starts `command` through the `bash` tool in the background, with
    /// `sink` (if any) in the extensions as the owning agent's context sink;
    /// returns the task id.
    pub async fn start(&self, command: &str, sink: Option<Arc<dyn ContextSink>>) -> String {
        let mut exec = self.execution(
            "bash",
            &serde_json::json!({
                "command": command,
                "description": "Run a background test command",
                "run_in_background": true
            }),
        );
        if let Some(sink) = sink {
            exec.env.extensions.insert(sink);
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
pub fn ok_text(result: &ToolResult) -> String {
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
pub fn assert_error(result: &ToolResult, code: &str, text: &str) {
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

/// One recorded `inject_context` call.
#[derive(Debug, Clone, PartialEq)]
pub struct Injected {
    pub content: Vec<ContentBlock>,
    pub source: MessageSource,
}

/// A fake agent context sink that records `inject_context` calls;
/// [`FakeSink::disposed`] and [`FakeSink::failing`] make it fail (after
/// recording the attempt) with the error the agent would return. (A sink can
/// only inject context: a completion notice can neither send nor steer.)
pub struct FakeSink {
    error: Option<AgentError>,
    pub injected: Mutex<Vec<Injected>>,
}

impl FakeSink {
    /// A live agent's sink.
    pub fn new(_id: &str) -> Arc<Self> {
        Self::build(None)
    }

    /// A disposed agent's sink: fails with `AgentError::Disposed`
    /// (`AGENT_DISPOSED`).
    pub fn disposed(id: &str) -> Arc<Self> {
        Self::build(Some(AgentError::Disposed(id.into())))
    }

    /// A sink that fails with `error`.
    pub fn failing(_id: &str, error: AgentError) -> Arc<Self> {
        Self::build(Some(error))
    }

    fn build(error: Option<AgentError>) -> Arc<Self> {
        Arc::new(Self {
            error,
            injected: Mutex::new(Vec::new()),
        })
    }

    /// The recorded inject calls so far.
    pub fn injected(&self) -> Vec<Injected> {
        self.injected.lock().expect("inject log lock").clone()
    }
}

impl ContextSink for FakeSink {
    fn inject_context(
        &self,
        content: Vec<ContentBlock>,
        source: MessageSource,
    ) -> Result<(), DshError> {
        self.injected
            .lock()
            .expect("inject log lock")
            .push(Injected { content, source });
        match &self.error {
            Some(e) => Err(e.clone().into()),
            None => Ok(()),
        }
    }
}
