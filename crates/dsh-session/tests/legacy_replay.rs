//! Logs written by earlier versions replay to the history they always
//! did. Until issue 33 (item 5) a summary message carried the `seq` of its
//! `compaction/summary` event, so the compactor's next range started there
//! (`fromSeq` 170, `toSeq` 166) and was resolved by a binary search over an
//! unsorted list. The [`Deriver`](dsh_session::Deriver) now gives a summary
//! the position of its range, and resolves such events by the old rule:
//! this property test writes logs the way the old compactor did (ranges
//! from the first message's `seq`, prunes of tool results) and compares
//! the derivation with the old algorithm, copied here verbatim.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

use dsh_llm::{ContentBlock, Message, MessageSource, Role};
use dsh_protocol::ToolResult;
use dsh_session::{
    derive_message, derive_messages, prune_text, summary_message, AssistantMessageEvent,
    CompactionEvent, EventPayload, MessageEvent, PruneEvent, SessionEvent, ToolResultEvent,
};
use proptest::prelude::*;

/// The derivation of the versions before the fix, verbatim: the `seq` of
/// each message, a summary's being its event's.
#[derive(Default)]
struct OldDeriver {
    history: Vec<Message>,
    seqs: Vec<u64>,
}

impl OldDeriver {
    fn apply(&mut self, event: &SessionEvent) {
        match &event.data {
            EventPayload::Compaction(c) => self.compact(event.seq, c),
            EventPayload::Prune(p) => self.prune(p),
            data => {
                if let Some(message) = derive_message(data) {
                    self.history.push(message);
                    self.seqs.push(event.seq);
                }
            }
        }
    }

    fn compact(&mut self, seq: u64, c: &CompactionEvent) {
        let from = self.seqs.partition_point(|s| *s < c.from_seq);
        let to = self.seqs.partition_point(|s| *s <= c.to_seq);
        if from > to || to > self.history.len() {
            return;
        }
        self.history.splice(from..to, [summary_message(&c.summary)]);
        self.seqs.splice(from..to, [seq]);
    }

    fn prune(&mut self, p: &PruneEvent) {
        let positions: Vec<usize> = p
            .seqs
            .iter()
            .filter_map(|seq| self.seqs.binary_search(seq).ok())
            .collect();
        for i in positions {
            let m = &self.history[i];
            let pruned = Message {
                content: m
                    .content
                    .iter()
                    .map(|b| prune_block(b, p.head_chars, p.tail_chars))
                    .collect(),
                role: m.role,
            };
            self.history[i] = pruned;
        }
    }
}

fn prune_block(block: &ContentBlock, head: usize, tail: usize) -> ContentBlock {
    match block {
        ContentBlock::ToolResult(r) => {
            let mut r = r.clone();
            r.content = r
                .content
                .iter()
                .map(|b| prune_block(b, head, tail))
                .collect();
            ContentBlock::ToolResult(r)
        }
        ContentBlock::Text(t) => ContentBlock::text(prune_text(&t.text, head, tail)),
        other => other.clone(),
    }
}

#[derive(Debug, Clone)]
enum Op {
    User(usize),
    Assistant(usize),
    Result(usize),
    /// The old compactor: messages `[..cut]`, `cut` = 1 + this modulo the
    /// history's length, named by the first and last replaced `seq`.
    Compact(usize),
    /// The old prune: these tool results (indexes among them, modulo).
    Prune(Vec<usize>),
}

fn any_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1usize..50).prop_map(Op::User),
        3 => (1usize..50).prop_map(Op::Assistant),
        3 => (1usize..300).prop_map(Op::Result),
        2 => any::<usize>().prop_map(Op::Compact),
        1 => prop::collection::vec(any::<usize>(), 1..4).prop_map(Op::Prune),
    ]
}

/// The event an earlier version logged for `op`, given its derivation so
/// far (`None` when it logged nothing).
fn old_event(op: &Op, old: &OldDeriver, n: usize) -> Option<EventPayload> {
    Some(match op {
        Op::User(len) => EventPayload::UserMessage(MessageEvent {
            content: vec![ContentBlock::text("u".repeat(*len))],
            source: MessageSource::User,
        }),
        Op::Assistant(len) => EventPayload::AssistantMessage(AssistantMessageEvent {
            turn: 1,
            step: 1,
            content: vec![ContentBlock::text("a".repeat(*len))],
        }),
        Op::Result(len) => EventPayload::ToolResult(ToolResultEvent {
            turn: 1,
            step: 1,
            result: ToolResult::success(
                format!("c{n}"),
                vec![ContentBlock::text("r".repeat(*len))],
            ),
        }),
        Op::Compact(k) => {
            if old.seqs.is_empty() {
                return None;
            }
            let cut = 1 + k % old.seqs.len();
            EventPayload::Compaction(CompactionEvent {
                from_seq: old.seqs[0],
                to_seq: old.seqs[cut - 1],
                summary: format!("summary {n}"),
                tokens_after: 1,
            })
        }
        Op::Prune(picks) => {
            let results: Vec<u64> = old
                .history
                .iter()
                .zip(&old.seqs)
                .filter(|(m, _)| {
                    m.role == Role::User
                        && matches!(m.content.first(), Some(ContentBlock::ToolResult(_)))
                })
                .map(|(_, s)| *s)
                .collect();
            if results.is_empty() {
                return None;
            }
            let mut seqs: Vec<u64> = picks.iter().map(|i| results[i % results.len()]).collect();
            seqs.sort_unstable();
            seqs.dedup();
            EventPayload::Prune(PruneEvent {
                seqs,
                head_chars: 20,
                tail_chars: 5,
                tokens_after: 1,
            })
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn logs_of_earlier_versions_derive_the_history_they_did(
        ops in prop::collection::vec(any_op(), 1..60)
    ) {
        let mut old = OldDeriver::default();
        let mut events: Vec<SessionEvent> = Vec::new();
        for (n, op) in ops.iter().enumerate() {
            let Some(data) = old_event(op, &old, n) else { continue };
            let event = SessionEvent { seq: events.len() as u64, time: 0, data };
            old.apply(&event);
            events.push(event);
            prop_assert_eq!(
                derive_messages(&events),
                old.history.clone(),
                "after {:?} (event {})", op, events.len() - 1
            );
        }
    }
}

/// The issue's shape: a second compaction whose range is inverted (it
/// starts at the first summary's event) replaced nothing and replays so.
#[test]
fn an_inverted_range_an_earlier_version_logged_replays_as_it_did() {
    let text = |t: &str| {
        EventPayload::UserMessage(MessageEvent {
            content: vec![ContentBlock::text(t)],
            source: MessageSource::User,
        })
    };
    let mut data = vec![text("m0"), text("m1"), text("m2"), text("m3")];
    // seq 4: the first compaction replaces m0..m1.
    data.push(EventPayload::Compaction(CompactionEvent {
        from_seq: 0,
        to_seq: 1,
        summary: "first".into(),
        tokens_after: 1,
    }));
    data.push(text("m5"));
    // seq 6: the old compactor's second range, from the summary's seq (4)
    // to m2's (2).
    data.push(EventPayload::Compaction(CompactionEvent {
        from_seq: 4,
        to_seq: 2,
        summary: "second".into(),
        tokens_after: 1,
    }));
    let events: Vec<SessionEvent> = data
        .into_iter()
        .enumerate()
        .map(|(i, data)| SessionEvent {
            seq: i as u64,
            time: 0,
            data,
        })
        .collect();
    let mut old = OldDeriver::default();
    for e in &events {
        old.apply(e);
    }
    assert_eq!(derive_messages(&events), old.history);
}
