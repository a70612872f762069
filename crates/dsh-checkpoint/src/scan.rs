//! The full snapshot: find what changed since the private index was last
//! updated, hash only that, write the tree.
//!
//! 1. `git diff-files` (tracked paths whose stat data changed, or that are
//!    gone) and `git ls-files --others --exclude-standard` (new,
//!    not-ignored files), run at the same time;
//! 2. one `lstat` per listed path: files over the size limit and paths that
//!    are gone go to a `--force-remove`, the rest to an `--add`;
//! 3. `git update-index` for those two lists, then `git write-tree`.
//!
//! An unchanged workspace lists nothing, so nothing is hashed and
//! `write-tree` answers from the index's cached trees: no object is written.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crate::git::{self, Git};
use crate::{CheckpointError, SkipReason, SkippedFile, Snapshot};

/// A snapshot and the paths its scan looked at.
pub(crate) struct Scanned {
    pub(crate) snapshot: Snapshot,
    /// Every path git listed as changed or new (relative).
    pub(crate) touched: Vec<PathBuf>,
}

/// Runs the full scan (see the module doc).
pub(crate) fn scan(git: &Git, max_file_bytes: u64) -> Result<Scanned, CheckpointError> {
    let (changed, others) = match list_candidates(git) {
        Ok(lists) => lists,
        Err(first) => {
            // The private index is only a cache: when git cannot read it
            // (a torn write, a foreign format), rebuild it from scratch.
            // Objects already stored are not written again.
            if fs::remove_file(git.git_dir.join("index")).is_err() {
                return Err(first);
            }
            list_candidates(git)?
        }
    };
    let mut add: Vec<PathBuf> = Vec::new();
    let mut remove: Vec<PathBuf> = Vec::new();
    let mut skipped: Vec<SkippedFile> = Vec::new();
    let mut touched: Vec<PathBuf> = Vec::with_capacity(changed.len() + others.len());
    for path in changed.into_iter().chain(others) {
        // `dir/` is a nested repository git will not descend into.
        if path.as_os_str().as_bytes().ends_with(b"/") {
            continue;
        }
        match fs::symlink_metadata(git.work_tree.join(&path)) {
            Ok(m) if m.is_file() && m.len() > max_file_bytes => {
                skipped.push(skipped_file(&path, &m, SkipReason::TooLarge));
                remove.push(path.clone());
            }
            Ok(m) if m.is_file() || m.file_type().is_symlink() => add.push(path.clone()),
            Ok(_) => remove.push(path.clone()),
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                remove.push(path.clone())
            }
            // Not inspectable (an unreadable parent): leave its entry as is.
            Err(_) => continue,
        }
        touched.push(path);
    }
    add.sort();
    add.dedup();
    remove.sort();
    remove.dedup();
    if !remove.is_empty() {
        let input = git::join_z(remove.iter().map(PathBuf::as_path));
        git.run(
            "update-index --force-remove",
            &["update-index", "--force-remove", "-z", "--stdin"],
            Some(&input),
        )?;
    }
    if !add.is_empty() {
        let input = git::join_z(add.iter().map(PathBuf::as_path));
        let args = [
            "update-index",
            "--add",
            "--replace",
            "--remove",
            "-z",
            "--stdin",
        ];
        if let Err(first) = git.run("update-index --add", &args, Some(&input)) {
            // Usually a file that cannot be read: leave those out and retry.
            let (readable, unreadable): (Vec<PathBuf>, Vec<PathBuf>) = add
                .into_iter()
                .partition(|p| is_readable(&git.work_tree.join(p)));
            if unreadable.is_empty() {
                return Err(first);
            }
            for p in &unreadable {
                if let Ok(m) = fs::symlink_metadata(git.work_tree.join(p)) {
                    skipped.push(skipped_file(p, &m, SkipReason::Unreadable));
                }
            }
            let input = git::join_z(unreadable.iter().map(PathBuf::as_path));
            git.run(
                "update-index --force-remove",
                &["update-index", "--force-remove", "-z", "--stdin"],
                Some(&input),
            )?;
            let input = git::join_z(readable.iter().map(PathBuf::as_path));
            git.run("update-index --add", &args, Some(&input))?;
        }
    }
    let out = git.run("write-tree", &["write-tree"], None)?;
    let tree = String::from_utf8_lossy(&out).trim().to_string();
    if !git::is_oid(&tree) {
        return Err(CheckpointError::Git {
            command: "write-tree".into(),
            store: git.git_dir.clone(),
            message: format!("unexpected output {tree:?}"),
        });
    }
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Scanned {
        snapshot: Snapshot { tree, skipped },
        touched,
    })
}

/// Every path in the private index.
pub(crate) fn index_paths(git: &Git) -> Result<Vec<PathBuf>, CheckpointError> {
    Ok(git::split_z(&git.run(
        "ls-files",
        &["ls-files", "-z"],
        None,
    )?))
}

/// `diff-files` and `ls-files --others`, run in parallel.
fn list_candidates(git: &Git) -> Result<(Vec<PathBuf>, Vec<PathBuf>), CheckpointError> {
    let (changed, others) = std::thread::scope(|s| {
        let changed = s.spawn(|| git.run("diff-files", &["diff-files", "-z", "--name-only"], None));
        let others = git.run(
            "ls-files --others",
            &["ls-files", "-z", "--others", "--exclude-standard"],
            None,
        );
        (changed.join(), others)
    });
    let changed = changed.map_err(|_| CheckpointError::Git {
        command: "diff-files".into(),
        store: git.git_dir.clone(),
        message: "the thread running it panicked".into(),
    })??;
    Ok((git::split_z(&changed), git::split_z(&others?)))
}

fn skipped_file(path: &std::path::Path, m: &fs::Metadata, reason: SkipReason) -> SkippedFile {
    SkippedFile {
        path: path.to_path_buf(),
        size: m.len(),
        mtime_ms: m.mtime() * 1000 + m.mtime_nsec() / 1_000_000,
        reason,
    }
}

fn is_readable(path: &std::path::Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => fs::read_link(path).is_ok(),
        Ok(_) => fs::File::open(path).is_ok(),
        Err(_) => true,
    }
}
