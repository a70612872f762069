//! JSONL persistence: buffering, flush, scope close, loading, resuming, listing.

mod common;

use std::path::Path;
use std::sync::Arc;

use dsh_kernel::{ErrorCode, Scope};
use dsh_session::{
    derive_messages, install_jsonl, list_sessions, load_jsonl, EventPayload, JsonlStore,
    SessionError, SessionPersistence, SessionStore, StepEvent,
};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn lines(path: &Path) -> usize {
    read(path).lines().count()
}

#[tokio::test]
async fn events_are_written_at_flush_not_at_append() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new();
    let scope = Scope::new();
    scope.add(install_jsonl(&store, dir.path()).unwrap());
    let (s, reg) = store.create(Some("one".into()), vec![]).unwrap();
    scope.add(reg);
    let path = dir.path().join("one.jsonl");
    let sample = common::sample_log();
    for data in &sample[..5] {
        s.append(data.clone());
    }
    assert_eq!(lines(&path), 0, "append does no I/O");
    store.flush(&s).await.unwrap();
    assert_eq!(lines(&path), 5);
    for data in &sample[5..] {
        s.append(data.clone());
    }
    store.flush(&s).await.unwrap();
    store.flush(&s).await.unwrap(); // nothing new: no duplicates
    assert_eq!(lines(&path), sample.len());

    // Each line is exactly the event's JSON.
    let text = read(&path);
    for (line, event) in text.lines().zip(s.events()) {
        assert_eq!(line, serde_json::to_string(&*event).unwrap());
    }
    assert!(text.ends_with('\n'));

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn scope_close_writes_what_is_buffered() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new();
    let plugin = Scope::new();
    plugin.add(install_jsonl(&store, dir.path()).unwrap());
    let (s, _reg) = store.create(Some("c".into()), vec![]).unwrap();
    for data in common::sample_log() {
        s.append(data);
    }
    plugin.close();
    let log = load_jsonl(&dir.path().join("c.jsonl")).unwrap();
    assert_eq!(log.events.len(), s.len());
    assert!(log.torn_tail.is_none());
    // After close, nothing more is written.
    s.append(EventPayload::StepStart(StepEvent { turn: 9, step: 9 }));
    assert_eq!(lines(&dir.path().join("c.jsonl")), s.len() - 1);
}

#[test]
fn session_removal_writes_what_is_buffered() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new();
    let _plugin = install_jsonl(&store, dir.path()).unwrap();
    let (s, reg) = store.create(Some("r".into()), vec![]).unwrap();
    s.append(EventPayload::StepStart(StepEvent { turn: 1, step: 1 }));
    reg.undo();
    assert_eq!(lines(&dir.path().join("r.jsonl")), 1);
}

#[tokio::test]
async fn load_seed_derive_reproduces_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new();
    let _plugin = install_jsonl(&store, dir.path()).unwrap();
    let (s, _reg) = store.create(None, vec![]).unwrap();
    for data in common::sample_log() {
        s.append(data);
    }
    store.flush(&s).await.unwrap();
    let log = load_jsonl(&dir.path().join(format!("{}.jsonl", s.id()))).unwrap();
    let originals: Vec<_> = s.events().iter().map(|e| (**e).clone()).collect();
    assert_eq!(log.events, originals, "lossless");

    let replay_store = SessionStore::new();
    let (replay, _r) = replay_store.create(None, log.events.clone()).unwrap();
    assert_eq!(replay.derive_messages(), s.derive_messages());
    assert_eq!(derive_messages(&log.events), s.derive_messages().to_vec());
}

#[tokio::test]
async fn seeded_sessions_persist_their_seed() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new();
    let _plugin = install_jsonl(&store, dir.path()).unwrap();
    let seed = common::as_events(common::sample_log());
    let (s, _reg) = store.create(Some("fork".into()), seed.clone()).unwrap();
    s.append(EventPayload::StepStart(StepEvent { turn: 3, step: 1 }));
    store.flush(&s).await.unwrap();
    let log = load_jsonl(&dir.path().join("fork.jsonl")).unwrap();
    assert_eq!(log.events.len(), seed.len() + 1);
    assert_eq!(log.events[..seed.len()], seed[..]);
}

