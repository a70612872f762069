//! [`CallIds`]: the tool-call ids of one conversation, kept unique.
//!
//! A provider rejects a history in which two tool calls share an id (the
//! results could not be matched to their calls), yet models repeat ids:
//! two calls of one reply with the same id, or an id of an earlier step
//! used again (small models number their calls `call_0`, `call_1`, … in
//! every reply). The agent loop passes each reply's blocks through
//! [`CallIds::claim`] before it records them: the first call with an id
//! keeps it, a repeat gets a suffix (`-2`, `-3`, …) that no call of the
//! conversation has, and the results answer the new id. Nothing is ever
//! renamed twice: an id is claimed once.

use std::collections::{HashMap, HashSet};

use crate::types::{CallId, ContentBlock};

/// A repeated tool-call id and the id it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenamedCall {
    /// Position of the call among the tool calls of the blocks claimed.
    pub position: usize,
    /// The id the model sent.
    pub from: CallId,
    /// The unique id the call carries from now on.
    pub to: CallId,
}

/// The set of tool-call ids one conversation has used.
///
/// [`CallIds::observe`] records ids already in the history (a resumed or
/// forked log) as they are; [`CallIds::claim`] makes the ids of new
/// blocks unique against everything seen so far. Deterministic: the same
/// ids observed and claimed in the same order give the same result.
/// Memory grows with the number of distinct ids.
#[derive(Debug, Clone, Default)]
pub struct CallIds {
    seen: HashSet<String>,
    /// The next suffix to try per repeated id, so a model that repeats one
    /// id in every reply costs O(1) per repeat, not a scan from `-2`.
    next_suffix: HashMap<String, u64>,
}

impl CallIds {
    /// No ids yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the ids of the tool calls in `blocks` as taken, unchanged
    /// (for history the conversation already holds). A repeat among them
    /// is recorded once.
    pub fn observe(&mut self, blocks: &[ContentBlock]) {
        for block in blocks {
            if let ContentBlock::ToolCall(call) = block {
                self.observe_id(call.call_id.as_str());
            }
        }
    }

    /// Records one id as taken.
    pub fn observe_id(&mut self, id: &str) {
        if !self.seen.contains(id) {
            self.seen.insert(id.to_string());
        }
    }

    /// Whether `id` is taken.
    pub fn contains(&self, id: &str) -> bool {
        self.seen.contains(id)
    }

    /// Number of distinct ids taken.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether no id is taken.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Gives every tool call in `blocks` an id no earlier call has (in the
    /// conversation or earlier in `blocks`) and records it: an unused id
    /// is kept, a repeated one becomes `<id>-<n>` with the smallest `n >= 2`
    /// (counting on from the last suffix given to that id) that is free.
    /// Returns the renames in block order (empty when every id was new).
    /// Only the tool calls' ids change; other blocks are untouched.
    pub fn claim(&mut self, blocks: &mut [ContentBlock]) -> Vec<RenamedCall> {
        let mut renamed = Vec::new();
        let calls = blocks.iter_mut().filter_map(|b| match b {
            ContentBlock::ToolCall(call) => Some(call),
            _ => None,
        });
        for (position, call) in calls.enumerate() {
            let id = call.call_id.as_str();
            if !self.seen.contains(id) {
                self.seen.insert(id.to_string());
                continue;
            }
            let fresh = self.fresh(id);
            self.seen.insert(fresh.clone());
            let from = std::mem::replace(&mut call.call_id, CallId::from(fresh));
            renamed.push(RenamedCall {
                position,
                from,
                to: call.call_id.clone(),
            });
        }
        renamed
    }

    /// The first free `<id>-<n>`, `n` counting on from the last one tried.
    fn fresh(&mut self, id: &str) -> String {
        let next = self.next_suffix.entry(id.to_string()).or_insert(2);
        loop {
            let candidate = format!("{id}-{next}");
            *next = next.saturating_add(1);
            if !self.seen.contains(&candidate) {
                return candidate;
            }
        }
    }
}
