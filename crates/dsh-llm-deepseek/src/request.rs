//! Request serialization (fact sheet c.3–c.6): `ModelRequest` → the JSON
//! body of `POST /chat/completions`, keys in the reference's order.

use dsh_llm::{CallId, ContentBlock, LlmError, LlmErrorKind, Message, ModelRequest, Role};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::config::DeepSeekConfig;

/// The `UNSUPPORTED` message for requests with `prefill`.
pub const PREFILL_UNSUPPORTED: &str =
    "prefill is not supported by the DeepSeek adapter (Beta chat-prefix completion is future work)";

/// Builds the request body as a JSON value (keys in emitted order): the
/// bytes of [`request_bytes`] read back, for inspection and tests.
///
/// # Errors
/// As [`request_bytes`].
pub fn request_body(options: &ModelRequest, config: &DeepSeekConfig) -> Result<Value, LlmError> {
    let bytes = request_bytes(options, config)?;
    serde_json::from_slice(&bytes).map_err(|e| serialize_error(&e))
}

/// The body of `POST /chat/completions` as sent: `model`, `messages`,
/// `stream`, `stream_options`, then `thinking`, `reasoning_effort`, `tools`,
/// `temperature`, `max_tokens`, `stop` when set. The tools are the set's
/// pre-serialized wire form ([`ToolSet::wire_json`](dsh_llm::ToolSet::wire_json)),
/// copied as bytes: no schema is cloned or re-serialized per request.
///
/// # Errors
/// `UNSUPPORTED` when `options.prefill` is present (even empty).
pub fn request_bytes(options: &ModelRequest, config: &DeepSeekConfig) -> Result<Vec<u8>, LlmError> {
    if options.prefill.is_some() {
        return Err(LlmError::new(
            LlmErrorKind::Unsupported,
            PREFILL_UNSUPPORTED,
        ));
    }
    #[derive(Serialize)]
    struct StreamOptions {
        include_usage: bool,
    }
    #[derive(Serialize)]
    struct ThinkingWire {
        #[serde(rename = "type")]
        kind: &'static str,
    }
    #[derive(Serialize)]
    struct Body<'a> {
        model: &'a str,
        messages: Vec<Value>,
        stream: bool,
        stream_options: StreamOptions,
        #[serde(skip_serializing_if = "Option::is_none")]
        thinking: Option<ThinkingWire>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_effort: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tools: Option<&'a RawValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        temperature: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_tokens: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        stop: Option<&'a [String]>,
    }
    let body = Body {
        model: &options.model,
        messages: wire_messages(options),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        thinking: config.thinking.map(|t| ThinkingWire { kind: t.as_str() }),
        reasoning_effort: config.reasoning_effort.map(|e| e.as_str()),
        tools: options
            .tools
            .as_ref()
            .filter(|t| !t.is_empty())
            .map(|t| t.wire_json()),
        // A non-finite temperature has no JSON form; `null` is what the
        // reference's JSON.stringify sends.
        temperature: options
            .temperature
            .map(|t| serde_json::Number::from_f64(t).map_or(Value::Null, Value::Number)),
        max_tokens: options.max_tokens,
        stop: options.stop.as_deref(),
    };
    serde_json::to_vec(&body).map_err(|e| serialize_error(&e))
}

/// `INVALID_REQUEST` for a body that does not serialize.
fn serialize_error(e: &serde_json::Error) -> LlmError {
    LlmError::new(
        LlmErrorKind::InvalidRequest,
        format!("llm-deepseek: cannot serialize the request: {e}"),
    )
}

/// The `messages` array (fact sheet c.4/c.5).
pub fn wire_messages(options: &ModelRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(options.messages.len() + 1);
    if let Some(system) = &options.system {
        out.push(role_content("system", Value::from(system.as_str())));
    }
    options.messages.with(|messages| {
        for i in answers_first_order(messages) {
            push_message(&messages[i], &mut out);
        }
    });
    out
}

