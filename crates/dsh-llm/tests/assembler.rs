//! BlockAssembler: reference semantics, malformed sequences, and properties.

use dsh_kernel::ErrorCode;
use dsh_llm::scripted::ReplyBuilder;
use dsh_llm::{BlockAssembler, ContentBlock, FinishReason, StreamChunk, TokenUsage};
use proptest::prelude::*;

fn start(index: u32, t: &str) -> StreamChunk {
    StreamChunk::BlockStart {
        index,
        block_type: t.into(),
    }
}
fn text(index: u32, s: &str) -> StreamChunk {
    StreamChunk::TextDelta {
        index,
        text: s.into(),
    }
}
fn reasoning(index: u32, s: &str) -> StreamChunk {
    StreamChunk::ReasoningDelta {
        index,
        text: s.into(),
    }
}
fn call(index: u32, id: &str, name: Option<&str>, args: &str) -> StreamChunk {
    StreamChunk::ToolCallDelta {
        index,
        id: id.into(),
        name: name.map(Into::into),
        arguments_delta: args.into(),
    }
}
fn end(index: u32, block: ContentBlock) -> StreamChunk {
    StreamChunk::BlockEnd { index, block }
}
/// The block indices the chunks name.
fn distinct_indices(chunks: &[StreamChunk]) -> std::collections::HashSet<u32> {
    chunks
        .iter()
        .filter_map(|c| match c {
            StreamChunk::BlockStart { index, .. }
            | StreamChunk::TextDelta { index, .. }
            | StreamChunk::ReasoningDelta { index, .. }
            | StreamChunk::ToolCallDelta { index, .. }
            | StreamChunk::BlockEnd { index, .. } => Some(*index),
            _ => None,
        })
        .collect()
}

fn assemble(chunks: &[StreamChunk]) -> BlockAssembler {
    let mut a = BlockAssembler::new();
    for c in chunks {
        a.push(c);
    }
    a
}

#[test]
fn worked_example_assembles_to_reasoning_text_and_tool_call() {
    let chunks = ReplyBuilder::new()
        .reasoning(&["List the", " directory."])
        .text(&["Checking."])
        .tool_call(
            "call_00_Xy12",
            "bash",
            &[
                "",
                "{\"command\": \"ls\", ",
                "\"description\": \"List files\"}",
            ],
        )
        .usage(176, 45)
        .build();
    let a = assemble(&chunks);
    let r = a.result().unwrap();
    assert_eq!(
        r.message.content,
        vec![
            ContentBlock::reasoning("List the directory."),
            ContentBlock::text("Checking."),
            ContentBlock::tool_call(
                "call_00_Xy12",
                "bash",
                "{\"command\": \"ls\", \"description\": \"List files\"}"
            ),
        ]
    );
    assert_eq!(r.finish, FinishReason::ToolCalls);
    assert_eq!(r.usage.unwrap().input_tokens, 176);
}

#[test]
fn deltas_without_block_start_or_end_are_assembled_at_the_end() {
    let a = assemble(&[text(3, "he"), text(3, "llo"), reasoning(1, "hm")]);
    assert_eq!(
        a.blocks().unwrap(),
        vec![ContentBlock::text("hello"), ContentBlock::reasoning("hm")]
    );
    assert_eq!(a.finish(), FinishReason::Stop, "no finish means stop");
    assert!(!a.has_finish());
}

#[test]
fn stragglers_after_block_end_are_ignored() {
    let a = assemble(&[
        start(0, "text"),
        text(0, "a"),
        end(0, ContentBlock::text("final")),
        text(0, "straggler"),
    ]);
    assert_eq!(a.blocks().unwrap(), vec![ContentBlock::text("final")]);
}

#[test]
fn duplicate_block_start_keeps_the_first_type_and_mismatched_deltas_are_dropped() {
    let a = assemble(&[
        start(0, "tool-call"),
        start(0, "text"),
        text(0, "ignored"),
        call(0, "c1", Some("bash"), "{}"),
    ]);
    assert_eq!(
        a.blocks().unwrap(),
        vec![ContentBlock::tool_call("c1", "bash", "{}")]
    );
}

