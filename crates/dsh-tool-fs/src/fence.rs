//! The file-tool fence: the writable roots of the permission mode, applied
//! to `write`, `edit` and `str_replace_editor` (reads are never fenced).
//!
//! A path is checked in its canonical form: every existing prefix resolved
//! (symlinks followed, dangling ones through their target), `..` and `.`
//! removed. It is checked when the call starts and again just before the
//! rename that publishes the write, so a directory swapped for a symlink in
//! between is caught.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, RwLock};

use dsh_kernel::sync::{read, write};
use dsh_protocol::{codes, SandboxMode};
use dsh_tools::ToolError;

/// The writable roots shared by the file tools of one session; cheap to
/// clone (all clones see [`Fence::set`]). The default is open: no fence.
#[derive(Debug, Clone, Default)]
pub struct Fence {
    inner: Arc<RwLock<Option<Roots>>>,
    /// The roots of `workspace-write`, for a call approved to write under
    /// that mode while the session is `read-only`.
    workspace: Arc<RwLock<Option<Vec<PathBuf>>>>,
}

#[derive(Debug, Clone)]
struct Roots {
    mode: String,
    roots: Vec<PathBuf>,
}

/// Marks an `io::Error` raised by the fence's re-check before the rename.
#[derive(Debug)]
pub(crate) struct FenceDenied(pub(crate) String);

impl std::fmt::Display for FenceDenied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FenceDenied {}

impl Fence {
    /// A fence that allows writes everywhere (until [`Fence::set`]).
    pub fn open() -> Self {
        Self::default()
    }

    /// Confines writes to `roots` (canonicalised here; a root that does not
    /// exist is kept as given), naming `mode` in denials
    /// (`workspace-write`). `None` opens the fence.
    pub fn set(&self, mode: &str, roots: Option<Vec<PathBuf>>) {
        *write(&self.inner) = roots.map(|roots| Roots {
            mode: mode.to_string(),
            roots: roots
                .into_iter()
                .map(|r| r.canonicalize().unwrap_or(r))
                .collect(),
        });
    }

    /// The writable roots of `workspace-write` mode, used by
    /// [`Fence::widened`] (canonicalised like [`Fence::set`]'s).
    pub fn set_workspace_roots(&self, roots: Vec<PathBuf>) {
        *write(&self.workspace) = Some(
            roots
                .into_iter()
                .map(|r| r.canonicalize().unwrap_or(r))
                .collect(),
        );
    }

    /// The fence for one call approved to write under `mode`: open for
    /// `danger-full-access`, the workspace roots for `workspace-write`
    /// (this fence when they were never set), this fence otherwise. The
    /// result is detached: later [`Fence::set`] calls do not reach it.
    pub fn widened(&self, mode: SandboxMode) -> Fence {
        let roots = match mode {
            SandboxMode::DangerFullAccess => None,
            SandboxMode::WorkspaceWrite => match read(&self.workspace).clone() {
                Some(roots) => Some(Roots {
                    mode: mode.as_str().to_string(),
                    roots,
                }),
                None => return self.clone(),
            },
            _ => return self.clone(),
        };
        Fence {
            inner: Arc::new(RwLock::new(roots)),
            workspace: self.workspace.clone(),
        }
    }

    /// Whether writes are confined.
    pub fn is_confining(&self) -> bool {
        read(&self.inner).is_some()
    }

    /// `Ok` when `path` (absolute) may be written.
    ///
    /// # Errors
    /// `FS_SANDBOX_DENIED` naming the canonical path, the mode and the
    /// roots; `FS_IO` when the path cannot be resolved.
    pub(crate) fn check(&self, path: &Path) -> Result<(), ToolError> {
        let Some(roots) = read(&self.inner).clone() else {
            return Ok(());
        };
        let real = resolve_for_write(path).map_err(|e| {
            ToolError::new(
                codes::FS_IO,
                format!("cannot resolve {}: {e}", path.display()),
            )
        })?;
        if roots.roots.iter().any(|r| real.starts_with(r)) {
            return Ok(());
        }
        Err(ToolError::new(
            codes::FS_SANDBOX_DENIED,
            denial(path, &real, &roots),
        ))
    }

