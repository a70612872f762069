//! Event log → model history, the reference's `deriveMessages` rules, plus
//! dsh's compaction: a `compaction/summary` replaces the messages of an
//! event range by one summary message, a `compaction/prune` cuts old tool
//! results (the [`Deriver`] applies both).

use std::sync::Arc;

use dsh_llm::{ContentBlock, History, Message, MessageSource, Role};
use dsh_protocol::{
    CompactionEvent, EventPayload, MessageEvent, PruneEvent, SessionEvent, SteeringEvent,
};

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
        | EventPayload::Compaction(_)
        | EventPayload::Prune(_)
        | EventPayload::Rewind(_)
        | EventPayload::Other { .. } => None,
    }
}

/// The user message a compaction puts in place of what it replaced.
pub fn summary_message(summary: &str) -> Message {
    Message {
        role: Role::User,
        content: vec![ContentBlock::text(format!(
            "<compacted-summary>\n{summary}\n</compacted-summary>"
        ))],
    }
}

/// The marker between the kept head and tail of a pruned text.
fn prune_marker(cut_chars: usize) -> String {
    format!(
        "\n… [{cut_chars} characters of this old tool result pruned; the session log keeps the full text] …\n"
    )
}

/// Where `text` is cut to keep `head` and `tail` characters: the byte
/// offsets of the head's end and the tail's start and the characters cut;
/// `None` when it is not longer than `head + tail`.
fn prune_points(text: &str, head: usize, tail: usize) -> Option<(usize, usize, usize)> {
    // The counts come from the log: never overflow on hostile values.
    let keep = head.saturating_add(tail);
    if text.len() <= keep {
        return None;
    }
    let total = text.chars().count();
    if total <= keep {
        return None;
    }
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    // Counted from the end: `tail` steps, not `total - tail`.
    let tail_start = match tail {
        0 => text.len(),
        n => text.char_indices().rev().nth(n - 1).map_or(0, |(i, _)| i),
    };
    Some((head_end, tail_start, total - keep))
}

/// `text` cut to its first `head` and last `tail` characters with a
/// marker saying how much was left out; unchanged when it is not longer
/// than `head + tail`.
pub fn prune_text(text: &str, head: usize, tail: usize) -> String {
    match prune_points(text, head, tail) {
        None => text.to_string(),
        Some((head_end, tail_start, cut)) => format!(
            "{}{}{}",
            &text[..head_end],
            prune_marker(cut),
            &text[tail_start..]
        ),
    }
}

