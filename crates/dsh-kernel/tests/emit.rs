//! `EmitHook`: synchronous notification in order, failures contained.

mod common;

use std::sync::{Arc, Mutex};

use common::Log;
use dsh_kernel::{BoxError, DshError, EmitHook, ErrorCode, Registration};

fn recorder(log: &Log, name: &'static str) -> impl Fn(&u32) + Send + Sync + 'static {
    let log = log.clone();
    move |arg: &u32| log.push(format!("{name}:{arg}"))
}

#[test]
fn listeners_run_in_registration_order_with_the_argument() {
    let hook = EmitHook::<u32>::new("test/emit");
    let log = Log::new();
    let _a = hook.on(recorder(&log, "a"));
    let _b = hook.on(recorder(&log, "b"));
    let _c = hook.on(recorder(&log, "c"));

    hook.emit(&7);

    assert_eq!(log.entries(), ["a:7", "b:7", "c:7"]);
    assert_eq!(hook.len(), 3);
    assert_eq!(hook.name(), "test/emit");
}

#[test]
fn emit_without_listeners_is_ok() {
    let hook = EmitHook::<u32>::new("test/empty");
    assert!(hook.is_empty());
    hook.emit(&1);
}

#[test]
fn prepend_runs_before_listeners_registered_earlier() {
    let hook = EmitHook::<u32>::new("test/prepend");
    let log = Log::new();
    let _a = hook.on(recorder(&log, "a"));
    let _b = hook.on(recorder(&log, "b"));
    let l = log.clone();
    let _p1 = hook.prepend(move |_| {
        l.push("p1");
        Ok(())
    });
    let l = log.clone();
    let _p2 = hook.prepend(move |_| {
        l.push("p2");
        Ok(())
    });
    let _c = hook.on(recorder(&log, "c"));

    hook.emit(&0);

    // Each prepend goes before everything present at the time.
    assert_eq!(log.entries(), ["p2", "p1", "a:0", "b:0", "c:0"]);
}

#[test]
fn failing_listener_is_contained_and_the_first_failure_is_returned() {
    let hook = EmitHook::<u32>::new("test/fail");
    let log = Log::new();
    let _a = hook.on(recorder(&log, "a"));
    let l = log.clone();
    let _f1 = hook.try_on(move |_| {
        l.push("f1");
        Err(DshError::new("FIRST_FAILURE", "first went wrong").into())
    });
    let l = log.clone();
    let _f2 = hook.try_on(move |_| {
        l.push("f2");
        Err(DshError::new("SECOND_FAILURE", "second went wrong").into())
    });
    let _b = hook.on(recorder(&log, "b"));

    let err = hook.emit_checked(&1).unwrap_err();

    assert_eq!(log.entries(), ["a:1", "f1", "f2", "b:1"]);
    // A returned DshError keeps its code and message.
    assert_eq!(err.code(), "FIRST_FAILURE");
    assert_eq!(err.message(), "first went wrong");
}

#[test]
fn a_plain_error_is_wrapped_with_listener_failed() {
    let hook = EmitHook::<u32>::new("test/plain");
    let _f = hook
        .try_on(|_| Err(std::io::Error::new(std::io::ErrorKind::NotFound, "no such file").into()));

    let err = hook.emit_checked(&1).unwrap_err();

    assert_eq!(err.code(), "LISTENER_FAILED");
    assert_eq!(err.message(), "no such file");
    assert!(err.cause().is_some(), "the original error is kept as cause");
}

#[test]
fn panicking_listener_is_contained_and_later_listeners_still_run() {
    let hook = EmitHook::<u32>::new("test/panic");
    let log = Log::new();
    let _a = hook.on(recorder(&log, "a"));
    let _p = hook.on(|_| panic!("listener exploded"));
    let _b = hook.on(recorder(&log, "b"));
    let _f = hook.try_on(|_| Err(DshError::new("LATER", "later failure").into()));
    let _c = hook.on(recorder(&log, "c"));

    let err = hook.emit_checked(&2).unwrap_err();

    assert_eq!(log.entries(), ["a:2", "b:2", "c:2"]);
    // The panic came first, so it is the failure reported.
    assert_eq!(err.code(), "LISTENER_PANICKED");
    assert!(err.message().contains("listener exploded"), "{err:?}");

    // The hook stays usable after a panic.
    let err = hook.emit_checked(&3).unwrap_err();
    assert_eq!(err.code(), "LISTENER_PANICKED");
    assert_eq!(log.entries(), ["a:2", "b:2", "c:2", "a:3", "b:3", "c:3"]);
}

#[test]
fn undone_listener_no_longer_runs() {
    let hook = EmitHook::<u32>::new("test/undo");
    let log = Log::new();
    let _a = hook.on(recorder(&log, "a"));
    let b = hook.on(recorder(&log, "b"));
    let _c = hook.on(recorder(&log, "c"));

    hook.emit(&1);
    b.undo();
    hook.emit(&2);

    assert_eq!(log.entries(), ["a:1", "b:1", "c:1", "a:2", "c:2"]);
    assert_eq!(hook.len(), 2);
}

#[test]
fn dropping_a_registration_does_not_undo_it() {
    let hook = EmitHook::<u32>::new("test/drop");
    let log = Log::new();
    drop(hook.on(recorder(&log, "a")));

    hook.emit(&1);

    assert_eq!(log.entries(), ["a:1"]);
}

#[test]
fn listener_undoing_a_later_listener_during_emit_prevents_it_from_running() {
    let hook = EmitHook::<u32>::new("test/undo-during-emit");
    let log = Log::new();
    let victim: Arc<Mutex<Option<Registration>>> = Arc::new(Mutex::new(None));

    let l = log.clone();
    let v = victim.clone();
    let _killer = hook.on(move |_| {
        l.push("killer");
        if let Some(reg) = v.lock().unwrap().take() {
            reg.undo();
        }
    });
    *victim.lock().unwrap() = Some(hook.on(recorder(&log, "victim")));
    let _after = hook.on(recorder(&log, "after"));

    hook.emit(&1);
    hook.emit(&2);

    assert_eq!(log.entries(), ["killer", "after:1", "killer", "after:2"]);
}

#[test]
fn listener_may_undo_itself_during_emit() {
    let hook = EmitHook::<u32>::new("test/self-undo");
    let log = Log::new();
    let own: Arc<Mutex<Option<Registration>>> = Arc::new(Mutex::new(None));
    let l = log.clone();
    let o = own.clone();
    *own.lock().unwrap() = Some(hook.on(move |arg| {
        l.push(format!("once:{arg}"));
        if let Some(reg) = o.lock().unwrap().take() {
            reg.undo();
        }
    }));
    let _b = hook.on(recorder(&log, "b"));

    hook.emit(&1);
    hook.emit(&2);

    assert_eq!(log.entries(), ["once:1", "b:1", "b:2"]);
}

#[test]
fn emit_works_over_unsized_arguments() {
    let hook = EmitHook::<str>::new("test/str");
    let log = Log::new();
    let l = log.clone();
    let _a = hook.on(move |s: &str| l.push(s));
    let _b = hook.try_on(|s: &str| -> Result<(), BoxError> {
        if s.is_empty() {
            Err("empty".into())
        } else {
            Ok(())
        }
    });

    hook.emit("hello");
    assert_eq!(hook.emit_checked("").unwrap_err().code(), "LISTENER_FAILED");
    assert_eq!(log.entries(), ["hello", ""]);
}
