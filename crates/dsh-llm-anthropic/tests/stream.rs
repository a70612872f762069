//! The Anthropic adapter against the loopback server: the worked example,
//! stop reasons, usage, thinking signatures, redacted thinking, errors
//! (statuses, mid-stream `error` events, HTML, truncated streams), aborts,
//! retries and the conformance kit.
#![allow(unreachable_pub, clippy::unwrap_used, clippy::expect_used)] // the shared `common` helpers

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use dsh_kernel::ErrorCode;
use dsh_llm::conformance::{check_adapter, check_completed, Scenario, Setup};
use dsh_llm::{
    install_retry, BlockAssembler, ContentBlock, FinishReason, LlmAdapter, LlmService, RetryConfig,
    StreamChunk,
};
use dsh_llm_anthropic::{AnthropicAdapter, ANTHROPIC_VERSION};
use dsh_testkit::{LoopbackServer, ScriptedResponse};
use futures_util::StreamExt;
use serde_json::json;

#[tokio::test]
async fn worked_example_yields_its_chunks_and_sends_the_anthropic_headers() {
    let server = LoopbackServer::start([sse(&example_events())])
        .await
        .unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    assert_eq!(chunks_json(&items), expected_chunks());
    let result = check_completed(&items).unwrap();
    assert_eq!(result.finish, FinishReason::ToolCalls);
    let req = server.requests().remove(0);
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(req.header("anthropic-version"), Some(ANTHROPIC_VERSION));
    assert_eq!(req.header("accept"), Some("text/event-stream"));
    assert!(req.header("authorization").is_none());
    let body = req.json();
    assert_eq!(body["model"], WIRE, "the route's wire id is sent");
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 32000);
}

#[tokio::test]
async fn worked_example_split_mid_event_over_the_network() {
    let bytes = example_bytes();
    let pieces: Vec<Vec<u8>> = bytes.chunks(7).map(<[u8]>::to_vec).collect();
    let resp = ScriptedResponse::new(200)
        .header("content-type", "text/event-stream")
        .pieces(pieces);
    let server = LoopbackServer::start([resp]).await.unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    assert_eq!(chunks_json(&items), expected_chunks());
}

#[tokio::test]
async fn stop_reasons_map_to_finish_reasons() {
    let cases = [
        ("end_turn", json!({"kind":"stop"})),
        ("stop_sequence", json!({"kind":"stop"})),
        ("max_tokens", json!({"kind":"max-tokens"})),
        ("tool_use", json!({"kind":"tool-calls"})),
        (
            "refusal",
            json!({"kind":"error","message":"the model declined to answer (refusal)","code":"CONTENT_FILTER"}),
        ),
        (
            "pause_turn",
            json!({"kind":"error","message":"model stopped: pause_turn","code":"PAUSE_TURN"}),
        ),
    ];
    let server = LoopbackServer::start(cases.iter().map(|(reason, _)| {
        sse(&[
            message_start(3, 0, 0),
            block_start(0, json!({"type":"text","text":""})),
            text_delta(0, "x"),
            block_stop(0),
            message_delta(reason, 1),
            message_stop(),
        ])
    }))
    .await
    .unwrap();
    let a = adapter(server.base_url());
    for (reason, expected) in cases {
        let items = chunks_json(&run(&*a, options()).await);
        assert_eq!(
            items.last().unwrap(),
            &json!({"type":"finish","reason":expected}),
            "{reason}"
        );
    }
}

#[tokio::test]
async fn usage_keeps_cached_input_apart_and_takes_the_last_output_count() {
    let events = vec![
        message_start(12, 90_000, 2_000),
        block_start(0, json!({"type":"text","text":""})),
        text_delta(0, "ok"),
        block_stop(0),
        // message_delta counts are cumulative: the later one wins.
        json!({"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":3}}),
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}),
        message_stop(),
    ];
    let server = LoopbackServer::start([sse(&events)]).await.unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    let result = check_completed(&items).unwrap();
    let usage = result.usage.unwrap();
    assert_eq!(usage.input_tokens, 12);
    assert_eq!(usage.cache_read_tokens, Some(90_000));
    assert_eq!(usage.cache_write_tokens, Some(2_000));
    assert_eq!(usage.output_tokens, 7);
    assert_eq!(result.finish, FinishReason::Stop);
}