#[test]
fn block_end_without_start_is_appended_in_order() {
    let a = assemble(&[
        text(0, "x"),
        end(5, ContentBlock::reasoning("r")),
        text(1, "y"),
    ]);
    assert_eq!(
        a.blocks().unwrap(),
        vec![
            ContentBlock::text("x"),
            ContentBlock::reasoning("r"),
            ContentBlock::text("y")
        ]
    );
}

#[test]
fn second_block_end_replaces_the_first_unless_already_flushed() {
    let mut a = BlockAssembler::new();
    a.push(&end(0, ContentBlock::text("first")));
    assert_eq!(a.flush_ready(), vec![ContentBlock::text("first")]);
    a.push(&end(0, ContentBlock::text("second")));
    assert_eq!(a.blocks().unwrap(), vec![ContentBlock::text("second")]);
    assert!(
        a.flush_ready().is_empty(),
        "a flushed block is never re-emitted"
    );
    assert!(a.flush_remaining().unwrap().is_empty());
}

#[test]
fn tool_call_without_id_gets_a_fallback_but_an_empty_id_stays_empty() {
    // Reference: toolCallId is set unconditionally from the delta; only a
    // partial that never received a delta with an id uses call-<index>.
    let a = assemble(&[start(7, "tool-call")]);
    assert_eq!(
        a.blocks().unwrap(),
        vec![ContentBlock::tool_call("call-7", "", "")]
    );
    let b = assemble(&[call(2, "", None, "{")]);
    assert_eq!(
        b.blocks().unwrap(),
        vec![ContentBlock::tool_call("", "", "{")]
    );
}

#[test]
fn name_is_set_only_when_non_empty_and_id_always_overwrites() {
    let a = assemble(&[
        call(0, "a", Some("bash"), "{"),
        call(0, "b", Some(""), "}"),
        call(0, "c", None, ""),
    ]);
    assert_eq!(
        a.blocks().unwrap(),
        vec![ContentBlock::tool_call("c", "bash", "{}")]
    );
}

#[test]
fn open_block_of_unknown_type_is_an_error_on_assembly() {
    let mut a = assemble(&[start(0, "audio")]);
    let err = a.blocks().unwrap_err();
    assert_eq!(err.code(), "INCOMPLETE_BLOCK");
    assert_eq!(
        err.message,
        "cannot assemble incomplete block of type \"audio\""
    );
    assert!(a.flush_remaining().is_err());
    // A block-end makes it assemble.
    let mut data = serde_json::Map::new();
    data.insert("type".into(), "audio".into());
    a.push(&end(
        0,
        ContentBlock::Other {
            kind: "audio".into(),
            data,
        },
    ));
    assert_eq!(a.blocks().unwrap().len(), 1);
}

#[test]
fn duplicate_finish_and_usage_last_wins_and_chunks_after_finish_count() {
    let u = |n| TokenUsage {
        input_tokens: n,
        output_tokens: 1,
        ..Default::default()
    };
    let a = assemble(&[
        StreamChunk::Usage { usage: u(1) },
        StreamChunk::Finish {
            reason: FinishReason::MaxTokens,
        },
        StreamChunk::Usage { usage: u(2) },
        StreamChunk::Finish {
            reason: FinishReason::Stop,
        },
        text(0, "late"),
    ]);
    assert_eq!(a.usage().unwrap().input_tokens, 2);
    assert_eq!(a.finish(), FinishReason::Stop);
    assert_eq!(a.blocks().unwrap(), vec![ContentBlock::text("late")]);
}

#[test]
fn flush_ready_holds_a_closed_block_behind_an_open_one() {
    let mut a = BlockAssembler::new();
    a.push(&start(0, "text"));
    a.push(&text(0, "open"));
    a.push(&end(1, ContentBlock::text("closed")));
    assert!(a.flush_ready().is_empty());
    a.push(&end(0, ContentBlock::text("open!")));
    assert_eq!(
        a.flush_ready(),
        vec![ContentBlock::text("open!"), ContentBlock::text("closed")]
    );
}

