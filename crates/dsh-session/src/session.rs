//! [`Session`] (the append-only log with its incremental history) and
//! [`SessionStore`] (the kernel service holding sessions and their hooks).

use dsh_kernel::sync::lock;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use dsh_kernel::{DshError, EmitHook, ParallelHook, Registration};
use dsh_llm::History;

use crate::derive::Deriver;
use crate::error::SessionError;
use dsh_protocol::{EventPayload, SessionEvent, SessionId, EVENT_KINDS};

/// An append-only, typed event log: the only state of a conversation.
///
/// Shared as `Arc<Session>`; every method takes `&self` and is safe to call
/// from any thread. Logged events are handed out as `Arc<SessionEvent>` and
/// can never be changed. The model history is kept incrementally: each
/// append costs O(1) (amortised) whatever the log length, and
/// [`Session::derive_messages`] is an O(1) snapshot.
pub struct Session {
    id: SessionId,
    me: Weak<Session>,
    state: Mutex<LogState>,
    /// The store whose `session/event` hook this session notifies.
    store: Weak<StoreShared>,
    /// Cleared when the session is removed from its store.
    attached: AtomicBool,
}

struct LogState {
    events: Vec<Arc<SessionEvent>>,
    history: Deriver,
    last_turn: u64,
    /// Events appended but not yet announced on `session/event`, in order.
    pending: VecDeque<Arc<SessionEvent>>,
    /// Whether some thread is announcing `pending` right now.
    draining: bool,
}

impl LogState {
    fn record(&mut self, event: Arc<SessionEvent>) {
        let rewind = matches!(event.data, EventPayload::Rewind(_));
        self.history.apply(&event);
        if let EventPayload::TurnStart(start) = &event.data {
            // Turn numbers never repeat, rewound or not.
            self.last_turn = self.last_turn.max(start.turn);
        }
        self.events.push(event);
        if rewind {
            // O(n), once per rewind: the history as the branch point had it.
            self.history = Deriver::replay(&self.events);
        }
    }
}

impl Session {
    /// A session that belongs to no store (nothing is notified on append),
    /// seeded with `seed` (see [`SessionStore::create`] for how seeds are
    /// copied).
    pub fn detached(id: impl Into<SessionId>, seed: Vec<SessionEvent>) -> Arc<Session> {
        Self::build(id.into(), seed, Weak::new())
    }

    fn build(id: SessionId, seed: Vec<SessionEvent>, store: Weak<StoreShared>) -> Arc<Session> {
        // Headroom past the seed: a resumed session keeps appending, and a
        // log exactly at capacity would copy itself on its first append.
        let capacity = seed.len() + seed.len() / 2 + 64;
        let mut state = LogState {
            events: Vec::with_capacity(capacity),
            history: Deriver::with_capacity(capacity),
            last_turn: 0,
            pending: VecDeque::new(),
            draining: false,
        };
        for (i, mut event) in seed.into_iter().enumerate() {
            // `seq` is the position in this log, whatever the source said.
            event.seq = i as u64;
            state.record(Arc::new(event));
        }
        let attached = store.strong_count() > 0;
        Arc::new_cyclic(|me| Session {
            id,
            me: me.clone(),
            state: Mutex::new(state),
            store,
            attached: AtomicBool::new(attached),
        })
    }

    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// Appends an event and returns it. Synchronous and free of I/O: `seq`
    /// is the log length before the append, `time` the current Unix time in
    /// milliseconds. If the session belongs to a store, the store's
    /// `session/event` hook is then emitted with `(session, event)`.
    ///
    /// An [`EventPayload::Other`] whose kind is a built-in kind is stored as the
    /// typed variant when its data fits (so live and replayed derivations
    /// agree); when it does not fit, an error is logged, because such a line
    /// would make the log fail to load.
    ///
    /// Notifications are delivered in `seq` order. An append made from inside
    /// a `session/event` listener (or concurrently from another thread while
    /// one is being delivered) is logged at once and announced right after
    /// the events before it, by the thread already delivering.
    pub fn append(&self, data: EventPayload) -> Arc<SessionEvent> {
        let data = normalize(data);
        let attached = self.attached.load(Ordering::SeqCst);
        let event;
        {
            let mut st = self.lock();
            event = Arc::new(SessionEvent {
                seq: st.events.len() as u64,
                time: now_ms(),
                data,
            });
            st.record(event.clone());
            if !attached {
                return event;
            }
            st.pending.push_back(event.clone());
            if st.draining {
                return event;
            }
            st.draining = true;
        }
        self.deliver_pending();
        event
    }

