//! The Anthropic translator against the DeepSeek one: parse + translate +
//! assemble throughput over the 2,000-event DeepSeek fixture in `testdata/`
//! and the same reply turned into an Anthropic Messages event stream at
//! start-up (`message_start`, per block `content_block_start` / deltas /
//! `content_block_stop`, a thinking signature, `message_delta`,
//! `message_stop`, each with its `event:` line), both fed in the same
//! 1–4 KiB pieces, side by side in one run. Throughput is in events, so
//! the two dialects' different byte sizes do not skew the comparison.
//!
//! `cargo bench -p dsh-benches --bench anthropic`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dsh_llm::sse::SseParser;
use dsh_llm::{BlockAssembler, FinishReason, LlmError, StreamChunk};
use serde_json::{json, Value};

/// Deterministic piece sizes between 1 KiB and 4 KiB (as bench `sse`).
fn pieces(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut size = 1024usize;
    while at < bytes.len() {
        let end = (at + size).min(bytes.len());
        out.push(&bytes[at..end]);
        at = end;
        size = 1024 + (size * 7919 + 13) % 3073;
    }
    out
}

/// The DeepSeek fixture's chunks, as the DeepSeek adapter produces them.
fn deepseek_chunks(fixture: &[u8]) -> Vec<StreamChunk> {
    let mut parser = SseParser::new();
    let mut translator = dsh_llm_deepseek::Translator::new();
    let mut out = Vec::new();
    parser.push(fixture);
    parser.end();
    while let Some(p) = parser.next_payload() {
        translator.push(p, &mut out).unwrap();
    }
    out
}

/// The same reply as an Anthropic event stream; returns the bytes and the
/// number of events.
fn to_anthropic(fixture: &[u8]) -> (Vec<u8>, usize) {
    let mut events: Vec<Value> = Vec::new();
    let mut open: Option<u32> = None;
    let mut tool_started = false;
    let chunks = deepseek_chunks(fixture);
    let usage = chunks.iter().find_map(|c| match c {
        StreamChunk::Usage { usage } => Some(*usage),
        _ => None,
    });
    let usage = usage.unwrap_or_default();
    events.push(json!({"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":usage.input_tokens,"cache_creation_input_tokens":0,"cache_read_input_tokens":usage.cache_read_tokens.unwrap_or(0),"output_tokens":1}}}));
    let close = |events: &mut Vec<Value>, open: &mut Option<u32>, thinking: bool| {
        if let Some(i) = open.take() {
            if thinking {
                events.push(json!({"type":"content_block_delta","index":i,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}));
            }
            events.push(json!({"type":"content_block_stop","index":i}));
        }
    };
    let mut thinking = false;
    for c in &chunks {
        match c {
            StreamChunk::BlockStart { index, block_type } => {
                close(&mut events, &mut open, thinking);
                thinking = block_type == "reasoning";
                open = Some(*index);
                match block_type.as_str() {
                    "reasoning" => events.push(json!({"type":"content_block_start","index":index,"content_block":{"type":"thinking","thinking":""}})),
                    "text" => events.push(json!({"type":"content_block_start","index":index,"content_block":{"type":"text","text":""}})),
                    _ => tool_started = false,
                }
            }
            StreamChunk::ReasoningDelta { index, text } => events.push(json!({"type":"content_block_delta","index":index,"delta":{"type":"thinking_delta","thinking":text}})),
            StreamChunk::TextDelta { index, text } => events.push(json!({"type":"content_block_delta","index":index,"delta":{"type":"text_delta","text":text}})),
            StreamChunk::ToolCallDelta { index, id, name, arguments_delta } => {
                if !tool_started {
                    tool_started = true;
                    events.push(json!({"type":"content_block_start","index":index,"content_block":{"type":"tool_use","id":id,"name":name,"input":{}}}));
                }
                if !arguments_delta.is_empty() {
                    events.push(json!({"type":"content_block_delta","index":index,"delta":{"type":"input_json_delta","partial_json":arguments_delta}}));
                }
            }
            StreamChunk::BlockEnd { .. } | StreamChunk::Usage { .. } => {}
            StreamChunk::Finish { reason } => {
                close(&mut events, &mut open, thinking);
                let stop = match reason {
                    FinishReason::ToolCalls => "tool_use",
                    FinishReason::MaxTokens => "max_tokens",
                    _ => "end_turn",
                };
                events.push(json!({"type":"message_delta","delta":{"stop_reason":stop,"stop_sequence":null},"usage":{"output_tokens":usage.output_tokens}}));
                events.push(json!({"type":"message_stop"}));
            }
        }
    }
    let mut out = String::new();
    for e in &events {
        out.push_str("event: ");
        out.push_str(e["type"].as_str().unwrap());
        out.push_str("\ndata: ");
        out.push_str(&e.to_string());
        out.push_str("\n\n");
    }
    (out.into_bytes(), events.len())
}

