//! Workspace checkpoints in a private git object store.
//!
//! A [`CheckpointStore`] is a bare git repository of its own (one per
//! session, under the session's data directory) that snapshots a workspace
//! — its tracked and untracked-but-not-ignored files — as git trees, lists
//! what changed between two snapshots and restores the files of one. It
//! never touches the workspace's own `.git`, index, stash or refs, and works
//! the same whether or not the workspace is a git repository.
//!
//! Everything goes through the `git` binary with `GIT_DIR`, `GIT_WORK_TREE`
//! and `GIT_INDEX_FILE` set explicitly, every inherited `GIT_*` and
//! credential-looking variable removed, no system or global configuration,
//! and `-c` options that turn off hooks, fsmonitor, filters and line-ending
//! conversion (the store holds raw bytes). See `docs/checkpoints.md`.
//!
//! Paths are [`PathBuf`]s relative to the workspace, built from git's raw
//! NUL-separated output: spaces, newlines and non-UTF-8 bytes round-trip.
//!
//! Start at [`CheckpointStore::open`], then [`CheckpointStore::snapshot`]
//! and [`CheckpointStore::revert`]. Unix only.

mod error;
mod git;
mod revert;
mod scan;
mod watch;

use std::collections::HashSet;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

pub use error::CheckpointError;
use git::Git;

/// Files larger than this (10 MiB) are not snapshotted; they are reported in
/// [`Snapshot::skipped`].
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// How a store behaves; [`Options::default`] is what dsh uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Watch the workspace's directories with inotify so a snapshot of an
    /// unchanged workspace costs no scan (default true). Turn it off for a
    /// workspace on a network filesystem or one changed through shared
    /// `mmap`s, which raise no events; every snapshot then scans.
    pub watch: bool,
    /// Files larger than this are left out (default [`MAX_FILE_BYTES`]).
    pub max_file_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            watch: true,
            max_file_bytes: MAX_FILE_BYTES,
        }
    }
}

/// One snapshot of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The tree's object id (hex). Equal snapshots have equal ids.
    pub tree: String,
    /// Files present in the workspace but not in the tree, sorted by path.
    pub skipped: Vec<SkippedFile>,
}

/// A file a snapshot left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    /// Relative to the workspace.
    pub path: PathBuf,
    /// Its size in bytes when the snapshot was taken.
    pub size: u64,
    /// Its modification time, Unix milliseconds.
    pub mtime_ms: i64,
    /// Why it was left out.
    pub reason: SkipReason,
}

/// Why a snapshot left a file out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Larger than [`Options::max_file_bytes`].
    TooLarge,
    /// It cannot be read (permissions).
    Unreadable,
}

/// How a path differs between two trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Absent in the first tree.
    Added,
    /// In both, with other content, executable bit or file type.
    Modified,
    /// Absent in the second tree.
    Deleted,
}

/// One path that differs between two trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Relative to the workspace.
    pub path: PathBuf,
    /// How it differs.
    pub kind: ChangeKind,
}

/// What a [`CheckpointStore::revert`] did. Every list is sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RevertReport {
    /// Files written (created or overwritten) with their target content.
    pub restored: Vec<PathBuf>,
    /// Files removed because the target does not have them.
    pub deleted: Vec<PathBuf>,
    /// Files that were changed by hand since the `expected` snapshot (or
    /// sit behind a symbolic link or a new directory) and were left alone.
    pub user_changed: Vec<PathBuf>,
}

/// Why a snapshot does not cover a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uncovered {
    /// A `.gitignore` file (or the repository's `.git/info/exclude`)
    /// ignores it.
    Ignored,
    /// It is a file larger than [`Options::max_file_bytes`].
    TooLarge {
        /// Its size in bytes.
        size: u64,
    },
    /// It lies in a nested git repository (a directory with its own `.git`),
    /// which snapshots leave out.
    NestedRepository,
    /// It lies in a `.git` directory.
    GitMetadata,
    /// It is not inside the workspace.
    OutsideWorkspace,
}

/// A private git object store that checkpoints one workspace. Cheap to
/// share between threads; snapshots are serialised internally.
#[derive(Debug)]
pub struct CheckpointStore {
    git: Git,
    options: Options,
    /// The content of the store's `dsh-store-id` at open: a store deleted
    /// and created again is another store, whose trees this value's
    /// snapshots are not in.
    identity: Vec<u8>,
    state: Mutex<State>,
}

