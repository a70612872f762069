//! The file tools against hostile file systems: `..` paths, names that are
//! not UTF-8, files that vanish or turn into directories between a read and
//! a write, and another process changing a file between read and edit.
//! Each gives a coded error or the right result; none leaves a half-written
//! file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, SystemTime};

use common::{err, ok, Fx};
use serde_json::json;

/// Temporary files of the atomic writer left in `dir` (there must be none).
fn leftovers(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".dsh-write-"))
        .collect()
}

#[tokio::test]
async fn dot_dot_paths_name_the_same_file_for_the_guard() {
    let fx = Fx::new();
    std::fs::create_dir(fx.path("sub")).unwrap();
    std::fs::write(fx.path("a.txt"), "one\n").unwrap();
    // Observed as `sub/../a.txt`, edited as `a.txt`: one file, one version.
    ok(&fx.call("read", json!({"file_path": "sub/../a.txt"})).await);
    ok(&fx
        .call(
            "edit",
            json!({"file_path": "a.txt", "old_string": "one", "new_string": "two"}),
        )
        .await);
    assert_eq!(std::fs::read_to_string(fx.path("a.txt")).unwrap(), "two\n");
    // A new file through `..` lands where the path points.
    ok(&fx
        .call(
            "write",
            json!({"file_path": "sub/../b.txt", "content": "b\n"}),
        )
        .await);
    assert_eq!(std::fs::read_to_string(fx.path("b.txt")).unwrap(), "b\n");
    assert!(!fx.path("sub/b.txt").exists());
    // `..` through a missing directory is a plain not-found.
    err(
        &fx.call("read", json!({"file_path": "nope/../a.txt"})).await,
        "FS_NOT_FOUND",
    );
}

#[tokio::test]
async fn a_name_that_is_not_utf8_is_reported_not_panicked_on() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fx::new();
    let raw = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(fx.dir.path().join(raw), "latin-1 name\n").unwrap();
    // The model can only name it lossily; that name does not exist.
    let t = err(
        &fx.call("read", json!({"file_path": "caf\u{FFFD}.txt"}))
            .await,
        "FS_NOT_FOUND",
    );
    assert!(t.contains("caf"), "{t}");
    // Writing the lossy name creates a separate, valid file and leaves the
    // original alone.
    ok(&fx
        .call(
            "write",
            json!({"file_path": "caf\u{FFFD}.txt", "content": "utf-8 name\n"}),
        )
        .await);
    assert_eq!(
        std::fs::read_to_string(fx.dir.path().join(raw)).unwrap(),
        "latin-1 name\n"
    );
}

#[tokio::test]
async fn a_file_that_vanished_after_the_read_is_created_again_by_write() {
    let fx = Fx::new();
    std::fs::write(fx.path("v.txt"), "old\n").unwrap();
    ok(&fx.call("read", json!({"file_path": "v.txt"})).await);
    std::fs::remove_file(fx.path("v.txt")).unwrap();
    ok(&fx
        .call("write", json!({"file_path": "v.txt", "content": "new\n"}))
        .await);
    assert_eq!(std::fs::read_to_string(fx.path("v.txt")).unwrap(), "new\n");
}

#[tokio::test]
async fn a_file_replaced_by_a_directory_is_refused_by_every_tool() {
    let fx = Fx::new();
    std::fs::write(fx.path("d"), "was a file\n").unwrap();
    ok(&fx.call("read", json!({"file_path": "d"})).await);
    std::fs::remove_file(fx.path("d")).unwrap();
    std::fs::create_dir(fx.path("d")).unwrap();
    std::fs::write(fx.path("d/inside.txt"), "kept\n").unwrap();
    err(
        &fx.call("write", json!({"file_path": "d", "content": "x"}))
            .await,
        "FS_IS_DIRECTORY",
    );
    err(
        &fx.call(
            "edit",
            json!({"file_path": "d", "old_string": "was", "new_string": "is"}),
        )
        .await,
        "FS_IS_DIRECTORY",
    );
    err(
        &fx.call("read", json!({"file_path": "d"})).await,
        "FS_IS_DIRECTORY",
    );
    assert_eq!(
        std::fs::read_to_string(fx.path("d/inside.txt")).unwrap(),
        "kept\n"
    );
    assert!(leftovers(fx.dir.path()).is_empty());
}

