//! The model-facing search tools: `glob` (files by path pattern) and `grep`
//! (file contents by regular expression), in process on ripgrep's library
//! crates (`ignore` for the parallel walk, `grep-regex` and `grep-searcher`
//! for matching and binary detection): no `rg` binary needed.
//!
//! Start at [`SearchTools`] (a kernel plugin registering both) or build the
//! tools one by one with [`glob_tool`] and [`grep_tool`]. Both take the
//! session's working directory as `root`; a relative `path` argument
//! resolves against it.
//!
//! Both walk like ripgrep: `.gitignore` (also outside a git repository),
//! `.ignore`, `.git/info/exclude` and the global git excludes are honoured,
//! hidden files are included, symlinks are not followed, `.git` is never
//! entered.
//!
//! **Paths shown.** A found path is shown as the `path` argument was given:
//! relative to the working directory when `path` is relative or absent
//! (`src/lib.rs` for `path: "src"`; `./` components dropped), absolute when
//! `path` is absolute. Non-UTF-8 names are shown lossily.
//!
//! **Notes.** After the result lines, in this order and each on a line of
//! its own: the cap note (`(N more not shown)` for glob,
//! `(results truncated at 250 matches)` for grep), `(N paths could not be
//! read)` when directories or files were skipped because they could not be
//! read, for grep `(N file(s) searched only up to a line longer than
//! 8 MiB)` when a file's line outgrew the line buffer
//! ([`GREP_LINE_BUFFER_BYTES`]), and `(search stopped after 30 s; results
//! are partial)` when the time budget ran out.
//!
//! **Only regular files are opened**, without blocking: a `path` that is a
//! fifo, socket or device is `FS_NOT_A_FILE`, and the walk skips them.

#![warn(missing_docs)]

mod glob;
mod grep;
mod walk;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dsh_kernel::{DshError, Registration};
use dsh_llm::ContentBlock;
use dsh_tools::{define_tool, ToolArgs, ToolContext, ToolError, ToolRegistry};
use serde::Deserialize;

/// The most paths `glob` lists; the rest are counted.
pub const MAX_GLOB_PATHS: usize = 100;

/// The most matching lines `grep` shows.
pub const MAX_GREP_MATCHES: usize = 250;

/// The most bytes of a matching line `grep` shows (then `…`).
pub const MAX_GREP_LINE_BYTES: usize = 2000;

/// The most memory `grep` gives one file's line buffer (per search
/// thread): a file is searched streaming, a buffer of lines at a time, so
/// files of any size cost this at most. A file with a longer line is
/// searched up to that line and named in a note.
pub const GREP_LINE_BUFFER_BYTES: usize = 8 << 20;

/// The default time budget of a `grep` call.
pub const GREP_BUDGET: Duration = Duration::from_secs(30);

/// Description of the `glob` tool, as the model sees it.
pub const GLOB_DESCRIPTION: &str = "Find files by path pattern. Returns the files under `path` (default: the working directory) whose path relative to `path` matches the glob `pattern` (`**/*.rs`, `src/*.toml`; `*` does not cross `/`), one per line, newest first, at most 100, then a count of the rest. Files ignored by .gitignore/.ignore and the .git directory are skipped; hidden files are included. Prefer this over `find` or `ls -R` in bash.";

/// Description of the `grep` tool, as the model sees it.
pub const GREP_DESCRIPTION: &str = "Search file contents with a regular expression (Rust regex syntax). Returns `file:line:text` for each matching line, files newest first, at most 250 matches; long lines are cut at 2000 bytes. `path` is a directory or a single file (default: the working directory); `include` filters file names by glob (`*.rs`, `*.{ts,tsx}`). Binary files, files ignored by .gitignore/.ignore and the .git directory are skipped; hidden files are searched. Prefer this over `grep` or `rg` in bash.";

/// Arguments of `glob`.
#[derive(Debug, Deserialize, ToolArgs)]
pub struct GlobArgs {
    /// The glob matched against each file's path relative to `path`: `*`, `?` and `[abc]` stay within one path segment, `**` spans directories, `{a,b}` is either. Examples: `**/*.rs` (all Rust files), `src/*.toml`, `**/test_*.py`.
    #[tool(min_length = 1)]
    pub pattern: String,
    /// The directory to search: absolute, or relative to the working directory (default: the working directory).
    #[serde(default)]
    #[tool(min_length = 1)]
    pub path: Option<String>,
}

/// Arguments of `grep`.
#[derive(Debug, Deserialize, ToolArgs)]
pub struct GrepArgs {
    /// The regular expression (Rust regex syntax, e.g. `fn\s+main`, `TODO|FIXME`); it matches within one line.
    #[tool(min_length = 1)]
    pub pattern: String,
    /// The directory or file to search: absolute, or relative to the working directory (default: the working directory).
    #[serde(default)]
    #[tool(min_length = 1)]
    pub path: Option<String>,
    /// Only search files whose name matches this glob, e.g. `*.rs` or `*.{ts,tsx}` (a glob with `/` is matched against the path relative to `path`).
    #[serde(default)]
    #[tool(min_length = 1)]
    pub include: Option<String>,
}

