//! Request bodies and headers as the loopback server received them, field by
//! field (fact sheet c.2–c.8), plus key handling and the reasoning round trip.
#![allow(unreachable_pub, clippy::unwrap_used, clippy::expect_used)] // the shared `common` helpers

mod common;

use std::sync::Arc;

use dsh_kernel::ErrorCode;

use common::*;
use dsh_llm::{
    BlockAssembler, ContentBlock, ImageBlock, LlmAdapter, LlmService, Message, ModelRequest, Role,
    ToolSchema,
};
use dsh_llm_deepseek::{
    register, request_body, DeepSeekAdapter, DeepSeekConfig, ReasoningEffort, Thinking,
    MISSING_KEY, PREFILL_UNSUPPORTED,
};
use dsh_testkit::{LoopbackServer, ScriptedResponse};
use serde_json::{json, Value};

fn done() -> ScriptedResponse {
    ScriptedResponse::sse(&["{}", "[DONE]"])
}

/// Sends one request with `cfg`/`opts` and returns the recorded body.
async fn sent(cfg: impl FnOnce(&mut DeepSeekConfig), opts: ModelRequest) -> Value {
    let server = LoopbackServer::start([done()]).await.unwrap();
    let mut c = config(server.base_url());
    cfg(&mut c);
    let a = DeepSeekAdapter::new(c).unwrap();
    let items = run(&a, opts).await;
    assert_eq!(
        chunks_json(&items),
        vec![json!({"type":"finish","reason":{"kind":"stop"}})]
    );
    server.next_request().await.json()
}

fn user_blocks(content: Vec<ContentBlock>) -> Message {
    Message {
        role: Role::User,
        content,
    }
}

fn tool_schema(strict: Option<bool>) -> ToolSchema {
    ToolSchema {
        name: "bash".into(),
        description: "…".into(),
        parameters: json!({"type":"object","properties":{"…":{}},"required":["command","description"]}),
        strict,
    }
}

/// The history of fact sheet c.8.
fn c8_options() -> ModelRequest {
    let assistant = Message::assistant(vec![
        ContentBlock::reasoning("List the directory."),
        ContentBlock::text("Checking."),
        ContentBlock::tool_call(
            "call_00_Xy12",
            "bash",
            r#"{"command": "ls", "description": "List files"}"#,
        ),
    ]);
    ModelRequest {
        model: "deepseek-v4-flash".into(),
        system: Some("You are DeepSeek Code.\n\nBe concise.".into()),
        messages: vec![
            Message::user_text("List the files here."),
            assistant,
            user_blocks(vec![ContentBlock::tool_result(
                "call_00_Xy12",
                vec![ContentBlock::text("README.md\nsrc\n")],
                false,
            )]),
            user_blocks(vec![
                ContentBlock::text("<context source=\"plugin\">"),
                ContentBlock::text("file changed: src/lib.rs"),
                ContentBlock::text("</context>"),
            ]),
            user_blocks(vec![
                ContentBlock::text("<steering source=\"user\">"),
                ContentBlock::text("Also show hidden files."),
                ContentBlock::text("</steering>"),
            ]),
        ]
        .into(),
        tools: Some(vec![tool_schema(None)].into()),
        ..Default::default()
    }
}

const C8_EXPECTED: &str = r#"{
  "model": "deepseek-v4-flash",
  "messages": [
    {"role": "system", "content": "You are DeepSeek Code.\n\nBe concise."},
    {"role": "user", "content": "List the files here."},
    {"role": "assistant", "content": "Checking.",
     "reasoning_content": "List the directory.",
     "tool_calls": [{"id": "call_00_Xy12", "type": "function",
                     "function": {"name": "bash",
                                  "arguments": "{\"command\": \"ls\", \"description\": \"List files\"}"}}]},
    {"role": "tool", "tool_call_id": "call_00_Xy12", "content": "README.md\nsrc\n"},
    {"role": "user", "content": "<context source=\"plugin\">file changed: src/lib.rs</context>"},
    {"role": "user", "content": "<steering source=\"user\">Also show hidden files.</steering>"}
  ],
  "stream": true,
  "stream_options": {"include_usage": true},
  "thinking": {"type": "enabled"},
  "reasoning_effort": "high",
  "tools": [{"type": "function", "function": {"name": "bash", "description": "…",
             "parameters": {"type": "object", "properties": {"…": {}}, "required": ["command", "description"]}}}]
}"#;