#[tokio::test]
async fn another_process_changing_the_file_makes_the_edit_stale() {
    let fx = Fx::new();
    std::fs::write(fx.path("c.txt"), "alpha\nbeta\n").unwrap();
    ok(&fx.call("read", json!({"file_path": "c.txt"})).await);
    // A real other process appends a line.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg("printf 'gamma\\n' >> c.txt")
        .current_dir(fx.dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let t = err(
        &fx.call(
            "edit",
            json!({"file_path": "c.txt", "old_string": "alpha", "new_string": "ALPHA"}),
        )
        .await,
        "FS_STALE_VERSION",
    );
    assert!(t.contains("read it again"), "{t}");
    assert_eq!(
        std::fs::read_to_string(fx.path("c.txt")).unwrap(),
        "alpha\nbeta\ngamma\n",
        "the other process's change survives"
    );
    // After a fresh read the edit goes through and keeps their line.
    ok(&fx.call("read", json!({"file_path": "c.txt"})).await);
    ok(&fx
        .call(
            "edit",
            json!({"file_path": "c.txt", "old_string": "alpha", "new_string": "ALPHA"}),
        )
        .await);
    assert_eq!(
        std::fs::read_to_string(fx.path("c.txt")).unwrap(),
        "ALPHA\nbeta\ngamma\n"
    );
}

#[tokio::test]
async fn a_same_size_change_with_the_old_mtime_is_caught_by_the_hash() {
    let fx = Fx::new();
    std::fs::write(fx.path("h.txt"), "value = 1\n").unwrap();
    let mtime = std::fs::metadata(fx.path("h.txt"))
        .unwrap()
        .modified()
        .unwrap();
    ok(&fx.call("read", json!({"file_path": "h.txt"})).await);
    // Same length, and the modification time put back: only the content
    // hash can tell.
    std::fs::write(fx.path("h.txt"), "value = 2\n").unwrap();
    let f = std::fs::File::options()
        .write(true)
        .open(fx.path("h.txt"))
        .unwrap();
    f.set_modified(mtime).unwrap();
    drop(f);
    assert_eq!(
        std::fs::metadata(fx.path("h.txt"))
            .unwrap()
            .modified()
            .unwrap(),
        mtime
    );
    err(
        &fx.call("write", json!({"file_path": "h.txt", "content": "mine\n"}))
            .await,
        "FS_STALE_VERSION",
    );
    assert_eq!(
        std::fs::read_to_string(fx.path("h.txt")).unwrap(),
        "value = 2\n"
    );
}

#[tokio::test]
async fn a_touched_but_unchanged_file_is_still_fresh() {
    let fx = Fx::new();
    std::fs::write(fx.path("t.txt"), "same\n").unwrap();
    ok(&fx.call("read", json!({"file_path": "t.txt"})).await);
    // `touch`: a new modification time, the same bytes.
    let later = SystemTime::now() + Duration::from_secs(5);
    let f = std::fs::File::options()
        .write(true)
        .open(fx.path("t.txt"))
        .unwrap();
    f.set_modified(later).unwrap();
    drop(f);
    // The guard compares contents (length and hash), so a touch alone
    // does not force a re-read.
    ok(&fx
        .call(
            "edit",
            json!({"file_path": "t.txt", "old_string": "same", "new_string": "new"}),
        )
        .await);
    assert_eq!(std::fs::read_to_string(fx.path("t.txt")).unwrap(), "new\n");
}
