//! Session and SessionStore behaviour: ids, hooks, ordering, seeds, removal.

mod common;

use std::sync::{Arc, Mutex};

use dsh_kernel::{ErrorCode, Kernel, Scope};
use dsh_llm::{ContentBlock, MessageSource};
use dsh_session::{
    derive_messages, EventPayload, MessageEvent, Session, SessionEvent, SessionStore, StepEvent,
    TurnEndEvent, TurnStartEvent, TurnTrigger,
};

fn step(turn: u64, step: u64) -> EventPayload {
    EventPayload::StepStart(StepEvent { turn, step })
}

#[test]
fn append_assigns_seq_and_time() {
    let store = SessionStore::new();
    let (s, _reg) = store.create(None, vec![]).unwrap();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let a = s.append(step(1, 1));
    let b = s.append(step(1, 2));
    assert_eq!((a.seq, b.seq), (0, 1));
    assert!(a.time >= before && b.time >= a.time);
    assert_eq!(s.len(), 2);
    assert!(Arc::ptr_eq(&s.events()[1], &b));
    assert_eq!(s.events_since(1).len(), 1);
    assert!(s.events_since(7).is_empty());
}

#[test]
fn default_ids_are_unique_and_time_ordered() {
    let store = SessionStore::new();
    let ids: Vec<String> = (0..50)
        .map(|_| {
            let (s, reg) = store.create(None, vec![]).unwrap();
            std::mem::forget(reg);
            s.id().to_string()
        })
        .collect();
    assert!(ids.iter().all(|id| id.starts_with("s-") && id.len() == 38));
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, ids, "UUIDv7 ids are unique and sort by creation");
}

#[test]
fn duplicate_and_invalid_ids_are_refused() {
    let store = SessionStore::new();
    let (_s, _reg) = store.create(Some("a".into()), vec![]).unwrap();
    let err = store.create(Some("a".into()), vec![]).unwrap_err();
    assert_eq!(err.to_string(), r#"session "a" already exists"#);
    assert_eq!(err.code(), "DUPLICATE_SESSION");
    for bad in ["", "../x", "a/b", ".hidden"] {
        let err = store.create(Some(bad.into()), vec![]).unwrap_err();
        assert_eq!(err.code(), "INVALID_SESSION_ID", "{bad}");
    }
}

#[test]
fn get_and_list_in_insertion_order() {
    let store = SessionStore::new();
    let scope = Scope::new();
    for id in ["c", "a", "b"] {
        let (_, reg) = store.create(Some(id.into()), vec![]).unwrap();
        scope.add(reg);
    }
    let ids: Vec<_> = store.list().iter().map(|s| s.id().to_string()).collect();
    assert_eq!(ids, ["c", "a", "b"]);
    assert_eq!(store.get("a").unwrap().id(), "a");
    assert!(store.get("zz").is_none());
    scope.close();
    assert!(store.list().is_empty());
}

#[test]
fn hooks_fire_in_order_and_stop_after_removal() {
    let store = SessionStore::new();
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let l = log.clone();
    let _c = store
        .on_created()
        .on(move |s| l.lock().unwrap().push(format!("created {}", s.id())));
    let l = log.clone();
    let _e = store.on_event().on(move |(s, e)| {
        l.lock()
            .unwrap()
            .push(format!("event {} {} {}", s.id(), e.seq, e.data.kind()))
    });
    let l = log.clone();
    let _r = store
        .on_removed()
        .on(move |s| l.lock().unwrap().push(format!("removed {}", s.id())));

    let (s, reg) = store.create(Some("x".into()), vec![]).unwrap();
    s.append(step(1, 1));
    s.append(EventPayload::StepEnd(StepEvent { turn: 1, step: 1 }));
    reg.undo();
    assert!(!s.is_attached());
    assert!(store.get("x").is_none());
    // Still usable as a detached log, but silent.
    s.append(step(1, 2));
    assert_eq!(s.len(), 3);
    assert_eq!(
        *log.lock().unwrap(),
        [
            "created x",
            "event x 0 step/start",
            "event x 1 step/end",
            "removed x"
        ]
    );
    // The id is free again.
    let (_s2, _reg2) = store.create(Some("x".into()), vec![]).unwrap();
}

#[test]
fn appends_from_listeners_are_delivered_in_seq_order() {
    let store = SessionStore::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let _e = store.on_event().on(move |(s, e)| {
        s2.lock().unwrap().push(e.seq);
        // React to the first event with two more appends, re-entrantly.
        if e.seq == 0 {
            s.append(step(1, 10));
            s.append(step(1, 11));
        }
    });
    let (s, _reg) = store.create(None, vec![]).unwrap();
    s.append(step(1, 1));
    s.append(step(1, 2));
    assert_eq!(*seen.lock().unwrap(), [0, 1, 2, 3]);
    let seqs: Vec<_> = s.events().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 3]);
}

