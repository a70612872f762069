//! `/undo`, `/redo` and `/rewind`: the controller's side of the
//! workspace checkpoints ([`dsh::checkpoints`]). Each runs between turns;
//! the git work runs off the async executor.

use std::sync::Arc;

use dsh::checkpoints::{CheckpointFailure, Checkpoints, Restored, RewindScope, Rewound, TurnPoint};
use dsh_agent::Agent;
use dsh_protocol::codes;

use crate::commands::{usage, Reply};
use crate::{CommandError, CommandResult, Session};

/// What `/rewind`'s arguments ask for: the list, or a turn to go back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RewindRequest {
    /// `/rewind`: list the turns.
    List,
    /// `/rewind N [--files-only|--conversation-only] [--force]`.
    To {
        turn: u64,
        scope: RewindScope,
        force: bool,
    },
}

/// Parses `/undo`'s and `/redo`'s arguments: nothing or `--force`.
pub(crate) fn parse_force(name: &str, args: &str) -> Result<bool, Reply> {
    match args {
        "" => Ok(false),
        "--force" | "-f" => Ok(true),
        _ => Err(usage(&format!("/{name} [--force]"))),
    }
}

/// Parses `/rewind`'s arguments.
pub(crate) fn parse_rewind(args: &str) -> Result<RewindRequest, Reply> {
    const USAGE: &str = "/rewind [N [--files-only|--conversation-only] [--force]]";
    let mut turn = None;
    let mut scope = RewindScope::Both;
    let mut force = false;
    for word in args.split_whitespace() {
        match word {
            "--files-only" if scope == RewindScope::Both => scope = RewindScope::Files,
            "--conversation-only" if scope == RewindScope::Both => {
                scope = RewindScope::Conversation
            }
            "--force" | "-f" => force = true,
            n if turn.is_none() => match n.parse::<u64>() {
                Ok(n) if n > 0 => turn = Some(n),
                _ => return Err(usage(USAGE)),
            },
            _ => return Err(usage(USAGE)),
        }
    }
    match turn {
        Some(turn) => Ok(RewindRequest::To { turn, scope, force }),
        None if args.is_empty() => Ok(RewindRequest::List),
        None => Err(usage(USAGE)),
    }
}

impl From<CheckpointFailure> for CommandError {
    fn from(e: CheckpointFailure) -> Self {
        CommandError::new(e.code, e.message)
    }
}

impl Session {
    /// The checkpoints, the agent, and a check that no turn runs.
    async fn checkpoint_parts(
        &self,
        what: &str,
    ) -> CommandResult<(Arc<Checkpoints>, Arc<dyn Agent>)> {
        self.between_turns(what).await?;
        let stack = self.stack()?;
        Ok((stack.checkpoints.clone(), self.agent()?))
    }

    /// `/undo [--force]`: the last turn that changed files (and is not
    /// undone) gets them set back; the model is told.
    ///
    /// # Errors
    /// `TURN_RUNNING`; `INVALID_COMMAND` (nothing to undo);
    /// `CHECKPOINT_UNAVAILABLE`/`CHECKPOINT_FAILED` (nothing changed).
    pub async fn undo(&self, force: bool) -> CommandResult<Restored> {
        let (checkpoints, agent) = self.checkpoint_parts("/undo").await?;
        blocking(move || checkpoints.undo(&agent, force)).await
    }

    /// `/redo [--force]`: reapplies what the last `/undo` set back.
    ///
    /// # Errors
    /// As [`Session::undo`].
    pub async fn redo(&self, force: bool) -> CommandResult<Restored> {
        let (checkpoints, agent) = self.checkpoint_parts("/redo").await?;
        blocking(move || checkpoints.redo(&agent, force)).await
    }

    /// The turns of the session's branch with the files each changed.
    ///
    /// # Errors
    /// `TURN_RUNNING`; the store cannot be read.
    pub async fn turns(&self) -> CommandResult<Vec<TurnPoint>> {
        let (checkpoints, agent) = self.checkpoint_parts("/rewind").await?;
        blocking(move || checkpoints.turns(&agent.session())).await
    }

    /// `/rewind N`: back to before turn `turn`: files, conversation or
    /// both (the old branch stays in the log).
    ///
    /// # Errors
    /// `TURN_RUNNING`; `INVALID_COMMAND` (no such turn on the branch);
    /// the store's errors (then nothing changed).
    pub async fn rewind(
        &self,
        turn: u64,
        scope: RewindScope,
        force: bool,
    ) -> CommandResult<Rewound> {
        let (checkpoints, agent) = self.checkpoint_parts("/rewind").await?;
        blocking(move || checkpoints.rewind(&agent, turn, scope, force)).await
    }