/// The order to send `messages` in: the log's order, except that a message
/// holding only tool results for an assistant message's calls moves up to
/// directly after that assistant message, ahead of separate messages logged
/// in between.
///
/// The API requires the answers to follow their calls immediately, but a
/// context injection (a background task's completion notice) can land in
/// the log while a call is still running. The reference sent such histories
/// as they were and got HTTP 400; here the in-between messages keep their
/// relative order and follow the answers. Histories without such an
/// interleaving keep their order exactly, and a single message mixing text
/// and tool results keeps the reference mapping (text first).
fn answers_first_order(messages: &[std::sync::Arc<Message>]) -> Vec<usize> {
    let results_only = |m: &Message| {
        m.role == Role::User
            && !m.content.is_empty()
            && m.content
                .iter()
                .all(|b| matches!(b, ContentBlock::ToolResult(_)))
    };
    let answered_ids = |m: &Message| -> Vec<CallId> {
        m.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult(r) => Some(r.tool_call_id.clone()),
                _ => None,
            })
            .collect()
    };
    let mut order = Vec::with_capacity(messages.len());
    let mut i = 0;
    while i < messages.len() {
        order.push(i);
        let mut pending: Vec<CallId> = if messages[i].role == Role::Assistant {
            messages[i]
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolCall(c) => Some(c.call_id.clone()),
                    _ => None,
                })
                .collect()
        } else {
            Vec::new()
        };
        i += 1;
        if pending.is_empty() {
            continue;
        }
        let (mut answers, mut between) = (Vec::new(), Vec::new());
        let mut k = i;
        while k < messages.len() && !pending.is_empty() && messages[k].role != Role::Assistant {
            let ids = answered_ids(&messages[k]);
            let answers_pending = ids.iter().any(|id| pending.contains(id));
            pending.retain(|p| !ids.contains(p));
            if results_only(&messages[k]) && answers_pending {
                answers.push(k);
            } else {
                between.push(k);
            }
            k += 1;
        }
        // Only an interleaving changes the order; otherwise keep the log's.
        if between
            .first()
            .zip(answers.last())
            .is_some_and(|(b, a)| b < a)
        {
            order.extend(answers.iter().chain(between.iter()));
        } else {
            order.extend(i..k);
        }
        i = k;
    }
    order
}

fn push_message(m: &Message, out: &mut Vec<Value>) {
    warn_images(&m.content);
    match m.role {
        Role::System => out.push(role_content("system", Value::from(flatten(&m.content)))),
        Role::User => {
            let text = flatten(&m.content);
            let results: Vec<_> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolResult(r) => Some(r),
                    _ => None,
                })
                .collect();
            if !text.is_empty() || results.is_empty() {
                out.push(role_content("user", Value::from(text)));
            }
            for r in results {
                warn_images(&r.content);
                let mut content = flatten(&r.content);
                if content.is_empty() {
                    content.push_str("(no output)");
                }
                out.push(obj([
                    ("role", Value::from("tool")),
                    ("tool_call_id", Value::from(r.tool_call_id.as_str())),
                    ("content", Value::from(content)),
                ]));
            }
        }
        Role::Assistant => out.push(assistant_message(&m.content)),
    }
}

fn assistant_message(content: &[ContentBlock]) -> Value {
    let text = flatten(content);
    let reasoning: String = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Reasoning(r) => Some(r.text.as_str()),
            _ => None,
        })
        .collect();
    let calls: Vec<Value> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(obj([
                ("id", Value::from(c.call_id.as_str())),
                ("type", Value::from("function")),
                (
                    "function",
                    obj([
                        ("name", Value::from(c.name.as_str())),
                        ("arguments", Value::from(c.arguments.as_str())),
                    ]),
                ),
            ])),
            _ => None,
        })
        .collect();
    let mut m = Map::new();
    m.insert("role".into(), Value::from("assistant"));
    let content_value = if !text.is_empty() {
        Value::from(text)
    } else if !calls.is_empty() {
        Value::from("")
    } else {
        Value::Null
    };
    m.insert("content".into(), content_value);
    if !calls.is_empty() {
        // The reasoning pass-back rule: thinking mode requires the reasoning
        // of tool-call turns to be sent back; elsewhere it is dropped.
        if !reasoning.is_empty() {
            m.insert("reasoning_content".into(), Value::from(reasoning));
        }
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(m)
}