#[tokio::test]
async fn c8_worked_request_byte_for_byte_and_headers() {
    let server = LoopbackServer::start([done()]).await.unwrap();
    let mut c = config(server.base_url());
    c.thinking = Some(Thinking::Enabled);
    c.reasoning_effort = Some(ReasoningEffort::High);
    let a = DeepSeekAdapter::new(c).unwrap();
    run(&a, c8_options()).await;
    let req = server.next_request().await;
    let expected: Value = serde_json::from_str(C8_EXPECTED).unwrap();
    // Compact text equality also checks key order.
    assert_eq!(req.text(), expected.to_string());
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/chat/completions");
    assert_eq!(req.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("accept"), Some("text/event-stream"));
    assert_eq!(req.header("user-agent"), Some("deepseek-harness/0.0.1"));
}

#[tokio::test]
async fn optional_fields_in_order_and_omissions() {
    // Nothing optional: only the four fixed fields.
    let body = sent(|_| {}, options()).await;
    let keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["model", "messages", "stream", "stream_options"]);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));

    // Everything: config fields, tools with strict, sampling options.
    let mut opts = options();
    opts.tools = Some(vec![tool_schema(Some(true)), tool_schema(Some(false))].into());
    opts.temperature = Some(0.5);
    opts.max_tokens = Some(1024);
    opts.stop = Some(vec!["END".into()]);
    let body = sent(
        |c| {
            c.thinking = Some(Thinking::Disabled);
            c.reasoning_effort = Some(ReasoningEffort::Max);
        },
        opts,
    )
    .await;
    let keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        [
            "model",
            "messages",
            "stream",
            "stream_options",
            "thinking",
            "reasoning_effort",
            "tools",
            "temperature",
            "max_tokens",
            "stop"
        ]
    );
    assert_eq!(body["thinking"], json!({"type":"disabled"}));
    assert_eq!(body["reasoning_effort"], "max");
    assert_eq!(body["tools"][0]["function"]["strict"], true);
    assert_eq!(body["tools"][1]["function"]["strict"], false);
    let f: Vec<_> = body["tools"][0]["function"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(f, ["name", "description", "parameters", "strict"]);
    assert_eq!(body["temperature"], 0.5);
    assert_eq!(body["max_tokens"], 1024);
    assert_eq!(body["stop"], json!(["END"]));

    // Empty tools omitted, empty stop sent, thinking without effort.
    let mut opts = options();
    opts.tools = Some(Vec::new().into());
    opts.stop = Some(vec![]);
    let body = sent(|c| c.thinking = Some(Thinking::Enabled), opts).await;
    assert!(body.get("tools").is_none());
    assert!(body.get("reasoning_effort").is_none());
    assert_eq!(body["stop"], json!([]));
    assert!(body["tools"].is_null());
}

