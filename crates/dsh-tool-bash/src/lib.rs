//! The model-facing bash tools: `bash`, `bash_output` and `bash_kill`.
//!
//! Start at [`install`]: it registers the three tools (in that order) on a
//! [`ToolRegistry`] over any [`BashExecutor`], and injects a completion notice
//! into the owning agent when a background task finishes. Argument names,
//! descriptions and result texts follow the reference harness exactly
//! (`docs/reference/bash-tools.md` §10): non-zero exits, timeouts and
//! signal deaths are ordinary results with markers, not errors.
//!
//! With a job table ([`install_with_jobs`]) background tasks are `bash-N`
//! jobs: `bash`'s description and the completion notice point at
//! `job_output` and `job_kill`, and `bash_output` / `bash_kill` remain as
//! aliases for old sessions (dsh registers them but does not offer them
//! to the model).
//!
//! The tools know nothing about processes: that is the executor's job.

#![warn(missing_docs)]

mod render;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use dsh_bash::{BashError, BashExecutor, BashRequest, TaskInfo};
use dsh_kernel::sync::lock;
use dsh_kernel::Registration;
use dsh_kernel::{DshError, ErrorCode};
use dsh_llm::{ContentBlock, MessageSource};
use dsh_protocol::codes;
use dsh_tools::{
    approved_escalation, define_tool, ContextSink, ToolArgs, ToolContext, ToolError, ToolRegistry,
};
use serde::{Deserialize, Serialize};

pub use render::{render_run_result, render_task_read, DETACHED_NOTE};

/// The plugin name on completion notices (`<context source="plugin">`).
pub const PLUGIN_NAME: &str = "tool-bash";

/// Description of the `bash` tool, as the model sees it when background
/// tasks are jobs (see [`install_with_jobs`]): they are read and stopped
/// with the job tools.
pub const BASH_DESCRIPTION: &str = "Run a bash command with `bash -c` and return its stdout and stderr. Each call is a fresh, non-interactive shell: no working directory, variables or functions persist between calls, so pass `workdir` instead of using `cd`. A non-zero exit status is reported as `[exit code: N]`; check it. Long output is cut to its tail and the full output is saved to a file whose path is reported. With `run_in_background: true` the call returns a task id at once; read its output with `job_output` and stop it with `job_kill`.";

/// Description of the `bash` tool without a job table ([`install`]):
/// background tasks are read and stopped with `bash_output` and
/// `bash_kill`.
pub const BASH_DESCRIPTION_WITHOUT_JOBS: &str = "Run a bash command with `bash -c` and return its stdout and stderr. Each call is a fresh, non-interactive shell: no working directory, variables or functions persist between calls, so pass `workdir` instead of using `cd`. A non-zero exit status is reported as `[exit code: N]`; check it. Long output is cut to its tail and the full output is saved to a file whose path is reported. With `run_in_background: true` the call returns a task id at once; poll it with `bash_output` and stop it with `bash_kill`.";

/// Description of the `bash_output` tool.
pub const BASH_OUTPUT_DESCRIPTION: &str = "Read new output of a background task started by `bash` with `run_in_background: true`. Returns only the output produced since the previous `bash_output` call for that task, followed by the task status. The task keeps running; poll again later.";

/// Description of the `bash_kill` tool.
pub const BASH_KILL_DESCRIPTION: &str =
    "Kill a running background task by its id (SIGTERM, then SIGKILL after a grace period).";

pub use dsh_tools::SandboxPermissions;

/// Arguments of `bash`.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
#[tool(together("sandbox_permissions", "justification"))]
pub struct BashArgs {
    /// The bash command to run.
    #[tool(min_length = 1)]
    pub command: String,
    /// A short (5-10 words), active-voice description of what the command does, shown to the user. Examples: "ls" → "List files in current directory"; "git status" → "Show working tree status".
    #[tool(min_length = 1)]
    pub description: String,
    /// Timeout in milliseconds (default 120000, max 600000). The command is killed when it expires.
    #[serde(rename = "timeoutMs", default)]
    #[tool(exclusive_minimum = 0)]
    pub timeout_ms: Option<f64>,
    /// Working directory for this call (default: the session's working directory).
    #[serde(default)]
    pub workdir: Option<String>,
    /// Run in the background and return a task id immediately; no timeout applies.
    #[serde(default)]
    pub run_in_background: Option<bool>,
    /// Only after the sandbox denied this command: run it once under this wider mode. The user is asked to approve; give `justification` too.
    #[serde(default)]
    pub sandbox_permissions: Option<SandboxPermissions>,
    /// Why the command needs the wider mode, shown to the user who approves it.
    #[serde(default)]
    #[tool(min_length = 1)]
    pub justification: Option<String>,
}

