//! `glob` against real files: order, cap, ignore rules, hidden files, path
//! display rules and error codes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{assert_error, lines, Harness};
use serde_json::json;

#[tokio::test]
async fn newest_first_ties_by_path() {
    let h = Harness::new();
    h.file("old.rs", "", 1);
    h.file("src/b.rs", "", 50);
    h.file("src/a.rs", "", 50);
    h.file("mid.rs", "", 20);
    h.file("notes.txt", "", 99);
    let out = h.ok("glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(lines(&out), ["src/a.rs", "src/b.rs", "mid.rs", "old.rs"]);
}

#[tokio::test]
async fn pattern_is_matched_against_the_path_relative_to_path() {
    let h = Harness::new();
    h.file("Cargo.toml", "", 1);
    h.file("sub/Cargo.toml", "", 2);
    h.file("sub/deep/x.toml", "", 3);
    // `*` stays within one segment.
    let out = h.ok("glob", json!({"pattern": "*.toml"})).await;
    assert_eq!(out, "Cargo.toml");
    let out = h.ok("glob", json!({"pattern": "sub/*.toml"})).await;
    assert_eq!(out, "sub/Cargo.toml");
    // Relative to `path`, shown relative to the working directory.
    let out = h
        .ok("glob", json!({"pattern": "*.toml", "path": "sub"}))
        .await;
    assert_eq!(out, "sub/Cargo.toml");
    let out = h
        .ok("glob", json!({"pattern": "**/*.toml", "path": "./sub"}))
        .await;
    assert_eq!(lines(&out), ["sub/deep/x.toml", "sub/Cargo.toml"]);
    let out = h
        .ok("glob", json!({"pattern": "*.{toml,rs}", "path": "."}))
        .await;
    assert_eq!(out, "Cargo.toml");
}

#[tokio::test]
async fn absolute_path_gives_absolute_paths() {
    let h = Harness::new();
    let f = h.file("sub/a.rs", "", 1);
    let abs = h.root().join("sub");
    let out = h
        .ok(
            "glob",
            json!({"pattern": "*.rs", "path": abs.to_str().unwrap()}),
        )
        .await;
    assert_eq!(out, f.to_str().unwrap());
}

#[tokio::test]
async fn caps_at_100_paths_and_counts_the_rest() {
    let h = Harness::new();
    for i in 0..105 {
        h.file(&format!("d{}/f{i:03}.rs", i % 7), "", i);
    }
    let out = h.ok("glob", json!({"pattern": "**/*.rs"})).await;
    let l = lines(&out);
    assert_eq!(l.len(), 101, "{out}");
    assert_eq!(l[0], "d6/f104.rs");
    assert_eq!(l[99], "d5/f005.rs");
    assert_eq!(l[100], "(5 more not shown)");
    // Exactly 100: no note.
    for i in 0..5 {
        std::fs::remove_file(h.root().join(format!("d{}/f{i:03}.rs", i % 7))).unwrap();
    }
    let out = h.ok("glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(lines(&out).len(), 100);
    assert!(!out.contains("more not shown"), "{out}");
}

#[tokio::test]
async fn gitignore_is_honoured_without_a_repo_and_git_is_skipped() {
    let h = Harness::new();
    h.file(".gitignore", "target/\n*.log\n", 1);
    h.file("sub/.ignore", "secret.rs\n", 1);
    h.file("keep.rs", "", 10);
    h.file("target/gen.rs", "", 11);
    h.file("debug.log", "", 12);
    h.file("sub/secret.rs", "", 13);
    h.file("sub/open.rs", "", 9);
    h.file(".git/hooks/pre.rs", "", 14);
    h.file(".git/config", "", 14);
    h.file(".hidden.rs", "", 8);
    h.file(".config/h.rs", "", 7);
    let out = h.ok("glob", json!({"pattern": "**/*"})).await;
    let mut got = lines(&out);
    got.sort_unstable();
    assert_eq!(
        got,
        [
            ".config/h.rs",
            ".gitignore",
            ".hidden.rs",
            "keep.rs",
            "sub/.ignore",
            "sub/open.rs"
        ]
    );
}

#[tokio::test]
async fn no_match_says_so() {
    let h = Harness::new();
    h.file("a.txt", "", 1);
    let out = h.ok("glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(out, "No files found");
}

#[tokio::test]
async fn non_utf8_names_are_shown_lossily() {
    use std::os::unix::ffi::OsStrExt;
    let h = Harness::new();
    let name = std::ffi::OsStr::from_bytes(b"caf\xff.rs");
    common::write_at(&h.root().join(name), b"", 1);
    let out = h.ok("glob", json!({"pattern": "*.rs"})).await;
    assert_eq!(out, "caf\u{FFFD}.rs");
}

#[tokio::test]
async fn unreadable_directories_are_counted() {
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::new();
    h.file("ok.rs", "", 1);
    let locked = h.root().join("locked");
    h.file("locked/x.rs", "", 1);
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read_dir(&locked).is_ok() {
        // Running as root: permissions do not stop us; nothing to test.
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
        eprintln!("skipped: permissions are not enforced for this user");
        return;
    }
    let out = h.ok("glob", json!({"pattern": "**/*.rs"})).await;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(lines(&out), ["ok.rs", "(1 path could not be read)"]);
}

#[tokio::test]
async fn errors_have_codes() {
    let h = Harness::new();
    h.file("a.rs", "", 1);
    let r = h
        .call("glob", json!({"pattern": "*.rs", "path": "nope"}))
        .await;
    assert_error(&r, "FS_NOT_FOUND", "nope");
    let r = h
        .call("glob", json!({"pattern": "*.rs", "path": "a.rs"}))
        .await;
    assert_error(&r, "FS_NOT_A_DIRECTORY", "a.rs");
    let r = h.call("glob", json!({"pattern": "src/[ab"})).await;
    assert_error(&r, "INVALID_ARGS", "unclosed character class");
    // Schema rules: the body never sees these.
    let r = h.call("glob", json!({"pattern": ""})).await;
    assert_error(
        &r,
        "INVALID_ARGS",
        "\"pattern\" must be at least 1 character",
    );
    let r = h.call("glob", json!({})).await;
    assert_error(&r, "INVALID_ARGS", "missing required property \"pattern\"");
}