#[tokio::test]
async fn message_mapping_rules() {
    let opts = ModelRequest {
        model: "deepseek-v4-flash".into(),
        system: Some(String::new()),
        messages: vec![
            Message {
                role: Role::System,
                content: vec![ContentBlock::text("sys "), ContentBlock::text("two")],
            },
            // Reasoning-only assistant: content null, no reasoning_content.
            Message::assistant(vec![ContentBlock::reasoning("thought")]),
            // Text + reasoning, no tool call: reasoning dropped.
            Message::assistant(vec![
                ContentBlock::reasoning("r"),
                ContentBlock::text("answer"),
            ]),
            // Tool call without text or reasoning: content "".
            Message::assistant(vec![ContentBlock::tool_call("c1", "t", "not json")]),
            // Mixed user message: text first, then the tool messages.
            user_blocks(vec![
                ContentBlock::tool_result("c1", vec![], true),
                ContentBlock::text("and also"),
                ContentBlock::tool_result(
                    "c2",
                    vec![
                        ContentBlock::text("a"),
                        ContentBlock::Image(ImageBlock {
                            url: "data:x".into(),
                            mime_type: None,
                            cache: None,
                        }),
                        ContentBlock::text("b"),
                    ],
                    false,
                ),
            ]),
            // Image-only user message: the note that an image was there.
            user_blocks(vec![ContentBlock::Image(ImageBlock {
                url: "https://x/y.png".into(),
                mime_type: Some("image/png".into()),
                cache: Some("ephemeral".into()),
            })]),
            // Tool results only: no user message.
            user_blocks(vec![ContentBlock::tool_result(
                "c3",
                vec![ContentBlock::text("ok")],
                false,
            )]),
            Message::assistant(vec![]),
        ]
        .into(),
        ..Default::default()
    };
    let body = sent(|_| {}, opts).await;
    assert_eq!(
        body["messages"],
        json!([
            {"role":"system","content":""},
            {"role":"system","content":"sys two"},
            {"role":"assistant","content":null},
            {"role":"assistant","content":"answer"},
            {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"t","arguments":"not json"}}]},
            {"role":"user","content":"and also"},
            {"role":"tool","tool_call_id":"c1","content":"(no output)"},
            {"role":"tool","tool_call_id":"c2","content":"a\n[image omitted: this model does not take images]\nb"},
            {"role":"user","content":"[image omitted: this model does not take images]"},
            {"role":"tool","tool_call_id":"c3","content":"ok"},
            {"role":"assistant","content":null}
        ])
    );
}

#[tokio::test]
async fn prefill_is_unsupported_before_any_request() {
    let server = LoopbackServer::start([done()]).await.unwrap();
    let a = adapter(server.base_url());
    let mut opts = options();
    opts.prefill = Some(vec![]);
    let (chunks, err) = split(run(&*a, opts).await);
    assert!(chunks.is_empty());
    let err = err.unwrap();
    assert_eq!(err.code(), "UNSUPPORTED");
    assert_eq!(err.message, PREFILL_UNSUPPORTED);
    assert!(server.requests().is_empty());
    assert!(request_body(&c8_options(), &DeepSeekConfig::default()).is_ok());
}

#[tokio::test]
async fn no_api_key_fails_with_auth_and_registers_nothing() {
    for key in [None, Some(String::new())] {
        let cfg = DeepSeekConfig {
            api_key: key,
            ..DeepSeekConfig::default()
        };
        let err = DeepSeekAdapter::new(cfg.clone()).err().unwrap();
        assert_eq!(err.code(), "AUTH");
        assert_eq!(err.message, MISSING_KEY);
        let service = LlmService::new();
        assert_eq!(register(&service, cfg).err().unwrap().code(), "AUTH");
        assert!(service.models().is_empty());
    }
}

#[tokio::test]
async fn register_serves_every_model_and_undoes() {
    let server = LoopbackServer::start([done(), done()]).await.unwrap();
    let service = LlmService::new();
    let reg = register(&service, config(server.base_url())).unwrap();
    assert_eq!(service.models(), ["deepseek-v4-flash", "deepseek-v4-pro"]);
    let mut opts = options();
    opts.model = "deepseek-v4-pro".into();
    let result = service.generate(opts).await.unwrap();
    assert!(result.message.content.is_empty());
    assert_eq!(
        server.next_request().await.json()["model"],
        "deepseek-v4-pro"
    );
    // A second registration of the same names fails all-or-nothing.
    assert_eq!(
        register(&service, config(server.base_url()))
            .err()
            .unwrap()
            .code(),
        "DUPLICATE_ADAPTER"
    );
    reg.undo();
    assert!(service.models().is_empty());
}

#[tokio::test]
async fn base_url_is_not_normalised() {
    let server = LoopbackServer::start([done()]).await.unwrap();
    let a = adapter(&format!("{}/", server.base_url()));
    run(&*a, options()).await;
    assert_eq!(server.next_request().await.path, "//chat/completions");
}

