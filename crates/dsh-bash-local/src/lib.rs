//! The local [`BashExecutor`]: every call is a fresh `bash -c` in its own
//! session and process group on this machine.
//!
//! Start reading at [`LocalBashExecutor`] and its [`LocalBashConfig`]. What it
//! guarantees:
//! - a scrubbed environment (no secret as [`dsh_process::env::is_secret_var`]
//!   defines it, except [`LocalBashConfig::env_passthrough`]; no `BASH_ENV`)
//!   plus `NO_COLOR=1 TERM=dumb PAGER=cat GIT_PAGER=cat`, stdin from `/dev/null`, no controlling terminal;
//! - timeouts and kills signal the whole process group: SIGTERM, then SIGKILL
//!   after [`LocalBashConfig::kill_grace`];
//! - per stream a bounded in-memory tail and, beyond the cap, a spill file
//!   with the complete stream in a private (0700) directory;
//! - a foreground call does not wait for what still holds its output
//!   [`LocalBashConfig::escaped_output_grace`] after the shell exited: its own
//!   jobs are killed, a process that left the group is left running and the
//!   result says so ([`dsh_bash::RunResult::detached`]);
//! - [`BashExecutor::dispose`] kills every process it started, waits until
//!   they are reaped (a run in flight returns `aborted`) and removes the
//!   temp spill files (not those in [`LocalBashExecutor::keep_spills_in`]).
//!
//! Confinement is [`dsh_sandbox`]'s: the policy of the mode in force
//! (namespace layer, Landlock, seccomp), applied in the child after its
//! session is set up; with [`LocalBashConfig::network_proxy`] the
//! command's network namespace is served by the session's proxy for as
//! long as the command runs. It runs nothing through a PTY.

#![warn(missing_docs)]

mod output;
mod process;
mod spill;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use dsh_bash::{
    BashError, BashExecutor, BashRequest, BashSpec, RunResult, TaskInfo, TaskRead, TaskStatus,
};
use dsh_kernel::{BoxFuture, EmitHook};
use dsh_sandbox::{NamespaceMode, Network, SandboxMode, SandboxPolicy};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::output::{SharedStream, StreamBuffer};
use crate::process::{DriveControl, Outcome};
use crate::spill::SpillDir;

/// The largest allowed [`LocalBashConfig::max_output_bytes`] (8 MiB): the
/// in-memory tail per stream never grows beyond it, whatever the config says
/// (see [`LocalBashConfig::validate`]).
pub const MAX_OUTPUT_BYTES_LIMIT: usize = 8 * 1024 * 1024;

