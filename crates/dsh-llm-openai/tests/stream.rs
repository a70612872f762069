//! The openai-chat adapter against the loopback server: the conformance
//! kit, one test per server quirk, errors, bad input, timeouts, aborts.
#![allow(unreachable_pub, clippy::unwrap_used, clippy::expect_used)] // the shared `common` helpers

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use dsh_kernel::ErrorCode;
use dsh_llm::conformance::{check_adapter, check_chunks, Scenario, Setup};
use dsh_llm::{
    install_retry, ContentBlock, FinishReason, LlmAdapter, LlmService, RetryConfig, StreamChunk,
    TokenUsage,
};
use dsh_llm_openai::{OpenAiAdapter, OpenAiConfig};
use dsh_protocol::codes;
use dsh_testkit::{LoopbackServer, ScriptedResponse};
use futures_util::StreamExt;
use serde_json::json;

/// The tool calls of a response as `(id, name, arguments)`.
fn calls(message: &dsh_llm::Message) -> Vec<(String, String, String)> {
    message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some((
                c.call_id.as_str().to_string(),
                c.name.clone(),
                c.arguments.clone(),
            )),
            _ => None,
        })
        .collect()
}

/// Runs one scripted response through a fresh adapter; checks the chunk
/// contract and returns the items.
async fn one(resp: ScriptedResponse) -> Vec<Result<StreamChunk, dsh_llm::LlmError>> {
    let server = LoopbackServer::start([resp]).await.unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    check_chunks(&items).unwrap_or_else(|v| panic!("{v}: {items:?}"));
    items
}

#[tokio::test]
async fn openai_adapter_conforms() {
    let server = Arc::new(LoopbackServer::start([]).await.unwrap());
    let a: Arc<dyn LlmAdapter> = adapter(server.base_url());
    let srv = server.clone();
    check_adapter(move |scenario| {
        let srv = srv.clone();
        let a = a.clone();
        async move {
            let text = vec![
                delta(json!({"role":"assistant","content":""}), None),
                delta(json!({"reasoning":"Hm."}), None),
                delta(json!({"content":"Hello"}), None),
                delta(json!({}), Some("stop")),
                usage_chunk(json!({"prompt_tokens":3,"completion_tokens":1})),
                "[DONE]".into(),
            ];
            let resp = match scenario {
                Scenario::TextReply | Scenario::CancelledBeforeStart => sse(&text),
                Scenario::ToolCallReply => sse(&[
                    delta(json!({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":""}}]}), None),
                    delta(json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":"}}]}), None),
                    delta(json!({"tool_calls":[{"index":0,"function":{"arguments":"\"ls\"}"}}]}), None),
                    delta(json!({}), Some("tool_calls")),
                    "[DONE]".into(),
                ]),
                Scenario::Abort => sse(&text[..3]).then_hang(),
            };
            srv.push(resp);
            Setup::new(a, options())
        }
    })
    .await;
    // The pre-cancelled scenario sends no request.
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn request_goes_to_the_endpoint_with_the_wire_id_and_headers() {
    let server = LoopbackServer::start([
        sse(&[delta(json!({"content":"a"}), Some("stop")), "[DONE]".into()]),
        sse(&[delta(json!({"content":"a"}), Some("stop")), "[DONE]".into()]),
    ])
    .await
    .unwrap();
    // No key: no Authorization header at all.
    run(&*adapter(server.base_url()), options()).await;
    let r = server.next_request().await;
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), None);
    assert_eq!(r.header("accept"), Some("text/event-stream"));
    assert_eq!(r.json()["model"], WIRE);
    // A key and OpenRouter's extra headers.
    let mut cfg = config(server.base_url());
    cfg.base_url.push_str("//");
    cfg.api_key = Some("sk-or-1".into());
    cfg.headers = vec![
        ("HTTP-Referer".into(), "https://dsh.invalid".into()),
        ("X-Title".into(), "dsh".into()),
    ];
    let a = OpenAiAdapter::new(cfg).unwrap();
    run(&a, options()).await;
    let r = server.nth_request(2).await;
    assert_eq!(r.path, "/v1/chat/completions", "trailing slashes trimmed");
    assert_eq!(r.header("authorization"), Some("Bearer sk-or-1"));
    assert_eq!(r.header("http-referer"), Some("https://dsh.invalid"));
    assert_eq!(r.header("x-title"), Some("dsh"));
}

