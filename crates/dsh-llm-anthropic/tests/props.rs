//! Properties of parsing and translation without a network: any byte split
//! of a valid stream gives the same chunks, fragments of any text survive
//! the fast path, and no input makes the translator panic.
#![allow(unreachable_pub, clippy::unwrap_used, clippy::expect_used)] // the shared `common` helpers

mod common;

use common::*;
use dsh_kernel::ErrorCode;
use dsh_llm::conformance::check_completed;
use dsh_llm::{ContentBlock, StreamChunk};
use dsh_llm_anthropic::Translator;
use proptest::prelude::*;
use serde_json::{json, Value};

fn to_json(chunks: &[StreamChunk]) -> Vec<Value> {
    chunks
        .iter()
        .map(|c| serde_json::to_value(c).unwrap())
        .collect()
}

#[test]
fn worked_example_byte_by_byte_and_with_crlf() {
    let bytes = example_bytes();
    let (chunks, err) = translate_pieces(bytes.chunks(1));
    assert!(err.is_none(), "{err:?}");
    assert_eq!(to_json(&chunks), expected_chunks());
    let crlf = String::from_utf8(bytes).unwrap().replace('\n', "\r\n");
    let (chunks, err) = translate_pieces([crlf.as_bytes()]);
    assert!(err.is_none());
    assert_eq!(to_json(&chunks), expected_chunks());
}