/// Arguments of `bash_output` and `bash_kill`.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
pub struct TaskIdArgs {
    /// The task id returned by the bash tool.
    #[tool(min_length = 1)]
    pub task_id: String,
}

/// Remembers which agent (as its [`ContextSink`]) started which background
/// task.
///
/// The owner is known only once `start` has returned the task id, but a fast
/// command can complete (and its listener run) before that. So while a start
/// with an owner is in flight, the listener parks completions it has no owner
/// for in `early`, and the starting call claims its own from there; the park
/// is emptied whenever no such start is in flight, so it stays bounded.
#[derive(Default)]
struct Owners {
    state: Mutex<OwnersState>,
}

#[derive(Default)]
struct OwnersState {
    /// Running tasks by id → the agent that started them.
    by_task: HashMap<String, Weak<dyn ContextSink>>,
    /// Starts with an owner that have not recorded it yet.
    starting: usize,
    /// Completions seen while `starting > 0` with no recorded owner.
    early: HashMap<String, TaskInfo>,
}

impl Owners {
    fn lock(&self) -> std::sync::MutexGuard<'_, OwnersState> {
        lock(&self.state)
    }

    /// Called before starting a task owned by an agent.
    fn begin_start(&self) {
        self.lock().starting += 1;
    }

    /// Called after that start: records the owner of `started` (if it
    /// succeeded) or, if the task already completed, returns its final
    /// snapshot so the caller delivers the notice itself.
    fn finish_start(&self, started: Option<(&str, &Arc<dyn ContextSink>)>) -> Option<TaskInfo> {
        let mut state = self.lock();
        state.starting -= 1;
        let early = match started {
            Some((id, agent)) => match state.early.remove(id) {
                Some(done) => Some(done),
                None => {
                    state.by_task.insert(id.to_string(), Arc::downgrade(agent));
                    None
                }
            },
            None => None,
        };
        if state.starting == 0 {
            // Parked completions of tasks nobody is about to claim.
            state.early.clear();
        }
        early
    }

    /// Called on completion: the owner to notify, if one is recorded.
    fn complete(&self, task: &TaskInfo) -> Option<Weak<dyn ContextSink>> {
        let mut state = self.lock();
        let owner = state.by_task.remove(&task.id);
        if owner.is_none() && state.starting > 0 {
            state.early.insert(task.id.clone(), task.clone());
        }
        owner
    }
}

/// Injects the completion notice of `task` into `agent`; a disposed agent is
/// skipped (`AGENT_DISPOSED` is the one failure expected here: the agent went
/// away while its task ran, and nobody is left to tell).
fn notify(agent: &dyn ContextSink, task: &TaskInfo, jobs: bool) -> Result<(), DshError> {
    match agent.deliver_notice(
        vec![ContentBlock::text(completion_notice(task, jobs))],
        MessageSource::plugin(PLUGIN_NAME),
    ) {
        Err(e) if e.code() != codes::AGENT_DISPOSED => Err(e),
        _ => Ok(()),
    }
}

/// The bash tools plugin: `bash`, `bash_output` and `bash_kill` on
/// `executor`, registered in the kernel's [`ToolRegistry`] (see [`install`],
/// which it calls).
pub struct BashTools {
    /// Runs the commands.
    pub executor: Arc<dyn BashExecutor>,
}

impl dsh_kernel::Plugin for BashTools {
    /// # Errors
    /// `MISSING_SERVICE` without a [`ToolRegistry`]; `DUPLICATE_TOOL`.
    fn install(self, kernel: &dsh_kernel::Kernel) -> Result<Registration, DshError> {
        let registry = kernel.service::<ToolRegistry>().map_err(DshError::from)?;
        install(&registry, self.executor).map_err(DshError::from)
    }
}

