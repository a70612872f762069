//! The event stream of one session: numbered events in a bounded ring,
//! read by any number of subscriptions, each at its own position.
//!
//! Nothing is buffered per subscriber: a subscription is a cursor into
//! the shared ring, so a slow reader costs nothing until it falls behind
//! the ring's start, and then it is told what it missed ([`Lost`]) and
//! goes on from the oldest event still held. Publishing never waits for a
//! reader.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use dsh_kernel::sync::lock;

use crate::event::{now_ms, Event, EventBody};

/// How many events a session's ring holds by default.
pub const DEFAULT_RING_EVENTS: usize = 65_536;

/// How many bytes of text a session's ring holds at most (tool outputs
/// and diffs are the big ones); the oldest events go first.
pub const RING_BYTES: usize = 64 * 1024 * 1024;

/// The events a subscription missed because the ring dropped them before
/// it read them: `from..to` (end exclusive); it goes on at `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    /// The first sequence number missed.
    pub from: u64,
    /// The oldest sequence number still held: where reading goes on.
    pub to: u64,
}

struct Ring {
    events: VecDeque<Arc<Event>>,
    /// The text the events hold, roughly ([`weight`]).
    bytes: usize,
    /// The sequence number the next event gets.
    next_seq: u64,
    closed: bool,
}

/// Roughly how many bytes `body` holds: its text and a fixed overhead.
/// A log event's body is shared with the session's log, so it counts the
/// overhead only.
fn weight(body: &EventBody) -> usize {
    const OVERHEAD: usize = 96;
    OVERHEAD
        + match body {
            EventBody::MessageDelta { text }
            | EventBody::ReasoningDelta { text }
            | EventBody::MessageCompleted { text }
            | EventBody::UserMessage { text, .. } => text.len(),
            EventBody::ToolStarted { arguments, .. } => arguments.len(),
            EventBody::ToolFinished { output, diff, .. } => {
                output.len()
                    + diff.as_ref().map_or(0, |d| {
                        d.new_text.len() + d.old_text.as_ref().map_or(0, String::len)
                    })
            }
            EventBody::ApprovalAsked {
                arguments, detail, ..
            } => arguments.len() + detail.as_ref().map_or(0, String::len),
            EventBody::Todos { items } => items.iter().map(|t| t.content.len()).sum(),
            EventBody::QuestionAsked { questions, .. } => questions
                .iter()
                .map(|q| {
                    q.question.len()
                        + q.options
                            .iter()
                            .map(|o| o.label.len() + o.description.as_ref().map_or(0, String::len))
                            .sum::<usize>()
                })
                .sum(),
            EventBody::Warning { message } | EventBody::Error { message, .. } => message.len(),
            _ => 0,
        }
}

/// One session's events.
pub(crate) struct Hub {
    ring: Mutex<Ring>,
    published: tokio::sync::Notify,
    capacity: usize,
}

impl Hub {
    /// An empty stream holding at most `capacity` events (at least one).
    pub(crate) fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            ring: Mutex::new(Ring {
                events: VecDeque::new(),
                bytes: 0,
                next_seq: 0,
                closed: false,
            }),
            published: tokio::sync::Notify::new(),
            capacity: capacity.max(1),
        })
    }

    /// Numbers `body`, stamps it with the time and appends it; the oldest
    /// event goes when the ring is full. Ignored once closed. Returns the
    /// sequence number given.
    pub(crate) fn publish(&self, body: EventBody) -> Option<u64> {
        let seq = {
            let mut ring = lock(&self.ring);
            if ring.closed {
                return None;
            }
            let seq = ring.next_seq;
            ring.next_seq += 1;
            let size = weight(&body);
            while ring.events.len() == self.capacity
                || (ring.bytes + size > RING_BYTES && !ring.events.is_empty())
            {
                if let Some(old) = ring.events.pop_front() {
                    ring.bytes -= weight(&old.body);
                }
            }
            ring.bytes += size;
            ring.events.push_back(Arc::new(Event {
                seq,
                time: now_ms(),
                body,
            }));
            seq
        };
        self.published.notify_waiters();
        Some(seq)
    }

    /// Publishes [`EventBody::Closed`] as the last event; subscriptions end
    /// after reading it.
    pub(crate) fn close(&self, reason: &str) {
        self.publish(EventBody::Closed {
            reason: reason.to_string(),
        });
        lock(&self.ring).closed = true;
        self.published.notify_waiters();
    }

    /// The sequence number the next event will get.
    pub(crate) fn next_seq(&self) -> u64 {
        lock(&self.ring).next_seq
    }

    /// The event at `seq` or, when the ring dropped it, what was lost.
    /// `Ok(None)`: not published yet (or never will be: closed).
    fn read(&self, seq: u64) -> Result<Option<Arc<Event>>, Lost> {
        let ring = lock(&self.ring);
        let Some(first) = ring.events.front().map(|e| e.seq) else {
            return Ok(None);
        };
        if seq < first {
            return Err(Lost {
                from: seq,
                to: first,
            });
        }
        let at = usize::try_from(seq - first).unwrap_or(usize::MAX);
        Ok(ring.events.get(at).cloned())
    }

    fn is_closed(&self) -> bool {
        lock(&self.ring).closed
    }
}

