//! Making a stored log resumable: tool calls left without a result by a
//! crash get a synthesized `INTERRUPTED` result, so the next request is
//! valid (every tool call answered), and a turn the crash left open is
//! closed (`step/end`, then `turn/end` with reason `interrupted`). The
//! repair is new events appended after the log; old lines are never
//! rewritten.

use dsh_llm::ContentBlock;
use dsh_protocol::{
    codes, EventPayload, SessionEvent, StepEvent, ToolFailure, ToolResult, ToolResultEvent,
    TurnEndEvent, TurnEndReason,
};

/// Everything a log needs appended before a turn can follow it, in order:
/// the [`interrupted_results`], then, when the last `turn/start` has no
/// `turn/end`, a `step/end` for its last step if that has none, and a
/// `turn/end` with [`TurnEndReason::Interrupted`]. Empty for a log whose
/// last turn ended (the usual case). Appending the result and calling this
/// again yields nothing (the repair is idempotent).
pub fn repair_unfinished(events: &[SessionEvent]) -> Vec<EventPayload> {
    let mut repair = interrupted_results(events);
    let mut open_turn = None;
    let mut open_step = None;
    for e in events {
        match &e.data {
            EventPayload::TurnStart(t) => {
                open_turn = Some(t.turn);
                open_step = None;
            }
            EventPayload::TurnEnd(_) => {
                open_turn = None;
                open_step = None;
            }
            EventPayload::StepStart(s) => open_step = Some(*s),
            EventPayload::StepEnd(_) => open_step = None,
            _ => {}
        }
    }
    if let Some(turn) = open_turn {
        if let Some(step) = open_step {
            repair.push(EventPayload::StepEnd(StepEvent {
                turn: step.turn,
                step: step.step,
            }));
        }
        repair.push(EventPayload::TurnEnd(TurnEndEvent {
            turn,
            reason: TurnEndReason::Interrupted,
        }));
    }
    repair
}

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

/// The seed of a session forked from `events`: `first` (the link to the
/// parent, a log-only event) as event 0, then every event of `events`
/// one place later (the sequence numbers that compaction events name are
/// (and rewinds) are shifted with them, so replay derives the same history), then the
/// [`repair_unfinished`] events that close what the copy left open (an
/// unanswered call, the parent's running turn). Times are kept; the repair
/// and the link get `now`.
pub fn fork_seed(events: &[SessionEvent], first: EventPayload, now: u64) -> Vec<SessionEvent> {
    let mut seed = Vec::with_capacity(events.len() + 3);
    seed.push(SessionEvent {
        seq: 0,
        time: now,
        data: first,
    });
    for (i, e) in events.iter().enumerate() {
        let mut data = e.data.clone();
        match &mut data {
            EventPayload::Compaction(c) => {
                c.from_seq += 1;
                c.to_seq += 1;
            }
            EventPayload::Prune(p) => {
                for s in &mut p.seqs {
                    *s += 1;
                }
            }
            EventPayload::Rewind(r) => r.from_seq += 1,
            _ => {}
        }
        seed.push(SessionEvent {
            seq: i as u64 + 1,
            time: e.time,
            data,
        });
    }
    for data in repair_unfinished(&seed) {
        let seq = seed.len() as u64;
        seed.push(SessionEvent {
            seq,
            time: now,
            data,
        });
    }
    seed
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

    fn turn_start(turn: u64) -> EventPayload {
        EventPayload::TurnStart(dsh_protocol::TurnStartEvent {
            turn,
            trigger: dsh_protocol::TurnTrigger::Message {
                source: dsh_protocol::MessageSource::User,
            },
        })
    }

    fn seq(data: Vec<EventPayload>) -> Vec<SessionEvent> {
        data.into_iter()
            .enumerate()
            .map(|(i, d)| event(i as u64, d))
            .collect()
    }

    #[test]
    fn an_open_turn_is_closed_after_its_results_and_only_once() {
        let mut log = seq(vec![
            turn_start(2),
            EventPayload::StepStart(StepEvent { turn: 2, step: 3 }),
            assistant(&["a", "b"]),
            result("a"),
        ]);
        let repair = repair_unfinished(&log);
        let kinds: Vec<&str> = repair.iter().map(EventPayload::kind).collect();
        assert_eq!(kinds, ["tool/result", "step/end", "turn/end"]);
        assert!(matches!(
            &repair[1],
            EventPayload::StepEnd(StepEvent { turn: 2, step: 3 })
        ));
        assert!(matches!(
            &repair[2],
            EventPayload::TurnEnd(TurnEndEvent {
                turn: 2,
                reason: TurnEndReason::Interrupted
            })
        ));
        let n = log.len() as u64;
        log.extend(
            repair
                .into_iter()
                .enumerate()
                .map(|(i, d)| event(n + i as u64, d)),
        );
        assert!(repair_unfinished(&log).is_empty(), "idempotent");
    }

    #[test]
    fn a_turn_that_died_between_steps_gets_only_its_end() {
        let log = seq(vec![
            turn_start(1),
            EventPayload::StepStart(StepEvent { turn: 1, step: 1 }),
            EventPayload::StepEnd(StepEvent { turn: 1, step: 1 }),
        ]);
        let repair = repair_unfinished(&log);
        let kinds: Vec<&str> = repair.iter().map(EventPayload::kind).collect();
        assert_eq!(kinds, ["turn/end"]);
        let ended = seq(vec![
            turn_start(1),
            EventPayload::TurnEnd(TurnEndEvent {
                turn: 1,
                reason: TurnEndReason::Completed,
            }),
        ]);
        assert!(repair_unfinished(&ended).is_empty());
    }
}
