//! The persistence seam: [`SessionPersistence`] (a storage backend) and
//! [`install_persistence`] (the plugin that buffers `session/event`s and
//! writes them at `session/flush`).

use dsh_kernel::sync::lock;
use dsh_kernel::ErrorCode;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use dsh_kernel::{BoxError, DshError, Registration};

use crate::error::SessionError;
use crate::session::{Session, SessionStore};
use dsh_protocol::SessionEvent;

/// A storage backend for session logs. Methods block (file or database
/// I/O); the plugin calls them off the async executor.
///
/// Call order per session: [`open`](Self::open) once, then any number of
/// [`append_batch`](Self::append_batch) + [`sync`](Self::sync), then
/// [`close`](Self::close). A SQLite backend would implement the same trait.
pub trait SessionPersistence: Send + Sync + 'static {
    /// Prepares storage for `session_id` (creating it if needed, repairing a
    /// torn tail) and returns the `seq` after the last event it already holds
    /// (0 when empty); the plugin then appends only events with `seq` at or
    /// past that value.
    fn open(&self, session_id: &str) -> Result<u64, SessionError>;

    /// Appends `events` (in `seq` order) atomically as far as the backend
    /// can: on error nothing of the batch may remain.
    fn append_batch(
        &self,
        session_id: &str,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), SessionError>;

    /// Makes everything appended so far durable (fsync).
    fn sync(&self, session_id: &str) -> Result<(), SessionError>;

    /// Where `session_id` is stored, for error messages (a path for files).
    fn location(&self, session_id: &str) -> String {
        session_id.to_string()
    }

    /// Releases resources held for `session_id` (open files). Idempotent.
    fn close(&self, _session_id: &str) {}

    /// Reads a stored log.
    fn load(&self, session_id: &str) -> Result<LoadedLog, SessionError>;

    /// Summaries of every stored session, oldest first.
    fn list(&self) -> Result<Vec<SessionSummary>, SessionError>;
}

/// A log read back from storage.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedLog {
    /// The intact events, in order.
    pub events: Vec<SessionEvent>,
    /// A last line that could not be parsed (a write cut short by a crash),
    /// reported rather than fatal. Everything before it is in `events`.
    pub torn_tail: Option<TornLine>,
}

/// The torn last line of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornLine {
    /// 1-based line number.
    pub line_no: usize,
    /// Length of the line in bytes (without a newline).
    pub bytes: usize,
    /// Byte offset where the line starts (= length of the intact prefix).
    pub offset: u64,
}

/// One stored session, for listings (`dsh session list`).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    /// The session id.
    pub id: String,
    /// Where the log is stored.
    pub path: PathBuf,
    /// Time of the first event (Unix ms), or the file's modification time
    /// for an empty log.
    pub created_ms: u64,
    /// Text of the first `user/message` (text blocks concatenated).
    pub first_prompt: Option<String>,
    /// Number of `turn/start` events.
    pub turns: u64,
    /// Number of readable events.
    pub events: u64,
    /// The last `session/title` event's title, when a model titled it.
    pub title: Option<String>,
    /// Tokens the provider reported over the whole session (input, cached
    /// input and output of every `usage` event).
    pub tokens: u64,
    /// The parent's session id, for a sub-agent's session (its
    /// `subagent/start` event's `parentSessionId`).
    pub parent: Option<String>,
    /// The latest time of a readable event (Unix ms): when the session
    /// was last active (a fork's link counts); the file's modification
    /// time for an empty log.
    pub last_ms: u64,
    /// The workspace the session last ran in: the last
    /// [`WORKSPACE_EVENT`]'s `cwd`, else (a log written before that event
    /// existed) the working directory the first system prompt names.
    pub cwd: Option<PathBuf>,
}

/// Log-only event a front end appends when a session opens in a
/// workspace other than the one it last ran in (a new session always):
/// `{"cwd": "<absolute path>"}`. [`SessionSummary::cwd`] reads it.
pub const WORKSPACE_EVENT: &str = "session/workspace";

