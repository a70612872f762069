//! The DeepSeek adapter against the loopback server: the worked example and
//! its variants, realistic transcripts, errors, aborts, the retry plugin and
//! the conformance kit.
#![allow(unreachable_pub, clippy::unwrap_used, clippy::expect_used)] // the shared `common` helpers

mod common;

use dsh_kernel::ErrorCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use dsh_llm::conformance::{check_adapter, Scenario, Setup};
use dsh_llm::{
    install_retry, BlockAssembler, ContentBlock, FinishReason, LlmAdapter, LlmErrorKind,
    LlmService, RetryConfig, StreamChunk,
};
use dsh_llm_deepseek::Thinking;
use dsh_testkit::{LoopbackServer, ScriptedResponse};
use futures_util::StreamExt;
use serde_json::json;

fn sse_events(events: &[String]) -> ScriptedResponse {
    ScriptedResponse::new(200)
        .header("content-type", "text/event-stream")
        .pieces(events.iter().map(|e| e.clone().into_bytes()))
}

fn choice_payload(delta: serde_json::Value, finish: Option<&str>) -> String {
    json!({"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":delta,"finish_reason":finish}]})
        .to_string()
}

#[tokio::test]
async fn worked_example_yields_chunks_1_to_14() {
    let server = LoopbackServer::start([sse_events(&example_events())])
        .await
        .unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    assert_eq!(chunks_json(&items), expected_chunks());
}

#[tokio::test]
async fn worked_example_split_across_two_reads_per_event() {
    let mut pieces = Vec::new();
    for e in example_events() {
        let b = e.into_bytes();
        let mid = b.len() / 2;
        pieces.push(b[..mid].to_vec());
        pieces.push(b[mid..].to_vec());
    }
    let resp = ScriptedResponse::new(200).pieces(pieces);
    let server = LoopbackServer::start([resp]).await.unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    assert_eq!(chunks_json(&items), expected_chunks());
}

#[tokio::test]
async fn worked_example_variants() {
    let p = example_payloads();
    let with_usage_on_finish = {
        let mut v = p[..7].to_vec();
        v.push(format!(
            r#"{{{H},"choices":[{{"index":0,"delta":{{"content":""}},"finish_reason":"tool_calls"}}],"usage":{USAGE}}}"#
        ));
        v.push("[DONE]".into());
        v
    };
    let both = {
        let mut v = p[..7].to_vec();
        v.push(format!(
            r#"{{{H},"choices":[{{"index":0,"delta":{{"content":""}},"finish_reason":"tool_calls"}}],"usage":{{"prompt_tokens":1,"completion_tokens":1}}}}"#
        ));
        v.push(p[8].clone());
        v.push("[DONE]".into());
        v
    };
    let server = LoopbackServer::start([
        ScriptedResponse::sse(&with_usage_on_finish),
        ScriptedResponse::sse(&both),
    ])
    .await
    .unwrap();
    let a = adapter(server.base_url());
    assert_eq!(chunks_json(&run(&*a, options()).await), expected_chunks());
    assert_eq!(chunks_json(&run(&*a, options()).await), expected_chunks());
}

#[tokio::test]
async fn missing_done_gives_chunks_1_to_9_then_stream_closed() {
    let mut events = example_events();
    events.pop();
    let server = LoopbackServer::start([sse_events(&events)]).await.unwrap();
    let (chunks, err) = split(run(&*adapter(server.base_url()), options()).await);
    assert_eq!(chunks, expected_chunks()[..9].to_vec());
    let err = err.expect("an error");
    assert_eq!(err.code(), "STREAM_CLOSED");
    assert_eq!(err.message, "SSE stream ended without [DONE]");
    assert!(err.after_output);
}

#[tokio::test]
async fn bad_json_is_malformed_at_that_point() {
    let mut payloads = example_payloads();
    payloads[4] = "{bad json".into();
    payloads.push("[DONE]".into());
    let server = LoopbackServer::start([ScriptedResponse::sse(&payloads)])
        .await
        .unwrap();
    let (chunks, err) = split(run(&*adapter(server.base_url()), options()).await);
    assert_eq!(chunks, expected_chunks()[..5].to_vec());
    let err = err.unwrap();
    assert_eq!(err.code(), "MALFORMED_RESPONSE");
    assert_eq!(err.message, "malformed SSE payload: {bad json");
}

