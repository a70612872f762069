//! The file tools against real files in temporary directories, called
//! through a ToolRegistry (so the schema path runs too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{err, ok, Fx};
use serde_json::json;

#[tokio::test]
async fn read_shows_numbered_windows_and_says_what_is_left() {
    let fx = Fx::new();
    let text: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(fx.path("big.txt"), &text).unwrap();
    let r = ok(&fx.call("read", json!({"file_path": "big.txt"})).await);
    assert!(
        r.starts_with("     1\tline 1\n     2\tline 2\n"),
        "{}",
        &r[..40]
    );
    assert!(
        r.ends_with("(lines 1-2000 of 5000; use offset to read on)\n"),
        "{}",
        &r[r.len() - 80..]
    );
    let r = ok(&fx
        .call(
            "read",
            json!({"file_path": fx.path("big.txt"), "offset": 4999, "limit": 10}),
        )
        .await);
    assert_eq!(
        r,
        "  4999\tline 4999\n  5000\tline 5000\n(lines 4999-5000 of 5000; use offset to read on)\n"
    );
    let r = ok(&fx
        .call("read", json!({"file_path": "big.txt", "offset": 9000}))
        .await);
    assert!(r.contains("offset 9000 is past the end"), "{r}");
    // Bounds are schema rules.
    let r = fx
        .call("read", json!({"file_path": "big.txt", "limit": 2001}))
        .await;
    assert!(err(&r, "INVALID_ARGS").contains("\"limit\" must be at most 2000"));
    let r = fx
        .call("read", json!({"file_path": "big.txt", "offset": 0}))
        .await;
    assert!(err(&r, "INVALID_ARGS").contains("\"offset\" must be at least 1"));
}

#[tokio::test]
async fn read_caps_output_and_long_lines_and_marks_bad_utf8() {
    let fx = Fx::new();
    let long = "x".repeat(5000);
    std::fs::write(fx.path("long.txt"), format!("{long}\nshort\n")).unwrap();
    let r = ok(&fx.call("read", json!({"file_path": "long.txt"})).await);
    assert!(r.contains("… [line cut at 2000 characters]"), "{r}");
    assert!(r.contains("1 line(s) longer than 2000 characters were cut"));
    assert!(r.len() < 2200, "{}", r.len());
    let wide: String = (0..2000)
        .map(|_| format!("{}\n", "y".repeat(100)))
        .collect();
    std::fs::write(fx.path("wide.txt"), wide).unwrap();
    let r = ok(&fx.call("read", json!({"file_path": "wide.txt"})).await);
    assert!(r.len() <= 51_200 + 200, "{}", r.len());
    assert!(
        r.contains("output capped at 51200 bytes; use offset to read on"),
        "{}",
        &r[r.len() - 120..]
    );
    std::fs::write(fx.path("latin1.txt"), b"caf\xe9\n").unwrap();
    let r = ok(&fx.call("read", json!({"file_path": "latin1.txt"})).await);
    assert!(r.contains("caf\u{fffd}"), "{r}");
    assert!(r.contains("not valid UTF-8"), "{r}");
}

#[tokio::test]
async fn read_errors_are_coded() {
    let fx = Fx::new();
    std::fs::write(fx.path("bin"), b"ELF\0\0\x01").unwrap();
    err(
        &fx.call("read", json!({"file_path": "bin"})).await,
        "FS_NOT_TEXT",
    );
    std::fs::create_dir(fx.path("sub")).unwrap();
    err(
        &fx.call("read", json!({"file_path": "sub"})).await,
        "FS_IS_DIRECTORY",
    );
    std::fs::write(fx.path("config.toml"), "x").unwrap();
    let t = err(
        &fx.call("read", json!({"file_path": "confg.toml"})).await,
        "FS_NOT_FOUND",
    );
    assert!(t.contains("did you mean"), "{t}");
    assert!(t.contains("config.toml"), "{t}");
}

