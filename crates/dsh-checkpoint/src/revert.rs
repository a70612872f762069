//! Restoring the files that differ between two trees.
//!
//! 1. `git diff-tree` lists the paths that differ between `expected` and
//!    `target`, with both sides' mode and blob id;
//! 2. each path's current state is read (`lstat`, `readlink`, and one
//!    `git hash-object --stdin-paths` for the regular files among them) and
//!    compared with both sides: already at `target` → nothing to do; at
//!    `expected` (or `force`) → restore; otherwise → changed by hand, left
//!    alone;
//! 3. staging: every parent of a deletion is probed for write access and
//!    every file to write is streamed from `git cat-file --batch` into a
//!    temporary file next to its destination. Any failure here removes the
//!    temporary files and returns: the workspace is as it was;
//! 4. commit: deletions, removal of directories left empty, renames.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::git::{self, Git};
use crate::{CheckpointError, RevertReport};

/// One side of a differing path: a regular file (with its executable bit)
/// or a symbolic link, and its blob.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Side {
    kind: Kind,
    oid: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File { exec: bool },
    Symlink,
}

/// A path that differs between the two trees.
#[derive(Debug)]
struct Entry {
    path: PathBuf,
    expected: Option<Side>,
    target: Option<Side>,
}

/// What is at a path now.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Current {
    Absent,
    /// Absent as far as the trees go: an ancestor (its relative path) is a
    /// file or a symbolic link. Nothing is ever read or written through it;
    /// a write needs that ancestor deleted by the same restore.
    BehindFile(PathBuf),
    File {
        exec: bool,
        perm: u32,
    },
    Symlink(Vec<u8>),
    Dir,
    Other,
}

/// The type of an ancestor directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anc {
    Dir,
    Absent,
    /// A file, a symbolic link or a special file.
    NotDir,
}

/// A file write prepared in phase 3.
struct Staged {
    path: PathBuf,
    temp: PathBuf,
    replace_dir: bool,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Why a restore failed.
pub(crate) enum Failure {
    /// `diff-tree` could not read the trees (its output, for the message).
    Trees(Output),
    /// Anything else.
    Error(CheckpointError),
}

impl From<CheckpointError> for Failure {
    fn from(e: CheckpointError) -> Self {
        Failure::Error(e)
    }
}

/// See [`crate::CheckpointStore::revert`]; both ids are well formed.
pub(crate) fn revert(
    git: &Git,
    target: &str,
    expected: &str,
    force: bool,
) -> Result<RevertReport, Failure> {
    let entries = diff(git, expected, target)?;
    let mut report = RevertReport::default();
    if entries.is_empty() {
        return Ok(report);
    }
    let root = git.work_tree.as_path();
    if !root.is_dir() {
        return Err(CheckpointError::Io {
            action: "restore files into",
            path: root.to_path_buf(),
            source: std::io::Error::new(ErrorKind::NotFound, "the workspace directory is gone"),
            unchanged: true,
        }
        .into());
    }

    // Phase 2: what is there now.
    let mut ancestors: HashMap<PathBuf, Anc> = HashMap::new();
    let mut current: Vec<Current> = Vec::with_capacity(entries.len());
    for e in &entries {
        current.push(current_state(root, &e.path, &mut ancestors)?);
    }
    let to_hash: Vec<usize> = (0..entries.len())
        .filter(|&i| matches!(current[i], Current::File { .. }))
        .collect();
    let hashes = hash_files(git, to_hash.iter().map(|&i| entries[i].path.as_path()))?;
    let hash_of: HashMap<usize, String> = to_hash.into_iter().zip(hashes).collect();
    // The link texts the current links are compared with.
    let mut link_text: HashMap<String, Vec<u8>> = HashMap::new();
    let mut wanted: Vec<(String, &Path)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if matches!(current[i], Current::Symlink(_)) {
            for side in [&e.expected, &e.target].into_iter().flatten() {
                if side.kind == Kind::Symlink && !wanted.iter().any(|(o, _)| *o == side.oid) {
                    wanted.push((side.oid.clone(), e.path.as_path()));
                }
            }
        }
    }
    if !wanted.is_empty() {
        let mut blobs = Blobs::start(git, wanted.iter().map(|(o, _)| o.clone()).collect())?;
        for (oid, path) in &wanted {
            let text = blobs.read(git, oid, path)?;
            link_text.insert(oid.clone(), text);
        }
    }
    // Paths that are directories in one tree: a directory there is that
    // side's state, not a change by hand.
    let dir_in = |side_of: fn(&Entry) -> &Option<Side>, path: &Path| {
        entries
            .iter()
            .any(|e| side_of(e).is_some() && e.path.starts_with(path) && e.path != path)
    };
    let matches = |i: usize, side: &Option<Side>, side_of: fn(&Entry) -> &Option<Side>| {
        let e = &entries[i];
        match (&current[i], side) {
            (Current::Absent | Current::BehindFile(_), None) => true,
            (Current::Dir, None) => dir_in(side_of, &e.path),
            (Current::File { exec, .. }, Some(s)) => {
                s.kind == Kind::File { exec: *exec } && hash_of.get(&i) == Some(&s.oid)
            }
            (Current::Symlink(text), Some(s)) => {
                s.kind == Kind::Symlink && link_text.get(&s.oid) == Some(text)
            }
            _ => false,
        }
    };

