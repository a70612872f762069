//! The order a chat-completions adapter sends a history in: tool answers
//! directly after the assistant message that called them.

use std::sync::Arc;

use crate::types::{CallId, ContentBlock, Message, Role};

/// The order to send `messages` in: the log's order, except that a message
/// holding only tool results for an assistant message's calls moves up to
/// directly after that assistant message, ahead of separate messages logged
/// in between.
///
/// Chat-completions APIs require the answers to follow their calls
/// immediately, but a
/// context injection (a background task's completion notice) can land in
/// the log while a call is still running. The reference sent such histories
/// as they were and got HTTP 400; here the in-between messages keep their
/// relative order and follow the answers. Histories without such an
/// interleaving keep their order exactly, and a single message mixing text
/// and tool results keeps the reference mapping (text first).
pub fn answers_first_order(messages: &[Arc<Message>]) -> Vec<usize> {
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
                let calls: Vec<CallId> = messages[i].content.iter().filter_map(|b| match b {
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