#[tokio::test]
async fn resuming_an_existing_log_appends_after_it_and_repairs_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("res.jsonl");
    // A previous run wrote 3 events and crashed mid-line.
    let seed = common::as_events(common::sample_log()[..3].to_vec());
    let mut text = String::new();
    for e in &seed {
        text.push_str(&serde_json::to_string(e).unwrap());
        text.push('\n');
    }
    text.push_str(r#"{"type":"step/st"#);
    std::fs::write(&path, &text).unwrap();

    let loaded = load_jsonl(&path).unwrap();
    let torn = loaded.torn_tail.clone().unwrap();
    assert_eq!(torn.line_no, 4);
    assert_eq!(loaded.events, seed);

    let store = SessionStore::new();
    let _plugin = install_jsonl(&store, dir.path()).unwrap();
    let (s, _reg) = store.create(Some("res".into()), loaded.events).unwrap();
    s.append(EventPayload::StepEnd(StepEvent { turn: 1, step: 1 }));
    store.flush(&s).await.unwrap();
    let after = load_jsonl(&path).unwrap();
    assert!(
        after.torn_tail.is_none(),
        "torn tail dropped before appending"
    );
    assert_eq!(after.events.len(), 4);
    assert_eq!(after.events[..3], seed[..]);
    assert_eq!(after.events[3].seq, 3);
    // The removed bytes are kept beside the log, privately.
    let sidecars: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("res.jsonl.torn-")
        })
        .collect();
    assert_eq!(sidecars.len(), 1, "one sidecar file");
    assert_eq!(read(&sidecars[0].path()), r#"{"type":"step/st"#);
    use std::os::unix::fs::PermissionsExt;
    let mode = sidecars[0].metadata().unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[tokio::test]
async fn a_corrupt_complete_last_line_is_an_error_and_is_never_removed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cl.jsonl");
    let seed = common::as_events(common::sample_log()[..2].to_vec());
    let mut text = String::new();
    for e in &seed {
        text.push_str(&serde_json::to_string(e).unwrap());
        text.push('\n');
    }
    text.push_str("{\"type\":\"step/start\",\"seq\":oops}\n");
    std::fs::write(&path, &text).unwrap();
    let err = load_jsonl(&path).unwrap_err();
    assert_eq!(err.code(), "CORRUPT_LOG");
    assert!(err.to_string().contains("cl.jsonl:3:"), "{err}");
    let store = dsh_session::JsonlStore::new(dir.path()).unwrap();
    let err = store.open_log("cl").unwrap_err();
    assert_eq!(err.code(), "CORRUPT_LOG");
    // The writer path fails the same way and leaves the file alone.
    let sessions = SessionStore::new();
    let _plugin = install_jsonl(&sessions, dir.path()).unwrap();
    let (s, _reg) = sessions.create(Some("cl".into()), seed).unwrap();
    s.append(EventPayload::StepEnd(StepEvent { turn: 1, step: 1 }));
    assert_eq!(sessions.flush(&s).await.unwrap_err().code(), "CORRUPT_LOG");
    assert_eq!(read(&path), text, "nothing was deleted");
}

#[test]
fn open_log_locks_repairs_once_and_reports_unwritable_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ol.jsonl");
    let seed = common::as_events(common::sample_log()[..2].to_vec());
    let good = format!(
        "{}\n{}\n",
        serde_json::to_string(&seed[0]).unwrap(),
        serde_json::to_string(&seed[1]).unwrap()
    );
    std::fs::write(&path, format!("{good}{{\"ty")).unwrap();
    let store = dsh_session::JsonlStore::new(dir.path()).unwrap();
    let opened = store.open_log("ol").unwrap();
    assert_eq!(opened.next_seq, 2);
    let repair = opened.repaired.expect("the torn line was repaired");
    assert_eq!((repair.torn.line_no, repair.torn.bytes), (3, 4));
    assert!(repair.describe(&path).contains("line 3 (4 bytes)"));
    assert_eq!(read(&path), good, "cut back to the intact prefix");
    // Again from the same store: same state, no second repair.
    let again = store.open_log("ol").unwrap();
    assert_eq!((again.next_seq, again.repaired), (2, None));
    // Another store (another process) cannot take it.
    let other = dsh_session::JsonlStore::new(dir.path()).unwrap();
    assert_eq!(other.open_log("ol").unwrap_err().code(), "SESSION_LOCKED");
    drop(store);
    drop(other);

    // A read-only log fails before anything is appended.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
    if std::fs::OpenOptions::new().append(true).open(&path).is_ok() {
        return; // running as root: permissions do not apply
    }
    let store = dsh_session::JsonlStore::new(dir.path()).unwrap();
    let err = store.open_log("ol").unwrap_err();
    assert_eq!(err.code(), "SESSION_WRITE_FAILED");
    assert!(err.to_string().contains("ol.jsonl"), "{err}");
}

#[tokio::test]
async fn resuming_after_a_complete_line_without_newline() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nl.jsonl");
    let seed = common::as_events(common::sample_log()[..1].to_vec());
    std::fs::write(&path, serde_json::to_string(&seed[0]).unwrap()).unwrap();
    let store = SessionStore::new();
    let _plugin = install_jsonl(&store, dir.path()).unwrap();
    let (s, _reg) = store.create(Some("nl".into()), seed).unwrap();
    s.append(EventPayload::StepEnd(StepEvent { turn: 1, step: 1 }));
    store.flush(&s).await.unwrap();
    let after = load_jsonl(&path).unwrap();
    assert_eq!(after.events.len(), 2);
    assert!(after.torn_tail.is_none());
}