/// A reader of one session's events, from a given sequence number on.
/// Dropping it is all it takes to stop.
pub struct Subscription {
    hub: Arc<Hub>,
    next: u64,
    log: bool,
    /// Where [`Subscription::handled`] reports the position.
    handled: Option<tokio::sync::watch::Sender<u64>>,
}

impl Subscription {
    pub(crate) fn new(hub: Arc<Hub>, from: u64) -> Self {
        Self {
            hub,
            next: from,
            log: false,
            handled: None,
        }
    }

    /// Follows how far the reader got: the number of the first event it
    /// has not handled yet. An event counts as handled when the reader
    /// asks for the next one; events the subscription skips (log events
    /// it was not asked for) count at once. A front end waits on it to
    /// know that everything published up to a number was handled
    /// (`receiver.wait_for(|p| *p >= session.next_seq())`).
    pub fn handled(&mut self) -> tokio::sync::watch::Receiver<u64> {
        match &self.handled {
            Some(tx) => tx.subscribe(),
            None => {
                let (tx, rx) = tokio::sync::watch::channel(self.next);
                self.handled = Some(tx);
                rx
            }
        }
    }

    fn report(&self) {
        if let Some(tx) = &self.handled {
            tx.send_if_modified(|p| {
                let moved = *p != self.next;
                *p = self.next;
                moved
            });
        }
    }

    /// Also delivers [`EventBody::Log`] events (every session log event as
    /// it is appended); without this they are skipped.
    #[must_use]
    pub fn with_log(mut self, log: bool) -> Self {
        self.log = log;
        self
    }

    /// The sequence number the next event read will have (or after).
    pub fn position(&self) -> u64 {
        self.next
    }

    /// The next event, waiting for it. `None` once the session is closed
    /// and its last event was read. `Some(Err(lost))` when the reader fell
    /// behind the ring: it goes on at `lost.to`.
    pub async fn next(&mut self) -> Option<Result<Arc<Event>, Lost>> {
        let hub = self.hub.clone();
        loop {
            let published = hub.published.notified();
            tokio::pin!(published);
            // Registered before looking, so a publish in between wakes it.
            published.as_mut().enable();
            if let Some(item) = self.try_next() {
                return Some(item);
            }
            if hub.is_closed() {
                // A publish raced the close: read what is left first.
                return self.try_next();
            }
            published.await;
        }
    }

