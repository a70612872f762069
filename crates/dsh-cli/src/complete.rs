//! Tab completion in the chat's line editor: `/` + a command name at the
//! start of the line ([`dsh::commands::complete`]), and the argument of
//! `/permission` (a mode) and `/model` (a model served).
//!
//! Only completion: no hints, highlighting or validation (the rustyline
//! traits' defaults), so the line editor behaves as before otherwise.

use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

/// The chat editor's helper: completes commands and their arguments.
pub(crate) struct LineCompletion {
    /// The models `/model` completes.
    pub(crate) models: Vec<String>,
}

/// Where the word being completed starts in `line` (cursor at `pos`) and
/// what may replace it. Nothing to offer: `(pos, [])`.
pub(crate) fn candidates(line: &str, pos: usize, models: &[String]) -> (usize, Vec<String>) {
    let before = line.get(..pos).unwrap_or(line);
    let start = before.len() - before.trim_start().len();
    let typed = &before[start..];
    let Some(body) = typed.strip_prefix('/') else {
        return (pos, Vec::new());
    };
    match body.split_once(char::is_whitespace) {
        None => (
            start,
            dsh::commands::complete(body)
                .into_iter()
                .map(|n| format!("/{n}"))
                .collect(),
        ),
        Some((name, arg)) => {
            let arg = arg.trim_start();
            if arg.contains(char::is_whitespace) {
                return (pos, Vec::new());
            }
            let options: Vec<String> = match name {
                "permission" => dsh::commands::PERMISSION_MODES
                    .iter()
                    .map(|m| m.to_string())
                    .collect(),
                "model" => models.to_vec(),
                "plan" => vec!["on".into(), "off".into()],
                _ => Vec::new(),
            };
            (
                pos - arg.len(),
                options.into_iter().filter(|o| o.starts_with(arg)).collect(),
            )
        }
    }
}

impl Completer for LineCompletion {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(candidates(line, pos, &self.models))
    }
}

impl Hinter for LineCompletion {
    type Hint = String;
}

impl Highlighter for LineCompletion {}

impl Validator for LineCompletion {}

impl Helper for LineCompletion {}

#[cfg(test)]
mod tests {
    use super::*;

    fn models() -> Vec<String> {
        vec![
            "echo".into(),
            "deepseek-v4-flash".into(),
            "deepseek-v4-pro".into(),
        ]
    }

    #[test]
    fn completes_command_names_at_the_line_start() {
        assert_eq!(
            candidates("/per", 4, &models()),
            (0, vec!["/permission".into()])
        );
        assert_eq!(
            candidates("/c", 2, &models()),
            (0, vec!["/compact".to_string(), "/clear".to_string()])
        );
        assert_eq!(candidates("/", 1, &models()).1.len(), 9);
        assert!(candidates("hello /per", 10, &models()).1.is_empty());
        assert!(candidates("/zz", 3, &models()).1.is_empty());
    }

    #[test]
    fn completes_modes_and_models() {
        assert_eq!(
            candidates("/permission re", 14, &models()),
            (12, vec!["read-only".into()])
        );
        assert_eq!(candidates("/permission ", 12, &models()).1.len(), 3);
        assert_eq!(
            candidates("/model deepseek-v4-p", 20, &models()),
            (7, vec!["deepseek-v4-pro".into()])
        );
        assert!(candidates("/todo x", 7, &models()).1.is_empty());
        assert!(candidates("/model a b", 10, &models()).1.is_empty());
    }
}