/// What survives between snapshots of one store value.
#[derive(Debug, Default)]
struct State {
    /// The last snapshot, valid while the watch saw nothing.
    last: Option<Snapshot>,
    /// The armed watch (None: off, unavailable, or a snapshot failed).
    watch: Option<watch::Watch>,
    /// Directories the watch covers.
    watched: HashSet<PathBuf>,
    /// Directories git found covered files in that the walk had skipped.
    extra: HashSet<PathBuf>,
    /// Whether the whole index was checked against the watched directories.
    seeded: bool,
    /// `core.excludesFile`'s modification time at the last snapshot.
    excludes_mtime: Option<SystemTime>,
}

impl CheckpointStore {
    /// Opens the store at `git_dir` for the workspace `work_tree` with
    /// [`Options::default`], creating it (`git init --bare`, directory 0700)
    /// when absent.
    ///
    /// Errors: `CHECKPOINT_FAILED` when the workspace is not a directory or
    /// the store cannot be created; `CHECKPOINT_UNAVAILABLE` when `git_dir`
    /// exists but is not a git store, or git is not installed.
    pub fn open(
        git_dir: impl Into<PathBuf>,
        work_tree: impl Into<PathBuf>,
    ) -> Result<Self, CheckpointError> {
        Self::open_with(git_dir, work_tree, Options::default())
    }

    /// [`CheckpointStore::open`] with explicit [`Options`].
    pub fn open_with(
        git_dir: impl Into<PathBuf>,
        work_tree: impl Into<PathBuf>,
        options: Options,
    ) -> Result<Self, CheckpointError> {
        let work_tree = work_tree.into();
        let work_tree = fs::canonicalize(&work_tree).map_err(|source| CheckpointError::Io {
            action: "open the workspace",
            path: work_tree.clone(),
            source,
            unchanged: true,
        })?;
        if !work_tree.is_dir() {
            return Err(CheckpointError::Io {
                action: "open the workspace",
                path: work_tree,
                source: std::io::Error::new(ErrorKind::NotADirectory, "not a directory"),
                unchanged: true,
            });
        }
        let git_dir = git_dir.into();
        if !git_dir.exists() {
            init_store(&git_dir)?;
        }
        let git_dir = fs::canonicalize(&git_dir).map_err(|e| CheckpointError::Unavailable {
            store: git_dir.clone(),
            reason: format!("cannot resolve its path: {e}"),
        })?;
        if !is_store(&git_dir) {
            return Err(CheckpointError::Unavailable {
                store: git_dir,
                reason: "it exists but is not a git object store (no objects/ or HEAD)".into(),
            });
        }
        let user_exclude = work_tree.join(".git/info/exclude");
        let excludes_file = if user_exclude.is_file() {
            user_exclude
        } else {
            PathBuf::from("/dev/null")
        };
        let git = Git {
            git_dir,
            work_tree,
            excludes_file,
        };
        write_store_rules(&git)?;
        // A lock left by a killed git: the store belongs to one session,
        // which one process at a time holds.
        let _ = fs::remove_file(git.git_dir.join("index.lock"));
        let identity = match store_identity(&git.git_dir) {
            Some(id) => id,
            None => {
                let id = format!(
                    "{}-{}\n",
                    std::process::id(),
                    SystemTime::now()
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .map(|d| d.as_nanos())
                        .unwrap_or(0)
                )
                .into_bytes();
                let path = git.git_dir.join(STORE_ID);
                write_if_different(&path, &id).map_err(|source| CheckpointError::Io {
                    action: "write",
                    path,
                    source,
                    unchanged: true,
                })?;
                id
            }
        };
        Ok(CheckpointStore {
            git,
            options,
            identity,
            state: Mutex::new(State::default()),
        })
    }

    /// The store's directory (canonical).
    pub fn git_dir(&self) -> &Path {
        &self.git.git_dir
    }

    /// The workspace's directory (canonical).
    pub fn work_tree(&self) -> &Path {
        &self.git.work_tree
    }