#[tokio::test]
async fn write_needs_a_fresh_observation_of_an_existing_file() {
    let fx = Fx::new();
    // A new file (and its parents) needs nothing.
    let t = ok(&fx
        .call(
            "write",
            json!({"file_path": "a/b/new.txt", "content": "one\n"}),
        )
        .await);
    assert!(t.starts_with("Created"), "{t}");
    assert_eq!(
        std::fs::read_to_string(fx.path("a/b/new.txt")).unwrap(),
        "one\n"
    );
    // Created by this session: counts as observed.
    ok(&fx
        .call(
            "write",
            json!({"file_path": "a/b/new.txt", "content": "two\n"}),
        )
        .await);
    // An existing file never read: refused.
    std::fs::write(fx.path("theirs.txt"), "keep").unwrap();
    let t = err(
        &fx.call("write", json!({"file_path": "theirs.txt", "content": "x"}))
            .await,
        "FS_NOT_OBSERVED",
    );
    assert!(t.contains("read it first"), "{t}");
    assert_eq!(
        std::fs::read_to_string(fx.path("theirs.txt")).unwrap(),
        "keep"
    );
    // Read, changed behind our back: stale.
    ok(&fx.call("read", json!({"file_path": "theirs.txt"})).await);
    std::fs::write(fx.path("theirs.txt"), "changed by someone").unwrap();
    let t = err(
        &fx.call("write", json!({"file_path": "theirs.txt", "content": "x"}))
            .await,
        "FS_STALE_VERSION",
    );
    assert!(t.contains("changed since you read it at"), "{t}");
    assert!(t.contains("read it again"), "{t}");
    // Read again: allowed.
    ok(&fx.call("read", json!({"file_path": "theirs.txt"})).await);
    ok(&fx
        .call(
            "write",
            json!({"file_path": "theirs.txt", "content": "mine"}),
        )
        .await);
    assert_eq!(
        std::fs::read_to_string(fx.path("theirs.txt")).unwrap(),
        "mine"
    );
    err(
        &fx.call("write", json!({"file_path": "a", "content": "x"}))
            .await,
        "FS_IS_DIRECTORY",
    );
}

