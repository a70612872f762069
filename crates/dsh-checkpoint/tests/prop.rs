//! Random sequences of file operations: restoring any earlier snapshot gives
//! back exactly the files it had, and redo gives back the later ones.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{set_exec, write, Fixture};
use dsh_checkpoint::{CheckpointStore, Options};
use proptest::prelude::*;

/// The names files are drawn from: nested, with spaces, a newline, a
/// non-UTF-8 byte; some are each other's parent, so a file can become a
/// directory and back.
fn names() -> Vec<PathBuf> {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    vec![
        PathBuf::from("a"),
        PathBuf::from("a b.txt"),
        PathBuf::from("d/x"),
        PathBuf::from("d/y z"),
        PathBuf::from("d/e/f"),
        PathBuf::from("d/e"),
        PathBuf::from("n\nl"),
        PathBuf::from(OsStr::from_bytes(b"\xff-bin")),
        PathBuf::from("g/h/i/j"),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Write(usize, Vec<u8>),
    Delete(usize),
    Exec(usize, bool),
    Rename(usize, usize),
    Link(usize, usize),
    Snapshot,
}

fn op() -> impl Strategy<Value = Op> {
    let n = names().len();
    prop_oneof![
        4 => (0..n, proptest::collection::vec(any::<u8>(), 0..40)).prop_map(|(i, b)| Op::Write(i, b)),
        2 => (0..n).prop_map(Op::Delete),
        1 => (0..n, any::<bool>()).prop_map(|(i, x)| Op::Exec(i, x)),
        1 => (0..n, 0..n).prop_map(|(a, b)| Op::Rename(a, b)),
        1 => (0..n, 0..n).prop_map(|(a, b)| Op::Link(a, b)),
        2 => Just(Op::Snapshot),
    ]
}

/// Removes whatever is at `path` (a file, a link or a directory tree).
fn clear(path: &Path) {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path).unwrap(),
        Ok(_) => fs::remove_file(path).unwrap(),
        Err(_) => {}
    }
}

/// Makes room for a file at `rel`: ancestors that are files go.
fn make_room(ws: &Path, rel: &Path) {
    for a in rel
        .ancestors()
        .skip(1)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        if a.as_os_str().is_empty() {
            continue;
        }
        let p = ws.join(a);
        if fs::symlink_metadata(&p).is_ok_and(|m| !m.is_dir()) {
            fs::remove_file(&p).unwrap();
        }
    }
    clear(&ws.join(rel));
}

/// Removes empty directories (git does not track them), bottom-up.
fn prune(dir: &Path, root: bool) {
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().unwrap().is_dir() && e.file_name() != ".git" {
                prune(&e.path(), false);
            }
        }
    }
    if !root {
        let _ = fs::remove_dir(dir);
    }
}

fn apply(ws: &Path, op: &Op) {
    let names = names();
    match op {
        Op::Write(i, bytes) => {
            make_room(ws, &names[*i]);
            write(ws, &names[*i], bytes);
        }
        Op::Delete(i) => clear(&ws.join(&names[*i])),
        Op::Exec(i, x) => {
            if fs::symlink_metadata(ws.join(&names[*i])).is_ok_and(|m| m.is_file()) {
                set_exec(ws, &names[*i], *x);
            }
        }
        Op::Rename(a, b) => {
            let from = ws.join(&names[*a]);
            if a != b
                && fs::symlink_metadata(&from).is_ok_and(|m| !m.is_dir())
                && !names[*b].starts_with(&names[*a])
            {
                let bytes = fs::read(&from).ok();
                fs::remove_file(&from).unwrap();
                if let Some(bytes) = bytes {
                    make_room(ws, &names[*b]);
                    write(ws, &names[*b], bytes);
                }
            }
        }
        Op::Link(a, b) => {
            make_room(ws, &names[*a]);
            fs::create_dir_all(ws.join(&names[*a]).parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&names[*b], ws.join(&names[*a])).unwrap();
        }
        Op::Snapshot => {}
    }
    prune(ws, true);
}

fn run(ops: &[Op], watch: bool) {
    let fx = Fixture::new();
    let store = CheckpointStore::open_with(
        &fx.store_dir,
        &fx.ws,
        Options {
            watch,
            ..Options::default()
        },
    )
    .unwrap();
    let mut shots = vec![(store.snapshot().unwrap().tree, fx.tree())];
    for op in ops {
        apply(&fx.ws, op);
        if matches!(op, Op::Snapshot) {
            shots.push((store.snapshot().unwrap().tree, fx.tree()));
        }
    }
    shots.push((store.snapshot().unwrap().tree, fx.tree()));
    let (last_tree, last_files) = shots.last().cloned().unwrap();
    // Rewind to every earlier snapshot, then forward again.
    for (tree, files) in shots.iter().rev() {
        let report = store.revert(tree, &last_tree, false).unwrap();
        assert!(report.user_changed.is_empty(), "{report:?}");
        assert_eq!(&fx.tree(), files, "rewind to {tree}");
        assert_eq!(&store.snapshot().unwrap().tree, tree);
        let report = store.revert(&last_tree, tree, false).unwrap();
        assert!(report.user_changed.is_empty(), "{report:?}");
        assert_eq!(fx.tree(), last_files, "forward from {tree}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn restoring_a_snapshot_gives_back_its_files(ops in proptest::collection::vec(op(), 1..25), watch in any::<bool>()) {
        run(&ops, watch);
    }
}
