//! `History`: an append-only message list whose snapshots are O(1) to take.
//!
//! A session derives its model history incrementally; each step hands the
//! adapter a snapshot. Copying a 20,000-message `Vec` per step would make the
//! per-step cost grow with the session, so snapshots share one buffer and
//! remember their length instead. Appending to a snapshot that is no longer
//! the newest copies its prefix first (copy on divergence), so a snapshot
//! never changes once taken.

use dsh_kernel::sync::{read, write};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::types::Message;

/// A conversation history. Cloning is O(1); a clone never observes later
/// pushes made through another handle.
#[derive(Clone, Default)]
pub struct History {
    shared: Arc<RwLock<Vec<Message>>>,
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

    /// Number of messages in this snapshot.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the snapshot holds no message.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a message. Amortised O(1) when this handle is the newest
    /// snapshot; otherwise the prefix is copied first.
    pub fn push(&mut self, message: Message) {
        {
            let mut buf = write(&self.shared);
            if buf.len() == self.len {
                buf.push(message);
                self.len += 1;
                return;
            }
        }
        let mut copy = self.with(|s| s.to_vec());
        copy.push(message);
        self.len = copy.len();
        self.shared = Arc::new(RwLock::new(copy));
    }

    /// Runs `f` over the messages of this snapshot.
    pub fn with<R>(&self, f: impl FnOnce(&[Message]) -> R) -> R {
        let buf = read(&self.shared);
        f(&buf[..self.len])
    }

    /// The messages as an owned vector (O(n)).
    pub fn to_vec(&self) -> Vec<Message> {
        self.with(|s| s.to_vec())
    }

    /// A clone of the message at `i`.
    pub fn get(&self, i: usize) -> Option<Message> {
        self.with(|s| s.get(i).cloned())
    }

    /// Whether both handles are the same snapshot (one buffer, one
    /// length): O(1), and `true` implies equal messages.
    pub fn same_snapshot(&self, other: &History) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared) && self.len == other.len
    }

    /// A clone of the last message.
    pub fn last(&self) -> Option<Message> {
        self.with(|s| s.last().cloned())
    }
}

impl From<Vec<Message>> for History {
    fn from(v: Vec<Message>) -> Self {
        let len = v.len();
        Self {
            shared: Arc::new(RwLock::new(v)),
            len,
        }
    }
}

impl FromIterator<Message> for History {
    fn from_iter<I: IntoIterator<Item = Message>>(iter: I) -> Self {
        iter.into_iter().collect::<Vec<_>>().into()
    }
}

impl PartialEq for History {
    fn eq(&self, other: &Self) -> bool {
        if Arc::ptr_eq(&self.shared, &other.shared) && self.len == other.len {
            return true;
        }
        self.with(|a| other.with(|b| a == b))
    }
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.with(|s| f.debug_list().entries(s).finish())
    }
}

impl Serialize for History {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.with(|msgs| msgs.serialize(s))
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
}