#[tokio::test]
async fn non_thinking_text_only_reply() {
    let payloads = vec![
        choice_payload(json!({"role":"assistant","content":""}), None),
        choice_payload(json!({"content":"Hello"}), None),
        choice_payload(json!({"content":", world"}), None),
        choice_payload(json!({"content":""}), Some("stop")),
        json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2}}).to_string(),
        "[DONE]".into(),
    ];
    let server = LoopbackServer::start([ScriptedResponse::sse(&payloads)])
        .await
        .unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    assert_eq!(
        chunks_json(&items),
        vec![
            json!({"type":"block-start","index":0,"blockType":"text"}),
            json!({"type":"text-delta","index":0,"text":"Hello"}),
            json!({"type":"text-delta","index":0,"text":", world"}),
            json!({"type":"block-end","index":0,"block":{"type":"text","text":"Hello, world"}}),
            json!({"type":"usage","usage":{"inputTokens":10,"outputTokens":2}}),
            json!({"type":"finish","reason":{"kind":"stop"}}),
        ]
    );
}

#[tokio::test]
async fn parallel_tool_calls_with_arguments_split_across_many_deltas() {
    let args_a = r#"{"command": "ls -la", "description": "List files"}"#;
    let args_b = r#"{"path": "src/main.rs"}"#;
    let mut payloads = vec![choice_payload(
        json!({"role":"assistant","content":null,"reasoning_content":""}),
        None,
    )];
    payloads.push(choice_payload(
        json!({"reasoning_content":"Two calls."}),
        None,
    ));
    payloads.push(choice_payload(
        json!({"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"bash","arguments":""}}]}),
        None,
    ));
    payloads.push(choice_payload(
        json!({"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"read","arguments":""}}]}),
        None,
    ));
    // Interleave the fragments of both calls, three characters at a time.
    let frag = |s: &str| {
        s.chars()
            .collect::<Vec<_>>()
            .chunks(3)
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
    };
    let (fa, fb) = (frag(args_a), frag(args_b));
    for i in 0..fa.len().max(fb.len()) {
        if let Some(f) = fa.get(i) {
            payloads.push(choice_payload(
                json!({"tool_calls":[{"index":0,"function":{"arguments":f}}]}),
                None,
            ));
        }
        if let Some(f) = fb.get(i) {
            payloads.push(choice_payload(
                json!({"tool_calls":[{"index":1,"function":{"arguments":f}}]}),
                None,
            ));
        }
    }
    payloads.push(choice_payload(json!({"content":""}), Some("tool_calls")));
    payloads.push("[DONE]".into());
    let server = LoopbackServer::start([ScriptedResponse::sse(&payloads)])
        .await
        .unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    let mut asm = BlockAssembler::new();
    for i in &items {
        let c = i.as_ref().unwrap();
        if let StreamChunk::ToolCallDelta {
            index, id, name, ..
        } = c
        {
            assert_eq!(id, if *index == 1 { "call_a" } else { "call_b" });
            assert_eq!(
                name.as_deref(),
                Some(if *index == 1 { "bash" } else { "read" })
            );
        }
        asm.push(c);
    }
    let result = asm.result().unwrap();
    assert_eq!(
        result.message.content,
        vec![
            ContentBlock::reasoning("Two calls."),
            ContentBlock::tool_call("call_a", "bash", args_a),
            ContentBlock::tool_call("call_b", "read", args_b),
        ]
    );
    assert_eq!(result.finish, FinishReason::ToolCalls);
    assert!(result.usage.is_none());
    dsh_llm::conformance::check_completed(&items).unwrap();
}

#[tokio::test]
async fn unknown_finish_reason_is_in_band_error() {
    let payloads = vec![
        choice_payload(json!({"content":"partial"}), None),
        choice_payload(json!({}), Some("content_filter")),
        "[DONE]".into(),
    ];
    let server = LoopbackServer::start([ScriptedResponse::sse(&payloads)])
        .await
        .unwrap();
    let items = chunks_json(&run(&*adapter(server.base_url()), options()).await);
    assert_eq!(
        items.last().unwrap(),
        &json!({"type":"finish","reason":{"kind":"error","message":"model stopped: content_filter","code":"CONTENT_FILTER"}})
    );
}

#[tokio::test]
async fn every_error_status_maps_to_its_code() {
    let cases: &[(u16, &str)] = &[
        (401, "AUTH"),
        (403, "AUTH"),
        (429, "RATE_LIMIT"),
        (400, "INVALID_REQUEST"),
        (402, "HTTP_402"),
        (404, "HTTP_404"),
        (422, "HTTP_422"),
        (500, "SERVER"),
        (503, "SERVER"),
    ];
    let mut script = Vec::new();
    for (status, _) in cases {
        script.push(ScriptedResponse::json(
            *status,
            &json!({"error":{"message":format!("provider says {status}"),"type":"x"}}),
        ));
        script.push(ScriptedResponse::new(*status).piece("<html>oops</html>"));
        script.push(ScriptedResponse::json(
            *status,
            &json!({"error":{"message":""}}),
        ));
    }
    let server = LoopbackServer::start(script).await.unwrap();
    let a = adapter(server.base_url());
    for (status, code) in cases {
        for with_message in [true, false, false] {
            let (chunks, err) = split(run(&*a, options()).await);
            assert!(chunks.is_empty());
            let err = err.unwrap();
            assert_eq!(err.code(), *code, "status {status}");
            assert_eq!(err.status, Some(*status));
            assert!(!err.after_output);
            let msg = if with_message {
                format!("provider says {status}")
            } else {
                format!("DeepSeek API error (HTTP {status})")
            };
            assert_eq!(err.message, msg);
        }
    }
}

#[tokio::test]
async fn a_context_length_400_is_context_window_exceeded_and_other_400s_are_not() {
    let overflow = "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens (139000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.";
    let server = LoopbackServer::start([
        ScriptedResponse::json(
            400,
            &json!({"error":{"message": overflow, "type":"invalid_request_error","param":null,"code":"invalid_request_error"}}),
        ),
        ScriptedResponse::json(
            400,
            &json!({"error":{"message":"too long","code":"context_length_exceeded"}}),
        ),
        ScriptedResponse::json(
            400,
            &json!({"error":{"message":"messages[3]: unknown role \"robot\""}}),
        ),
    ])
    .await
    .unwrap();
    let a = adapter(server.base_url());
    for (code, message) in [
        ("CONTEXT_WINDOW_EXCEEDED", overflow),
        ("CONTEXT_WINDOW_EXCEEDED", "too long"),
        ("INVALID_REQUEST", "messages[3]: unknown role \"robot\""),
    ] {
        let (chunks, err) = split(run(&*a, options()).await);
        assert!(chunks.is_empty());
        let err = err.unwrap();
        assert_eq!(err.code(), code, "{message}");
        assert_eq!(err.message, message);
        assert_eq!(err.status, Some(400));
    }
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn rate_limit_carries_retry_after() {
    let server = LoopbackServer::start([ScriptedResponse::new(429).header("retry-after", "7")])
        .await
        .unwrap();
    let (_, err) = split(run(&*adapter(server.base_url()), options()).await);
    let err = err.unwrap();
    assert_eq!(err.code(), "RATE_LIMIT");
    assert_eq!(err.retry_after, Some(Duration::from_secs(7)));
    assert!(err.is_transient());
}

#[tokio::test]
async fn empty_and_non_sse_bodies() {
    let server = LoopbackServer::start([
        ScriptedResponse::new(200),
        ScriptedResponse::new(200).piece("{\"not\":\"sse\"}"),
        ScriptedResponse::new(204),
    ])
    .await
    .unwrap();
    let a = adapter(server.base_url());
    for code in ["STREAM_CLOSED", "STREAM_CLOSED", "EMPTY_RESPONSE"] {
        let (chunks, err) = split(run(&*a, options()).await);
        assert!(chunks.is_empty());
        assert_eq!(err.unwrap().code(), code);
    }
}

#[tokio::test]
async fn garbage_bytes_never_panic() {
    let mut noise = Vec::new();
    let mut x: u32 = 0x1234_5678;
    for _ in 0..100_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        noise.push((x & 0xff) as u8);
    }
    let mut with_data = b"data: ".to_vec();
    with_data.extend_from_slice(&noise[..200]);
    with_data.extend_from_slice(b"\n\n");
    let server = LoopbackServer::start([
        ScriptedResponse::sse_raw(noise.clone()),
        ScriptedResponse::sse_raw(with_data),
    ])
    .await
    .unwrap();
    let a = adapter(server.base_url());
    for _ in 0..2 {
        let (_, err) = split(run(&*a, options()).await);
        let err = err.expect("garbage must fail");
        let code = err.code();
        assert!(
            code == "STREAM_CLOSED" || code == "MALFORMED_RESPONSE",
            "unexpected {code}"
        );
    }
}

#[tokio::test]
async fn connection_dropped_mid_stream() {
    let events = example_events();
    let resp = sse_events(&events[..4]).then_drop();
    let server = LoopbackServer::start([resp]).await.unwrap();
    let (chunks, err) = split(run(&*adapter(server.base_url()), options()).await);
    assert_eq!(chunks, expected_chunks()[..3].to_vec());
    let err = err.unwrap();
    assert!(
        matches!(err.kind, LlmErrorKind::Network | LlmErrorKind::StreamClosed),
        "{err:?}"
    );
    assert!(err.after_output);
    assert!(!err.is_transient());
}

#[tokio::test]
async fn connection_refused_is_network() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let (_, err) = split(run(&*adapter(&url), options()).await);
    let err = err.unwrap();
    assert_eq!(err.code(), "NETWORK", "{}", err.message);
    assert!(err.is_transient());
}

#[tokio::test]
async fn idle_body_times_out() {
    let events = example_events();
    let resp = sse_events(&events[..3]).delay(Duration::from_secs(30));
    let server = LoopbackServer::start([resp]).await.unwrap();
    let mut cfg = config(server.base_url());
    cfg.stream_idle_timeout_ms = 200;
    let a = dsh_llm_deepseek::DeepSeekAdapter::new(cfg).unwrap();
    let (chunks, err) = split(run(&a, options()).await);
    assert_eq!(chunks.len(), 2);
    let err = err.unwrap();
    assert_eq!(err.code(), "TIMEOUT");
    assert!(err.after_output);
}

#[tokio::test]
async fn ten_megabyte_response() {
    let piece = "x".repeat(1000);
    let payload = choice_payload(json!({"content": piece}), None);
    let mut body = String::new();
    for _ in 0..10_000 {
        body.push_str("data: ");
        body.push_str(&payload);
        body.push_str("\n\n");
    }
    body.push_str(&format!(
        "data: {}\n\ndata: [DONE]\n\n",
        choice_payload(json!({}), Some("stop"))
    ));
    assert!(body.len() > 10_000_000);
    let pieces: Vec<Vec<u8>> = body
        .as_bytes()
        .chunks(64 * 1024)
        .map(<[u8]>::to_vec)
        .collect();
    let server = LoopbackServer::start([ScriptedResponse::new(200).pieces(pieces)])
        .await
        .unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    assert_eq!(items.len(), 10_000 + 3);
    match &items[items.len() - 2] {
        Ok(StreamChunk::BlockEnd { block, .. }) => {
            assert_eq!(block.as_text().unwrap().len(), 10_000_000)
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn fixture_stream_over_loopback() {
    let fixture = fixture();
    let pieces: Vec<Vec<u8>> = fixture.chunks(4096).map(<[u8]>::to_vec).collect();
    let server = LoopbackServer::start([ScriptedResponse::new(200).pieces(pieces)])
        .await
        .unwrap();
    let items = run(&*adapter(server.base_url()), options()).await;
    assert_eq!(items.len(), 2004);
    let result = dsh_llm::conformance::check_completed(&items).unwrap();
    let kinds: Vec<_> = result
        .message
        .content
        .iter()
        .map(|b| b.kind().to_string())
        .collect();
    assert_eq!(kinds, ["reasoning", "text", "tool-call"]);
    assert_eq!(result.finish, FinishReason::ToolCalls);
    assert!(result.usage.is_some());
}

#[tokio::test]
async fn abort_mid_stream_is_prompt_and_closes_the_connection() {
    let events = example_events();
    let resp = sse_events(&events[..4]).then_hang();
    let server = LoopbackServer::start([resp]).await.unwrap();
    let a = adapter(server.base_url());
    let opts = options();
    let cancel = opts.cancel.clone();
    let mut stream = a.stream(opts);
    let mut got = 0;
    while got < 3 {
        stream.next().await.unwrap().unwrap();
        got += 1;
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
async fn abort_while_waiting_for_headers() {
    // A server that accepts but never answers.
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
    assert_eq!(first.unwrap().unwrap_err().code(), "ABORTED");
    assert!(ended);
    tokio::time::timeout(Duration::from_secs(5), accept)
        .await
        .expect("connection closed after abort")
        .unwrap();
}

#[tokio::test]
async fn deepseek_adapter_conforms() {
    let server = Arc::new(LoopbackServer::start([]).await.unwrap());
    let a: Arc<dyn LlmAdapter> = adapter(server.base_url());
    let srv = server.clone();
    check_adapter(move |scenario| {
        let srv = srv.clone();
        let a = a.clone();
        async move {
            let resp = match scenario {
                Scenario::TextReply | Scenario::CancelledBeforeStart => ScriptedResponse::sse(&[
                    choice_payload(json!({"reasoning_content":""}), None),
                    choice_payload(json!({"reasoning_content":"Hm."}), None),
                    choice_payload(json!({"content":"Hello"}), None),
                    choice_payload(json!({"content":""}), Some("stop")),
                    json!({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}})
                        .to_string(),
                    "[DONE]".into(),
                ]),
                Scenario::ToolCallReply => sse_events(&example_events()),
                Scenario::Abort => sse_events(&example_events()[..3]).then_hang(),
            };
            srv.push(resp);
            Setup::new(a, options())
        }
    })
    .await;
    // The pre-cancelled scenario sends no request: its response is unused.
    assert_eq!(server.requests().len(), 3);
}

fn service_with_retry(base_url: &str, retry: RetryConfig) -> LlmService {
    let service = LlmService::new();
    let mut cfg = config(base_url);
    cfg.models = vec!["deepseek-v4-flash".into()];
    let _reg = dsh_llm_deepseek::register(&service, cfg).unwrap();
    let _reg2 = install_retry(&service, retry);
    service
}

fn fast_retry() -> RetryConfig {
    RetryConfig {
        max_retries: 3,
        base: Duration::from_millis(1),
        cap: Duration::from_secs(8),
    }
}

#[tokio::test]
async fn retry_503_then_success() {
    let server = LoopbackServer::start([
        ScriptedResponse::json(503, &json!({"error":{"message":"busy"}})),
        sse_events(&example_events()),
    ])
    .await
    .unwrap();
    let service = service_with_retry(server.base_url(), fast_retry());
    let items: Vec<_> = service.stream(options()).await.collect().await;
    assert_eq!(chunks_json(&items), expected_chunks());
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn retry_gives_up_after_max_retries_keeping_the_code() {
    let script = (0..4).map(|_| ScriptedResponse::new(500));
    let server = LoopbackServer::start(script).await.unwrap();
    let service = service_with_retry(server.base_url(), fast_retry());
    let items: Vec<_> = service.stream(options()).await.collect().await;
    let (_, err) = split(items);
    assert_eq!(err.unwrap().code(), "SERVER");
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn no_retry_after_a_chunk_was_delivered() {
    let events = example_events();
    let server = LoopbackServer::start([sse_events(&events[..3]).then_drop(), sse_events(&events)])
        .await
        .unwrap();
    let service = service_with_retry(server.base_url(), fast_retry());
    let (chunks, err) = split(service.stream(options()).await.collect().await);
    assert_eq!(chunks.len(), 2);
    assert!(err.unwrap().after_output);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn retry_honours_retry_after() {
    let server = LoopbackServer::start([
        ScriptedResponse::new(429).header("retry-after", "1"),
        sse_events(&example_events()),
    ])
    .await
    .unwrap();
    let service = service_with_retry(server.base_url(), fast_retry());
    let t = Instant::now();
    let items: Vec<_> = service.stream(options()).await.collect().await;
    assert!(
        t.elapsed() >= Duration::from_secs(1),
        "waited {:?}",
        t.elapsed()
    );
    assert_eq!(chunks_json(&items), expected_chunks());
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn bad_request_is_not_retried_and_zero_disables() {
    let server = LoopbackServer::start([ScriptedResponse::new(400), ScriptedResponse::new(503)])
        .await
        .unwrap();
    let service = service_with_retry(server.base_url(), fast_retry());
    let (_, err) = split(service.stream(options()).await.collect().await);
    assert_eq!(err.unwrap().code(), "INVALID_REQUEST");
    assert_eq!(server.requests().len(), 1);

    let service = service_with_retry(
        server.base_url(),
        RetryConfig {
            max_retries: 0,
            ..fast_retry()
        },
    );
    let (_, err) = split(service.stream(options()).await.collect().await);
    assert_eq!(err.unwrap().code(), "SERVER");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn retry_wait_is_abort_aware() {
    let server = LoopbackServer::start([ScriptedResponse::new(429).header("retry-after", "5")])
        .await
        .unwrap();
    let service = service_with_retry(server.base_url(), fast_retry());
    let opts = options();
    let cancel = opts.cancel.clone();
    let mut stream = service.stream(opts).await;
    let poll = tokio::spawn(async move { stream.next().await });
    server.next_request().await;
    cancel.cancel();
    let t = Instant::now();
    let first = poll.await.unwrap().unwrap();
    assert!(t.elapsed() < Duration::from_millis(100));
    assert_eq!(first.unwrap_err().code(), "ABORTED");
}

#[tokio::test]
async fn thinking_mode_is_sent_from_config() {
    let server = LoopbackServer::start([sse_events(&example_events())])
        .await
        .unwrap();
    let mut cfg = config(server.base_url());
    cfg.thinking = Some(Thinking::Enabled);
    let a = dsh_llm_deepseek::DeepSeekAdapter::new(cfg).unwrap();
    let items = run(&a, options()).await;
    assert_eq!(chunks_json(&items), expected_chunks());
    let body = server.next_request().await.json();
    assert_eq!(body["thinking"], json!({"type":"enabled"}));
}

#[tokio::test]
async fn live_deepseek_api() {
    let cfg = dsh_llm_deepseek::DeepSeekConfig::from_env();
    if cfg.api_key.is_none() {
        eprintln!("DEEPSEEK_API_KEY not set: skipping the live test");
        return;
    }
    let model = cfg.models[0].clone();
    let a = dsh_llm_deepseek::DeepSeekAdapter::new(cfg).unwrap();
    let mut opts = options();
    opts.model = model;
    opts.messages = vec![dsh_llm::Message::user_text(
        "Reply with the single word: pong",
    )]
    .into();
    opts.max_tokens = Some(200);
    let items = run(&a, opts).await;
    let result = dsh_llm::conformance::check_completed(&items).unwrap();
    assert!(result.usage.is_some());
}

#[tokio::test]
async fn retry_plugin_with_the_scripted_adapter() {
    use dsh_llm::scripted::{ReplyBuilder, ScriptedAdapter, ScriptedReply};
    use dsh_llm::{LlmError, LlmErrorKind};
    let transient = || LlmError::new(LlmErrorKind::Network, "reset");
    let adapter = Arc::new(ScriptedAdapter::new([
        ScriptedReply::ChunksThenError(vec![], transient()),
        ScriptedReply::ChunksThenError(vec![], transient()),
        ReplyBuilder::new().text(&["ok"]).reply(),
        // A transient error after a delivered chunk (without `after_output`
        // set by the adapter) is still not retried.
        ScriptedReply::ChunksThenError(
            vec![StreamChunk::TextDelta {
                index: 0,
                text: "x".into(),
            }],
            transient(),
        ),
        ReplyBuilder::new().text(&["never"]).reply(),
    ]));
    let service = LlmService::new();
    let _a = service
        .register_adapter(&["m"], adapter.clone() as Arc<dyn LlmAdapter>)
        .unwrap();
    let _r = install_retry(&service, fast_retry());
    let mut opts = options();
    opts.model = "m".into();
    let result = service.generate(opts.clone()).await.unwrap();
    assert_eq!(result.message.content, vec![ContentBlock::text("ok")]);
    assert_eq!(adapter.requests().len(), 3);
    let (chunks, err) = split(service.stream(opts).await.collect().await);
    assert_eq!(chunks.len(), 1);
    assert_eq!(err.unwrap().code(), "NETWORK");
    assert_eq!(adapter.requests().len(), 4);
}
