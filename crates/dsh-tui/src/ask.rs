//! The choice dialog of an `ask_user` call
//! ([`dsh_controller::EventBody::QuestionAsked`]): one question at a time,
//! its header, the question, the numbered options with their
//! descriptions, and a last entry to type an answer.
//!
//! Keys: a number picks an option (the next question follows); on a
//! multi-select question numbers toggle options and Enter confirms the
//! ones ticked; the last number (or any letter typed on an open question)
//! opens the text input, where Enter sends the text and Esc goes back to
//! the options. Enter with nothing chosen skips the question (the model
//! reads `(no answer)`). Esc (or Ctrl-C) declines the whole dialog.
//!
//! [`AskDialog`] is pure state: keys in, a [`QuestionReply`] out once the
//! last question is answered; [`AskDialog::body`] draws it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use dsh_controller::{QuestionAnswer, QuestionReply, QuestionSpec};

use crate::text::{dim, wrap, Color, Line, Modifier, Span, Style};

/// The most bytes the text input holds (as the composer's ceiling).
const INPUT_MAX: usize = crate::composer::TEXT_MAX;

/// The dialog of one `ask_user` call.
#[derive(Debug, Clone)]
pub struct AskDialog {
    /// The questions' id (what the reply answers).
    pub id: String,
    questions: Vec<QuestionSpec>,
    /// The question shown (index into `questions`).
    at: usize,
    answers: Vec<QuestionAnswer>,
    /// The options ticked on a multi-select question.
    ticked: Vec<bool>,
    /// The text being typed, when the input is open.
    input: Option<String>,
}

impl AskDialog {
    /// A dialog for questions `id`, showing the first question.
    pub fn new(id: impl Into<String>, questions: Vec<QuestionSpec>) -> Self {
        let mut dialog = Self {
            id: id.into(),
            questions,
            at: 0,
            answers: Vec::new(),
            ticked: Vec::new(),
            input: None,
        };
        dialog.show_current();
        dialog
    }

    /// Whether the text input is open (the cursor is in it).
    pub fn is_typing(&self) -> bool {
        self.input.is_some()
    }

    fn current(&self) -> Option<&QuestionSpec> {
        self.questions.get(self.at)
    }

    fn show_current(&mut self) {
        let options = self.current().map_or(0, |q| q.options.len());
        self.ticked = vec![false; options];
        // An open question takes text at once.
        self.input = (options == 0).then(String::new);
    }

    /// Records `answer` for the current question and moves on; the reply
    /// once it was the last.
    fn next(&mut self, answer: QuestionAnswer) -> Option<QuestionReply> {
        self.answers.push(answer);
        self.at += 1;
        if self.at >= self.questions.len() {
            return Some(QuestionReply::Answered {
                answers: std::mem::take(&mut self.answers),
            });
        }
        self.show_current();
        None
    }

