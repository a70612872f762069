//! Event log → model history, the reference's `deriveMessages` rules.

use dsh_llm::{ContentBlock, Message, MessageSource, Role};
use dsh_protocol::{EventPayload, MessageEvent, SessionEvent, SteeringEvent};

/// The message one event contributes to the model history, if any.
///
/// `user/message` → user; `assistant/message` → assistant; `tool/result` →
/// a user message holding one `tool-result` block (`isError` always set);
/// `context/message` and `steering/message` → a user message wrapped in
/// [`envelope`]. Every other kind (boundaries, chunks, calls, usage, errors,
/// plugin kinds) contributes nothing.
pub fn derive_message(data: &EventPayload) -> Option<Message> {
    match data {
        EventPayload::UserMessage(m) => Some(Message {
            role: Role::User,
            content: m.content.clone(),
        }),
        EventPayload::AssistantMessage(m) => Some(Message {
            role: Role::Assistant,
            content: m.content.clone(),
        }),
        EventPayload::ToolResult(r) => Some(Message {
            role: Role::User,
            content: vec![r.result.to_block()],
        }),
        EventPayload::ContextMessage(MessageEvent { content, source }) => Some(Message {
            role: Role::User,
            content: envelope("context", content, source),
        }),
        EventPayload::SteeringMessage(SteeringEvent {
            content, source, ..
        }) => Some(Message {
            role: Role::User,
            content: envelope("steering", content, source),
        }),
        EventPayload::TurnStart(_)
        | EventPayload::TurnEnd(_)
        | EventPayload::StepStart(_)
        | EventPayload::StepEnd(_)
        | EventPayload::AssistantChunk(_)
        | EventPayload::ToolCall(_)
        | EventPayload::Usage(_)
        | EventPayload::Error(_)
        | EventPayload::Other { .. } => None,
    }
}

/// The model history of a log: [`derive_message`] of every event, in log
/// order, with no merging or reordering. This is the pure reference
/// algorithm (O(n)); a live [`Session`](crate::Session) keeps the same result
/// incrementally.
pub fn derive_messages(events: &[SessionEvent]) -> Vec<Message> {
    events
        .iter()
        .filter_map(|e| derive_message(&e.data))
        .collect()
}

/// Wraps `content` in the reference's tagged envelope:
/// `[text "<tag source=Q>", …content…, text "</tag>"]` where `Q` is
/// `source.kind` as a JSON string (quotes and escapes included). Only the
/// kind is rendered; no whitespace is added between the parts.
pub fn envelope(tag: &str, content: &[ContentBlock], source: &MessageSource) -> Vec<ContentBlock> {
    let quoted = json_string(source.kind());
    let mut out = Vec::with_capacity(content.len() + 2);
    out.push(ContentBlock::text(format!("<{tag} source={quoted}>")));
    out.extend(content.iter().cloned());
    out.push(ContentBlock::text(format!("</{tag}>")));
    out
}

/// `text` as a JSON string literal (quotes and escapes included).
fn json_string(text: &str) -> String {
    // Serializing a `str` cannot fail; `Value`'s Display is the same literal.
    serde_json::Value::from(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_escapes_the_kind_as_json() {
        let src = MessageSource::Other {
            kind: "we\"ird\\".into(),
            data: Default::default(),
        };
        let blocks = envelope("context", &[], &src);
        assert_eq!(blocks[0].as_text(), Some(r#"<context source="we\"ird\\">"#));
        assert_eq!(blocks[1].as_text(), Some("</context>"));
    }
}
