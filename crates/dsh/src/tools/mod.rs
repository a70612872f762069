//! The built-in tools, one per file. [`BuiltinTools`] registers them all.
//!
//! To add a tool: write `src/tools/<name>.rs` with its argument type
//! (`#[derive(ToolArgs)]`) and a function returning the tool (or a struct
//! implementing [`dsh_tools::ArgsTool`]), add it to the list below, and pin
//! its schema with a drift test. `docs/adding-a-tool.md` walks through it.

mod bash;
mod echo;

use std::sync::Arc;

use dsh_bash::BashExecutor;
use dsh_kernel::{DshError, Kernel, Plugin, Registration};
use dsh_tools::ToolRegistry;

pub use echo::{echo_tool, EchoArgs};

/// The built-in tools plugin: `echo`, then the bash family (`bash`,
/// `bash_output`, `bash_kill`) running on `executor`, then the file tools
/// (`read`, `write`, `edit`) for `root`, registered in the kernel's
/// [`ToolRegistry`]. Undoing the registration removes them all.
pub struct BuiltinTools {
    /// Runs the bash tools' commands.
    pub executor: Arc<dyn BashExecutor>,
    /// The working directory the file tools resolve relative paths against.
    pub root: std::path::PathBuf,
}

impl Plugin for BuiltinTools {
    /// # Errors
    /// `MISSING_SERVICE` without a registry; `DUPLICATE_TOOL` when a name is
    /// taken (nothing stays registered then).
    fn install(self, kernel: &Kernel) -> Result<Registration, DshError> {
        let registry = kernel.service::<ToolRegistry>()?;
        let echo = registry.register(echo_tool())?;
        let bash = match bash::install(&registry, self.executor) {
            Ok(bash) => bash,
            Err(e) => {
                echo.undo();
                return Err(e);
            }
        };
        match dsh_tool_fs::install(&registry, self.root) {
            Ok(fs) => Ok(Registration::merge(vec![echo, bash, fs])),
            Err(e) => {
                Registration::merge(vec![echo, bash]).undo();
                Err(e.into())
            }
        }
    }
}
