//! The file tools on big files: an `edit` of one line in a 10 MB file, and
//! a `read` window near the end of a 100 MB file (which must not load it).
//!
//! Memory: the peak RSS (`VmHWM`) of a child process (this binary again,
//! see `dsh_benches::tool_call_in_child`) making one `read` of a window at
//! the end of a 1 GiB file of 100-byte lines, and of the first lines of a
//! 1 GiB file that is one line; both must stay under 64 MiB (the benchmark
//! fails otherwise) and are printed next to the peak of a read of a small
//! file (the runtime's own share). The child's time is benchmarked too.
//!
//! `cargo bench -p dsh-benches --bench fs`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, Criterion};
use dsh_tools::{CallEnv, ToolCall, ToolRegistry};

fn file_of(dir: &std::path::Path, name: &str, bytes: usize) -> String {
    let line = format!("{}\n", "abcdefghij".repeat(9));
    let mut text = String::with_capacity(bytes + 200);
    while text.len() < bytes {
        text.push_str(&line);
    }
    text.push_str("needle one\n");
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let registry = ToolRegistry::new();
    let _reg = dsh_tool_fs::install(&registry, dir.path().to_path_buf()).unwrap();
    let run = |tool: &str, args: serde_json::Value| {
        let r = rt.block_on(registry.execute(
            &ToolCall::new("c", tool, args.to_string()),
            CallEnv::default(),
        ));
        assert!(!r.is_error, "{}", r.text());
    };
    let ten = file_of(dir.path(), "ten.txt", 10 << 20);
    run("read", serde_json::json!({"file_path": ten, "limit": 1}));
    let mut flip = false;
    let mut g = c.benchmark_group("fs");
    g.sample_size(20);
    g.bench_function("edit/one_line_of_10MB", |b| {
        b.iter(|| {
            let (from, to) = if flip {
                ("needle two", "needle one")
            } else {
                ("needle one", "needle two")
            };
            flip = !flip;
            run(
                "edit",
                serde_json::json!({"file_path": ten, "old_string": from, "new_string": to}),
            );
        })
    });
    let hundred = file_of(dir.path(), "hundred.txt", 100 << 20);
    g.bench_function("read/window_at_the_end_of_100MB", |b| {
        b.iter(|| {
            run(
                "read",
                serde_json::json!({"file_path": hundred, "offset": 1_000_000, "limit": 50}),
            )
        })
    });
    g.finish();
}

/// The most a `read` child may peak at, in KiB.
const PEAK_LIMIT_KIB: u64 = 64 * 1024;

fn memory(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.txt"), "one line\n").unwrap();
    dsh_benches::big_text_files(dir.path());
    // 1 GiB of 100-byte lines (a line restarts at each MiB): 10,736,642.
    let at_the_end = r#"{"file_path": "lines.txt", "offset": 10736500, "limit": 100}"#;
    let cases = [
        ("a small file", r#"{"file_path": "small.txt"}"#),
        ("a window at the end of 1 GiB of lines", at_the_end),
        (
            "the start of a 1 GiB line",
            r#"{"file_path": "line.txt", "limit": 2}"#,
        ),
    ];
    dsh_benches::assert_child_peaks("fs", "read", dir.path(), &cases, PEAK_LIMIT_KIB);
    dsh_benches::bench_call_in_child(
        c,
        "fs",
        "read/window_at_the_end_of_1GiB_in_a_child",
        "read",
        dir.path(),
        at_the_end,
    );
}

criterion_group!(benches, bench, memory);

fn main() {
    // A child of `tool_call_in_child` makes its call and exits here.
    dsh_benches::serve_child_call();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
