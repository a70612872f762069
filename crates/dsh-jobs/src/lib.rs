//! An agent's background jobs behind one id space, and the tools over them.
//!
//! Start at [`JobTable`]: a kernel service recording which agent owns which
//! job. Each kind of job plugs in a [`JobSource`] under its id prefix
//! (`bash` for background bash tasks `bash-N`, `agent` for background
//! sub-agents `agent-N`); whoever starts a job reserves a place first
//! ([`JobTable::reserve`], at most [`MAX_RUNNING_PER_OWNER`] running jobs per
//! owner) and adopts the id once it has one ([`Reservation::adopt`]).
//! [`install`] registers the tools `job_output`, `job_list` and `job_kill`,
//! which answer only about the calling agent's own jobs.

#![warn(missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_agent::Agent;
use dsh_kernel::sync::lock;
use dsh_kernel::{BoxFuture, Registration};
use dsh_llm::ContentBlock;
use dsh_protocol::codes;
use dsh_tools::{define_tool, ToolArgs, ToolContext, ToolError, ToolRegistry};
use serde::{Deserialize, Serialize};

/// At most this many jobs of one owner run at once.
pub const MAX_RUNNING_PER_OWNER: usize = 10;

/// Default of `job_output`'s `timeout_ms` with `wait: true`: 30 s.
pub const DEFAULT_WAIT_MS: u64 = 30_000;

/// Largest `timeout_ms` of `job_output`: 10 minutes.
pub const MAX_WAIT_MS: u64 = 600_000;

/// What a job is right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// `<kind>-N`.
    pub id: String,
    /// What it does: the command, the sub-agent's description.
    pub title: String,
    /// Whether it still runs.
    pub running: bool,
    /// One line: `running`, `completed (exit code 0)`, `failed: …`.
    pub status: String,
}

/// One kind of job (background bash tasks, background sub-agents).
pub trait JobSource: Send + Sync + 'static {
    /// The job's state; `None` when the source does not know `id`.
    fn info(&self, id: &str) -> Option<JobInfo>;

    /// What `job_output` returns: the output since the previous read and
    /// the status.
    ///
    /// # Errors
    /// The source cannot read the job (it is gone): a tool error.
    fn read(&self, id: &str) -> Result<String, ToolError>;

    /// Resolves once the job has ended (at once when it already has, or is
    /// unknown).
    fn wait(&self, id: &str) -> BoxFuture<'static, ()>;

    /// Stops the job; resolves to what `job_kill` returns.
    fn kill(&self, id: &str, reason: Option<&str>)
        -> BoxFuture<'static, Result<String, ToolError>>;
}

/// Who owns which job, and the sources that run them. Cheap to share; a
/// kernel service.
#[derive(Default)]
pub struct JobTable {
    inner: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// Sources by id prefix (`bash`, `agent`).
    sources: Vec<(String, Arc<dyn JobSource>)>,
    /// Adopted jobs in start order: (job id, owner).
    jobs: Vec<(String, String)>,
    /// Places reserved but not yet adopted, by owner.
    reserved: HashMap<String, usize>,
}

impl std::fmt::Debug for JobTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = lock(&self.inner);
        f.debug_struct("JobTable")
            .field("jobs", &st.jobs.len())
            .finish()
    }
}

