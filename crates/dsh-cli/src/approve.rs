//! Approval on the terminal: [`TerminalPerson`] answers the session's
//! approval questions (controller events) in `dsh chat`.
//!
//! A question is printed under the tool call it is about (the tool, the
//! command or diff, the model's justification) and the next line typed at
//! the prompt answers it: `y` allows once, `a` allows this exact command for
//! the rest of the session, `n` denies (`n <note>` sends the note to the
//! model), Ctrl-C withdraws the question (a denial; the turn goes on).
//! Anything else asks again. One question is shown at a time; a second
//! waits for the first to be answered.
//!
//! The plan `exit_plan_mode` presents is asked about the same way, shown
//! whole: `y` approves it (plan mode ends), `n <feedback>` sends it back
//! for revision.
//!
//! The model's `ask_user` questions are asked here too, after any approval
//! question ([`crate::ask_line`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use dsh_controller::{ApprovalKind, Decision, Session};
use dsh_kernel::sync::lock;
use dsh_tools::Approval;

use crate::ask_line::{LineQuestions, Taken};
use crate::render::Printer;
use crate::sanitize::visible;

/// What the options line says; repeated when an answer is not understood.
const OPTIONS: &str =
    "allow? [y] once · [a] always, for this exact command in this session · [n] deny (n <note> tells the model why) · Ctrl-C denies";

/// The options line of a plan's question.
const PLAN_OPTIONS: &str =
    "approve the plan? [y] yes, leave plan mode and carry it out · [n] no, keep planning (n <feedback> tells the model what to change) · Ctrl-C keeps planning";

/// One question as the terminal shows it.
struct Asked {
    id: String,
    /// The question, shown when its turn comes.
    text: String,
    /// Repeated when an answer is not understood.
    options: &'static str,
    /// The rule "always allow" would save, offered after an `a` answer.
    suggested_rule: Option<String>,
}

#[derive(Default)]
struct Queue {
    /// The question shown, waiting for a line.
    shown: Option<Asked>,
    /// Questions asked meanwhile (calls that run together), in order.
    waiting: VecDeque<Asked>,
    /// The rule offered for saving after an `a` answer; the next line
    /// answers the offer.
    offer: Option<String>,
}

/// The chat's terminal as the session's answerer: shows the session's
/// approval questions one at a time through the printer and answers them
/// from the lines the chat's input loop offers
/// ([`TerminalPerson::answer_line`], [`TerminalPerson::interrupt`]).
pub(crate) struct TerminalPerson {
    printer: Arc<Printer>,
    session: Arc<Session>,
    queue: Mutex<Queue>,
    /// The model's `ask_user` questions.
    questions: Mutex<LineQuestions>,
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

/// The controller's decision for a typed answer.
fn decision(answer: Approval) -> Decision {
    match answer {
        Approval::AllowedOnce => Decision::AllowOnce,
        Approval::AllowedForSession => Decision::AllowAlways,
        Approval::Rejected { note } => Decision::Reject { note },
        Approval::Cancelled | Approval::Unavailable(_) => Decision::Cancelled,
    }
}

impl TerminalPerson {
    /// An answerer for `session` that prints through `printer`.
    pub(crate) fn new(printer: Arc<Printer>, session: Arc<Session>) -> Arc<Self> {
        Arc::new(Self {
            printer,
            session,
            queue: Mutex::new(Queue::default()),
            questions: Mutex::new(LineQuestions::default()),
        })
    }

    /// Whether a question waits for its answer.
    pub(crate) fn is_asking(&self) -> bool {
        let asking = {
            let queue = lock(&self.queue);
            queue.shown.is_some() || queue.offer.is_some()
        };
        asking || lock(&self.questions).is_asking()
    }

    /// The model asked questions
    /// ([`dsh_controller::EventBody::QuestionAsked`]): shown now, or after
    /// the calls before them are answered.
    pub(crate) fn questions_asked(&self, id: &str, questions: &[dsh_controller::QuestionSpec]) {
        if let Some(text) = lock(&self.questions).asked(id, questions) {
            self.printer.notice(&text);
        }
    }

    /// Questions were answered or declined (here or elsewhere): forgotten,
    /// and the next call's shown.
    pub(crate) fn questions_settled(&self, id: &str) {
        if let Some(text) = lock(&self.questions).settled(id) {
            self.printer.notice(&text);
        }
    }

    /// Offers `line` to the model's questions; whether it answered one.
    fn answer_question_line(&self, line: &str) -> bool {
        let taken = lock(&self.questions).answer_line(line);
        let Taken::Answered { next, reply } = taken else {
            return false;
        };
        self.printer.prompt_shown();
        if let Some((id, reply)) = reply {
            if let Err(e) = self.session.answer_question(&id, reply) {
                // Settled elsewhere meanwhile: the first reply won.
                if e.code != dsh_protocol::codes::UNKNOWN_QUESTION {
                    self.printer
                        .notice(&visible(&format!("dsh: {}", e.message)));
                }
            }
        }
        if let Some(next) = next {
            self.printer.notice(&next);
        }
        true
    }

