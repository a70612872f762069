//! Helpers shared by the integration tests: real files, real git.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use dsh_checkpoint::{CheckpointStore, Options};

/// What a workspace entry holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    File { bytes: Vec<u8>, exec: bool },
    Link(Vec<u8>),
    Dir,
}

/// Everything in `root` except `.git` directories and `skip`, by relative
/// path (directories included, so leftover empty directories show).
pub fn tree(root: &Path, skip: &[&str]) -> BTreeMap<PathBuf, Node> {
    let mut out = BTreeMap::new();
    walk(root, Path::new(""), skip, &mut out);
    out
}

fn walk(root: &Path, rel: &Path, skip: &[&str], out: &mut BTreeMap<PathBuf, Node>) {
    for entry in fs::read_dir(root.join(rel)).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == ".git"
            || skip
                .iter()
                .any(|s| name.as_bytes() == s.as_bytes() && rel.as_os_str().is_empty())
        {
            continue;
        }
        let path = rel.join(&name);
        let full = root.join(&path);
        let m = fs::symlink_metadata(&full).unwrap();
        if m.file_type().is_symlink() {
            out.insert(
                path,
                Node::Link(
                    fs::read_link(&full)
                        .unwrap()
                        .as_os_str()
                        .as_bytes()
                        .to_vec(),
                ),
            );
        } else if m.is_dir() {
            out.insert(path.clone(), Node::Dir);
            walk(root, &path, skip, out);
        } else {
            out.insert(
                path,
                Node::File {
                    bytes: fs::read(&full).unwrap(),
                    exec: m.mode() & 0o100 != 0,
                },
            );
        }
    }
}

/// Writes `bytes` to `root/rel`, creating parent directories.
pub fn write(root: &Path, rel: impl AsRef<Path>, bytes: impl AsRef<[u8]>) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

/// chmod +x / -x.
pub fn set_exec(root: &Path, rel: impl AsRef<Path>, exec: bool) {
    let path = root.join(rel);
    let mode = fs::metadata(&path).unwrap().permissions().mode();
    let mode = if exec { mode | 0o111 } else { mode & !0o111 };
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// A workspace directory and a store directory beside it.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub ws: PathBuf,
    pub store_dir: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        fs::create_dir(&ws).unwrap();
        let ws = fs::canonicalize(ws).unwrap();
        let store_dir = dir.path().join("data/sessions/s-1/checkpoints");
        Fixture { dir, ws, store_dir }
    }

    pub fn open(&self) -> CheckpointStore {
        CheckpointStore::open(&self.store_dir, &self.ws).unwrap()
    }

    pub fn open_without_watch(&self) -> CheckpointStore {
        CheckpointStore::open_with(
            &self.store_dir,
            &self.ws,
            Options {
                watch: false,
                ..Options::default()
            },
        )
        .unwrap()
    }

    pub fn tree(&self) -> BTreeMap<PathBuf, Node> {
        tree(&self.ws, &[])
    }

    /// Number of object files (loose objects and packs) in the store.
    pub fn object_files(&self) -> usize {
        count_files(&self.store_dir.join("objects"))
    }
}

pub fn count_files(dir: &Path) -> usize {
    let mut n = 0;
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            n += count_files(&e.path());
        } else {
            n += 1;
        }
    }
    n
}

/// Runs the user's git in `dir` with a clean configuration; panics on failure.
pub fn user_git(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Whether this process runs as root (permission bits do not stop it).
pub fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}