/// Configuration of a [`LocalBashExecutor`]. `Default` gives the reference
/// values; [`LocalBashConfig::validate`] checks a config built from user
/// input.
#[derive(Debug, Clone)]
pub struct LocalBashConfig {
    /// Default working directory; `None` → the host process's current
    /// directory at resolve time.
    pub cwd: Option<PathBuf>,
    /// Default foreground timeout in ms (`120_000`).
    pub timeout_ms: u64,
    /// Cap for per-call timeouts in ms (`600_000`).
    pub max_timeout_ms: u64,
    /// In-memory tail per stream, in bytes (`64_000`); beyond it the stream
    /// spills to a file.
    pub max_output_bytes: usize,
    /// Delay between SIGTERM and SIGKILL when killing (3 s).
    pub kill_grace: Duration,
    /// After the shell exits, how long output pipes still held open are read
    /// before a foreground call stops holders inside its group (`cmd &`:
    /// SIGTERM, SIGKILL after `kill_grace`) and returns without holders
    /// outside it (`setsid cmd &`), leaving those running (1 s). Background
    /// tasks only detach from holders outside the group.
    pub escaped_output_grace: Duration,
    /// Keep spill files (and their directory) after disposal (`false`).
    pub keep_spill_files: bool,
    /// Parent of the executor's private spill directory
    /// (`<parent>/dsh-bash-<random>`); `None` → the system temp dir.
    pub spill_dir: Option<PathBuf>,
    /// Variables passed to commands although [`dsh_process::env::is_secret_var`]
    /// calls them secret (exact names; default none).
    pub env_passthrough: Vec<String>,
    /// The sandbox mode commands start under (`workspace-write`): writes
    /// only under the workspace (`cwd`), the system temp directory and the
    /// device nodes. Changed later with
    /// [`LocalBashExecutor::set_sandbox_mode`].
    pub sandbox: SandboxMode,
    /// Whether confined commands may use TCP (`true`); `false` needs
    /// Landlock ABI 4 or later, else every command fails with
    /// `SANDBOX_UNAVAILABLE`.
    pub network: bool,
    /// Unix sockets on the file system confined commands may reach
    /// (`[sandbox] allow_unix_sockets`, default none). Empty: confined
    /// commands cannot create Unix sockets (seccomp; stream `socketpair`s
    /// still work). Non-empty, under the namespace layer: exactly the
    /// listed sockets are reachable (the namespace's init checks every
    /// `connect`); without the layer, sockets stay denied.
    pub allow_unix_sockets: Vec<PathBuf>,
    /// Whether confined commands also get the namespace layer (a read-only
    /// view of the system with the writable roots bound read-write, their
    /// own process tree and `/proc`): [`NamespaceMode::Auto`] (default:
    /// where the machine allows), `Required` or `Off`.
    pub namespaces: NamespaceMode,
    /// The session's network proxy: when set (a domain list in `[sandbox]
    /// network`), confined commands get a network namespace with only
    /// loopback and reach the outside through it (`HTTP_PROXY`,
    /// `HTTPS_PROXY`, `ALL_PROXY` and lower-case twins point at
    /// `127.0.0.1:3128`; `NO_PROXY` keeps loopback direct). A refused
    /// connection adds `[sandbox: network to <host> denied; allowed: …]`
    /// to the result. Without the namespace layer commands get no network
    /// (Landlock's TCP rules). `None` (default): [`LocalBashConfig::network`]
    /// decides.
    pub network_proxy: Option<dsh_netproxy::Proxy>,
    /// Give confined commands a private `/tmp` (a 0700 directory of this
    /// executor, removed at disposal) instead of the shared one; only with
    /// the namespace layer (`false`).
    pub private_tmp: bool,
}

impl Default for LocalBashConfig {
    fn default() -> Self {
        Self {
            cwd: None,
            timeout_ms: 120_000,
            max_timeout_ms: 600_000,
            max_output_bytes: 64_000,
            kill_grace: Duration::from_secs(3),
            escaped_output_grace: Duration::from_secs(1),
            keep_spill_files: false,
            spill_dir: None,
            env_passthrough: Vec::new(),
            sandbox: SandboxMode::WorkspaceWrite,
            network: true,
            allow_unix_sockets: Vec::new(),
            namespaces: NamespaceMode::Auto,
            network_proxy: None,
            private_tmp: false,
        }
    }
}

/// Runs bash commands as local child processes; see the crate docs.
///
/// `run` and `start` must be called inside a Tokio runtime with the I/O and
/// time drivers enabled. Dropping the executor without
/// [`BashExecutor::dispose`] still kills its processes but neither waits for
/// them nor removes spill files.
pub struct LocalBashExecutor {
    inner: Arc<Inner>,
}

struct Inner {
    config: LocalBashConfig,
    table: Mutex<TaskTable>,
    /// Set (under the table lock) when dispose starts.
    disposed: AtomicBool,
    /// Whether completion listeners may still be called. Completions read-lock
    /// it around the emit; dispose write-locks it to close it, which also
    /// waits for an emit in progress.
    notifications: RwLock<bool>,
    /// Cancelled at dispose (or drop): every process's kill token is a child.
    shutdown: CancellationToken,
    /// Every driver, foreground and background; dispose awaits them.
    drivers: TaskTracker,
    on_task_done: EmitHook<TaskInfo>,
    spill: Arc<SpillDir>,
    /// The private `/tmp` of confined commands ([`LocalBashConfig::private_tmp`]).
    private_tmp: SpillDir,
    /// The current sandbox mode for new commands.
    sandbox: Mutex<SandboxMode>,
}

#[derive(Default)]
struct TaskTable {
    /// Number of the last task started.
    last_id: u64,
    /// Tasks by number: iteration order is start order.
    tasks: BTreeMap<u64, Arc<Task>>,
}