    let mut deletes: Vec<usize> = Vec::new();
    let mut writes: Vec<usize> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if matches(i, &e.target, |e| &e.target) {
            continue;
        }
        let at_expected = matches(i, &e.expected, |e| &e.expected);
        let movable = matches!(
            current[i],
            Current::Absent
                | Current::BehindFile(_)
                | Current::File { .. }
                | Current::Symlink(_)
                | Current::Other
        ) || (at_expected && current[i] == Current::Dir);
        if !movable || !(at_expected || force) {
            report.user_changed.push(e.path.clone());
            continue;
        }
        if e.target.is_some() {
            writes.push(i);
        } else {
            deletes.push(i);
        }
    }
    let deleted: HashSet<&Path> = deletes.iter().map(|&i| entries[i].path.as_path()).collect();
    writes.retain(|&i| match &current[i] {
        Current::BehindFile(anc) if !deleted.contains(anc.as_path()) => {
            report.user_changed.push(entries[i].path.clone());
            false
        }
        _ => true,
    });

    // Phase 3: stage, so that any failure leaves the workspace untouched.
    let mut staged: Vec<Staged> = Vec::with_capacity(writes.len());
    let needed: Vec<String> = writes
        .iter()
        .filter_map(|&i| entries[i].target.as_ref())
        .filter(|s| !(s.kind == Kind::Symlink && link_text.contains_key(&s.oid)))
        .map(|s| s.oid.clone())
        .collect();
    let mut blobs = Blobs::start(git, needed)?;
    let stage_result = (|| -> Result<(), CheckpointError> {
        let mut probed: HashSet<PathBuf> = HashSet::new();
        for &i in &deletes {
            let path = root.join(&entries[i].path);
            let parent = path.parent().unwrap_or(root).to_path_buf();
            if probed.insert(parent.clone()) {
                probe_writable(&parent).map_err(|source| CheckpointError::Io {
                    action: "delete",
                    path: path.clone(),
                    source,
                    unchanged: true,
                })?;
            }
        }
        for &i in &writes {
            let e = &entries[i];
            let Some(side) = &e.target else { continue };
            let dest = root.join(&e.path);
            let dir = staging_dir(root, &e.path, &ancestors);
            let temp = dir.join(format!(
                ".dsh-checkpoint-{}-{}.tmp",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            let write_err = |source| CheckpointError::Io {
                action: "write",
                path: dest.clone(),
                source,
                unchanged: true,
            };
            match side.kind {
                Kind::Symlink => {
                    let text = match link_text.get(&side.oid) {
                        Some(t) => t.clone(),
                        None => blobs.read(git, &side.oid, &e.path)?,
                    };
                    std::os::unix::fs::symlink(OsStr::from_bytes(&text), &temp)
                        .map_err(write_err)?;
                    staged.push(Staged {
                        path: e.path.clone(),
                        temp,
                        replace_dir: false,
                    });
                }
                Kind::File { exec } => {
                    let mut file = fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(if exec { 0o777 } else { 0o666 })
                        .open(&temp)
                        .map_err(write_err)?;
                    staged.push(Staged {
                        path: e.path.clone(),
                        temp: temp.clone(),
                        replace_dir: current[i] == Current::Dir,
                    });
                    blobs.copy(git, &side.oid, &e.path, &mut file, &dest)?;
                    if let Current::File { perm, .. } = current[i] {
                        let perm = if exec {
                            perm | ((perm & 0o444) >> 2)
                        } else {
                            perm & !0o111
                        };
                        fs::set_permissions(&temp, fs::Permissions::from_mode(perm))
                            .map_err(write_err)?;
                    }
                }
            }
        }
        Ok(())
    })();
    drop(blobs);
    if let Err(e) = stage_result {
        for s in &staged {
            let _ = fs::remove_file(&s.temp);
        }
        return Err(e.into());
    }

    // Phase 4: commit.
    let commit = commit(root, &entries, &deletes, &staged, &mut report);
    if let Err(e) = commit {
        for s in &staged {
            let _ = fs::remove_file(&s.temp);
        }
        return Err(e.into());
    }
    report.restored.sort();
    report.deleted.sort();
    report.user_changed.sort();
    Ok(report)
}

/// Deletes, prunes emptied directories, renames the staged files.
fn commit(
    root: &Path,
    entries: &[Entry],
    deletes: &[usize],
    staged: &[Staged],
    report: &mut RevertReport,
) -> Result<(), CheckpointError> {
    let partial = |action: &'static str, path: PathBuf, source: std::io::Error, done: usize| {
        CheckpointError::Io {
            action,
            path,
            source: std::io::Error::new(
                source.kind(),
                format!("{source} (after {done} files were already restored or deleted: the restore is partial)"),
            ),
            unchanged: done == 0,
        }
    };
    let mut done = 0;
    for &i in deletes {
        let path = root.join(&entries[i].path);
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(partial("delete", path, e, done)),
        }
        done += 1;
        report.deleted.push(entries[i].path.clone());
    }
    // Directories a write needs stay (they are recreated anyway).
    let needed: HashSet<&Path> = staged
        .iter()
        .flat_map(|s| s.path.ancestors().skip(1))
        .collect();
    for &i in deletes {
        for dir in entries[i].path.ancestors().skip(1) {
            if dir.as_os_str().is_empty() || needed.contains(dir) {
                break;
            }
            if fs::remove_dir(root.join(dir)).is_err() {
                break;
            }
        }
    }
    for s in staged {
        let dest = root.join(&s.path);
        let still_dir = fs::symlink_metadata(&dest).is_ok_and(|m| m.is_dir());
        if s.replace_dir && still_dir && fs::remove_dir(&dest).is_err() {
            // Files the user added inside it: leave the directory alone.
            let _ = fs::remove_file(&s.temp);
            report.user_changed.push(s.path.clone());
            continue;
        }
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| partial("create the directory of", dest.clone(), e, done))?;
        }
        fs::rename(&s.temp, &dest).map_err(|e| partial("write", dest.clone(), e, done))?;
        done += 1;
        report.restored.push(s.path.clone());
    }
    Ok(())
}