#[test]
fn translator_edge_cases() {
    let run = |payloads: &[&str]| {
        let mut t = Translator::new();
        let mut out = Vec::new();
        for p in payloads {
            if let Err(e) = t.push(p, &mut out) {
                return (to_json(&out), Some(e.code().to_string()));
            }
        }
        (
            to_json(&out),
            t.finish().err().map(|e| e.code().to_string()),
        )
    };
    // A delta for a block never started opens one of its kind.
    let (chunks, err) = run(&[
        r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    assert_eq!(err, None);
    assert_eq!(
        chunks,
        vec![
            json!({"type":"block-start","index":0,"blockType":"text"}),
            json!({"type":"text-delta","index":0,"text":"x"}),
            json!({"type":"block-end","index":0,"block":{"type":"text","text":"x"}}),
            json!({"type":"finish","reason":{"kind":"stop"}}),
        ]
    );
    // A delta of the wrong kind is ignored; scalars, arrays and unknown
    // events are ignored; wrong field types read as absent.
    let (chunks, err) = run(&[
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":5}}"#,
        "42",
        "[1,2]",
        r#"{"type":"future_event","x":1}"#,
        r#"{"type":"content_block_delta","index":"zero","delta":"no"}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":"many"}"#,
        r#"{"type":"message_stop"}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"late"}}"#,
    ]);
    assert_eq!(err, None);
    assert_eq!(
        chunks,
        vec![
            json!({"type":"block-start","index":0,"blockType":"text"}),
            json!({"type":"block-end","index":0,"block":{"type":"text","text":""}}),
            json!({"type":"finish","reason":{"kind":"stop"}}),
        ]
    );
    // `null`, non-JSON and an error event fail; no message_stop fails.
    assert_eq!(run(&["null"]).1.as_deref(), Some("MALFORMED_RESPONSE"));
    assert_eq!(run(&["[DONE]"]).1.as_deref(), Some("MALFORMED_RESPONSE"));
    assert_eq!(
        run(&[r#"{"type":"error","error":{"type":"rate_limit_error","message":"m"}}"#])
            .1
            .as_deref(),
        Some("RATE_LIMIT")
    );
    assert_eq!(
        run(&[r#"{"type":"error"}"#]).1.as_deref(),
        Some("SERVER"),
        "an error event without details is still an error"
    );
    assert_eq!(
        run(&[r#"{"type":"ping"}"#]).1.as_deref(),
        Some("STREAM_CLOSED")
    );
    // A start for a wire index still open closes the old block first.
    let (chunks, _) = run(&[
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"a"}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"unknown_kind","x":1}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    assert_eq!(
        chunks,
        vec![
            json!({"type":"block-start","index":0,"blockType":"text"}),
            json!({"type":"text-delta","index":0,"text":"a"}),
            json!({"type":"block-end","index":0,"block":{"type":"text","text":"a"}}),
            json!({"type":"block-start","index":1,"blockType":"unknown_kind"}),
            json!({"type":"block-end","index":1,"block":{"type":"unknown_kind","x":1}}),
            json!({"type":"finish","reason":{"kind":"stop"}}),
        ]
    );
}

#[test]
fn many_open_blocks_stay_consistent() {
    // 40 interleaved text blocks (past the scan limit), closed in reverse.
    let mut events = vec![message_start(1, 0, 0)];
    for i in 0..40u32 {
        events.push(block_start(i, json!({"type":"text","text":""})));
    }
    for round in 0..3 {
        for i in 0..40u32 {
            events.push(text_delta(i, &format!("{i}.{round} ")));
        }
    }
    for i in (0..40u32).rev() {
        events.push(block_stop(i));
    }
    events.extend([message_delta("end_turn", 1), message_stop()]);
    let bytes: String = events.iter().map(event).collect();
    let (chunks, err) = translate_pieces([bytes.as_bytes()]);
    assert!(err.is_none());
    let items: Vec<_> = chunks.into_iter().map(Ok).collect();
    let result = check_completed(&items).unwrap();
    assert_eq!(result.message.content.len(), 40);
    for (i, b) in result.message.content.iter().enumerate() {
        assert_eq!(b, &ContentBlock::text(format!("{i}.0 {i}.1 {i}.2 ")));
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z_]{0,12}".prop_map(Value::from),
        prop_oneof![
            Just("content_block_delta"),
            Just("content_block_start"),
            Just("content_block_stop"),
            Just("message_start"),
            Just("message_delta"),
            Just("message_stop"),
            Just("text_delta"),
            Just("input_json_delta"),
            Just("thinking_delta"),
            Just("signature_delta"),
            Just("tool_use"),
            Just("thinking"),
            Just("text"),
            Just("error"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("type".to_string()),
                        Just("index".to_string()),
                        Just("delta".to_string()),
                        Just("content_block".to_string()),
                        Just("text".to_string()),
                        Just("partial_json".to_string()),
                        Just("usage".to_string()),
                        Just("stop_reason".to_string()),
                        "[a-z]{1,6}",
                    ],
                    inner
                ),
                0..5
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_byte_split_assembles_the_same_message(
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..40)
    ) {
        let bytes = example_bytes();
        let mut at: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        at.push(0);
        at.push(bytes.len());
        at.sort_unstable();
        at.dedup();
        let pieces: Vec<&[u8]> = at.windows(2).map(|w| &bytes[w[0]..w[1]]).collect();
        let (chunks, err) = translate_pieces(pieces);
        prop_assert!(err.is_none());
        prop_assert_eq!(to_json(&chunks), expected_chunks());
    }

    #[test]
    fn fragments_of_any_text_survive_the_fast_path(
        fragments in prop::collection::vec(any::<String>(), 1..30)
    ) {
        let texts: Vec<&str> = fragments.iter().map(String::as_str).collect();
        let bytes: String = text_events(&texts).iter().map(event).collect();
        let (chunks, err) = translate_pieces([bytes.as_bytes()]);
        prop_assert!(err.is_none());
        let items: Vec<_> = chunks.into_iter().map(Ok).collect();
        let result = check_completed(&items).map_err(|v| TestCaseError::fail(v.to_string()))?;
        prop_assert_eq!(
            result.message.content,
            vec![ContentBlock::text(fragments.concat())]
        );
    }

    #[test]
    fn translator_never_panics(values in prop::collection::vec(arb_json(), 0..12), raw in ".{0,40}") {
        let mut t = Translator::new();
        let mut out = Vec::new();
        for v in &values {
            if t.push(&v.to_string(), &mut out).is_err() {
                break;
            }
        }
        let _ = t.push(&raw, &mut out);
        let _ = t.finish();
        // Whatever came out satisfies the chunk contract up to the end.
        let items: Vec<_> = out.into_iter().map(Ok).collect();
        dsh_llm::conformance::check_chunks(&items).map_err(|v| TestCaseError::fail(v.to_string()))?;
    }
}

/// A history message for generated requests: user text, a tool result, an
/// assistant message with calls, reasoning (signed or not) and text, or an
/// empty one.
fn history_message(kind: u8, n: u8) -> dsh_llm::Message {
    use dsh_llm::{Message, ReasoningBlock, Role};
    match kind % 5 {
        0 => Message::user_text(format!("ctx {n}")),
        1 => Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result(
                format!("c{}", n % 4),
                vec![ContentBlock::text("out")],
                n.is_multiple_of(2),
            )],
        },
        2 => Message::assistant(
            (0..n % 4)
                .map(|i| ContentBlock::tool_call(format!("c{i}"), "t", "{\"a\":1}"))
                .chain([ContentBlock::Reasoning(ReasoningBlock {
                    text: "r".into(),
                    signature: (n.is_multiple_of(2)).then(|| "s".to_string()),
                })])
                .collect(),
        ),
        3 => Message::assistant(vec![ContentBlock::text(format!("answer {n}"))]),
        _ => Message {
            role: if n.is_multiple_of(2) {
                Role::User
            } else {
                Role::Assistant
            },
            content: vec![ContentBlock::text("")],
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_history_gives_alternating_roles_results_first_and_at_most_four_breakpoints(
        spec in prop::collection::vec((0u8..5, 0u8..8), 0..30),
        system in any::<bool>(),
        tools in any::<bool>(),
    ) {
        let mut req = options();
        req.messages = spec.iter().map(|(k, n)| history_message(*k, *n)).collect::<Vec<_>>().into();
        if system {
            req.system = Some("sys".into());
        }
        if tools {
            req.tools = Some(dsh_llm::ToolSet::new(vec![dsh_llm::ToolSchema {
                name: "t".into(),
                description: "d".into(),
                parameters: json!({"type":"object"}),
                strict: None,
            }]));
        }
        let body = dsh_llm_anthropic::request_body(&req, &config("http://h")).unwrap();
        let text = body.to_string();
        prop_assert!(text.matches("cache_control").count() <= 4, "{}", text);
        let messages = body["messages"].as_array().unwrap();
        for pair in messages.windows(2) {
            prop_assert_ne!(&pair[0]["role"], &pair[1]["role"]);
        }
        for m in messages {
            let content = m["content"].as_array().unwrap();
            prop_assert!(!content.is_empty());
            for b in content {
                prop_assert!(b["type"] != "text" || b["text"] != "", "empty text: {}", m);
                if b["type"] == "tool_use" {
                    prop_assert!(b["input"].is_object());
                }
            }
            // Tool results lead: none after a block of another type.
            let first_other = content.iter().position(|b| b["type"] != "tool_result");
            if let Some(i) = first_other {
                prop_assert!(content[i..].iter().all(|b| b["type"] != "tool_result"), "{}", m);
            }
        }
        // The last user message, when there is one, carries a breakpoint.
        if let Some(last_user) = messages.iter().rev().find(|m| m["role"] == "user") {
            let last = last_user["content"].as_array().unwrap().last().unwrap();
            prop_assert_eq!(&last["cache_control"], &json!({"type":"ephemeral"}));
        }
    }
}
