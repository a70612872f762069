//! Property test: any number of compactions (with their prunes and
//! fallbacks) interleaved with random appends of user messages, replies,
//! tool calls and results keep the derived history valid: every tool call
//! answered exactly once, after it; at most one summary; positions in
//! order and every compaction range in order; a compaction never makes the
//! history larger; replay derives the live history.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

use std::collections::HashSet;
use std::sync::Arc;

use dsh_compaction::{CompactionConfig, Compactor, Reason};
use dsh_llm::scripted::{ReplyBuilder, ScriptedAdapter};
use dsh_llm::{ContentBlock, LlmService, Message, MessageSource, ModelRequest, Role, ToolCall};
use dsh_protocol::ToolResult;
use dsh_session::{
    blocks_bytes, derive_messages, AssistantMessageEvent, EventPayload, MessageEvent, Session,
    SessionEvent, ToolCallEvent, ToolResultEvent,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// A user message of this many characters.
    User(usize),
    /// A reply with one tool call per length (none: a text reply), then
    /// the calls' results of those lengths.
    Step(Vec<usize>),
    /// A compaction; the model's summary has this many characters (0: an
    /// empty answer, which the compactor does not accept).
    Compact { reason: Reason, summary: usize },
}

fn any_op() -> impl Strategy<Value = Op> {
    let reason = prop::sample::select(vec![Reason::Threshold, Reason::Overflow, Reason::Manual]);
    prop_oneof![
        (1usize..200).prop_map(Op::User),
        prop::collection::vec(0usize..900, 0..4).prop_map(Op::Step),
        (
            reason,
            prop_oneof![Just(0usize), 1usize..60, 100usize..3000]
        )
            .prop_map(|(reason, summary)| Op::Compact { reason, summary }),
    ]
}

struct Log {
    session: Arc<Session>,
    next_call: usize,
    step: u64,
}

impl Log {
    fn append(&mut self, op: &Op) {
        match op {
            Op::User(n) => {
                self.session.append(EventPayload::UserMessage(MessageEvent {
                    content: vec![ContentBlock::text("u".repeat(*n))],
                    source: MessageSource::User,
                }));
            }
            Op::Step(results) => {
                self.step += 1;
                let (turn, step) = (1, self.step);
                let ids: Vec<String> = results
                    .iter()
                    .map(|_| {
                        self.next_call += 1;
                        format!("c{}", self.next_call)
                    })
                    .collect();
                let mut content = vec![ContentBlock::text("working")];
                content
                    .extend(ids.iter().map(|id| {
                        ContentBlock::ToolCall(ToolCall::new(id.as_str(), "bash", "{}"))
                    }));
                self.session
                    .append(EventPayload::AssistantMessage(AssistantMessageEvent {
                        turn,
                        step,
                        content,
                    }));
                for id in &ids {
                    self.session.append(EventPayload::ToolCall(ToolCallEvent {
                        turn,
                        step,
                        call: ToolCall::new(id.as_str(), "bash", "{}"),
                    }));
                }
                for (id, len) in ids.iter().zip(results) {
                    self.session
                        .append(EventPayload::ToolResult(ToolResultEvent {
                            turn,
                            step,
                            result: ToolResult::success(
                                id.as_str(),
                                vec![ContentBlock::text("r".repeat(*len))],
                            ),
                        }));
                }
            }
            Op::Compact { .. } => {}
        }
    }
}

fn config(window: u64) -> CompactionConfig {
    CompactionConfig {
        prune_above: 300,
        prune_head: 100,
        prune_tail: 50,
        summary_max_tokens: 100,
        ..CompactionConfig::for_window(window)
    }
}

/// Runs one compaction whose model answers `summary` characters (to both
/// attempts).
fn compact(
    rt: &tokio::runtime::Runtime,
    session: &Session,
    window: u64,
    reason: Reason,
    summary: usize,
) {
    let llm = LlmService::new();
    let answer = || ReplyBuilder::new().text(&[&"s".repeat(summary)]).reply();
    let adapter = ScriptedAdapter::new([answer(), answer()]);
    let _reg = llm.register_adapter(&["m"], Arc::new(adapter)).unwrap();
    let compactor = Compactor::new(config(window), Arc::new(llm));
    let request = ModelRequest {
        model: "m".into(),
        system: Some("system prompt".into()),
        ..Default::default()
    };
    // A failing summary request is an outcome like any other here.
    let _ = rt.block_on(compactor.compact_session(session, &request, reason, None));
}

