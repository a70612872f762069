//! The model's `ask_user` questions in the chat's line mode: each question
//! is printed (its header, the question, the numbered options with their
//! descriptions) and the next line typed answers it: a number picks an
//! option, several (`1,3` or `1 3`) pick several on a multi-select
//! question, anything else is the answer in the person's own words, and an
//! empty line skips the question. Ctrl-C declines the whole call.
//!
//! [`LineQuestions`] is the state; [`crate::approve::TerminalPerson`]
//! feeds it the events and the lines (an approval question, when one is
//! shown, takes a line first).

use std::collections::VecDeque;

use dsh_controller::{QuestionAnswer, QuestionReply, QuestionSpec};

use crate::sanitize::visible;

/// What to tell the person after how to answer.
const HOW: &str = "answer with a number (several on a multi-select question: 1,3), in your own words, or an empty line to skip · Ctrl-C declines";

/// One call's questions.
struct Asked {
    id: String,
    questions: Vec<QuestionSpec>,
    answers: Vec<QuestionAnswer>,
}

impl Asked {
    fn current(&self) -> Option<&QuestionSpec> {
        self.questions.get(self.answers.len())
    }
}

/// What a typed line did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Taken {
    /// No question is shown: the line is not an answer.
    NotAsked,
    /// It answered a question; print the next one (`Some(text)`), or the
    /// call is settled: send `reply` for questions `id`.
    Answered {
        /// The next question's text, when one follows.
        next: Option<String>,
        /// The reply, once every question of the call was answered.
        reply: Option<(String, QuestionReply)>,
    },
}

/// The `ask_user` calls waiting for the terminal, oldest first.
#[derive(Default)]
pub(crate) struct LineQuestions {
    calls: VecDeque<Asked>,
}

impl LineQuestions {
    /// Questions `id` were asked; returns the text to print now when they
    /// are the first waiting.
    pub(crate) fn asked(&mut self, id: &str, questions: &[QuestionSpec]) -> Option<String> {
        self.calls.push_back(Asked {
            id: id.to_string(),
            questions: questions.to_vec(),
            answers: Vec::new(),
        });
        (self.calls.len() == 1).then(|| self.text()).flatten()
    }

    /// Questions `id` were settled (here or elsewhere); returns the text of
    /// the next call's first question when one was waiting behind.
    pub(crate) fn settled(&mut self, id: &str) -> Option<String> {
        let was_first = self.calls.front().is_some_and(|c| c.id == id);
        self.calls.retain(|c| c.id != id);
        if was_first {
            self.text()
        } else {
            None
        }
    }

    /// Whether a question is shown.
    pub(crate) fn is_asking(&self) -> bool {
        !self.calls.is_empty()
    }

    /// The id of the call shown (what Ctrl-C declines).
    pub(crate) fn shown(&self) -> Option<String> {
        self.calls.front().map(|c| c.id.clone())
    }

    /// Takes `line` as the answer to the question shown.
    pub(crate) fn answer_line(&mut self, line: &str) -> Taken {
        let Some(call) = self.calls.front_mut() else {
            return Taken::NotAsked;
        };
        let Some(q) = call.current() else {
            return Taken::NotAsked;
        };
        let answer = read_answer(q, line);
        call.answers.push(answer);
        if call.current().is_some() {
            return Taken::Answered {
                next: self.text(),
                reply: None,
            };
        }
        let Some(done) = self.calls.pop_front() else {
            return Taken::NotAsked;
        };
        Taken::Answered {
            next: self.text(),
            reply: Some((
                done.id,
                QuestionReply::Answered {
                    answers: done.answers,
                },
            )),
        }
    }

