//! Registration handles and scopes that undo them.

use crate::sync::lock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// The handle of one registration (listener, service, tool, adapter, …).
///
/// [`Registration::undo`] removes what was registered. Dropping the handle
/// does **not** undo it: the registration then lives as long as the registry.
/// Put handles into a [`Scope`] to have them undone together.
#[must_use = "a registration is undone only through its handle or a Scope; add it to a Scope or call undo()"]
pub struct Registration {
    undo: Option<Box<dyn FnOnce() + Send + 'static>>,
    gate: Option<Arc<ActivityGate>>,
}

impl Registration {
    /// A registration whose undo runs `undo` (at most once).
    pub fn new(undo: impl FnOnce() + Send + 'static) -> Self {
        Self {
            undo: Some(Box::new(undo)),
            gate: None,
        }
    }

    /// A registration with nothing to undo.
    pub fn noop() -> Self {
        Self {
            undo: None,
            gate: None,
        }
    }

    /// Attaches an activity gate: [`Scope::close_and_wait`] waits until the
    /// gate has no active callers left.
    pub(crate) fn with_gate(mut self, gate: Arc<ActivityGate>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Combines several registrations into one; undo runs them in reverse order.
    pub fn merge(regs: Vec<Registration>) -> Self {
        let gates: Vec<Arc<ActivityGate>> = regs.iter().filter_map(|r| r.gate.clone()).collect();
        let mut reg = Registration::new(move || {
            for r in regs.into_iter().rev() {
                r.undo();
            }
        });
        if !gates.is_empty() {
            reg.gate = Some(Arc::new(ActivityGate::group(gates)));
        }
        reg
    }

    /// Undoes the registration now. After this returns no listener of it
    /// starts again (one already running may still finish; see
    /// [`Scope::close_and_wait`]).
    pub fn undo(mut self) {
        if let Some(undo) = self.undo.take() {
            undo();
        }
    }

    fn take_gate(&mut self) -> Option<Arc<ActivityGate>> {
        self.gate.take()
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("pending", &self.undo.is_some())
            .finish()
    }
}

/// Counts in-flight invocations of one listener so a closing scope can await
/// quiescence.
#[derive(Default)]
pub(crate) struct ActivityGate {
    active: AtomicUsize,
    idle: Notify,
    members: Vec<Arc<ActivityGate>>,
    /// A child scope: quiescent once every listener it ever held is.
    scope: Option<Scope>,
}

impl ActivityGate {
    fn group(members: Vec<Arc<ActivityGate>>) -> Self {
        Self {
            members,
            ..Default::default()
        }
    }

    fn scope(scope: Scope) -> Self {
        Self {
            scope: Some(scope),
            ..Default::default()
        }
    }

    /// Marks one invocation as running until the guard drops.
    pub(crate) fn enter(self: &Arc<Self>) -> ActivityGuard {
        self.active.fetch_add(1, Ordering::SeqCst);
        ActivityGuard { gate: self.clone() }
    }

    /// Resolves once no invocation is running.
    pub(crate) async fn quiesce(&self) {
        for m in &self.members {
            Box::pin(m.quiesce()).await;
        }
        if let Some(scope) = &self.scope {
            Box::pin(scope.quiesce()).await;
        }
        loop {
            let notified = self.idle.notified();
            if self.active.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// Held while a listener runs; dropping it may wake a waiting scope.
pub(crate) struct ActivityGuard {
    gate: Arc<ActivityGate>,
}

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        if self.gate.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.gate.idle.notify_waiters();
        }
    }
}

/// A collection of registrations undone together, in reverse order.
///
/// A plugin runs inside a scope; closing the scope unloads the plugin. A
/// registration added to a closed scope is undone immediately. Cloning a scope
/// yields another handle to the same collection.
#[derive(Clone, Default)]
pub struct Scope {
    inner: Arc<Mutex<ScopeInner>>,
}

#[derive(Default)]
struct ScopeInner {
    regs: Vec<Registration>,
    closed: bool,
    /// Gates of the registrations already undone, so that every later
    /// `close_and_wait` (and a closing parent) still awaits their listeners.
    undone: Vec<Arc<ActivityGate>>,
}

impl Scope {
    /// A new, open scope.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a registration; if the scope is already closed it is undone now.
    pub fn add(&self, mut reg: Registration) {
        let mut inner = lock(&self.inner);
        if inner.closed {
            inner.undone.extend(reg.take_gate());
            drop(inner);
            reg.undo();
        } else {
            inner.regs.push(reg);
        }
    }

    /// A child scope: closed when this scope closes, or on its own earlier.
    /// [`Scope::close_and_wait`] on this scope also awaits the child's
    /// listeners.
    pub fn child(&self) -> Scope {
        let child = Scope::new();
        let handle = child.clone();
        let gate = Arc::new(ActivityGate::scope(child.clone()));
        self.add(Registration::new(move || handle.close()).with_gate(gate));
        child
    }

    /// Whether [`Scope::close`] has run.
    pub fn is_closed(&self) -> bool {
        lock(&self.inner).closed
    }

    /// Undoes every registration in reverse order of addition. Idempotent.
    /// After it returns none of the scope's listeners starts again.
    pub fn close(&self) {
        self.take_all_and_undo();
    }

    /// [`Scope::close`], then waits until no listener of this scope (or of
    /// its child scopes) is still running, also when the scope was closed
    /// before. Do not await this from inside one of the scope's own listeners:
    /// it would wait for itself.
    pub async fn close_and_wait(&self) {
        self.take_all_and_undo();
        self.quiesce().await;
    }

    /// Waits until no listener of an undone registration is running.
    async fn quiesce(&self) {
        let gates = lock(&self.inner).undone.clone();
        for gate in gates {
            gate.quiesce().await;
        }
    }

    fn take_all_and_undo(&self) {
        let regs = {
            let mut inner = lock(&self.inner);
            inner.closed = true;
            let mut regs = std::mem::take(&mut inner.regs);
            // Record the gates before undoing, so that a concurrent
            // `close_and_wait` on a clone of this scope waits for them too.
            let gates: Vec<_> = regs.iter_mut().filter_map(|r| r.take_gate()).collect();
            inner.undone.extend(gates);
            regs
        };
        for reg in regs.into_iter().rev() {
            reg.undo();
        }
    }
}

impl std::fmt::Debug for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = lock(&self.inner);
        f.debug_struct("Scope")
            .field("registrations", &inner.regs.len())
            .field("closed", &inner.closed)
            .finish()
    }
}