impl JobTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves the jobs whose ids start with `<prefix>-` from `source`; undo
    /// removes it (its jobs then read as unknown).
    pub fn add_source(&self, prefix: &str, source: Arc<dyn JobSource>) -> Registration {
        let prefix = prefix.to_string();
        lock(&self.inner)
            .sources
            .push((prefix.clone(), source.clone()));
        let inner = Arc::downgrade(&self.inner);
        Registration::new(move || {
            if let Some(inner) = inner.upgrade() {
                lock(&inner)
                    .sources
                    .retain(|(p, s)| !(p == &prefix && Arc::ptr_eq(s, &source)));
            }
        })
    }

    /// Reserves a place for a new job of `owner`.
    ///
    /// # Errors
    /// `TOO_MANY_JOBS` when `owner` already runs (or is starting)
    /// [`MAX_RUNNING_PER_OWNER`] jobs.
    pub fn reserve(&self, owner: &str) -> Result<Reservation, ToolError> {
        let running = self.running_of(owner);
        let mut st = lock(&self.inner);
        let reserved = st.reserved.get(owner).copied().unwrap_or(0);
        if running + reserved >= MAX_RUNNING_PER_OWNER {
            return Err(ToolError::new(
                codes::TOO_MANY_JOBS,
                format!(
                    "too many background jobs: {running} are running (at most {MAX_RUNNING_PER_OWNER}); wait for one with job_output or stop one with job_kill"
                ),
            ));
        }
        *st.reserved.entry(owner.to_string()).or_default() += 1;
        Ok(Reservation {
            table: self.inner.clone(),
            owner: owner.to_string(),
            done: false,
        })
    }

    /// The jobs of `owner` in start order.
    pub fn jobs_of(&self, owner: &str) -> Vec<JobInfo> {
        let (jobs, sources) = {
            let st = lock(&self.inner);
            let jobs: Vec<String> = st
                .jobs
                .iter()
                .filter(|(_, o)| o == owner)
                .map(|(id, _)| id.clone())
                .collect();
            (jobs, st.sources.clone())
        };
        jobs.iter()
            .filter_map(|id| source_in(&sources, id).and_then(|s| s.info(id)))
            .collect()
    }

    /// The owner of job `id`, when it is adopted.
    pub fn owner_of(&self, id: &str) -> Option<String> {
        lock(&self.inner)
            .jobs
            .iter()
            .find(|(j, _)| j == id)
            .map(|(_, o)| o.clone())
    }

    fn running_of(&self, owner: &str) -> usize {
        self.jobs_of(owner).iter().filter(|j| j.running).count()
    }

    /// The source of `owner`'s job `id`.
    ///
    /// # Errors
    /// `UNKNOWN_JOB` when `id` is not one of `owner`'s jobs, listing them.
    pub fn source(&self, owner: &str, id: &str) -> Result<Arc<dyn JobSource>, ToolError> {
        let found = {
            let st = lock(&self.inner);
            st.jobs
                .iter()
                .any(|(j, o)| j == id && o == owner)
                .then(|| source_in(&st.sources, id))
                .flatten()
        };
        found.ok_or_else(|| {
            let ids: Vec<String> = self.jobs_of(owner).into_iter().map(|j| j.id).collect();
            let known = if ids.is_empty() {
                "you have no jobs".to_string()
            } else {
                format!("your jobs: {}", ids.join(", "))
            };
            ToolError::new(codes::UNKNOWN_JOB, format!("no job \"{id}\"; {known}"))
        })
    }
}

fn source_in(sources: &[(String, Arc<dyn JobSource>)], id: &str) -> Option<Arc<dyn JobSource>> {
    let (prefix, _) = id.rsplit_once('-')?;
    sources
        .iter()
        .rev()
        .find(|(p, _)| p == prefix)
        .map(|(_, s)| s.clone())
}

/// A place for one job of an owner, from [`JobTable::reserve`]. Adopt the
/// job's id once it started; dropping it unused frees the place.
#[must_use = "adopt the job's id, or drop the reservation when the start failed"]
pub struct Reservation {
    table: Arc<Mutex<State>>,
    owner: String,
    done: bool,
}

impl Reservation {
    /// Records `id` as the owner's job; the place now counts while the job
    /// runs.
    pub fn adopt(mut self, id: &str) {
        let mut st = lock(&self.table);
        release(&mut st, &self.owner);
        st.jobs.push((id.to_string(), self.owner.clone()));
        self.done = true;
    }
}