    /// The re-check before the rename, as an `io::Error` carrying
    /// [`FenceDenied`].
    pub(crate) fn recheck(&self, path: &Path) -> std::io::Result<()> {
        self.check(path).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                FenceDenied(e.message().to_string()),
            )
        })
    }
}

fn denial(path: &Path, real: &Path, roots: &Roots) -> String {
    let list: Vec<String> = roots
        .roots
        .iter()
        .map(|r| r.display().to_string())
        .collect();
    let shown = if real == path {
        path.display().to_string()
    } else {
        format!("{} (really {})", path.display(), real.display())
    };
    // Read-only mode has no writable roots: say so instead of "()".
    let roots_shown = if list.is_empty() {
        "none: nothing is writable".to_string()
    } else {
        list.join(", ")
    };
    format!(
        "{shown} is outside the writable roots of {} mode ({roots_shown}); write inside them, or ask the user for wider access",
        roots.mode,
    )
}

/// Most symlinks followed while resolving one path (as the kernel's 40).
const MAX_LINKS: usize = 40;

/// The canonical form of `path` (absolute) as a write would reach it:
/// existing prefixes resolved through symlinks (a dangling link through
/// its target), the rest appended with `..` applied to it lexically (those
/// components do not exist, so none of them is a link).
pub(crate) fn resolve_for_write(path: &Path) -> std::io::Result<PathBuf> {
    let mut links = 0;
    resolve_from(PathBuf::from("/"), path, &mut links)
}

fn resolve_from(mut real: PathBuf, path: &Path, links: &mut usize) -> std::io::Result<PathBuf> {
    let mut pending: Vec<std::ffi::OsString> = Vec::new();
    for comp in path.components() {
        match comp {
            Component::Prefix(_) | Component::CurDir => {}
            Component::RootDir => {
                real = PathBuf::from("/");
                pending.clear();
            }
            Component::ParentDir => {
                if pending.pop().is_none() {
                    real.pop();
                }
            }
            Component::Normal(name) => {
                if !pending.is_empty() {
                    pending.push(name.to_os_string());
                    continue;
                }
                let next = real.join(name);
                match std::fs::symlink_metadata(&next) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        *links += 1;
                        if *links > MAX_LINKS {
                            return Err(std::io::Error::other("too many levels of symbolic links"));
                        }
                        let target = std::fs::read_link(&next)?;
                        real = resolve_from(real, &target, links)?;
                    }
                    Ok(_) => real = next,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        pending.push(name.to_os_string());
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    for name in pending {
        real.push(name);
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn paths_resolve_through_links_and_dot_dot() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("ws")).unwrap();
        std::fs::create_dir(base.join("out")).unwrap();
        symlink(base.join("out"), base.join("ws/link")).unwrap();
        symlink(base.join("out/new.txt"), base.join("ws/dangling")).unwrap();
        symlink("../out", base.join("ws/rel")).unwrap();
        let r = |p: &str| resolve_for_write(&base.join(p)).unwrap();
        assert_eq!(r("ws/link/f"), base.join("out/f"));
        assert_eq!(r("ws/dangling"), base.join("out/new.txt"));
        assert_eq!(r("ws/rel/f"), base.join("out/f"));
        assert_eq!(r("ws/../out/f"), base.join("out/f"));
        assert_eq!(r("ws/a/b/../../f"), base.join("ws/f"));
        assert_eq!(
            r("ws/link/../f"),
            base.join("f"),
            "`..` after a link leaves its target"
        );
        symlink(base.join("ws/loop"), base.join("ws/loop")).unwrap();
        assert!(resolve_for_write(&base.join("ws/loop/x")).is_err());
    }
}
