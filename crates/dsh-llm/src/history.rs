//! `History`: an append-only message list whose snapshots are O(1) to take.
//!
//! A session derives its model history incrementally; each step hands the
//! adapter a snapshot. Copying a 20,000-message `Vec` per step would make the
//! per-step cost grow with the session, so snapshots share one buffer and
//! remember their length instead. Appending to a snapshot that is no longer
//! the newest copies its prefix first (copy on divergence), so a snapshot
//! never changes once taken. Messages are held as `Arc<Message>`: that copy,
//! a [`History::prefix`] plus a message, or a history with some messages
//! replaced ([`History::with_replaced`]) copy pointers, never message text.

use dsh_kernel::sync::{read, write};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::types::Message;

/// A conversation history. Cloning is O(1); a clone never observes later
/// pushes made through another handle.
#[derive(Clone, Default)]
pub struct History {
    shared: Arc<RwLock<Vec<Arc<Message>>>>,
    len: usize,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty history with room for `n` messages before it reallocates.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            shared: Arc::new(RwLock::new(Vec::with_capacity(n))),
            len: 0,
        }
    }

    /// A history of these shared messages.
    pub fn from_shared(messages: Vec<Arc<Message>>) -> Self {
        let len = messages.len();
        Self {
            shared: Arc::new(RwLock::new(messages)),
            len,
        }
    }

    /// Number of messages in this snapshot.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the snapshot holds no message.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a message. Amortised O(1) when this handle is the newest
    /// snapshot; otherwise the prefix is copied first (its pointers).
    pub fn push(&mut self, message: Message) {
        self.push_shared(Arc::new(message));
    }

    /// [`History::push`] of a shared message.
    pub fn push_shared(&mut self, message: Arc<Message>) {
        {
            let mut buf = write(&self.shared);
            if buf.len() == self.len {
                buf.push(message);
                self.len += 1;
                return;
            }
        }
        let mut copy = self.shared_messages();
        copy.push(message);
        self.len = copy.len();
        self.shared = Arc::new(RwLock::new(copy));
    }

    /// The first `n` messages (all of them when `n` is larger): O(1), the
    /// same buffer.
    pub fn prefix(&self, n: usize) -> History {
        History {
            shared: self.shared.clone(),
            len: n.min(self.len),
        }
    }

    /// This history with the messages at the given positions replaced by
    /// what `f` makes of them (positions out of range are ignored): a new
    /// buffer of pointers, only the replaced messages are new.
    pub fn with_replaced(
        &self,
        positions: impl IntoIterator<Item = usize>,
        mut f: impl FnMut(&Message) -> Message,
    ) -> History {
        let mut messages = self.shared_messages();
        for i in positions {
            if let Some(m) = messages.get_mut(i) {
                *m = Arc::new(f(m));
            }
        }
        History::from_shared(messages)
    }

    /// Runs `f` over the messages of this snapshot.
    pub fn with<R>(&self, f: impl FnOnce(&[Arc<Message>]) -> R) -> R {
        let buf = read(&self.shared);
        f(&buf[..self.len])
    }

    /// The messages, shared (O(n) pointer copies).
    pub fn shared_messages(&self) -> Vec<Arc<Message>> {
        self.with(<[Arc<Message>]>::to_vec)
    }

    /// The messages as an owned vector (O(n), copies every message).
    pub fn to_vec(&self) -> Vec<Message> {
        self.with(|s| s.iter().map(|m| Message::clone(m)).collect())
    }

    /// A clone of the message at `i`.
    pub fn get(&self, i: usize) -> Option<Message> {
        self.with(|s| s.get(i).map(|m| Message::clone(m)))
    }

    /// Whether both handles are the same snapshot (one buffer, one
    /// length): O(1), and `true` implies equal messages.
    pub fn same_snapshot(&self, other: &History) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared) && self.len == other.len
    }

    /// A clone of the last message.
    pub fn last(&self) -> Option<Message> {
        self.with(|s| s.last().map(|m| Message::clone(m)))
    }
}

impl From<Vec<Message>> for History {
    fn from(v: Vec<Message>) -> Self {
        History::from_shared(v.into_iter().map(Arc::new).collect())
    }
}

impl FromIterator<Message> for History {
    fn from_iter<I: IntoIterator<Item = Message>>(iter: I) -> Self {
        History::from_shared(iter.into_iter().map(Arc::new).collect())
    }
}

impl PartialEq for History {
    fn eq(&self, other: &Self) -> bool {
        if Arc::ptr_eq(&self.shared, &other.shared) && self.len == other.len {
            return true;
        }
        self.with(|a| {
            other.with(|b| {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Arc::ptr_eq(x, y) || x == y)
            })
        })
    }
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.with(|s| f.debug_list().entries(s.iter().map(|m| &**m)).finish())
    }
}

impl Serialize for History {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.with(|msgs| s.collect_seq(msgs.iter().map(|m| &**m)))
    }
}

impl<'de> Deserialize<'de> for History {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(d).map(History::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_are_stable_and_cheap() {
        let mut h = History::new();
        h.push(Message::user_text("a"));
        let snap = h.clone();
        h.push(Message::user_text("b"));
        assert_eq!(snap.len(), 1);
        assert_eq!(h.len(), 2);
        // Pushing to the old snapshot diverges without touching the newer one.
        let mut fork = snap.clone();
        fork.push(Message::user_text("c"));
        assert_eq!(fork.to_vec()[1], Message::user_text("c"));
        assert_eq!(h.to_vec()[1], Message::user_text("b"));
        assert_eq!(snap.len(), 1);
    }

    #[test]
    fn serde_is_a_plain_array() {
        let h: History = vec![Message::user_text("x")].into();
        let json = serde_json::to_string(&h).unwrap();
        assert_eq!(
            json,
            r#"[{"role":"user","content":[{"type":"text","text":"x"}]}]"#
        );
        let back: History = serde_json::from_str(&json).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn prefixes_and_replacements_share_the_untouched_messages() {
        let h: History = vec![
            Message::user_text("a"),
            Message::user_text("b"),
            Message::user_text("c"),
        ]
        .into();
        let mut p = h.prefix(2);
        assert_eq!(p.len(), 2);
        p.push(Message::user_text("x"));
        assert_eq!(
            p.to_vec(),
            [
                Message::user_text("a"),
                Message::user_text("b"),
                Message::user_text("x")
            ]
        );
        assert_eq!(h.len(), 3, "the source is untouched");
        assert_eq!(h.get(2), Some(Message::user_text("c")));
        let shared =
            |a: &History, b: &History, i: usize| a.with(|x| b.with(|y| Arc::ptr_eq(&x[i], &y[i])));
        assert!(shared(&h, &p, 0) && shared(&h, &p, 1));
        let r = h.with_replaced([1, 9], |m| Message::user_text(format!("{m:?}!")));
        assert!(shared(&h, &r, 0) && shared(&h, &r, 2) && !shared(&h, &r, 1));
        assert_eq!(h.get(1), Some(Message::user_text("b")));
        assert_eq!(h.prefix(10).len(), 3);
    }
}