/// The `glob` tool over the working directory `root`.
///
/// Result: the matching files (see [`GLOB_DESCRIPTION`]), newest first by
/// modification time, ties by path, at most [`MAX_GLOB_PATHS`] lines, then
/// `(N more not shown)`; `No files found` when nothing matches. Errors:
/// `FS_NOT_FOUND` (no such `path`), `FS_NOT_A_DIRECTORY` (`path` is a
/// file), `INVALID_ARGS` (a glob globset rejects, with its message),
/// `ABORTED` (the call was cancelled).
pub fn glob_tool(root: PathBuf) -> Arc<dyn dsh_tools::Tool> {
    let root = Arc::new(root);
    define_tool(
        "glob",
        GLOB_DESCRIPTION,
        move |args: GlobArgs, ctx: ToolContext| {
            let root = root.clone();
            async move {
                let matcher = glob::compile("pattern", &args.pattern)?;
                let target = walk::resolve(&root, args.path.as_deref())?;
                let cancel = ctx.cancel.clone();
                let text =
                    walk::off_runtime("glob", move || glob::run(&target, &matcher, cancel)).await?;
                Ok(vec![ContentBlock::text(text)])
            }
        },
    )
    .concurrency_safe()
    .into_arc()
}

/// The `grep` tool over the working directory `root`, with the default
/// budget of [`GREP_BUDGET`].
///
/// Result: `file:line:text` per matching line (1-based line numbers), the
/// files grouped, newest first by modification time (ties by path), each
/// file's lines in order; at most [`MAX_GREP_MATCHES`] lines (then
/// `(results truncated at 250 matches)`), each line's text cut to
/// [`MAX_GREP_LINE_BYTES`] bytes on a character boundary and marked `…`.
/// `No matches found` when nothing matches. Binary files (a NUL byte) are
/// skipped. When the budget runs out the matches found so far are returned
/// with `(search stopped after N s; results are partial)`. Errors:
/// `FS_NOT_FOUND` (no such `path`), `INVALID_ARGS` (a regex or `include`
/// glob that does not compile, naming the error), `ABORTED`.
pub fn grep_tool(root: PathBuf) -> Arc<dyn dsh_tools::Tool> {
    grep_tool_with_budget(root, GREP_BUDGET)
}

/// [`grep_tool`] with a time budget of `budget` per call (zero: stop at
/// the first entry, returning the partial-results note).
pub fn grep_tool_with_budget(root: PathBuf, budget: Duration) -> Arc<dyn dsh_tools::Tool> {
    let root = Arc::new(root);
    define_tool(
        "grep",
        GREP_DESCRIPTION,
        move |args: GrepArgs, ctx: ToolContext| {
            let root = root.clone();
            async move {
                let matcher = grep::compile(&args.pattern)?;
                let include = args
                    .include
                    .as_deref()
                    .map(grep::Include::new)
                    .transpose()?;
                let target = walk::resolve(&root, args.path.as_deref())?;
                let cancel = ctx.cancel.clone();
                let text = walk::off_runtime("grep", move || {
                    grep::run(&target, &matcher, include.as_ref(), budget, cancel)
                })
                .await?;
                Ok(vec![ContentBlock::text(text)])
            }
        },
    )
    .concurrency_safe()
    .into_arc()
}

/// Registers `glob` and `grep` (in that order) over `root`. Undoing the
/// registration removes both.
///
/// # Errors
/// A tool name is already registered (`DUPLICATE_TOOL`; nothing stays
/// registered then).
pub fn install(registry: &ToolRegistry, root: PathBuf) -> Result<Registration, ToolError> {
    install_only(registry, root, |_| true)
}

/// Registers those of `glob` and `grep` (in that order) whose name `keep`
/// accepts; as [`install`] otherwise.
///
/// # Errors
/// As [`install`].
pub fn install_only(
    registry: &ToolRegistry,
    root: PathBuf,
    keep: impl Fn(&str) -> bool,
) -> Result<Registration, ToolError> {
    let tools = [glob_tool(root.clone()), grep_tool(root)];
    let kept = tools.into_iter().filter(|t| keep(&t.schema().name));
    registry.register_all(kept)
}

/// The search tools plugin: `glob` and `grep` over the working directory
/// `root`, registered in the kernel's [`ToolRegistry`] (see [`install`],
/// which it calls).
pub struct SearchTools {
    /// The session's working directory; relative `path` arguments resolve
    /// against it.
    pub root: PathBuf,
}

impl dsh_kernel::Plugin for SearchTools {
    /// # Errors
    /// `MISSING_SERVICE` without a [`ToolRegistry`]; `DUPLICATE_TOOL`.
    fn install(self, kernel: &dsh_kernel::Kernel) -> Result<Registration, DshError> {
        let registry = kernel.service::<ToolRegistry>().map_err(DshError::from)?;
        install(&registry, self.root).map_err(DshError::from)
    }
}