#[tokio::test]
async fn incremental_parallel_calls_keyed_by_index_with_usage_details() {
    let items = one(sse(&[
        delta(json!({"role":"assistant","content":null,"reasoning_content":"Think."}), None),
        delta(json!({"content":"Two calls."}), None),
        delta(json!({"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":""}}]}), None),
        delta(json!({"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"glob","arguments":"{\"pat"}}]}), None),
        delta(json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"a\"}"}}]}), None),
        delta(json!({"tool_calls":[{"index":1,"function":{"arguments":"tern\":\"*\"}"}}]}), None),
        delta(json!({}), Some("tool_calls")),
        usage_chunk(json!({"prompt_tokens":1000,"completion_tokens":50,"total_tokens":1050,
            "prompt_tokens_details":{"cached_tokens":800},"completion_tokens_details":{"reasoning_tokens":20}})),
        "[DONE]".into(),
    ]))
    .await;
    let r = assemble(&items);
    assert_eq!(r.finish, FinishReason::ToolCalls);
    assert_eq!(
        r.usage,
        Some(TokenUsage {
            input_tokens: 200,
            output_tokens: 50,
            cache_read_tokens: Some(800),
            cache_write_tokens: None,
            reasoning_tokens: Some(20),
        })
    );
    let kinds: Vec<&str> = r.message.content.iter().map(|b| b.kind()).collect();
    assert_eq!(kinds, ["reasoning", "text", "tool-call", "tool-call"]);
    assert_eq!(
        calls(&r.message),
        [
            ("call_a".into(), "read".into(), r#"{"path":"a"}"#.into()),
            ("call_b".into(), "glob".into(), r#"{"pattern":"*"}"#.into()),
        ]
    );
}

#[tokio::test]
async fn calls_without_index_are_keyed_by_id_else_continue_the_last() {
    let items = one(sse(&[
        delta(json!({"tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{\"x\":"}}]}), None),
        delta(json!({"tool_calls":[{"id":"c2","type":"function","function":{"name":"b","arguments":"{\"y\":"}}]}), None),
        delta(json!({"tool_calls":[{"id":"c1","function":{"arguments":"1}"}}]}), None),
        delta(json!({"tool_calls":[{"function":{"arguments":"2}"}}]}), None),
        delta(json!({}), Some("tool_calls")),
        "[DONE]".into(),
    ]))
    .await;
    assert_eq!(
        calls(&assemble(&items).message),
        [
            ("c1".into(), "a".into(), r#"{"x":1}"#.into()),
            ("c2".into(), "b".into(), r#"{"y":2}"#.into()),
        ]
    );
}

#[tokio::test]
async fn whole_calls_in_one_delta_and_a_stop_after_calls_is_tool_calls() {
    // Ollama: every call whole, all at index 0 with different ids, and
    // finish_reason "stop".
    let items = one(sse(&[
        delta(json!({"role":"assistant","content":"","tool_calls":[
            {"index":0,"id":"call_x","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}), None),
        delta(json!({"tool_calls":[
            {"index":0,"id":"call_y","type":"function","function":{"name":"read","arguments":"{\"path\":\"b\"}"}}]}), None),
        delta(json!({"content":""}), Some("stop")),
        "[DONE]".into(),
    ]))
    .await;
    let r = assemble(&items);
    assert_eq!(r.finish, FinishReason::ToolCalls);
    assert_eq!(
        calls(&r.message),
        [
            ("call_x".into(), "read".into(), r#"{"path":"a"}"#.into()),
            ("call_y".into(), "read".into(), r#"{"path":"b"}"#.into()),
        ]
    );
}

#[tokio::test]
async fn arguments_sent_as_an_object_become_its_json_text() {
    let items = one(sse(&[
        delta(json!({"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"bash","arguments":{"command":"ls -la","n":2}}}]}), None),
        delta(json!({}), Some("tool_calls")),
        "[DONE]".into(),
    ]))
    .await;
    let c = calls(&assemble(&items).message);
    assert_eq!(c.len(), 1);
    let args: serde_json::Value = serde_json::from_str(&c[0].2).unwrap();
    assert_eq!(args, json!({"command":"ls -la","n":2}));
}

#[tokio::test]
async fn arguments_sent_twice_are_not_duplicated() {
    // Incremental arguments, then the whole arguments again on the same id
    // (formatted differently), then once more as an object.
    let items = one(sse(&[
        delta(json!({"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"edit","arguments":"{\"a\": "}}]}), None),
        delta(json!({"tool_calls":[{"index":0,"function":{"arguments":"[1, 2]}"}}]}), None),
        delta(json!({"tool_calls":[{"index":0,"id":"c","function":{"name":"edit","arguments":"{\"a\":[1,2]}"}}]}), None),
        delta(json!({"tool_calls":[{"index":0,"id":"c","function":{"arguments":{"a":[1,2]}}}]}), None),
        delta(json!({}), Some("tool_calls")),
        "[DONE]".into(),
    ]))
    .await;
    assert_eq!(
        calls(&assemble(&items).message),
        [("c".into(), "edit".into(), "{\"a\": [1, 2]}".into())]
    );
    // A different complete value is not a re-send: it is appended (and the
    // model boundary then reports the arguments as invalid JSON).
    let items = one(sse(&[
        delta(json!({"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"e","arguments":"{\"a\":1}"}}]}), None),
        delta(json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":2}"}}]}), None),
        delta(json!({}), Some("tool_calls")),
        "[DONE]".into(),
    ]))
    .await;
    assert_eq!(calls(&assemble(&items).message)[0].2, "{\"a\":1}{\"a\":2}");
}

#[tokio::test]
async fn arguments_split_across_150_deltas() {
    let args =
        json!({"command": "printf '%s\\n' \"línea\" && echo 完成", "description": "x".repeat(100)})
            .to_string();
    let mut payloads = vec![delta(
        json!({"tool_calls":[{"index":0,"id":"call_big","type":"function","function":{"name":"bash","arguments":""}}]}),
        None,
    )];
    let chars: Vec<char> = args.chars().collect();
    assert!(chars.len() >= 150);
    for piece in chars.chunks(1) {
        let s: String = piece.iter().collect();
        payloads.push(delta(
            json!({"tool_calls":[{"index":0,"function":{"arguments":s}}]}),
            None,
        ));
    }
    assert!(payloads.len() > 150);
    payloads.push(delta(json!({}), Some("tool_calls")));
    payloads.push("[DONE]".into());
    let items = one(sse(&payloads)).await;
    assert_eq!(
        calls(&assemble(&items).message),
        [("call_big".into(), "bash".into(), args)]
    );
}

#[tokio::test]
async fn a_call_without_any_id_gets_one() {
    let items = one(sse(&[
        delta(json!({"tool_calls":[{"index":0,"type":"function","function":{"name":"echo","arguments":"{}"}}]}), None),
        delta(json!({}), Some("tool_calls")),
        "[DONE]".into(),
    ]))
    .await;
    let c = calls(&assemble(&items).message);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].0, "call_0");
}