/// Installs a persistence plugin on `store`.
///
/// Every `session/event` is buffered in memory (an `Arc` push, no I/O).
/// `session/flush` writes the session's buffered events through `backend`
/// and syncs them: every event appended before the flush started, including
/// events logged before the plugin saw the session (seeds, sessions created
/// before installation) and events whose notification is still queued. When a
/// session is removed from the store, and when the returned registration
/// is undone (scope close), everything still buffered is written and synced
/// synchronously. A failed write keeps the events buffered for the next
/// flush and is reported as the flush's error.
pub fn install_persistence(
    store: &SessionStore,
    backend: Arc<dyn SessionPersistence>,
) -> Registration {
    let writer = Arc::new(Writer {
        backend,
        tracked: Mutex::new(HashMap::new()),
    });
    let w = writer.clone();
    let on_created = store.on_created().on(move |session| {
        w.track(session);
    });
    let w = writer.clone();
    let on_event = store.on_event().on(move |(session, event)| {
        w.track(session).push(event);
    });
    let w = writer.clone();
    let on_removed = store.on_removed().on(move |session| {
        let tracked = w.tracked_lock().remove(session.id().as_str());
        if let Some(t) = tracked {
            if let Err(e) = w.flush_tracked(&t) {
                tracing::error!(session = %session.id(), code = e.code(), "{e}");
            }
        }
        w.backend.close(session.id());
    });
    let w = writer.clone();
    let on_flush = store.on_flush().on(move |session: Arc<Session>| {
        let w = w.clone();
        async move {
            let tracked = w.track(&session);
            let run = move || w.flush_tracked(&tracked);
            let result = match tokio::runtime::Handle::try_current() {
                Ok(_) => tokio::task::spawn_blocking(run)
                    .await
                    .unwrap_or_else(|e| Err(SessionError::Task(e.to_string()))),
                Err(_) => run(),
            };
            result.map_err(|e| -> BoxError { Box::new(DshError::from(e)) })
        }
    });
    let listeners = Registration::merge(vec![on_created, on_event, on_removed, on_flush]);
    Registration::new(move || {
        listeners.undo();
        let all: Vec<(String, Arc<Tracked>)> = writer.tracked_lock().drain().collect();
        for (id, t) in all {
            if let Err(e) = writer.flush_tracked(&t) {
                tracing::error!(session = %id, code = e.code(), "{e}");
            }
            writer.backend.close(&id);
        }
    })
}

struct Writer {
    backend: Arc<dyn SessionPersistence>,
    tracked: Mutex<HashMap<String, Arc<Tracked>>>,
}

/// The persistence state of one session.
struct Tracked {
    id: String,
    /// The session, to pick up events appended but not yet announced.
    session: Weak<Session>,
    /// Events not yet written; the append path only touches this lock.
    buffer: Mutex<Buffer>,
    /// Serialises writes; `None` until the backend has been opened, then
    /// the number of events stored.
    io: Mutex<Option<u64>>,
}

struct Buffer {
    events: Vec<Arc<SessionEvent>>,
    /// The `seq` after the last buffered event (dedupes events already
    /// taken from a snapshot).
    next_seq: u64,
}

impl Tracked {
    fn push(&self, event: &Arc<SessionEvent>) {
        let mut b = lock(&self.buffer);
        self.take_in(&mut b, event);
    }

    /// Buffers `event` unless it is already buffered or written.
    fn take_in(&self, b: &mut Buffer, event: &Arc<SessionEvent>) {
        if event.seq >= b.next_seq {
            b.next_seq = event.seq + 1;
            b.events.push(event.clone());
        }
    }
}

impl Writer {
    fn tracked_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Tracked>>> {
        lock(&self.tracked)
    }

    /// The state of `session`, created from a snapshot of its log on first
    /// sight.
    fn track(&self, session: &Arc<Session>) -> Arc<Tracked> {
        let mut map = self.tracked_lock();
        if let Some(t) = map.get(session.id().as_str()) {
            return t.clone();
        }
        let events = session.events();
        let next_seq = events.last().map_or(0, |e| e.seq + 1);
        let t = Arc::new(Tracked {
            id: session.id().to_string(),
            session: Arc::downgrade(session),
            buffer: Mutex::new(Buffer { events, next_seq }),
            io: Mutex::new(None),
        });
        map.insert(session.id().to_string(), t.clone());
        t
    }

    /// Writes and syncs everything buffered for one session (blocking).
    fn flush_tracked(&self, t: &Tracked) -> Result<(), SessionError> {
        let mut io = lock(&t.io);
        let stored = match *io {
            Some(n) => n,
            None => {
                let n = self.backend.open(&t.id)?;
                *io = Some(n);
                n
            }
        };
        let (taken, known) = {
            let mut b = lock(&t.buffer);
            // Events appended before this flush but still queued for
            // `session/event` (another thread is delivering, or the flush runs
            // inside a listener) must be covered by the flush too.
            if let Some(session) = t.session.upgrade() {
                for e in session.events_since(b.next_seq as usize) {
                    t.take_in(&mut b, &e);
                }
            }
            (std::mem::take(&mut b.events), b.next_seq)
        };
        if stored > known {
            // Keep the events: a later retry after the operator moved the
            // other file away must still find them.
            self.restore(t, taken);
            return Err(SessionError::LogConflict {
                id: t.id.clone(),
                location: self.backend.location(&t.id),
                on_disk: stored,
                in_memory: known,
            });
        }
        let batch: Vec<Arc<SessionEvent>> =
            taken.iter().filter(|e| e.seq >= stored).cloned().collect();
        if batch.is_empty() {
            return self.backend.sync(&t.id);
        }
        if let Err(e) = self.backend.append_batch(&t.id, &batch) {
            self.restore(t, batch);
            return Err(e);
        }
        *io = Some(batch.last().map_or(stored, |e| e.seq + 1));
        self.backend.sync(&t.id)
    }

    /// Puts events taken for a failed write back in front of the buffer.
    fn restore(&self, t: &Tracked, mut events: Vec<Arc<SessionEvent>>) {
        let mut b = lock(&t.buffer);
        events.append(&mut b.events);
        b.events = events;
    }
}
