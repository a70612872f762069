//! Making a stored log resumable: tool calls left without a result by a
//! crash get a synthesized `INTERRUPTED` result, so the next request is
//! valid (every tool call answered).

use dsh_llm::ContentBlock;
use dsh_protocol::{codes, EventPayload, SessionEvent, ToolFailure, ToolResult, ToolResultEvent};

/// The message of a synthesized result.
const INTERRUPTED_MESSAGE: &str =
    "the session ended before this tool call returned a result; it may or may not have run. Check its effects before repeating it.";

/// The `tool/result` payloads (code `INTERRUPTED`, in call order) that
/// answer the tool calls of the log's last `assistant/message` that have
/// no `tool/result` after it. Empty when every call is answered (the usual
/// case, including logs of turns aborted by Ctrl-C, which are answered
/// with `ABORTED`). Append them, in order, after the log's events.
pub fn interrupted_results(events: &[SessionEvent]) -> Vec<EventPayload> {
    let Some((at, turn, step, content)) =
        events
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, e)| match &e.data {
                EventPayload::AssistantMessage(m) => Some((i, m.turn, m.step, &m.content)),
                _ => None,
            })
    else {
        return Vec::new();
    };
    let answered: Vec<&str> = events[at + 1..]
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::ToolResult(r) => Some(r.result.call_id.as_str()),
            _ => None,
        })
        .collect();
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolCall(call) if !answered.contains(&call.call_id.as_str()) => {
                Some(EventPayload::ToolResult(ToolResultEvent {
                    turn,
                    step,
                    result: ToolResult {
                        call_id: call.call_id.clone(),
                        content: vec![ContentBlock::text(format!("Error: {INTERRUPTED_MESSAGE}"))],
                        is_error: true,
                        failure: Some(ToolFailure {
                            code: codes::INTERRUPTED.to_string(),
                            message: INTERRUPTED_MESSAGE.to_string(),
                            violations: Vec::new(),
                        }),
                    },
                }))
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::{AssistantMessageEvent, ToolCall};

    fn event(seq: u64, data: EventPayload) -> SessionEvent {
        SessionEvent { seq, time: 0, data }
    }

    fn assistant(calls: &[&str]) -> EventPayload {
        EventPayload::AssistantMessage(AssistantMessageEvent {
            turn: 2,
            step: 3,
            content: calls
                .iter()
                .map(|id| ContentBlock::ToolCall(ToolCall::new(*id, "bash", "{}")))
                .collect(),
        })
    }

    fn result(id: &str) -> EventPayload {
        EventPayload::ToolResult(ToolResultEvent {
            turn: 2,
            step: 3,
            result: ToolResult::success(id, vec![ContentBlock::text("ok")]),
        })
    }

    #[test]
    fn only_the_unanswered_calls_of_the_last_reply_get_a_result() {
        let log = vec![
            event(0, assistant(&["old"])),
            event(1, assistant(&["a", "b", "c"])),
            event(2, result("b")),
        ];
        let got = interrupted_results(&log);
        let ids: Vec<_> = got
            .iter()
            .map(|p| match p {
                EventPayload::ToolResult(r) => {
                    assert_eq!((r.turn, r.step), (2, 3));
                    assert!(r.result.is_error);
                    assert_eq!(r.result.code(), Some("INTERRUPTED"));
                    assert!(r.result.text().starts_with("Error: the session ended"));
                    r.result.call_id.as_str().to_string()
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(ids, ["a", "c"], "the earlier reply is not reopened");
    }

    #[test]
    fn an_answered_or_empty_log_needs_nothing() {
        assert!(interrupted_results(&[]).is_empty());
        let log = vec![event(0, assistant(&["a"])), event(1, result("a"))];
        assert!(interrupted_results(&log).is_empty());
        let text_only = vec![event(0, assistant(&[]))];
        assert!(interrupted_results(&text_only).is_empty());
    }
}
