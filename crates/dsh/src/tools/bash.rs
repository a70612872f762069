//! `bash`, `bash_output`, `bash_kill`: the shell tools of `dsh-tool-bash`
//! on the configured executor.

use std::sync::Arc;

use dsh_bash::BashExecutor;
use dsh_kernel::{DshError, Registration};
use dsh_tools::ToolRegistry;

/// Registers the bash tool family on `executor`, its background tasks
/// jobs of `jobs`.
///
/// # Errors
/// `DUPLICATE_TOOL` when one of the names is taken.
pub(super) fn install(
    registry: &ToolRegistry,
    executor: Arc<dyn BashExecutor>,
    jobs: Arc<dsh_jobs::JobTable>,
    keep: impl Fn(&str) -> bool,
) -> Result<Registration, DshError> {
    dsh_tool_bash::install_with_jobs(registry, executor, Some(jobs), keep).map_err(DshError::from)
}
