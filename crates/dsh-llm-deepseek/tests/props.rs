//! The SSE parser and the translator without the network: the worked example
//! fed byte by byte, edge cases of d.1–d.7, the fixture and property tests
//! (throughput is the `sse` bench's).
#![allow(unreachable_pub, clippy::unwrap_used, clippy::expect_used)] // the shared `common` helpers

mod common;

use dsh_kernel::ErrorCode;

use common::*;
use dsh_llm::StreamChunk;
use dsh_llm_deepseek::{SseParser, Translator};
use proptest::prelude::*;
use serde_json::{json, Value};

fn example_bytes() -> Vec<u8> {
    example_events().concat().into_bytes()
}

fn to_json(chunks: &[StreamChunk]) -> Vec<Value> {
    chunks
        .iter()
        .map(|c| serde_json::to_value(c).unwrap())
        .collect()
}

fn payloads_of(pieces: &[&[u8]]) -> (Vec<String>, bool) {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    for piece in pieces {
        p.push(piece);
        while let Some(x) = p.next_payload() {
            out.push(x.to_string());
        }
    }
    p.end();
    while let Some(x) = p.next_payload() {
        out.push(x.to_string());
    }
    (out, p.is_done())
}

#[test]
fn worked_example_byte_by_byte() {
    let bytes = example_bytes();
    let (chunks, err) = translate_pieces(bytes.chunks(1));
    assert!(err.is_none(), "{err:?}");
    assert_eq!(to_json(&chunks), expected_chunks());
}