#[test]
fn block_end_returns_its_block() {
    let mut a = BlockAssembler::new();
    assert_eq!(a.push(&text(0, "x")), None);
    assert_eq!(
        a.push(&end(0, ContentBlock::text("x"))),
        Some(&ContentBlock::text("x"))
    );
}

// ---------------------------------------------------------------- properties

#[derive(Debug, Clone)]
enum Planned {
    Text(Vec<String>),
    Reasoning(Vec<String>),
    Call(String, String, Vec<String>),
}

fn planned() -> impl Strategy<Value = Planned> {
    let frags = prop::collection::vec("[a-z {}\":,\u{4e00}-\u{4e05}]{0,6}", 0..5);
    prop_oneof![
        frags.clone().prop_map(Planned::Text),
        frags.clone().prop_map(Planned::Reasoning),
        ("[a-z0-9_]{1,8}", "[a-z_]{1,8}", frags)
            .prop_map(|(id, name, f)| Planned::Call(id, name, f)),
    ]
}

/// A valid stream: blocks with distinct indices, deltas interleaved
/// arbitrarily across blocks, block-ends in any order, usage, finish.
fn valid_stream() -> impl Strategy<Value = Vec<StreamChunk>> {
    (
        prop::collection::vec(planned(), 0..6),
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(|(blocks, seed, with_ends)| {
            let mut rng = seed;
            let mut next = || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng
            };
            // Per-block queues of chunks; indices are sparse to prove opacity.
            let mut queues: Vec<std::collections::VecDeque<StreamChunk>> = Vec::new();
            for (i, b) in blocks.iter().enumerate() {
                let index = (i as u32) * 3 + 1;
                let mut q = std::collections::VecDeque::new();
                let (kind, block) = match b {
                    Planned::Text(f) => {
                        f.iter().for_each(|s| q.push_back(text(index, s)));
                        ("text", ContentBlock::text(f.concat()))
                    }
                    Planned::Reasoning(f) => {
                        f.iter().for_each(|s| q.push_back(reasoning(index, s)));
                        ("reasoning", ContentBlock::reasoning(f.concat()))
                    }
                    Planned::Call(id, name, f) => {
                        f.iter()
                            .for_each(|s| q.push_back(call(index, id, Some(name), s)));
                        if f.is_empty() {
                            q.push_back(call(index, id, Some(name), ""));
                        }
                        ("tool-call", ContentBlock::tool_call(id, name, f.concat()))
                    }
                };
                q.push_front(start(index, kind));
                if with_ends {
                    q.push_back(end(index, block));
                }
                queues.push(q);
            }
            let mut out = Vec::new();
            // Interleave, but keep each block's first chunk in block order so
            // first appearance = planned order.
            let mut opened = 0;
            loop {
                let live: Vec<usize> = (0..queues.len())
                    .filter(|&i| !queues[i].is_empty() && i <= opened)
                    .collect();
                if live.is_empty() {
                    if opened + 1 < queues.len() {
                        opened += 1;
                        continue;
                    }
                    break;
                }
                let pick = live[(next() as usize) % live.len()];
                if pick == opened && opened + 1 < queues.len() {
                    opened += 1;
                }
                if let Some(c) = queues[pick].pop_front() {
                    out.push(c);
                }
            }
            out.push(StreamChunk::Usage {
                usage: TokenUsage {
                    input_tokens: 3,
                    output_tokens: 4,
                    ..Default::default()
                },
            });
            out.push(StreamChunk::Finish {
                reason: FinishReason::Stop,
            });
            out
        })
}

fn arbitrary_chunk() -> impl Strategy<Value = StreamChunk> {
    chunk_with_indices(6)
}