/// `git diff-tree -r --raw` between the trees, gitlinks left out.
fn diff(git: &Git, expected: &str, target: &str) -> Result<Vec<Entry>, Failure> {
    let out = git.output(
        &[
            "diff-tree",
            "-r",
            "-z",
            "--no-renames",
            "--raw",
            expected,
            target,
        ],
        None,
    )?;
    if !out.status.success() {
        return Err(Failure::Trees(out));
    }
    let fields: Vec<&[u8]> = out.stdout.split(|b| *b == 0).collect();
    let mut entries = Vec::new();
    let mut i = 0;
    while i + 1 < fields.len() {
        let meta = fields[i];
        let path = fields[i + 1];
        i += 2;
        // ":100644 100755 <oid> <oid> M"
        let text = String::from_utf8_lossy(meta.strip_prefix(b":").unwrap_or(meta)).to_string();
        let parts: Vec<&str> = text.split(' ').collect();
        let [old_mode, new_mode, old_oid, new_oid, _status] = parts[..] else {
            return Err(CheckpointError::Git {
                command: "diff-tree".into(),
                store: git.git_dir.clone(),
                message: format!("unexpected output {text:?}"),
            }
            .into());
        };
        let side = |mode: &str, oid: &str| -> Option<Side> {
            let kind = match mode {
                "100644" => Kind::File { exec: false },
                "100755" => Kind::File { exec: true },
                "120000" => Kind::Symlink,
                _ => return None,
            };
            Some(Side {
                kind,
                oid: oid.to_string(),
            })
        };
        let expected = side(old_mode, old_oid);
        let target = side(new_mode, new_oid);
        if expected.is_none() && target.is_none() {
            continue;
        }
        entries.push(Entry {
            path: PathBuf::from(OsStr::from_bytes(path)),
            expected,
            target,
        });
    }
    Ok(entries)
}

