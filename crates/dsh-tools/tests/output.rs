//! Structured tool outputs: validated against the declared output type
//! before they become content; a mismatch is INVALID_TOOL_OUTPUT.

use std::sync::Arc;

use dsh_tools::{define_tool_with_output, CallEnv, ToolArgs, ToolCall, ToolRegistry};
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, ToolArgs)]
struct CountArgs {
    text: String,
}

/// What `count` returns.
#[derive(Debug, Serialize, ToolArgs)]
#[serde(rename_all = "camelCase")]
struct Counted {
    #[tool(min_length = 1)]
    first_word: String,
    words: u32,
}

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let tool = define_tool_with_output(
        "count",
        "Counts words",
        |args: CountArgs, _ctx| async move {
            Ok(Counted {
                // An empty text yields an empty first word: a bug the output
                // check catches.
                first_word: args.text.split_whitespace().next().unwrap_or("").into(),
                words: u32::try_from(args.text.split_whitespace().count()).unwrap_or(u32::MAX),
            })
        },
    );
    assert_eq!(
        tool.output_spec().map(|s| s.names().collect::<Vec<_>>()),
        Some(vec!["firstWord", "words"])
    );
    let _ = registry.register(Arc::new(tool)).map(std::mem::forget);
    registry
}

#[tokio::test]
async fn a_valid_output_becomes_json_content() {
    let registry = registry();
    let r = registry
        .execute(
            &ToolCall::new("c1", "count", r#"{"text": "hello big world"}"#),
            CallEnv::default(),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    let value: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    assert_eq!(value, serde_json::json!({"firstWord": "hello", "words": 3}));
}

#[tokio::test]
async fn an_output_that_breaks_its_schema_is_a_neutral_error() {
    let registry = registry();
    let r = registry
        .execute(
            &ToolCall::new("c2", "count", r#"{"text": "   "}"#),
            CallEnv::default(),
        )
        .await;
    assert!(r.is_error);
    assert_eq!(r.code(), Some("INVALID_TOOL_OUTPUT"));
    let text = r.text();
    assert!(
        text.contains("this is a bug in the tool, not in your call"),
        "{text}"
    );
    assert!(
        !text.contains("firstWord"),
        "the malformed value is not shown: {text}"
    );
}
