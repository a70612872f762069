//! Finding a saved session from what a person types, for every command
//! that takes one (`--resume`, `session show|replay|stats|compact|clean|
//! rm|fork|export`), and the newest session of a directory (`dsh -c`).
//!
//! A lookup ([`find`]) tries, in order:
//! 1. the exact id: `<dir>/<arg>.jsonl`;
//! 2. a start of an id: the logs whose id starts with `arg` (or with
//!    `s-<arg>`, so the `s-` may be left out);
//! 3. a part of a title, case blind: the title `dsh session list` shows
//!    (the model's title, else the first prompt cut short), of the
//!    sessions that are not a sub-agent's.
//!
//! The first step that matches decides: one match is the session, several
//! are an error listing them (id, time, title), none falls through to the
//! next step, and nothing at all is "no session". Both errors are usage
//! errors (exit 2).
//!
//! A session's directory is the workspace it last ran in
//! ([`dsh_session::SessionSummary::cwd`]); sub-agents' sessions and
//! sessions where nothing was sent are never "the newest of a directory"
//! and are not offered by the picker.

use std::path::{Path, PathBuf};

use dsh_session::SessionSummary;

use crate::commands::session::format_utc;

/// The most sessions an ambiguous lookup lists.
const LISTED: usize = 20;

/// A session a lookup found.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// Its id.
    pub(crate) id: String,
    /// Its log.
    pub(crate) path: PathBuf,
}

/// Why a lookup found no single session. Each is a usage error (exit 2).
#[derive(Debug)]
pub(crate) enum LookupError {
    /// No id, start of an id or title matches.
    NoSession {
        /// What was typed.
        arg: String,
        /// The session directory searched.
        dir: PathBuf,
    },
    /// Several sessions match, newest first.
    Ambiguous {
        /// What was typed.
        arg: String,
        /// What it matches: `"id"` or `"title"`.
        by: &'static str,
        /// The matches, newest first.
        matches: Vec<SessionSummary>,
    },
    /// The session directory cannot be read.
    Unreadable(String),
}

impl std::fmt::Display for LookupError {
    /// One line, or (ambiguous) a line then one indented line per match:
    /// `  <id>  <UTC time>  <title>`. Foreign text is not sanitised here.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LookupError::NoSession { arg, dir } => write!(
                f,
                "no session \"{arg}\" in {} (no id, start of an id or title matches; see `dsh session list`)",
                dir.display()
            ),
            LookupError::Ambiguous { arg, by, matches } => {
                let what = if *by == "id" {
                    "the start of"
                } else {
                    "in the title of"
                };
                write!(
                    f,
                    "\"{arg}\" is {what} {} sessions; pass more of the id:",
                    matches.len()
                )?;
                let width = matches.iter().map(|s| s.id.len()).max().unwrap_or(0);
                for s in matches.iter().take(LISTED) {
                    write!(
                        f,
                        "\n  {:<width$}  {}  {}",
                        s.id,
                        format_utc(s.last_ms),
                        shown_title(s)
                    )?;
                }
                if matches.len() > LISTED {
                    write!(f, "\n  … and {} more", matches.len() - LISTED)?;
                }
                Ok(())
            }
            LookupError::Unreadable(message) => f.write_str(message),
        }
    }
}

impl LookupError {
    /// Prints the error on stderr (`dsh: …`, sanitised) and returns its
    /// exit code, 2.
    pub(crate) fn report(&self) -> u8 {
        crate::output::say!("dsh: {}", crate::sanitize::visible(&self.to_string()));
        2
    }
}