/// Thinking mode with tools needs `reasoning_content` sent back on assistant
/// tool-call turns: reasoning streamed in step 1, logged as JSON (the session
/// log's shape), reloaded and sent in step 2 must arrive byte for byte.
#[tokio::test]
async fn reasoning_round_trips_into_the_next_request() {
    let events: Vec<String> = example_events();
    let server = LoopbackServer::start([
        ScriptedResponse::new(200).pieces(events.into_iter().map(String::into_bytes)),
        done(),
    ])
    .await
    .unwrap();
    let mut c = config(server.base_url());
    c.thinking = Some(Thinking::Enabled);
    let a: Arc<dyn LlmAdapter> = Arc::new(DeepSeekAdapter::new(c).unwrap());

    let step1 = options();
    let mut asm = BlockAssembler::new();
    for item in run(&*a, step1.clone()).await {
        asm.push(&item.unwrap());
    }
    let message = asm.message().unwrap();
    // The session log stores messages as JSON lines; reload from that text.
    let logged = serde_json::to_string(&message).unwrap();
    let reloaded: Message = serde_json::from_str(&logged).unwrap();

    let mut history = step1.messages.clone();
    history.push(reloaded);
    history.push(user_blocks(vec![ContentBlock::tool_result(
        "call_00_Xy12",
        vec![ContentBlock::text("README.md\n")],
        false,
    )]));
    let step2 = ModelRequest {
        messages: history,
        ..options()
    };
    run(&*a, step2).await;
    let req = server.nth_request(2).await;
    let body = req.json();
    assert_eq!(
        body["messages"][1],
        json!({"role":"assistant","content":"Checking.","reasoning_content":"List the directory.",
               "tool_calls":[{"id":"call_00_Xy12","type":"function","function":{"name":"bash",
               "arguments":"{\"command\": \"ls\", \"description\": \"List files\"}"}}]})
    );
    assert!(req
        .text()
        .contains(r#""reasoning_content":"List the directory.""#));
}

fn roles_and_ids(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            let role = m["role"].as_str().unwrap_or("?");
            match m["tool_call_id"].as_str() {
                Some(id) => format!("{role}:{id}"),
                None => match m["content"].as_str() {
                    Some(c) if role == "user" => format!("user:{c}"),
                    _ => role.to_string(),
                },
            }
        })
        .collect()
}

#[test]
fn tool_answers_move_ahead_of_context_logged_while_the_call_ran() {
    let assistant = Message::assistant(vec![
        ContentBlock::tool_call("a", "bash", "{}"),
        ContentBlock::tool_call("b", "bash", "{}"),
    ]);
    let result = |id: &str| {
        user_blocks(vec![ContentBlock::tool_result(
            id,
            vec![ContentBlock::text("ok")],
            false,
        )])
    };
    let opts = ModelRequest {
        model: "m".into(),
        messages: vec![
            Message::user_text("go"),
            assistant.clone(),
            result("a"),
            Message::user_text("notice"),
            result("b"),
            Message::user_text("next"),
        ]
        .into(),
        ..Default::default()
    };
    assert_eq!(
        roles_and_ids(&dsh_llm_deepseek::wire_messages(&opts)),
        [
            "user:go",
            "assistant",
            "tool:a",
            "tool:b",
            "user:notice",
            "user:next"
        ]
    );

    // Already valid histories, and calls never answered, are left as they are.
    let valid = ModelRequest {
        model: "m".into(),
        messages: vec![
            Message::user_text("go"),
            assistant.clone(),
            result("a"),
            result("b"),
            Message::user_text("x"),
        ]
        .into(),
        ..Default::default()
    };
    assert_eq!(
        roles_and_ids(&dsh_llm_deepseek::wire_messages(&valid)),
        ["user:go", "assistant", "tool:a", "tool:b", "user:x"]
    );
    let hole = ModelRequest {
        model: "m".into(),
        messages: vec![assistant, Message::user_text("notice")].into(),
        ..Default::default()
    };
    assert_eq!(
        roles_and_ids(&dsh_llm_deepseek::wire_messages(&hole)),
        ["assistant", "user:notice"]
    );
}
