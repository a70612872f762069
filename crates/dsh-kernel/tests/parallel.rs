//! `ParallelHook`: listeners run concurrently and are awaited together.

mod common;

use std::sync::{Arc, Mutex};

use common::{signal, still_pending, within, Log};
use dsh_kernel::{BoxError, DshError, ErrorCode, ParallelHook, Registration, Scope};

#[tokio::test]
async fn call_without_listeners_is_ok() {
    let hook = ParallelHook::<u32>::new("test/parallel");
    assert!(hook.is_empty());
    assert_eq!(hook.name(), "test/parallel");
    within(hook.call(1)).await.unwrap();
}

#[tokio::test]
async fn every_listener_gets_the_argument() {
    let hook = ParallelHook::<String>::new("test/arg");
    let log = Log::new();
    for name in ["a", "b"] {
        let l = log.clone();
        let _keep = hook.on(move |arg: String| {
            let l = l.clone();
            async move {
                l.push(format!("{name}:{arg}"));
                Ok(())
            }
        });
    }

    within(hook.call("x".to_string())).await.unwrap();

    let mut got = log.entries();
    got.sort();
    assert_eq!(got, ["a:x", "b:x"]);
    assert_eq!(hook.len(), 2);
}

#[tokio::test]
async fn listeners_run_concurrently() {
    // Each listener signals the other and then waits for the other's signal:
    // run one after the other, the first would wait forever.
    let hook = ParallelHook::<()>::new("test/concurrent");
    let (a_ready, a_ready_rx) = signal();
    let (b_ready, b_ready_rx) = signal();
    let _a = hook.on(move |()| {
        let (a_ready, b_ready_rx) = (a_ready.clone(), b_ready_rx.clone());
        async move {
            a_ready.fire();
            b_ready_rx.wait().await;
            Ok(())
        }
    });
    let _b = hook.on(move |()| {
        let (b_ready, a_ready_rx) = (b_ready.clone(), a_ready_rx.clone());
        async move {
            b_ready.fire();
            a_ready_rx.wait().await;
            Ok(())
        }
    });

    within(hook.call(())).await.unwrap();
}

#[tokio::test]
async fn a_failure_does_not_cancel_the_others_and_is_reported() {
    let hook = ParallelHook::<()>::new("test/failure");
    let log = Log::new();
    let (failed, failed_rx) = signal();
    let _fails = hook.on(move |()| {
        let failed = failed.clone();
        async move {
            failed.fire();
            Err::<(), BoxError>(DshError::new("FLUSH_FAILED", "disk full").into())
        }
    });
    // Completes only after the other listener has already failed.
    let l = log.clone();
    let _slow = hook.on(move |()| {
        let (l, failed_rx) = (l.clone(), failed_rx.clone());
        async move {
            failed_rx.wait().await;
            l.push("slow listener finished");
            Ok(())
        }
    });

    let err = within(hook.call(())).await.unwrap_err();

    assert_eq!(err.code(), "FLUSH_FAILED");
    assert_eq!(err.message(), "disk full");
    assert_eq!(log.entries(), ["slow listener finished"]);
}

#[tokio::test]
async fn a_panic_does_not_cancel_the_others_and_is_reported() {
    let hook = ParallelHook::<()>::new("test/panic");
    let log = Log::new();
    let (panicking, panicking_rx) = signal();
    let _panics = hook.on(move |()| {
        let panicking = panicking.clone();
        async move {
            panicking.fire();
            if true {
                panic!("flush listener exploded");
            }
            Ok(())
        }
    });
    let l = log.clone();
    let _slow = hook.on(move |()| {
        let (l, panicking_rx) = (l.clone(), panicking_rx.clone());
        async move {
            panicking_rx.wait().await;
            l.push("slow listener finished");
            Ok(())
        }
    });

    let err = within(hook.call(())).await.unwrap_err();

    assert_eq!(err.code(), "LISTENER_PANICKED");
    assert!(err.message().contains("flush listener exploded"), "{err:?}");
    assert_eq!(log.entries(), ["slow listener finished"]);
}

