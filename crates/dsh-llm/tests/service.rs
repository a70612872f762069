//! LlmService: adapter registry, waterfalls, generate and stream_blocks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use dsh_kernel::ErrorCode;
use dsh_llm::scripted::{ReplyBuilder, ScriptedAdapter, ScriptedReply};
use dsh_llm::{
    ContentBlock, FinishReason, LlmError, LlmErrorKind, LlmService, ModelRequest, StreamChunk,
};
use futures_util::StreamExt;
use proptest::prelude::*;

fn opts(model: &str) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        ..Default::default()
    }
}

fn text_reply(s: &str) -> ScriptedReply {
    ReplyBuilder::new().text(&[s]).reply()
}

#[tokio::test]
async fn register_is_all_or_nothing_and_names_the_clashing_model() {
    let svc = LlmService::new();
    let a = Arc::new(ScriptedAdapter::new([]));
    let _r = svc.register_adapter(&["m1", "m2"], a.clone()).unwrap();
    let err = svc
        .register_adapter(&["m3", "m2"], Arc::new(ScriptedAdapter::new([])))
        .unwrap_err();
    assert_eq!(err.code(), "DUPLICATE_ADAPTER");
    assert_eq!(
        err.message,
        "an adapter for model \"m2\" is already registered"
    );
    assert_eq!(svc.models(), ["m1", "m2"], "m3 must not be registered");
    let err = svc
        .register_adapter(&["x", "x"], Arc::new(ScriptedAdapter::new([])))
        .unwrap_err();
    assert_eq!(err.code(), "DUPLICATE_ADAPTER");
    assert_eq!(svc.models(), ["m1", "m2"]);
}

#[tokio::test]
async fn undo_removes_the_models_and_notifies() {
    let svc = LlmService::new();
    let changes = Arc::new(AtomicUsize::new(0));
    let c = changes.clone();
    let _l = svc.on_adapters_change().on(move |_| {
        c.fetch_add(1, Ordering::SeqCst);
    });
    let reg = svc
        .register_adapter(&["m"], Arc::new(ScriptedAdapter::new([])))
        .unwrap();
    assert!(svc.adapter("m").is_some());
    reg.undo();
    assert!(svc.models().is_empty());
    assert_eq!(changes.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn unknown_model_is_no_adapter() {
    let svc = LlmService::new();
    let mut s = svc.stream(opts("nope")).await;
    let err = s.next().await.unwrap().unwrap_err();
    assert_eq!(err.code(), "NO_ADAPTER");
    assert_eq!(err.message, "no adapter registered for model \"nope\"");
    assert!(s.next().await.is_none());
    let err = svc.generate(opts("nope")).await.unwrap_err();
    assert_eq!(err.kind, LlmErrorKind::NoAdapter);
}

#[tokio::test]
async fn generate_assembles_the_stream() {
    let svc = LlmService::new();
    let adapter = Arc::new(ScriptedAdapter::new([ReplyBuilder::new()
        .reasoning(&["think"])
        .text(&["hel", "lo"])
        .usage(5, 6)
        .reply()]));
    let _r = svc.register_adapter(&["m"], adapter.clone()).unwrap();
    let r = svc.generate(opts("m")).await.unwrap();
    assert_eq!(
        r.message.content,
        vec![
            ContentBlock::reasoning("think"),
            ContentBlock::text("hello")
        ]
    );
    assert_eq!(r.finish, FinishReason::Stop);
    assert_eq!(r.usage.unwrap().output_tokens, 6);
    assert_eq!(adapter.requests().len(), 1);
}

#[tokio::test]
async fn stream_waterfall_can_rewrite_options_and_wrap_the_stream() {
    let svc = LlmService::new();
    let _r = svc
        .register_adapter(
            &["real"],
            Arc::new(ScriptedAdapter::new([text_reply("from real")])),
        )
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let _w = svc.on_stream().on(move |mut o: ModelRequest, next| {
        let seen = s2.clone();
        async move {
            seen.lock().unwrap().push(o.model.clone());
            o.model = "real".into();
            let inner = next.run(o).await;
            // Wrap: count chunks as they pass.
            let counted = inner.inspect(move |_| seen.lock().unwrap().push("chunk".into()));
            Box::pin(counted) as dsh_llm::ChunkStream
        }
    });
    let r = svc.generate(opts("alias")).await.unwrap();
    assert_eq!(r.message.content, vec![ContentBlock::text("from real")]);
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0], "alias");
    assert!(seen.iter().filter(|s| *s == "chunk").count() >= 4);
}

#[tokio::test]
async fn generate_waterfall_can_veto() {
    let svc = LlmService::new();
    let _w = svc.on_generate().on(|_o: ModelRequest, _next| async {
        Err(LlmError::new(LlmErrorKind::Unsupported, "vetoed"))
    });
    let err = svc.generate(opts("any")).await.unwrap_err();
    assert_eq!(err.message, "vetoed");
}

#[tokio::test]
async fn adapter_errors_surface_from_generate_with_their_code() {
    let svc = LlmService::new();
    let _r = svc
        .register_adapter(
            &["m"],
            Arc::new(ScriptedAdapter::new([ScriptedReply::ChunksThenError(
                vec![StreamChunk::TextDelta {
                    index: 0,
                    text: "par".into(),
                }],
                LlmError::new(LlmErrorKind::RateLimit, "slow down").with_status(429),
            )])),
        )
        .unwrap();
    let err = svc.generate(opts("m")).await.unwrap_err();
    assert_eq!(err.code(), "RATE_LIMIT");
    assert_eq!(err.status, Some(429));
}

#[tokio::test]
async fn cancelled_scripted_stream_ends_with_aborted() {
    let svc = LlmService::new();
    let _r = svc
        .register_adapter(
            &["m"],
            Arc::new(ScriptedAdapter::new([ScriptedReply::ChunksThenHang(
                vec![],
            )])),
        )
        .unwrap();
    let o = opts("m");
    let cancel = o.cancel.clone();
    let mut s = svc.stream(o).await;
    let t = tokio::spawn(async move { s.next().await });
    cancel.cancel();
    let item = tokio::time::timeout(std::time::Duration::from_secs(5), t)
        .await
        .expect("abort honoured")
        .unwrap();
    assert_eq!(item.unwrap().unwrap_err().code(), "ABORTED");
}

fn reply_strategy() -> impl Strategy<Value = Vec<StreamChunk>> {
    let frags = prop::collection::vec("[a-z ]{0,5}", 0..4);
    prop::collection::vec((0u8..3, frags), 0..5).prop_map(|blocks| {
        let mut b = ReplyBuilder::new();
        for (i, (kind, f)) in blocks.iter().enumerate() {
            let f: Vec<&str> = f.iter().map(String::as_str).collect();
            b = match kind {
                0 => b.text(&f),
                1 => b.reasoning(&f),
                _ => b.tool_call(&format!("c{i}"), "tool", &f),
            };
        }
        b.build()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `stream_blocks` yields exactly `generate().message.content`.
    #[test]
    fn stream_blocks_equals_generate(chunks in reply_strategy()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let svc = LlmService::new();
            let adapter = Arc::new(ScriptedAdapter::new([
                ScriptedReply::Chunks(chunks.clone()),
                ScriptedReply::Chunks(chunks),
            ]));
            let _r = svc.register_adapter(&["m"], adapter).unwrap();
            let streamed: Vec<ContentBlock> = svc
                .stream_blocks(opts("m"))
                .await
                .map(|b| b.unwrap())
                .collect()
                .await;
            let generated = svc.generate(opts("m")).await.unwrap().message.content;
            assert_eq!(streamed, generated);
        });
    }
}
