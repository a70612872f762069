//! The bash execution seam: the [`BashExecutor`] trait and its vocabulary.
//!
//! Start reading at [`BashExecutor`]. A model-facing [`BashRequest`] (optional
//! fields) is turned into a [`BashSpec`] (every default and cap applied) by
//! [`BashExecutor::resolve`]; the spec is then run in the foreground
//! ([`BashExecutor::run`] → [`RunResult`]) or started as a background task
//! ([`BashExecutor::start`] → [`TaskInfo`]) whose output is read incrementally
//! ([`BashExecutor::read_output`] → [`TaskRead`]).
//!
//! This crate holds no process code: the local implementation lives in
//! `dsh-bash-local`, the model-facing tools in `dsh-tool-bash`. The only
//! formatting it owns is [`status_line`], shared by the tools.

#![warn(missing_docs)]

use std::path::PathBuf;

use dsh_kernel::{BoxFuture, DshError, EmitHook, ErrorCode};
use dsh_protocol::{codes, SandboxMode};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// A model-facing request to run a command: optional fields are filled in by
/// [`BashExecutor::resolve`].
#[derive(Debug, Clone, Default)]
pub struct BashRequest {
    /// The command line, run as `bash -c <command>`.
    pub command: String,
    /// Working directory; `None` → the executor's default. A relative path is
    /// resolved against that default.
    pub workdir: Option<PathBuf>,
    /// Foreground timeout in milliseconds; `None` → the executor's default.
    /// Capped at the executor's maximum; `Some(0)` means "no timeout".
    pub timeout_ms: Option<u64>,
    /// Cancelling this token aborts the command (foreground or background).
    pub cancel: Option<CancellationToken>,
    /// Run under this sandbox mode instead of the executor's current one;
    /// `None` → the executor's. Only an approved escalation sets it.
    pub sandbox: Option<SandboxMode>,
}

impl BashRequest {
    /// A request for `command` with every optional field unset.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            ..Self::default()
        }
    }

    /// Sets the working directory.
    pub fn with_workdir(mut self, workdir: impl Into<PathBuf>) -> Self {
        self.workdir = Some(workdir.into());
        self
    }

    /// Sets the foreground timeout in milliseconds.
    pub fn with_timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.timeout_ms = Some(timeout_ms);
        self
    }

    /// Attaches a cancellation token that aborts the command.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Runs the command under `mode` instead of the executor's mode (an
    /// approved escalation).
    pub fn with_sandbox(mut self, mode: SandboxMode) -> Self {
        self.sandbox = Some(mode);
        self
    }
}

/// A resolved request: what [`BashExecutor::run`] and [`BashExecutor::start`]
/// execute. They never re-apply defaults or caps.
#[derive(Debug, Clone)]
pub struct BashSpec {
    /// The command line, run as `bash -c <command>`.
    pub command: String,
    /// The working directory; must exist and be a directory when run.
    pub workdir: PathBuf,
    /// Effective foreground timeout in milliseconds; `0` = no timeout.
    /// Ignored by [`BashExecutor::start`] (background tasks have no timeout).
    pub timeout_ms: u64,
    /// Cancelling this token aborts the command; already cancelled at spawn →
    /// [`BashError::Aborted`].
    pub cancel: Option<CancellationToken>,
    /// The sandbox mode to run under; `None` → the executor's current mode
    /// at spawn time.
    pub sandbox: Option<SandboxMode>,
}

/// One collected output stream (stdout or stderr) of a foreground run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectedOutput {
    /// The stream as lossy UTF-8; only its tail when `truncated`.
    pub text: String,
    /// Whether bytes were dropped from `text` because the stream exceeded the
    /// executor's per-stream cap. Output exactly at the cap is not truncated.
    pub truncated: bool,
    /// File holding the complete stream from byte 0; set when the stream
    /// exceeded the cap (and the file could be written).
    pub spill_path: Option<PathBuf>,
}