    /// Saves `rule` as a lasting allow rule of this session's workspace
    /// (`$XDG_CONFIG_HOME/dsh/permissions.toml`, keyed by the project's
    /// path), in force from the next call; what "always allow" answers.
    /// Returns the path of the file it was saved in; `Ok(None)` when it was saved already.
    ///
    /// # Errors
    /// The store's code: `PERMISSION_RULE_INVALID` for a rule that does not
    /// parse; `INVALID_CONFIG` when the file cannot be read, parsed or
    /// written.
    pub fn save_rule(&self, rule: &str) -> CommandResult<Option<String>> {
        let stack = self.stack()?;
        match stack.rules.save_for_project(rule) {
            Ok(true) => Ok(Some(stack.rules.saved_rules_file().map_or_else(
                || "permissions.toml".to_string(),
                |p| p.display().to_string(),
            ))),
            Ok(false) => Ok(None),
            Err(e) => Err(CommandError::from_coded(e)),
        }
    }

    /// Runs `/undo`, `/redo` or `/rewind` from the command line.
    pub(crate) async fn checkpoint_command(&self, name: &str, args: &str) -> CommandResult<Reply> {
        Ok(match name {
            "undo" | "redo" => {
                let force = match parse_force(name, args) {
                    Ok(f) => f,
                    Err(reply) => return Ok(reply),
                };
                let restored = if name == "undo" {
                    self.undo(force).await?
                } else {
                    self.redo(force).await?
                };
                Reply::Restored(Box::new(restored))
            }
            _ => match parse_rewind(args) {
                Err(reply) => reply,
                Ok(RewindRequest::List) => Reply::Turns(self.turns().await?),
                Ok(RewindRequest::To { turn, scope, force }) => {
                    Reply::Rewound(Box::new(self.rewind(turn, scope, force).await?))
                }
            },
        })
    }
}

/// Runs blocking checkpoint work off the executor.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, CheckpointFailure> + Send + 'static,
) -> CommandResult<T> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(CommandError::from),
        Err(e) => Err(CommandError::new(
            codes::CHECKPOINT_FAILED,
            format!("the checkpoint work stopped: {e}"),
        )),
    }
}

/// `/rewind`'s list: one line per turn, newest last.
pub(crate) fn describe_turns(turns: &[TurnPoint]) -> String {
    if turns.is_empty() {
        return "no turns yet".to_string();
    }
    let mut out = String::from(
        "turns (/rewind N goes back to before turn N; --files-only, --conversation-only):",
    );
    for t in turns {
        let prompt: String = t.prompt.split_whitespace().collect::<Vec<_>>().join(" ");
        let prompt = if prompt.chars().count() > 60 {
            format!("{}…", prompt.chars().take(59).collect::<String>())
        } else if prompt.is_empty() {
            "(no prompt: a wake-up turn)".to_string()
        } else {
            prompt
        };
        let files = match (t.changed.len(), t.before.is_some()) {
            (_, false) => "no checkpoint".to_string(),
            (0, true) => "no files changed".to_string(),
            (1, true) => format!("1 file changed ({})", t.changed[0]),
            (n, true) => {
                let shown: Vec<&str> = t.changed.iter().take(3).map(String::as_str).collect();
                let more = if n > 3 { ", …" } else { "" };
                format!("{n} files changed ({}{more})", shown.join(", "))
            }
        };
        let undone = if t.undone { " (undone)" } else { "" };
        out.push_str(&format!(
            "\n  {:>3}  {}  {prompt:?} — {files}{undone}",
            t.turn,
            clock(t.time)
        ));
    }
    out
}

/// `YYYY-MM-DD HH:MM` (UTC) of a Unix time in milliseconds.
fn clock(ms: u64) -> String {
    dsh_protocol::time::Utc::from_unix_ms(ms).minutes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewind_arguments_parse_and_misuse_is_a_usage_reply() {
        assert_eq!(parse_rewind(""), Ok(RewindRequest::List));
        assert_eq!(
            parse_rewind("3 --files-only"),
            Ok(RewindRequest::To {
                turn: 3,
                scope: RewindScope::Files,
                force: false
            })
        );
        assert_eq!(
            parse_rewind("--force 2 --conversation-only"),
            Ok(RewindRequest::To {
                turn: 2,
                scope: RewindScope::Conversation,
                force: true
            })
        );
        for bad in [
            "0",
            "x",
            "2 3",
            "2 --files-only --conversation-only",
            "--files-only",
        ] {
            assert!(
                matches!(parse_rewind(bad), Err(Reply::Failed(ref e)) if e.message.starts_with("usage: /rewind")),
                "{bad}"
            );
        }
        assert_eq!(parse_force("undo", ""), Ok(false));
        assert_eq!(parse_force("undo", "--force"), Ok(true));
        assert!(parse_force("redo", "now").is_err());
    }

    #[test]
    fn times_read_as_utc_dates() {
        assert_eq!(clock(0), "1970-01-01 00:00");
        assert_eq!(clock(1_796_000_000_000), "2026-11-30 00:53");
    }
}