#[tokio::test]
async fn writes_are_atomic_keep_modes_and_follow_symlinks() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fx::new();
    let script = fx.path("run.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    ok(&fx.call("read", json!({"file_path": "run.sh"})).await);
    ok(&fx
        .call(
            "write",
            json!({"file_path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
        )
        .await);
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o755
    );
    // Through a symlink: the target changes, the link stays a link.
    std::fs::write(fx.path("target.txt"), "t\n").unwrap();
    std::os::unix::fs::symlink(fx.path("target.txt"), fx.path("link.txt")).unwrap();
    ok(&fx.call("read", json!({"file_path": "link.txt"})).await);
    ok(&fx
        .call(
            "write",
            json!({"file_path": "link.txt", "content": "via link\n"}),
        )
        .await);
    assert!(std::fs::symlink_metadata(fx.path("link.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(fx.path("target.txt")).unwrap(),
        "via link\n"
    );
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(fx.dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".dsh-write-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[tokio::test]
async fn a_failed_write_leaves_the_original_intact() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fx::new();
    std::fs::create_dir(fx.path("ro")).unwrap();
    std::fs::write(fx.path("ro/f.txt"), "original\n").unwrap();
    ok(&fx.call("read", json!({"file_path": "ro/f.txt"})).await);
    std::fs::set_permissions(fx.path("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
    let probe = std::fs::File::create(fx.path("ro/probe"));
    if probe.is_ok() {
        // Running as root: directory permissions do not apply; nothing to check.
        std::fs::set_permissions(fx.path("ro"), std::fs::Permissions::from_mode(0o755)).unwrap();
        eprintln!("skipped: root ignores directory permissions");
        return;
    }
    let t = err(
        &fx.call("write", json!({"file_path": "ro/f.txt", "content": "new"}))
            .await,
        "FS_IO",
    );
    assert!(t.contains("the file was not changed"), "{t}");
    std::fs::set_permissions(fx.path("ro"), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.path("ro/f.txt")).unwrap(),
        "original\n"
    );
}

#[tokio::test]
async fn edit_replaces_exactly_once_and_shows_a_diff() {
    let fx = Fx::new();
    std::fs::write(fx.path("m.rs"), "fn a() {}\nfn b() {}\nfn c() {}\n").unwrap();
    let t = err(
        &fx.call(
            "edit",
            json!({"file_path": "m.rs", "old_string": "fn b", "new_string": "fn bb"}),
        )
        .await,
        "FS_NOT_OBSERVED",
    );
    assert!(t.contains("read it first"));
    ok(&fx.call("read", json!({"file_path": "m.rs"})).await);
    let t = ok(&fx.call("edit", json!({"file_path": "m.rs", "old_string": "fn b() {}", "new_string": "fn b() { todo!() }"})).await);
    assert!(t.contains("@@ -1,3 +1,3 @@"), "{t}");
    assert!(t.contains("-fn b() {}\n+fn b() { todo!() }\n"), "{t}");
    assert_eq!(
        std::fs::read_to_string(fx.path("m.rs")).unwrap(),
        "fn a() {}\nfn b() { todo!() }\nfn c() {}\n"
    );
    // Our own edit keeps the observation fresh.
    let t = err(
        &fx.call(
            "edit",
            json!({"file_path": "m.rs", "old_string": "fn ", "new_string": "pub fn "}),
        )
        .await,
        "FS_AMBIGUOUS_EDIT",
    );
    assert!(t.contains("occurs 3 times"), "{t}");
    assert!(t.contains("lines 1, 2, 3"), "{t}");
    let t = ok(&fx.call("edit", json!({"file_path": "m.rs", "old_string": "fn ", "new_string": "pub fn ", "replace_all": true})).await);
    assert!(t.contains("3 replacements"), "{t}");
    let t = err(
        &fx.call(
            "edit",
            json!({"file_path": "m.rs", "old_string": "pub  fn   a()", "new_string": "x"}),
        )
        .await,
        "FS_EDIT_NOT_FOUND",
    );
    assert!(t.contains("different whitespace at line(s) 1"), "{t}");
    let t = err(
        &fx.call(
            "edit",
            json!({"file_path": "m.rs", "old_string": "same", "new_string": "same"}),
        )
        .await,
        "INVALID_ARGS",
    );
    assert!(t.contains("must differ"), "{t}");
    let t = err(
        &fx.call(
            "edit",
            json!({"file_path": "m.rs", "old_string": "", "new_string": "x"}),
        )
        .await,
        "INVALID_ARGS",
    );
    assert!(
        t.contains("\"old_string\" must be at least 1 character long"),
        "{t}"
    );
}

#[tokio::test]
async fn edit_matches_across_line_endings_and_keeps_the_dominant_one() {
    let fx = Fx::new();
    std::fs::write(fx.path("w.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
    ok(&fx.call("read", json!({"file_path": "w.txt"})).await);
    ok(&fx
        .call(
            "edit",
            json!({"file_path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"}),
        )
        .await);
    assert_eq!(
        std::fs::read(fx.path("w.txt")).unwrap(),
        b"1\r\n2\r\nthree\r\n"
    );
}

#[tokio::test]
async fn edit_of_a_file_changed_on_disk_is_stale_and_changes_nothing() {
    let fx = Fx::new();
    std::fs::write(fx.path("s.txt"), "a\n").unwrap();
    ok(&fx.call("read", json!({"file_path": "s.txt"})).await);
    std::fs::write(fx.path("s.txt"), "a\nb\n").unwrap();
    err(
        &fx.call(
            "edit",
            json!({"file_path": "s.txt", "old_string": "a", "new_string": "z"}),
        )
        .await,
        "FS_STALE_VERSION",
    );
    assert_eq!(std::fs::read_to_string(fx.path("s.txt")).unwrap(), "a\nb\n");
    // A file that vanished.
    std::fs::remove_file(fx.path("s.txt")).unwrap();
    err(
        &fx.call(
            "edit",
            json!({"file_path": "s.txt", "old_string": "a", "new_string": "z"}),
        )
        .await,
        "FS_NOT_FOUND",
    );
}

#[tokio::test]
async fn a_ten_megabyte_edit_and_a_window_of_a_huge_file() {
    let fx = Fx::new();
    let line = "abcdefghij".repeat(10);
    let mut text = String::with_capacity(11 * 1024 * 1024);
    while text.len() < 10 * 1024 * 1024 {
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str("the needle\n");
    std::fs::write(fx.path("ten.txt"), &text).unwrap();
    let r = ok(&fx
        .call(
            "read",
            json!({"file_path": "ten.txt", "offset": 100, "limit": 2}),
        )
        .await);
    assert!(r.starts_with("   100\t"), "{}", &r[..20]);
    ok(&fx
        .call(
            "edit",
            json!({"file_path": "ten.txt", "old_string": "the needle", "new_string": "the thread"}),
        )
        .await);
    let after = std::fs::read_to_string(fx.path("ten.txt")).unwrap();
    assert!(after.ends_with("the thread\n"));
    assert_eq!(after.len(), text.len());
}
