//! Shared fixtures for the dsh benchmarks.

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_llm::StreamChunk;

/// Path of the recorded 2,000-event DeepSeek SSE fixture in the repository's
/// `testdata/` (described in `testdata/README.md`).
pub const SSE_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/deepseek-stream-2000.sse"
);

/// 2,000 text deltas on one block, as a chat answer streams.
pub fn text_deltas(n: usize) -> Vec<StreamChunk> {
    let words = [
        "The", " quick", " 棕色", " fox", " jumps", " over", " 懒", " dog.",
    ];
    let mut out = vec![StreamChunk::BlockStart {
        index: 0,
        block_type: "text".into(),
    }];
    out.extend((0..n.saturating_sub(1)).map(|i| StreamChunk::TextDelta {
        index: 0,
        text: words[i % words.len()].to_string(),
    }));
    out
}

/// The recorded fixture translated into stream chunks: its real 2,004
/// chunks (1,290 reasoning deltas, 500 text deltas, a tool call whose
/// arguments arrive in 205 deltas, the block-starts and -ends, usage and
/// finish), exactly what the adapter hands the assembler.
pub fn fixture_chunks() -> Vec<StreamChunk> {
    use dsh_llm_deepseek::{SseParser, Translator};
    let bytes = std::fs::read(SSE_FIXTURE)
        .unwrap_or_else(|e| panic!("cannot read the SSE fixture {SSE_FIXTURE}: {e}"));
    let mut parser = SseParser::new();
    let mut translator = Translator::new();
    let mut out = Vec::new();
    parser.push(&bytes);
    parser.end();
    while let Some(payload) = parser.next_payload() {
        translator
            .push(payload, &mut out)
            .expect("the fixture is a valid stream");
    }
    assert!(translator.is_done(), "the fixture ends with [DONE]");
    out
}

/// A local bash executor working in and spilling to `dir`.
pub fn bash_executor(dir: &std::path::Path) -> std::sync::Arc<dsh_bash_local::LocalBashExecutor> {
    std::sync::Arc::new(dsh_bash_local::LocalBashExecutor::new(
        dsh_bash_local::LocalBashConfig {
            cwd: Some(dir.to_path_buf()),
            spill_dir: Some(dir.to_path_buf()),
            ..dsh_bash_local::LocalBashConfig::default()
        },
    ))
}

/// This process's resident set size in KiB (`VmRSS`), 0 when unknown.
pub fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

/// This process's peak resident set size in KiB (`VmHWM`), 0 when unknown.
pub fn peak_rss_kib() -> u64 {
    status_kib("VmHWM:")
}

/// The number after `key` in `/proc/self/status` (a size in KiB), 0 when
/// unknown.
fn status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Writes a text file of `bytes` bytes (rounded up to whole 1 MiB chunks)
/// at `path` without holding it in memory: lines of 100 bytes, or one
/// single line when `one_line`; either way it ends with the line
/// `the needle`. Kept when it already has that size (a re-run of a
/// benchmark reuses it).
pub fn big_text_file(path: &std::path::Path, bytes: u64, one_line: bool) {
    use std::io::Write;
    let chunk: Vec<u8> = if one_line {
        vec![b'a'; 1 << 20]
    } else {
        let line = format!("{}\n", "0123456789".repeat(10).get(..99).unwrap());
        line.repeat((1 << 20) / line.len() + 1).into_bytes()[..1 << 20].to_vec()
    };
    let chunks = bytes.div_ceil(1 << 20);
    let size = chunks * (1 << 20) + b"\nthe needle\n".len() as u64;
    if std::fs::metadata(path).is_ok_and(|m| m.len() == size) {
        return;
    }
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for _ in 0..chunks {
        w.write_all(&chunk).unwrap();
    }
    w.write_all(b"\nthe needle\n").unwrap();
    w.flush().unwrap();
}

/// The environment variable that turns a benchmark binary into the child
/// of [`tool_call_in_child`]: `TOOL\tROOT\tARGUMENTS`.
pub const CHILD_CALL: &str = "DSH_BENCH_CHILD_CALL";

/// Runs the child side of [`tool_call_in_child`] when this process is one
/// (call first thing in `main`, before any benchmark): installs the file
/// and search tools over the root it was given, makes the one call, prints
/// its peak RSS in KiB (`VmHWM`) on stdout and exits. Returns when this
/// process is not such a child.
pub fn serve_child_call() {
    let Ok(spec) = std::env::var(CHILD_CALL) else {
        return;
    };
    let mut parts = spec.splitn(3, '\t');
    let (tool, root, args) = (
        parts.next().unwrap().to_string(),
        std::path::PathBuf::from(parts.next().unwrap()),
        parts.next().unwrap().to_string(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let registry = dsh_tools::ToolRegistry::new();
    let _fs = dsh_tool_fs::install(&registry, root.clone()).unwrap();
    let _search = dsh_tool_search::install(&registry, root).unwrap();
    let r = rt.block_on(registry.execute(
        &dsh_tools::ToolCall::new("c", &tool, args),
        dsh_tools::CallEnv::default(),
    ));
    assert!(!r.is_error, "{}", r.text());
    let text = r.text();
    eprintln!(
        "child {tool}: {}",
        text.lines()
            .last()
            .unwrap_or_default()
            .chars()
            .take(120)
            .collect::<String>()
    );
    println!("{}", peak_rss_kib());
    std::process::exit(0);
}

/// Writes the two 1 GiB files of the memory benchmarks into `dir` with
/// [`big_text_file`]: `lines.txt`, 100-byte lines, and `line.txt`, one
/// line; each ends with the line `the needle`.
pub fn big_text_files(dir: &std::path::Path) {
    big_text_file(&dir.join("lines.txt"), 1 << 30, false);
    big_text_file(&dir.join("line.txt"), 1 << 30, true);
}

/// Benchmarks, as `<group>/<id>`, one call of `tool` with `args` over
/// `root` made in a child ([`tool_call_in_child`]); 10 samples, each a
/// process.
pub fn bench_call_in_child(
    c: &mut criterion::Criterion,
    group: &str,
    id: &str,
    tool: &str,
    root: &std::path::Path,
    args: &str,
) {
    let mut g = c.benchmark_group(group);
    g.sample_size(10);
    g.bench_function(id, |b| b.iter(|| tool_call_in_child(tool, root, args)));
    g.finish();
}

/// Makes each `(what, args)` call of `tool` over `root` in a child
/// ([`tool_call_in_child`]), prints `<group>/memory: <tool> of <what>: peak
/// RSS …` and panics when a child peaked at `limit_kib` or more.
pub fn assert_child_peaks(
    group: &str,
    tool: &str,
    root: &std::path::Path,
    cases: &[(&str, &str)],
    limit_kib: u64,
) {
    for (what, args) in cases {
        let peak = tool_call_in_child(tool, root, args);
        println!(
            "{group}/memory: {tool} of {what}: peak RSS {} MiB ({peak} KiB)",
            peak / 1024
        );
        assert!(
            peak < limit_kib,
            "{tool} of {what} peaked at {peak} KiB (limit {limit_kib})"
        );
    }
}

/// Runs one call of `tool` with `args` (JSON) over `root` in a child
/// process (this benchmark binary again, see [`serve_child_call`]) and
/// returns the child's peak RSS in KiB: what the call cost in memory, the
/// runtime and the tool set included, apart from the parent's fixtures.
pub fn tool_call_in_child(tool: &str, root: &std::path::Path, args: &str) -> u64 {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env(CHILD_CALL, format!("{tool}\t{}\t{args}", root.display()))
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "the child failed: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}
