//! Request bodies: golden bodies for caching breakpoints, thinking
//! pass-back, tool results, images, role merging and the options; the body
//! on the wire is exactly `request_bytes`.
#![allow(unreachable_pub, clippy::unwrap_used, clippy::expect_used)] // the shared `common` helpers

mod common;

use common::*;
use dsh_kernel::ErrorCode;
use dsh_llm::{
    ContentBlock, ImageBlock, Message, ModelRequest, ReasoningBlock, Role, ToolSchema, ToolSet,
};
use dsh_llm_anthropic::{
    request_body, request_bytes, AnthropicAdapter, AnthropicConfig, IMAGE_OMITTED,
};
use dsh_testkit::LoopbackServer;
use serde_json::{json, Value};

fn user(content: Vec<ContentBlock>) -> Message {
    Message {
        role: Role::User,
        content,
    }
}

fn tool(name: &str) -> ToolSchema {
    ToolSchema {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters: json!({"type":"object","properties":{"x":{"type":"string"}}}),
        strict: None,
    }
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: MODEL.into(),
        messages: messages.into(),
        ..Default::default()
    }
}

fn body(req: &ModelRequest, cfg: &AnthropicConfig) -> Value {
    request_body(req, cfg).unwrap()
}

fn cfg() -> AnthropicConfig {
    config("http://127.0.0.1:1")
}

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk";

/// A tool-using session: prompt, a call with reasoning (signed), its
/// result, a second call, its result.
fn session() -> ModelRequest {
    let mut r = request(vec![
        Message::user_text("list the files"),
        Message::assistant(vec![
            ContentBlock::Reasoning(ReasoningBlock {
                text: "Use ls.".into(),
                signature: Some("sig-1".into()),
            }),
            ContentBlock::text("Listing."),
            ContentBlock::tool_call("toolu_1", "bash", r#"{"command":"ls"}"#),
        ]),
        user(vec![ContentBlock::tool_result(
            "toolu_1",
            vec![ContentBlock::text("a.rs\nb.rs")],
            false,
        )]),
        Message::assistant(vec![ContentBlock::tool_call(
            "toolu_2",
            "read",
            r#"{"path":"a.rs"}"#,
        )]),
        user(vec![ContentBlock::tool_result(
            "toolu_2",
            vec![ContentBlock::text("no such file")],
            true,
        )]),
    ]);
    r.system = Some("You are dsh.".into());
    r.tools = Some(ToolSet::new(vec![tool("bash"), tool("read")]));
    r
}

#[test]
fn golden_tool_session_with_caching_breakpoints() {
    let got = body(&session(), &cfg());
    let eph = json!({"type":"ephemeral"});
    let expected = json!({
        "model": WIRE,
        "max_tokens": 32000,
        "system": [{"type":"text","text":"You are dsh.","cache_control":eph}],
        "messages": [
            {"role":"user","content":[{"type":"text","text":"list the files"}]},
            {"role":"assistant","content":[
                {"type":"thinking","thinking":"Use ls.","signature":"sig-1"},
                {"type":"text","text":"Listing."},
                {"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"ls"}}
            ]},
            {"role":"user","content":[
                {"type":"tool_result","tool_use_id":"toolu_1",
                 "content":[{"type":"text","text":"a.rs\nb.rs"}],"cache_control":eph}
            ]},
            {"role":"assistant","content":[
                {"type":"tool_use","id":"toolu_2","name":"read","input":{"path":"a.rs"}}
            ]},
            {"role":"user","content":[
                {"type":"tool_result","tool_use_id":"toolu_2",
                 "content":[{"type":"text","text":"no such file"}],"is_error":true,"cache_control":eph}
            ]}
        ],
        "tools": [
            {"name":"bash","description":"the bash tool","input_schema":{"type":"object","properties":{"x":{"type":"string"}}}},
            {"name":"read","description":"the read tool","input_schema":{"type":"object","properties":{"x":{"type":"string"}}},"cache_control":eph}
        ],
        "stream": true
    });
    assert_eq!(got, expected);
    // Key order as documented.
    let keys: Vec<&String> = got.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "model",
            "max_tokens",
            "system",
            "messages",
            "tools",
            "stream"
        ]
    );
}