#[tokio::test]
async fn redacted_thinking_is_kept_whole_and_signature_deltas_join() {
    let events = vec![
        message_start(1, 0, 0),
        block_start(
            0,
            json!({"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}),
        ),
        block_stop(0),
        block_start(1, json!({"type":"thinking","thinking":""})),
        delta(1, json!({"type":"thinking_delta","thinking":"Hm."})),
        delta(
            1,
            json!({"type":"signature_delta","signature":"sig-part-1/"}),
        ),
        delta(
            1,
            json!({"type":"signature_delta","signature":"sig-part-2"}),
        ),
        block_stop(1),
        block_start(2, json!({"type":"text","text":""})),
        text_delta(2, "Done."),
        block_stop(2),
        message_delta("end_turn", 5),
        message_stop(),
    ];
    let server = LoopbackServer::start([sse(&events)]).await.unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    let result = check_completed(&items).unwrap();
    let content = &result.message.content;
    match &content[0] {
        ContentBlock::Other { kind, data } => {
            assert_eq!(kind, "redacted_thinking");
            assert_eq!(
                serde_json::Value::Object(data.clone()),
                json!({"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"})
            );
        }
        other => panic!("{other:?}"),
    }
    match &content[1] {
        ContentBlock::Reasoning(r) => {
            assert_eq!(r.text, "Hm.");
            assert_eq!(r.signature.as_deref(), Some("sig-part-1/sig-part-2"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(content[2], ContentBlock::text("Done."));
}

#[tokio::test]
async fn tool_input_split_across_a_hundred_deltas_assembles() {
    let args = json!({"command": "printf '%s\\n' \"a b\" && ls -la /tmp", "description": "a long-ish description of what runs", "timeout": 120000})
        .to_string();
    let chars: Vec<char> = args.chars().collect();
    assert!(chars.len() >= 100);
    let cut = |i: usize| i * chars.len() / 100;
    let pieces: Vec<String> = (0..100)
        .map(|i| chars[cut(i)..cut(i + 1)].iter().collect())
        .collect();
    let mut events = vec![
        message_start(5, 0, 0),
        block_start(
            0,
            json!({"type":"tool_use","id":"toolu_9","name":"bash","input":{}}),
        ),
    ];
    for p in &pieces {
        events.push(delta(
            0,
            json!({"type":"input_json_delta","partial_json":p}),
        ));
    }
    events.extend([block_stop(0), message_delta("tool_use", 9), message_stop()]);
    let server = LoopbackServer::start([sse(&events)]).await.unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    let deltas = items
        .iter()
        .filter(|i| matches!(i, Ok(StreamChunk::ToolCallDelta { .. })))
        .count();
    assert_eq!(
        deltas,
        pieces.len() + 1,
        "one announcing delta plus one per piece"
    );
    let result = check_completed(&items).unwrap();
    assert_eq!(
        result.message.content,
        vec![ContentBlock::tool_call("toolu_9", "bash", args)]
    );
    assert_eq!(result.finish, FinishReason::ToolCalls);
}

#[tokio::test]
async fn a_tool_without_input_deltas_gets_its_start_input_or_an_empty_object() {
    let events = vec![
        message_start(5, 0, 0),
        block_start(
            0,
            json!({"type":"tool_use","id":"toolu_a","name":"job_list","input":{}}),
        ),
        block_stop(0),
        block_start(
            1,
            json!({"type":"tool_use","id":"toolu_b","name":"read","input":{"path":"a.rs"}}),
        ),
        block_stop(1),
        message_delta("tool_use", 9),
        message_stop(),
    ];
    let server = LoopbackServer::start([sse(&events)]).await.unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    let result = check_completed(&items).unwrap();
    assert_eq!(
        result.message.content,
        vec![
            ContentBlock::tool_call("toolu_a", "job_list", "{}"),
            ContentBlock::tool_call("toolu_b", "read", r#"{"path":"a.rs"}"#),
        ]
    );
}

#[tokio::test]
async fn overloaded_error_mid_stream_ends_the_stream_with_server() {
    let mut events = example_events()[..9].to_vec();
    events.push(json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}));
    // Whatever follows an error is never read.
    events.push(text_delta(1, "never"));
    let server = LoopbackServer::start([sse(&events)]).await.unwrap();
    let (chunks, err) = split(run(&*adapter(server.base_url()), options()).await);
    assert_eq!(chunks, expected_chunks()[..6].to_vec());
    let err = err.expect("an error");
    assert_eq!(err.code(), "SERVER");
    assert_eq!(err.message, "Overloaded (overloaded_error)");
    assert!(err.after_output);
    assert!(!err.is_transient(), "output was delivered: no retry");
}

#[tokio::test]
async fn overloaded_before_any_output_is_retried() {
    let overloaded = sse(&[
        message_start(1, 0, 0),
        ping(),
        json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
    ]);
    let server = LoopbackServer::start([overloaded, sse(&text_events(&["Hi"]))])
        .await
        .unwrap();
    let service = service_with_retry(server.base_url());
    let items: Vec<_> = service.stream(options()).await.collect().await;
    let result = check_completed(&items).unwrap();
    assert_eq!(result.message.content, vec![ContentBlock::text("Hi")]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_without_message_stop_is_stream_closed() {
    let mut events = example_events();
    events.pop();
    let server = LoopbackServer::start([sse(&events)]).await.unwrap();
    let (chunks, err) = split(run(&*adapter(server.base_url()), options()).await);
    // Every block closed, but no usage and no finish.
    assert_eq!(chunks, expected_chunks()[..13].to_vec());
    let err = err.expect("an error");
    assert_eq!(err.code(), "STREAM_CLOSED");
    assert_eq!(err.message, dsh_llm_anthropic::STREAM_ENDED_EARLY);
    assert!(err.after_output);
}

#[tokio::test]
async fn a_dropped_connection_mid_stream_is_an_error_after_output() {
    let events = example_events();
    let resp = sse(&events[..9]).then_drop();
    let server = LoopbackServer::start([resp]).await.unwrap();
    let (chunks, err) = split(run(&*adapter(server.base_url()), options()).await);
    assert_eq!(chunks, expected_chunks()[..6].to_vec());
    let err = err.unwrap();
    assert!(
        ["NETWORK", "STREAM_CLOSED"].contains(&err.code()),
        "{}",
        err.code()
    );
    assert!(err.after_output);
}

#[tokio::test]
async fn html_instead_of_sse_is_malformed_response() {
    let html = ScriptedResponse::new(200)
        .header("content-type", "text/html; charset=utf-8")
        .piece("<html><body>Please log in to the Wi-Fi</body></html>");
    let server = LoopbackServer::start([html]).await.unwrap();
    let (chunks, err) = split(run(&*adapter(server.base_url()), options()).await);
    assert!(chunks.is_empty());
    let err = err.unwrap();
    assert_eq!(err.code(), "MALFORMED_RESPONSE");
    assert!(err.message.contains("text/html"), "{}", err.message);
    assert!(!err.is_transient());
}

#[tokio::test]
async fn bad_json_is_malformed_at_that_point() {
    let mut body: String = example_events()[..9].iter().map(event).collect();
    body.push_str("event: content_block_delta\ndata: {not json\n\n");
    let server = LoopbackServer::start([ScriptedResponse::sse_raw(body)])
        .await
        .unwrap();
    let (chunks, err) = split(run(&*adapter(server.base_url()), options()).await);
    assert_eq!(chunks, expected_chunks()[..6].to_vec());
    let err = err.unwrap();
    assert_eq!(err.code(), "MALFORMED_RESPONSE");
    assert_eq!(err.message, "malformed SSE payload: {not json");
}

#[tokio::test]
async fn every_error_status_maps_to_its_code() {
    let err_body =
        |kind: &str, message: &str| json!({"type":"error","error":{"type":kind,"message":message}});
    let cases: Vec<(u16, serde_json::Value, &str)> = vec![
        (
            401,
            err_body("authentication_error", "invalid x-api-key"),
            "AUTH",
        ),
        (403, err_body("permission_error", "no access"), "AUTH"),
        (429, err_body("rate_limit_error", "slow down"), "RATE_LIMIT"),
        (529, err_body("overloaded_error", "Overloaded"), "SERVER"),
        (
            500,
            err_body("api_error", "Internal server error"),
            "SERVER",
        ),
        (503, json!({}), "SERVER"),
        (
            400,
            err_body(
                "invalid_request_error",
                "prompt is too long: 208310 tokens > 200000 maximum",
            ),
            "CONTEXT_WINDOW_EXCEEDED",
        ),
        (
            400,
            err_body("invalid_request_error", "messages.1: roles must alternate"),
            "INVALID_REQUEST",
        ),
        (
            413,
            err_body("request_too_large", "Request exceeds the maximum size"),
            "INVALID_REQUEST",
        ),
        (
            404,
            err_body("not_found_error", "model: claude-nope"),
            "HTTP_404",
        ),
        (402, json!({}), "HTTP_402"),
    ];
    let server = LoopbackServer::start(
        cases
            .iter()
            .map(|(status, body, _)| ScriptedResponse::json(*status, body)),
    )
    .await
    .unwrap();
    let a = adapter(server.base_url());
    for (status, body, code) in &cases {
        let (chunks, err) = split(run(&*a, options()).await);
        assert!(chunks.is_empty());
        let err = err.unwrap();
        assert_eq!(err.code(), *code, "HTTP {status}");
        assert_eq!(err.status, Some(*status));
        if let Some(m) = body["error"]["message"].as_str() {
            assert!(err.message.starts_with(m), "{}", err.message);
        } else {
            assert_eq!(err.message, format!("Anthropic API error (HTTP {status})"));
        }
    }
}

#[tokio::test]
async fn rate_limit_carries_retry_after() {
    let resp = ScriptedResponse::json(
        429,
        &json!({"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}),
    )
    .header("retry-after", "7");
    let server = LoopbackServer::start([resp]).await.unwrap();
    let (_, err) = split(run(&*adapter(server.base_url()), options()).await);
    let err = err.unwrap();
    assert_eq!(err.code(), "RATE_LIMIT");
    assert_eq!(err.retry_after, Some(Duration::from_secs(7)));
    assert!(err.is_transient());
}

#[tokio::test]
async fn connection_refused_is_network() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let (_, err) = split(run(&*adapter(&url), options()).await);
    assert_eq!(err.unwrap().code(), "NETWORK");
}

#[tokio::test]
async fn an_idle_body_times_out() {
    let mut cfg = config("http://unused");
    let resp = sse(&example_events()[..3]).then_hang();
    let server = LoopbackServer::start([resp]).await.unwrap();
    cfg.base_url = server.base_url().into();
    cfg.stream_idle_timeout_ms = 200;
    let a = AnthropicAdapter::new(cfg).unwrap();
    let t = Instant::now();
    let (_, err) = split(run(&a, options()).await);
    let err = err.unwrap();
    assert_eq!(err.code(), "TIMEOUT");
    assert!(
        err.message.contains("stream_idle_timeout_ms"),
        "{}",
        err.message
    );
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn an_oversized_event_is_malformed() {
    let mut cfg = config("http://unused");
    let huge = format!(
        "event: content_block_delta\ndata: {}",
        "x".repeat(64 * 1024)
    );
    let resp = ScriptedResponse::new(200)
        .header("content-type", "text/event-stream")
        .piece(huge)
        .then_hang();
    let server = LoopbackServer::start([resp]).await.unwrap();
    cfg.base_url = server.base_url().into();
    cfg.max_event_bytes = 16 * 1024;
    let a = AnthropicAdapter::new(cfg).unwrap();
    let (_, err) = split(run(&a, options()).await);
    let err = err.unwrap();
    assert_eq!(err.code(), "MALFORMED_RESPONSE");
    assert!(err.message.contains("max_event_bytes"), "{}", err.message);
}

#[tokio::test]
async fn abort_mid_stream_is_prompt_and_closes_the_connection() {
    let resp = sse(&example_events()[..5]).then_hang();
    let server = LoopbackServer::start([resp]).await.unwrap();
    let a = adapter(server.base_url());
    let opts = options();
    let cancel = opts.cancel.clone();
    let mut stream = a.stream(opts);
    for _ in 0..2 {
        stream.next().await.unwrap().unwrap();
    }
    cancel.cancel();
    let t = Instant::now();
    let err = stream.next().await.unwrap().unwrap_err();
    assert!(t.elapsed() < Duration::from_millis(100));
    assert_eq!(err.code(), "ABORTED");
    assert!(err.after_output);
    assert!(stream.next().await.is_none());
    drop(stream);
    tokio::time::timeout(Duration::from_secs(5), server.wait_bodies_dropped(1))
        .await
        .expect("the server saw the connection close");
}

#[tokio::test]
async fn anthropic_adapter_conforms() {
    let server = Arc::new(LoopbackServer::start([]).await.unwrap());
    let a: Arc<dyn LlmAdapter> = adapter(server.base_url());
    let srv = server.clone();
    check_adapter(move |scenario| {
        let srv = srv.clone();
        let a = a.clone();
        async move {
            let resp = match scenario {
                Scenario::TextReply | Scenario::CancelledBeforeStart => {
                    sse(&text_events(&["Hel", "lo"]))
                }
                Scenario::ToolCallReply => sse(&example_events()),
                Scenario::Abort => sse(&example_events()[..4]).then_hang(),
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
async fn register_serves_every_route_and_sends_each_wire_id() {
    let server = LoopbackServer::start([sse(&text_events(&["a"])), sse(&text_events(&["b"]))])
        .await
        .unwrap();
    let mut cfg = config(server.base_url());
    cfg.models.push(dsh_llm_anthropic::ModelRoute {
        name: "fast".into(),
        wire: "claude-haiku-wire".into(),
        images: false,
    });
    let service = LlmService::new();
    let reg = dsh_llm_anthropic::register(&service, cfg).unwrap();
    for model in [MODEL, "fast"] {
        let mut o = options();
        o.model = model.into();
        let items: Vec<_> = service.stream(o).await.collect().await;
        check_completed(&items).unwrap();
    }
    let sent: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.json()["model"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(sent, [WIRE, "claude-haiku-wire"]);
    reg.undo();
    let items: Vec<_> = service.stream(options()).await.collect().await;
    assert_eq!(items[0].as_ref().unwrap_err().code(), "NO_ADAPTER");
}

#[tokio::test]
async fn assembled_blocks_flush_as_each_block_stops() {
    // Blocks end at their own content_block_stop, not at the end of the
    // message: a consumer can show a finished block while the next streams.
    let resp = sse(&example_events()[..8]).then_hang();
    let server = LoopbackServer::start([resp]).await.unwrap();
    let a = adapter(server.base_url());
    let opts = options();
    let cancel = opts.cancel.clone();
    let mut stream = a.stream(opts);
    let mut asm = BlockAssembler::new();
    let mut flushed = Vec::new();
    while flushed.is_empty() {
        let chunk = stream.next().await.unwrap().unwrap();
        asm.push(&chunk);
        flushed = asm.flush_ready();
    }
    assert!(matches!(&flushed[0], ContentBlock::Reasoning(r) if r.signature.is_some()));
    cancel.cancel();
}

fn service_with_retry(base_url: &str) -> LlmService {
    let service = LlmService::new();
    let _reg = dsh_llm_anthropic::register(&service, config(base_url)).unwrap();
    let _retry = install_retry(
        &service,
        RetryConfig {
            max_retries: 3,
            base: Duration::from_millis(1),
            cap: Duration::from_millis(10),
        },
    );
    service
}

#[tokio::test]
async fn a_silent_server_fails_with_the_connect_timeout() {
    // Accepts, reads, never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hold = tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        // Keep the connection open, unanswered, until the test ends.
        std::future::pending::<()>().await;
        drop(sock);
    });
    let mut cfg = config(&url);
    cfg.connect_timeout_ms = 200;
    let a = AnthropicAdapter::new(cfg).unwrap();
    let t = Instant::now();
    let (_, err) = split(run(&a, options()).await);
    let err = err.unwrap();
    assert_eq!(err.code(), "TIMEOUT");
    assert!(
        err.message
            .contains("[providers.anthropic] connect_timeout_ms"),
        "{}",
        err.message
    );
    assert!(t.elapsed() < Duration::from_secs(3));
    assert!(err.is_transient());
    hold.abort();
}