#[test]
fn concurrent_appends_keep_seq_unique_and_notifications_ordered() {
    let store = Arc::new(SessionStore::new());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let _e = store
        .on_event()
        .on(move |(_, e)| s2.lock().unwrap().push(e.seq));
    let (s, _reg) = store.create(None, vec![]).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let s = s.clone();
            std::thread::spawn(move || {
                for i in 0..250 {
                    s.append(step(t, i));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(s.len(), 1000);
    let expected: Vec<u64> = (0..1000).collect();
    assert_eq!(*seen.lock().unwrap(), expected);
}

#[test]
fn seed_is_copied_renumbered_and_continued() {
    let mut seed = common::as_events(common::sample_log());
    for e in &mut seed {
        e.seq += 100; // a fork of a slice from elsewhere
    }
    let store = SessionStore::new();
    let seen = Arc::new(Mutex::new(0usize));
    let s2 = seen.clone();
    let _e = store.on_event().on(move |_| *s2.lock().unwrap() += 1);
    let (s, _reg) = store.create(Some("fork".into()), seed.clone()).unwrap();
    assert_eq!(*seen.lock().unwrap(), 0, "seed events are not re-announced");
    assert_eq!(s.len(), seed.len());
    assert_eq!(s.events()[0].time, seed[0].time);
    assert_eq!(s.last_turn(), 2);
    let next = s.append(step(3, 1));
    assert_eq!(next.seq, seed.len() as u64);
    // Replay: identical derivation.
    let original = derive_messages(&common::as_events(common::sample_log()));
    let mut replayed = s.derive_messages().to_vec();
    replayed.truncate(original.len());
    assert_eq!(replayed, original);
}

#[test]
fn last_turn_tracks_the_last_turn_start() {
    let s = Session::detached("t", vec![]);
    assert_eq!(s.last_turn(), 0);
    s.append(EventPayload::TurnStart(TurnStartEvent {
        turn: 4,
        trigger: TurnTrigger::Continuation,
    }));
    s.append(EventPayload::TurnEnd(TurnEndEvent {
        turn: 9,
        reason: dsh_session::TurnEndReason::Completed,
    }));
    assert_eq!(s.last_turn(), 4);
}

#[test]
fn events_cannot_be_mutated_through_snapshots() {
    let s = Session::detached("t", vec![]);
    s.append(EventPayload::UserMessage(MessageEvent {
        content: vec![ContentBlock::text("hi")],
        source: MessageSource::User,
    }));
    let mut snapshot: Vec<Arc<SessionEvent>> = s.events();
    snapshot.clear(); // only the snapshot changes
    assert_eq!(s.len(), 1);
}

#[tokio::test]
async fn flush_awaits_all_listeners_and_reports_failures() {
    let store = SessionStore::new();
    let done = Arc::new(Mutex::new(Vec::new()));
    let d = done.clone();
    let _a = store.on_flush().on(move |s: Arc<Session>| {
        let d = d.clone();
        async move {
            tokio::task::yield_now().await;
            d.lock().unwrap().push(format!("a {}", s.id()));
            Ok(())
        }
    });
    let d = done.clone();
    let _b = store.on_flush().on(move |_s: Arc<Session>| {
        let d = d.clone();
        async move {
            d.lock().unwrap().push("b".to_string());
            Err("disk full".into())
        }
    });
    let (s, _reg) = store.create(Some("f".into()), vec![]).unwrap();
    let err = store.flush(&s).await.unwrap_err();
    assert!(err.message().contains("disk full"));
    let mut done = done.lock().unwrap().clone();
    done.sort();
    assert_eq!(done, ["a f", "b"]);
}

#[test]
fn store_is_a_kernel_service() {
    let kernel = Kernel::new();
    let scope = Scope::new();
    scope.add(kernel.provide(Arc::new(SessionStore::new())).unwrap());
    let store = kernel.service::<SessionStore>().unwrap();
    let (s, reg) = store.create(None, vec![]).unwrap();
    scope.add(reg);
    assert!(store.get(s.id()).is_some());
    scope.close();
    assert!(store.get(s.id()).is_none());
    assert!(kernel.try_service::<SessionStore>().is_none());
}

#[test]
fn session_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Session>();
    check::<SessionStore>();
    check::<SessionEvent>();
}

#[test]
fn other_events_with_builtin_kinds_are_stored_typed() {
    let s = Session::detached("t", vec![]);
    let e = s.append(EventPayload::Other {
        kind: "user/message".into(),
        data: serde_json::json!({"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}),
    });
    assert!(matches!(e.data, EventPayload::UserMessage(_)));
    assert_eq!(s.derive_messages().len(), 1);
    let e = s.append(EventPayload::Other {
        kind: "plugin/x".into(),
        data: serde_json::json!(1),
    });
    assert!(matches!(e.data, EventPayload::Other { .. }));
}
