//! `Registration` and `Scope`: undo in reverse order, once, and await
//! quiescence.

mod common;

use common::{signal, still_pending, within, Log};
use dsh_kernel::{EmitHook, Next, Registration, Scope, WaterfallHook};

fn reg(log: &Log, name: &'static str) -> Registration {
    let log = log.clone();
    Registration::new(move || log.push(name))
}

#[test]
fn close_undoes_in_reverse_order_of_addition() {
    let log = Log::new();
    let scope = Scope::new();
    scope.add(reg(&log, "1"));
    scope.add(reg(&log, "2"));
    scope.add(reg(&log, "3"));
    assert!(!scope.is_closed());
    assert!(log.entries().is_empty(), "nothing is undone before close");

    scope.close();

    assert_eq!(log.entries(), ["3", "2", "1"]);
    assert!(scope.is_closed());
}

#[test]
fn close_is_idempotent() {
    let log = Log::new();
    let scope = Scope::new();
    scope.add(reg(&log, "1"));
    scope.add(reg(&log, "2"));

    scope.close();
    scope.close();
    scope.clone().close();

    assert_eq!(log.entries(), ["2", "1"]);
}

#[test]
fn adding_to_a_closed_scope_undoes_at_once() {
    let log = Log::new();
    let scope = Scope::new();
    scope.close();

    scope.add(reg(&log, "late"));

    assert_eq!(log.entries(), ["late"]);
    scope.close();
    assert_eq!(log.entries(), ["late"], "not undone a second time");
}

#[test]
fn clones_share_one_scope() {
    let log = Log::new();
    let scope = Scope::new();
    let other = scope.clone();
    other.add(reg(&log, "via clone"));

    scope.close();

    assert!(other.is_closed());
    assert_eq!(log.entries(), ["via clone"]);
}

#[test]
fn child_scope_closes_with_its_parent_in_reverse_order() {
    let log = Log::new();
    let parent = Scope::new();
    parent.add(reg(&log, "p1"));
    let child = parent.child();
    child.add(reg(&log, "c1"));
    child.add(reg(&log, "c2"));
    parent.add(reg(&log, "p2"));

    parent.close();

    assert!(child.is_closed());
    assert_eq!(log.entries(), ["p2", "c2", "c1", "p1"]);
}

#[test]
fn closing_a_child_leaves_the_parent_open() {
    let log = Log::new();
    let parent = Scope::new();
    parent.add(reg(&log, "p"));
    let child = parent.child();
    child.add(reg(&log, "c"));

    child.close();
    assert_eq!(log.entries(), ["c"]);
    assert!(!parent.is_closed());

    parent.close();
    assert_eq!(log.entries(), ["c", "p"]);
}

#[test]
fn child_of_a_closed_scope_is_closed() {
    let log = Log::new();
    let parent = Scope::new();
    parent.close();

    let child = parent.child();
    assert!(child.is_closed());
    child.add(reg(&log, "c"));
    assert_eq!(log.entries(), ["c"]);
}

#[test]
fn merge_undoes_in_reverse_order() {
    let log = Log::new();
    let merged = Registration::merge(vec![reg(&log, "1"), reg(&log, "2"), reg(&log, "3")]);
    assert!(log.entries().is_empty());

    merged.undo();

    assert_eq!(log.entries(), ["3", "2", "1"]);
}

#[test]
fn merged_registration_in_a_scope_keeps_its_place() {
    let log = Log::new();
    let scope = Scope::new();
    scope.add(reg(&log, "before"));
    scope.add(Registration::merge(vec![reg(&log, "m1"), reg(&log, "m2")]));
    scope.add(reg(&log, "after"));

    scope.close();

    assert_eq!(log.entries(), ["after", "m2", "m1", "before"]);
}

#[test]
fn dropping_a_registration_does_not_undo_it_and_noop_undoes_nothing() {
    let log = Log::new();
    drop(reg(&log, "dropped"));
    Registration::noop().undo();
    let scope = Scope::new();
    scope.add(Registration::noop());
    scope.close();

    assert!(log.entries().is_empty());
}

#[test]
fn closing_a_scope_removes_its_listeners() {
    let hook = EmitHook::<u32>::new("test/scope-listeners");
    let log = Log::new();
    let scope = Scope::new();
    let l = log.clone();
    let _outside = hook.on(move |a| l.push(format!("outside:{a}")));
    let l = log.clone();
    scope.add(hook.on(move |a| l.push(format!("inside:{a}"))));

    hook.emit(&1);
    scope.close();
    hook.emit(&2);

    assert_eq!(log.entries(), ["outside:1", "inside:1", "outside:2"]);
    assert_eq!(hook.len(), 1);
}

#[test]
fn a_registration_outliving_its_hook_can_still_be_undone() {
    let hook = EmitHook::<u32>::new("test/outlive");
    let reg = hook.on(|_| {});
    drop(hook);
    reg.undo();
}