#[tokio::test]
async fn a_foreign_longer_log_is_a_conflict_not_a_mix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dup.jsonl");
    let other = common::as_events(common::sample_log());
    let mut text = String::new();
    for e in &other {
        text.push_str(&serde_json::to_string(e).unwrap());
        text.push('\n');
    }
    std::fs::write(&path, &text).unwrap();
    let store = SessionStore::new();
    let _plugin = install_jsonl(&store, dir.path()).unwrap();
    let (s, _reg) = store.create(Some("dup".into()), vec![]).unwrap();
    s.append(EventPayload::StepStart(StepEvent { turn: 1, step: 1 }));
    let err = store.flush(&s).await.unwrap_err();
    assert_eq!(err.code(), "SESSION_LOG_CONFLICT");
    assert!(err.message().contains("dup.jsonl"), "{}", err.message());
    assert_eq!(read(&path), text, "the other session's log is untouched");
}

#[test]
fn corrupt_middle_line_is_an_error_with_its_line_number() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    let events = common::as_events(common::sample_log()[..3].to_vec());
    let mut text = String::new();
    text.push_str(&serde_json::to_string(&events[0]).unwrap());
    text.push('\n');
    text.push_str("{garbage\n");
    text.push_str(&serde_json::to_string(&events[1]).unwrap());
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    let err = load_jsonl(&path).unwrap_err();
    assert_eq!(err.code(), "CORRUPT_LOG");
    match &err {
        SessionError::CorruptLog { line, path: p, .. } => {
            assert_eq!(*line, 2);
            assert_eq!(p, &path);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("bad.jsonl:2:"), "{err}");
}

#[test]
fn an_unparsable_line_with_its_newline_is_corrupt_even_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let events = common::as_events(common::sample_log()[..2].to_vec());
    let text = format!(
        "{}\n\n{}\n{{\"type\":\n\n",
        serde_json::to_string(&events[0]).unwrap(),
        serde_json::to_string(&events[1]).unwrap()
    );
    std::fs::write(&path, text).unwrap();
    let err = load_jsonl(&path).unwrap_err();
    assert_eq!(err.code(), "CORRUPT_LOG");
    assert!(err.to_string().contains("t.jsonl:4:"), "{err}");
}

#[test]
fn missing_and_empty_files() {
    let dir = tempfile::tempdir().unwrap();
    let err = load_jsonl(&dir.path().join("nope.jsonl")).unwrap_err();
    assert_eq!(err.code(), "SESSION_NOT_FOUND");
    std::fs::write(dir.path().join("empty.jsonl"), "").unwrap();
    let log = load_jsonl(&dir.path().join("empty.jsonl")).unwrap();
    assert!(log.events.is_empty() && log.torn_tail.is_none());
}

#[test]
fn unwritable_directory_fails_at_install() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let bad = file.join("sessions");
    let store = SessionStore::new();
    let err = install_jsonl(&store, &bad).unwrap_err();
    assert_eq!(err.code(), "SESSION_DIR_UNWRITABLE");
    assert!(err.to_string().contains(&bad.display().to_string()));
}

#[cfg(unix)]
#[test]
fn read_only_directory_fails_at_install() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o500)).unwrap();
    // Root ignores permission bits; the check is only meaningful otherwise.
    let probe_works = std::fs::write(ro.join("probe"), "x").is_err();
    let result = JsonlStore::new(&ro);
    if probe_works {
        assert_eq!(result.unwrap_err().code(), "SESSION_DIR_UNWRITABLE");
    }
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o700)).unwrap();
}

#[test]
fn created_directories_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b/sessions");
    let store = JsonlStore::new(&nested).unwrap();
    assert_eq!(store.dir(), nested);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&nested).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
    assert!(
        std::fs::read_dir(&nested).unwrap().next().is_none(),
        "probe removed"
    );
}

