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

/// A realistic 2,000-chunk response shaped like the SSE fixture: 1,290
/// reasoning deltas, 500 text deltas, a tool call whose arguments arrive one
/// character per delta, the block-ends, usage and finish.
pub fn realistic_response() -> Vec<StreamChunk> {
    use dsh_llm::{ContentBlock, FinishReason, TokenUsage};
    let args = r#"{"command": "find . -name '*.rs' -newer Cargo.toml | xargs wc -l | sort -n | tail -20", "description": "Count lines of recently changed Rust files", "timeoutMs": 60000}"#;
    let mut out = Vec::with_capacity(2004);
    out.push(StreamChunk::BlockStart {
        index: 0,
        block_type: "reasoning".into(),
    });
    let mut reasoning = String::new();
    for i in 0..1290 {
        let t = if i % 3 == 0 { " the" } else { " user" };
        reasoning.push_str(t);
        out.push(StreamChunk::ReasoningDelta {
            index: 0,
            text: t.into(),
        });
    }
    out.push(StreamChunk::BlockStart {
        index: 1,
        block_type: "text".into(),
    });
    let mut text = String::new();
    for i in 0..500 {
        let t = if i % 2 == 0 { "文件" } else { " files" };
        text.push_str(t);
        out.push(StreamChunk::TextDelta {
            index: 1,
            text: t.into(),
        });
    }
    out.push(StreamChunk::BlockStart {
        index: 2,
        block_type: "tool-call".into(),
    });
    for ch in args.chars() {
        out.push(StreamChunk::ToolCallDelta {
            index: 2,
            id: "call_00_abc".into(),
            name: Some("bash".into()),
            arguments_delta: ch.to_string(),
        });
    }
    out.push(StreamChunk::BlockEnd {
        index: 0,
        block: ContentBlock::reasoning(reasoning),
    });
    out.push(StreamChunk::BlockEnd {
        index: 1,
        block: ContentBlock::text(text),
    });
    out.push(StreamChunk::BlockEnd {
        index: 2,
        block: ContentBlock::tool_call("call_00_abc", "bash", args),
    });
    out.push(StreamChunk::Usage {
        usage: TokenUsage {
            input_tokens: 130,
            output_tokens: 2011,
            cache_read_tokens: Some(11904),
            cache_write_tokens: None,
            reasoning_tokens: Some(1200),
        },
    });
    out.push(StreamChunk::Finish {
        reason: FinishReason::ToolCalls,
    });
    out
}