/// The byte length of [`prune_text`]`(text, head, tail)`, without building it.
pub fn pruned_len(text: &str, head: usize, tail: usize) -> usize {
    match prune_points(text, head, tail) {
        None => text.len(),
        Some((head_end, tail_start, cut)) => {
            head_end + prune_marker(cut).len() + (text.len() - tail_start)
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

/// The model history of a log, kept incrementally: each event is applied
/// in log order. Plain message events append (O(1)); a compaction or a
/// prune rewrites the affected messages (O(history)).
///
/// Each message has a *position* ([`Deriver::seqs`]): the `seq` of the
/// event it came from, and for a summary the `fromSeq` of the range it
/// replaced (its place in the log, not the `seq` of the
/// `compaction/summary` event, which comes after the messages kept behind
/// it). Positions are strictly increasing, so compaction ranges and prune
/// targets, which name positions, are found by binary search, and a
/// second compaction's range (from the summary's position to a later
/// message) is in order.
///
/// Logs of earlier versions, whose summary message carried the
/// `compaction/summary` event's `seq`, replay to the history they always
/// did: a compaction whose `fromSeq` is the `seq` of a summary's own event
/// (only such versions wrote those) is resolved by their rule, and so is
/// every prune after it (see [`Deriver::apply`]).
#[derive(Clone, Default)]
pub struct Deriver {
    history: History,
    /// The position of each message of `history` (strictly increasing
    /// unless a legacy compaction was applied).
    positions: Vec<u64>,
    /// The `seq` earlier versions gave each message (a summary: its
    /// `compaction/summary` event's), only for resolving their events.
    legacy_seqs: Vec<u64>,
    /// Whether a compaction was resolved by the earlier versions' rule;
    /// prunes are then resolved by it too.
    legacy: bool,
}

impl Deriver {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty history with room for `n` messages.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            history: History::with_capacity(n),
            positions: Vec::with_capacity(n),
            legacy_seqs: Vec::with_capacity(n),
            legacy: false,
        }
    }

    /// Applies one event (events must come in log order). A
    /// `conversation/rewound` changes nothing here: it needs the log, which
    /// [`Deriver::replay`] has.
    ///
    /// A `compaction/summary` `{fromSeq, toSeq}` replaces the messages whose
    /// positions lie in `fromSeq..=toSeq` by one summary message at position
    /// `fromSeq`; a range that holds no message inserts the summary there,
    /// and an inverted one (`fromSeq > toSeq`) changes nothing. A
    /// `compaction/prune` cuts the messages at the positions it names;
    /// positions that hold no message are skipped.
    ///
    /// Events written by earlier versions after a first compaction (their
    /// `fromSeq` is the `seq` of a summary's event) are resolved as those
    /// versions did: over the event `seq`s, summary included, with a binary
    /// search that assumed them sorted. Replaying such a log gives the
    /// history it gave when it was written.
    pub fn apply(&mut self, event: &SessionEvent) {
        match &event.data {
            EventPayload::Compaction(c) => {
                if self.names_a_summary_event(c.from_seq) {
                    self.legacy = true;
                    self.compact_legacy(event.seq, c);
                } else {
                    self.compact(event.seq, c);
                }
            }
            EventPayload::Prune(p) => self.prune(p),
            data => {
                if let Some(message) = derive_message(data) {
                    self.history.push(message);
                    self.positions.push(event.seq);
                    self.legacy_seqs.push(event.seq);
                }
            }
        }
    }

    /// The history so far (an O(1) snapshot).
    pub fn history(&self) -> History {
        self.history.clone()
    }

    /// The position of each message, in history order: the `seq` of the
    /// event it came from, for a summary the `fromSeq` of the range it
    /// replaced. Strictly increasing (except after a compaction resolved by
    /// the earlier versions' rule, see [`Deriver::apply`]); compaction
    /// ranges and prunes name these.
    pub fn seqs(&self) -> &[u64] {
        &self.positions
    }

    /// Whether `seq` is the `compaction/summary` event of a summary message
    /// in the history: only earlier versions named one in a range.
    fn names_a_summary_event(&self, seq: u64) -> bool {
        self.legacy_seqs
            .iter()
            .zip(&self.positions)
            .any(|(legacy, position)| *legacy == seq && legacy != position)
    }

    /// Replaces `history[from..to]` by the summary of `c`, logged as `seq`,
    /// at `position`.
    fn splice(&mut self, from: usize, to: usize, seq: u64, position: u64, c: &CompactionEvent) {
        // Pointers copied, messages shared with earlier snapshots.
        let mut messages = self.history.shared_messages();
        messages.splice(from..to, [Arc::new(summary_message(&c.summary))]);
        self.positions.splice(from..to, [position]);
        self.legacy_seqs.splice(from..to, [seq]);
        self.history = History::from_shared(messages);
    }

    fn compact(&mut self, seq: u64, c: &CompactionEvent) {
        if c.from_seq > c.to_seq {
            return;
        }
        let from = self.positions.partition_point(|s| *s < c.from_seq);
        let to = self.positions.partition_point(|s| *s <= c.to_seq);
        if from > to || to > self.history.len() {
            return;
        }
        self.splice(from, to, seq, c.from_seq, c);
    }

    /// The earlier versions' rule, kept byte for byte so their logs replay
    /// unchanged: the range is looked up in the event `seq`s (a summary's
    /// being its event's, so the list may be unsorted).
    fn compact_legacy(&mut self, seq: u64, c: &CompactionEvent) {
        let from = self.legacy_seqs.partition_point(|s| *s < c.from_seq);
        let to = self.legacy_seqs.partition_point(|s| *s <= c.to_seq);
        if from > to || to > self.history.len() {
            return;
        }
        let position = self.positions.get(from).copied().unwrap_or(c.from_seq);
        self.splice(from, to, seq, position, c);
    }

    fn prune(&mut self, p: &PruneEvent) {
        let lookup = if self.legacy {
            &self.legacy_seqs
        } else {
            &self.positions
        };
        let positions: Vec<usize> = p
            .seqs
            .iter()
            .filter_map(|seq| lookup.binary_search(seq).ok())
            .collect();
        if positions.is_empty() {
            return;
        }
        // Only the pruned messages are new; the rest are shared.
        self.history = self.history.with_replaced(positions, |m| Message {
            content: m
                .content
                .iter()
                .map(|b| prune_block(b, p.head_chars, p.tail_chars))
                .collect(),
            role: m.role,
        });
    }
}

/// The model history of a log: [`derive_message`] of every event, in log
/// order, with no merging or reordering (the reference algorithm), with
/// compactions and prunes applied where they occur ([`Deriver`]). A live
/// [`Session`](crate::Session) keeps the same result incrementally.
///
/// A `conversation/rewound` drops what its branch added ([`active_events`]).
pub fn derive_messages(events: &[SessionEvent]) -> Vec<Message> {
    Deriver::replay(events).history.to_vec()
}

/// The events of `events` (a log, in order) that count for the model
/// history: every `conversation/rewound` `{fromSeq}` drops the events from
/// `fromSeq` up to itself (the abandoned branch), so what remains is what
/// the log held just before `fromSeq` plus what came after the rewind.
/// Rewind events themselves are not returned. O(n).
pub fn active_events<E: AsRef<SessionEvent>>(events: &[E]) -> Vec<&SessionEvent> {
    let mut active: Vec<&SessionEvent> = Vec::with_capacity(events.len());
    for e in events {
        let e = e.as_ref();
        match &e.data {
            // `active` is sorted by seq: what it held before `fromSeq` is
            // exactly its prefix below `fromSeq` (later changes only
            // appended or cut suffixes).
            EventPayload::Rewind(r) => {
                let keep = active.partition_point(|a| a.seq < r.from_seq);
                active.truncate(keep);
            }
            _ => active.push(e),
        }
    }
    active
}

impl Deriver {
    /// The history of a whole log, rewinds applied ([`active_events`]).
    pub fn replay<E: AsRef<SessionEvent>>(events: &[E]) -> Deriver {
        let active = active_events(events);
        let mut d = Deriver::with_capacity(active.len() / 2 + 16);
        for e in active {
            d.apply(e);
        }
        d
    }
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
    fn pruned_texts_keep_head_and_tail_and_say_how_much_was_cut() {
        let text = format!("{}{}{}", "h".repeat(5), "é".repeat(10), "t".repeat(3));
        let cut = prune_text(&text, 5, 3);
        assert!(cut.starts_with("hhhhh\n… [10 characters of this old tool result pruned"));
        assert!(cut.ends_with("] …\nttt"));
        assert_eq!(pruned_len(&text, 5, 3), cut.len());
        assert_eq!(prune_text("short", 5, 3), "short");
        assert_eq!(pruned_len("short", 5, 3), 5);
        assert_eq!(
            prune_text("x", usize::MAX, usize::MAX),
            "x",
            "hostile counts"
        );
    }

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
