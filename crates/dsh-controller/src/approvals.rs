//! Approval questions as events: the session's [`Person`] publishes each
//! question as [`EventBody::ApprovalAsked`] and waits for the first
//! [`Approvals::answer`] from any client; the answer is published as
//! [`EventBody::ApprovalDecided`].
//!
//! Questions are put only while someone can answer them (a client
//! attached with [`crate::Session::attach_approver`]). With nobody
//! attached the approver has no person, and a call that needs approval
//! is denied with a reason the model reads (as in `dsh run`). When the
//! last answerer leaves, its pending questions are withdrawn.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use dsh::approval::Person;
use dsh_kernel::sync::lock;
use dsh_kernel::BoxFuture;
use dsh_protocol::ToolCall;
use dsh_tools::{Approval, Question};
use tokio::sync::oneshot;

use crate::event::{ApprovalKind, Decision, EventBody};
use crate::hub::Hub;
use crate::translate::Translator;
use crate::{CommandError, CommandResult};

/// The questions of one session.
pub(crate) struct Approvals {
    hub: Arc<Hub>,
    /// Tells the `waiting` activity.
    translator: Arc<Mutex<Translator>>,
    pending: Mutex<HashMap<String, oneshot::Sender<Decision>>>,
    next_id: AtomicU64,
}

impl Approvals {
    pub(crate) fn new(hub: Arc<Hub>, translator: Arc<Mutex<Translator>>) -> Arc<Self> {
        Arc::new(Self {
            hub,
            translator,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        })
    }

    /// Answers question `id`; the first answer wins.
    ///
    /// # Errors
    /// `UNKNOWN_APPROVAL`: no such question waits (answered, withdrawn,
    /// never asked).
    pub(crate) fn answer(&self, id: &str, decision: Decision) -> CommandResult<()> {
        let Some(tx) = lock(&self.pending).remove(id) else {
            return Err(CommandError::new(
                dsh_protocol::codes::UNKNOWN_APPROVAL,
                format!("no question \"{id}\" waits for an answer (answered already, withdrawn, or never asked)"),
            ));
        };
        self.decided(id, decision.clone());
        // The asker went away (the turn was aborted): the answer is moot.
        let _ = tx.send(decision);
        Ok(())
    }

    /// The questions waiting, oldest first.
    pub(crate) fn waiting(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.pending).keys().cloned().collect();
        ids.sort_by_key(|id| id.trim_start_matches("a-").parse::<u64>().unwrap_or(0));
        ids
    }

    /// Withdraws every waiting question ([`Decision::Cancelled`]).
    pub(crate) fn withdraw_all(&self) {
        for id in self.waiting() {
            let _ = self.answer(&id, Decision::Cancelled);
        }
    }

    fn decided(&self, id: &str, decision: Decision) {
        self.hub.publish(EventBody::ApprovalDecided {
            approval_id: id.to_string(),
            decision,
        });
    }
}

/// The person the session's approver asks: the clients watching; the
/// rules suggest what "always allow" would save.
pub(crate) struct Watchers(
    pub(crate) Arc<Approvals>,
    pub(crate) Option<Arc<dsh::rules::Rules>>,
);

impl Person for Watchers {
    fn ask(&self, call: &ToolCall, question: &Question) -> BoxFuture<'static, Approval> {
        let approvals = self.0.clone();
        let id = format!("a-{}", approvals.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&approvals.pending).insert(id.clone(), tx);
        let kind = if call.name == dsh::plan::EXIT_PLAN_MODE_TOOL {
            ApprovalKind::Plan
        } else {
            ApprovalKind::Tool
        };
        approvals.hub.publish(EventBody::ApprovalAsked {
            approval_id: id.clone(),
            kind,
            call_id: call.call_id.as_str().to_string(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            summary: question.summary.clone(),
            detail: question.detail.clone(),
            justification: question.justification.clone(),
            suggested_rule: match kind {
                ApprovalKind::Tool => self.1.as_ref().and_then(|r| r.suggest(call)),
                ApprovalKind::Plan => None,
            },
        });
        let waiting =
            lock(&approvals.translator).activity_of("waiting", Some(call.call_id.as_str()));
        if let Some(activity) = waiting {
            approvals.hub.publish(activity);
        }
        // Dropped unanswered (the turn was aborted): withdrawn.
        let withdraw = Withdraw {
            approvals,
            id: Some(id),
        };
        Box::pin(async move {
            let mut withdraw = withdraw;
            let decision = rx.await.unwrap_or(Decision::Cancelled);
            withdraw.id = None;
            decision.approval()
        })
    }
}

/// Withdraws a question whose asker stopped waiting.
struct Withdraw {
    approvals: Arc<Approvals>,
    id: Option<String>,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            if lock(&self.approvals.pending).remove(&id).is_some() {
                self.approvals.decided(&id, Decision::Cancelled);
            }
        }
    }
}