/// Registers `bash`, `bash_output`, `bash_kill` and the completion-notice
/// listener. Undoing the registration removes all of them.
///
/// # Errors
/// A tool name is already registered (nothing stays registered then).
pub fn install(
    registry: &ToolRegistry,
    executor: Arc<dyn BashExecutor>,
) -> Result<Registration, ToolError> {
    install_only(registry, executor, |_| true)
}

/// [`install`] of the tools whose name `keep` accepts (`bash`,
/// `bash_output`, `bash_kill`), in that order; the completion notices are
/// wired whenever `bash` is kept.
///
/// # Errors
/// As [`install`].
pub fn install_only(
    registry: &ToolRegistry,
    executor: Arc<dyn BashExecutor>,
    keep: impl Fn(&str) -> bool,
) -> Result<Registration, ToolError> {
    install_with_jobs(registry, executor, None, keep)
}

/// [`install_only`] with background tasks as jobs of `jobs` too: a
/// background start reserves a place for the calling agent first (at most
/// [`dsh_jobs::MAX_RUNNING_PER_OWNER`] running, else `TOO_MANY_JOBS`), and
/// `job_output` / `job_list` / `job_kill` see the tasks as `bash-N` jobs of
/// the agent that started them.
///
/// # Errors
/// As [`install`].
pub fn install_with_jobs(
    registry: &ToolRegistry,
    executor: Arc<dyn BashExecutor>,
    jobs: Option<Arc<dsh_jobs::JobTable>>,
    keep: impl Fn(&str) -> bool,
) -> Result<Registration, ToolError> {
    let owners = Arc::new(Owners::default());
    let with_jobs = jobs.is_some();
    let mut regs = Vec::new();
    if let Some(jobs) = &jobs {
        regs.push(jobs.add_source(
            "bash",
            Arc::new(BashJobs {
                executor: executor.clone(),
            }),
        ));
    }
    let tools = [
        bash_tool(executor.clone(), owners.clone(), jobs),
        bash_output_tool(executor.clone()),
        bash_kill_tool(executor.clone()),
    ];
    let kept = tools.into_iter().filter(|t| keep(&t.schema().name));
    match registry.register_all(kept) {
        Ok(r) => regs.push(r),
        Err(e) => {
            Registration::merge(regs).undo();
            return Err(e);
        }
    }
    regs.push(executor.on_task_done().try_on(move |task: &TaskInfo| {
        let Some(agent) = owners.complete(task).and_then(|w| w.upgrade()) else {
            return Ok(());
        };
        notify(agent.as_ref(), task, with_jobs).map_err(Into::into)
    }));
    Ok(Registration::merge(regs))
}

/// `background bash task <id> finished <status line>. Read its output with
/// job_output.` (`bash_output` without a job table: `jobs` false).
pub fn completion_notice(task: &TaskInfo, jobs: bool) -> String {
    format!(
        "background bash task {} finished {}. Read its output with {}.",
        task.id,
        dsh_bash::status_line(task),
        if jobs { "job_output" } else { "bash_output" }
    )
}

fn bash_error(e: BashError) -> ToolError {
    ToolError::new(e.code().to_string(), e.to_string())
}

/// Background bash tasks as jobs: `job_output` reads what `bash_output`
/// does, `job_kill` kills as `bash_kill` does.
struct BashJobs {
    executor: Arc<dyn BashExecutor>,
}

impl dsh_jobs::JobSource for BashJobs {
    fn info(&self, id: &str) -> Option<dsh_jobs::JobInfo> {
        self.executor.get(id).map(|task| dsh_jobs::JobInfo {
            running: task.status == dsh_bash::TaskStatus::Running,
            status: dsh_bash::status_line(&task),
            title: task.command.clone(),
            id: task.id,
        })
    }

    fn read(&self, id: &str) -> Result<String, ToolError> {
        let read = self.executor.read_output(id).map_err(bash_error)?;
        Ok(render_task_read(&read))
    }

    fn wait(&self, id: &str) -> dsh_kernel::BoxFuture<'static, ()> {
        let executor = self.executor.clone();
        let id = id.to_string();
        Box::pin(async move {
            let _ = executor.wait(&id).await;
        })
    }

    fn kill(
        &self,
        id: &str,
        _reason: Option<&str>,
    ) -> dsh_kernel::BoxFuture<'static, Result<String, ToolError>> {
        let killed = self.executor.kill(id).map_err(bash_error);
        let id = id.to_string();
        Box::pin(std::future::ready(killed.map(|killed| {
            if killed {
                format!("killed background task {id}")
            } else {
                format!("task {id} had already finished")
            }
        })))
    }
}

