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
