//! Snapshots and restores against real files and a real git.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use common::{set_exec, user_git, write, Fixture, Node};
use dsh_checkpoint::{ChangeKind, CheckpointStore, SkipReason, Uncovered, MAX_FILE_BYTES};
use dsh_protocol::ErrorCode;

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

/// A workspace with the awkward names the tests care about.
fn populate(ws: &Path) {
    write(ws, "src/main.rs", "fn main() {}\n");
    write(ws, "src/lib/deep/mod.rs", "pub mod x;\n");
    write(ws, "with space.txt", "spaces\n");
    write(ws, "new\nline.txt", "newline in the name\n");
    write(ws, OsStr::from_bytes(b"latin1-\xe9.txt"), "not utf-8\n");
    write(ws, "crlf.txt", "a\r\nb\r\n");
    write(ws, ".gitattributes", "* text=auto eol=lf\n");
    write(ws, "script.sh", "#!/bin/sh\necho hi\n");
    set_exec(ws, "script.sh", true);
    std::os::unix::fs::symlink("src/main.rs", ws.join("link")).unwrap();
}

/// What a turn of `bash` commands might do.
fn bash_turn(ws: &Path) {
    write(ws, "src/main.rs", "fn main() { println!(\"changed\"); }\n"); // sed -i
    fs::remove_file(ws.join("with space.txt")).unwrap(); // rm
    set_exec(ws, "src/main.rs", true); // chmod +x
    set_exec(ws, "script.sh", false); // chmod -x
    fs::rename(ws.join("src/lib/deep/mod.rs"), ws.join("moved.rs")).unwrap(); // mv
    fs::remove_dir(ws.join("src/lib/deep")).unwrap();
    fs::remove_dir(ws.join("src/lib")).unwrap();
    write(ws, "gen/a/b/c.rs", "// generated\n"); // a code generator
    write(ws, "new\nline.txt", "rewritten\n");
    write(ws, "crlf.txt", "a\nb\n"); // dos2unix
    fs::remove_file(ws.join("link")).unwrap();
    std::os::unix::fs::symlink("moved.rs", ws.join("link")).unwrap(); // ln -sf
}

#[test]
fn undo_and_redo_of_a_bash_turn_restore_every_file_exactly() {
    let fx = Fixture::new();
    populate(&fx.ws);
    let store = fx.open();
    let before_tree = fx.tree();
    let b = store.snapshot().unwrap();
    bash_turn(&fx.ws);
    let after_tree = fx.tree();
    let e = store.snapshot().unwrap();
    assert_ne!(b.tree, e.tree);

    let changes = store.changed(&b.tree, &e.tree).unwrap();
    let listed: Vec<(PathBuf, ChangeKind)> =
        changes.into_iter().map(|c| (c.path, c.kind)).collect();
    assert_eq!(
        listed,
        vec![
            (p("crlf.txt"), ChangeKind::Modified),
            (p("gen/a/b/c.rs"), ChangeKind::Added),
            (p("link"), ChangeKind::Modified),
            (p("moved.rs"), ChangeKind::Added),
            (p("new\nline.txt"), ChangeKind::Modified),
            (p("script.sh"), ChangeKind::Modified),
            (p("src/lib/deep/mod.rs"), ChangeKind::Deleted),
            (p("src/main.rs"), ChangeKind::Modified),
            (p("with space.txt"), ChangeKind::Deleted),
        ]
    );

    // /undo
    let report = store.revert(&b.tree, &e.tree, false).unwrap();
    assert_eq!(
        fx.tree(),
        before_tree,
        "undo restores the earlier files, modes and links"
    );
    assert_eq!(report.deleted, vec![p("gen/a/b/c.rs"), p("moved.rs")]);
    assert!(report.user_changed.is_empty());
    assert_eq!(report.restored.len(), 7, "{report:?}");
    assert!(
        !fx.ws.join("gen").exists(),
        "directories left empty are removed"
    );
    assert_eq!(
        fs::read(fx.ws.join("crlf.txt")).unwrap(),
        b"a\r\nb\r\n",
        "raw bytes, no eol conversion"
    );
    assert_eq!(store.snapshot().unwrap().tree, b.tree);

    // /redo
    let report = store.revert(&e.tree, &b.tree, false).unwrap();
    assert_eq!(fx.tree(), after_tree);
    assert!(report.user_changed.is_empty());
    assert_eq!(store.snapshot().unwrap().tree, e.tree);
}

