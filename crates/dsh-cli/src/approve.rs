//! Approval on the terminal: [`TerminalPerson`] answers the session
//! approver's questions in `dsh chat`.
//!
//! A question is printed under the tool call it is about (the tool, the
//! command or diff, the model's justification) and the next line typed at
//! the prompt answers it: `y` allows once, `a` allows this exact command for
//! the rest of the session, `n` denies (`n <note>` sends the note to the
//! model), Ctrl-C withdraws the question (a denial; the turn goes on).
//! Anything else asks again. One question is pending at a time; a second
//! waits for the first to be answered.
//!
//! The plan `exit_plan_mode` presents is asked about the same way, shown
//! whole: `y` approves it (plan mode ends), `n <feedback>` sends it back
//! for revision.

use std::sync::{Arc, Mutex};

use dsh::approval::Person;
use dsh_kernel::sync::lock;
use dsh_kernel::BoxFuture;
use dsh_protocol::ToolCall;
use dsh_tools::{Approval, Question};
use tokio::sync::oneshot;

use crate::render::Printer;
use crate::sanitize::visible;

/// What the options line says; repeated when an answer is not understood.
const OPTIONS: &str =
    "allow? [y] once · [a] always, for this exact command in this session · [n] deny (n <note> tells the model why) · Ctrl-C denies";

/// The options line of a plan's question.
const PLAN_OPTIONS: &str =
    "approve the plan? [y] yes, leave plan mode and carry it out · [n] no, keep planning (n <feedback> tells the model what to change) · Ctrl-C keeps planning";

/// One question waiting for its answer.
struct Pending {
    answer: oneshot::Sender<Approval>,
    /// Repeated when an answer is not understood.
    options: &'static str,
}

/// The chat's terminal as a [`Person`]: prints questions through the
/// printer and takes the answer from the chat's input loop
/// ([`TerminalPerson::answer_line`], [`TerminalPerson::interrupt`]).
pub(crate) struct TerminalPerson {
    printer: Arc<Printer>,
    /// The question waiting for a line, shared with the futures `ask`
    /// returns (they fill it once their turn to ask comes).
    pending: Arc<Mutex<Option<Pending>>>,
    /// Serialises questions: the next is printed when the previous is
    /// answered (the permit is held until then).
    one_at_a_time: Arc<tokio::sync::Semaphore>,
}

/// How a typed line answers a question, if it does.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Reading {
    /// The answer.
    Answer(Approval),
    /// Not an answer; the options are shown again.
    Unclear,
}

/// Reads an answer: `y`/`yes`, `a`/`always`, `n`/`no` with an optional
/// note after it. Case does not matter.
pub(crate) fn read_answer(line: &str) -> Reading {
    let line = line.trim();
    let (word, rest) = match line.split_once(char::is_whitespace) {
        Some((w, r)) => (w, r.trim()),
        None => (line, ""),
    };
    let word = word.to_ascii_lowercase();
    match (word.as_str(), rest.is_empty()) {
        ("y" | "yes", true) => Reading::Answer(Approval::AllowedOnce),
        ("a" | "always", true) => Reading::Answer(Approval::AllowedForSession),
        ("n" | "no", true) => Reading::Answer(Approval::Rejected { note: None }),
        ("n" | "no", false) => Reading::Answer(Approval::Rejected {
            note: Some(rest.to_string()),
        }),
        _ => Reading::Unclear,
    }
}

impl TerminalPerson {
    /// A person that prints through `printer`.
    pub(crate) fn new(printer: Arc<Printer>) -> Arc<Self> {
        Arc::new(Self {
            printer,
            pending: Arc::new(Mutex::new(None)),
            one_at_a_time: Arc::new(tokio::sync::Semaphore::new(1)),
        })
    }

    /// Whether a question waits for its answer (its asker still listens).
    pub(crate) fn is_asking(&self) -> bool {
        lock(&self.pending)
            .as_ref()
            .is_some_and(|p| !p.answer.is_closed())
    }