/// One background task.
struct Task {
    id: String,
    command: String,
    state: Mutex<TaskState>,
    stdout: SharedStream,
    stderr: SharedStream,
    /// Cancelled by `kill`: starts the escalation.
    kill: CancellationToken,
    /// Cancelled once the task has completed and listeners ran.
    done: CancellationToken,
}

struct TaskState {
    status: TaskStatus,
    exit_code: Option<i32>,
    signal: Option<String>,
    /// Whole-stream offsets of the next incremental read.
    stdout_offset: u64,
    stderr_offset: u64,
}

impl LocalBashConfig {
    /// Checks the values a user can set: `max_output_bytes` in
    /// `1..=`[`MAX_OUTPUT_BYTES_LIMIT`], `timeout_ms` and `max_timeout_ms` at
    /// least 1, `timeout_ms <= max_timeout_ms`.
    ///
    /// # Errors
    /// The first violation, as a message naming the key as written in
    /// dsh.toml, e.g. `[bash] max_output_bytes = 0 must be at least 1`.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_output_bytes == 0 {
            return Err("[bash] max_output_bytes = 0 must be at least 1".to_string());
        }
        if self.max_output_bytes > MAX_OUTPUT_BYTES_LIMIT {
            return Err(format!(
                "[bash] max_output_bytes = {} is above the limit of {MAX_OUTPUT_BYTES_LIMIT} bytes (8 MiB)",
                self.max_output_bytes
            ));
        }
        if self.timeout_ms == 0 {
            return Err("[bash] timeout_ms = 0 must be at least 1 ms".to_string());
        }
        if self.max_timeout_ms == 0 {
            return Err("[bash] max_timeout_ms = 0 must be at least 1 ms".to_string());
        }
        if self.timeout_ms > self.max_timeout_ms {
            return Err(format!(
                "[bash] timeout_ms = {} is above [bash] max_timeout_ms = {}",
                self.timeout_ms, self.max_timeout_ms
            ));
        }
        Ok(())
    }
}