#[test]
fn a_workspace_that_is_a_git_repository_keeps_its_index_refs_and_stash() {
    let fx = Fixture::new();
    let ws = &fx.ws;
    user_git(ws, &["init", "-q", "-b", "main"]);
    write(ws, ".gitignore", "target/\n");
    write(ws, "a.txt", "one\n");
    write(ws, "b.txt", "two\n");
    user_git(ws, &["add", "-A"]);
    user_git(ws, &["commit", "-q", "-m", "first"]);
    write(ws, "a.txt", "stashed change\n");
    user_git(ws, &["stash", "-q"]);
    write(ws, "b.txt", "staged\n");
    user_git(ws, &["add", "b.txt"]);
    write(ws, "b.txt", "staged and then modified\n");
    write(ws, "untracked.txt", "u\n");

    let state = |ws: &Path| {
        // The index first: `git status` may refresh it.
        let index = fs::read(ws.join(".git/index")).unwrap();
        (
            user_git(
                ws,
                &[
                    "--no-optional-locks",
                    "status",
                    "--porcelain=v1",
                    "-z",
                    "--untracked-files=all",
                ],
            ),
            index,
            user_git(ws, &["for-each-ref", "--format=%(refname) %(objectname)"]),
            user_git(ws, &["stash", "list"]),
            common::tree(&ws.join(".git"), &[])
                .into_keys()
                .collect::<Vec<_>>(),
        )
    };
    let before = state(ws);

    let store = fx.open();
    let b = store.snapshot().unwrap();
    write(ws, "a.txt", "agent edit\n");
    write(ws, "c.txt", "agent file\n");
    fs::remove_file(ws.join("untracked.txt")).unwrap();
    let e = store.snapshot().unwrap();
    let report = store.revert(&b.tree, &e.tree, false).unwrap();
    assert_eq!(report.restored, vec![p("a.txt"), p("untracked.txt")]);
    assert_eq!(report.deleted, vec![p("c.txt")]);

    let after = state(ws);
    assert_eq!(
        String::from_utf8_lossy(&after.0),
        String::from_utf8_lossy(&before.0),
        "git status"
    );
    assert!(after.1 == before.1, ".git/index bytes changed");
    assert_eq!(after.2, before.2, "refs");
    assert_eq!(after.3, before.3, "stash");
    assert_eq!(after.4, before.4, "files under .git");
}

#[test]
fn gitignore_and_the_repositorys_exclude_file_are_honoured() {
    let fx = Fixture::new();
    let ws = &fx.ws;
    user_git(ws, &["init", "-q"]);
    write(ws, ".git/info/exclude", "local-only.txt\n");
    write(ws, ".gitignore", "target/\n*.log\n");
    write(ws, "sub/.gitignore", "secret.txt\n");
    write(ws, "src/a.rs", "a\n");
    write(ws, "target/debug/bin", "binary\n");
    write(ws, "run.log", "log\n");
    write(ws, "sub/secret.txt", "s\n");
    write(ws, "local-only.txt", "l\n");
    let store = fx.open();
    let b = store.snapshot().unwrap();
    write(ws, "src/a.rs", "a2\n");
    write(ws, "target/debug/bin", "binary2\n");
    write(ws, "run.log", "log2\n");
    write(ws, "local-only.txt", "l2\n");
    let e = store.snapshot().unwrap();
    let changed: Vec<PathBuf> = store
        .changed(&b.tree, &e.tree)
        .unwrap()
        .into_iter()
        .map(|c| c.path)
        .collect();
    assert_eq!(changed, vec![p("src/a.rs")]);

    let cov = store
        .coverage(&[
            p("target/debug/bin"),
            p("run.log"),
            p("sub/secret.txt"),
            p("local-only.txt"),
            p("src/a.rs"),
            p("src/not-yet.rs"),
            p(".git/config"),
            p("../elsewhere"),
            fx.ws.join("src/a.rs"),
        ])
        .unwrap();
    assert_eq!(
        cov,
        vec![
            Some(Uncovered::Ignored),
            Some(Uncovered::Ignored),
            Some(Uncovered::Ignored),
            Some(Uncovered::Ignored),
            None,
            None,
            Some(Uncovered::GitMetadata),
            Some(Uncovered::OutsideWorkspace),
            None,
        ]
    );

    store.revert(&b.tree, &e.tree, false).unwrap();
    assert_eq!(fs::read_to_string(ws.join("src/a.rs")).unwrap(), "a\n");
    assert_eq!(
        fs::read_to_string(ws.join("target/debug/bin")).unwrap(),
        "binary2\n",
        "ignored files untouched"
    );
    assert_eq!(fs::read_to_string(ws.join("run.log")).unwrap(), "log2\n");
}

