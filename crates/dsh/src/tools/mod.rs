//! The built-in tools, one per file. [`BuiltinTools`] registers them all.
//!
//! To add a tool: write `src/tools/<name>.rs` with its argument type
//! (`#[derive(ToolArgs)]`) and a function returning the tool (or a struct
//! implementing [`dsh_tools::ArgsTool`]), add it to the list below, and pin
//! its schema with a drift test. `docs/adding-a-tool.md` walks through it.

pub mod ask_user;
mod bash;
pub mod detached;
mod echo;
pub mod exit_plan_mode;
mod skill;
pub mod todo;
pub mod web;

use std::sync::Arc;

use dsh_bash::BashExecutor;
use dsh_kernel::{DshError, Kernel, Plugin, Registration};
use dsh_tools::ToolRegistry;

pub use echo::{echo_tool, EchoArgs};
pub use exit_plan_mode::{exit_plan_mode_tool, ExitPlanModeArgs};
pub use skill::{skill_tool, SkillArgs, SKILL_DESCRIPTION};
pub use todo::{todo_write_tool, TodoItem, TodoStatus, TodoWriteArgs};

/// The names of the built-in tools, in registration order (what `tools`
/// in dsh.toml and `--tools` may select from).
pub const BUILTIN_TOOLS: &[&str] = &[
    "echo",
    "bash",
    "bash_output",
    "bash_kill",
    "job_output",
    "job_list",
    "job_kill",
    "subagent",
    "subagent_fork",
    "read",
    "write",
    "edit",
    "glob",
    "grep",
    "todo_write",
    "exit_plan_mode",
    "ask_user",
    "str_replace_editor",
    "skill",
    "web_fetch",
    "web_search",
];

/// Built-in tools that stay callable but are never offered to the model
/// (left out of every request's tool list and of `dsh tools list`):
/// `bash_output` and `bash_kill`, the old names of `job_output` and
/// `job_kill`, kept so that sessions logged with them still run.
pub const HIDDEN_TOOLS: &[&str] = &["bash_output", "bash_kill"];

/// Whether the tool `name` is offered to the model (all but the
/// [`HIDDEN_TOOLS`]).
pub fn offered(name: &str) -> bool {
    !HIDDEN_TOOLS.contains(&name)
}

/// Built-in tools offered only when selected by name (`tools` in dsh.toml
/// or `--tools`): the SWE-bench editor, for benchmark set-ups; and
/// `web_fetch` and `web_search`, which `[web]` can turn on too (the stack
/// registers them from [`web::WebSettings`], not [`BuiltinTools`]).
pub const OPT_IN_TOOLS: &[&str] = &["str_replace_editor", "web_fetch", "web_search"];

/// The built-in tools plugin: `echo`, then the bash family (`bash`,
/// `bash_output`, `bash_kill`) running on `executor`, the job tools
/// (`job_output`, `job_list`, `job_kill`) over `jobs`, then the file tools
/// (`read`, `write`, `edit`) and the search tools (`glob`, `grep`) for
/// `root`, then `skill` when there are `skills`, then `todo_write` and
/// `exit_plan_mode` (switching `plan`), registered in the kernel's
/// [`ToolRegistry`].
///
/// Which: those named in `only` when it is set; otherwise all but the
/// [`OPT_IN_TOOLS`], and `echo` only when `offline` (the echo model needs
/// it; a real model gains nothing from it). Undoing the registration
/// removes them all.
pub struct BuiltinTools {
    /// Runs the bash tools' commands.
    pub executor: Arc<dyn BashExecutor>,
    /// The agents' background jobs (bash tasks started here are jobs in it).
    pub jobs: Arc<dsh_jobs::JobTable>,
    /// Where `write`, `edit` and `str_replace_editor` may write.
    pub fence: dsh_tool_fs::Fence,
    /// Where the file tools read and write: the disk, or an editor (see
    /// [`dsh_tool_fs::FileAccess`]).
    pub files: dsh_tool_fs::FileAccess,
    /// The working directory the file tools resolve relative paths against.
    pub root: std::path::PathBuf,
    /// The tools to register (names from [`BUILTIN_TOOLS`]); when `None`,
    /// the default set (see the type's docs).
    pub only: Option<Vec<String>>,
    /// The session runs the offline echo model: the default set includes
    /// `echo`.
    pub offline: bool,
    /// The plan-mode switch `exit_plan_mode` turns off.
    pub plan: Arc<crate::plan::PlanMode>,
    /// Who approves a plan when the call's extensions bring no approver
    /// (the stack's session approver); `None`: nobody.
    pub approver: Option<Arc<dyn dsh_tools::Approver>>,
    /// `todo_write` accepts more than one `in_progress` item (`[todo]
    /// allow_parallel_in_progress`).
    pub allow_parallel_in_progress: bool,
    /// The skills the `skill` tool serves; without any, there is no
    /// `skill` tool.
    pub skills: Vec<crate::prompt::skills::Skill>,
}

/// Whether the built-in set selected by `only` (see [`BuiltinTools::only`])
/// includes `name`; `offline` as [`BuiltinTools::offline`]. (`skill` is
/// registered only when selected *and* there are skills.)
pub fn selected(only: Option<&[String]>, offline: bool, name: &str) -> bool {
    match only {
        Some(o) => o.iter().any(|n| n == name),
        None if name == "echo" => offline,
        None => !OPT_IN_TOOLS.contains(&name),
    }
}

impl Plugin for BuiltinTools {
    /// # Errors
    /// `MISSING_SERVICE` without a registry; `DUPLICATE_TOOL` when a name is
    /// taken (nothing stays registered then).
    fn install(self, kernel: &Kernel) -> Result<Registration, DshError> {
        let registry = kernel.service::<ToolRegistry>()?;
        let (only, offline) = (self.only, self.offline);
        let keep = move |name: &str| selected(only.as_deref(), offline, name);
        let mut regs = Vec::new();
        let each = || -> Result<(), DshError> {
            if keep("echo") {
                regs.push(registry.register(echo_tool())?);
            }
            regs.push(bash::install(
                &registry,
                self.executor,
                self.jobs.clone(),
                &keep,
            )?);
            regs.push(dsh_jobs::install(&registry, self.jobs, &keep)?);
            regs.push(dsh_tool_fs::install_with(
                &registry,
                self.root.clone(),
                &keep,
                self.fence,
                self.files,
            )?);
            regs.push(dsh_tool_search::install_only(&registry, self.root, &keep)?);
            if keep("skill") && !self.skills.is_empty() {
                regs.push(registry.register(skill_tool(self.skills.into()))?);
            }
            if keep("todo_write") {
                regs.push(registry.register(todo_write_tool(self.allow_parallel_in_progress))?);
            }
            if keep("exit_plan_mode") {
                regs.push(registry.register(exit_plan_mode_tool(self.plan, self.approver))?);
            }
            // The hidden aliases are not named to a model that calls an
            // unknown tool either.
            regs.extend(HIDDEN_TOOLS.iter().map(|name| registry.unlist(*name)));
            Ok(())
        };
        let installed = each();
        let all = Registration::merge(regs);
        match installed {
            Ok(()) => Ok(all),
            Err(e) => {
                all.undo();
                Err(e)
            }
        }
    }
}