fn history_bytes(history: &[Message]) -> u64 {
    history.iter().map(|m| blocks_bytes(&m.content)).sum()
}

fn is_summary(m: &Message) -> bool {
    m.content
        .first()
        .and_then(ContentBlock::as_text)
        .is_some_and(|t| t.starts_with("<compacted-summary>"))
}

/// Every call answered by exactly one result, which comes after it and
/// before the next reply; no call id twice; no result without its call.
fn check_pairing(history: &[Message]) -> Result<(), String> {
    let mut open: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for (i, m) in history.iter().enumerate() {
        if m.role == Role::Assistant && !open.is_empty() {
            return Err(format!(
                "message {i}: a reply before the results of {open:?}"
            ));
        }
        for b in &m.content {
            match b {
                ContentBlock::ToolCall(c) => {
                    if m.role != Role::Assistant {
                        return Err(format!("message {i}: a call outside a reply"));
                    }
                    if !seen.insert(c.call_id.to_string()) {
                        return Err(format!("message {i}: call {} twice", c.call_id));
                    }
                    open.push(c.call_id.to_string());
                }
                ContentBlock::ToolResult(r) => {
                    match open.iter().position(|o| *o == r.tool_call_id) {
                        Some(at) => {
                            open.remove(at);
                        }
                        None => {
                            return Err(format!(
                                "message {i}: result {} answers no open call",
                                r.tool_call_id
                            ))
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(format!("unanswered calls {open:?}"))
    }
}

fn ranges_in_order(events: &[SessionEvent]) -> Result<(), String> {
    for e in events {
        let (from, to) = match &e.data {
            EventPayload::Compaction(c) => (c.from_seq, c.to_seq),
            EventPayload::Other { kind, data } if kind == dsh_compaction::START_KIND => (
                data["fromSeq"].as_u64().unwrap(),
                data["toSeq"].as_u64().unwrap(),
            ),
            _ => continue,
        };
        if from > to {
            return Err(format!(
                "{} at {}: range {from}..{to}",
                e.data.kind(),
                e.seq
            ));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn compactions_keep_the_history_valid_small_and_replayable(
        window in 50u64..3000,
        ops in prop::collection::vec(any_op(), 1..60),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let mut log = Log { session: Session::detached("s-prop", vec![]), next_call: 0, step: 0 };
        for op in &ops {
            let before = log.session.derive_messages().to_vec();
            match op {
                Op::Compact { reason, summary } => {
                    compact(&rt, &log.session, window, *reason, *summary);
                }
                other => log.append(other),
            }
            let (history, positions) = log.session.derive_messages_with_seqs();
            let history = history.to_vec();
            let events: Vec<SessionEvent> =
                log.session.events().iter().map(|e| (**e).clone()).collect();
            if let Err(e) = check_pairing(&history) {
                return Err(TestCaseError::fail(format!("after {op:?}: {e}")));
            }
            let summaries = history.iter().filter(|m| is_summary(m)).count();
            prop_assert!(summaries <= 1, "after {:?}: {} summaries", op, summaries);
            prop_assert!(
                positions.windows(2).all(|w| w[0] < w[1]),
                "after {:?}: positions out of order {:?}", op, positions
            );
            if let Err(e) = ranges_in_order(&events) {
                return Err(TestCaseError::fail(e));
            }
            if matches!(op, Op::Compact { .. }) {
                let (b, a) = (history_bytes(&before), history_bytes(&history));
                prop_assert!(a <= b, "{:?} grew the history from {} to {} bytes", op, b, a);
                prop_assert!(history.len() <= before.len());
            }
            prop_assert_eq!(derive_messages(&events), history, "replay differs after {:?}", op);
        }
    }
}
