//! Typed hooks with three dispatch modes: emit, waterfall, parallel.
//!
//! All three share one listener list: registration order, `prepend` puts a
//! listener first, a listener whose registration was undone never starts
//! again (even inside a dispatch already in flight).

use crate::error::ErrorCode;
use crate::sync::lock;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;

use crate::error::{BoxError, DshError};
use crate::registration::{ActivityGate, Registration};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Code of the error returned when a listener returned an error.
use dsh_protocol::codes::LISTENER_FAILED;
/// Code of the error returned when a listener panicked.
use dsh_protocol::codes::LISTENER_PANICKED;

struct Slot<F: ?Sized> {
    alive: AtomicBool,
    gate: Arc<ActivityGate>,
    f: Box<F>,
}

/// The listeners of one hook, copied on write: a dispatch takes the current
/// list with one reference-count increment, never an allocation.
type SlotList<F> = Arc<[Arc<Slot<F>>]>;

/// The listener list shared by the three hook kinds.
struct Listeners<F: ?Sized> {
    name: &'static str,
    slots: Arc<Mutex<SlotList<F>>>,
}

impl<F: ?Sized + Send + Sync + 'static> Listeners<F> {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            slots: Arc::new(Mutex::new(Arc::from(Vec::new()))),
        }
    }

    fn add(&self, f: Box<F>, prepend: bool) -> Registration {
        let slot = Arc::new(Slot {
            alive: AtomicBool::new(true),
            gate: Arc::new(ActivityGate::default()),
            f,
        });
        {
            let mut slots = lock(&self.slots);
            let mut next: Vec<Arc<Slot<F>>> = Vec::with_capacity(slots.len() + 1);
            if prepend {
                next.push(slot.clone());
                next.extend(slots.iter().cloned());
            } else {
                next.extend(slots.iter().cloned());
                next.push(slot.clone());
            }
            *slots = Arc::from(next);
        }
        let list = Arc::downgrade(&self.slots);
        let gate = slot.gate.clone();
        Registration::new(move || {
            slot.alive.store(false, Ordering::SeqCst);
            if let Some(list) = list.upgrade() {
                let mut slots = lock(&list);
                let next: Vec<Arc<Slot<F>>> = slots
                    .iter()
                    .filter(|s| !Arc::ptr_eq(s, &slot))
                    .cloned()
                    .collect();
                *slots = Arc::from(next);
            }
        })
        .with_gate(gate)
    }

    fn snapshot(&self) -> SlotList<F> {
        lock(&self.slots).clone()
    }

    fn len(&self) -> usize {
        lock(&self.slots).len()
    }
}

/// The message of a caught panic payload (`panic!("…")` with a literal or a
/// formatted string), or `None` for any other payload type.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> Option<String> {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    panic_text(payload).unwrap_or_else(|| "listener panicked".to_string())
}

/// Converts a listener's error into a [`DshError`], keeping the code of an
/// error that already is one.
fn listener_error(err: BoxError) -> DshError {
    match err.downcast::<DshError>() {
        Ok(e) => *e,
        Err(other) => DshError::wrap(LISTENER_FAILED, other),
    }
}

type EmitFn<A> = dyn Fn(&A) -> Result<(), BoxError> + Send + Sync;

/// Synchronous notification: every listener runs, in order, on the caller's
/// thread. A failing or panicking listener is contained and logged; later
/// listeners still run. [`EmitHook::emit`] returns nothing;
/// [`EmitHook::emit_checked`] reports the first failure, for the few callers
/// that must stop on it.
pub struct EmitHook<A: ?Sized + 'static> {
    listeners: Listeners<EmitFn<A>>,
}