/// A waterfall listener that signals when it starts and finishes only when
/// released; logs "<name> done" on the way out.
fn parked_listener(
    hook: &WaterfallHook<u32, u32>,
    log: &Log,
    name: &'static str,
) -> (
    Registration,
    std::sync::Arc<common::Wait>,
    std::sync::Arc<common::Fire>,
) {
    let (entered, entered_rx) = signal();
    let (release, release_rx) = signal();
    let log = log.clone();
    let reg = hook.on(move |arg: u32, next: Next<u32, u32>| {
        let (log, entered, release_rx) = (log.clone(), entered.clone(), release_rx.clone());
        async move {
            entered.fire();
            release_rx.wait().await;
            let out = next.run(arg).await;
            log.push(format!("{name} done"));
            out
        }
    });
    (reg, entered_rx, release)
}

#[tokio::test]
async fn close_and_wait_after_close_still_waits_for_an_in_flight_listener() {
    let hook = WaterfallHook::<u32, u32>::new("test/close-then-wait");
    let log = Log::new();
    let scope = Scope::new();
    let (reg, entered, release) = parked_listener(&hook, &log, "listener");
    scope.add(reg);

    let call = tokio::spawn(hook.call(1, |a| async move { a }));
    within(entered.wait()).await;
    scope.close();
    let mut waiting = Box::pin(scope.close_and_wait());
    assert!(
        still_pending(&mut waiting).await,
        "close_and_wait after close returned while a listener was still running"
    );

    release.fire();
    within(waiting).await;
    log.push("quiet");
    assert_eq!(log.entries(), ["listener done", "quiet"]);
    assert_eq!(within(call).await.unwrap(), 1);
}

#[tokio::test]
async fn parent_close_and_wait_waits_for_a_child_scope_listener() {
    let hook = WaterfallHook::<u32, u32>::new("test/child-wait");
    let log = Log::new();
    let parent = Scope::new();
    let child = parent.child();
    let (reg, entered, release) = parked_listener(&hook, &log, "child listener");
    child.add(reg);

    let call = tokio::spawn(hook.call(1, |a| async move { a }));
    within(entered.wait()).await;
    let mut closing = Box::pin(parent.close_and_wait());
    assert!(
        still_pending(&mut closing).await,
        "parent close_and_wait returned while a child scope listener was still running"
    );
    assert!(child.is_closed());

    release.fire();
    within(closing).await;
    log.push("quiet");
    assert_eq!(log.entries(), ["child listener done", "quiet"]);
    assert_eq!(within(call).await.unwrap(), 1);
}

#[tokio::test]
async fn close_and_wait_waits_for_a_listener_inside_a_merged_registration() {
    let hook = WaterfallHook::<u32, u32>::new("test/merged-wait");
    let log = Log::new();
    let scope = Scope::new();
    let (reg, entered, release) = parked_listener(&hook, &log, "merged listener");
    scope.add(Registration::merge(vec![Registration::noop(), reg]));

    let call = tokio::spawn(hook.call(1, |a| async move { a }));
    within(entered.wait()).await;
    let mut closing = Box::pin(scope.close_and_wait());
    assert!(still_pending(&mut closing).await);

    release.fire();
    within(closing).await;
    log.push("quiet");
    assert_eq!(log.entries(), ["merged listener done", "quiet"]);
    assert_eq!(within(call).await.unwrap(), 1);
}

#[tokio::test]
async fn close_and_wait_waits_for_every_in_flight_call_of_a_listener() {
    let hook = WaterfallHook::<u32, u32>::new("test/two-calls");
    let log = Log::new();
    let scope = Scope::new();
    // Park each call in the core, so the listener stays active for both.
    let (first_in, first_in_rx) = signal();
    let (second_in, second_in_rx) = signal();
    let (release_first, release_first_rx) = signal();
    let (release_second, release_second_rx) = signal();
    let l = log.clone();
    scope.add(hook.on(move |arg: u32, next: Next<u32, u32>| {
        let l = l.clone();
        async move {
            let out = next.run(arg).await;
            l.push(format!("call {arg} done"));
            out
        }
    }));

    let first = tokio::spawn(hook.call(1, move |a| {
        let (first_in, release_first_rx) = (first_in.clone(), release_first_rx.clone());
        async move {
            first_in.fire();
            release_first_rx.wait().await;
            a
        }
    }));
    let second = tokio::spawn(hook.call(2, move |a| {
        let (second_in, release_second_rx) = (second_in.clone(), release_second_rx.clone());
        async move {
            second_in.fire();
            release_second_rx.wait().await;
            a
        }
    }));
    within(first_in_rx.wait()).await;
    within(second_in_rx.wait()).await;

    let mut closing = Box::pin(scope.close_and_wait());
    assert!(still_pending(&mut closing).await);
    release_first.fire();
    within(first).await.unwrap();
    assert!(
        still_pending(&mut closing).await,
        "one call is still running"
    );
    release_second.fire();
    within(closing).await;
    log.push("quiet");

    assert_eq!(log.entries(), ["call 1 done", "call 2 done", "quiet"]);
    within(second).await.unwrap();
}

#[tokio::test]
async fn close_and_wait_can_run_in_a_spawned_task() {
    let log = Log::new();
    let scope = Scope::new();
    let child = scope.child();
    child.add(reg(&log, "child"));
    scope.add(reg(&log, "parent"));

    let s = scope.clone();
    within(tokio::spawn(async move { s.close_and_wait().await }))
        .await
        .unwrap();

    assert_eq!(log.entries(), ["parent", "child"]);
    // Waiting again on a closed, quiet scope returns at once.
    within(scope.close_and_wait()).await;
}
