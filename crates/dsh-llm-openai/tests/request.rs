//! Request bodies: golden bodies byte for byte, each quirk, images, and the
//! request errors raised before any HTTP.
#![allow(unreachable_pub, clippy::unwrap_used, clippy::expect_used)] // the shared `common` helpers

mod common;

use common::*;
use dsh_kernel::ErrorCode;
use dsh_llm::{ContentBlock, ImageBlock, Message, ModelRequest, Role, ToolSchema};
use dsh_llm_openai::{
    request_body, request_bytes, MaxTokensField, ModelRoute, OpenAiConfig, IMAGE_OMITTED,
    PREFILL_UNSUPPORTED,
};
use dsh_protocol::codes;
use dsh_testkit::LoopbackServer;
use serde_json::{json, Value};

fn user(content: Vec<ContentBlock>) -> Message {
    Message {
        role: Role::User,
        content,
    }
}

fn image(url: &str) -> ContentBlock {
    ContentBlock::Image(ImageBlock {
        url: url.into(),
        mime_type: Some("image/png".into()),
        cache: None,
    })
}

fn cfg() -> OpenAiConfig {
    config("http://127.0.0.1:9")
}

/// A conversation with every block kind: system, user text, an assistant
/// turn with reasoning, text and two calls, their results (one empty).
fn conversation() -> ModelRequest {
    ModelRequest {
        model: MODEL.into(),
        system: Some("You are dsh.".into()),
        messages: vec![
            Message::user_text("List files."),
            Message::assistant(vec![
                ContentBlock::reasoning("I should call ls."),
                ContentBlock::text("Listing."),
                ContentBlock::tool_call("call_1", "bash", r#"{"command":"ls"}"#),
                ContentBlock::tool_call("call_2", "noop", ""),
            ]),
            user(vec![
                ContentBlock::tool_result("call_1", vec![ContentBlock::text("a.txt\n")], false),
                ContentBlock::tool_result("call_2", vec![], true),
            ]),
        ]
        .into(),
        tools: Some(
            vec![ToolSchema {
                name: "bash".into(),
                description: "Run a command.".into(),
                parameters: json!({"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}),
                strict: None,
            }]
            .into(),
        ),
        temperature: Some(0.5),
        max_tokens: Some(1024),
        stop: Some(vec!["END".into()]),
        ..Default::default()
    }
}

#[test]
fn golden_body_byte_for_byte() {
    let body = String::from_utf8(request_bytes(&conversation(), &cfg()).unwrap()).unwrap();
    let expected = concat!(
        r#"{"model":"qwen3-coder:30b","messages":["#,
        r#"{"role":"system","content":"You are dsh."},"#,
        r#"{"role":"user","content":"List files."},"#,
        r#"{"role":"assistant","content":"Listing.","tool_calls":["#,
        r#"{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}},"#,
        r#"{"id":"call_2","type":"function","function":{"name":"noop","arguments":"{}"}}]},"#,
        r#"{"role":"tool","tool_call_id":"call_1","content":"a.txt\n"},"#,
        r#"{"role":"tool","tool_call_id":"call_2","content":"(no output)"}],"#,
        r#""stream":true,"stream_options":{"include_usage":true},"#,
        r#""tools":[{"type":"function","function":{"name":"bash","description":"Run a command.","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}],"#,
        r#""temperature":0.5,"max_tokens":1024,"stop":["END"]}"#,
    );
    assert_eq!(body, expected);
}

#[test]
fn quirks_change_exactly_their_fields() {
    let mut c = cfg();
    c.quirks.include_usage = false;
    c.quirks.max_tokens_field = MaxTokensField::MaxCompletionTokens;
    c.quirks.reasoning_effort = Some("high".into());
    let body = request_body(&conversation(), &c).unwrap();
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "model",
            "messages",
            "stream",
            "reasoning_effort",
            "tools",
            "temperature",
            "max_completion_tokens",
            "stop"
        ]
    );
    assert_eq!(body["reasoning_effort"], "high");
    assert_eq!(body["max_completion_tokens"], 1024);
    // A minimal request has no optional field at all.
    let body = request_body(&options(), &cfg()).unwrap();
    assert_eq!(
        body,
        json!({"model": WIRE, "messages": [{"role":"user","content":"hi"}], "stream": true,
            "stream_options": {"include_usage": true}})
    );
}

#[test]
fn reasoning_is_not_sent_back() {
    let body = request_body(&conversation(), &cfg()).unwrap();
    let text = body.to_string();
    assert!(!text.contains("I should call ls"), "{text}");
    assert!(!text.contains("reasoning"), "{text}");
}

fn image_request() -> ModelRequest {
    ModelRequest {
        model: MODEL.into(),
        messages: vec![
            user(vec![
                ContentBlock::text("What is this?"),
                image("data:image/png;base64,AAAA"),
            ]),
            Message::assistant(vec![
                ContentBlock::tool_call("c1", "read", r#"{"path":"a.png"}"#),
                ContentBlock::tool_call("c2", "read", r#"{"path":"b.png"}"#),
            ]),
            user(vec![ContentBlock::tool_result(
                "c1",
                vec![
                    ContentBlock::text("a.png (10x10)"),
                    image("data:image/png;base64,BBBB"),
                ],
                false,
            )]),
            user(vec![ContentBlock::tool_result(
                "c2",
                vec![image("data:image/png;base64,CCCC")],
                false,
            )]),
            Message::user_text("Compare them."),
        ]
        .into(),
        ..Default::default()
    }
}

#[test]
fn images_become_content_parts_and_tool_images_follow_the_tool_messages() {
    let mut c = cfg();
    c.models[0].images = true;
    let body = request_body(&image_request(), &c).unwrap();
    assert_eq!(
        body["messages"],
        json!([
            {"role":"user","content":[
                {"type":"text","text":"What is this?"},
                {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},
            {"role":"assistant","content":"","tool_calls":[
                {"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.png\"}"}},
                {"id":"c2","type":"function","function":{"name":"read","arguments":"{\"path\":\"b.png\"}"}}]},
            {"role":"tool","tool_call_id":"c1","content":"a.png (10x10)"},
            {"role":"tool","tool_call_id":"c2","content":"(the image follows in the next message)"},
            {"role":"user","content":[
                {"type":"text","text":"[image from tool call c1]"},
                {"type":"image_url","image_url":{"url":"data:image/png;base64,BBBB"}},
                {"type":"text","text":"[image from tool call c2]"},
                {"type":"image_url","image_url":{"url":"data:image/png;base64,CCCC"}}]},
            {"role":"user","content":"Compare them."}
        ])
    );
}

#[test]
fn a_model_without_images_gets_a_note_instead() {
    let body = request_body(&image_request(), &cfg()).unwrap();
    let m = &body["messages"];
    assert_eq!(
        m[0],
        json!({"role":"user","content": format!("What is this?\n{IMAGE_OMITTED}")})
    );
    assert_eq!(
        m[2],
        json!({"role":"tool","tool_call_id":"c1","content": format!("a.png (10x10)\n{IMAGE_OMITTED}")})
    );
    assert_eq!(
        m[3],
        json!({"role":"tool","tool_call_id":"c2","content": IMAGE_OMITTED})
    );
    assert_eq!(m.as_array().unwrap().len(), 5, "no image message: {m}");
    assert!(!body.to_string().contains("base64"));
}

#[test]
fn tool_answers_precede_text_and_context_logged_while_calls_ran() {
    let req = ModelRequest {
        model: MODEL.into(),
        messages: vec![
            Message::assistant(vec![ContentBlock::tool_call("c1", "bash", "{}")]),
            Message::user_text("[background job finished]"),
            user(vec![
                ContentBlock::text("and also"),
                ContentBlock::tool_result("c1", vec![ContentBlock::text("ok")], false),
            ]),
        ]
        .into(),
        ..Default::default()
    };
    let body = request_body(&req, &cfg()).unwrap();
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    // The mixed message is not results-only, so the log order stays; within
    // it the tool answer goes before its text.
    assert_eq!(roles, ["assistant", "user", "tool", "user"]);
    let req = ModelRequest {
        model: MODEL.into(),
        messages: vec![
            Message::assistant(vec![ContentBlock::tool_call("c1", "bash", "{}")]),
            Message::user_text("[background job finished]"),
            user(vec![ContentBlock::tool_result(
                "c1",
                vec![ContentBlock::text("ok")],
                false,
            )]),
        ]
        .into(),
        ..Default::default()
    };
    let body = request_body(&req, &cfg()).unwrap();
    let m = body["messages"].as_array().unwrap();
    assert_eq!(m[1]["role"], "tool");
    assert_eq!(m[2]["content"], "[background job finished]");
}

#[test]
fn prefill_and_unknown_models_fail_before_any_request() {
    let mut req = options();
    req.prefill = Some(vec![ContentBlock::text("{")]);
    let e = request_bytes(&req, &cfg()).unwrap_err();
    assert_eq!(e.code(), codes::UNSUPPORTED);
    assert_eq!(e.message, PREFILL_UNSUPPORTED);
    let mut req = options();
    req.model = "gpt-9".into();
    let e = request_bytes(&req, &cfg()).unwrap_err();
    assert_eq!(e.code(), codes::NO_ADAPTER);
    assert!(
        e.message.contains("[providers.local] models"),
        "{}",
        e.message
    );
}

#[test]
fn non_finite_temperature_is_null_and_empty_stop_is_omitted() {
    let mut req = options();
    req.temperature = Some(f64::NAN);
    req.stop = Some(vec![]);
    let body = request_body(&req, &cfg()).unwrap();
    assert_eq!(body["temperature"], Value::Null);
    assert!(body.get("stop").is_none());
}

#[tokio::test]
async fn the_body_sent_is_request_bytes() {
    let server = LoopbackServer::start([sse(&["[DONE]"])]).await.unwrap();
    let mut c = config(server.base_url());
    c.models.push(ModelRoute {
        name: "vision".into(),
        wire: "llava:7b".into(),
        images: true,
    });
    let a = dsh_llm_openai::OpenAiAdapter::new(c.clone()).unwrap();
    let mut req = image_request();
    req.model = "vision".into();
    run(&a, req.clone()).await;
    let sent = server.next_request().await;
    assert_eq!(
        sent.body.as_ref(),
        request_bytes(&req, &c).unwrap().as_slice()
    );
    assert_eq!(sent.json()["model"], "llava:7b");
}