#[tokio::test]
async fn a_listener_panicking_before_returning_its_future_is_contained() {
    let hook = ParallelHook::<()>::new("test/sync-panic");
    let log = Log::new();
    let _panics = hook.on(|()| -> std::future::Ready<Result<(), BoxError>> {
        panic!("panicked while building the future")
    });
    let l = log.clone();
    let _ok = hook.on(move |()| {
        let l = l.clone();
        async move {
            l.push("ran");
            Ok(())
        }
    });

    let err = within(hook.call(())).await.unwrap_err();

    assert_eq!(err.code(), "LISTENER_PANICKED");
    assert!(err.message().contains("building the future"), "{err:?}");
    assert_eq!(log.entries(), ["ran"]);
}

#[tokio::test]
async fn the_first_failure_in_registration_order_is_returned() {
    // The first listener fails last in time; it is still the one reported.
    let hook = ParallelHook::<()>::new("test/first-failure");
    let (second_failed, second_failed_rx) = signal();
    let _first = hook.on(move |()| {
        let second_failed_rx = second_failed_rx.clone();
        async move {
            second_failed_rx.wait().await;
            Err::<(), BoxError>(DshError::new("FIRST", "first listener").into())
        }
    });
    let _second = hook.on(move |()| {
        let second_failed = second_failed.clone();
        async move {
            second_failed.fire();
            Err::<(), BoxError>("plain failure".into())
        }
    });

    let err = within(hook.call(())).await.unwrap_err();

    assert_eq!(err.code(), "FIRST");
}

#[tokio::test]
async fn a_plain_error_is_wrapped_with_listener_failed() {
    let hook = ParallelHook::<()>::new("test/plain");
    let _f = hook.on(|()| async { Err::<(), BoxError>("plain failure".into()) });

    let err = within(hook.call(())).await.unwrap_err();

    assert_eq!(err.code(), "LISTENER_FAILED");
    assert_eq!(err.message(), "plain failure");
}

#[tokio::test]
async fn undone_listener_no_longer_runs() {
    let hook = ParallelHook::<u32>::new("test/undo");
    let log = Log::new();
    let l = log.clone();
    let reg = hook.on(move |arg: u32| {
        let l = l.clone();
        async move {
            l.push(format!("ran:{arg}"));
            Ok(())
        }
    });

    within(hook.call(1)).await.unwrap();
    reg.undo();
    within(hook.call(2)).await.unwrap();

    assert_eq!(log.entries(), ["ran:1"]);
    assert!(hook.is_empty());
}

#[tokio::test]
async fn close_and_wait_waits_for_an_in_flight_listener() {
    let hook = Arc::new(ParallelHook::<()>::new("test/close-and-wait"));
    let log = Log::new();
    let (entered, entered_rx) = signal();
    let (release, release_rx) = signal();
    let scope = Scope::new();
    let l = log.clone();
    scope.add(hook.on(move |()| {
        let (l, entered, release_rx) = (l.clone(), entered.clone(), release_rx.clone());
        async move {
            entered.fire();
            release_rx.wait().await;
            l.push("listener done");
            Ok(())
        }
    }));

    let h = hook.clone();
    let call = tokio::spawn(async move { h.call(()).await });
    within(entered_rx.wait()).await;
    let mut closing = Box::pin(scope.close_and_wait());
    assert!(still_pending(&mut closing).await);

    release.fire();
    within(closing).await;
    log.push("closed");

    assert_eq!(log.entries(), ["listener done", "closed"]);
    within(call).await.unwrap().unwrap();
}

#[tokio::test]
async fn a_listener_undone_while_the_call_starts_does_not_run() {
    // The first listener undoes the second while being started (before its
    // future is returned): the second must not start in this call.
    let hook = ParallelHook::<u32>::new("test/undo-during-start");
    let log = Log::new();
    let victim: Arc<Mutex<Option<Registration>>> = Arc::new(Mutex::new(None));
    let v = victim.clone();
    let _killer = hook.on(move |_: u32| {
        if let Some(reg) = v.lock().unwrap().take() {
            reg.undo();
        }
        async { Ok(()) }
    });
    let l = log.clone();
    *victim.lock().unwrap() = Some(hook.on(move |arg: u32| {
        let l = l.clone();
        async move {
            l.push(format!("victim:{arg}"));
            Ok(())
        }
    }));

    within(hook.call(1)).await.unwrap();

    assert!(log.entries().is_empty(), "{:?}", log.entries());
    assert_eq!(hook.len(), 1);
}
