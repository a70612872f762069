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
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
