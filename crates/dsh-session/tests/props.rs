//! Property tests: derivation, replay, incremental history, seq, JSONL
//! round trip.

mod common;

use dsh_kernel::Scope;
use dsh_llm::ContentBlock;
use dsh_session::EventPayload;
use dsh_session::{
    derive_message, derive_messages, install_jsonl, load_jsonl, write_jsonl_line, Session,
    SessionEvent, SessionStore,
};
use proptest::prelude::*;

fn plain(session: &Session) -> Vec<SessionEvent> {
    session.events().iter().map(|e| (**e).clone()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn derivation_is_deterministic(log in common::any_log(40)) {
        let events = common::as_events(log);
        let a = derive_messages(&events);
        let b = derive_messages(&events.clone());
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    }

    #[test]
    fn incremental_history_equals_pure_derivation_after_every_append(
        log in common::any_log(40)
    ) {
        let store = SessionStore::new();
        let (s, _reg) = store.create(None, vec![]).unwrap();
        for (i, data) in log.into_iter().enumerate() {
            let e = s.append(data);
            prop_assert_eq!(e.seq, i as u64);
            prop_assert_eq!(s.derive_messages().to_vec(), derive_messages(&plain(&s)));
        }
    }

    #[test]
    fn seq_is_strictly_increasing(log in common::any_log(40), seed_len in 0usize..10) {
        let seed = common::as_events(log.iter().take(seed_len).cloned().collect());
        let store = SessionStore::new();
        let (s, _reg) = store.create(None, seed).unwrap();
        for data in log.into_iter().skip(seed_len) {
            s.append(data);
        }
        let seqs: Vec<u64> = s.events().iter().map(|e| e.seq).collect();
        let expected: Vec<u64> = (0..seqs.len() as u64).collect();
        prop_assert_eq!(seqs, expected);
    }

    #[test]
    fn replay_from_seed_derives_the_identical_history(log in common::any_log(40)) {
        let store = SessionStore::new();
        let (original, _r1) = store.create(None, vec![]).unwrap();
        for data in log {
            original.append(data);
        }
        let (replay, _r2) = store.create(None, plain(&original)).unwrap();
        prop_assert_eq!(replay.derive_messages(), original.derive_messages());
        prop_assert_eq!(replay.last_turn(), original.last_turn());
        prop_assert_eq!(plain(&replay), plain(&original));
    }

    #[test]
    fn non_message_events_do_not_change_derivation(
        messages in prop::collection::vec(common::message_event(), 0..15),
        noise in prop::collection::vec((any::<prop::sample::Index>(), common::non_message_event()), 0..25),
    ) {
        let clean = derive_messages(&common::as_events(messages.clone()));
        let mut noisy = messages;
        for (at, data) in noise {
            prop_assert!(derive_message(&data).is_none());
            let i = at.index(noisy.len() + 1);
            noisy.insert(i, data);
        }
        prop_assert_eq!(derive_messages(&common::as_events(noisy)), clean);
    }

    #[test]
    fn every_event_serializes_and_parses_back(data in common::any_event_data(), seq in 0u64..1000, time in any::<u64>()) {
        let event = SessionEvent { seq, time, data };
        let mut line = Vec::new();
        write_jsonl_line(&event, &mut line);
        prop_assert_eq!(line.last(), Some(&b'\n'));
        prop_assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1, "one line per event");
        let back: SessionEvent = serde_json::from_slice(&line).unwrap();
        prop_assert_eq!(&back, &event);
        // And byte-stable through a second round trip.
        let again = serde_json::to_vec(&back).unwrap();
        prop_assert_eq!(&again[..], &line[..line.len() - 1]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn jsonl_round_trip_is_lossless(log in common::any_log(30)) {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new();
        let plugin = Scope::new();
        plugin.add(install_jsonl(&store, dir.path()).unwrap());
        let (s, _reg) = store.create(Some("p".into()), vec![]).unwrap();
        for data in log {
            s.append(data);
        }
        plugin.close();
        let loaded = load_jsonl(&dir.path().join("p.jsonl")).unwrap();
        prop_assert!(loaded.torn_tail.is_none());
        prop_assert_eq!(&loaded.events, &plain(&s));
        let (replay, _r) = SessionStore::new().create(None, loaded.events).unwrap();
        prop_assert_eq!(replay.derive_messages(), s.derive_messages());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A crash can cut a log anywhere: loading gives exactly the events
    /// whose lines are whole, opening for append cuts the torn rest off
    /// (keeping its bytes in a sidecar) and never loses a whole line.
    #[test]
    fn a_log_cut_at_any_byte_loads_its_whole_lines_and_repairs_to_them(
        log in common::any_log(12),
        cut in any::<proptest::sample::Index>(),
    ) {
        let events = common::as_events(log);
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for e in &events {
            write_jsonl_line(e, &mut bytes);
            ends.push(bytes.len());
        }
        let at = if bytes.is_empty() { 0 } else { cut.index(bytes.len() + 1) };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, &bytes[..at]).unwrap();
        // Whole lines, plus a last line that lost only its newline.
        let whole = ends.iter().filter(|&&end| end <= at + 1).count();
        let loaded = load_jsonl(&path).unwrap();
        prop_assert_eq!(&loaded.events[..], &events[..whole]);
        let torn = at > 0 && whole < events.len() && ends.get(whole.wrapping_sub(1)).map_or(0, |e| *e) < at;
        prop_assert_eq!(loaded.torn_tail.is_some(), torn);

        let store = dsh_session::JsonlStore::new(dir.path()).unwrap();
        let opened = store.open_log("c").unwrap();
        prop_assert_eq!(opened.next_seq, whole as u64);
        prop_assert_eq!(opened.repaired.is_some(), torn);
        drop(store);
        let after = load_jsonl(&path).unwrap();
        prop_assert_eq!(&after.events[..], &events[..whole]);
        prop_assert!(after.torn_tail.is_none());
        if let Some(repair) = opened.repaired {
            let start = ends.get(whole.wrapping_sub(1)).map_or(0, |e| *e);
            let saved = std::fs::read(repair.sidecar.unwrap()).unwrap();
            prop_assert_eq!(&saved[..], &bytes[start..at]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A log cut after any event (a crash anywhere) repairs into one
    /// whose every turn ends and whose derived history answers every
    /// tool call; repairing again adds nothing.
    #[test]
    fn a_log_cut_anywhere_repairs_to_a_closed_valid_history(
        turns in 1usize..4,
        cut in any::<prop::sample::Index>(),
    ) {
        let mut data = Vec::new();
        for _ in 0..turns {
            data.extend(renumbered(common::sample_log(), data.len()));
        }
        let all = common::as_events(data);
        let kept = &all[..=cut.index(all.len())];
        let repair = dsh_session::repair_unfinished(kept);
        let mut repaired = kept.to_vec();
        let next = repaired.len() as u64;
        repaired.extend(repair.into_iter().enumerate().map(|(i, data)| SessionEvent {
            seq: next + i as u64,
            time: 0,
            data,
        }));
        prop_assert!(dsh_session::repair_unfinished(&repaired).is_empty());
        let starts = repaired.iter().filter(|e| e.data.kind() == "turn/start").count();
        let ends = repaired.iter().filter(|e| e.data.kind() == "turn/end").count();
        prop_assert_eq!(starts, ends);
        let history = dsh_session::derive_messages(&repaired);
        let mut open: Vec<String> = Vec::new();
        for m in &history {
            for b in &m.content {
                match b {
                    ContentBlock::ToolCall(c) => open.push(c.call_id.as_str().to_string()),
                    ContentBlock::ToolResult(r) => open.retain(|id| id != r.tool_call_id.as_str()),
                    _ => {}
                }
            }
        }
        prop_assert!(open.is_empty(), "unanswered calls {:?}", open);
    }
}

/// `log` with its turn numbers shifted so that it follows `before` events
/// of earlier copies (turns stay distinct and increasing).
fn renumbered(log: Vec<EventPayload>, before: usize) -> Vec<EventPayload> {
    let shift = before as u64 + 1;
    log.into_iter()
        .map(|mut d| {
            match &mut d {
                EventPayload::TurnStart(t) => t.turn += shift,
                EventPayload::TurnEnd(t) => t.turn += shift,
                EventPayload::StepStart(s) | EventPayload::StepEnd(s) => s.turn += shift,
                EventPayload::AssistantMessage(m) => m.turn += shift,
                EventPayload::AssistantChunk(c) => c.turn += shift,
                EventPayload::ToolCall(c) => c.turn += shift,
                EventPayload::ToolResult(r) => r.turn += shift,
                EventPayload::Usage(u) => u.turn += shift,
                _ => {}
            }
            d
        })
        .collect()
}

proptest! {
    /// A summary replaces exactly the messages of its event range, in
    /// place, and leaves every other message as it was.
    #[test]
    fn a_compaction_replaces_exactly_its_range(
        messages in prop::collection::vec(common::message_event(), 1..20),
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
    ) {
        let events = common::as_events(messages);
        let before = derive_messages(&events);
        let n = events.len();
        let (from, to) = (a.index(n).min(b.index(n)), a.index(n).max(b.index(n)));
        let mut log = events.clone();
        log.push(SessionEvent {
            seq: n as u64,
            time: 0,
            data: EventPayload::Compaction(dsh_session::CompactionEvent {
                from_seq: from as u64,
                to_seq: to as u64,
                summary: "S".into(),
                tokens_after: 1,
            }),
        });
        let after = derive_messages(&log);
        // Each message event yields one message, so indexes are seqs.
        let mut want = before[..from].to_vec();
        want.push(dsh_session::summary_message("S"));
        want.extend_from_slice(&before[to + 1..]);
        prop_assert_eq!(after, want);
    }
}

proptest! {
    /// A fork of any prefix of a log (with compactions and prunes in it)
    /// derives the history the repaired prefix derives: the link event in
    /// front changes nothing, and the sequence numbers compaction events
    /// name move with the events.
    #[test]
    fn a_fork_derives_the_history_of_the_repaired_prefix(
        log in common::any_log(30),
        cut in any::<prop::sample::Index>(),
        squash in any::<prop::sample::Index>(),
    ) {
        let mut events = common::as_events(log);
        let n = events.len();
        if n > 1 {
            let (a, b) = (squash.index(n) / 2, squash.index(n));
            events.push(SessionEvent {
                seq: n as u64,
                time: 0,
                data: EventPayload::Compaction(dsh_session::CompactionEvent {
                    from_seq: a as u64,
                    to_seq: b as u64,
                    summary: "S".into(),
                    tokens_after: 1,
                }),
            });
            events.push(SessionEvent {
                seq: n as u64 + 1,
                time: 0,
                data: EventPayload::Prune(dsh_session::PruneEvent {
                    seqs: (0..n as u64).collect(),
                    head_chars: 3,
                    tail_chars: 2,
                    tokens_after: 1,
                }),
            });
        }
        let kept = &events[..cut.index(events.len() + 1).min(events.len())];
        let link = EventPayload::Other { kind: "subagent/start".into(), data: serde_json::json!({}) };
        let fork = dsh_session::fork_seed(kept, link, 7);
        let seqs: Vec<u64> = fork.iter().map(|e| e.seq).collect();
        prop_assert_eq!(seqs, (0..fork.len() as u64).collect::<Vec<_>>());
        prop_assert_eq!(fork[0].data.kind(), "subagent/start");
        let mut repaired = kept.to_vec();
        for data in dsh_session::repair_unfinished(kept) {
            let seq = repaired.len() as u64;
            repaired.push(SessionEvent { seq, time: 0, data });
        }
        prop_assert_eq!(derive_messages(&fork), derive_messages(&repaired));
        prop_assert!(dsh_session::repair_unfinished(&fork).is_empty());
    }
}
