//! The `glob` search: a parallel walk collecting the files whose path
//! relative to the search directory matches the pattern, then the newest
//! [`MAX_GLOB_PATHS`](crate::MAX_GLOB_PATHS).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use dsh_kernel::sync::lock;
use dsh_protocol::codes;
use dsh_tools::ToolError;
use globset::{GlobBuilder, GlobMatcher};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};
use tokio_util::sync::CancellationToken;

use crate::walk::{self, Target};
use crate::MAX_GLOB_PATHS;

/// Compiles a glob: `*`, `?` and `[…]` do not cross `/`, `**` matches any
/// number of directories, `{a,b}` alternatives.
///
/// # Errors
/// `INVALID_ARGS` naming `field` and globset's message.
pub(crate) fn compile(field: &str, pattern: &str) -> Result<GlobMatcher, ToolError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::invalid_args(vec![format!("\"{field}\" is not a valid glob: {e}")]))
}

struct Shared {
    found: Mutex<Vec<(SystemTime, PathBuf)>>,
    unreadable: AtomicUsize,
    cancel: CancellationToken,
}

struct Builder<'a> {
    target: &'a Target,
    glob: &'a GlobMatcher,
    shared: &'a Shared,
}

impl<'s> ParallelVisitorBuilder<'s> for Builder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            target: self.target,
            glob: self.glob,
            shared: self.shared,
            found: Vec::new(),
        })
    }
}

/// One walker thread's visitor; hands its finds over when dropped.
struct Visitor<'a> {
    target: &'a Target,
    glob: &'a GlobMatcher,
    shared: &'a Shared,
    found: Vec<(SystemTime, PathBuf)>,
}

impl Visitor<'_> {
    fn file(&mut self, entry: DirEntry) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return;
        }
        let rel = entry
            .path()
            .strip_prefix(&self.target.abs)
            .unwrap_or(entry.path());
        if !self.glob.is_match(rel) {
            return;
        }
        match entry.metadata().ok().and_then(|m| m.modified().ok()) {
            Some(t) => self.found.push((t, entry.into_path())),
            None => {
                self.shared.unreadable.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.shared.cancel.is_cancelled() {
            return WalkState::Quit;
        }
        match entry {
            Ok(e) => self.file(e),
            Err(e) if walk::is_unreadable(&e) => {
                self.shared.unreadable.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {}
        }
        WalkState::Continue
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        lock(&self.shared.found).append(&mut self.found);
    }
}

/// Runs the search and renders the result text.
///
/// # Errors
/// `FS_NOT_A_DIRECTORY` when the target is a file; `ABORTED` when
/// cancelled.
pub(crate) fn run(
    target: &Target,
    glob: &GlobMatcher,
    cancel: CancellationToken,
) -> Result<String, ToolError> {
    if !target.is_dir {
        return Err(ToolError::new(
            codes::FS_NOT_A_DIRECTORY,
            format!("not a directory: {}", target.show(&target.abs)),
        ));
    }
    let shared = Shared {
        found: Mutex::new(Vec::new()),
        unreadable: AtomicUsize::new(0),
        cancel,
    };
    walk::walker(&target.abs)
        .build_parallel()
        .visit(&mut Builder {
            target,
            glob,
            shared: &shared,
        });
    if shared.cancel.is_cancelled() {
        return Err(ToolError::aborted("glob cancelled"));
    }
    let mut found = std::mem::take(&mut *lock(&shared.found));
    let total = found.len();
    let by_age = |a: &(SystemTime, PathBuf), b: &(SystemTime, PathBuf)| {
        b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1))
    };
    if total > MAX_GLOB_PATHS {
        found.select_nth_unstable_by(MAX_GLOB_PATHS - 1, by_age);
        found.truncate(MAX_GLOB_PATHS);
    }
    found.sort_unstable_by(by_age);
    let mut lines: Vec<String> = found.iter().map(|(_, p)| target.show(p)).collect();
    if lines.is_empty() {
        lines.push("No files found".to_string());
    }
    if total > MAX_GLOB_PATHS {
        lines.push(format!("({} more not shown)", total - MAX_GLOB_PATHS));
    }
    let unreadable = shared.unreadable.load(Ordering::Relaxed);
    if unreadable > 0 {
        lines.push(walk::unreadable_note(unreadable));
    }
    Ok(lines.join("\n"))
}