#[tokio::test]
async fn reasoning_arrives_as_reasoning_content_or_reasoning() {
    let items = one(sse(&[
        delta(json!({"reasoning_content":"A","reasoning":null}), None),
        delta(json!({"reasoning":"B"}), None),
        // A server sending both with the same text counts it once.
        delta(json!({"reasoning":"C","reasoning_content":"C"}), None),
        delta(json!({"content":"done"}), Some("stop")),
        "[DONE]".into(),
    ]))
    .await;
    let r = assemble(&items);
    assert_eq!(
        r.message.content,
        [ContentBlock::reasoning("ABC"), ContentBlock::text("done")]
    );
    assert_eq!(r.finish, FinishReason::Stop);
}

#[tokio::test]
async fn finish_reasons_map() {
    let cases = [
        ("stop", FinishReason::Stop),
        ("length", FinishReason::MaxTokens),
        ("tool_calls", FinishReason::ToolCalls),
        ("function_call", FinishReason::ToolCalls),
        (
            "content_filter",
            FinishReason::Error {
                message: "model stopped: content_filter".into(),
                code: Some("CONTENT_FILTER".into()),
            },
        ),
    ];
    for (wire, expected) in cases {
        let items = one(sse(&[
            delta(json!({"content":"x"}), None),
            delta(json!({}), Some(wire)),
            "[DONE]".into(),
        ]))
        .await;
        assert_eq!(assemble(&items).finish, expected, "{wire}");
    }
}