#[tokio::test]
async fn list_summarises_sessions_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new();
    let _plugin = install_jsonl(&store, dir.path()).unwrap();
    let (a, _ra) = store.create(None, vec![]).unwrap();
    for data in common::sample_log() {
        a.append(data);
    }
    store.flush(&a).await.unwrap();
    let (b, _rb) = store.create(None, vec![]).unwrap();
    b.append(EventPayload::StepStart(StepEvent { turn: 1, step: 1 }));
    store.flush(&b).await.unwrap();
    std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();

    let backend = JsonlStore::new(dir.path()).unwrap();
    let list = backend.list().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].id, a.id());
    assert_eq!(list[0].first_prompt.as_deref(), Some("list files"));
    assert_eq!(list[0].turns, 2);
    assert_eq!(list[0].events, a.len() as u64);
    assert_eq!(list[0].created_ms, a.events()[0].time);
    assert_eq!(list[1].id, b.id());
    assert_eq!(list[1].first_prompt, None);
    assert_eq!(list[1].turns, 0);
    assert_eq!(list_sessions(&dir.path().join("missing")).unwrap(), vec![]);

    let loaded = backend.load(a.id()).unwrap();
    assert_eq!(loaded.events.len(), a.len());
}

#[tokio::test]
async fn a_plugin_installed_late_still_persists_earlier_events() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new();
    let (s, _reg) = store.create(Some("late".into()), vec![]).unwrap();
    s.append(EventPayload::StepStart(StepEvent { turn: 1, step: 1 }));
    let _plugin = install_jsonl(&store, dir.path()).unwrap();
    s.append(EventPayload::StepEnd(StepEvent { turn: 1, step: 1 }));
    store.flush(&s).await.unwrap();
    let log = load_jsonl(&dir.path().join("late.jsonl")).unwrap();
    assert_eq!(log.events.len(), 2);
}

/// A backend whose writes fail: events stay buffered and a later flush
/// (after the failure clears) writes them all.
#[tokio::test]
async fn failed_writes_keep_events_for_the_next_flush() {
    use std::sync::atomic::{AtomicBool, Ordering};
    struct Flaky {
        inner: JsonlStore,
        fail: AtomicBool,
    }
    impl SessionPersistence for Flaky {
        fn open(&self, id: &str) -> Result<u64, SessionError> {
            self.inner.open(id)
        }
        fn append_batch(
            &self,
            id: &str,
            events: &[Arc<dsh_session::SessionEvent>],
        ) -> Result<(), SessionError> {
            if self.fail.load(Ordering::SeqCst) {
                return Err(SessionError::Write {
                    path: "flaky".into(),
                    source: std::io::Error::other("disk full"),
                });
            }
            self.inner.append_batch(id, events)
        }
        fn sync(&self, id: &str) -> Result<(), SessionError> {
            self.inner.sync(id)
        }
        fn load(&self, id: &str) -> Result<dsh_session::LoadedLog, SessionError> {
            self.inner.load(id)
        }
        fn list(&self) -> Result<Vec<dsh_session::SessionSummary>, SessionError> {
            self.inner.list()
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(Flaky {
        inner: JsonlStore::new(dir.path()).unwrap(),
        fail: AtomicBool::new(true),
    });
    let store = SessionStore::new();
    let _plugin = dsh_session::install_persistence(&store, backend.clone());
    let (s, _reg) = store.create(Some("f".into()), vec![]).unwrap();
    s.append(EventPayload::StepStart(StepEvent { turn: 1, step: 1 }));
    let err = store.flush(&s).await.unwrap_err();
    assert_eq!(err.code(), "SESSION_WRITE_FAILED");
    s.append(EventPayload::StepEnd(StepEvent { turn: 1, step: 1 }));
    backend.fail.store(false, Ordering::SeqCst);
    store.flush(&s).await.unwrap();
    let log = load_jsonl(&dir.path().join("f.jsonl")).unwrap();
    let seqs: Vec<_> = log.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 1]);
}

/// A flush covers every event appended before it, even one whose
/// `session/event` notification has not reached the plugin yet (here: the
/// flush runs inside an earlier listener of that very notification).
#[test]
fn flush_covers_events_not_yet_announced() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let store = Arc::new(SessionStore::new());
    let flushed_lines = Arc::new(std::sync::Mutex::new(None));
    let (st, out, path) = (
        store.clone(),
        flushed_lines.clone(),
        dir.path().join("early.jsonl"),
    );
    let _early = store.on_event().on(move |(s, e)| {
        if e.seq == 0 {
            rt.block_on(st.flush(s)).unwrap();
            *out.lock().unwrap() = Some(lines(&path));
        }
    });
    let _plugin = install_jsonl(&store, dir.path()).unwrap();
    let (s, _reg) = store.create(Some("early".into()), vec![]).unwrap();
    s.append(EventPayload::StepStart(StepEvent { turn: 1, step: 1 }));
    assert_eq!(*flushed_lines.lock().unwrap(), Some(1));
    // The late notification does not write it twice.
    s.append(EventPayload::StepEnd(StepEvent { turn: 1, step: 1 }));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(store.flush(&s)).unwrap();
    let log = load_jsonl(&dir.path().join("early.jsonl")).unwrap();
    let seqs: Vec<_> = log.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 1]);
}
