//! `grep` against real files: grouping and order, caps, line cuts, binary
//! files, ignore rules, `include`, single files, the time budget and error
//! codes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{assert_error, lines, Harness};
use serde_json::json;

#[tokio::test]
async fn files_grouped_newest_first_lines_in_order() {
    let h = Harness::new();
    h.file("old.rs", "fn main() {}\nlet x = 1;\nfn helper() {}\n", 1);
    h.file("src/new.rs", "// fn() in a comment\nfn new() {}\n", 30);
    h.file("b.rs", "fn b() {}\n", 10);
    h.file("a.rs", "fn a() {}\n", 10);
    h.file("none.rs", "nothing here\n", 40);
    let out = h.ok("grep", json!({"pattern": r"fn\s+\w+"})).await;
    assert_eq!(
        lines(&out),
        [
            "src/new.rs:2:fn new() {}",
            "a.rs:1:fn a() {}",
            "b.rs:1:fn b() {}",
            "old.rs:1:fn main() {}",
            "old.rs:3:fn helper() {}",
        ]
    );
}

#[tokio::test]
async fn no_match_says_so() {
    let h = Harness::new();
    h.file("a.txt", "hello\n", 1);
    let out = h.ok("grep", json!({"pattern": "absent"})).await;
    assert_eq!(out, "No matches found");
}

#[tokio::test]
async fn caps_at_250_matches_in_one_file() {
    let h = Harness::new();
    let body: String = (1..=300).map(|i| format!("hit {i}\n")).collect();
    h.file("many.txt", body, 1);
    let out = h.ok("grep", json!({"pattern": "hit"})).await;
    let l = lines(&out);
    assert_eq!(l.len(), 251, "{out}");
    assert_eq!(l[0], "many.txt:1:hit 1");
    assert_eq!(l[249], "many.txt:250:hit 250");
    assert_eq!(l[250], "(results truncated at 250 matches)");
}

#[tokio::test]
async fn caps_at_250_matches_across_files_keeping_the_newest() {
    let h = Harness::new();
    for (name, age) in [("a.txt", 3), ("b.txt", 2), ("c.txt", 1), ("d.txt", 4)] {
        let body: String = (1..=80).map(|i| format!("hit {i}\n")).collect();
        h.file(name, body, age);
    }
    let out = h.ok("grep", json!({"pattern": "hit"})).await;
    let l = lines(&out);
    assert_eq!(l.len(), 251, "{out}");
    assert_eq!(l[0], "d.txt:1:hit 1");
    assert_eq!(l[80], "a.txt:1:hit 1");
    assert_eq!(l[160], "b.txt:1:hit 1");
    assert_eq!(l[240], "c.txt:1:hit 1");
    assert_eq!(l[249], "c.txt:10:hit 10");
    assert_eq!(l[250], "(results truncated at 250 matches)");
}

#[tokio::test]
async fn exactly_250_matches_has_no_note() {
    let h = Harness::new();
    let body: String = (1..=250).map(|i| format!("hit {i}\n")).collect();
    h.file("many.txt", body, 1);
    let out = h.ok("grep", json!({"pattern": "hit"})).await;
    assert_eq!(lines(&out).len(), 250);
    assert!(!out.contains("truncated"), "{out}");
}

#[tokio::test]
async fn long_lines_are_cut_at_2000_bytes_on_a_char_boundary() {
    let h = Harness::new();
    let ascii = format!("needle {}\n", "a".repeat(5000));
    h.file("ascii.txt", &ascii, 2);
    // 'é' is two bytes: "needle " is 7, so byte 2000 falls inside a char.
    let wide = format!("needle {}\n", "é".repeat(3000));
    h.file("wide.txt", &wide, 1);
    let out = h.ok("grep", json!({"pattern": "needle"})).await;
    let l = lines(&out);
    let text = l[0].strip_prefix("ascii.txt:1:").unwrap();
    assert_eq!(text, format!("{}…", &ascii[..2000]));
    let text = l[1].strip_prefix("wide.txt:1:").unwrap();
    let cut = text.strip_suffix('…').unwrap();
    assert_eq!(cut.len(), 1999);
    assert!(wide.starts_with(cut));
    // A line of exactly 2000 bytes is whole.
    let h = Harness::new();
    let exact = format!("needle{}", "b".repeat(1994));
    h.file("exact.txt", format!("{exact}\n"), 1);
    let out = h.ok("grep", json!({"pattern": "needle"})).await;
    assert_eq!(out, format!("exact.txt:1:{exact}"));
}

#[tokio::test]
async fn binary_files_are_skipped() {
    let h = Harness::new();
    h.file("text.txt", "needle\n", 1);
    h.file("early.bin", b"needle\n\x00\x01\x02needle\n", 2);
    // The NUL lies far beyond the first buffer: the early match is dropped too.
    let mut late = b"needle\n".to_vec();
    late.extend(std::iter::repeat_n(b'x', 1 << 20));
    late.extend(b"\n\x00needle\n");
    h.file("late.bin", late, 3);
    let out = h.ok("grep", json!({"pattern": "needle"})).await;
    assert_eq!(out, "text.txt:1:needle");
}