    /// The next event already published, without waiting.
    pub fn try_next(&mut self) -> Option<Result<Arc<Event>, Lost>> {
        // The event returned last is handled once the next is asked for.
        self.report();
        loop {
            match self.hub.read(self.next) {
                Ok(Some(event)) => {
                    if !self.log && matches!(event.body, EventBody::Log { .. }) {
                        self.next = event.seq + 1;
                        self.report();
                        continue;
                    }
                    self.next = event.seq + 1;
                    return Some(Ok(event));
                }
                Ok(None) => return None,
                Err(lost) => {
                    self.next = lost.to;
                    self.report();
                    return Some(Err(lost));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_event() -> EventBody {
        EventBody::Log {
            event: Arc::new(dsh_protocol::SessionEvent {
                seq: 0,
                time: 0,
                data: dsh_protocol::EventPayload::Other {
                    kind: "x".into(),
                    data: serde_json::json!({}),
                },
            }),
        }
    }

    fn warn(i: usize) -> EventBody {
        EventBody::Warning {
            message: format!("w{i}"),
        }
    }

    #[tokio::test]
    async fn a_reader_gets_every_event_in_order_then_the_end() {
        let hub = Hub::new(16);
        let mut sub = Subscription::new(hub.clone(), 0);
        let writer = {
            let hub = hub.clone();
            tokio::spawn(async move {
                for i in 0..10 {
                    hub.publish(warn(i));
                    tokio::task::yield_now().await;
                }
                hub.close("done");
            })
        };
        let mut seen = Vec::new();
        while let Some(item) = sub.next().await {
            seen.push(item.unwrap().seq);
        }
        writer.await.unwrap();
        assert_eq!(seen, (0..11).collect::<Vec<u64>>());
    }

    #[test]
    fn a_reader_behind_the_ring_is_told_what_it_lost() {
        let hub = Hub::new(4);
        for i in 0..10 {
            hub.publish(warn(i));
        }
        let mut sub = Subscription::new(hub.clone(), 2);
        assert_eq!(sub.try_next(), Some(Err(Lost { from: 2, to: 6 })));
        let rest: Vec<u64> = std::iter::from_fn(|| sub.try_next())
            .map(|e| e.unwrap().seq)
            .collect();
        assert_eq!(rest, vec![6, 7, 8, 9]);
    }

    #[test]
    fn log_events_reach_only_readers_that_ask() {
        let hub = Hub::new(8);
        hub.publish(warn(0));
        hub.publish(log_event());
        hub.publish(warn(2));
        let plain: Vec<&str> = {
            let mut sub = Subscription::new(hub.clone(), 0);
            std::iter::from_fn(|| sub.try_next())
                .map(|e| e.unwrap().body.kind())
                .collect()
        };
        assert_eq!(plain, vec!["warning", "warning"]);
        let mut sub = Subscription::new(hub.clone(), 0).with_log(true);
        let all: Vec<&str> = std::iter::from_fn(|| sub.try_next())
            .map(|e| e.unwrap().body.kind())
            .collect();
        assert_eq!(all, vec!["warning", "log", "warning"]);
    }

    #[test]
    fn handled_counts_an_event_once_the_next_is_asked_for_and_skipped_ones_at_once() {
        let hub = Hub::new(8);
        hub.publish(warn(0));
        let mut sub = Subscription::new(hub.clone(), 0);
        let handled = sub.handled();
        assert_eq!(*handled.borrow(), 0);
        assert_eq!(sub.try_next().unwrap().unwrap().seq, 0);
        assert_eq!(*handled.borrow(), 0, "event 0 is being handled");
        hub.publish(log_event());
        // Asking again: 0 is handled, the log event is skipped.
        assert!(sub.try_next().is_none());
        assert_eq!(*handled.borrow(), 2);
    }

    #[test]
    fn the_ring_drops_the_oldest_events_past_its_byte_budget() {
        let hub = Hub::new(1_000_000);
        let big = "x".repeat(RING_BYTES / 4);
        for _ in 0..10 {
            hub.publish(EventBody::MessageDelta { text: big.clone() });
        }
        let held = lock(&hub.ring).events.len();
        assert!(held <= 4, "{held}");
        assert!(lock(&hub.ring).bytes <= RING_BYTES);
        let mut sub = Subscription::new(hub.clone(), 0);
        assert!(matches!(sub.try_next(), Some(Err(Lost { from: 0, .. }))));
    }

    proptest::proptest! {
        /// Any ring size, any number of events, any start: a reader sees
        /// each held event once, in order, with at most one loss report
        /// before them, and together they account for every number from
        /// its start on.
        #[test]
        fn readers_account_for_every_event(cap in 1usize..20, n in 0usize..60, from in 0u64..70) {
            let hub = Hub::new(cap);
            for i in 0..n {
                hub.publish(warn(i));
            }
            let mut sub = Subscription::new(hub.clone(), from);
            let mut expect = from;
            let mut losses = 0;
            while let Some(item) = sub.try_next() {
                match item {
                    Ok(e) => {
                        proptest::prop_assert_eq!(e.seq, expect);
                        expect += 1;
                    }
                    Err(lost) => {
                        losses += 1;
                        proptest::prop_assert_eq!(lost.from, expect);
                        expect = lost.to;
                    }
                }
            }
            proptest::prop_assert!(losses <= 1);
            proptest::prop_assert_eq!(expect, (n as u64).max(from));
        }
    }
}