#[test]
fn worked_example_with_crlf_line_endings() {
    let crlf = String::from_utf8(example_bytes())
        .unwrap()
        .replace('\n', "\r\n");
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
                return (to_json(&out), Some(e));
            }
        }
        let err = t.finish().err();
        (to_json(&out), err)
    };
    let finish_stop = json!({"type":"finish","reason":{"kind":"stop"}});
    let (chunks, err) = run(&["{}", "[DONE]"]);
    assert_eq!(chunks, vec![finish_stop.clone()]);
    assert!(err.is_none());
    assert_eq!(
        run(&[r#"{"choices":[]}"#, "[DONE]"]).0,
        vec![finish_stop.clone()]
    );
    // Non-object JSON is "no choices"; wrongly typed fields are ignored.
    assert_eq!(
        run(&[
            "42",
            "\"s\"",
            "[1]",
            r#"{"choices":7,"usage":"x"}"#,
            r#"{"choices":[1,{"delta":{"content":5,"tool_calls":{}}}]}"#,
            "[DONE]"
        ])
        .0,
        vec![finish_stop.clone()]
    );
    // Payloads after [DONE] are ignored.
    assert_eq!(run(&["[DONE]", "{bad"]).0, vec![finish_stop]);
    // JSON null is malformed.
    let (_, err) = run(&["null"]);
    let err = err.unwrap();
    assert_eq!(err.code(), "MALFORMED_RESPONSE");
    assert_eq!(err.message, "malformed SSE payload: null");
    // The excerpt is 120 characters.
    let long = format!("{{{}", "é".repeat(300));
    let (_, err) = run(&[&long]);
    assert_eq!(
        err.unwrap().message.chars().count(),
        "malformed SSE payload: ".len() + 120
    );
    // No [DONE].
    let (_, err) = run(&["{}"]);
    let err = err.unwrap();
    assert_eq!(err.code(), "STREAM_CLOSED");
    assert_eq!(err.message, "SSE payload stream ended without [DONE]");
    // Usage mapping, fact sheet d.6 examples; last usage wins.
    let u1 = r#"{"usage":{"prompt_tokens":283,"completion_tokens":69,"prompt_cache_hit_tokens":256,"prompt_tokens_details":{"cached_tokens":256},"completion_tokens_details":{"reasoning_tokens":24}}}"#;
    let u2 = r#"{"usage":{"prompt_tokens":10,"completion_tokens":2}}"#;
    let u3 = r#"{"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_cache_hit_tokens":4,"prompt_tokens_details":null}}"#;
    assert_eq!(
        run(&[u1, "[DONE]"]).0[0],
        json!({"type":"usage","usage":{"inputTokens":27,"outputTokens":69,"cacheReadTokens":256,"reasoningTokens":24}})
    );
    assert_eq!(
        run(&[u1, u2, "[DONE]"]).0[0],
        json!({"type":"usage","usage":{"inputTokens":10,"outputTokens":2}})
    );
    assert_eq!(
        run(&[u3, "[DONE]"]).0[0],
        json!({"type":"usage","usage":{"inputTokens":6,"outputTokens":2,"cacheReadTokens":4}})
    );
    // Reasoning before content within one delta; finish mapping; tool call
    // without id or name.
    let (chunks, _) = run(&[
        r#"{"choices":[{"delta":{"content":"c","reasoning_content":"r","tool_calls":[{"function":{"arguments":"{"}}]},"finish_reason":"length"}]}"#,
        "[DONE]",
    ]);
    assert_eq!(
        chunks,
        vec![
            json!({"type":"block-start","index":0,"blockType":"reasoning"}),
            json!({"type":"reasoning-delta","index":0,"text":"r"}),
            json!({"type":"block-start","index":1,"blockType":"text"}),
            json!({"type":"text-delta","index":1,"text":"c"}),
            json!({"type":"block-start","index":2,"blockType":"tool-call"}),
            json!({"type":"tool-call-delta","index":2,"id":"","argumentsDelta":"{"}),
            json!({"type":"block-end","index":0,"block":{"type":"reasoning","text":"r"}}),
            json!({"type":"block-end","index":1,"block":{"type":"text","text":"c"}}),
            json!({"type":"block-end","index":2,"block":{"type":"tool-call","id":"","name":"","arguments":"{"}}),
            json!({"type":"finish","reason":{"kind":"max-tokens"}}),
        ]
    );
}

#[test]
fn sse_end_of_stream_rules() {
    // A trailing unterminated payload is handed on, then the stream is short.
    assert_eq!(
        payloads_of(&[b"data: a\n\ndata: b"]),
        (vec!["a".into(), "b".into()], false)
    );
    assert_eq!(
        payloads_of(&[b"data: [DONE]"]),
        (vec!["[DONE]".into()], true)
    );
    assert_eq!(payloads_of(&[b""]), (vec![], false));
    // Bytes after [DONE] are never inspected.
    assert_eq!(
        payloads_of(&[b"data: [DONE]\n\n\xFF\xFEgarbage"]),
        (vec!["[DONE]".into()], true)
    );
}

#[test]
fn fixture_parses_in_network_pieces_with_bounded_memory() {
    let fixture = fixture();
    for piece in [1024, 1500, 4096] {
        let mut parser = SseParser::new();
        let mut tr = Translator::new();
        let mut out = Vec::new();
        let mut max_buffered = 0;
        for p in fixture.chunks(piece) {
            parser.push(p);
            max_buffered = max_buffered.max(parser.buffered());
            while let Some(payload) = parser.next_payload() {
                tr.push(payload, &mut out).unwrap();
            }
        }
        assert!(tr.is_done());
        assert_eq!(out.len(), 2004);
        let ends = out
            .iter()
            .filter(|c| matches!(c, StreamChunk::BlockEnd { .. }))
            .count();
        assert_eq!(ends, 3);
        // The parser holds at most one partial event plus one piece.
        assert!(max_buffered < piece + 4096, "buffered {max_buffered}");
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-z_ \\\\\"é]{0,8}".prop_map(Value::String),
        prop_oneof![
            Just("choices"),
            Just("delta"),
            Just("content"),
            Just("reasoning_content"),
            Just("tool_calls"),
            Just("index"),
            Just("id"),
            Just("function"),
            Just("name"),
            Just("arguments"),
            Just("finish_reason"),
            Just("usage"),
            Just("prompt_tokens"),
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        let key = prop_oneof![
            Just("choices".to_string()),
            Just("delta".to_string()),
            Just("content".to_string()),
            Just("reasoning_content".to_string()),
            Just("tool_calls".to_string()),
            Just("index".to_string()),
            Just("id".to_string()),
            Just("function".to_string()),
            Just("name".to_string()),
            Just("arguments".to_string()),
            Just("finish_reason".to_string()),
            Just("usage".to_string()),
            Just("prompt_tokens".to_string()),
            Just("completion_tokens".to_string()),
            Just("prompt_tokens_details".to_string()),
            Just("cached_tokens".to_string()),
            "[a-z]{1,4}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parser_is_split_invariant(cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..40)) {
        let bytes = example_bytes();
        let whole = payloads_of(&[&bytes]);
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut pieces: Vec<&[u8]> = Vec::new();
        let mut last = 0;
        for p in points {
            pieces.push(&bytes[last..p]);
            last = p;
        }
        pieces.push(&bytes[last..]);
        prop_assert_eq!(payloads_of(&pieces), whole);
    }

    #[test]
    fn parser_is_split_invariant_on_arbitrary_bytes(
        bytes in prop::collection::vec(prop_oneof![
            Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '), Just(b'd'), Just(b'a'), Just(b't'),
            Just(0xE4u8), Just(0xBD), Just(0xA0), Just(0xFF), Just(0xEF), Just(0xBB), Just(0xBF),
            any::<u8>(),
        ], 0..300),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..20),
    ) {
        // Sprinkle "data:" so that events carry payloads.
        let mut input = b"data: x".to_vec();
        input.extend_from_slice(&bytes);
        let whole = payloads_of(&[&input]);
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
        points.sort_unstable();
        let mut pieces: Vec<&[u8]> = Vec::new();
        let mut last = 0;
        for p in points {
            pieces.push(&input[last..p]);
            last = p;
        }
        pieces.push(&input[last..]);
        prop_assert_eq!(payloads_of(&pieces), whole);
    }

    #[test]
    fn translator_never_panics(values in prop::collection::vec(arb_json(), 0..8), raw in ".{0,40}") {
        let mut t = Translator::new();
        let mut out = Vec::new();
        for v in &values {
            let _ = t.push(&v.to_string(), &mut out);
        }
        let _ = t.push(&raw, &mut out);
        let _ = t.push("[DONE]", &mut out);
        let _ = t.finish();
    }

    /// The envelope and template shortcuts change nothing: a stream
    /// translates to the same
    /// chunks and the same errors as the same stream with a distinct
    /// `created` member prepended to every payload (which no envelope can
    /// match, so every payload is parsed whole), for honest and tricky
    /// envelopes (nested `choices`, an escaped `usage` key, whitespace,
    /// a `choices` before the envelope) and bodies (deltas, tool calls,
    /// usage, duplicate `choices`, truncated) with fragments that fit a
    /// template and ones that must not (escapes, a raw control character,
    /// a quote, empty).
    #[test]
    fn envelope_shortcut_translates_like_whole_parsing(
        runs in prop::collection::vec(
            (
                0usize..ENVELOPES.len(),
                0usize..BODIES.len(),
                prop::collection::vec(0usize..FRAGMENTS.len(), 1..6),
            ),
            1..10,
        )
    ) {
        // Runs of one envelope and body with several fragments: what fills
        // a template.
        let plan: Vec<(usize, usize, usize)> = runs
            .iter()
            .flat_map(|(e, b, fs)| fs.iter().map(move |f| (*e, *b, *f)))
            .collect();
        let mut fast = Translator::new();
        let mut whole = Translator::new();
        let (mut fast_out, mut whole_out) = (Vec::new(), Vec::new());
        for (i, (e, b, f)) in plan.iter().enumerate() {
            let payload = format!("{}{}", ENVELOPES[*e], BODIES[*b].replace("{F}", FRAGMENTS[*f]));
            let unique = format!("{{\"created\":{i},{}", &payload[1..]);
            let f = fast.push(&payload, &mut fast_out).map_err(|e| e.code().to_string());
            let w = whole.push(&unique, &mut whole_out).map_err(|e| e.code().to_string());
            prop_assert_eq!(f, w, "payload {}", payload);
        }
        let f = fast.push("[DONE]", &mut fast_out).map_err(|e| e.code().to_string());
        let w = whole.push("[DONE]", &mut whole_out).map_err(|e| e.code().to_string());
        prop_assert_eq!(f, w);
        prop_assert_eq!(to_json(&fast_out), to_json(&whole_out));
    }
}

/// Envelopes up to and including the `choices` key (see
/// `envelope_shortcut_translates_like_whole_parsing`).
const ENVELOPES: [&str; 7] = [
    r#"{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":"#,
    r#"{"id":"b","object":"chat.completion.chunk","created":1,"model":"m","choices":"#,
    r#"{"meta":{"choices":1},"choices":"#,
    r#"{"us\u0061ge":{"prompt_tokens":99},"choices":"#,
    r#"{ "id" : "a" , "choices":"#,
    r#"{"choices":[{"delta":{"content":"early"}}],"id":"a","choices":"#,
    r#"{"id":"q\"choices\":","choices":"#,
];

/// Bodies after the `choices` key; `{F}` is replaced by a fragment.
const BODIES: [&str; 12] = [
    r#"[{"index":0,"delta":{"reasoning_content":"{F}"}}]}"#,
    r#"[{"index":0,"delta":{"content":"{F}","reasoning_content":null},"finish_reason":null}]}"#,
    r#"[{"index":0,"delta":{"content":"{F}","reasoning_content":"x"}}]}"#,
    r#"[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"bash","arguments":"{\"a"}}]}}]}"#,
    r#"[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{F}"}}]}}]}"#,
    r#"[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{F}"}}]}}]}"#,
    r#"[{"index":0,"delta":{"content":"{F}"},"finish_reason":"length"}]}"#,
    r#"[],"usage":{"prompt_tokens":10,"completion_tokens":3}}"#,
    r#"[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    r#"[{"index":0,"delta":{"content":"x"}}],"choices":[]}"#,
    r#"[{"index":0,"delta":{"content":"cut"#,
    r#"[]} trailing"#,
];

/// Fragments for the `{F}` of [`BODIES`].
const FRAGMENTS: [&str; 9] = [
    "think ",
    " more",
    "文件",
    r#"a\"b"#,
    r#"\u0041"#,
    r#"tab\there"#,
    "raw\ttab",
    "",
    r#"q"uote"#,
];