    /// A question was asked ([`dsh_controller::EventBody::ApprovalAsked`]):
    /// shown now, or after the ones before it are answered.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn asked(
        &self,
        id: &str,
        kind: ApprovalKind,
        tool: &str,
        summary: &str,
        detail: Option<&str>,
        justification: Option<&str>,
        suggested_rule: Option<&str>,
    ) {
        let (text, options) = match kind {
            ApprovalKind::Plan => (plan_question(detail), PLAN_OPTIONS),
            ApprovalKind::Tool => (tool_question(tool, summary, detail, justification), OPTIONS),
        };
        let asked = Asked {
            id: id.to_string(),
            text,
            options,
            suggested_rule: suggested_rule.map(str::to_string),
        };
        let mut queue = lock(&self.queue);
        if queue.shown.is_some() {
            queue.waiting.push_back(asked);
            return;
        }
        self.printer.notice(&asked.text);
        queue.shown = Some(asked);
    }

    /// A question was answered or withdrawn (here or by the controller: an
    /// aborted turn): forgotten, and the next one shown.
    pub(crate) fn decided(&self, id: &str) {
        let mut queue = lock(&self.queue);
        queue.waiting.retain(|a| a.id != id);
        if queue.shown.as_ref().is_some_and(|a| a.id == id) {
            queue.shown = queue.waiting.pop_front();
            if let Some(next) = &queue.shown {
                self.printer.notice(&next.text);
            }
        }
    }

    /// Offers a typed line as the answer. Returns `false` when no question
    /// is shown (the line is a message); `true` when the line was taken,
    /// as an answer or as an unclear one (the options are shown again).
    pub(crate) fn answer_line(&self, line: &str) -> bool {
        let offered = lock(&self.queue).offer.take();
        // Only a yes or a no answers the offer; any other line is what it
        // is (a message, another question's answer) and the offer lapses.
        let answer = line.trim().to_ascii_lowercase();
        if let Some(rule) =
            offered.filter(|_| matches!(answer.as_str(), "y" | "yes" | "n" | "no" | ""))
        {
            self.printer.prompt_shown();
            let text = if matches!(answer.as_str(), "y" | "yes") {
                match self.session.save_rule(&rule) {
                    Ok(Some(file)) => format!(
                        "  saved: always allow {rule} in this project ({file}; `dsh permissions list` shows it)"
                    ),
                    Ok(None) => format!("  {rule} was saved already"),
                    Err(e) => format!("dsh: {}", e.message),
                }
            } else {
                "  not saved".to_string()
            };
            self.printer.notice(&visible(&text));
            return true;
        }
        let shown = lock(&self.queue)
            .shown
            .as_ref()
            .map(|a| (a.id.clone(), a.options, a.suggested_rule.clone()));
        let Some((id, options, rule)) = shown else {
            return self.answer_question_line(line);
        };
        self.printer.prompt_shown();
        match read_answer(line) {
            // Answered elsewhere meanwhile: the first answer won.
            Reading::Answer(answer) => {
                let always = answer == Approval::AllowedForSession;
                if self.session.answer(&id, decision(answer)).is_ok() && always {
                    if let Some(rule) = rule {
                        self.printer.notice(&visible(&format!(
                            "? always allow {rule} in this project (still inside the sandbox)? [y/N]"
                        )));
                        lock(&self.queue).offer = Some(rule);
                    }
                }
            }
            Reading::Unclear => self.printer.notice(&format!("  {options}")),
        }
        true
    }

    /// Ctrl-C: withdraws the shown question (a denial). Returns whether
    /// there was one (otherwise Ctrl-C means what it always means).
    pub(crate) fn interrupt(&self) -> bool {
        let shown = lock(&self.queue).shown.as_ref().map(|a| a.id.clone());
        let Some(id) = shown else {
            let Some(id) = lock(&self.questions).shown() else {
                return false;
            };
            self.printer.prompt_shown();
            let _ = self
                .session
                .answer_question(&id, dsh_controller::QuestionReply::Declined);
            return true;
        };
        // The line editor prompts again; the denial's result replaces it.
        self.printer.prompt_shown();
        let _ = self.session.answer(&id, Decision::Cancelled);
        true
    }
}

/// A plan's question: the plan whole, indented, then [`PLAN_OPTIONS`].
fn plan_question(plan: Option<&str>) -> String {
    let plan = visible(plan.unwrap_or(""));
    let plan = plan.trim_end().replace('\n', "\n    ");
    format!("? the model's plan:\n    {plan}\n  {PLAN_OPTIONS}")
}

/// A tool call's question: the tool and what it wants, the command, content
/// or diff, the model's justification, then [`OPTIONS`].
fn tool_question(
    tool: &str,
    summary: &str,
    detail: Option<&str>,
    justification: Option<&str>,
) -> String {
    let mut text = format!("? {} wants to {}", visible(tool), visible(summary));
    if let Some(detail) = detail {
        let detail = visible(detail).replace('\n', "\n    ");
        let label = match tool {
            "bash" => "command",
            "write" => "content",
            "edit" => "diff",
            _ => "detail",
        };
        text.push_str(&format!("\n  {label}: {detail}"));
    }
    if let Some(why) = justification {
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