/// The outcome of a foreground run that got as far as spawning the shell.
///
/// Non-zero exits, timeouts, aborts and signal deaths are all described here,
/// never reported as errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunResult {
    /// Exit code; `None` iff the shell died from a signal.
    pub exit_code: Option<i32>,
    /// Name of the signal that terminated the shell, e.g. `"SIGTERM"`.
    pub signal: Option<String>,
    /// The timeout elapsed and the kill was started.
    pub timed_out: bool,
    /// The request's cancellation token fired and the kill was started, or
    /// [`BashExecutor::dispose`] interrupted the run.
    pub aborted: bool,
    /// The effective timeout of the run in milliseconds (`0` = none).
    pub timeout_ms: u64,
    /// Standard output.
    pub stdout: CollectedOutput,
    /// Standard error.
    pub stderr: CollectedOutput,
    /// The shell exited but a process that left its process group (`setsid`,
    /// a daemon) still held the output pipes: the run stopped reading them
    /// shortly after the exit and left that process running.
    #[serde(default)]
    pub detached: bool,
    /// The recognizable line telling that the sandbox stopped the command
    /// (`[sandbox: write denied under workspace-write mode]`), decided from
    /// the exit status plus the kernel's error for a path outside the
    /// writable roots; `None` when the sandbox is not to blame.
    #[serde(default)]
    pub sandbox_denial: Option<String>,
}

/// Lifecycle of a background task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// The process has not completed yet.
    Running,
    /// The process completed on its own (any exit code, or a signal it did
    /// not receive through the executor).
    Completed,
    /// The task was killed: by [`BashExecutor::kill`], by its cancellation
    /// token, or by disposal. Set as soon as the kill is requested.
    Killed,
}

/// A snapshot of one background task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskInfo {
    /// Task id, `bash-<n>` with `n` counting from 1 per executor.
    pub id: String,
    /// The command line the task runs.
    pub command: String,
    /// Current status.
    pub status: TaskStatus,
    /// Exit code once completed; `None` while running or after a signal death.
    pub exit_code: Option<i32>,
    /// Name of the terminating signal once completed, e.g. `"SIGTERM"`.
    pub signal: Option<String>,
}

/// The result of one incremental [`BashExecutor::read_output`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRead {
    /// The task's state, taken before the output was read: when it says the
    /// task is no longer running, `delta` holds everything that was left.
    pub task: TaskInfo,
    /// New stdout, then (if any) new stderr after a `[stderr]\n` line; `""`
    /// when nothing new arrived. Never repeats bytes of an earlier read.
    pub delta: String,
    /// Some unread output had already been dropped from memory; the spill
    /// files hold it.
    pub lossy: bool,
    /// Spill file of the complete stdout, when stdout exceeded the cap.
    pub stdout_spill_path: Option<PathBuf>,
    /// Spill file of the complete stderr, when stderr exceeded the cap.
    pub stderr_spill_path: Option<PathBuf>,
}

/// Infrastructure failures of a bash executor. A command that ran and failed
/// is not one of these: it is a [`RunResult`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BashError {
    /// The working directory does not exist or is not a directory.
    #[error("working directory {} is not usable: {reason}; pass an existing directory as workdir", path.display())]
    BadWorkdir {
        /// The offending directory.
        path: PathBuf,
        /// The OS error text, e.g. `ENOENT: No such file or directory`.
        reason: String,
    },
    /// The shell could not be spawned (e.g. `bash` missing, no runtime).
    #[error("spawn failed: {reason}")]
    SpawnFailed {
        /// The OS error text.
        reason: String,
    },
    /// The cancellation token was already cancelled before spawning.
    #[error("aborted before spawn: {reason}")]
    Aborted {
        /// The abort reason; `"aborted"` when none was given.
        reason: String,
    },
    /// No task with this id exists (or the executor was disposed).
    #[error("unknown bash task \"{id}\"")]
    UnknownTask {
        /// The id that was asked for.
        id: String,
    },
    /// The executor was disposed; it runs nothing any more.
    #[error("bash executor is disposed")]
    Disposed,
    /// The sandbox for the mode cannot be applied on this system; the
    /// command was not run (confinement fails closed).
    #[error("{message}")]
    SandboxUnavailable {
        /// The full explanation, ending in what the user can do.
        message: String,
    },
    /// Waiting for the spawned shell failed (the process state is unknown).
    #[error("waiting for bash failed: {reason}")]
    WaitFailed {
        /// The OS or runtime error text.
        reason: String,
    },
}