    /// Offers a typed line as the answer. Returns `false` when no question
    /// is pending (the line is a message); `true` when the line was taken,
    /// as an answer or as an unclear one (the options are shown again).
    pub(crate) fn answer_line(&self, line: &str) -> bool {
        let mut slot = lock(&self.pending);
        let Some(pending) = slot.take() else {
            return false;
        };
        if pending.answer.is_closed() {
            // The question was withdrawn (the turn was aborted).
            return false;
        }
        self.printer.prompt_shown();
        match read_answer(line) {
            Reading::Answer(answer) => {
                // The asker went away between the check and now: nothing to do.
                let _ = pending.answer.send(answer);
            }
            Reading::Unclear => {
                let options = pending.options;
                *slot = Some(pending);
                drop(slot);
                self.printer.notice(&format!("  {options}"));
            }
        }
        true
    }

    /// Ctrl-C: withdraws a pending question ([`Approval::Cancelled`]).
    /// Returns whether there was one (otherwise Ctrl-C means what it
    /// always means).
    pub(crate) fn interrupt(&self) -> bool {
        let Some(pending) = lock(&self.pending).take() else {
            return false;
        };
        if pending.answer.is_closed() {
            return false;
        }
        // The line editor prompts again; the denial's result replaces it.
        self.printer.prompt_shown();
        let _ = pending.answer.send(Approval::Cancelled);
        true
    }
}

impl Person for TerminalPerson {
    fn ask(&self, call: &ToolCall, question: &Question) -> BoxFuture<'static, Approval> {
        let (text, options) = if call.name == dsh::plan::EXIT_PLAN_MODE_TOOL {
            (plan_question(question), PLAN_OPTIONS)
        } else {
            (tool_question(call, question), OPTIONS)
        };
        let printer = self.printer.clone();
        let gate = self.one_at_a_time.clone();
        let (tx, rx) = oneshot::channel();
        let pending = self.pending.clone();
        Box::pin(async move {
            // The semaphore is never closed; a closed one would mean nobody
            // can answer.
            let Ok(_permit) = gate.acquire_owned().await else {
                return Approval::Cancelled;
            };
            *lock(&pending) = Some(Pending {
                answer: tx,
                options,
            });
            printer.notice(&text);
            // A dropped sender (the chat ended) withdraws the question.
            rx.await.unwrap_or(Approval::Cancelled)
        })
    }
}

/// A plan's question: the plan whole, indented, then [`PLAN_OPTIONS`].
fn plan_question(question: &Question) -> String {
    let plan = visible(question.detail.as_deref().unwrap_or(""));
    let plan = plan.trim_end().replace('\n', "\n    ");
    format!("? the model's plan:\n    {plan}\n  {PLAN_OPTIONS}")
}

/// A tool call's question: the tool and what it wants, the command, content
/// or diff, the model's justification, then [`OPTIONS`].
fn tool_question(call: &ToolCall, question: &Question) -> String {
    let mut text = format!(
        "? {} wants to {}",
        visible(&call.name),
        visible(&question.summary)
    );
    if let Some(detail) = &question.detail {
        let detail = visible(detail).replace('\n', "\n    ");
        let label = match call.name.as_str() {
            "bash" => "command",
            "write" => "content",
            "edit" => "diff",
            _ => "detail",
        };
        text.push_str(&format!("\n  {label}: {detail}"));
    }
    if let Some(why) = &question.justification {
        text.push_str(&format!("\n  justification: {}", visible(why)));
    }
    text.push_str(&format!("\n  {OPTIONS}"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_case_blind_with_an_optional_note_on_no() {
        assert_eq!(read_answer("y"), Reading::Answer(Approval::AllowedOnce));
        assert_eq!(read_answer(" YES "), Reading::Answer(Approval::AllowedOnce));
        assert_eq!(
            read_answer("a"),
            Reading::Answer(Approval::AllowedForSession)
        );
        assert_eq!(
            read_answer("n"),
            Reading::Answer(Approval::Rejected { note: None })
        );
        assert_eq!(
            read_answer("no   use the workspace  "),
            Reading::Answer(Approval::Rejected {
                note: Some("use the workspace".into())
            })
        );
        for unclear in ["", "maybe", "y please", "ya", "always now"] {
            assert_eq!(read_answer(unclear), Reading::Unclear, "{unclear:?}");
        }
    }
}