/// Every `cache_control` in a body, as JSON pointers.
fn breakpoints(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "cache_control" {
                    out.push(at.clone());
                } else {
                    breakpoints(x, format!("{at}/{k}"), out);
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                breakpoints(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn a_long_session_has_four_breakpoints_on_the_system_the_last_tool_and_the_last_two_user_turns() {
    let mut r = session();
    let mut msgs = r.messages.to_vec();
    for i in 0..20 {
        msgs.push(Message::assistant(vec![ContentBlock::text(format!(
            "answer {i}"
        ))]));
        msgs.push(Message::user_text(format!("question {i}")));
    }
    r.messages = msgs.into();
    let got = body(&r, &cfg());
    let mut found = Vec::new();
    breakpoints(&got, String::new(), &mut found);
    let n = got["messages"].as_array().unwrap().len();
    assert_eq!(
        found,
        [
            "/system/0".to_string(),
            format!("/messages/{}/content/0", n - 3),
            format!("/messages/{}/content/0", n - 1),
            "/tools/1".to_string(),
        ]
    );
    // Off: none at all.
    let mut off = cfg();
    off.prompt_caching = false;
    let mut found = Vec::new();
    breakpoints(&body(&r, &off), String::new(), &mut found);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn without_system_or_tools_the_breakpoints_are_only_on_user_turns() {
    let r = request(vec![
        Message::user_text("a"),
        Message::assistant(vec![ContentBlock::text("b")]),
        user(vec![ContentBlock::text("c"), ContentBlock::text("d")]),
    ]);
    let got = body(&r, &cfg());
    let mut found = Vec::new();
    breakpoints(&got, String::new(), &mut found);
    assert_eq!(found, ["/messages/0/content/0", "/messages/2/content/1"]);
    assert!(got.get("system").is_none() && got.get("tools").is_none());
}

#[test]
fn thinking_pass_back_keeps_signed_blocks_and_redacted_ones_and_drops_unsigned() {
    let mut redacted = serde_json::Map::new();
    redacted.insert("type".into(), json!("redacted_thinking"));
    redacted.insert("data".into(), json!("EmwKAhgB"));
    let r = request(vec![
        Message::user_text("q"),
        Message::assistant(vec![
            ContentBlock::Other {
                kind: "redacted_thinking".into(),
                data: redacted,
            },
            ContentBlock::Reasoning(ReasoningBlock {
                text: "signed".into(),
                signature: Some("s".into()),
            }),
            // Another provider's reasoning: no signature, dropped.
            ContentBlock::reasoning("unsigned"),
            ContentBlock::text("A."),
        ]),
        Message::user_text("next"),
    ]);
    let got = body(&r, &cfg());
    assert_eq!(
        got["messages"][1]["content"],
        json!([
            {"type":"redacted_thinking","data":"EmwKAhgB"},
            {"type":"thinking","thinking":"signed","signature":"s"},
            {"type":"text","text":"A."}
        ])
    );
}

#[test]
fn thinking_budget_is_sent_and_temperature_is_not_unless_max_tokens_is_too_small() {
    let mut c = cfg();
    c.thinking_budget = Some(4096);
    let mut r = request(vec![Message::user_text("q")]);
    r.temperature = Some(0.2);
    r.stop = Some(vec!["STOP".into()]);
    let got = body(&r, &c);
    assert_eq!(
        got["thinking"],
        json!({"type":"enabled","budget_tokens":4096})
    );
    assert!(got.get("temperature").is_none());
    assert_eq!(got["stop_sequences"], json!(["STOP"]));
    assert_eq!(got["max_tokens"], 32000);
    // A title request with 32 output tokens cannot think.
    r.max_tokens = Some(32);
    let got = body(&r, &c);
    assert!(got.get("thinking").is_none());
    assert_eq!(got["temperature"], json!(0.2));
    assert_eq!(got["max_tokens"], 32);
}

#[test]
fn consecutive_roles_merge_and_tool_results_lead_their_user_message() {
    let r = request(vec![
        Message::user_text("q"),
        Message::assistant(vec![ContentBlock::reasoning("dropped")]),
        Message::assistant(vec![
            ContentBlock::tool_call("t1", "bash", "{}"),
            ContentBlock::tool_call("t2", "bash", "{}"),
        ]),
        // A notice logged while the calls ran, then the answers.
        Message::user_text("job bash-1 finished"),
        user(vec![ContentBlock::tool_result("t1", vec![], false)]),
        user(vec![ContentBlock::tool_result(
            "t2",
            vec![ContentBlock::text("ok")],
            false,
        )]),
    ]);
    let mut c = cfg();
    c.prompt_caching = false;
    let got = body(&r, &c);
    assert_eq!(
        got["messages"],
        json!([
            {"role":"user","content":[{"type":"text","text":"q"}]},
            {"role":"assistant","content":[
                {"type":"tool_use","id":"t1","name":"bash","input":{}},
                {"type":"tool_use","id":"t2","name":"bash","input":{}}
            ]},
            {"role":"user","content":[
                {"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"(no output)"}]},
                {"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"ok"}]},
                {"type":"text","text":"job bash-1 finished"}
            ]}
        ])
    );
}

#[test]
fn unparsable_or_non_object_arguments_are_sent_as_an_empty_object() {
    let r = request(vec![
        Message::user_text("q"),
        Message::assistant(vec![
            ContentBlock::tool_call("t1", "bash", r#"{"command": "ls"#),
            ContentBlock::tool_call("t2", "bash", "[1,2]"),
            ContentBlock::tool_call("t3", "bash", ""),
            ContentBlock::tool_call("t4", "bash", r#" {"a": [1, {"b": null}]} "#),
        ]),
    ]);
    let got = body(&r, &cfg());
    let inputs: Vec<&Value> = got["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["input"])
        .collect();
    assert_eq!(
        inputs,
        [
            &json!({}),
            &json!({}),
            &json!({}),
            &json!({"a":[1,{"b":null}]})
        ]
    );
}

#[test]
fn images_become_base64_or_url_sources_or_a_note() {
    let image = |url: &str| {
        ContentBlock::Image(ImageBlock {
            url: url.into(),
            mime_type: None,
            cache: None,
        })
    };
    let content = vec![
        image(&format!("data:image/png;base64,{PNG}")),
        image("https://example.invalid/a.jpg"),
        image("data:image/tiff;base64,AAAA"),
        image("data:text/plain,hello"),
        ContentBlock::tool_result(
            "t1",
            vec![image(&format!("data:image/png;base64,{PNG}"))],
            false,
        ),
    ];
    let r = request(vec![
        Message::assistant(vec![ContentBlock::tool_call("t1", "read", "{}")]),
        user(content),
    ]);
    let mut c = cfg();
    c.prompt_caching = false;
    let got = body(&r, &c);
    let png =
        json!({"type":"image","source":{"type":"base64","media_type":"image/png","data":PNG}});
    assert_eq!(
        got["messages"][1]["content"],
        json!([
            {"type":"tool_result","tool_use_id":"t1","content":[png]},
            png,
            {"type":"image","source":{"type":"url","url":"https://example.invalid/a.jpg"}},
            {"type":"text","text":"[image omitted: type \"image/tiff\" is not one of jpeg, png, gif, webp]"},
            {"type":"text","text":"[image omitted: the data URL is not base64]"}
        ])
    );
    // A route without images gets the note everywhere.
    c.models[0].images = false;
    let got = body(&r, &c);
    let note = json!({"type":"text","text":IMAGE_OMITTED});
    let content = got["messages"][1]["content"].as_array().unwrap();
    assert_eq!(content[0]["content"], json!([note]));
    assert!(content[1..].iter().all(|b| *b == note), "{content:?}");
}

#[test]
fn prefill_is_unsupported() {
    let mut r = request(vec![Message::user_text("q")]);
    r.prefill = Some(vec![ContentBlock::text("{")]);
    let err = request_bytes(&r, &cfg()).unwrap_err();
    assert_eq!(err.code(), "UNSUPPORTED");
}

#[test]
fn an_unknown_model_name_is_sent_verbatim_without_images() {
    let mut r = request(vec![Message::user_text("q")]);
    r.model = "claude-other".into();
    assert_eq!(body(&r, &cfg())["model"], "claude-other");
}

#[tokio::test]
async fn the_body_on_the_wire_is_request_bytes() {
    let server = LoopbackServer::start([sse(&text_events(&["ok"]))])
        .await
        .unwrap();
    let mut c = config(server.base_url());
    c.thinking_budget = Some(2048);
    let a = AnthropicAdapter::new(c.clone()).unwrap();
    let r = session();
    let expected = request_bytes(&r, &c).unwrap();
    let items = run(&a, r).await;
    chunks_json(&items);
    assert_eq!(server.requests()[0].body.as_ref(), expected.as_slice());
}

#[test]
fn config_validation_names_the_provider_key() {
    let mut c = AnthropicConfig {
        provider: "claude".into(),
        ..AnthropicConfig::default()
    };
    assert_eq!(c.validate(), Ok(()));
    type Change = Box<dyn Fn(&mut AnthropicConfig)>;
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|c| c.base_url = "htp:/x".into()),
            "[providers.claude] base_url \"htp:/x\" is not a valid URL",
        ),
        (
            Box::new(|c| c.base_url = "ftp://h".into()),
            "scheme \"ftp\" is not http or https",
        ),
        (
            Box::new(|c| c.max_tokens = 0),
            "[providers.claude] max_tokens must be greater than 0",
        ),
        (
            Box::new(|c| c.thinking_budget = Some(1000)),
            "thinking_budget = 1000 is below the API's minimum of 1024",
        ),
        (
            Box::new(|c| c.thinking_budget = Some(32000)),
            "thinking_budget = 32000 must be below max_tokens = 32000",
        ),
        (
            Box::new(|c| c.connect_timeout_ms = 0),
            "[providers.claude] connect_timeout_ms must be greater than 0",
        ),
        (
            Box::new(|c| c.stream_idle_timeout_ms = 3_600_001),
            "stream_idle_timeout_ms = 3600001 is above its ceiling of 3600000",
        ),
        (
            Box::new(|c| c.max_event_bytes = 0),
            "max_event_bytes must be greater than 0",
        ),
        (
            Box::new(|c| c.api_key = Some("sk-ant-secret\n".into())),
            "[providers.claude] api_key holds a line break",
        ),
        (
            Box::new(|c| c.models[1].name = c.models[0].name.clone()),
            "is listed twice",
        ),
        (
            Box::new(|c| c.models[0].wire.clear()),
            "has an empty wire model id",
        ),
    ];
    for (change, needle) in cases {
        let mut bad = c.clone();
        change(&mut bad);
        let msg = bad.validate().unwrap_err();
        assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
        assert!(!msg.contains("sk-ant-secret"), "the key is never quoted");
        let err = AnthropicAdapter::new(AnthropicConfig {
            api_key: Some("k".into()),
            ..bad.clone()
        })
        .err();
        if needle.contains("api_key") {
            continue;
        }
        assert_eq!(err.unwrap().code(), "INVALID_CONFIG");
    }
    c.thinking_budget = Some(1024);
    assert_eq!(c.validate(), Ok(()));
}

#[test]
fn no_api_key_fails_with_auth() {
    for key in [None, Some(String::new())] {
        let c = AnthropicConfig {
            api_key: key,
            ..AnthropicConfig::default()
        };
        let err = AnthropicAdapter::new(c).err().unwrap();
        assert_eq!(err.code(), "AUTH");
        assert_eq!(err.message, dsh_llm_anthropic::MISSING_KEY);
    }
}

#[test]
fn defaults_match_the_documentation() {
    let c = AnthropicConfig::default();
    assert_eq!(c.provider, "anthropic");
    assert_eq!(c.base_url, "https://api.anthropic.com");
    assert_eq!(c.endpoint(), "https://api.anthropic.com/v1/messages");
    assert_eq!(c.max_tokens, 32000);
    assert!(c.prompt_caching);
    assert_eq!(c.thinking_budget, None);
    assert_eq!(c.connect_timeout_ms, 60_000);
    assert_eq!(c.stream_idle_timeout_ms, 300_000);
    assert_eq!(c.max_event_bytes, 16 * 1024 * 1024);
    assert!(c.models.iter().all(|r| r.images && r.name == r.wire));
    let trailing = AnthropicConfig {
        base_url: "http://h:1/".into(),
        ..c
    };
    assert_eq!(trailing.endpoint(), "http://h:1/v1/messages");
}