    /// Announces queued events on `session/event` until none is left.
    fn deliver_pending(&self) {
        let store = self.store.upgrade();
        let me = self.me.upgrade();
        loop {
            let next = {
                let mut st = self.lock();
                match st.pending.pop_front() {
                    Some(e) => e,
                    None => {
                        st.draining = false;
                        return;
                    }
                }
            };
            if let (Some(store), Some(me), true) =
                (&store, &me, self.attached.load(Ordering::SeqCst))
            {
                // Listener failures are contained and logged by the hook;
                // an append must not fail because an observer did.
                store.on_event.emit(&(me.clone(), next));
            }
        }
    }

    /// A snapshot of the log. The events are shared and immutable.
    pub fn events(&self) -> Vec<Arc<SessionEvent>> {
        self.lock().events.clone()
    }

    /// The events from position `from` on (empty when `from` is past the end).
    pub fn events_since(&self, from: usize) -> Vec<Arc<SessionEvent>> {
        let st = self.lock();
        st.events.get(from..).map(<[_]>::to_vec).unwrap_or_default()
    }

    /// Number of logged events.
    pub fn len(&self) -> usize {
        self.lock().events.len()
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The model history derived from the log (reference rules, see
    /// [`derive_messages`](crate::derive_messages)). O(1): a snapshot of the
    /// incrementally maintained history; later appends do not change it.
    pub fn derive_messages(&self) -> History {
        self.lock().history.history()
    }

    /// [`Session::derive_messages`] with the position of each message (the
    /// `seq` of the event it came from, a summary's being the start of the
    /// range it replaced: [`Deriver::seqs`](crate::Deriver::seqs), strictly
    /// increasing); O(n).
    pub fn derive_messages_with_seqs(&self) -> (History, Vec<u64>) {
        let st = self.lock();
        (st.history.history(), st.history.seqs().to_vec())
    }

    /// The turn number of the last `turn/start` event, 0 if there is none.
    pub fn last_turn(&self) -> u64 {
        self.lock().last_turn
    }

    /// Whether the session still belongs to a store (and notifies it).
    pub fn is_attached(&self) -> bool {
        self.attached.load(Ordering::SeqCst)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LogState> {
        lock(&self.state)
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("events", &self.len())
            .field("attached", &self.is_attached())
            .finish()
    }
}

/// Turns an `Other` event that uses a built-in kind into the typed variant.
fn normalize(data: EventPayload) -> EventPayload {
    match data {
        EventPayload::Other { kind, data } if EVENT_KINDS.contains(&kind.as_str()) => {
            match EventPayload::from_parts(kind.clone(), data.clone()) {
                Ok(typed) => typed,
                Err(e) => {
                    tracing::error!(
                        kind = %kind,
                        "plugin event uses a built-in kind with data that does not fit it ({e}); \
                         the saved log will not load back"
                    );
                    EventPayload::Other { kind, data }
                }
            }
        }
        other => other,
    }
}

/// Current Unix time in milliseconds (0 if the clock is before 1970).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A new time-ordered, globally unique session id: `s-<UUIDv7>`.
pub fn new_session_id() -> SessionId {
    SessionId::new(format!("s-{}", uuid::Uuid::now_v7()))
}

/// Checks that `id` can name a session (and its log file): non-empty, at
/// most 200 bytes, no `/`, `\` or NUL, not starting with `.`.
pub fn validate_session_id(id: &str) -> Result<(), SessionError> {
    let reason = if id.is_empty() {
        Some("it is empty")
    } else if id.len() > 200 {
        Some("it is longer than 200 bytes")
    } else if id.starts_with('.') {
        Some("it starts with '.'")
    } else if id.contains(['/', '\\', '\0']) {
        Some("it contains '/', '\\' or NUL")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(SessionError::InvalidId {
            id: id.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

/// The hooks and sessions of a store, shared with its sessions (weakly).
struct StoreShared {
    sessions: Mutex<Sessions>,
    on_created: EmitHook<Arc<Session>>,
    on_event: EmitHook<(Arc<Session>, Arc<SessionEvent>)>,
    on_removed: EmitHook<Arc<Session>>,
    on_flush: ParallelHook<Arc<Session>>,
}

#[derive(Default)]
struct Sessions {
    by_id: HashMap<String, Arc<Session>>,
    order: Vec<Arc<Session>>,
}

/// The session registry, a kernel service (provide it as
/// `Arc<SessionStore>`).
///
/// Hooks: `session/created` and `session/event` (emit, synchronous),
/// `session/removed` (emit) and `session/flush` (parallel, awaited — the
/// durability checkpoint persistence plugins drain at).
pub struct SessionStore {
    shared: Arc<StoreShared>,
}

impl Default for SessionStore {
    fn default() -> Self {
        Self::new()
    }
}

impl SessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            shared: Arc::new(StoreShared {
                sessions: Mutex::new(Sessions::default()),
                on_created: EmitHook::new("session/created"),
                on_event: EmitHook::new("session/event"),
                on_removed: EmitHook::new("session/removed"),
                on_flush: ParallelHook::new("session/flush"),
            }),
        }
    }

    /// Creates a session and emits `session/created`.
    ///
    /// `id` defaults to [`new_session_id`] (time-ordered, unique across
    /// processes). `seed` (replay or fork) is copied into the log in order,
    /// its `seq`s renumbered to positions 0..n; later appends continue from
    /// there. Seed events are not announced on `session/event`.
    ///
    /// Undoing the returned registration removes the session from the store,
    /// emits `session/removed` and stops its notifications (the `Arc` stays
    /// usable as a detached log).
    ///
    /// # Errors
    /// [`SessionError::DuplicateSession`] (`DUPLICATE_SESSION`) when the id
    /// is taken; [`SessionError::InvalidId`] when it cannot name a file.
    pub fn create(
        &self,
        id: Option<String>,
        seed: Vec<SessionEvent>,
    ) -> Result<(Arc<Session>, Registration), SessionError> {
        let id = match id {
            Some(id) => {
                validate_session_id(&id)?;
                SessionId::new(id)
            }
            None => new_session_id(),
        };
        let session = {
            let mut sessions = lock(&self.shared.sessions);
            if sessions.by_id.contains_key(id.as_str()) {
                return Err(SessionError::DuplicateSession(id.into_string()));
            }
            let session = Session::build(id.clone(), seed, Arc::downgrade(&self.shared));
            sessions.by_id.insert(id.into_string(), session.clone());
            sessions.order.push(session.clone());
            session
        };
        // Listener failures are contained and logged by the hook.
        self.shared.on_created.emit(&session);
        let shared = Arc::downgrade(&self.shared);
        let removed = session.clone();
        let reg = Registration::new(move || {
            let Some(shared) = shared.upgrade() else {
                removed.attached.store(false, Ordering::SeqCst);
                return;
            };
            let was_present = {
                let mut sessions = lock(&shared.sessions);
                let present = sessions
                    .by_id
                    .get(removed.id().as_str())
                    .is_some_and(|s| Arc::ptr_eq(s, &removed));
                if present {
                    sessions.by_id.remove(removed.id().as_str());
                    sessions.order.retain(|s| !Arc::ptr_eq(s, &removed));
                }
                present
            };
            removed.attached.store(false, Ordering::SeqCst);
            if was_present {
                // Contained and logged by the hook.
                shared.on_removed.emit(&removed);
            }
        });
        Ok((session, reg))
    }

    /// The session with this id.
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        let sessions = lock(&self.shared.sessions);
        sessions.by_id.get(id).cloned()
    }

    /// All sessions, in insertion order.
    pub fn list(&self) -> Vec<Arc<Session>> {
        let sessions = lock(&self.shared.sessions);
        sessions.order.clone()
    }

    /// `session/created`: emitted after a session is added.
    pub fn on_created(&self) -> &EmitHook<Arc<Session>> {
        &self.shared.on_created
    }

    /// `session/event`: emitted after every append, in `seq` order per session.
    pub fn on_event(&self) -> &EmitHook<(Arc<Session>, Arc<SessionEvent>)> {
        &self.shared.on_event
    }

    /// `session/removed`: emitted when a session's registration is undone,
    /// after it stopped notifying.
    pub fn on_removed(&self) -> &EmitHook<Arc<Session>> {
        &self.shared.on_removed
    }

    /// `session/flush`: the durability checkpoint; listeners run in parallel
    /// and are awaited by [`SessionStore::flush`].
    pub fn on_flush(&self) -> &ParallelHook<Arc<Session>> {
        &self.shared.on_flush
    }

    /// Runs every `session/flush` listener for `session` and awaits them all.
    ///
    /// # Errors
    /// The first listener failure (all listeners still run to completion).
    pub async fn flush(&self, session: &Arc<Session>) -> Result<(), DshError> {
        self.shared.on_flush.call(session.clone()).await
    }
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self
            .shared
            .sessions
            .lock()
            .map(|s| s.order.len())
            .unwrap_or(0);
        f.debug_struct("SessionStore")
            .field("sessions", &n)
            .finish()
    }
}