fn bash_tool(
    executor: Arc<dyn BashExecutor>,
    owners: Arc<Owners>,
    jobs: Option<Arc<dsh_jobs::JobTable>>,
) -> Arc<dyn dsh_tools::Tool> {
    let description = if jobs.is_some() {
        BASH_DESCRIPTION
    } else {
        BASH_DESCRIPTION_WITHOUT_JOBS
    };
    define_tool(
        "bash",
        description,
        move |args: BashArgs, ctx: ToolContext| {
            let executor = executor.clone();
            let owners = owners.clone();
            let jobs = jobs.clone();
            async move {
                // The argument type checked everything (lengths, timeoutMs > 0)
                // before this body runs.
                let mut req = BashRequest::new(args.command).with_cancel(ctx.cancel.clone());
                if let Some(t) = args.timeout_ms {
                    // Fractional milliseconds round up.
                    req = req.with_timeout_ms(t.ceil() as u64);
                }
                if let Some(w) = args.workdir {
                    req = req.with_workdir(w);
                }
                if let Some(wider) = approved_escalation(&ctx, args.sandbox_permissions)? {
                    req = req.with_sandbox(wider);
                }
                let spec = executor.resolve(req);
                if args.run_in_background == Some(true) {
                    let slot = match &jobs {
                        Some(jobs) => Some(jobs.reserve(&dsh_jobs::owner_of(&ctx))?),
                        None => None,
                    };
                    let adopt = |task: &TaskInfo| {
                        if let Some(slot) = slot {
                            slot.adopt(&task.id);
                        }
                    };
                    let Some(agent) = ctx.sink() else {
                        let task = executor.start(spec).map_err(bash_error)?;
                        adopt(&task);
                        return Ok(vec![ContentBlock::text(format!(
                            "started background task {}",
                            task.id
                        ))]);
                    };
                    owners.begin_start();
                    let started = executor.start(spec);
                    if let Ok(task) = &started {
                        adopt(task);
                    }
                    let early = owners
                        .finish_start(started.as_ref().ok().map(|task| (task.id.as_str(), agent)));
                    let task = started.map_err(bash_error)?;
                    if let Some(done) = early {
                        // The task completed before its owner was recorded;
                        // deliver the notice the listener could not.
                        if let Err(e) = notify(agent.as_ref(), &done, jobs.is_some()) {
                            tracing::warn!(task = %done.id, "bash completion notice failed: {e}");
                        }
                    }
                    return Ok(vec![ContentBlock::text(format!(
                        "started background task {}",
                        task.id
                    ))]);
                }
                let result = executor.run(spec).await.map_err(bash_error)?;
                if result.aborted {
                    return Err(ToolError::new(codes::ABORTED, "command aborted"));
                }
                Ok(vec![ContentBlock::text(render_run_result(&result))])
            }
        },
    )
    .into_arc()
}

fn bash_output_tool(executor: Arc<dyn BashExecutor>) -> Arc<dyn dsh_tools::Tool> {
    define_tool(
        "bash_output",
        BASH_OUTPUT_DESCRIPTION,
        move |args: TaskIdArgs, _ctx: ToolContext| {
            let executor = executor.clone();
            async move {
                let read = executor.read_output(&args.task_id).map_err(bash_error)?;
                Ok(vec![ContentBlock::text(render_task_read(&read))])
            }
        },
    )
    .into_arc()
}

fn bash_kill_tool(executor: Arc<dyn BashExecutor>) -> Arc<dyn dsh_tools::Tool> {
    define_tool(
        "bash_kill",
        BASH_KILL_DESCRIPTION,
        move |args: TaskIdArgs, _ctx: ToolContext| {
            let executor = executor.clone();
            async move {
                let killed = executor.kill(&args.task_id).map_err(bash_error)?;
                let text = if killed {
                    format!("killed background task {}", args.task_id)
                } else {
                    format!("task {} had already finished", args.task_id)
                };
                Ok(vec![ContentBlock::text(text)])
            }
        },
    )
    .into_arc()
}