impl LocalBashExecutor {
    /// An executor with `config`. Spawns nothing and touches no file until
    /// the first run. Makes this process non-dumpable
    /// ([`dsh_sandbox::shield_this_process`]).
    ///
    /// The in-memory tail per stream is `max_output_bytes` capped at
    /// [`MAX_OUTPUT_BYTES_LIMIT`] even when the config was not validated.
    pub fn new(mut config: LocalBashConfig) -> Self {
        // The process holding the keys: its environment and memory stay
        // out of reach of confined commands (see dsh_sandbox).
        dsh_sandbox::shield_this_process();
        config.max_output_bytes = config.max_output_bytes.min(MAX_OUTPUT_BYTES_LIMIT);
        let spill_parent = config.spill_dir.clone().unwrap_or_else(std::env::temp_dir);
        let sandbox = Mutex::new(config.sandbox);
        Self {
            inner: Arc::new(Inner {
                sandbox,
                config,
                table: Mutex::new(TaskTable::default()),
                disposed: AtomicBool::new(false),
                notifications: RwLock::new(true),
                shutdown: CancellationToken::new(),
                drivers: TaskTracker::new(),
                on_task_done: EmitHook::new("bash/task-done"),
                spill: Arc::new(SpillDir::new(spill_parent)),
                private_tmp: SpillDir::new(std::env::temp_dir()),
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LocalBashConfig {
        &self.inner.config
    }

    /// The directory new spill files go to, once it has been created: the
    /// private temp directory (until disposal removes it) or the one given to
    /// [`LocalBashExecutor::keep_spills_in`].
    pub fn spill_dir(&self) -> Option<PathBuf> {
        self.inner.spill.path()
    }

    /// From now on, new spill files are created directly in `dir` and kept
    /// at disposal: they belong to a saved session whose results name them
    /// (the front end passes `<session_dir>/<session-id>/spill` and offers
    /// its own cleanup).
    ///
    /// `dir` and its missing parents are created with mode 0700 on the next
    /// spill; an existing `dir` must be a real directory (a symlink is
    /// refused) and is made 0700. Files keep the usual rules (random names,
    /// exclusive create, mode 0600). If `dir` cannot be prepared, the spill
    /// fails as any other (logged, `spill_path` unset). Files spilled before
    /// the call stay in the temp directory, which disposal still removes
    /// (unless [`LocalBashConfig::keep_spill_files`]). A later call replaces
    /// `dir`.
    pub fn keep_spills_in(&self, dir: PathBuf) {
        self.inner.spill.keep_in(dir);
    }

    /// The sandbox mode new commands run under.
    pub fn sandbox_mode(&self) -> SandboxMode {
        *self.inner.sandbox.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes the sandbox mode for commands spawned from now on; running
    /// commands keep the confinement they started with.
    pub fn set_sandbox_mode(&self, mode: SandboxMode) {
        *self.inner.sandbox.lock().unwrap_or_else(|p| p.into_inner()) = mode;
    }

    /// The policy a command of `spec` runs under: its own mode or the
    /// executor's, the workspace being the configured (or host) cwd, never
    /// the per-call workdir.
    ///
    /// # Errors
    /// [`BashError::SpawnFailed`] when the private `/tmp` cannot be made.
    fn policy(&self, spec: &BashSpec) -> Result<SandboxPolicy, BashError> {
        let mode = spec.sandbox.unwrap_or_else(|| self.sandbox_mode());
        let config = &self.inner.config;
        let network = Network::of_setting(config.network_proxy.is_some(), config.network);
        let mut policy = SandboxPolicy::for_mode(mode, &self.workspace(), None)
            .with_network_access(network)
            .with_unix_sockets(config.allow_unix_sockets.clone())
            .with_namespaces(config.namespaces);
        // read-only has no writable root: its /tmp stays the shared one,
        // read-only.
        if config.private_tmp
            && mode == SandboxMode::WorkspaceWrite
            && config.namespaces != NamespaceMode::Off
        {
            let dir = self
                .inner
                .private_tmp
                .dir()
                .map_err(|e| BashError::SpawnFailed {
                    reason: format!("cannot make the private /tmp: {e}"),
                })?;
            policy = policy.with_private_tmp(dir);
        }
        Ok(policy)
    }

    /// The configured cwd, else the host's current directory.
    fn workspace(&self) -> PathBuf {
        self.inner
            .config
            .cwd
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("."))
    }

    fn task(&self, id: &str) -> Option<Arc<Task>> {
        let n = id.strip_prefix("bash-")?.parse::<u64>().ok()?;
        self.inner.table().tasks.get(&n).cloned()
    }

    /// Pre-spawn checks shared by run and start.
    fn check_runnable(&self, spec: &BashSpec) -> Result<(), BashError> {
        if self.inner.disposed.load(Ordering::SeqCst) {
            return Err(BashError::Disposed);
        }
        if spec
            .cancel
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
        {
            return Err(BashError::aborted());
        }
        Ok(())
    }

    async fn run_foreground(&self, spec: BashSpec) -> Result<RunResult, BashError> {
        self.check_runnable(&spec)?;
        let runtime = current_runtime()?;
        let policy = self.policy(&spec)?;
        let max = self.inner.config.max_output_bytes;
        let (stdout, stderr) = (StreamBuffer::shared(max), StreamBuffer::shared(max));
        let (kill, driver) = {
            // Registering under the table lock orders this run against
            // dispose: either dispose sees its driver, or the run sees
            // `disposed`.
            let _table = self.inner.table();
            if self.inner.disposed.load(Ordering::SeqCst) {
                return Err(BashError::Disposed);
            }
            let proc = process::spawn(
                &spec,
                &self.inner.config.env_passthrough,
                &policy,
                self.inner.config.network_proxy.as_ref(),
            )?;
            let kill = self.inner.shutdown.child_token();
            let control = DriveControl {
                timeout: (spec.timeout_ms > 0).then(|| Duration::from_millis(spec.timeout_ms)),
                abort: spec.cancel.clone(),
                kill: kill.clone(),
                grace: self.inner.config.kill_grace,
                escaped_output_grace: self.inner.config.escaped_output_grace,
                stop_jobs_after_exit: true,
            };
            let driver = process::drive(
                proc,
                control,
                stdout.clone(),
                stderr.clone(),
                self.inner.spill.clone(),
            );
            (kill, self.inner.drivers.spawn_on(driver, &runtime))
        };
        // Dropping this future (the caller gave up) kills the process; the
        // driver keeps reaping it in the background and dispose awaits it.
        let _kill_on_drop = kill.drop_guard();
        let outcome = driver.await.map_err(|e| BashError::WaitFailed {
            reason: e.to_string(),
        })?;
        if let Err(e) = &outcome.status {
            return Err(BashError::WaitFailed {
                reason: e.to_string(),
            });
        }
        let stdout = output::lock(&stdout).collected();
        let stderr = output::lock(&stderr).collected();
        let mut sandbox_denial =
            dsh_sandbox::denial_note(&policy, &spec.workdir, outcome.exit_code(), &stderr.text);
        if !outcome.network_denials.is_empty() {
            let mut notes = outcome.network_denials.join("\n");
            if let Some(fs) = sandbox_denial.take() {
                notes = format!("{fs}\n{notes}");
            }
            sandbox_denial = Some(notes);
        }
        Ok(RunResult {
            sandbox_denial,
            exit_code: outcome.exit_code(),
            signal: outcome.signal(),
            timed_out: outcome.timed_out,
            // A run interrupted by dispose was aborted from its caller's
            // point of view (a dropped run has no caller left to tell).
            aborted: outcome.aborted
                || (outcome.killed && self.inner.disposed.load(Ordering::SeqCst)),
            timeout_ms: spec.timeout_ms,
            stdout,
            stderr,
            detached: outcome.detached,
        })
    }

    async fn dispose_all(&self) {
        let tasks = {
            let mut table = self.inner.table();
            self.inner.disposed.store(true, Ordering::SeqCst);
            std::mem::take(&mut table.tasks)
        };
        // Blocks only while a listener is running (listeners are synchronous
        // and short). Poisoning only means a panic elsewhere; the flag is valid.
        *self
            .inner
            .notifications
            .write()
            .unwrap_or_else(|p| p.into_inner()) = false;
        for task in tasks.values() {
            let mut state = task.lock_state();
            if state.status == TaskStatus::Running {
                state.status = TaskStatus::Killed;
            }
        }
        self.inner.shutdown.cancel();
        self.inner.drivers.close();
        self.inner.drivers.wait().await;
        if !self.inner.config.keep_spill_files {
            self.inner.spill.remove();
        }
        self.inner.private_tmp.remove();
    }
}

impl Default for LocalBashExecutor {
    /// An executor with [`LocalBashConfig::default`].
    fn default() -> Self {
        Self::new(LocalBashConfig::default())
    }
}

impl Drop for LocalBashExecutor {
    /// Kills every process still running (without waiting for it).
    fn drop(&mut self) {
        self.inner.shutdown.cancel();
    }
}

impl BashExecutor for LocalBashExecutor {
    /// `timeout_ms = min(req ?? config.timeout_ms, config.max_timeout_ms)`;
    /// `workdir = base.join(req.workdir)` with `base = config.cwd ?? host
    /// cwd` (an absolute request path replaces the base).
    fn resolve(&self, req: BashRequest) -> BashSpec {
        let config = &self.inner.config;
        let base = self.workspace();
        let workdir = match req.workdir {
            Some(dir) => base.join(dir),
            None => base,
        };
        BashSpec {
            command: req.command,
            workdir,
            timeout_ms: req
                .timeout_ms
                .unwrap_or(config.timeout_ms)
                .min(config.max_timeout_ms),
            cancel: req.cancel,
            sandbox: req.sandbox,
        }
    }

    fn run(&self, spec: BashSpec) -> BoxFuture<'_, Result<RunResult, BashError>> {
        Box::pin(self.run_foreground(spec))
    }

    fn start(&self, spec: BashSpec) -> Result<TaskInfo, BashError> {
        self.check_runnable(&spec)?;
        let runtime = current_runtime()?;
        let mut table = self.inner.table();
        if self.inner.disposed.load(Ordering::SeqCst) {
            return Err(BashError::Disposed);
        }
        // Entering the runtime lets the child's reaper register with it.
        let _enter = runtime.enter();
        let proc = process::spawn(
            &spec,
            &self.inner.config.env_passthrough,
            &self.policy(&spec)?,
            self.inner.config.network_proxy.as_ref(),
        )?;
        let n = table.last_id + 1;
        table.last_id = n;
        let max = self.inner.config.max_output_bytes;
        let task = Arc::new(Task {
            id: format!("bash-{n}"),
            command: spec.command.clone(),
            state: Mutex::new(TaskState {
                status: TaskStatus::Running,
                exit_code: None,
                signal: None,
                stdout_offset: 0,
                stderr_offset: 0,
            }),
            stdout: StreamBuffer::shared(max),
            stderr: StreamBuffer::shared(max),
            kill: self.inner.shutdown.child_token(),
            done: CancellationToken::new(),
        });
        let control = DriveControl {
            timeout: None,
            abort: spec.cancel,
            kill: task.kill.clone(),
            grace: self.inner.config.kill_grace,
            escaped_output_grace: self.inner.config.escaped_output_grace,
            stop_jobs_after_exit: false,
        };
        let driver = process::drive(
            proc,
            control,
            task.stdout.clone(),
            task.stderr.clone(),
            self.inner.spill.clone(),
        );
        let inner = self.inner.clone();
        let finished = task.clone();
        self.inner.drivers.spawn_on(
            async move {
                let outcome = driver.await;
                inner.complete(&finished, &outcome);
            },
            &runtime,
        );
        let info = task.info();
        table.tasks.insert(n, task);
        Ok(info)
    }

    fn get(&self, id: &str) -> Option<TaskInfo> {
        self.task(id).map(|t| t.info())
    }

    fn list(&self) -> Vec<TaskInfo> {
        let tasks: Vec<Arc<Task>> = self.inner.table().tasks.values().cloned().collect();
        tasks.iter().map(|t| t.info()).collect()
    }

    fn read_output(&self, id: &str) -> Result<TaskRead, BashError> {
        let task = self
            .task(id)
            .ok_or_else(|| BashError::UnknownTask { id: id.to_string() })?;
        let mut state = task.lock_state();
        // Status first: if it says "finished", the reads below see every byte.
        let info = task.info_from(&state);
        let (out, out_spill) = {
            let s = output::lock(&task.stdout);
            (s.read_from(state.stdout_offset), s.spill_path())
        };
        let (err, err_spill) = {
            let s = output::lock(&task.stderr);
            (s.read_from(state.stderr_offset), s.spill_path())
        };
        state.stdout_offset = out.next_offset;
        state.stderr_offset = err.next_offset;
        drop(state);
        Ok(TaskRead {
            task: info,
            delta: merge_streams(out.text, &err.text),
            lossy: out.lossy || err.lossy,
            stdout_spill_path: out_spill,
            stderr_spill_path: err_spill,
        })
    }

    fn kill(&self, id: &str) -> Result<bool, BashError> {
        let task = self
            .task(id)
            .ok_or_else(|| BashError::UnknownTask { id: id.to_string() })?;
        {
            let mut state = task.lock_state();
            if state.status != TaskStatus::Running {
                return Ok(false);
            }
            state.status = TaskStatus::Killed;
        }
        task.kill.cancel();
        Ok(true)
    }

    fn wait(&self, id: &str) -> BoxFuture<'_, Option<TaskInfo>> {
        let task = self.task(id);
        Box::pin(async move {
            let task = task?;
            task.done.cancelled().await;
            Some(task.info())
        })
    }

    fn on_task_done(&self) -> &EmitHook<TaskInfo> {
        &self.inner.on_task_done
    }

    fn dispose(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.dispose_all())
    }
}

impl Inner {
    fn table(&self) -> MutexGuard<'_, TaskTable> {
        // Poisoning only means a panic elsewhere; the table stays consistent
        // between statements.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a background task's end, notifies listeners (unless disposal
    /// has started) and releases waiters.
    fn complete(&self, task: &Task, outcome: &Outcome) {
        {
            let mut state = task.lock_state();
            if state.status == TaskStatus::Running {
                state.status = if outcome.aborted {
                    TaskStatus::Killed
                } else {
                    TaskStatus::Completed
                };
            }
            state.exit_code = outcome.exit_code();
            state.signal = outcome.signal();
            if let Err(e) = &outcome.status {
                tracing::warn!(task = %task.id, "waiting for bash task failed: {e}");
            }
        }
        {
            // Poisoning only means a panic elsewhere; the flag is valid.
            let open = self.notifications.read().unwrap_or_else(|p| p.into_inner());
            if *open {
                // Listener failures are contained and logged by the hook itself.
                self.on_task_done.emit(&task.info());
            }
        }
        task.done.cancel();
    }
}

impl Task {
    fn lock_state(&self) -> MutexGuard<'_, TaskState> {
        // Poisoning only means a panic elsewhere; the state stays consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn info(&self) -> TaskInfo {
        self.info_from(&self.lock_state())
    }