impl<A: ?Sized + 'static> EmitHook<A> {
    /// A hook named `name` (e.g. `"session/event"`), used in logs.
    pub fn new(name: &'static str) -> Self {
        Self {
            listeners: Listeners::new(name),
        }
    }

    /// The hook's name.
    pub fn name(&self) -> &'static str {
        self.listeners.name
    }

    /// Adds an infallible listener after the existing ones.
    pub fn on(&self, f: impl Fn(&A) + Send + Sync + 'static) -> Registration {
        self.listeners.add(
            Box::new(move |a: &A| {
                f(a);
                Ok(())
            }),
            false,
        )
    }

    /// Adds a listener that may fail; its error is contained and reported.
    pub fn try_on(
        &self,
        f: impl Fn(&A) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Registration {
        self.listeners.add(Box::new(f), false)
    }

    /// Adds a fallible listener before the existing ones.
    pub fn prepend(
        &self,
        f: impl Fn(&A) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Registration {
        self.listeners.add(Box::new(f), true)
    }

    /// Number of registered listeners.
    pub fn len(&self) -> usize {
        self.listeners.len()
    }

    /// Whether no listener is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls every live listener in order. A failing or panicking listener
    /// is contained and logged; every listener runs.
    pub fn emit(&self, arg: &A) {
        // Failures are logged inside; a notification has no one to report to.
        let _ = self.emit_checked(arg);
    }

    /// [`EmitHook::emit`], returning the first failure (every listener still
    /// runs; all failures are logged).
    ///
    /// # Errors
    /// The first listener error (its own code when it is a [`DshError`],
    /// else `LISTENER_FAILED`) or panic (`LISTENER_PANICKED`).
    pub fn emit_checked(&self, arg: &A) -> Result<(), DshError> {
        let mut first: Option<DshError> = None;
        for slot in self.listeners.snapshot().iter() {
            // Enter before checking `alive`: a concurrent close_and_wait then
            // either sees this call active or this call sees the undo.
            let _active = slot.gate.enter();
            if !slot.alive.load(Ordering::SeqCst) {
                continue;
            }
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| (slot.f)(arg)));
            let err = match outcome {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => listener_error(e),
                Err(payload) => DshError::new(LISTENER_PANICKED, panic_message(&*payload)),
            };
            tracing::warn!(
                hook = self.listeners.name,
                code = err.code(),
                "listener failed: {err}"
            );
            first.get_or_insert(err);
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

type WaterfallFn<A, R> = dyn Fn(A, Next<A, R>) -> BoxFuture<'static, R> + Send + Sync;
type CoreFn<A, R> = Arc<dyn Fn(A) -> BoxFuture<'static, R> + Send + Sync>;
/// The listeners of one waterfall dispatch, fixed when it starts.
type Chain<A, R> = Arc<[Arc<Slot<WaterfallFn<A, R>>>]>;

/// Around-middleware: each listener receives the argument and a [`Next`]; it
/// may change the argument and call `next`, wrap `next`'s result, or return
/// its own result without calling `next` (a veto). The innermost `next` is the
/// core behaviour given to [`WaterfallHook::call`].
///
/// Failures are part of `R` (usually a `Result`); the hook does not catch
/// panics: the service declaring it decides (the tool registry does).
pub struct WaterfallHook<A, R> {
    listeners: Listeners<WaterfallFn<A, R>>,
}

/// The rest of a waterfall chain, handed to each listener.
///
/// Cloning is cheap; a listener may run the rest of the chain more than once
/// (a retry listener does).
pub struct Next<A, R> {
    chain: Chain<A, R>,
    pos: usize,
    core: CoreFn<A, R>,
}

impl<A, R> Clone for Next<A, R> {
    fn clone(&self) -> Self {
        Self {
            chain: self.chain.clone(),
            pos: self.pos,
            core: self.core.clone(),
        }
    }
}

impl<A: Send + 'static, R: Send + 'static> Next<A, R> {
    /// Runs the rest of the chain (later listeners, then the core) with `arg`.
    /// Listeners undone since the dispatch started are skipped.
    pub fn run(self, arg: A) -> BoxFuture<'static, R> {
        let Next { chain, pos, core } = self;
        let mut i = pos;
        while i < chain.len() {
            // Enter before checking `alive` (see `EmitHook::emit`).
            let guard = chain[i].gate.enter();
            if chain[i].alive.load(Ordering::SeqCst) {
                let slot = chain[i].clone();
                let next = Next {
                    chain: chain.clone(),
                    pos: i + 1,
                    core,
                };
                let fut = (slot.f)(arg, next);
                return Box::pin(async move {
                    let _active = guard;
                    fut.await
                });
            }
            i += 1;
        }
        core(arg)
    }
}

impl<A: Send + 'static, R: Send + 'static> WaterfallHook<A, R> {
    /// A hook named `name` (e.g. `"tools/execute"`).
    pub fn new(name: &'static str) -> Self {
        Self {
            listeners: Listeners::new(name),
        }
    }

    /// The hook's name.
    pub fn name(&self) -> &'static str {
        self.listeners.name
    }

    /// Adds a listener after the existing ones (runs later, closer to the core).
    pub fn on<F, Fut>(&self, f: F) -> Registration
    where
        F: Fn(A, Next<A, R>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
    {
        self.listeners
            .add(Box::new(move |a, next| Box::pin(f(a, next))), false)
    }

    /// Adds a listener before the existing ones (runs first, outermost).
    pub fn prepend<F, Fut>(&self, f: F) -> Registration
    where
        F: Fn(A, Next<A, R>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
    {
        self.listeners
            .add(Box::new(move |a, next| Box::pin(f(a, next))), true)
    }

    /// Number of registered listeners.
    pub fn len(&self) -> usize {
        self.listeners.len()
    }

    /// Whether no listener is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs the chain over `arg` with `core` as the innermost behaviour.
    pub fn call<C, Fut>(&self, arg: A, core: C) -> BoxFuture<'static, R>
    where
        C: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
    {
        let next = Next {
            chain: self.listeners.snapshot(),
            pos: 0,
            core: Arc::new(move |a| Box::pin(core(a))),
        };
        next.run(arg)
    }
}

type ParallelFn<A> = dyn Fn(A) -> BoxFuture<'static, Result<(), BoxError>> + Send + Sync;

/// All listeners run concurrently and are awaited together (the durability
/// checkpoint). A failing or panicking listener does not cancel the others;
/// [`ParallelHook::call`] reports the first failure in registration order.
pub struct ParallelHook<A> {
    listeners: Listeners<ParallelFn<A>>,
}

impl<A: Clone + Send + 'static> ParallelHook<A> {
    /// A hook named `name` (e.g. `"session/flush"`).
    pub fn new(name: &'static str) -> Self {
        Self {
            listeners: Listeners::new(name),
        }
    }

    /// The hook's name.
    pub fn name(&self) -> &'static str {
        self.listeners.name
    }

    /// Adds a listener.
    pub fn on<F, Fut>(&self, f: F) -> Registration
    where
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        self.listeners.add(Box::new(move |a| Box::pin(f(a))), false)
    }

    /// Number of registered listeners.
    pub fn len(&self) -> usize {
        self.listeners.len()
    }

    /// Whether no listener is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts every live listener with a clone of `arg` and awaits them all.
    pub async fn call(&self, arg: A) -> Result<(), DshError> {
        let futures: Vec<_> = self
            .listeners
            .snapshot()
            .iter()
            .filter_map(|slot| {
                // Enter before checking `alive` (see `EmitHook::emit`).
                let guard = slot.gate.enter();
                if !slot.alive.load(Ordering::SeqCst) {
                    return None;
                }
                let fut = std::panic::catch_unwind(AssertUnwindSafe(|| (slot.f)(arg.clone())));
                Some(async move {
                    let _active = guard;
                    match fut {
                        Ok(fut) => match AssertUnwindSafe(fut).catch_unwind().await {
                            Ok(Ok(())) => Ok(()),
                            Ok(Err(e)) => Err(listener_error(e)),
                            Err(p) => Err(DshError::new(LISTENER_PANICKED, panic_message(&*p))),
                        },
                        Err(p) => Err(DshError::new(LISTENER_PANICKED, panic_message(&*p))),
                    }
                })
            })
            .collect();
        let results = futures_util::future::join_all(futures).await;
        let mut first = None;
        for r in results {
            if let Err(e) = r {
                tracing::warn!(
                    hook = self.listeners.name,
                    code = e.code(),
                    "listener failed: {e}"
                );
                first.get_or_insert(e);
            }
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