#[test]
fn files_over_ten_megabytes_are_skipped_and_reported() {
    let fx = Fixture::new();
    let ws = &fx.ws;
    write(ws, "small.txt", "s\n");
    write(ws, "grows.bin", "tiny\n");
    let big = vec![b'x'; MAX_FILE_BYTES as usize + 1];
    write(ws, "big.bin", &big);
    let store = fx.open_without_watch();
    let b = store.snapshot().unwrap();
    assert_eq!(b.skipped.len(), 1);
    assert_eq!(b.skipped[0].path, p("big.bin"));
    assert_eq!(b.skipped[0].size, MAX_FILE_BYTES + 1);
    assert_eq!(b.skipped[0].reason, SkipReason::TooLarge);
    let mtime = fs::metadata(ws.join("big.bin"))
        .unwrap()
        .modified()
        .unwrap();
    let ms = mtime
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert_eq!(b.skipped[0].mtime_ms, ms);

    // A tracked file that grows past the limit leaves the snapshot.
    write(ws, "grows.bin", &big);
    let e = store.snapshot().unwrap();
    let skipped: Vec<PathBuf> = e.skipped.iter().map(|s| s.path.clone()).collect();
    assert_eq!(skipped, vec![p("big.bin"), p("grows.bin")]);
    let changes = store.changed(&b.tree, &e.tree).unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(
        (changes[0].path.clone(), changes[0].kind),
        (p("grows.bin"), ChangeKind::Deleted)
    );
    assert_eq!(
        store.coverage(&[p("big.bin"), p("small.txt")]).unwrap(),
        vec![
            Some(Uncovered::TooLarge {
                size: MAX_FILE_BYTES + 1
            }),
            None
        ]
    );
    // No blob of the big file was stored.
    let sizes = common::count_files(&fx.store_dir.join("objects"));
    assert!(sizes < 20, "{sizes} object files");
    let total: u64 = walk_sizes(&fx.store_dir.join("objects"));
    assert!(
        total < 1024 * 1024,
        "the store holds {total} bytes of objects"
    );
}

fn walk_sizes(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                walk_sizes(&e.path())
            } else {
                e.metadata().unwrap().len()
            }
        })
        .sum()
}

#[test]
fn files_changed_by_hand_are_left_alone_unless_forced() {
    let fx = Fixture::new();
    let ws = &fx.ws;
    write(ws, "agent.txt", "v1\n");
    write(ws, "user.txt", "v1\n");
    write(ws, "gone.txt", "v1\n");
    let store = fx.open();
    let b = store.snapshot().unwrap();
    write(ws, "agent.txt", "agent v2\n");
    write(ws, "user.txt", "agent v2\n");
    write(ws, "created.txt", "agent\n");
    fs::remove_file(ws.join("gone.txt")).unwrap();
    let e = store.snapshot().unwrap();
    // The user edits after the turn.
    write(ws, "user.txt", "user v3\n");
    write(ws, "created.txt", "user edit\n");
    write(ws, "gone.txt", "user recreated\n");

    let report = store.revert(&b.tree, &e.tree, false).unwrap();
    assert_eq!(report.restored, vec![p("agent.txt")]);
    assert!(report.deleted.is_empty());
    assert_eq!(
        report.user_changed,
        vec![p("created.txt"), p("gone.txt"), p("user.txt")]
    );
    assert_eq!(fs::read_to_string(ws.join("agent.txt")).unwrap(), "v1\n");
    assert_eq!(
        fs::read_to_string(ws.join("user.txt")).unwrap(),
        "user v3\n"
    );
    assert_eq!(
        fs::read_to_string(ws.join("created.txt")).unwrap(),
        "user edit\n"
    );

    let report = store.revert(&b.tree, &e.tree, true).unwrap();
    assert_eq!(
        report.restored,
        vec![p("gone.txt"), p("user.txt")],
        "agent.txt is already restored"
    );
    assert_eq!(report.deleted, vec![p("created.txt")]);
    assert!(report.user_changed.is_empty());
    assert_eq!(store.snapshot().unwrap().tree, b.tree);
}

