//! `WaterfallHook`: around-middleware with a `next` continuation.

mod common;

use common::{signal, still_pending, within, Log};
use dsh_kernel::{Next, Scope, WaterfallHook};

type Hook = WaterfallHook<u32, String>;

/// A listener that logs on the way in and out and passes everything through.
fn around(
    log: &Log,
    name: &'static str,
) -> impl Fn(u32, Next<u32, String>) -> dsh_kernel::BoxFuture<'static, String> + Send + Sync + 'static
{
    let log = log.clone();
    move |arg, next| {
        let log = log.clone();
        Box::pin(async move {
            log.push(format!("{name}>"));
            let out = next.run(arg).await;
            log.push(format!("<{name}"));
            out
        })
    }
}

fn core(log: &Log) -> impl Fn(u32) -> std::future::Ready<String> + Send + Sync + 'static {
    let log = log.clone();
    move |arg| {
        log.push(format!("core:{arg}"));
        std::future::ready(format!("core:{arg}"))
    }
}

#[tokio::test]
async fn core_runs_when_no_listener_is_registered() {
    let hook = Hook::new("test/waterfall");
    let log = Log::new();
    assert!(hook.is_empty());

    let out = hook.call(5, core(&log)).await;

    assert_eq!(out, "core:5");
    assert_eq!(log.entries(), ["core:5"]);
    assert_eq!(hook.name(), "test/waterfall");
}

#[tokio::test]
async fn first_registered_listener_is_outermost() {
    let hook = Hook::new("test/order");
    let log = Log::new();
    let _a = hook.on(around(&log, "a"));
    let _b = hook.on(around(&log, "b"));
    let _c = hook.on(around(&log, "c"));

    let out = hook.call(1, core(&log)).await;

    assert_eq!(out, "core:1");
    assert_eq!(
        log.entries(),
        ["a>", "b>", "c>", "core:1", "<c", "<b", "<a"]
    );
    assert_eq!(hook.len(), 3);
}

#[tokio::test]
async fn prepend_runs_first() {
    let hook = Hook::new("test/prepend");
    let log = Log::new();
    let _a = hook.on(around(&log, "a"));
    let _b = hook.on(around(&log, "b"));
    let _p = hook.prepend(around(&log, "p"));

    hook.call(0, core(&log)).await;

    assert_eq!(
        log.entries(),
        ["p>", "a>", "b>", "core:0", "<b", "<a", "<p"]
    );
}

#[tokio::test]
async fn changed_argument_flows_inward_and_results_are_wrapped_outward() {
    let hook = Hook::new("test/modify");
    let _add = hook.on(|arg: u32, next: Next<u32, String>| async move {
        let inner = next.run(arg + 1).await;
        format!("add({inner})")
    });
    let _mul = hook.on(|arg: u32, next: Next<u32, String>| async move {
        let inner = next.run(arg * 10).await;
        format!("mul({inner})")
    });

    let out = hook
        .call(1, |arg| async move { format!("core:{arg}") })
        .await;

    // (1 + 1) * 10 reaches the core; results wrap in reverse.
    assert_eq!(out, "add(mul(core:20))");
}

#[tokio::test]
async fn veto_skips_later_listeners_and_the_core() {
    let hook = Hook::new("test/veto");
    let log = Log::new();
    let _a = hook.on(around(&log, "a"));
    let l = log.clone();
    let _veto = hook.on(move |arg: u32, _next: Next<u32, String>| {
        l.push("veto");
        async move { format!("vetoed:{arg}") }
    });
    let _c = hook.on(around(&log, "c"));

    let out = hook.call(3, core(&log)).await;

    assert_eq!(out, "vetoed:3");
    assert_eq!(log.entries(), ["a>", "veto", "<a"]);
}

#[tokio::test]
async fn undone_listener_is_skipped() {
    let hook = Hook::new("test/undo");
    let log = Log::new();
    let _a = hook.on(around(&log, "a"));
    let b = hook.on(around(&log, "b"));
    b.undo();

    hook.call(2, core(&log)).await;

    assert_eq!(log.entries(), ["a>", "core:2", "<a"]);
    assert_eq!(hook.len(), 1);
}

#[tokio::test]
async fn scope_closed_while_in_flight_skips_its_listener_and_the_core_still_runs() {
    let hook = Hook::new("test/in-flight-close");
    let log = Log::new();
    let (entered, entered_rx) = signal();
    let (release, release_rx) = signal();

    // A (outside the scope) parks before calling next.
    let l = log.clone();
    let _a = hook.on(move |arg: u32, next: Next<u32, String>| {
        let (l, entered, release_rx) = (l.clone(), entered.clone(), release_rx.clone());
        async move {
            l.push("a>");
            entered.fire();
            release_rx.wait().await;
            let out = next.run(arg).await;
            l.push("<a");
            out
        }
    });
    // B lives in the scope that is closed while A is parked.
    let scope = Scope::new();
    scope.add(hook.on(around(&log, "b")));

    let call = tokio::spawn(hook.call(9, core(&log)));
    within(entered_rx.wait()).await;
    scope.close();
    release.fire();
    let out = within(call).await.unwrap();

    assert_eq!(out, "core:9");
    assert_eq!(log.entries(), ["a>", "core:9", "<a"]);
}

#[tokio::test]
async fn close_and_wait_waits_for_an_in_flight_listener() {
    let hook = Hook::new("test/close-and-wait");
    let log = Log::new();
    let (entered, entered_rx) = signal();
    let (release, release_rx) = signal();

    let scope = Scope::new();
    let l = log.clone();
    scope.add(hook.on(move |arg: u32, next: Next<u32, String>| {
        let (l, entered, release_rx) = (l.clone(), entered.clone(), release_rx.clone());
        async move {
            entered.fire();
            release_rx.wait().await;
            let out = next.run(arg).await;
            l.push("listener done");
            out
        }
    }));

    let call = tokio::spawn(hook.call(1, core(&log)));
    within(entered_rx.wait()).await;

    let mut closing = Box::pin(scope.close_and_wait());
    assert!(
        still_pending(&mut closing).await,
        "close_and_wait returned while a listener was still running"
    );
    assert!(scope.is_closed());

    release.fire();
    within(closing).await;
    log.push("closed");

    assert_eq!(log.entries(), ["core:1", "listener done", "closed"]);
    assert_eq!(within(call).await.unwrap(), "core:1");
    assert!(hook.is_empty());
}

#[tokio::test]
async fn close_and_wait_returns_at_once_when_nothing_runs() {
    let hook = Hook::new("test/idle-close");
    let log = Log::new();
    let scope = Scope::new();
    scope.add(hook.on(around(&log, "a")));
    hook.call(1, core(&log)).await;

    within(scope.close_and_wait()).await;

    hook.call(2, core(&log)).await;
    assert_eq!(log.entries(), ["a>", "core:1", "<a", "core:2"]);
}

#[tokio::test]
async fn a_listener_may_run_the_rest_of_the_chain_twice() {
    let hook = Hook::new("test/retry");
    let log = Log::new();
    let _retry = hook.on(|arg: u32, next: Next<u32, String>| async move {
        let first = next.clone().run(arg).await;
        let second = next.run(arg + 1).await;
        format!("{first}+{second}")
    });
    let _inner = hook.on(around(&log, "inner"));

    let out = hook.call(1, core(&log)).await;

    assert_eq!(out, "core:1+core:2");
    assert_eq!(
        log.entries(),
        ["inner>", "core:1", "<inner", "inner>", "core:2", "<inner"]
    );
}
