//! The fast path of a snapshot: an inotify watch on every directory of the
//! workspace that git would walk, so "nothing changed since the last
//! snapshot" is answered by draining an empty event queue instead of
//! stat-ing every file.
//!
//! The watch is only an optimisation and errs towards "changed": any event
//! (a file written, created, deleted, renamed, chmod-ed or touched in a
//! watched directory, a queue overflow) makes the next snapshot run the full
//! git scan, which then re-arms a fresh watch. Directories the `ignore`
//! crate considers ignored are not watched; a changed file found by the git
//! scan in an unwatched directory adds that directory to the watch for good,
//! so a disagreement between the two ignore engines costs one slow snapshot,
//! never a missed change in a directory that holds covered files.
//!
//! Not seen: writes through a shared `mmap` (they raise no inotify event) and
//! changes made on another host of a network filesystem; [`crate::Options`]
//! can turn the watch off for such workspaces.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

/// Events that mean the directory's content or metadata changed. Opening or
/// reading a file (which git does while scanning) raises none of them.
fn mask() -> AddWatchFlags {
    AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

/// An armed watch over a set of directories.
#[derive(Debug)]
pub(crate) struct Watch {
    inotify: Inotify,
}

impl Watch {
    /// Watches `dirs` (absolute). `None` when inotify is unavailable or a
    /// limit (`max_user_watches`, `max_user_instances`) is reached: the
    /// caller then scans every time.
    pub(crate) fn arm<'a>(dirs: impl IntoIterator<Item = &'a Path>) -> Option<Watch> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        for dir in dirs {
            match inotify.add_watch(dir, mask()) {
                Ok(_) => {}
                // Gone or replaced by a file since the walk: the event on its
                // parent already marks the watch dirty.
                Err(Errno::ENOENT) | Err(Errno::ENOTDIR) => {}
                Err(_) => return None,
            }
        }
        Some(Watch { inotify })
    }

    /// Adds one more directory; false when that failed (the watch can no
    /// longer vouch for the workspace).
    pub(crate) fn add(&self, dir: &Path) -> bool {
        matches!(
            self.inotify.add_watch(dir, mask()),
            Ok(_) | Err(Errno::ENOENT) | Err(Errno::ENOTDIR)
        )
    }

    /// Drains the event queue and says what happened since the last drain.
    pub(crate) fn changed(&self) -> Seen {
        let mut seen = Seen::Nothing;
        loop {
            match self.inotify.read_events() {
                Ok(events) if events.is_empty() => return seen,
                Ok(events) => {
                    for e in events {
                        let structural = e.mask.intersects(
                            AddWatchFlags::IN_ISDIR
                                | AddWatchFlags::IN_Q_OVERFLOW
                                | AddWatchFlags::IN_IGNORED
                                | AddWatchFlags::IN_DELETE_SELF
                                | AddWatchFlags::IN_MOVE_SELF
                                | AddWatchFlags::IN_UNMOUNT,
                        ) || e.name.as_deref().is_some_and(|n| n == ".gitignore");
                        seen = if structural {
                            Seen::Structure
                        } else {
                            seen.max(Seen::Files)
                        };
                    }
                }
                Err(Errno::EAGAIN) => return seen,
                Err(Errno::EINTR) => {}
                Err(_) => return Seen::Structure,
            }
        }
    }
}

/// What a drain of the watch found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Seen {
    /// No event: the workspace is as the last snapshot saw it.
    Nothing,
    /// Files changed, but no directory was created, deleted or moved and no
    /// `.gitignore` changed: the watch still covers every directory.
    Files,
    /// The directory structure or the ignore rules may have changed (or
    /// events were lost): the watch must be rebuilt.
    Structure,
}

/// The directories of `work_tree` a snapshot covers: every directory except
/// those named `.git`, the store itself and those the workspace's
/// `.gitignore` files ignore. Symbolic links are
/// not followed. `extra` directories (found by git in an earlier scan) are
/// included whatever the ignore rules say.
pub(crate) fn directories(
    work_tree: &Path,
    store: &Path,
    extra: &HashSet<PathBuf>,
) -> Vec<PathBuf> {
    let store = store.to_path_buf();
    let mut builder = ignore::WalkBuilder::new(work_tree);
    builder
        .standard_filters(false)
        .git_ignore(true)
        // Conservative: `.git/info/exclude` only narrows what git covers,
        // so leaving it out here can only add watches.
        .git_exclude(false)
        .require_git(false)
        .parents(false)
        .follow_links(false)
        .filter_entry(move |e| {
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            is_dir && e.file_name() != ".git" && e.path() != store
        });
    let mut dirs: Vec<PathBuf> = builder
        .build()
        .filter_map(Result::ok)
        .map(ignore::DirEntry::into_path)
        .collect();
    dirs.extend(extra.iter().cloned());
    dirs
}