#[tokio::test]
async fn gitignore_honoured_git_skipped_hidden_included() {
    let h = Harness::new();
    h.file(".gitignore", "target/\n*.log\n", 1);
    h.file("target/gen.rs", "needle\n", 2);
    h.file("debug.log", "needle\n", 3);
    h.file(".git/config", "needle\n", 4);
    h.file(".hidden/h.rs", "needle\n", 5);
    h.file("keep.rs", "needle\n", 6);
    let out = h.ok("grep", json!({"pattern": "needle"})).await;
    assert_eq!(lines(&out), ["keep.rs:1:needle", ".hidden/h.rs:1:needle"]);
}

#[tokio::test]
async fn include_filters_file_names() {
    let h = Harness::new();
    h.file("a.rs", "needle\n", 5);
    h.file("src/b.rs", "needle\n", 4);
    h.file("c.ts", "needle\n", 3);
    h.file("d.tsx", "needle\n", 2);
    h.file("e.py", "needle\n", 1);
    let out = h
        .ok("grep", json!({"pattern": "needle", "include": "*.rs"}))
        .await;
    assert_eq!(lines(&out), ["a.rs:1:needle", "src/b.rs:1:needle"]);
    let out = h
        .ok(
            "grep",
            json!({"pattern": "needle", "include": "*.{ts,tsx}"}),
        )
        .await;
    assert_eq!(lines(&out), ["c.ts:1:needle", "d.tsx:1:needle"]);
    // With a `/`, the glob is matched against the path below `path`.
    let out = h
        .ok("grep", json!({"pattern": "needle", "include": "src/*.rs"}))
        .await;
    assert_eq!(out, "src/b.rs:1:needle");
    let r = h
        .call("grep", json!({"pattern": "needle", "include": "*.{rs"}))
        .await;
    assert_error(&r, "INVALID_ARGS", "\"include\" is not a valid glob");
}

#[tokio::test]
async fn a_single_file_path() {
    let h = Harness::new();
    let f = h.file("src/one.rs", "zero\nneedle one\nneedle two\n", 1);
    h.file("src/other.rs", "needle\n", 2);
    let out = h
        .ok("grep", json!({"pattern": "needle", "path": "src/one.rs"}))
        .await;
    assert_eq!(
        lines(&out),
        ["src/one.rs:2:needle one", "src/one.rs:3:needle two"]
    );
    let out = h
        .ok(
            "grep",
            json!({"pattern": "two", "path": f.to_str().unwrap()}),
        )
        .await;
    assert_eq!(out, format!("{}:3:needle two", f.display()));
    // A directory path: shown relative to the working directory.
    let out = h
        .ok("grep", json!({"pattern": "^needle$", "path": "src"}))
        .await;
    assert_eq!(out, "src/other.rs:1:needle");
}

#[tokio::test]
async fn non_utf8_content_is_shown_lossily() {
    let h = Harness::new();
    h.file("latin1.txt", b"caf\xe9 needle\n", 1);
    let out = h.ok("grep", json!({"pattern": "needle"})).await;
    assert_eq!(out, "latin1.txt:1:caf\u{FFFD} needle");
}

#[tokio::test]
async fn errors_have_codes() {
    let h = Harness::new();
    h.file("a.rs", "x\n", 1);
    let r = h.call("grep", json!({"pattern": "fn("})).await;
    assert_error(&r, "INVALID_ARGS", "\"pattern\" is not a valid regex");
    assert!(r.text().contains("unclosed group"), "{}", r.text());
    assert!(
        r.text().contains("\n    fn(\n") && !r.text().contains("(?:"),
        "the error quotes the model's pattern, not a wrapped one: {}",
        r.text()
    );
    let r = h
        .call("grep", json!({"pattern": "x", "path": "nope"}))
        .await;
    assert_error(&r, "FS_NOT_FOUND", "nope");
    let r = h
        .call("grep", json!({"pattern": "x", "path": "a.rs/deeper"}))
        .await;
    assert_error(&r, "FS_NOT_FOUND", "a.rs/deeper");
    let r = h.call("grep", json!({"pattern": ""})).await;
    assert_error(
        &r,
        "INVALID_ARGS",
        "\"pattern\" must be at least 1 character",
    );
}

/// A tree big enough that a search takes a while.
fn big_tree(h: &Harness, files: usize) {
    let body: String = (0..200)
        .map(|i| format!("line {i} of filler text\n"))
        .collect();
    for i in 0..files {
        let dir = h.root().join(format!("d{}/e{}", i % 10, i % 37));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.txt")), format!("{body}needle {i}\n")).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_time_returns_partial_results_with_a_note() {
    let h = Harness::with_budget(Duration::ZERO);
    big_tree(&h, 300);
    let out = h.ok("grep", json!({"pattern": "needle"})).await;
    assert_eq!(
        lines(&out),
        [
            "No matches found",
            "(search stopped after 0 s; results are partial)"
        ]
    );
    // A tiny budget over a bigger tree: some or no matches, then the note.
    let h = Harness::with_budget(Duration::from_millis(2));
    big_tree(&h, 3000);
    let out = h.ok("grep", json!({"pattern": "needle"})).await;
    assert_eq!(
        lines(&out).last(),
        Some(&"(search stopped after 0.002 s; results are partial)")
    );
    // The default budget finishes the same search.
    let h2 = Harness::new();
    big_tree(&h2, 300);
    let out = h2.ok("grep", json!({"pattern": "needle 29[0-9]"})).await;
    assert_eq!(lines(&out).len(), 10, "{out}");
    assert!(!out.contains("stopped"), "{out}");
}