    fn info_from(&self, state: &TaskState) -> TaskInfo {
        TaskInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            status: state.status,
            exit_code: state.exit_code,
            signal: state.signal.clone(),
        }
    }
}

/// The Tokio runtime the caller runs in; spawning children and drivers
/// needs one.
fn current_runtime() -> Result<tokio::runtime::Handle, BashError> {
    tokio::runtime::Handle::try_current().map_err(|e| BashError::SpawnFailed {
        reason: format!("bash executor needs a Tokio runtime: {e}"),
    })
}

/// `stdout`, then `[stderr]\n` + `stderr` when stderr is non-empty, with a
/// `\n` between them only when stdout is non-empty and lacks a final newline.
fn merge_streams(mut stdout: String, stderr: &str) -> String {
    if !stderr.is_empty() {
        if !stdout.is_empty() && !stdout.ends_with('\n') {
            stdout.push('\n');
        }
        stdout.push_str("[stderr]\n");
        stdout.push_str(stderr);
    }
    stdout
}

#[cfg(test)]
mod tests {
    use super::{merge_streams, LocalBashConfig, LocalBashExecutor, MAX_OUTPUT_BYTES_LIMIT};

    #[test]
    fn validate_accepts_the_defaults_and_the_limits() {
        assert_eq!(LocalBashConfig::default().validate(), Ok(()));
        let edge = LocalBashConfig {
            max_output_bytes: MAX_OUTPUT_BYTES_LIMIT,
            timeout_ms: 600_000,
            ..LocalBashConfig::default()
        };
        assert_eq!(edge.validate(), Ok(()));
        let one = LocalBashConfig {
            max_output_bytes: 1,
            timeout_ms: 1,
            max_timeout_ms: 1,
            ..LocalBashConfig::default()
        };
        assert_eq!(one.validate(), Ok(()));
    }