/// Concatenation of the text of every `text` block; other kinds are ignored.
fn flatten(blocks: &[ContentBlock]) -> String {
    let mut s = String::new();
    for b in blocks {
        if let ContentBlock::Text(t) = b {
            s.push_str(&t.text);
        }
    }
    s
}

fn warn_images(blocks: &[ContentBlock]) {
    let n = blocks
        .iter()
        .filter(|b| matches!(b, ContentBlock::Image(_)))
        .count();
    if n > 0 {
        tracing::warn!(
            images = n,
            "llm-deepseek: image blocks are not supported and were dropped from the request"
        );
    }
}

fn role_content(role: &str, content: Value) -> Value {
    obj([("role", Value::from(role)), ("content", content)])
}

fn obj<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

#[cfg(test)]
mod order_tests {
    use super::*;
    use proptest::prelude::*;

    /// A message kind for generated histories: user text, one tool result
    /// for call `n`, or an assistant message calling `n` tools.
    fn message(kind: u8, n: u8) -> Message {
        match kind % 3 {
            0 => Message::user_text("ctx"),
            1 => Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result(
                    format!("c{}", n % 4),
                    vec![],
                    false,
                )],
            },
            _ => Message::assistant(
                (0..n % 4)
                    .map(|i| ContentBlock::tool_call(format!("c{i}"), "t", "{}"))
                    .collect(),
            ),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn the_order_is_a_permutation_and_answers_follow_their_calls(
            spec in prop::collection::vec((0u8..3, 0u8..8), 0..24)
        ) {
            let messages: Vec<std::sync::Arc<Message>> =
                spec.iter().map(|(k, n)| std::sync::Arc::new(message(*k, *n))).collect();
            let order = answers_first_order(&messages);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..messages.len()).collect::<Vec<_>>());
            // After an assistant message whose calls are all answered by
            // result-only messages before the next assistant message, the
            // answers come first.
            for (pos, &i) in order.iter().enumerate() {
                let calls: Vec<dsh_llm::CallId> = messages[i].content.iter().filter_map(|b| match b {
                    ContentBlock::ToolCall(c) => Some(c.call_id.clone()),
                    _ => None,
                }).collect();
                if calls.is_empty() {
                    continue;
                }
                let next: Vec<usize> = order[pos + 1..]
                    .iter()
                    .copied()
                    .take_while(|&j| messages[j].role != Role::Assistant)
                    .collect();
                let answers_all = calls.iter().all(|c| next.iter().any(|&j| {
                    messages[j].content.iter().any(|b| matches!(b, ContentBlock::ToolResult(r) if &r.tool_call_id == c))
                }));
                let results_only = next.iter().all(|&j| messages[j].content.iter().all(|b| matches!(b, ContentBlock::ToolResult(_))) || messages[j].content.iter().all(|b| !matches!(b, ContentBlock::ToolResult(_))));
                if answers_all && results_only {
                    // Up to the first answer of the last call to be answered,
                    // every message is an answer.
                    let last = calls
                        .iter()
                        .filter_map(|c| next.iter().position(|&j| matches!(&messages[j].content[..], [ContentBlock::ToolResult(r)] if &r.tool_call_id == c)))
                        .max()
                        .unwrap_or(0);
                    for &j in &next[..=last] {
                        prop_assert!(matches!(&messages[j].content[..], [ContentBlock::ToolResult(_)]), "order {:?}", order);
                    }
                }
            }
        }
    }
}