/// The session `arg` names in `dir` (see the module doc for the order).
///
/// # Errors
/// [`LookupError::NoSession`], [`LookupError::Ambiguous`], or
/// [`LookupError::Unreadable`] when the directory cannot be listed.
pub(crate) fn find(dir: &Path, arg: &str) -> Result<Found, LookupError> {
    if dsh_session::validate_session_id(arg).is_ok() {
        let path = dir.join(format!("{arg}.jsonl"));
        if path.is_file() {
            return Ok(Found {
                id: arg.to_string(),
                path,
            });
        }
    }
    if !arg.is_empty() {
        let prefixed = format!("s-{arg}");
        let by_id: Vec<(String, PathBuf)> = log_ids(dir)?
            .into_iter()
            .filter(|(id, _)| id.starts_with(arg) || id.starts_with(&prefixed))
            .collect();
        match by_id.len() {
            0 => {}
            1 => {
                let (id, path) = by_id.into_iter().next().unwrap_or_default();
                return Ok(Found { id, path });
            }
            _ => {
                let mut matches: Vec<SessionSummary> = by_id
                    .iter()
                    .filter_map(|(_, path)| dsh_session::summarize_jsonl(path).ok())
                    .collect();
                newest_first(&mut matches);
                return Err(LookupError::Ambiguous {
                    arg: arg.to_string(),
                    by: "id",
                    matches,
                });
            }
        }
        let needle = arg.to_lowercase();
        let mut by_title: Vec<SessionSummary> = summaries(dir)?
            .into_iter()
            .filter(|s| s.parent.is_none())
            .filter(|s| title_of(s).is_some_and(|t| t.to_lowercase().contains(&needle)))
            .collect();
        match by_title.len() {
            0 => {}
            1 => {
                let s = by_title.remove(0);
                return Ok(Found {
                    id: s.id,
                    path: s.path,
                });
            }
            _ => {
                newest_first(&mut by_title);
                return Err(LookupError::Ambiguous {
                    arg: arg.to_string(),
                    by: "title",
                    matches: by_title,
                });
            }
        }
    }
    Err(LookupError::NoSession {
        arg: arg.to_string(),
        dir: dir.to_path_buf(),
    })
}

/// The sessions a person can resume in `dir`: not a sub-agent's, and
/// something was sent in them. Those that last ran in `cwd` come first;
/// each group is newest first (by last activity). The flag says whether
/// the session is of `cwd`.
///
/// # Errors
/// [`LookupError::Unreadable`].
pub(crate) fn resumable(
    dir: &Path,
    cwd: &Path,
) -> Result<Vec<(SessionSummary, bool)>, LookupError> {
    let here = canonical(cwd);
    let mut all: Vec<(SessionSummary, bool)> = summaries(dir)?
        .into_iter()
        .filter(|s| s.parent.is_none() && sent_something(s))
        .map(|s| {
            let is_here = s.cwd.as_deref().is_some_and(|c| canonical(c) == here);
            (s, is_here)
        })
        .collect();
    all.sort_by(|(a, a_here), (b, b_here)| {
        b_here
            .cmp(a_here)
            .then(b.last_ms.cmp(&a.last_ms))
            .then_with(|| b.id.cmp(&a.id))
    });
    Ok(all)
}

/// The most recently active resumable session ([`resumable`]) that last
/// ran in `cwd`, if there is one.
///
/// # Errors
/// [`LookupError::Unreadable`].
pub(crate) fn newest_in(dir: &Path, cwd: &Path) -> Result<Option<SessionSummary>, LookupError> {
    Ok(resumable(dir, cwd)?
        .into_iter()
        .find(|(_, here)| *here)
        .map(|(s, _)| s))
}

/// Whether a message was ever sent in the session (a chat closed before
/// that is not kept, see `commands::chat`).
pub(crate) fn sent_something(s: &SessionSummary) -> bool {
    s.turns > 0 || s.first_prompt.is_some()
}

/// The title `dsh session list` shows: the model's, else the first prompt
/// cut short; `None` when there is neither.
pub(crate) fn title_of(s: &SessionSummary) -> Option<String> {
    s.title
        .clone()
        .or_else(|| s.first_prompt.as_deref().map(dsh::title::offline_title))
        .filter(|t| !t.is_empty())
}

/// [`title_of`], `-` for none.
pub(crate) fn shown_title(s: &SessionSummary) -> String {
    title_of(s).unwrap_or_else(|| "-".into())
}

/// Every log of `dir` (ids and paths, by id), without reading them.
fn log_ids(dir: &Path) -> Result<Vec<(String, PathBuf)>, LookupError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(LookupError::Unreadable(format!(
                "cannot read the session directory {}: {e}",
                dir.display()
            )))
        }
    };
    let mut out: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let id = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
            dsh_session::validate_session_id(id).ok()?;
            path.is_file().then(|| (id.to_string(), path.clone()))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// The summaries of `dir`'s logs ([`dsh_session::list_sessions`]).
fn summaries(dir: &Path) -> Result<Vec<SessionSummary>, LookupError> {
    dsh_session::list_sessions(dir).map_err(|e| LookupError::Unreadable(e.to_string()))
}

fn newest_first(sessions: &mut [SessionSummary]) {
    sessions.sort_by(|a, b| b.last_ms.cmp(&a.last_ms).then_with(|| b.id.cmp(&a.id)));
}

/// `path` with symlinks resolved when it exists, else as it is.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The session dsh chat or run continues, from `--resume`, `--continue`
/// or the picker.
pub(crate) enum Target {
    /// Start a new session.
    New,
    /// Continue this one (its id).
    Resume(String),
    /// The person left the picker without choosing.
    Cancelled,
}