/// Parses, translates and assembles `pieces` with one dialect's translator;
/// returns the number of chunks.
fn run<T>(
    pieces: &[&[u8]],
    mut translator: T,
    push: impl Fn(&mut T, &str, &mut Vec<StreamChunk>) -> Result<(), LlmError>,
) -> usize {
    let mut parser = SseParser::new();
    let mut chunks = Vec::with_capacity(64);
    let mut asm = BlockAssembler::new();
    let mut count = 0usize;
    let mut feed = |parser: &mut SseParser, translator: &mut T| {
        while let Some(payload) = parser.next_payload() {
            push(translator, payload, &mut chunks).expect("valid stream");
            count += chunks.len();
            for c in chunks.drain(..) {
                asm.push(&c);
            }
        }
    };
    for piece in pieces {
        parser.push(piece);
        feed(&mut parser, &mut translator);
    }
    parser.end();
    feed(&mut parser, &mut translator);
    let result = asm.into_result().expect("assembles");
    assert_eq!(result.message.content.len(), 3);
    count
}

fn bench(c: &mut Criterion) {
    let fixture = std::fs::read(dsh_benches::SSE_FIXTURE).unwrap_or_else(|e| {
        panic!(
            "cannot read the SSE fixture {}: {e}",
            dsh_benches::SSE_FIXTURE
        )
    });
    let (anthropic, anthropic_events) = to_anthropic(&fixture);
    let deepseek_events = fixture.windows(2).filter(|w| w == b"\n\n").count();
    // The two streams carry the same reply.
    let deepseek_pieces = pieces(&fixture);
    let anthropic_pieces = pieces(&anthropic);
    let ds = run(
        &deepseek_pieces,
        dsh_llm_deepseek::Translator::new(),
        dsh_llm_deepseek::Translator::push,
    );
    let an = run(
        &anthropic_pieces,
        dsh_llm_anthropic::Translator::new(),
        dsh_llm_anthropic::Translator::push,
    );
    eprintln!(
        "deepseek: {deepseek_events} events, {} bytes, {ds} chunks; anthropic: {anthropic_events} events, {} bytes, {an} chunks",
        fixture.len(),
        anthropic.len()
    );
    let mut g = c.benchmark_group("anthropic");
    // Per reply: both streams are the same 2,000-delta reply.
    g.throughput(Throughput::Elements(deepseek_events as u64));
    g.bench_function("parse+translate+assemble/deepseek_fixture_2000", |b| {
        b.iter(|| {
            run(
                &deepseek_pieces,
                dsh_llm_deepseek::Translator::new(),
                dsh_llm_deepseek::Translator::push,
            )
        })
    });
    g.bench_function("parse+translate+assemble/anthropic_fixture_2000", |b| {
        b.iter(|| {
            run(
                &anthropic_pieces,
                dsh_llm_anthropic::Translator::new(),
                dsh_llm_anthropic::Translator::push,
            )
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
