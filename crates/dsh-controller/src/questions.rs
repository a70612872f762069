//! `ask_user` questions as events: the session's [`Askers`] publishes each
//! call's questions as [`EventBody::QuestionAsked`] and waits for the first
//! [`Questions::answer`] from any client; the reply is published as
//! [`EventBody::QuestionAnswered`].
//!
//! Like approvals, questions are put only while a client that can answer
//! is attached ([`crate::Session::attach_approver`]); with nobody attached
//! the tool's slot is empty and the call tells the model there is no user.
//! A question whose asker stops waiting (the turn was aborted) or whose
//! last answerer left is withdrawn: published as declined.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use dsh::tools::ask_user::{self, Answer, Asker, Reply, UserQuestion};
use dsh_kernel::sync::lock;
use dsh_kernel::BoxFuture;
use dsh_protocol::codes;
use tokio::sync::oneshot;

use crate::event::{EventBody, QuestionAnswer, QuestionReply, QuestionSpec};
use crate::hub::Hub;
use crate::translate::Translator;
use crate::{CommandError, CommandResult};

/// One call's questions waiting for a reply.
struct Pending {
    questions: Vec<UserQuestion>,
    reply: oneshot::Sender<Reply>,
}

/// The `ask_user` questions of one session.
pub(crate) struct Questions {
    hub: Arc<Hub>,
    /// Tells the `waiting` activity.
    translator: Arc<Mutex<Translator>>,
    pending: Mutex<HashMap<String, Pending>>,
    next_id: AtomicU64,
}

impl Questions {
    pub(crate) fn new(hub: Arc<Hub>, translator: Arc<Mutex<Translator>>) -> Arc<Self> {
        Arc::new(Self {
            hub,
            translator,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        })
    }

    /// Replies to question `id`; the first reply wins.
    ///
    /// # Errors
    /// `UNKNOWN_QUESTION`: no such question waits; `INVALID_ANSWER`: the
    /// answers do not fit the questions (the question stays open).
    pub(crate) fn answer(&self, id: &str, reply: QuestionReply) -> CommandResult<()> {
        let mut pending = lock(&self.pending);
        let Some(waiting) = pending.remove(id) else {
            return Err(CommandError::new(
                codes::UNKNOWN_QUESTION,
                format!("no question \"{id}\" waits for an answer (answered already, withdrawn, or never asked)"),
            ));
        };
        let reply_ = match &reply {
            QuestionReply::Answered { answers } => {
                let answers: Vec<Answer> = answers.iter().map(QuestionAnswer::to_answer).collect();
                if let Err(e) = ask_user::check_answers(&waiting.questions, &answers) {
                    // Still open: put back under the same lock.
                    pending.insert(id.to_string(), waiting);
                    return Err(CommandError::new(codes::INVALID_ANSWER, e));
                }
                Reply::Answered(answers)
            }
            QuestionReply::Declined => Reply::Declined,
        };
        drop(pending);
        self.settled(id, reply);
        // The asker went away (the turn was aborted): the reply is moot.
        let _ = waiting.reply.send(reply_);
        Ok(())
    }

    /// The questions waiting, oldest first.
    pub(crate) fn waiting(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.pending).keys().cloned().collect();
        ids.sort_by_key(|id| id.trim_start_matches("q-").parse::<u64>().unwrap_or(0));
        ids
    }

    /// Withdraws every waiting question (published as declined; the
    /// calls return the declined error).
    pub(crate) fn withdraw_all(&self) {
        for id in self.waiting() {
            let _ = self.answer(&id, QuestionReply::Declined);
        }
    }

    fn settled(&self, id: &str, reply: QuestionReply) {
        self.hub.publish(EventBody::QuestionAnswered {
            question_id: id.to_string(),
            reply,
        });
    }
}

/// The asker `ask_user` puts questions to: the clients watching.
pub(crate) struct Askers(pub(crate) Arc<Questions>);

impl Asker for Askers {
    fn ask(&self, call_id: &str, questions: &[UserQuestion]) -> BoxFuture<'static, Reply> {
        let all = self.0.clone();
        let id = format!("q-{}", all.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&all.pending).insert(
            id.clone(),
            Pending {
                questions: questions.to_vec(),
                reply: tx,
            },
        );
        all.hub.publish(EventBody::QuestionAsked {
            question_id: id.clone(),
            call_id: call_id.to_string(),
            questions: questions.iter().map(QuestionSpec::of).collect(),
        });
        let waiting = lock(&all.translator).activity_of("waiting", Some(call_id));
        if let Some(activity) = waiting {
            all.hub.publish(activity);
        }
        let withdraw = Withdraw {
            questions: all,
            id: Some(id),
        };
        Box::pin(async move {
            let mut withdraw = withdraw;
            let reply = rx.await.unwrap_or(Reply::Declined);
            withdraw.id = None;
            reply
        })
    }
}

/// Withdraws a question whose asker stopped waiting.
struct Withdraw {
    questions: Arc<Questions>,
    id: Option<String>,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            if lock(&self.questions.pending).remove(&id).is_some() {
                self.questions.settled(&id, QuestionReply::Declined);
            }
        }
    }
}