    fn ticked_indexes(&self) -> Vec<u32> {
        self.ticked
            .iter()
            .enumerate()
            .filter(|(_, t)| **t)
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// Handles a key; the reply when the dialog is done (answered or
    /// declined).
    pub fn key(&mut self, key: KeyEvent) -> Option<QuestionReply> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return Some(QuestionReply::Declined);
        }
        let (options, multi) = self
            .current()
            .map_or((0, false), |q| (q.options.len(), q.multi_select));
        if let Some(input) = &mut self.input {
            match key.code {
                KeyCode::Enter => {
                    let text = std::mem::take(input);
                    let mut answer = QuestionAnswer::options(if multi {
                        self.ticked_indexes()
                    } else {
                        Vec::new()
                    });
                    answer.text = (!text.trim().is_empty()).then_some(text);
                    return self.next(answer);
                }
                KeyCode::Esc if options == 0 => return Some(QuestionReply::Declined),
                KeyCode::Esc => self.input = None,
                KeyCode::Backspace => {
                    input.pop();
                }
                KeyCode::Char(c) if !ctrl && input.len() < INPUT_MAX => input.push(c),
                _ => {}
            }
            return None;
        }
        match key.code {
            KeyCode::Esc => return Some(QuestionReply::Declined),
            KeyCode::Enter => {
                let answer = QuestionAnswer::options(if multi {
                    self.ticked_indexes()
                } else {
                    Vec::new()
                });
                return self.next(answer);
            }
            KeyCode::Char(c) if !ctrl => {
                let n = c.to_digit(10).map(|d| d as usize)?;
                if n == options + 1 {
                    self.input = Some(String::new());
                } else if (1..=options).contains(&n) {
                    if multi {
                        self.ticked[n - 1] = !self.ticked[n - 1];
                    } else {
                        return self.next(QuestionAnswer::options(vec![(n - 1) as u32]));
                    }
                }
            }
            _ => {}
        }
        None
    }

    /// A paste: into the text input when it is open (line breaks kept as
    /// spaces); ignored otherwise.
    pub fn paste(&mut self, text: &str) {
        if let Some(input) = &mut self.input {
            let room = INPUT_MAX.saturating_sub(input.len());
            input.extend(text.replace(['\r', '\n'], " ").chars().scan(0, |used, c| {
                *used += c.len_utf8();
                (*used <= room).then_some(c)
            }));
        }
    }

    /// The frame's title (` Question 1/2: Database `).
    pub fn title(&self) -> String {
        let n = self.questions.len();
        let header = self
            .current()
            .and_then(|q| q.header.as_deref())
            .map(|h| format!(": {}", h.lines().next().unwrap_or_default()))
            .unwrap_or_default();
        if n > 1 {
            format!(" Question {}/{n}{header} ", self.at + 1)
        } else {
            format!(" Question{header} ")
        }
    }

    /// The dialog's lines at `width` (inside the frame) and where the
    /// cursor goes (in the text input).
    pub fn body(&self, width: usize) -> (Vec<Line>, Option<(usize, usize)>) {
        let mut body = Vec::new();
        let Some(q) = self.current() else {
            return (body, None);
        };
        for l in q.question.lines() {
            body.extend(wrap(
                &[Span::styled(
                    l.to_string(),
                    Style::new().add_modifier(Modifier::BOLD),
                )],
                width,
                &[],
                &[],
            ));
        }
        body.push(Line::blank());
        for (i, option) in q.options.iter().enumerate() {
            let mark = if q.multi_select {
                if self.ticked.get(i).copied().unwrap_or(false) {
                    "[x] "
                } else {
                    "[ ] "
                }
            } else {
                ""
            };
            let head = format!("{}. {mark}", i + 1);
            let indent = " ".repeat(head.chars().count());
            body.extend(wrap(
                &[Span::plain(option.label.replace('\n', " "))],
                width,
                &[Span::styled(head, Style::new().fg(Color::Cyan))],
                &[Span::plain(indent.clone())],
            ));
            if let Some(d) = &option.description {
                body.extend(wrap(
                    &[Span::styled(d.replace('\n', " "), dim())],
                    width,
                    &[Span::plain(indent.clone())],
                    &[Span::plain(indent)],
                ));
            }
        }
        let mut cursor = None;
        match &self.input {
            Some(text) => {
                let head = if q.options.is_empty() {
                    "answer: ".to_string()
                } else {
                    format!("{}. answer: ", q.options.len() + 1)
                };
                let rows = wrap(
                    &[Span::plain(text.clone())],
                    width,
                    &[Span::styled(head, Style::new().fg(Color::Yellow))],
                    &[],
                );
                let last = rows.len().saturating_sub(1);
                let col = rows.get(last).map_or(0, Line::width);
                body.extend(rows);
                cursor = Some((body.len().saturating_sub(1), col));
            }
            None => body.push(Line::new(vec![
                Span::styled(
                    format!("{}. ", q.options.len() + 1),
                    Style::new().fg(Color::Cyan),
                ),
                Span::styled("Type an answer", dim()),
            ])),
        }
        body.push(Line::blank());
        let keys = match (&self.input, q.multi_select) {
            (Some(_), _) if q.options.is_empty() => "Enter sends (empty skips) · Esc declines",
            (Some(_), _) => "Enter sends (empty skips) · Esc back to the options",
            (None, true) => "number toggles · Enter confirms (none skips) · Esc declines",
            (None, false) => "number picks · Enter skips · Esc declines",
        };
        body.extend(wrap(
            &[Span::styled(keys, Style::new().fg(Color::Cyan))],
            width,
            &[],
            &[],
        ));
        (body, cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_controller::QuestionChoice;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn spec(options: &[&str], multi: bool) -> QuestionSpec {
        QuestionSpec {
            question: "Which?".into(),
            header: Some("Pick".into()),
            options: options
                .iter()
                .map(|l| QuestionChoice {
                    label: (*l).into(),
                    description: Some(format!("about {l}")),
                })
                .collect(),
            multi_select: multi,
        }
    }

    #[test]
    fn numbers_pick_toggle_and_type_through_every_question() {
        let mut d = AskDialog::new(
            "q-1",
            vec![
                spec(&["a", "b"], false),
                spec(&["x", "y", "z"], true),
                spec(&[], false),
                spec(&["p"], false),
            ],
        );
        assert_eq!(d.key(key(KeyCode::Char('2'))), None);
        assert_eq!(d.key(key(KeyCode::Char('3'))), None);
        assert_eq!(d.key(key(KeyCode::Char('1'))), None);
        assert_eq!(d.key(key(KeyCode::Char('3'))), None, "untick");
        assert_eq!(d.key(key(KeyCode::Char('9'))), None, "no such option");
        assert_eq!(d.key(key(KeyCode::Enter)), None);
        assert!(d.is_typing(), "an open question takes text at once");
        for c in "hi".chars() {
            d.key(key(KeyCode::Char(c)));
        }
        assert_eq!(d.key(key(KeyCode::Enter)), None);
        d.key(key(KeyCode::Char('2')));
        assert!(d.is_typing());
        d.key(key(KeyCode::Esc));
        assert!(!d.is_typing(), "Esc goes back to the options");
        let reply = d.key(key(KeyCode::Enter));
        assert_eq!(
            reply,
            Some(QuestionReply::Answered {
                answers: vec![
                    QuestionAnswer::options(vec![1]),
                    QuestionAnswer::options(vec![0]),
                    QuestionAnswer::text("hi"),
                    QuestionAnswer::default(),
                ]
            })
        );
    }

    #[test]
    fn esc_declines_and_the_body_shows_options_and_the_text_entry() {
        let mut d = AskDialog::new("q-1", vec![spec(&["a", "b"], false)]);
        let (lines, cursor) = d.body(60);
        let text: Vec<String> = lines.iter().map(Line::text).collect();
        assert!(text.iter().any(|l| l == "1. a"), "{text:?}");
        assert!(text.iter().any(|l| l.contains("about b")), "{text:?}");
        assert!(text.iter().any(|l| l == "3. Type an answer"), "{text:?}");
        assert_eq!(cursor, None);
        assert_eq!(d.title(), " Question: Pick ");
        assert_eq!(d.key(key(KeyCode::Esc)), Some(QuestionReply::Declined));
    }
}