    /// The question shown, as printed: `? [header] question (n/m)`, the
    /// numbered options, how to answer. Foreign text made visible.
    fn text(&self) -> Option<String> {
        let call = self.calls.front()?;
        let q = call.current()?;
        let mut text = String::from("? ");
        if let Some(h) = &q.header {
            text.push_str(&format!("[{}] ", visible(h)));
        }
        text.push_str(&visible(&q.question).replace('\n', "\n  "));
        if call.questions.len() > 1 {
            text.push_str(&format!(
                " ({}/{})",
                call.answers.len() + 1,
                call.questions.len()
            ));
        }
        for (i, o) in q.options.iter().enumerate() {
            text.push_str(&format!("\n    {}. {}", i + 1, visible(&o.label)));
            if let Some(d) = &o.description {
                text.push_str(&format!(" — {}", visible(d).replace('\n', " ")));
            }
        }
        if q.multi_select {
            text.push_str("\n  (several may be chosen)");
        }
        text.push_str(&format!("\n  {HOW}"));
        Some(text)
    }
}

/// Reads a line as the answer to `q`: empty skips; numbers naming options
/// (one, or several on a multi-select question, split by commas or
/// spaces) choose them; anything else is free text, verbatim.
pub(crate) fn read_answer(q: &QuestionSpec, line: &str) -> QuestionAnswer {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return QuestionAnswer::default();
    }
    let picked: Option<Vec<u32>> = trimmed
        .split([',', ' '])
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<u32>()
                .ok()
                .filter(|n| (1..=q.options.len() as u32).contains(n))
                .map(|n| n - 1)
        })
        .collect();
    match picked {
        Some(mut picked) if !picked.is_empty() && (q.multi_select || picked.len() == 1) => {
            let mut seen = std::collections::HashSet::new();
            picked.retain(|i| seen.insert(*i));
            QuestionAnswer::options(picked)
        }
        _ => QuestionAnswer::text(line.trim_end_matches(['\r', '\n'])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_controller::QuestionChoice;

    fn spec(options: &[&str], multi: bool) -> QuestionSpec {
        QuestionSpec {
            question: "Which?".into(),
            header: Some("Pick".into()),
            options: options
                .iter()
                .map(|l| QuestionChoice {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multi_select: multi,
        }
    }

    #[test]
    fn lines_read_as_numbers_several_numbers_text_or_a_skip() {
        let single = spec(&["a", "b"], false);
        let multi = spec(&["a", "b", "c"], true);
        assert_eq!(read_answer(&single, "2"), QuestionAnswer::options(vec![1]));
        assert_eq!(read_answer(&single, " "), QuestionAnswer::default());
        assert_eq!(read_answer(&single, "1,2"), QuestionAnswer::text("1,2"));
        assert_eq!(read_answer(&single, "3"), QuestionAnswer::text("3"));
        assert_eq!(
            read_answer(&single, "use b, mostly"),
            QuestionAnswer::text("use b, mostly")
        );
        assert_eq!(
            read_answer(&multi, "3, 1 3"),
            QuestionAnswer::options(vec![2, 0])
        );
        assert_eq!(
            read_answer(&spec(&[], false), "42"),
            QuestionAnswer::text("42")
        );
    }

    #[test]
    fn a_call_is_answered_question_by_question_then_the_next_call_shows() {
        let mut q = LineQuestions::default();
        let first = q.asked("q-1", &[spec(&["a", "b"], false), spec(&[], false)]);
        let first = first.unwrap();
        assert!(
            first.starts_with("? [Pick] Which? (1/2)\n    1. a\n    2. b"),
            "{first}"
        );
        assert_eq!(
            q.asked("q-2", &[spec(&["x"], false)]),
            None,
            "waits its turn"
        );
        let Taken::Answered { next, reply } = q.answer_line("2") else {
            panic!("not taken")
        };
        assert!(next.unwrap().contains("(2/2)"));
        assert_eq!(reply, None);
        let Taken::Answered { next, reply } = q.answer_line("free words") else {
            panic!("not taken")
        };
        assert!(next.unwrap().contains("1. x"), "the next call shows");
        assert_eq!(
            reply,
            Some((
                "q-1".to_string(),
                QuestionReply::Answered {
                    answers: vec![
                        QuestionAnswer::options(vec![1]),
                        QuestionAnswer::text("free words")
                    ]
                }
            ))
        );
        assert_eq!(q.settled("q-2"), None);
        assert_eq!(q.answer_line("1"), Taken::NotAsked);
    }
}