#[test]
fn a_deleted_store_is_unavailable_and_changes_nothing() {
    let fx = Fixture::new();
    write(&fx.ws, "a.txt", "v1\n");
    let store = fx.open();
    let b = store.snapshot().unwrap();
    write(&fx.ws, "a.txt", "v2\n");
    write(&fx.ws, "b.txt", "new\n");
    let e = store.snapshot().unwrap();
    let before = fx.tree();
    fs::remove_dir_all(&fx.store_dir).unwrap();

    let err = store.revert(&b.tree, &e.tree, true).unwrap_err();
    assert_eq!(err.code(), "CHECKPOINT_UNAVAILABLE", "{err}");
    assert!(err.to_string().contains("no files were changed"), "{err}");
    assert_eq!(fx.tree(), before);
    assert!(!store.has_tree(&b.tree));
    assert_eq!(
        store.snapshot().unwrap_err().code(),
        "CHECKPOINT_UNAVAILABLE"
    );
    assert_eq!(
        store.changed(&b.tree, &e.tree).unwrap_err().code(),
        "CHECKPOINT_UNAVAILABLE"
    );

    // Opening again starts a new, empty store; the old value stays unusable.
    let reopened = fx.open();
    assert!(!reopened.has_tree(&b.tree));
    assert!(reopened.has_tree(&reopened.snapshot().unwrap().tree));
    assert_eq!(
        store.snapshot().unwrap_err().code(),
        "CHECKPOINT_UNAVAILABLE"
    );
}

#[test]
fn a_store_missing_an_object_is_unavailable_and_changes_nothing() {
    let fx = Fixture::new();
    for i in 0..20 {
        write(&fx.ws, format!("f{i:02}.txt"), format!("original {i}\n"));
    }
    let store = fx.open_without_watch();
    let b = store.snapshot().unwrap();
    for i in 0..20 {
        write(&fx.ws, format!("f{i:02}.txt"), format!("changed {i}\n"));
    }
    let e = store.snapshot().unwrap();
    let before = fx.tree();
    // Delete the blob of the last file the restore needs.
    let oid = String::from_utf8(
        std::process::Command::new("git")
            .args(["hash-object", "--stdin"])
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(b"original 19\n")?;
                c.wait_with_output()
            })
            .unwrap()
            .stdout,
    )
    .unwrap();
    let oid = oid.trim();
    let object = fx.store_dir.join("objects").join(&oid[..2]).join(&oid[2..]);
    assert!(object.exists(), "{object:?}");
    fs::remove_file(&object).unwrap();
    assert!(store.has_tree(&b.tree), "the tree object itself is intact");

    let err = store.revert(&b.tree, &e.tree, false).unwrap_err();
    assert_eq!(err.code(), "CHECKPOINT_UNAVAILABLE", "{err}");
    assert!(err.to_string().contains("f19.txt"), "{err}");
    assert_eq!(
        fx.tree(),
        before,
        "no file changed and no temporary file is left"
    );

    // A damaged (not just missing) object is caught too.
    fs::write(&object, b"garbage that does not inflate").unwrap();
    let err = store.revert(&b.tree, &e.tree, false).unwrap_err();
    assert_eq!(err.code(), "CHECKPOINT_UNAVAILABLE", "{err}");
    assert_eq!(fx.tree(), before);
}

#[test]
fn an_unwritable_directory_fails_naming_the_file_and_changes_nothing() {
    if common::is_root() {
        // Permission bits do not stop root; the immutable attribute does.
        if std::process::Command::new("chattr")
            .arg("--help")
            .output()
            .is_err()
        {
            eprintln!("skipped: running as root without chattr");
            return;
        }
    }
    let fx = Fixture::new();
    write(&fx.ws, "a.txt", "v1\n");
    write(&fx.ws, "locked/b.txt", "v1\n");
    let store = fx.open();
    let b = store.snapshot().unwrap();
    write(&fx.ws, "a.txt", "v2\n");
    write(&fx.ws, "locked/b.txt", "v2\n");
    write(&fx.ws, "locked/new.txt", "new\n");
    let e = store.snapshot().unwrap();
    let before = fx.tree();
    let locked = fx.ws.join("locked");
    let lock = |on: bool| {
        if common::is_root() {
            let ok = std::process::Command::new("chattr")
                .arg(if on { "+i" } else { "-i" })
                .arg(&locked)
                .status()
                .is_ok_and(|s| s.success());
            ok
        } else {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(
                &locked,
                fs::Permissions::from_mode(if on { 0o555 } else { 0o755 }),
            )
            .unwrap();
            true
        }
    };
    if !lock(true) {
        eprintln!("skipped: chattr +i is not supported here");
        return;
    }
    let err = store.revert(&b.tree, &e.tree, false).unwrap_err();
    lock(false);
    assert_eq!(err.code(), "CHECKPOINT_FAILED", "{err}");
    let msg = err.to_string();
    assert!(msg.contains("locked/"), "{msg}");
    assert!(msg.contains("no files were changed"), "{msg}");
    assert_eq!(fx.tree(), before);
    // Unlocked, it works.
    store.revert(&b.tree, &e.tree, false).unwrap();
    assert_eq!(
        fs::read_to_string(fx.ws.join("locked/b.txt")).unwrap(),
        "v1\n"
    );
}