    /// Snapshots the workspace: every file git would see as tracked or
    /// untracked-but-not-ignored (the workspace's `.gitignore` files and its
    /// repository's `.git/info/exclude` apply; the user's global excludes do
    /// not), except files over [`Options::max_file_bytes`] and unreadable
    /// ones, which are listed in [`Snapshot::skipped`]. Directories named
    /// `.git` and nested repositories are never entered.
    ///
    /// Cheap when little changed: the private index's stat cache means only
    /// changed files are read, and with the watch on an unchanged workspace
    /// costs no scan at all. A snapshot of an unchanged workspace writes no
    /// object.
    ///
    /// Errors: `CHECKPOINT_UNAVAILABLE` when the store was deleted (open it
    /// again to start a new one) or git is missing; `CHECKPOINT_FAILED` when
    /// git fails.
    pub fn snapshot(&self) -> Result<Snapshot, CheckpointError> {
        let mut state = self.lock();
        self.ensure_present()?;
        let excludes_mtime = fs::metadata(&self.git.excludes_file)
            .and_then(|m| m.modified())
            .ok();
        let seen = match (&state.last, &state.watch) {
            (Some(_), Some(w)) if excludes_mtime == state.excludes_mtime => w.changed(),
            _ => watch::Seen::Structure,
        };
        if let (watch::Seen::Nothing, Some(last)) = (seen, &state.last) {
            return Ok(last.clone());
        }
        state.last = None;
        if seen == watch::Seen::Structure {
            state.watch = None;
        }
        if self.options.watch && state.watch.is_none() {
            let dirs = watch::directories(&self.git.work_tree, &self.git.git_dir, &state.extra);
            state.watch = watch::Watch::arm(dirs.iter().map(PathBuf::as_path));
            state.watched = dirs.into_iter().collect();
        }
        let scanned = scan::scan(&self.git, self.options.max_file_bytes)?;
        if state.watch.is_some() {
            let mut touched: Vec<PathBuf> = scanned.touched;
            if !state.seeded {
                touched.extend(scan::index_paths(&self.git)?);
                state.seeded = true;
            }
            self.cover_dirs(&mut state, &touched);
        }
        state.excludes_mtime = excludes_mtime;
        state.last = Some(scanned.snapshot.clone());
        Ok(scanned.snapshot)
    }

