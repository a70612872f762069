//! Tab completion in the chat's line editor: `/` + a command name at the
//! start of the line ([`dsh::commands::complete`], then the session's
//! custom commands), and the argument of `/permission` (a mode) and
//! `/model` (a model served).
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
    /// The session whose custom commands complete too.
    pub(crate) session: Option<std::sync::Arc<dsh_controller::Session>>,
}

/// Where the word being completed starts in `line` (cursor at `pos`) and
/// what may replace it: the built-in commands, then the `custom` command
/// names (without the slash). Nothing to offer: `(pos, [])`.
pub(crate) fn candidates(
    line: &str,
    pos: usize,
    models: &[String],
    custom: &[String],
) -> (usize, Vec<String>) {
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
                .chain(
                    custom
                        .iter()
                        .map(String::as_str)
                        .filter(|n| n.starts_with(body)),
                )
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
        let custom: Vec<String> = self
            .session
            .as_ref()
            .map(|s| {
                s.custom_commands()
                    .commands
                    .iter()
                    .map(|c| c.name.clone())
                    .collect()
            })
            .unwrap_or_default();
        Ok(candidates(line, pos, &self.models, &custom))
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
            candidates("/per", 4, &models(), &[]),
            (0, vec!["/permission".into()])
        );
        let with_c: Vec<String> = dsh::commands::SLASH_COMMANDS
            .iter()
            .filter(|c| c.name.starts_with('c'))
            .map(|c| format!("/{}", c.name))
            .collect();
        assert!(with_c.len() >= 2, "{with_c:?}");
        assert_eq!(candidates("/c", 2, &models(), &[]), (0, with_c));
        assert_eq!(
            candidates("/", 1, &models(), &[]).1.len(),
            dsh::commands::SLASH_COMMANDS.len()
        );
        let custom = ["review".to_string(), "frontend:test".to_string()];
        assert_eq!(
            candidates("/revi", 5, &models(), &custom),
            (0, vec!["/review".to_string()])
        );
        assert_eq!(
            candidates("/fr", 3, &models(), &custom),
            (0, vec!["/frontend:test".to_string()])
        );
        assert_eq!(
            candidates("/", 1, &models(), &custom).1.len(),
            dsh::commands::SLASH_COMMANDS.len() + 2
        );
        assert!(candidates("hello /per", 10, &models(), &[]).1.is_empty());
        assert!(candidates("/zz", 3, &models(), &[]).1.is_empty());
    }

    #[test]
    fn completes_modes_and_models() {
        assert_eq!(
            candidates("/permission re", 14, &models(), &[]),
            (12, vec!["read-only".into()])
        );
        assert_eq!(candidates("/permission ", 12, &models(), &[]).1.len(), 3);
        assert_eq!(
            candidates("/model deepseek-v4-p", 20, &models(), &[]),
            (7, vec!["deepseek-v4-pro".into()])
        );
        assert!(candidates("/todo x", 7, &models(), &[]).1.is_empty());
        assert!(candidates("/model a b", 10, &models(), &[]).1.is_empty());
    }
}