impl ErrorCode for BashError {
    /// `BAD_WORKDIR`, `SPAWN_FAILED`, `ABORTED`, `UNKNOWN_TASK`, `DISPOSED`
    /// `SANDBOX_UNAVAILABLE` or `WAIT_FAILED`.
    fn code(&self) -> &str {
        match self {
            BashError::BadWorkdir { .. } => codes::BAD_WORKDIR,
            BashError::SpawnFailed { .. } => codes::SPAWN_FAILED,
            BashError::Aborted { .. } => codes::ABORTED,
            BashError::UnknownTask { .. } => codes::UNKNOWN_TASK,
            BashError::Disposed => codes::DISPOSED,
            BashError::SandboxUnavailable { .. } => codes::SANDBOX_UNAVAILABLE,
            BashError::WaitFailed { .. } => codes::WAIT_FAILED,
        }
    }
}

impl BashError {
    /// The [`BashError::Aborted`] error with the default reason `"aborted"`.
    pub fn aborted() -> Self {
        BashError::Aborted {
            reason: "aborted".to_string(),
        }
    }
}

impl From<BashError> for DshError {
    /// Keeps the code and the message; the bash error becomes the cause.
    fn from(err: BashError) -> Self {
        DshError::new(err.code().to_string(), err.to_string()).with_cause(err)
    }
}

/// Runs bash commands for the harness: foreground runs, background tasks with
/// incremental output, kill, completion notifications and disposal.
///
/// Object safe; shared as `Arc<dyn BashExecutor>`. Implementations must leave
/// no process behind: [`BashExecutor::dispose`] kills every process they
/// started and returns only once those are gone.
pub trait BashExecutor: Send + Sync {
    /// Applies defaults and caps to a request. Pure: spawns nothing, never
    /// fails (an unusable workdir is reported by `run`/`start`).
    fn resolve(&self, req: BashRequest) -> BashSpec;

    /// Runs `spec` in the foreground and resolves when the process has exited
    /// and both output pipes are closed (an implementation may stop waiting
    /// for pipes held by leftovers shortly after the exit, see
    /// [`RunResult::detached`]).
    ///
    /// Errors only for infrastructure problems: unusable workdir
    /// ([`BashError::BadWorkdir`]), spawn failure, token already cancelled
    /// ([`BashError::Aborted`]), disposed executor. Non-zero exit, timeout,
    /// abort and signal death are `Ok` with a descriptive [`RunResult`].
    /// Dropping the future kills the process.
    fn run(&self, spec: BashSpec) -> BoxFuture<'_, Result<RunResult, BashError>>;

    /// Starts `spec` as a background task and returns at once with its
    /// `Running` snapshot. No timeout applies; the task stops on its own, via
    /// [`BashExecutor::kill`], via `spec.cancel`, or at disposal. Errors as
    /// for `run`, synchronously.
    fn start(&self, spec: BashSpec) -> Result<TaskInfo, BashError>;

    /// A snapshot of task `id`; `None` if unknown.
    fn get(&self, id: &str) -> Option<TaskInfo>;

    /// Snapshots of every task, in start order.
    fn list(&self) -> Vec<TaskInfo>;

    /// Output produced since the previous read of task `id` (stdout, then
    /// stderr after a `[stderr]\n` line). Never re-delivers a byte; sets
    /// `lossy` when unread bytes were dropped from memory.
    /// Unknown id → [`BashError::UnknownTask`].
    fn read_output(&self, id: &str) -> Result<TaskRead, BashError>;

    /// Kills task `id`: its status becomes `Killed` at once and the SIGTERM →
    /// SIGKILL escalation starts. `Ok(false)` if it had already finished;
    /// unknown id → [`BashError::UnknownTask`].
    fn kill(&self, id: &str) -> Result<bool, BashError>;