/// Arbitrary chunks on indices `0..max`.
fn chunk_with_indices(max: u32) -> impl Strategy<Value = StreamChunk> {
    let idx = 0u32..max;
    prop_oneof![
        (
            idx.clone(),
            prop_oneof!["text", "reasoning", "tool-call", "audio"]
        )
            .prop_map(|(i, t)| start(i, &t)),
        (idx.clone(), ".{0,4}").prop_map(|(i, s)| text(i, &s)),
        (idx.clone(), ".{0,4}").prop_map(|(i, s)| reasoning(i, &s)),
        (
            idx.clone(),
            ".{0,3}",
            proptest::option::of(".{0,3}"),
            ".{0,4}"
        )
            .prop_map(|(i, id, n, a)| call(i, &id, n.as_deref(), &a)),
        (idx.clone(), ".{0,4}").prop_map(|(i, s)| end(i, ContentBlock::text(s))),
        Just(StreamChunk::Finish {
            reason: FinishReason::Stop
        }),
        Just(StreamChunk::Usage {
            usage: TokenUsage::default()
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Incremental (flush_ready after every chunk, then flush_remaining) and
    /// whole assembly agree on valid streams.
    #[test]
    fn incremental_and_whole_assembly_agree(chunks in valid_stream()) {
        let mut inc = BlockAssembler::new();
        let mut streamed = Vec::new();
        for c in &chunks {
            inc.push(c);
            streamed.extend(inc.flush_ready());
        }
        streamed.extend(inc.flush_remaining().unwrap());
        let whole = assemble(&chunks).blocks().unwrap();
        prop_assert_eq!(&streamed, &whole);
        // Deltas and block-ends agree: the blocks assembled from deltas alone
        // equal the authoritative block-ends.
        let deltas_only: Vec<StreamChunk> = chunks
            .iter()
            .filter(|c| !matches!(c, StreamChunk::BlockEnd { .. }))
            .cloned()
            .collect();
        prop_assert_eq!(assemble(&deltas_only).blocks().unwrap(), whole);
    }

    /// Malformed sequences never panic and the state stays bounded by the
    /// number of distinct indices.
    #[test]
    fn malformed_sequences_never_panic(chunks in prop::collection::vec(arbitrary_chunk(), 0..64)) {
        let mut a = BlockAssembler::new();
        let mut flushed = 0usize;
        for c in &chunks {
            a.push(c);
            flushed += a.flush_ready().len();
        }
        let distinct = distinct_indices(&chunks);
        prop_assert_eq!(a.block_count(), distinct.len());
        prop_assert!(flushed <= distinct.len());
        if let Ok(rest) = a.flush_remaining() {
            prop_assert_eq!(flushed + rest.len(), distinct.len());
        }
        let _ = a.result();
    }

    /// Past 16 blocks the index map takes over from scanning; the consuming
    /// `into_result` agrees with `result` on any sequence.
    #[test]
    fn many_blocks_and_consuming_result_agree(chunks in prop::collection::vec(chunk_with_indices(40), 0..200)) {
        let a = assemble(&chunks);
        let distinct = distinct_indices(&chunks);
        prop_assert_eq!(a.block_count(), distinct.len());
        let borrowed = a.result().map_err(|e| e.to_string());
        let owned = a.into_result().map_err(|e| e.to_string());
        prop_assert_eq!(borrowed, owned);
    }
}

#[test]
fn forty_interleaved_blocks_keep_their_own_text() {
    let mut chunks = Vec::new();
    for round in 0..3 {
        for i in 0..40u32 {
            // Sparse indices, visited in a shuffled order each round.
            let index = (i * 7) % 40 * 5;
            chunks.push(text(index, &format!("{index}.{round} ")));
        }
    }
    let blocks = assemble(&chunks).into_result().unwrap().message.content;
    assert_eq!(blocks.len(), 40);
    for (i, block) in blocks.iter().enumerate() {
        let index = (i as u32 * 7) % 40 * 5;
        assert_eq!(
            block,
            &ContentBlock::text(format!("{index}.0 {index}.1 {index}.2 "))
        );
    }
}