#[test]
fn an_unchanged_workspace_writes_no_object() {
    let fx = Fixture::new();
    for i in 0..50 {
        write(&fx.ws, format!("d{}/f{i}.txt", i % 5), format!("{i}\n"));
    }
    for watch in [true, false] {
        let store = if watch {
            fx.open()
        } else {
            fx.open_without_watch()
        };
        let first = store.snapshot().unwrap();
        let objects = fx.object_files();
        let again = store.snapshot().unwrap();
        assert_eq!(again, first);
        // Touched but not changed: the stat data differs, the content not.
        let f = fs::File::options()
            .append(true)
            .open(fx.ws.join("d1/f1.txt"))
            .unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
        drop(f);
        let touched = store.snapshot().unwrap();
        assert_eq!(touched.tree, first.tree);
        assert_eq!(
            fx.object_files(),
            objects,
            "watch={watch}: no new object file"
        );
    }
}

#[test]
fn the_watch_sees_every_kind_of_change() {
    let fx = Fixture::new();
    write(&fx.ws, "a/b/c.txt", "c\n");
    write(&fx.ws, "empty-later/x.txt", "x\n");
    fs::create_dir(fx.ws.join("empty")).unwrap();
    let store = fx.open();
    let mut last = store.snapshot().unwrap().tree;
    type Step = Box<dyn Fn(&Path)>;
    let steps: Vec<(&str, Step)> = vec![
        (
            "modify in place",
            Box::new(|ws| write(ws, "a/b/c.txt", "c2\n")),
        ),
        (
            "create in an empty dir",
            Box::new(|ws| write(ws, "empty/new.txt", "n\n")),
        ),
        (
            "create a deep new dir",
            Box::new(|ws| write(ws, "n1/n2/n3/f.txt", "f\n")),
        ),
        (
            "write into the new dir",
            Box::new(|ws| write(ws, "n1/n2/n3/g.txt", "g\n")),
        ),
        ("chmod", Box::new(|ws| set_exec(ws, "a/b/c.txt", true))),
        (
            "delete",
            Box::new(|ws| fs::remove_file(ws.join("empty-later/x.txt")).unwrap()),
        ),
        (
            "rename a dir",
            Box::new(|ws| fs::rename(ws.join("n1"), ws.join("m1")).unwrap()),
        ),
        (
            "write in the renamed dir",
            Box::new(|ws| write(ws, "m1/n2/n3/f.txt", "f2\n")),
        ),
        (
            "a .gitignore that ignores a file",
            Box::new(|ws| write(ws, ".gitignore", "empty/\n")),
        ),
    ];
    for (what, step) in steps {
        step(&fx.ws);
        let now = store.snapshot().unwrap().tree;
        assert_ne!(now, last, "{what}: the snapshot did not see the change");
        last = now.clone();
        let unwatched = CheckpointStore::open_with(
            fx.dir.path().join("scratch-store"),
            &fx.ws,
            dsh_checkpoint::Options {
                watch: false,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            unwatched.snapshot().unwrap().tree,
            now,
            "{what}: watched and full scans agree"
        );
    }
}

#[test]
fn nested_repositories_do_not_break_snapshots() {
    let fx = Fixture::new();
    write(&fx.ws, "top.txt", "t\n");
    // `cargo new` outside a repository: a nested repo without a commit.
    write(&fx.ws, "crate/src/main.rs", "fn main() {}\n");
    user_git(&fx.ws.join("crate"), &["init", "-q"]);
    let store = fx.open();
    let s = store.snapshot().unwrap();
    assert!(store.has_tree(&s.tree));
    assert_eq!(
        store
            .coverage(&[p("crate/src/main.rs"), p("top.txt")])
            .unwrap(),
        vec![Some(Uncovered::NestedRepository), None]
    );
}

#[test]
fn a_store_inside_the_workspace_does_not_snapshot_itself() {
    let dir = tempfile::tempdir().unwrap();
    let ws = fs::canonicalize(dir.path()).unwrap();
    write(&ws, "a.txt", "a\n");
    let store = CheckpointStore::open(ws.join(".dsh/checkpoints/s 1"), &ws).unwrap();
    let b = store.snapshot().unwrap();
    write(&ws, "a.txt", "b\n");
    let e = store.snapshot().unwrap();
    let changed: Vec<PathBuf> = store
        .changed(&b.tree, &e.tree)
        .unwrap()
        .into_iter()
        .map(|c| c.path)
        .collect();
    assert_eq!(changed, vec![p("a.txt")]);
    let mode = fs::metadata(store.git_dir()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(mode.permissions().mode() & 0o777, 0o700);
}

#[test]
fn bad_tree_ids_are_rejected() {
    let fx = Fixture::new();
    let store = fx.open();
    let s = store.snapshot().unwrap();
    let err = store.revert("--output=/tmp/x", &s.tree, false).unwrap_err();
    assert_eq!(err.code(), "CHECKPOINT_FAILED");
    let unknown = "0123456789012345678901234567890123456789";
    assert!(!store.has_tree(unknown));
    assert_eq!(
        store.revert(unknown, &s.tree, false).unwrap_err().code(),
        "CHECKPOINT_UNAVAILABLE"
    );
}

#[test]
fn a_file_replaced_by_a_directory_and_back() {
    let fx = Fixture::new();
    write(&fx.ws, "x", "a file\n");
    let store = fx.open();
    let b = store.snapshot().unwrap();
    fs::remove_file(fx.ws.join("x")).unwrap();
    write(&fx.ws, "x/inner.txt", "now a dir\n");
    let e = store.snapshot().unwrap();
    let before = common::tree(&fx.ws, &[]);
    store.revert(&b.tree, &e.tree, false).unwrap();
    assert_eq!(fs::read_to_string(fx.ws.join("x")).unwrap(), "a file\n");
    store.revert(&e.tree, &b.tree, false).unwrap();
    assert_eq!(common::tree(&fx.ws, &[]), before);
    assert!(matches!(fx.tree().get(&p("x")), Some(Node::Dir)));
}

#[test]
fn a_symlink_replaced_by_a_directory_and_back() {
    let fx = Fixture::new();
    write(&fx.ws, "a", "target of the link\n");
    std::os::unix::fs::symlink("a", fx.ws.join("l")).unwrap();
    let store = fx.open();
    let b = store.snapshot().unwrap();
    let before = fx.tree();
    fs::remove_file(fx.ws.join("l")).unwrap();
    write(&fx.ws, "l/inner", "now a directory\n");
    let e = store.snapshot().unwrap();
    let after = fx.tree();
    let report = store.revert(&b.tree, &e.tree, false).unwrap();
    assert!(report.user_changed.is_empty(), "{report:?}");
    assert_eq!(fx.tree(), before);
    // Forward: `l/inner` lies behind the link `l`, which this restore deletes.
    let report = store.revert(&e.tree, &b.tree, false).unwrap();
    assert!(report.user_changed.is_empty(), "{report:?}");
    assert_eq!(fx.tree(), after);
    // A link the restore does not delete is never written through.
    store.revert(&b.tree, &e.tree, false).unwrap();
    write(&fx.ws, "outside/keep", "k\n");
    fs::remove_file(fx.ws.join("l")).unwrap();
    std::os::unix::fs::symlink("outside", fx.ws.join("l")).unwrap();
    let report = store.revert(&e.tree, &b.tree, false).unwrap();
    assert_eq!(report.user_changed, vec![p("l"), p("l/inner")]);
    assert_eq!(
        fs::read_dir(fx.ws.join("outside")).unwrap().count(),
        1,
        "nothing written through the link"
    );
    // Forced, the link itself goes and a real directory takes its place.
    let report = store.revert(&e.tree, &b.tree, true).unwrap();
    assert!(report.user_changed.is_empty(), "{report:?}");
    assert_eq!(fs::read_dir(fx.ws.join("outside")).unwrap().count(), 1);
    assert!(fs::symlink_metadata(fx.ws.join("l")).unwrap().is_dir());
}
