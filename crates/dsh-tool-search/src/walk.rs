//! What `glob` and `grep` share: resolving the `path` argument, the walker
//! (ripgrep's ignore rules, hidden files included, `.git` never entered),
//! how a found path is shown, and running the blocking search off the async
//! runtime.

use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use dsh_protocol::codes;
use dsh_tools::ToolError;
use ignore::WalkBuilder;

/// The search target: where to walk and how to show what is found there.
pub(crate) struct Target {
    /// The path to walk (`root` joined with a relative argument).
    pub(crate) abs: PathBuf,
    /// What found paths are shown under: the argument as the model wrote it
    /// (without `./` components), empty for the default.
    pub(crate) shown: PathBuf,
    /// Whether `abs` is a directory (else a regular file, or a symlink to
    /// one).
    pub(crate) is_dir: bool,
}

impl Target {
    /// How `path` (an entry below or equal to `abs`) is shown: relative to
    /// the working directory when the argument was relative or absent,
    /// absolute when it was absolute. Non-UTF-8 bytes are shown lossily.
    pub(crate) fn show(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.abs).unwrap_or(path);
        let shown = if rel.as_os_str().is_empty() {
            self.shown.clone()
        } else if self.shown.as_os_str().is_empty() {
            rel.to_path_buf()
        } else {
            self.shown.join(rel)
        };
        shown.to_string_lossy().into_owned()
    }
}

/// Resolves the `path` argument against `root`.
///
/// # Errors
/// `FS_NOT_FOUND` when nothing exists there; `FS_NOT_A_FILE` when it is
/// neither a directory nor a regular file (a fifo, socket or device: never
/// opened); `TOOL_FAILED` when it cannot be examined (permission denied on
/// a parent, …).
pub(crate) fn resolve(root: &Path, arg: Option<&str>) -> Result<Target, ToolError> {
    let (abs, shown) = match arg {
        None => (root.to_path_buf(), PathBuf::new()),
        Some(p) => {
            let p = PathBuf::from(p);
            if p.is_absolute() {
                (p.clone(), p)
            } else {
                let shown: PathBuf = p
                    .components()
                    .filter(|c| !matches!(c, Component::CurDir))
                    .collect();
                (root.join(&p), shown)
            }
        }
    };
    let shown_arg = arg.unwrap_or(".");
    match std::fs::metadata(&abs) {
        Ok(meta) => match dsh_tools::regular::special_kind(meta.file_type())
            .filter(|kind| *kind != dsh_tools::regular::DIRECTORY)
        {
            Some(kind) => Err(ToolError::new(
                codes::FS_NOT_A_FILE,
                format!(
                    "{shown_arg} is a {kind}, not a regular file or a directory; search a file or a directory"
                ),
            )),
            None => Ok(Target {
                is_dir: meta.is_dir(),
                abs,
                shown,
            }),
        },
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Err(ToolError::new(
                codes::FS_NOT_FOUND,
                format!("path does not exist: {shown_arg}"),
            ))
        }
        Err(e) => Err(ToolError::failed(format!("cannot access {shown_arg}: {e}"))),
    }
}

/// A walker over `path` as ripgrep walks: `.gitignore` (also outside a git
/// repository), `.ignore`, `.git/info/exclude` and the global git excludes
/// honoured, hidden files included, symlinks not followed, `.git` never
/// entered, one thread per core.
pub(crate) fn walker(path: &Path) -> WalkBuilder {
    let mut b = WalkBuilder::new(path);
    b.hidden(false)
        .require_git(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .follow_links(false)
        .threads(0)
        .filter_entry(|e| e.file_name() != ".git");
    b
}

/// Whether a walk error means a path could not be read (as opposed to, for
/// example, a malformed line in an ignore file).
pub(crate) fn is_unreadable(err: &ignore::Error) -> bool {
    err.io_error().is_some()
}

/// The modification time of `entry`, the epoch when it cannot be read.
pub(crate) fn mtime(entry: &ignore::DirEntry) -> SystemTime {
    entry
        .metadata()
        .ok()
        .and_then(|m| m.modified().ok())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// `(N paths could not be read)`.
pub(crate) fn unreadable_note(n: usize) -> String {
    if n == 1 {
        "(1 path could not be read)".to_string()
    } else {
        format!("({n} paths could not be read)")
    }
}

/// A duration in seconds for notes: `30`, `0.25`.
pub(crate) fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        d.as_secs().to_string()
    } else {
        let s = format!("{:.3}", d.as_secs_f64());
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Runs `work` on a thread of its own (the walk blocks, and spawns its own
/// workers) and waits for it without blocking the async runtime.
///
/// # Errors
/// `TOOL_FAILED` when the thread cannot be started or dies.
pub(crate) async fn off_runtime<T, F>(name: &str, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name(format!("dsh-{name}"))
        .spawn(move || {
            let _ = tx.send(work());
        })
        .map_err(|e| ToolError::failed(format!("cannot start the {name} thread: {e}")))?;
    rx.await
        .map_err(|_| ToolError::failed(format!("the {name} thread died")))?
}