/// What is at `rel` now, never looking through a symbolic link.
fn current_state(
    root: &Path,
    rel: &Path,
    ancestors: &mut HashMap<PathBuf, Anc>,
) -> Result<Current, CheckpointError> {
    let mut parents: Vec<&Path> = rel
        .ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .collect();
    parents.reverse();
    for a in parents {
        let kind = match ancestors.get(a) {
            Some(k) => *k,
            None => {
                let k = match fs::symlink_metadata(root.join(a)) {
                    Ok(m) if m.is_dir() => Anc::Dir,
                    Ok(_) => Anc::NotDir,
                    Err(_) => Anc::Absent,
                };
                ancestors.insert(a.to_path_buf(), k);
                k
            }
        };
        match kind {
            Anc::Dir => {}
            Anc::Absent => return Ok(Current::Absent),
            Anc::NotDir => return Ok(Current::BehindFile(a.to_path_buf())),
        }
    }
    let path = root.join(rel);
    match fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => Ok(Current::File {
            exec: m.mode() & 0o100 != 0,
            perm: m.mode() & 0o7777,
        }),
        Ok(m) if m.file_type().is_symlink() => match fs::read_link(&path) {
            Ok(t) => Ok(Current::Symlink(t.into_os_string().as_bytes().to_vec())),
            Err(_) => Ok(Current::Other),
        },
        Ok(m) if m.is_dir() => Ok(Current::Dir),
        Ok(_) => Ok(Current::Other),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            Ok(Current::Absent)
        }
        Err(source) => Err(CheckpointError::Io {
            action: "inspect",
            path,
            source,
            unchanged: true,
        }),
    }
}