fn release(st: &mut State, owner: &str) {
    if let Some(n) = st.reserved.get_mut(owner) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            st.reserved.remove(owner);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.done {
            release(&mut lock(&self.table), &self.owner);
        }
    }
}

/// The owner of a call: its agent's id (`""` for a call outside an agent).
pub fn owner_of(ctx: &ToolContext) -> String {
    ctx.get::<Arc<dyn Agent>>()
        .map(|a| a.id().to_string())
        .unwrap_or_default()
}

/// Arguments of `job_output`.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
pub struct JobOutputArgs {
    /// The job id (`bash-N`, `agent-N`).
    #[tool(min_length = 1)]
    pub job_id: String,
    /// Block until the job ends or `timeout_ms` passes.
    #[serde(default)]
    pub wait: Option<bool>,
    /// With `wait`: the longest wait in milliseconds (default 30000, at most 600000).
    #[serde(default)]
    #[tool(exclusive_minimum = 0, maximum = 600000)]
    pub timeout_ms: Option<f64>,
}

/// Arguments of `job_list`.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
pub struct JobListArgs {}

/// Arguments of `job_kill`.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
pub struct JobKillArgs {
    /// The job id (`bash-N`, `agent-N`).
    #[tool(min_length = 1)]
    pub job_id: String,
    /// Why it is stopped (kept with the job's status).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Description of `job_output`.
pub const JOB_OUTPUT_DESCRIPTION: &str = "Read a background job's new output and status (a bash task started with run_in_background, a background subagent). Returns only what is new since the previous read. With wait: true, blocks until the job ends or timeout_ms passes (default 30000, at most 600000).";

/// Description of `job_list`.
pub const JOB_LIST_DESCRIPTION: &str =
    "List your background jobs (bash tasks and subagents) with their status.";

/// Description of `job_kill`.
pub const JOB_KILL_DESCRIPTION: &str = "Stop one of your background jobs by its id.";

/// Registers `job_output`, `job_list` and `job_kill` (those `keep`
/// accepts) over `table`. Undo removes them.
///
/// # Errors
/// A name is already registered (nothing stays registered then).
pub fn install(
    registry: &ToolRegistry,
    table: Arc<JobTable>,
    keep: impl Fn(&str) -> bool,
) -> Result<Registration, ToolError> {
    let tools = [
        job_output_tool(table.clone()),
        job_list_tool(table.clone()),
        job_kill_tool(table),
    ];
    registry.register_all(tools.into_iter().filter(|t| keep(&t.schema().name)))
}

fn job_output_tool(table: Arc<JobTable>) -> Arc<dyn dsh_tools::Tool> {
    define_tool(
        "job_output",
        JOB_OUTPUT_DESCRIPTION,
        move |args: JobOutputArgs, ctx: ToolContext| {
            let table = table.clone();
            async move {
                let source = table.source(&owner_of(&ctx), &args.job_id)?;
                if args.wait == Some(true) {
                    // Fractional milliseconds round up; validation bounds it.
                    let ms = args
                        .timeout_ms
                        .map_or(DEFAULT_WAIT_MS, |t| (t.ceil() as u64).min(MAX_WAIT_MS));
                    tokio::select! {
                        () = source.wait(&args.job_id) => {}
                        _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
                        () = ctx.cancel.cancelled() => {
                            return Err(ToolError::aborted("job_output was aborted while waiting"));
                        }
                    }
                }
                Ok(vec![ContentBlock::text(source.read(&args.job_id)?)])
            }
        },
    )
    .concurrency_safe()
    .into_arc()
}

fn job_list_tool(table: Arc<JobTable>) -> Arc<dyn dsh_tools::Tool> {
    define_tool(
        "job_list",
        JOB_LIST_DESCRIPTION,
        move |_: JobListArgs, ctx: ToolContext| {
            let table = table.clone();
            async move {
                let mut jobs = table.jobs_of(&owner_of(&ctx));
                // Running first; start order otherwise.
                jobs.sort_by_key(|j| !j.running);
                let text = if jobs.is_empty() {
                    "no background jobs".to_string()
                } else {
                    jobs.iter()
                        .map(|j| format!("{}\t{}\t{}", j.id, j.status, j.title))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                Ok(vec![ContentBlock::text(text)])
            }
        },
    )
    .concurrency_safe()
    .into_arc()
}

fn job_kill_tool(table: Arc<JobTable>) -> Arc<dyn dsh_tools::Tool> {
    define_tool(
        "job_kill",
        JOB_KILL_DESCRIPTION,
        move |args: JobKillArgs, ctx: ToolContext| {
            let table = table.clone();
            async move {
                let source = table.source(&owner_of(&ctx), &args.job_id)?;
                let text = source.kill(&args.job_id, args.reason.as_deref()).await?;
                Ok(vec![ContentBlock::text(text)])
            }
        },
    )
    .into_arc()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_tools::ErrorCode;

    #[test]
    fn job_args_do_not_drift() {
        dsh_tools::testing::assert_no_drift::<JobOutputArgs>(256);
        dsh_tools::testing::assert_no_drift::<JobKillArgs>(256);
        dsh_tools::testing::assert_no_drift::<JobListArgs>(64);
    }

    /// A source of jobs that run until finished by the test.
    #[derive(Default)]
    struct Fake(Mutex<HashMap<String, bool>>);

    impl JobSource for Fake {
        fn info(&self, id: &str) -> Option<JobInfo> {
            lock(&self.0).get(id).map(|running| JobInfo {
                id: id.to_string(),
                title: "t".into(),
                running: *running,
                status: if *running { "running" } else { "done" }.into(),
            })
        }
        fn read(&self, id: &str) -> Result<String, ToolError> {
            Ok(format!("read {id}"))
        }
        fn wait(&self, _id: &str) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
        fn kill(&self, id: &str, _: Option<&str>) -> BoxFuture<'static, Result<String, ToolError>> {
            lock(&self.0).insert(id.to_string(), false);
            Box::pin(std::future::ready(Ok("killed".to_string())))
        }
    }

    #[test]
    fn jobs_belong_to_their_owner_and_at_most_ten_run_at_once() {
        let table = JobTable::new();
        let fake = Arc::new(Fake::default());
        let _source = table.add_source("fake", fake.clone());
        for i in 0..MAX_RUNNING_PER_OWNER {
            let id = format!("fake-{i}");
            lock(&fake.0).insert(id.clone(), true);
            table.reserve("a").unwrap().adopt(&id);
        }
        let e = table.reserve("a").err().unwrap();
        assert_eq!(e.code(), codes::TOO_MANY_JOBS);
        // Another owner is not limited by a's jobs.
        drop(table.reserve("b").unwrap());
        // A finished job frees its place; an unused reservation frees its own.
        lock(&fake.0).insert("fake-0".into(), false);
        let r = table.reserve("a").unwrap();
        assert!(
            table.reserve("a").is_err(),
            "the reservation holds the place"
        );
        drop(r);
        assert!(table.reserve("a").is_ok());

        assert!(table.source("a", "fake-3").is_ok());
        let e = table.source("b", "fake-3").err().unwrap();
        assert_eq!(e.code(), codes::UNKNOWN_JOB);
        assert_eq!(e.message(), "no job \"fake-3\"; you have no jobs");
        let e = table.source("a", "fake-99").err().unwrap();
        assert!(
            e.message()
                .starts_with("no job \"fake-99\"; your jobs: fake-0, fake-1"),
            "{}",
            e.message()
        );
        assert_eq!(table.jobs_of("a").len(), MAX_RUNNING_PER_OWNER);
        assert_eq!(table.owner_of("fake-2").as_deref(), Some("a"));
    }
}
