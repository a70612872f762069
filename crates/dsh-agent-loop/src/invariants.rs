//! The dev-mode invariants plugin: listeners only, it asserts what every log
//! and every agent must satisfy and records each violation.
//!
//! Checked: `seq` strictly increasing per session (0-based, no gaps); step and
//! turn nesting (`step/start` inside a turn, steps numbered 1, 2, … and closed
//! before the next opens or the turn ends; turn numbers strictly increase);
//! every `tool/call` answered by a `tool/result` with the same call id before
//! its step ends; no call id logged twice in a session; legal status transitions (idle ⇄ running, anything →
//! disposed, nothing out of disposed). A backstop `error` (step 0) closes
//! the turn it interrupted, as the loop's contract allows.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use dsh_agent::{AgentRegistry, AgentStatus};
use dsh_kernel::sync::lock;
use dsh_kernel::Registration;
use dsh_session::{
    ErrorEvent, EventPayload, SessionStore, StepEvent, ToolCallEvent, ToolResultEvent,
    TurnEndEvent, TurnStartEvent,
};

#[derive(Default)]
struct SessionTrack {
    next_seq: u64,
    last_turn: u64,
    open_turn: Option<u64>,
    open_step: Option<u64>,
    last_step: u64,
    pending_calls: Vec<String>,
    /// Every `tool/call` id logged since the checks started.
    call_ids: HashSet<String>,
}

/// What the plugin observed. Cloning shares the same record.
#[derive(Clone, Default)]
pub struct Invariants {
    violations: Arc<Mutex<Vec<String>>>,
}

impl Invariants {
    /// Every violation seen so far, in order.
    pub fn violations(&self) -> Vec<String> {
        lock(&self.violations).clone()
    }

    fn report(&self, v: String) {
        tracing::error!("invariant violated: {v}");
        lock(&self.violations).push(v);
    }
}

/// Installs the checks on a store and an agent registry.
pub fn install(store: &SessionStore, registry: &AgentRegistry) -> (Invariants, Registration) {
    let inv = Invariants::default();
    let tracks: Arc<Mutex<HashMap<String, SessionTrack>>> = Default::default();
    // A session created under an id used before (an agent re-created after
    // disposal) is a new log: its checks start over.
    let t2 = tracks.clone();
    let created = store.on_created().on(move |session| {
        lock(&t2).remove(session.id().as_str());
    });
    let i2 = inv.clone();
    let events = store.on_event().on(move |(session, event)| {
        let mut tracks = lock(&tracks);
        let t = tracks
            .entry(session.id().to_string())
            .or_insert_with(|| SessionTrack {
                // A seeded session starts its checks at its seed length.
                next_seq: event.seq,
                last_turn: session.last_turn().saturating_sub(1),
                ..Default::default()
            });
        let id = session.id();
        if event.seq != t.next_seq {
            i2.report(format!(
                "{id}: seq {} where {} was expected",
                event.seq, t.next_seq
            ));
        }
        t.next_seq = event.seq + 1;
        match &event.data {
            EventPayload::TurnStart(TurnStartEvent { turn, .. }) => {
                if let Some(open) = t.open_turn {
                    i2.report(format!(
                        "{id}: turn {turn} started while turn {open} is open"
                    ));
                }
                if *turn <= t.last_turn {
                    i2.report(format!(
                        "{id}: turn {turn} does not increase (last {})",
                        t.last_turn
                    ));
                }
                t.open_turn = Some(*turn);
                t.last_turn = *turn;
                t.last_step = 0;
            }
            EventPayload::StepStart(StepEvent { turn, step }) => {
                if t.open_turn != Some(*turn) {
                    i2.report(format!("{id}: step {step} of turn {turn} outside its turn"));
                }
                if let Some(open) = t.open_step {
                    i2.report(format!(
                        "{id}: step {step} started while step {open} is open"
                    ));
                }
                if *step != t.last_step + 1 {
                    i2.report(format!("{id}: step {step} after step {}", t.last_step));
                }
                t.open_step = Some(*step);
                t.last_step = *step;
            }
            EventPayload::StepEnd(StepEvent { step, .. }) => {
                if t.open_step != Some(*step) {
                    i2.report(format!("{id}: step/end {step} without its step/start"));
                }
                if !t.pending_calls.is_empty() {
                    i2.report(format!(
                        "{id}: step {step} ended with unanswered tool calls {:?}",
                        t.pending_calls
                    ));
                    t.pending_calls.clear();
                }
                t.open_step = None;
            }
            EventPayload::TurnEnd(TurnEndEvent { turn, .. }) => {
                if t.open_turn != Some(*turn) {
                    i2.report(format!("{id}: turn/end {turn} without its turn/start"));
                }
                if let Some(step) = t.open_step {
                    i2.report(format!("{id}: turn {turn} ended inside step {step}"));
                }
                t.open_turn = None;
            }
            EventPayload::Error(ErrorEvent { turn, step: 0, .. }) if t.open_turn == Some(*turn) => {
                // The loop's backstop: an exception escaped the turn body (a
                // turn-start or step listener) and the turn ends without its
                // `turn/end` (reference §3.3). The turn is closed here, so the
                // next turn is not reported as nested in it.
                t.open_turn = None;
                t.open_step = None;
                t.pending_calls.clear();
            }
            EventPayload::ToolCall(ToolCallEvent { call, .. }) => {
                let call_id = &call.call_id;
                if t.open_step.is_none() {
                    i2.report(format!("{id}: tool/call {call_id} outside a step"));
                }
                if !t.call_ids.insert(call_id.to_string()) {
                    i2.report(format!("{id}: tool/call id {call_id} logged twice"));
                }
                t.pending_calls.push(call_id.to_string());
            }
            EventPayload::ToolResult(ToolResultEvent { result, .. }) => {
                match t.pending_calls.iter().position(|c| *c == result.call_id) {
                    Some(pos) => {
                        t.pending_calls.remove(pos);
                    }
                    None => {
                        // A synthesized result answers a call logged in the
                        // assistant message but never dispatched: allowed.
                    }
                }
            }
            _ => {}
        }
    });

    let statuses: Arc<Mutex<HashMap<String, AgentStatus>>> = Default::default();
    // Likewise an agent registered under a disposed agent's id starts idle.
    let s2 = statuses.clone();
    let agent_created = registry.hooks().created.on(move |agent| {
        lock(&s2).remove(agent.id().as_str());
    });
    let i3 = inv.clone();
    let status = registry.hooks().status.on(move |change| {
        let mut statuses = lock(&statuses);
        let id = change.agent.id().to_string();
        let from = statuses.get(&id).copied().unwrap_or(AgentStatus::Idle);
        let legal = matches!(
            (from, change.status),
            (AgentStatus::Idle, AgentStatus::Running)
                | (AgentStatus::Running, AgentStatus::Idle)
                | (AgentStatus::Idle, AgentStatus::Disposed)
                | (AgentStatus::Running, AgentStatus::Disposed)
        );
        if !legal {
            i3.report(format!(
                "{id}: illegal status transition {} -> {}",
                from.as_str(),
                change.status.as_str()
            ));
        }
        statuses.insert(id, change.status);
    });
    (
        inv,
        Registration::merge(vec![created, events, agent_created, status]),
    )
}