/// The blob ids of the regular files `paths` as they are now (no filters),
/// in order.
fn hash_files<'a>(
    git: &Git,
    paths: impl Iterator<Item = &'a Path>,
) -> Result<Vec<String>, CheckpointError> {
    let mut input = Vec::new();
    let mut n = 0;
    for p in paths {
        git::stdin_path_line(p, &mut input);
        n += 1;
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    let out = git.output(
        &["hash-object", "--no-filters", "--stdin-paths"],
        Some(&input),
    )?;
    if !out.status.success() {
        return Err(CheckpointError::Io {
            action: "read the current content of the files to restore",
            path: git.work_tree.clone(),
            source: std::io::Error::other(git::stderr_message(&out)),
            unchanged: true,
        });
    }
    let oids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    if oids.len() != n {
        return Err(CheckpointError::Git {
            command: "hash-object".into(),
            store: git.git_dir.clone(),
            message: format!("{} ids for {n} files", oids.len()),
        });
    }
    Ok(oids)
}

/// The nearest existing real directory above `rel` (the workspace root at
/// worst): where its temporary file goes, so the rename stays on one
/// filesystem and creates no directory before the commit.
fn staging_dir(root: &Path, rel: &Path, ancestors: &HashMap<PathBuf, Anc>) -> PathBuf {
    for a in rel.ancestors().skip(1) {
        if a.as_os_str().is_empty() {
            break;
        }
        if ancestors.get(a) == Some(&Anc::Dir) {
            return root.join(a);
        }
    }
    root.to_path_buf()
}

/// Creates and removes a temporary file in `dir`.
fn probe_writable(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(
        ".dsh-checkpoint-probe-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&probe)?;
    fs::remove_file(&probe)
}

/// A running `git cat-file --batch` fed every id up front (from a thread,
/// so git streams without waiting for us); the blobs are read in order.
struct Blobs {
    child: Child,
    stdout: BufReader<ChildStdout>,
    feeder: Option<std::thread::JoinHandle<()>>,
}

impl Blobs {
    fn start(git: &Git, oids: Vec<String>) -> Result<Blobs, CheckpointError> {
        let mut cmd = git.command(["cat-file", "--batch"]);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| git.spawn_error(e))?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(git.spawn_error(std::io::Error::other("no pipes to git cat-file")));
        };
        let feeder = std::thread::spawn(move || {
            let mut input = Vec::with_capacity(oids.len() * 41);
            for o in oids {
                input.extend_from_slice(o.as_bytes());
                input.push(b'\n');
            }
            // A write error means git exited; the reader reports why.
            let _ = stdin.write_all(&input);
        });
        Ok(Blobs {
            child,
            stdout: BufReader::new(stdout),
            feeder: Some(feeder),
        })
    }

    /// The next blob, which must be `oid`, whole.
    fn read(&mut self, git: &Git, oid: &str, path: &Path) -> Result<Vec<u8>, CheckpointError> {
        let mut buf = Vec::new();
        self.copy(git, oid, path, &mut buf, path)?;
        Ok(buf)
    }

    /// Streams the next blob, which must be `oid` (the content of `path`),
    /// into `out` (`dest` names it in errors). A missing or unreadable
    /// object is `Unavailable`.
    fn copy(
        &mut self,
        git: &Git,
        oid: &str,
        path: &Path,
        out: &mut dyn Write,
        dest: &Path,
    ) -> Result<(), CheckpointError> {
        let unavailable = |this: &mut Blobs, what: String| {
            let detail = this.stderr();
            CheckpointError::Unavailable {
                store: git.git_dir.clone(),
                reason: if detail.is_empty() {
                    format!("{what} (the content of {})", path.display())
                } else {
                    format!("{what} (the content of {}): {detail}", path.display())
                },
            }
        };
        let mut header = String::new();
        if self.stdout.read_line(&mut header).unwrap_or(0) == 0 {
            return Err(unavailable(self, format!("object {oid} cannot be read")));
        }
        let parts: Vec<&str> = header.trim_end().split(' ').collect();
        let size = match parts[..] {
            [got, "blob", size] if got == oid => size.parse::<u64>().ok(),
            _ => None,
        };
        let Some(size) = size else {
            return Err(unavailable(
                self,
                format!("object {oid} is missing from the store"),
            ));
        };
        let copied = std::io::copy(&mut (&mut self.stdout).take(size), out).map_err(|source| {
            CheckpointError::Io {
                action: "write",
                path: dest.to_path_buf(),
                source,
                unchanged: true,
            }
        })?;
        let mut newline = [0u8; 1];
        if copied != size || self.stdout.read_exact(&mut newline).is_err() {
            return Err(unavailable(
                self,
                format!("object {oid} is truncated or corrupt"),
            ));
        }
        Ok(())
    }

    /// Ends the process and returns its stderr (trimmed).
    fn stderr(&mut self) -> String {
        let _ = self.child.kill();
        let mut text = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            let _ = err.read_to_string(&mut text);
        }
        let _ = self.child.wait();
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl Drop for Blobs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(f) = self.feeder.take() {
            let _ = f.join();
        }
    }
}
