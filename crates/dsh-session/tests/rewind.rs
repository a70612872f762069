//! `conversation/rewound`: the history goes back to a turn's branch point,
//! live, replayed from the log and through a JSONL round trip alike, and
//! the abandoned branch stays in the log.

use dsh_llm::{ContentBlock, Message};
use dsh_session::{
    active_events, derive_messages, load_jsonl, write_jsonl_line, AssistantMessageEvent,
    EventPayload, MessageEvent, RewindEvent, Session, SessionEvent, TurnEndEvent, TurnEndReason,
    TurnStartEvent, TurnTrigger,
};
use proptest::prelude::*;

fn plain(session: &Session) -> Vec<SessionEvent> {
    session.events().iter().map(|e| (**e).clone()).collect()
}

/// Appends one turn (a prompt and an answer); returns its `turn/start` seq.
fn turn(s: &Session, n: u64, text: &str) -> u64 {
    let start = s.append(EventPayload::TurnStart(TurnStartEvent {
        turn: n,
        trigger: TurnTrigger::Message {
            source: dsh_llm::MessageSource::User,
        },
    }));
    s.append(EventPayload::UserMessage(MessageEvent {
        content: vec![ContentBlock::text(format!("ask {text}"))],
        source: dsh_llm::MessageSource::User,
    }));
    s.append(EventPayload::AssistantMessage(AssistantMessageEvent {
        turn: n,
        step: 1,
        content: vec![ContentBlock::text(format!("answer {text}"))],
    }));
    s.append(EventPayload::TurnEnd(TurnEndEvent {
        turn: n,
        reason: TurnEndReason::Completed,
    }));
    start.seq
}

fn rewind(s: &Session, to_turn: u64, from_seq: u64) {
    s.append(EventPayload::Rewind(RewindEvent { to_turn, from_seq }));
}

fn texts(history: &[Message]) -> Vec<String> {
    history
        .iter()
        .map(|m| {
            m.content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[test]
fn a_rewind_restores_the_history_of_the_branch_point_and_keeps_the_branch_in_the_log() {
    let s = Session::detached("s1", Vec::new());
    turn(&s, 1, "one");
    let before_two = s.derive_messages().to_vec();
    let two = turn(&s, 2, "two");
    turn(&s, 3, "three");
    let logged_before = s.len();
    rewind(&s, 2, two);
    assert_eq!(s.derive_messages().to_vec(), before_two);
    assert_eq!(
        s.len(),
        logged_before + 1,
        "nothing is removed from the log"
    );
    assert_eq!(s.last_turn(), 3, "turn numbers go on from the highest");
    turn(&s, 4, "four");
    assert_eq!(
        texts(&s.derive_messages().to_vec()),
        ["ask one", "answer one", "ask four", "answer four"]
    );
    assert_eq!(s.derive_messages().to_vec(), derive_messages(&plain(&s)));
    // The log round-trips through JSONL to the same history.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s1.jsonl");
    let mut bytes = Vec::new();
    for e in plain(&s) {
        write_jsonl_line(&e, &mut bytes);
    }
    std::fs::write(&path, bytes).unwrap();
    let loaded = load_jsonl(&path).unwrap().events;
    assert_eq!(loaded, plain(&s));
    let replayed = Session::detached("s2", loaded);
    assert_eq!(
        replayed.derive_messages().to_vec(),
        s.derive_messages().to_vec()
    );
}

/// One step of a generated session: a turn, or a rewind to the `k`-th
/// turn still on the branch (modulo their number).
#[derive(Debug, Clone)]
enum Op {
    Turn,
    Rewind(usize),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![3 => Just(Op::Turn), 1 => any::<usize>().prop_map(Op::Rewind)],
        0..30,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A model of the branch: the history before each live turn. The live
    /// session, the pure derivation and the active events agree with it
    /// after every append.
    #[test]
    fn live_replayed_and_modelled_histories_agree(ops in ops()) {
        let s = Session::detached("p", Vec::new());
        // (turn number, its turn/start seq, history before it)
        let mut branch: Vec<(u64, u64, Vec<Message>)> = Vec::new();
        let mut next = 1;
        for op in ops {
            match op {
                Op::Turn => {
                    let before = s.derive_messages().to_vec();
                    let seq = turn(&s, next, &next.to_string());
                    branch.push((next, seq, before));
                    next += 1;
                }
                Op::Rewind(k) if !branch.is_empty() => {
                    let k = k % branch.len();
                    let (n, seq, before) = branch[k].clone();
                    branch.truncate(k);
                    rewind(&s, n, seq);
                    prop_assert_eq!(s.derive_messages().to_vec(), before);
                }
                Op::Rewind(_) => {}
            }
            let events = plain(&s);
            prop_assert_eq!(s.derive_messages().to_vec(), derive_messages(&events));
            let live_turns: Vec<u64> = active_events(&events)
                .iter()
                .filter_map(|e| match &e.data {
                    EventPayload::TurnStart(t) => Some(t.turn),
                    _ => None,
                })
                .collect();
            let modelled: Vec<u64> = branch.iter().map(|b| b.0).collect();
            prop_assert_eq!(live_turns, modelled);
        }
    }
}