    /// Paths that differ between the trees `from` and `to` (added,
    /// modified — content, executable bit or file type — and deleted),
    /// sorted by path.
    ///
    /// Errors: `CHECKPOINT_UNAVAILABLE` when either tree is not in the store
    /// (or the store is gone), `CHECKPOINT_FAILED` for a malformed id.
    pub fn changed(&self, from: &str, to: &str) -> Result<Vec<Change>, CheckpointError> {
        self.require_ids(&[from, to])?;
        let out = self.git.output(
            &[
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                "--name-status",
                from,
                to,
            ],
            None,
        )?;
        if !out.status.success() {
            return Err(self.missing_trees(&[from, to], &out));
        }
        let out = out.stdout;
        let fields = git::split_z(&out);
        let mut changes = Vec::with_capacity(fields.len() / 2);
        for pair in fields.chunks(2) {
            let [status, path] = pair else { break };
            let kind = match status.as_os_str().as_bytes().first() {
                Some(b'A') => ChangeKind::Added,
                Some(b'D') => ChangeKind::Deleted,
                _ => ChangeKind::Modified,
            };
            changes.push(Change {
                path: path.clone(),
                kind,
            });
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(changes)
    }

    /// Sets the workspace files that differ between the trees `expected` and
    /// `target` to their content in `target`: written (atomically: a
    /// temporary file in the workspace, then a rename; the executable bit as
    /// in `target`, other permission bits kept), deleted when `target` lacks
    /// them (directories left empty are removed), symbolic links restored as
    /// links. Files not in that difference are never touched.
    ///
    /// A file whose current state is neither its `expected` nor its `target`
    /// state was changed by hand since: it is listed in
    /// [`RevertReport::user_changed`] and left alone — unless `force`,
    /// which overwrites or deletes it anyway. Even with `force` a directory
    /// is never removed to make room for a file, and nothing is written
    /// through a symbolic link to a directory.
    ///
    /// Before anything changes, every needed object is read from the store
    /// and every file is staged next to its destination, so: a deleted or
    /// corrupt store fails with `CHECKPOINT_UNAVAILABLE` and a directory that
    /// cannot be written fails with `CHECKPOINT_FAILED` naming the file, both
    /// with the workspace unchanged. Only a failure between the first
    /// rename and the last (after every check passed) leaves a partial
    /// restore; the error then says so.
    ///
    /// `/undo` is `revert(before, after, force)`, `/redo` is
    /// `revert(after, before, force)`.
    pub fn revert(
        &self,
        target: &str,
        expected: &str,
        force: bool,
    ) -> Result<RevertReport, CheckpointError> {
        let _state = self.lock();
        self.require_ids(&[target, expected])?;
        revert::revert(&self.git, target, expected, force).map_err(|e| match e {
            revert::Failure::Trees(out) => self.missing_trees(&[target, expected], &out),
            revert::Failure::Error(e) => e,
        })
    }

    /// Whether the store holds the tree `tree` (false for a malformed id, an
    /// unknown one, a deleted store or one whose tree object is damaged).
    /// Only the tree object itself is checked; [`CheckpointStore::revert`]
    /// verifies every file it needs before changing anything.
    pub fn has_tree(&self, tree: &str) -> bool {
        git::is_oid(tree)
            && self.ensure_present().is_ok()
            && matches!(self.object_types(&[tree]).as_deref(), Ok([Some(t)]) if t == "tree")
    }

    /// For each of `paths` (relative to the workspace, or absolute inside
    /// it), why a snapshot does not cover it, or `None` when it does (or
    /// would, once it exists). Order matches `paths`.
    ///
    /// Errors: `CHECKPOINT_UNAVAILABLE` when git is missing or the store is
    /// gone, `CHECKPOINT_FAILED` when `git check-ignore` fails.
    pub fn coverage<P: AsRef<Path>>(
        &self,
        paths: &[P],
    ) -> Result<Vec<Option<Uncovered>>, CheckpointError> {
        self.ensure_present()?;
        let mut out: Vec<Option<Uncovered>> = Vec::with_capacity(paths.len());
        let mut ask: Vec<(usize, PathBuf)> = Vec::new();
        for (i, p) in paths.iter().enumerate() {
            let verdict = match self.relative(p.as_ref()) {
                None => Some(Uncovered::OutsideWorkspace),
                Some(rel) if rel.as_os_str().is_empty() => None,
                Some(rel) => {
                    let v = self.structural_coverage(&rel);
                    if v.is_none() {
                        ask.push((i, rel));
                    }
                    v
                }
            };
            out.push(verdict);
        }
        if !ask.is_empty() {
            let input = git::join_z(ask.iter().map(|(_, p)| p.as_path()));
            let res = self
                .git
                .output(&["check-ignore", "-z", "--stdin"], Some(&input))?;
            // 0: some are ignored, 1: none is.
            if !matches!(res.status.code(), Some(0) | Some(1)) {
                return Err(self.git.failed("check-ignore", &res));
            }
            let ignored: HashSet<PathBuf> = git::split_z(&res.stdout).into_iter().collect();
            for (i, rel) in ask {
                if ignored.contains(&rel) {
                    out[i] = Some(Uncovered::Ignored);
                }
            }
        }
        Ok(out)
    }

    /// Coverage decided from the file system alone: `.git`, nested
    /// repositories, size.
    fn structural_coverage(&self, rel: &Path) -> Option<Uncovered> {
        if rel.components().any(|c| c.as_os_str() == ".git") {
            return Some(Uncovered::GitMetadata);
        }
        let mut dir = self.git.work_tree.clone();
        let comps: Vec<Component<'_>> = rel.components().collect();
        for c in &comps[..comps.len().saturating_sub(1)] {
            dir.push(c);
            if fs::symlink_metadata(dir.join(".git")).is_ok() {
                return Some(Uncovered::NestedRepository);
            }
        }
        match fs::symlink_metadata(self.git.work_tree.join(rel)) {
            Ok(m) if m.is_file() && m.len() > self.options.max_file_bytes => {
                Some(Uncovered::TooLarge { size: m.len() })
            }
            _ => None,
        }
    }

    /// `path` relative to the workspace, `None` when it lies outside (or
    /// climbs with `..`).
    fn relative(&self, path: &Path) -> Option<PathBuf> {
        let rel = if path.is_absolute() {
            path.strip_prefix(&self.git.work_tree).ok()?.to_path_buf()
        } else {
            path.to_path_buf()
        };
        let mut clean = PathBuf::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => clean.push(n),
                Component::CurDir => {}
                _ => return None,
            }
        }
        Some(clean)
    }

    /// Adds to the watch every directory that holds one of `paths` and that
    /// the walk skipped (the two ignore engines disagreed).
    fn cover_dirs(&self, state: &mut State, paths: &[PathBuf]) {
        let mut missing: Vec<PathBuf> = Vec::new();
        for p in paths {
            let mut dir = self.git.work_tree.join(p);
            while dir.pop() && dir.starts_with(&self.git.work_tree) {
                if state.watched.contains(&dir) || missing.contains(&dir) {
                    break;
                }
                missing.push(dir.clone());
            }
        }
        for dir in missing {
            let ok = state.watch.as_ref().is_some_and(|w| w.add(&dir));
            if !ok {
                state.watch = None;
            }
            state.watched.insert(dir.clone());
            state.extra.insert(dir);
        }
    }

    /// The state lock; a panic in another snapshot does not poison it (the
    /// state is rebuilt by the next scan).
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Unavailable` unless the store directory is still the store this
    /// value opened.
    fn ensure_present(&self) -> Result<(), CheckpointError> {
        let reason = if !is_store(&self.git.git_dir) {
            "the store directory is missing or no longer a git store"
        } else if store_identity(&self.git.git_dir).as_ref() != Some(&self.identity) {
            "the store was deleted and created again since it was opened"
        } else {
            return Ok(());
        };
        Err(CheckpointError::Unavailable {
            store: self.git.git_dir.clone(),
            reason: reason.into(),
        })
    }

    /// Checks that every id is well formed and the store is there.
    fn require_ids(&self, trees: &[&str]) -> Result<(), CheckpointError> {
        for t in trees {
            if !git::is_oid(t) {
                return Err(CheckpointError::InvalidTreeId((*t).to_string()));
            }
        }
        self.ensure_present()
    }

    /// The error for a `diff-tree` between `trees` that failed: names the
    /// tree that is not in the store.
    fn missing_trees(&self, trees: &[&str], out: &std::process::Output) -> CheckpointError {
        let types = self.object_types(trees).unwrap_or_default();
        let missing: Vec<&str> = trees
            .iter()
            .enumerate()
            .filter(|(i, _)| types.get(*i).and_then(Option::as_deref) != Some("tree"))
            .map(|(_, t)| *t)
            .collect();
        let reason = if missing.is_empty() {
            format!(
                "cannot read the checkpoint trees: {}",
                git::stderr_message(out)
            )
        } else {
            format!(
                "checkpoint tree {} is not in the store (deleted or corrupt): {}",
                missing.join(" and "),
                git::stderr_message(out)
            )
        };
        CheckpointError::Unavailable {
            store: self.git.git_dir.clone(),
            reason,
        }
    }

    /// The object type of each id (`None`: missing), via one
    /// `cat-file --batch-check`.
    fn object_types(&self, oids: &[&str]) -> Result<Vec<Option<String>>, CheckpointError> {
        let mut input = Vec::new();
        for o in oids {
            input.extend_from_slice(o.as_bytes());
            input.push(b'\n');
        }
        let out = self
            .git
            .output(&["cat-file", "--batch-check"], Some(&input))?;
        if !out.status.success() {
            return Err(CheckpointError::Unavailable {
                store: self.git.git_dir.clone(),
                reason: format!("git cat-file failed: {}", git::stderr_message(&out)),
            });
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut types: Vec<Option<String>> = text
            .lines()
            .map(|l| {
                let mut parts = l.split(' ');
                let _oid = parts.next();
                match parts.next() {
                    Some("missing") | Some("ambiguous") | None => None,
                    Some(t) => Some(t.to_string()),
                }
            })
            .collect();
        types.resize(oids.len(), None);
        Ok(types)
    }
}

/// The file that tells one store from another created at the same path.
const STORE_ID: &str = "dsh-store-id";

/// The content of the store's id file.
fn store_identity(dir: &Path) -> Option<Vec<u8>> {
    fs::read(dir.join(STORE_ID))
        .ok()
        .filter(|id| !id.is_empty())
}

/// Whether `dir` looks like a bare git repository.
fn is_store(dir: &Path) -> bool {
    dir.join("objects").is_dir() && dir.join("HEAD").is_file()
}

/// Creates the store: the directory (0700, parents as needed) and
/// `git init --bare` in it, with no template (no sample hooks).
fn init_store(git_dir: &Path) -> Result<(), CheckpointError> {
    let io_err = |source| CheckpointError::Io {
        action: "create the checkpoint store",
        path: git_dir.to_path_buf(),
        source,
        unchanged: true,
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(git_dir)
        .map_err(io_err)?;
    fs::set_permissions(git_dir, fs::Permissions::from_mode(0o700)).map_err(io_err)?;
    let mut cmd = Command::new("git");
    for (name, _) in std::env::vars_os() {
        if git::is_scrubbed(&name) {
            cmd.env_remove(&name);
        }
    }
    let out = cmd
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("LC_ALL", "C")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "init",
            "--bare",
            "-q",
            "--template=",
        ])
        .arg(git_dir)
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(CheckpointError::Git {
            command: "init --bare".into(),
            store: git_dir.to_path_buf(),
            message: git::stderr_message(&o),
        }),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(CheckpointError::Unavailable {
            store: git_dir.to_path_buf(),
            reason: "git is not installed (no `git` on PATH); install git to use checkpoints"
                .into(),
        }),
        Err(e) => Err(io_err(e)),
    }
}

/// Writes the store's `info/attributes` (no filter, no end-of-line or
/// encoding conversion, whatever the workspace's `.gitattributes` say: the
/// store holds raw bytes) and `info/exclude` (the store itself, when it lies
/// inside the workspace).
fn write_store_rules(git: &Git) -> Result<(), CheckpointError> {
    let info = git.git_dir.join("info");
    let io_err = |path: PathBuf| {
        move |source| CheckpointError::Io {
            action: "write",
            path,
            source,
            unchanged: true,
        }
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&info)
        .map_err(io_err(info.clone()))?;
    let attributes = b"* -text -eol -filter -ident -working-tree-encoding\n";
    write_if_different(&info.join("attributes"), attributes)
        .map_err(io_err(info.join("attributes")))?;
    let mut exclude = Vec::new();
    if let Ok(rel) = git.git_dir.strip_prefix(&git.work_tree) {
        if !rel.as_os_str().is_empty() {
            exclude = exclude_pattern(rel).ok_or_else(|| CheckpointError::Io {
                action: "exclude the store from the workspace",
                path: git.git_dir.clone(),
                source: std::io::Error::new(
                    ErrorKind::InvalidInput,
                    "the store's path holds a newline",
                ),
                unchanged: true,
            })?;
        }
    }
    write_if_different(&info.join("exclude"), &exclude).map_err(io_err(info.join("exclude")))
}

/// A gitignore line matching exactly the directory `rel` (anchored, every
/// special character escaped); `None` when `rel` holds a newline, which a
/// gitignore line cannot.
fn exclude_pattern(rel: &Path) -> Option<Vec<u8>> {
    let bytes = rel.as_os_str().as_bytes();
    if bytes.contains(&b'\n') || bytes.contains(&b'\r') {
        return None;
    }
    let mut line = vec![b'/'];
    for &b in bytes {
        if matches!(b, b'\\' | b'*' | b'?' | b'[' | b']' | b'!' | b'#' | b' ') {
            line.push(b'\\');
        }
        line.push(b);
    }
    line.extend_from_slice(b"/\n");
    Some(line)
}

/// Writes `bytes` to `path` (via a temporary file and a rename, mode 0600)
/// unless it already holds them.
fn write_if_different(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if fs::read(path).is_ok_and(|have| have == bytes) {
        return Ok(());
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
    }
    fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclude_pattern_escapes_specials() {
        assert_eq!(
            exclude_pattern(Path::new("data/s e#s[1]")).as_deref(),
            Some(&b"/data/s\\ e\\#s\\[1\\]/\n"[..])
        );
        assert_eq!(exclude_pattern(Path::new("a\nb")), None);
    }
}
