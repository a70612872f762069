//! Two writers never share a session log: the second is refused with
//! `SESSION_LOCKED` until the first lets go.

use dsh_kernel::ErrorCode;
use dsh_session::{is_locked, JsonlStore, SessionPersistence};

#[test]
fn a_log_has_one_writer_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let first = JsonlStore::new(dir.path()).unwrap();
    let second = JsonlStore::new(dir.path()).unwrap();
    let path = dir.path().join("s1.jsonl");
    assert!(!is_locked(&path), "a missing log is free");

    first.open("s1").unwrap();
    assert!(is_locked(&path));
    let err = second.open("s1").unwrap_err();
    assert_eq!(err.code(), "SESSION_LOCKED");
    assert!(err.to_string().contains("s1.jsonl"), "{err}");
    // Other sessions are unaffected.
    second.open("s2").unwrap();

    first.close("s1");
    assert!(!is_locked(&path));
    second.open("s1").unwrap();
    assert!(is_locked(&path));
}

/// A writer letting go a moment after the second asks (a closing session's
/// last flush, an exiting process) hands the log over: the second waits for
/// it (up to 1 s) instead of calling the log in use.
#[test]
fn a_lock_released_a_moment_later_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let first = std::sync::Arc::new(JsonlStore::new(dir.path()).unwrap());
    let second = JsonlStore::new(dir.path()).unwrap();
    first.open("s1").unwrap();
    let releasing = {
        let first = first.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            first.close("s1");
        })
    };
    let asked = std::time::Instant::now();
    second.open("s1").unwrap();
    assert!(asked.elapsed() >= std::time::Duration::from_millis(150));
    releasing.join().unwrap();
    assert!(
        is_locked(&dir.path().join("s1.jsonl")),
        "the second holds it"
    );
}
