//! The conformance kit run against `ScriptedAdapter`, and the kit's checker
//! shown to reject broken sequences.
#![cfg(feature = "testkit")]

use std::sync::Arc;
use std::time::Duration;

use dsh_llm::conformance::{self, check_adapter, check_chunks, Scenario, Setup};
use dsh_llm::scripted::{ReplyBuilder, ScriptedAdapter, ScriptedReply};
use dsh_llm::{
    ContentBlock, FinishReason, LlmError, LlmErrorKind, ModelRequest, StreamChunk, TokenUsage,
};

fn options() -> ModelRequest {
    ModelRequest {
        model: "scripted".into(),
        ..Default::default()
    }
}

fn setup_for(scenario: Scenario, delay: Duration) -> Setup {
    let reply = match scenario {
        Scenario::TextReply | Scenario::CancelledBeforeStart => ReplyBuilder::new()
            .reasoning(&["think", "ing"])
            .text(&["Hel", "lo"])
            .usage(10, 2)
            .reply(),
        Scenario::ToolCallReply => ReplyBuilder::new()
            .text(&["Checking."])
            .tool_call("call_1", "bash", &["{\"command\":", " \"ls\"}"])
            .tool_call("call_2", "read", &["{}"])
            .usage(10, 2)
            .reply(),
        Scenario::Abort => ScriptedReply::ChunksThenHang(vec![StreamChunk::BlockStart {
            index: 0,
            block_type: "text".into(),
        }]),
    };
    let adapter = ScriptedAdapter::new([reply]).with_delay(delay);
    Setup::new(Arc::new(adapter), options())
}

#[tokio::test]
async fn scripted_adapter_conforms() {
    check_adapter(|s| async move { setup_for(s, Duration::ZERO) }).await;
}

#[tokio::test]
async fn scripted_adapter_with_delay_conforms() {
    check_adapter(|s| async move { setup_for(s, Duration::from_millis(2)) }).await;
}

#[tokio::test]
async fn abort_during_a_slow_chunk_is_prompt() {
    // A 10 s per-chunk delay: the abort must still land within 100 ms.
    let chunks = ReplyBuilder::new().text(&["a", "b", "c"]).build();
    let adapter =
        ScriptedAdapter::new([ScriptedReply::Chunks(chunks)]).with_delay(Duration::from_secs(10));
    let setup = Setup::new(Arc::new(adapter), options());
    // The first chunk itself is delayed 10 s, so cancel before start instead.
    let items = conformance::check_cancelled_before_start(setup)
        .await
        .unwrap();
    assert!(matches!(items.last(), Some(Err(e)) if e.kind == LlmErrorKind::Aborted));
}

fn ok(c: StreamChunk) -> Result<StreamChunk, LlmError> {
    Ok(c)
}

fn finish() -> StreamChunk {
    StreamChunk::Finish {
        reason: FinishReason::Stop,
    }
}

fn text(index: u32, t: &str) -> StreamChunk {
    StreamChunk::TextDelta {
        index,
        text: t.into(),
    }
}

#[test]
fn checker_accepts_builder_output_and_delta_only_streams() {
    let items: Vec<_> = ReplyBuilder::new()
        .reasoning(&["r"])
        .text(&["t"])
        .tool_call("id", "n", &["{}"])
        .usage(1, 1)
        .build()
        .into_iter()
        .map(Ok)
        .collect();
    check_chunks(&items).unwrap();
    conformance::check_completed(&items).unwrap();
    check_chunks(&[ok(text(0, "a")), ok(text(0, "b")), ok(finish())]).unwrap();
    // An error as last item is a sanctioned end.
    check_chunks(&[
        ok(text(0, "a")),
        Err(LlmError::new(LlmErrorKind::Server, "x")),
    ])
    .unwrap();
}

#[test]
fn checker_rejects_broken_sequences() {
    let usage = StreamChunk::Usage {
        usage: TokenUsage::default(),
    };
    let end = |i: u32, t: &str| StreamChunk::BlockEnd {
        index: i,
        block: ContentBlock::text(t),
    };
    let cases: Vec<(&str, Vec<Result<StreamChunk, LlmError>>)> = vec![
        ("after finish", vec![ok(finish()), ok(text(0, "a"))]),
        ("two finishes", vec![ok(finish()), ok(finish())]),
        ("usage after finish", vec![ok(finish()), ok(usage.clone())]),
        (
            "two usages",
            vec![ok(usage.clone()), ok(usage.clone()), ok(finish())],
        ),
        (
            "delta after end",
            vec![ok(text(0, "a")), ok(end(0, "a")), ok(text(0, "b"))],
        ),
        (
            "end disagrees",
            vec![ok(text(0, "a")), ok(end(0, "b")), ok(finish())],
        ),
        (
            "index not monotonic",
            vec![ok(text(1, "a")), ok(text(0, "b")), ok(finish())],
        ),
        (
            "late block-start",
            vec![
                ok(text(0, "a")),
                ok(StreamChunk::BlockStart {
                    index: 0,
                    block_type: "text".into(),
                }),
            ],
        ),
        (
            "kind mismatch",
            vec![
                ok(text(0, "a")),
                ok(StreamChunk::ReasoningDelta {
                    index: 0,
                    text: "r".into(),
                }),
            ],
        ),
        (
            "tool delta without id",
            vec![ok(StreamChunk::ToolCallDelta {
                index: 0,
                id: String::new(),
                name: Some("n".into()),
                arguments_delta: "{}".into(),
            })],
        ),
        (
            "item after error",
            vec![Err(LlmError::new(LlmErrorKind::Server, "x")), ok(finish())],
        ),
    ];
    for (name, items) in cases {
        assert!(check_chunks(&items).is_err(), "{name}: accepted {items:?}");
    }
    // No finish and no error: not a completed stream.
    assert!(conformance::check_completed(&[ok(text(0, "a"))]).is_err());
}