    /// Resolves with the final snapshot once task `id` has completed;
    /// immediately `None` for an unknown id. Never fails.
    fn wait(&self, id: &str) -> BoxFuture<'_, Option<TaskInfo>>;

    /// Completion listeners: called with the final snapshot exactly once for
    /// every background task that completes before [`BashExecutor::dispose`]
    /// starts, and never once it has started. Listeners run synchronously on
    /// the executor's task: keep them short and do not block on `dispose`
    /// from one. A panicking or failing listener is contained and logged.
    fn on_task_done(&self) -> &EmitHook<TaskInfo>;

    /// Stops notifications, kills every running task and foreground run, and
    /// resolves once all those processes are gone. A foreground run in
    /// flight resolves with `aborted` set. Afterwards `run`/`start` fail with
    /// [`BashError::Disposed`]. Idempotent.
    fn dispose(&self) -> BoxFuture<'_, ()>;
}

/// The status line of a task, as the model sees it:
/// `[status: running]`, `[status: killed by SIGTERM]`, `[status: killed]`
/// (no signal recorded) or `[status: completed, exit code: N]` (`0` when the
/// exit code is unknown, as in the reference).
pub fn status_line(task: &TaskInfo) -> String {
    match task.status {
        TaskStatus::Running => "[status: running]".to_string(),
        TaskStatus::Killed => match &task.signal {
            Some(signal) => format!("[status: killed by {signal}]"),
            None => "[status: killed]".to_string(),
        },
        TaskStatus::Completed => {
            format!(
                "[status: completed, exit code: {}]",
                task.exit_code.unwrap_or(0)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(status: TaskStatus, exit_code: Option<i32>, signal: Option<&str>) -> TaskInfo {
        TaskInfo {
            id: "bash-1".into(),
            command: "true".into(),
            status,
            exit_code,
            signal: signal.map(str::to_string),
        }
    }

    #[test]
    fn status_line_matches_reference() {
        assert_eq!(
            status_line(&task(TaskStatus::Running, None, None)),
            "[status: running]"
        );
        assert_eq!(
            status_line(&task(TaskStatus::Killed, None, Some("SIGTERM"))),
            "[status: killed by SIGTERM]"
        );
        assert_eq!(
            status_line(&task(TaskStatus::Killed, None, None)),
            "[status: killed]"
        );
        assert_eq!(
            status_line(&task(TaskStatus::Killed, Some(0), None)),
            "[status: killed]"
        );
        assert_eq!(
            status_line(&task(TaskStatus::Completed, Some(3), None)),
            "[status: completed, exit code: 3]"
        );
        assert_eq!(
            status_line(&task(TaskStatus::Completed, None, Some("SIGTERM"))),
            "[status: completed, exit code: 0]"
        );
    }

    #[test]
    fn error_codes_and_messages() {
        let e = BashError::UnknownTask {
            id: "bash-9".into(),
        };
        assert_eq!(e.code(), "UNKNOWN_TASK");
        assert_eq!(e.to_string(), "unknown bash task \"bash-9\"");
        let e = BashError::aborted();
        assert_eq!(e.code(), "ABORTED");
        assert_eq!(e.to_string(), "aborted before spawn: aborted");
        let e = BashError::BadWorkdir {
            path: "/nope".into(),
            reason: "ENOENT: No such file or directory".into(),
        };
        assert_eq!(e.code(), "BAD_WORKDIR");
        assert!(e.to_string().contains("/nope"));
        assert!(e.to_string().contains("ENOENT"));
        assert_eq!(BashError::Disposed.code(), "DISPOSED");
        let d: DshError = BashError::Disposed.into();
        assert_eq!(d.code(), "DISPOSED");
        assert_eq!(d.message(), "bash executor is disposed");
    }

    #[test]
    fn executor_trait_is_object_safe() {
        fn _takes(_: std::sync::Arc<dyn BashExecutor>) {}
    }
}
