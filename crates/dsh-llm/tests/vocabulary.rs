//! Serde names of the vocabulary match the reference's JSON exactly, and open
//! sets round-trip unknown kinds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_llm::{
    ContentBlock, FinishReason, Message, MessageSource, ModelRequest, StreamChunk, TokenUsage,
    ToolSchema,
};
use serde_json::{json, Value};

fn roundtrip<T: serde::Serialize + serde::de::DeserializeOwned>(v: Value) -> Value {
    let t: T = serde_json::from_value(v).expect("deserializes");
    serde_json::to_value(&t).expect("serializes")
}

#[test]
fn content_blocks_use_reference_names() {
    let blocks = vec![
        json!({"type":"text","text":"hi"}),
        json!({"type":"text","text":"hi","cache":"ephemeral"}),
        json!({"type":"reasoning","text":"hm"}),
        json!({"type":"tool-call","id":"c1","name":"bash","arguments":"{\"a\":1"}),
        json!({"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"ok"}],"isError":false}),
        json!({"type":"tool-result","toolCallId":"c1","content":[]}),
        json!({"type":"image","url":"data:image/png;base64,AA","mimeType":"image/png"}),
    ];
    for b in blocks {
        assert_eq!(roundtrip::<ContentBlock>(b.clone()), b);
    }
    let b = ContentBlock::tool_result("c9", vec![ContentBlock::text("x")], true);
    assert_eq!(
        serde_json::to_string(&b).unwrap(),
        r#"{"type":"tool-result","toolCallId":"c9","content":[{"type":"text","text":"x"}],"isError":true}"#
    );
}

#[test]
fn unknown_block_kinds_round_trip_untouched() {
    let v = json!({"type":"audio","data":"AAAA","nested":{"k":[1,2]}});
    let b: ContentBlock = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(b.kind(), "audio");
    assert_eq!(serde_json::to_value(&b).unwrap(), v);
}

#[test]
fn malformed_known_blocks_are_errors_not_other() {
    assert!(serde_json::from_value::<ContentBlock>(json!({"type":"text"})).is_err());
    assert!(serde_json::from_value::<ContentBlock>(json!({"text":"no type"})).is_err());
    assert!(serde_json::from_value::<ContentBlock>(json!({"type":7})).is_err());
    assert!(serde_json::from_value::<ContentBlock>(json!("text")).is_err());
}

#[test]
fn message_sources_and_finish_reasons() {
    for v in [
        json!({"kind":"user"}),
        json!({"kind":"plugin","plugin":"tool-bash"}),
        json!({"kind":"agent","agentId":"a1"}),
        json!({"kind":"webhook","url":"x"}),
    ] {
        assert_eq!(roundtrip::<MessageSource>(v.clone()), v);
    }
    for v in [
        json!({"kind":"stop"}),
        json!({"kind":"tool-calls"}),
        json!({"kind":"max-tokens"}),
        json!({"kind":"aborted"}),
        json!({"kind":"error","message":"model stopped: content_filter","code":"CONTENT_FILTER"}),
        json!({"kind":"error","message":"m"}),
        json!({"kind":"paused","until":3}),
    ] {
        assert_eq!(roundtrip::<FinishReason>(v.clone()), v);
    }
}

#[test]
fn stream_chunks_use_reference_names() {
    let chunks = vec![
        json!({"type":"block-start","index":0,"blockType":"reasoning"}),
        json!({"type":"reasoning-delta","index":0,"text":"List the"}),
        json!({"type":"text-delta","index":1,"text":"Checking."}),
        json!({"type":"tool-call-delta","index":2,"id":"call_00_Xy12","name":"bash","argumentsDelta":""}),
        json!({"type":"tool-call-delta","index":2,"id":"x","argumentsDelta":"{"}),
        json!({"type":"block-end","index":1,"block":{"type":"text","text":"Checking."}}),
        json!({"type":"usage","usage":{"inputTokens":176,"outputTokens":45,"cacheReadTokens":1024,"reasoningTokens":12}}),
        json!({"type":"finish","reason":{"kind":"tool-calls"}}),
    ];
    for c in chunks {
        assert_eq!(roundtrip::<StreamChunk>(c.clone()), c);
    }
}

#[test]
fn usage_omits_unreported_counts() {
    let u = TokenUsage {
        input_tokens: 10,
        output_tokens: 2,
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_string(&u).unwrap(),
        r#"{"inputTokens":10,"outputTokens":2}"#
    );
}

#[test]
fn messages_tool_schemas_and_options() {
    let m = json!({"role":"assistant","content":[{"type":"text","text":"a"}]});
    assert_eq!(roundtrip::<Message>(m.clone()), m);
    let s = json!({"name":"bash","description":"d","parameters":{"type":"object"},"strict":true});
    assert_eq!(roundtrip::<ToolSchema>(s.clone()), s);
    let o = ModelRequest {
        model: "m".into(),
        max_tokens: Some(5),
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_value(&o).unwrap(),
        json!({"model":"m","messages":[],"maxTokens":5})
    );
}