/// What `--resume [ARG]` and `--continue` ask for: `resume` is `None`
/// without the flag, `Some(None)` for a bare `--resume` (the picker, on a
/// terminal). The session directory and working directory are those
/// `settings` resolve to. Errors are reported on stderr; `Err` is the exit
/// code (2: usage, configuration, no matching session, no terminal for
/// the picker; 1: the terminal failed).
pub(crate) fn target(
    settings: &dsh::Settings,
    resume: Option<Option<&str>>,
    continue_session: bool,
) -> Result<Target, u8> {
    if resume.is_none() && !continue_session {
        return Ok(Target::New);
    }
    let resolved = crate::app::resolve(settings).map_err(|e| crate::commands::report(&e))?;
    let dir = &resolved.session_dir;
    let cwd = &resolved.cwd;
    if continue_session {
        return match newest_in(dir, cwd).map_err(|e| e.report())? {
            Some(s) => Ok(Target::Resume(s.id)),
            None => {
                crate::output::say!(
                    "dsh: no session to continue in {} (none in {} ran there); start one with `dsh chat`, or see `dsh session list`",
                    crate::sanitize::visible(&cwd.display().to_string()),
                    crate::sanitize::visible(&dir.display().to_string())
                );
                Err(2)
            }
        };
    }
    match resume.flatten() {
        Some(arg) => match find(dir, arg) {
            Ok(found) => Ok(Target::Resume(found.id)),
            Err(e) => Err(e.report()),
        },
        None => pick(dir, cwd),
    }
}

/// A bare `--resume`: the picker on a terminal, else an error.
fn pick(dir: &Path, cwd: &Path) -> Result<Target, u8> {
    use std::io::IsTerminal;
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        crate::output::say!(
            "dsh: --resume without an id needs a terminal to pick a session on; pass an id, a start of one or a part of a title (`dsh session list` shows them)"
        );
        return Err(2);
    }
    let sessions = resumable(dir, cwd).map_err(|e| e.report())?;
    if sessions.is_empty() {
        crate::output::say!(
            "dsh: no sessions to resume in {}",
            crate::sanitize::visible(&dir.display().to_string())
        );
        return Err(2);
    }
    let now = dsh_tui::status::now_ms();
    let catalogue = dsh::catalogue::Catalogue::for_reports();
    let rows: Vec<crate::commands::picker::Row> = sessions
        .iter()
        .map(|(s, here)| {
            let cost = crate::commands::usage::log_cost(&s.path, &catalogue);
            crate::commands::picker::Row::of(s, *here, now, cost)
        })
        .collect();
    match crate::commands::picker::pick(&rows) {
        Ok(Some(i)) => Ok(Target::Resume(sessions[i].0.id.clone())),
        Ok(None) => Ok(Target::Cancelled),
        Err(e) => {
            crate::output::say!("dsh: the terminal failed: {e}");
            Err(1)
        }
    }
}

/// `"2h ago"`: how long before `now` `then` was (Unix ms) — `now`, then
/// minutes, hours (under two days), days (under 60), else the date.
pub(crate) fn ago(now: u64, then: u64) -> String {
    let secs = now.saturating_sub(then) / 1000;
    match secs {
        0..=59 => "now".to_string(),
        60..=3_599 => format!("{}m ago", secs / 60),
        3_600..=172_799 => format!("{}h ago", secs / 3_600),
        172_800..=5_183_999 => format!("{}d ago", secs / 86_400),
        _ => dsh_protocol::time::Utc::from_unix_ms(then).date(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_a_person_says_them() {
        let now = 1_800_000_000_000;
        assert_eq!(ago(now, now - 5_000), "now");
        assert_eq!(ago(now, now - 5 * 60_000), "5m ago");
        assert_eq!(ago(now, now - 2 * 3_600_000), "2h ago");
        assert_eq!(ago(now, now - 47 * 3_600_000), "47h ago");
        assert_eq!(ago(now, now - 3 * 86_400_000), "3d ago");
        assert_eq!(ago(now, 1_700_000_000_000), "2023-11-14");
        assert_eq!(ago(now, now + 10_000), "now");
    }

    #[test]
    fn an_empty_argument_matches_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s-1.jsonl"), "").unwrap();
        assert!(matches!(
            find(dir.path(), ""),
            Err(LookupError::NoSession { .. })
        ));
        assert_eq!(find(dir.path(), "1").unwrap().id, "s-1");
    }
}