    #[test]
    fn validate_names_the_offending_key() {
        let check = |tweak: fn(&mut LocalBashConfig), expected: &str| {
            let mut c = LocalBashConfig::default();
            tweak(&mut c);
            assert_eq!(c.validate(), Err(expected.to_string()));
        };
        check(
            |c| c.max_output_bytes = 0,
            "[bash] max_output_bytes = 0 must be at least 1",
        );
        check(
            |c| c.max_output_bytes = MAX_OUTPUT_BYTES_LIMIT + 1,
            "[bash] max_output_bytes = 8388609 is above the limit of 8388608 bytes (8 MiB)",
        );
        check(
            |c| c.timeout_ms = 0,
            "[bash] timeout_ms = 0 must be at least 1 ms",
        );
        check(
            |c| {
                c.timeout_ms = 1;
                c.max_timeout_ms = 0;
            },
            "[bash] max_timeout_ms = 0 must be at least 1 ms",
        );
        check(
            |c| c.timeout_ms = 600_001,
            "[bash] timeout_ms = 600001 is above [bash] max_timeout_ms = 600000",
        );
    }

    #[test]
    fn an_unvalidated_cap_is_clamped_to_the_limit() {
        let exec = LocalBashExecutor::new(LocalBashConfig {
            max_output_bytes: usize::MAX,
            ..LocalBashConfig::default()
        });
        assert_eq!(exec.config().max_output_bytes, MAX_OUTPUT_BYTES_LIMIT);
    }

    #[test]
    fn merge_follows_reference_examples() {
        assert_eq!(
            merge_streams("out\n".into(), "err\n"),
            "out\n[stderr]\nerr\n"
        );
        assert_eq!(merge_streams(String::new(), "err\n"), "[stderr]\nerr\n");
        assert_eq!(merge_streams("out".into(), "err\n"), "out\n[stderr]\nerr\n");
        assert_eq!(merge_streams("out".into(), ""), "out");
        assert_eq!(merge_streams(String::new(), ""), "");
    }
}