#[tokio::test]
async fn error_statuses_map_to_codes() {
    let cases: Vec<(ScriptedResponse, &str, &str)> = vec![
        (ScriptedResponse::json(401, &json!({"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}})), "AUTH", "Incorrect API key provided"),
        (ScriptedResponse::new(403).piece("forbidden"), "AUTH", "local API error (HTTP 403)"),
        (ScriptedResponse::json(400, &json!({"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}})), "CONTEXT_WINDOW_EXCEEDED", "This model's maximum context length is 128000 tokens."),
        (ScriptedResponse::json(400, &json!({"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":4096}})), "CONTEXT_WINDOW_EXCEEDED", "the request exceeds the available context size, try increasing it"),
        (ScriptedResponse::json(400, &json!({"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400})), "CONTEXT_WINDOW_EXCEEDED", "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."),
        (ScriptedResponse::json(500, &json!({"error":{"message":"prompt too long; exceeded max context length by 100 tokens","type":"api_error"}})), "CONTEXT_WINDOW_EXCEEDED", "prompt too long; exceeded max context length by 100 tokens"),
        (ScriptedResponse::json(400, &json!({"error":{"message":"tools[0]: bad schema"}})), "INVALID_REQUEST", "tools[0]: bad schema"),
        (ScriptedResponse::json(404, &json!({"error":"model \"qwen\" not found, try pulling it first"})), "HTTP_404", "model \"qwen\" not found, try pulling it first"),
        (ScriptedResponse::json(503, &json!({"error":{"message":"overloaded"}})), "SERVER", "overloaded"),
    ];
    let (script, expected): (Vec<_>, Vec<_>) =
        cases.into_iter().map(|(r, c, m)| (r, (c, m))).unzip();
    let server = LoopbackServer::start(script).await.unwrap();
    let a = adapter(server.base_url());
    for (code, message) in expected {
        let (chunks, err) = split(run(&*a, options()).await);
        assert!(chunks.is_empty());
        let err = err.unwrap();
        assert_eq!((err.code(), err.message.as_str()), (code, message));
        assert!(err.status.is_some());
    }
}

#[tokio::test]
async fn rate_limit_carries_retry_after() {
    let server = LoopbackServer::start([ScriptedResponse::json(
        429,
        &json!({"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}),
    )
    .header("retry-after", "7")])
    .await
    .unwrap();
    let (_, err) = split(run(&*adapter(server.base_url()), options()).await);
    let err = err.unwrap();
    assert_eq!(err.code(), codes::RATE_LIMIT);
    assert_eq!(err.retry_after, Some(Duration::from_secs(7)));
    assert!(err.is_transient());
}

#[tokio::test]
async fn an_error_object_in_the_stream_ends_it_with_the_message() {
    // OpenRouter: a provider fails mid-answer.
    let items = run(
        &*adapter(
            LoopbackServer::start([sse(&[
                delta(json!({"content":"Partial"}), None),
                json!({"id":"x","object":"chat.completion.chunk","error":{"code":502,"message":"Provider disconnected"},
                    "choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]})
                .to_string(),
            ])])
            .await
            .unwrap()
            .base_url(),
        ),
        options(),
    )
    .await;
    check_chunks(&items).unwrap();
    let (chunks, err) = split(items);
    assert_eq!(chunks.len(), 2, "block-start and the text delta");
    let err = err.unwrap();
    assert_eq!(err.code(), codes::SERVER);
    assert_eq!(err.message, "Provider disconnected");
    assert!(err.after_output, "not retried: output was delivered");
    // vLLM / llama.cpp style errors before any output, string codes.
    for (payload, code) in [
        (
            json!({"error":{"message":"context length exceeded","code":"context_length_exceeded"}}),
            codes::CONTEXT_WINDOW_EXCEEDED,
        ),
        (json!({"error":"model crashed"}), codes::SERVER),
        (
            json!({"error":{"message":"slow down","code":429}}),
            codes::RATE_LIMIT,
        ),
    ] {
        let server = LoopbackServer::start([sse(&[payload.to_string()])])
            .await
            .unwrap();
        let (chunks, err) = split(run(&*adapter(server.base_url()), options()).await);
        assert!(chunks.is_empty());
        let err = err.unwrap();
        assert_eq!(err.code(), code, "{payload}");
        assert!(!err.after_output);
    }
}

#[tokio::test]
async fn html_or_json_instead_of_an_event_stream_is_malformed_naming_it() {
    let server = LoopbackServer::start([
        ScriptedResponse::new(200)
            .header("content-type", "text/html; charset=utf-8")
            .piece("<html><body>\x1b[31mPlease log in to the Wi-Fi</body></html>"),
        ScriptedResponse::json(
            200,
            &json!({"id":"x","object":"chat.completion","choices":[{"message":{"content":"hi"}}]}),
        ),
        // No content type at all, and no event in the body.
        ScriptedResponse::new(200).piece("<!doctype html><title>proxy</title>"),
        ScriptedResponse::new(200),
    ])
    .await
    .unwrap();
    let a = adapter(server.base_url());
    let expect: [(&str, &[&str]); 4] = [
        (
            codes::MALFORMED_RESPONSE,
            &["text/html", "<html><body>\\u{1b}[31mPlease log in"],
        ),
        (
            codes::MALFORMED_RESPONSE,
            &["application/json", "chat.completion"],
        ),
        (
            codes::MALFORMED_RESPONSE,
            &["without any SSE data event", "<!doctype html>"],
        ),
        (codes::EMPTY_RESPONSE, &["empty body"]),
    ];
    for (code, needles) in expect {
        let (chunks, err) = split(run(&*a, options()).await);
        assert!(chunks.is_empty());
        let err = err.unwrap();
        assert_eq!(err.code(), code, "{}", err.message);
        for n in needles {
            assert!(err.message.contains(n), "{:?} lacks {n:?}", err.message);
        }
        assert!(!err.message.contains('\x1b'), "{}", err.message);
    }
}

#[tokio::test]
async fn a_stream_without_done_finishes_after_a_finish_reason_else_is_network() {
    // Finished, usage sent, then the connection closed without [DONE].
    let items = one(sse(&[
        delta(json!({"content":"All done."}), None),
        delta(json!({}), Some("stop")),
        usage_chunk(json!({"prompt_tokens":5,"completion_tokens":3})),
    ]))
    .await;
    let r = assemble(&items);
    assert_eq!(r.message.content, [ContentBlock::text("All done.")]);
    assert_eq!(r.usage.unwrap().output_tokens, 3);
    // Cut mid-answer: the text delivered, then NETWORK.
    let items = one(sse(&[delta(json!({"content":"All"}), None)])).await;
    let (chunks, err) = split(items);
    assert_eq!(chunks.len(), 2);
    let err = err.unwrap();
    assert_eq!(err.code(), codes::NETWORK);
    assert!(err.message.contains("no finish_reason"), "{}", err.message);
    assert!(err.after_output);
    // Cut before any output: retryable.
    let (chunks, err) = split(one(sse(&[delta(json!({"role":"assistant"}), None)])).await);
    assert!(chunks.is_empty());
    assert!(err.unwrap().is_transient());
}

#[tokio::test]
async fn the_retry_plugin_retries_a_stream_cut_before_output() {
    let server = LoopbackServer::start([
        sse(&[delta(json!({"role":"assistant"}), None)]),
        sse(&[
            delta(json!({"content":"ok"}), Some("stop")),
            "[DONE]".into(),
        ]),
    ])
    .await
    .unwrap();
    let service = LlmService::new();
    let _reg = dsh_llm_openai::register(&service, config(server.base_url())).unwrap();
    let _retry = install_retry(
        &service,
        RetryConfig {
            max_retries: 1,
            base: Duration::from_millis(1),
            cap: Duration::from_millis(5),
        },
    );
    let items: Vec<_> = service.stream(options()).await.collect().await;
    assert_eq!(assemble(&items).message.content, [ContentBlock::text("ok")]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn bad_json_is_malformed_and_garbage_never_panics() {
    let (chunks, err) = split(
        one(sse(&[
            delta(json!({"content":"a"}), None),
            "{not json".into(),
        ]))
        .await,
    );
    assert_eq!(chunks.len(), 2);
    let err = err.unwrap();
    assert_eq!(err.code(), codes::MALFORMED_RESPONSE);
    assert!(err.message.contains("{not json"));
    let mut x: u32 = 0x9e37_79b9;
    let mut noise = b"data: ".to_vec();
    for _ in 0..50_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        noise.push((x & 0xff) as u8);
    }
    let server = LoopbackServer::start([ScriptedResponse::sse_raw(noise)])
        .await
        .unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    check_chunks(&items).unwrap();
    assert!(items.last().unwrap().is_err());
}

#[tokio::test]
async fn an_oversized_event_is_malformed() {
    let mut cfg = config("http://127.0.0.1:1");
    cfg.max_event_bytes = 1024;
    let server = LoopbackServer::start([ScriptedResponse::sse_raw(format!(
        "data: {}",
        "x".repeat(64 * 1024)
    ))
    .then_hang()])
    .await
    .unwrap();
    cfg.base_url = format!("{}/v1", server.base_url());
    let a = OpenAiAdapter::new(cfg).unwrap();
    let (_, err) = split(run(&a, options()).await);
    let err = err.unwrap();
    assert_eq!(err.code(), codes::MALFORMED_RESPONSE);
    assert!(
        err.message.contains("[providers.local] max_event_bytes"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn idle_body_times_out_and_keep_alives_do_not_count() {
    let mut pieces =
        ScriptedResponse::sse_raw(format!("data: {}\n\n", delta(json!({"content":"a"}), None)));
    for _ in 0..20 {
        pieces = pieces
            .piece(": keep-alive\n\n")
            .delay(Duration::from_millis(50));
    }
    let server = LoopbackServer::start([pieces.then_hang()]).await.unwrap();
    let mut cfg = config(server.base_url());
    cfg.stream_idle_timeout_ms = 300;
    let a = OpenAiAdapter::new(cfg).unwrap();
    let t = Instant::now();
    let (chunks, err) = split(run(&a, options()).await);
    assert_eq!(chunks.len(), 2);
    let err = err.unwrap();
    assert_eq!(err.code(), codes::TIMEOUT);
    assert!(
        err.message
            .contains("[providers.local] stream_idle_timeout_ms"),
        "{}",
        err.message
    );
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_silent_server_hits_the_connect_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hold = tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(sock);
    });
    let mut cfg = config(&url);
    cfg.connect_timeout_ms = 200;
    let a = OpenAiAdapter::new(cfg).unwrap();
    let (chunks, err) = split(run(&a, options()).await);
    assert!(chunks.is_empty());
    let err = err.unwrap();
    assert_eq!(err.code(), codes::TIMEOUT);
    assert!(
        err.message.contains("connect_timeout_ms"),
        "{}",
        err.message
    );
    assert!(err.is_transient());
    hold.abort();
}

#[tokio::test]
async fn connection_refused_is_network() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let (_, err) = split(run(&*adapter(&url), options()).await);
    let err = err.unwrap();
    assert_eq!(err.code(), codes::NETWORK);
    assert!(err.message.contains("local API"), "{}", err.message);
}

#[tokio::test]
async fn abort_mid_stream_is_prompt_and_closes_the_connection() {
    let resp = sse(&[
        delta(json!({"content":"a"}), None),
        delta(json!({"content":"b"}), None),
    ])
    .then_hang();
    let server = LoopbackServer::start([resp]).await.unwrap();
    let a = adapter(server.base_url());
    let opts = options();
    let cancel = opts.cancel.clone();
    let mut stream = a.stream(opts);
    for _ in 0..3 {
        stream.next().await.unwrap().unwrap();
    }
    cancel.cancel();
    let t = Instant::now();
    let err = stream.next().await.unwrap().unwrap_err();
    assert!(t.elapsed() < Duration::from_millis(100));
    assert_eq!(err.code(), codes::ABORTED);
    assert!(err.after_output);
    assert!(stream.next().await.is_none());
    drop(stream);
    tokio::time::timeout(Duration::from_secs(5), server.wait_bodies_dropped(1))
        .await
        .expect("the server saw the connection close");
}

#[tokio::test]
async fn translated_deepseek_fixture_over_loopback() {
    let bytes = openai_fixture();
    let pieces: Vec<Vec<u8>> = bytes.chunks(4096).map(<[u8]>::to_vec).collect();
    let server = LoopbackServer::start([ScriptedResponse::new(200)
        .header("content-type", "text/event-stream")
        .pieces(pieces)])
    .await
    .unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    check_chunks(&items).unwrap();
    assert_eq!(items.len(), 2004);
    let r = assemble(&items);
    let kinds: Vec<&str> = r.message.content.iter().map(|b| b.kind()).collect();
    assert_eq!(kinds, ["reasoning", "text", "tool-call"]);
    assert_eq!(r.finish, FinishReason::ToolCalls);
    let u = r.usage.unwrap();
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.reasoning_tokens
        ),
        (130, 2011, Some(11904), Some(1200))
    );
}

#[tokio::test]
async fn invalid_config_registers_nothing() {
    let service = LlmService::new();
    let cfg = OpenAiConfig {
        base_url: "not a url".into(),
        ..config("http://x")
    };
    let err = dsh_llm_openai::register(&service, cfg).unwrap_err();
    assert_eq!(err.code(), codes::INVALID_CONFIG);
    assert!(
        err.message.contains("[providers.local] base_url"),
        "{}",
        err.message
    );
    let (_, err) = split(service.stream(options()).await.collect().await);
    assert_eq!(err.unwrap().code(), codes::NO_ADAPTER);
}

#[tokio::test]
async fn register_serves_every_route_and_the_registration_undoes() {
    let server = LoopbackServer::start([sse(&[
        delta(json!({"content":"1"}), Some("stop")),
        "[DONE]".into(),
    ])])
    .await
    .unwrap();
    let service = LlmService::new();
    let mut cfg = config(server.base_url());
    cfg.models.push(dsh_llm_openai::ModelRoute::new("other"));
    let reg = dsh_llm_openai::register(&service, cfg).unwrap();
    let mut opts = options();
    opts.model = "other".into();
    let items: Vec<_> = service.stream(opts.clone()).await.collect().await;
    assert_eq!(assemble(&items).message.content, [ContentBlock::text("1")]);
    assert_eq!(server.next_request().await.json()["model"], "other");
    assert_eq!(service.models(), [MODEL, "other"]);
    reg.undo();
    assert!(service.models().is_empty());
    let (_, err) = split(service.stream(opts).await.collect().await);
    assert_eq!(err.unwrap().code(), codes::NO_ADAPTER);
}

#[tokio::test]
async fn the_plugin_installs_into_the_kernels_service() {
    use dsh_kernel::Plugin;
    let kernel = dsh_kernel::Kernel::new();
    let cfg = config("http://127.0.0.1:9");
    let err = cfg.clone().install(&kernel).unwrap_err();
    assert_eq!(err.code(), "MISSING_SERVICE");
    let service = Arc::new(LlmService::new());
    let _provided = kernel.provide(service.clone()).unwrap();
    let reg = cfg.install(&kernel).unwrap();
    assert_eq!(service.models(), [MODEL]);
    reg.undo();
    assert!(service.models().is_empty());
}

#[tokio::test]
async fn abort_while_waiting_for_headers_is_prompt() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (connected_tx, connected_rx) = tokio::sync::oneshot::channel();
    let accept = tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        let _ = connected_tx.send(());
        // Hold the socket, never answering, until the client hangs up.
        let mut buf = [0u8; 4096];
        loop {
            sock.readable().await.unwrap();
            match sock.try_read(&mut buf) {
                Ok(0) => return,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(_) => return,
            }
        }
    });
    let a = adapter(&url);
    let opts = options();
    let cancel = opts.cancel.clone();
    let mut stream = a.stream(opts);
    let poll = tokio::spawn(async move {
        let first = stream.next().await;
        (first, stream.next().await.is_none())
    });
    connected_rx.await.unwrap();
    cancel.cancel();
    let t = Instant::now();
    let (first, ended) = poll.await.unwrap();
    assert!(t.elapsed() < Duration::from_millis(100));
    assert_eq!(first.unwrap().unwrap_err().code(), codes::ABORTED);
    assert!(ended);
    tokio::time::timeout(Duration::from_secs(5), accept)
        .await
        .expect("connection closed after abort")
        .unwrap();
}
