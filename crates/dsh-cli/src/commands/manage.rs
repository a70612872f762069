//! Whole saved sessions: `dsh session rm`, `dsh session clean
//! --older-than`, `dsh session fork`, and the removal of a chat where
//! nothing was sent.
//!
//! Removing a session removes its log (`<id>.jsonl`, and any
//! `<id>.jsonl.torn-*` sidecar a repair left), its files
//! (`<session-dir>/<id>/`: spilled tool output, checkpoints) and, the same
//! way, the sessions of its sub-agents (their `subagent/start` names it as
//! the parent), at any depth. A session whose log is locked (a dsh process
//! has it open), or one of whose sub-agents' logs is, is refused whole;
//! the lock is held while the files go, so no process can open the log
//! half removed.
//!
//! Exit codes: 0 done, 1 a session was refused or a file could not be
//! removed, 2 unusable input (no such session, several match, `--at-turn`
//! out of range, no session directory).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_session::{EventPayload, SessionEvent, SessionSummary, TurnEndEvent, TurnStartEvent};

use crate::commands::resolve::{self, LookupError};
use crate::commands::session::{default_session_dir, format_utc, tree_size};

/// The session directory: `--session-dir`, else the default; `Err(2)`
/// (reported) when there is none.
pub(crate) fn session_dir(arg: Option<PathBuf>) -> Result<PathBuf, u8> {
    arg.or_else(default_session_dir).ok_or_else(|| {
        crate::output::say!(
            "dsh: cannot find the session directory: set XDG_DATA_HOME or HOME, or pass --session-dir"
        );
        2
    })
}

/// `dsh session rm ID…`.
pub(crate) fn rm(session_dir: Option<PathBuf>, args: &[String]) -> u8 {
    let dir = match self::session_dir(session_dir) {
        Ok(dir) => dir,
        Err(code) => return code,
    };
    let mut targets: Vec<String> = Vec::new();
    for arg in args {
        match resolve::find(&dir, arg) {
            Ok(found) if !targets.contains(&found.id) => targets.push(found.id),
            Ok(_) => {}
            Err(e) => return e.report(),
        }
    }
    let all = match dsh_session::list_sessions(&dir) {
        Ok(all) => all,
        Err(e) => return LookupError::Unreadable(e.to_string()).report(),
    };
    let families = Families::of(&all);
    let mut out = String::new();
    let mut failed = false;
    for id in &targets {
        match remove_family(&dir, id, &families) {
            Ok(text) => out.push_str(&text),
            Err(refused) => {
                crate::output::say!("dsh: {}", crate::sanitize::visible(refused.message()));
                failed = true;
            }
        }
    }
    let code = crate::output::emit(&crate::sanitize::visible(&out));
    if failed {
        1
    } else {
        code
    }
}

/// `dsh session clean --older-than AGE [--dry-run]`: removes (or lists)
/// every session last active longer ago than `age`, with its sub-agents'.
pub(crate) fn clean_older(session_dir: Option<PathBuf>, age: Duration, dry_run: bool) -> u8 {
    let dir = match self::session_dir(session_dir) {
        Ok(dir) => dir,
        Err(code) => return code,
    };
    let all = match dsh_session::list_sessions(&dir) {
        Ok(all) => all,
        Err(e) => return LookupError::Unreadable(e.to_string()).report(),
    };
    let now = dsh_tui::status::now_ms();
    let cutoff = now.saturating_sub(u64::try_from(age.as_millis()).unwrap_or(u64::MAX));
    let families = Families::of(&all);
    let known: BTreeSet<&str> = all.iter().map(|s| s.id.as_str()).collect();
    // Roots only: a sub-agent's session goes with its parent (one whose
    // parent's log is gone is a root).
    let old: Vec<&SessionSummary> = all
        .iter()
        .filter(|s| s.parent.as_deref().is_none_or(|p| !known.contains(p)))
        .filter(|s| s.last_ms < cutoff)
        .collect();
    let mut out = String::new();
    let mut failed = false;
    for s in old {
        if dry_run {
            let family = families.of_root(&s.id);
            let extra = match family.len() {
                1 => String::new(),
                n => format!(" and {} sub-agent session(s)", n - 1),
            };
            let _ = writeln!(
                out,
                "would remove {}{extra}: last active {} (UTC), {}",
                s.id,
                format_utc(s.last_ms),
                resolve::shown_title(s)
            );
            continue;
        }
        match remove_family(&dir, &s.id, &families) {
            Ok(text) => out.push_str(&text),
            Err(refused) => {
                crate::output::say!("dsh: {}", crate::sanitize::visible(refused.message()));
                failed = failed || matches!(refused, Refused::Failed(_));
            }
        }
    }
    if out.is_empty() {
        out.push_str("nothing to clean\n");
    }
    let code = crate::output::emit(&crate::sanitize::visible(&out));
    if failed {
        1
    } else {
        code
    }
}

/// Which sessions are whose sub-agents'.
struct Families<'a> {
    children: HashMap<&'a str, Vec<&'a str>>,
}

impl<'a> Families<'a> {
    fn of(all: &'a [SessionSummary]) -> Self {
        let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
        for s in all {
            if let Some(parent) = s.parent.as_deref() {
                children.entry(parent).or_default().push(&s.id);
            }
        }
        Self { children }
    }

    /// `root` and every session below it, root first (bounded: a cycle
    /// of hand-edited logs is visited once).
    fn of_root(&self, root: &'a str) -> Vec<&'a str> {
        let mut out: Vec<&str> = vec![root];
        let mut at = 0;
        while at < out.len() {
            let kids = self.children.get(out[at]).cloned().unwrap_or_default();
            for kid in kids {
                if !out.contains(&kid) {
                    out.push(kid);
                }
            }
            at += 1;
        }
        out
    }
}

/// Why a session was not removed.
enum Refused {
    /// Its log, or a sub-agent's, is locked by a dsh process.
    InUse(String),
    /// A file would not go.
    Failed(String),
}

impl Refused {
    fn message(&self) -> &str {
        match self {
            Refused::InUse(m) | Refused::Failed(m) => m,
        }
    }
}

/// Removes session `id` and its sub-agents' sessions; the lines saying
/// what went, or why nothing did.
fn remove_family(dir: &Path, id: &str, families: &Families<'_>) -> Result<String, Refused> {
    let family = families.of_root(id);
    // Lock every log first: all go, or none.
    let mut locks = Vec::new();
    for member in &family {
        match lock_log(&dir.join(format!("{member}.jsonl"))) {
            Ok(lock) => locks.push(lock),
            Err(LockError::InUse) if *member == id => {
                return Err(Refused::InUse(format!(
                    "session \"{id}\" is in use by another dsh process (its log is locked); not removed"
                )))
            }
            Err(LockError::InUse) => {
                return Err(Refused::InUse(format!(
                    "session \"{id}\" has a sub-agent session in use ({member}); not removed"
                )))
            }
            Err(LockError::Io(e)) => {
                return Err(Refused::Failed(format!(
                    "cannot remove session \"{member}\": {e}"
                )))
            }
        }
    }
    let mut out = String::new();
    for member in &family {
        let removed = remove_files(dir, member).map_err(Refused::Failed)?;
        let whose = if *member == id {
            String::new()
        } else {
            format!(" (a sub-agent's, of {id})")
        };
        let _ = writeln!(out, "removed {member}{whose}: {removed}");
    }
    drop(locks);
    Ok(out)
}

enum LockError {
    InUse,
    Io(std::io::Error),
}

/// The log at `path` opened and locked (`None`: it is gone already).
fn lock_log(path: &Path) -> Result<Option<File>, LockError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LockError::Io(e)),
    };
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Err(LockError::InUse),
        Err(std::fs::TryLockError::Error(e)) => Err(LockError::Io(e)),
    }
}

/// Removes the log of `id`, its torn-line sidecars and its directory;
/// what went, in words (`log, 3 files (1200 bytes) in <dir>`).
fn remove_files(dir: &Path, id: &str) -> Result<String, String> {
    let log = dir.join(format!("{id}.jsonl"));
    let mut what = Vec::new();
    match std::fs::remove_file(&log) {
        Ok(()) => what.push("log".to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot remove {}: {e}", log.display())),
    }
    let sidecar = format!("{id}.jsonl.torn-");
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&sidecar) {
                std::fs::remove_file(entry.path())
                    .map_err(|e| format!("cannot remove {}: {e}", entry.path().display()))?;
                what.push("a torn-line sidecar".to_string());
            }
        }
    }
    let files = dir.join(id);
    if files.is_dir() {
        let (count, bytes) = tree_size(&files);
        remove_tree(&files).map_err(|e| format!("cannot remove {}: {e}", files.display()))?;
        what.push(format!(
            "{count} file(s) ({bytes} bytes) in {}",
            files.display()
        ));
    }
    if what.is_empty() {
        what.push("nothing was left".to_string());
    }
    Ok(what.join(", "))
}

/// How long [`forget_unsent`] waits for a chat's log to be released.
const UNSENT_WAIT: Duration = Duration::from_secs(3);

/// Removes the directory `path` and everything in it, trying again for a
/// moment while a writer that has not stopped yet (a checkpoint snapshot
/// finishing) adds files to it.
fn remove_tree(path: &Path) -> std::io::Result<()> {
    let mut tries = 0;
    loop {
        match std::fs::remove_dir_all(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty && tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

/// After a chat: removes session `id` from `dir` when nothing was sent in
/// it (no message, no turn) — its log and files — so it is neither kept
/// nor listed. Returns whether it was removed. A log another process
/// holds, or one that cannot be read, stays.
pub(crate) fn forget_unsent(dir: &Path, id: &str) -> bool {
    let log = dir.join(format!("{id}.jsonl"));
    let Ok(summary) = dsh_session::summarize_jsonl(&log) else {
        return false;
    };
    if resolve::sent_something(&summary) {
        return false;
    }
    // The chat's stack has just closed the log; a flush or a background
    // task still finishing can hold it a moment longer.
    let deadline = std::time::Instant::now() + UNSENT_WAIT;
    let _lock = loop {
        match lock_log(&log) {
            Ok(Some(lock)) => break lock,
            Ok(None) => return false,
            Err(LockError::InUse) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => return false,
        }
    };
    match remove_files(dir, id) {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!("cannot remove the empty session {id}: {e}");
            false
        }
    }
}

/// `dsh session fork ID [--at-turn N]`: the new session's id on stdout,
/// what was copied on stderr.
pub(crate) fn fork(session_dir: Option<PathBuf>, arg: &str, at_turn: Option<u64>) -> u8 {
    let dir = match self::session_dir(session_dir) {
        Ok(dir) => dir,
        Err(code) => return code,
    };
    let found = match resolve::find(&dir, arg) {
        Ok(found) => found,
        Err(e) => return e.report(),
    };
    let log = match crate::commands::session::load(&found.path) {
        Ok(log) => log,
        Err(code) => return code,
    };
    let events = match at_turn {
        None => log.events,
        Some(n) => match cut_at_turn(log.events, n) {
            Ok(events) => events,
            Err(message) => {
                crate::output::say!("dsh: session {}: {message}", found.id);
                return 2;
            }
        },
    };
    let mut link = serde_json::json!({ "from": found.id });
    if let Some(n) = at_turn {
        link["atTurn"] = serde_json::json!(n);
    }
    let link = EventPayload::Other {
        kind: dsh_controller::FORK_EVENT.to_string(),
        data: link,
    };
    let seed = dsh_session::fork_seed(&events, link, dsh_tui::status::now_ms());
    let id = dsh_session::new_session_id().into_string();
    if let Err(e) = write_new_log(&dir, &id, &seed) {
        crate::output::say!("dsh: cannot write the forked session: {e}");
        return 1;
    }
    let what = match at_turn {
        Some(n) => format!("turns 1..={n} of {}", found.id),
        None => found.id.clone(),
    };
    crate::output::say!("dsh: forked {what} into {id}; continue it with `dsh chat --resume {id}`");
    crate::output::emit(&format!("{id}\n"))
}

/// The events of a log up to the end of turn `n` (`turn/end` of turn
/// `n`; for a turn that never ended, up to the message that started the
/// next). The last title logged after the cut is kept.
///
/// # Errors
/// `n` is 0 or past the last turn (the message names the range).
fn cut_at_turn(events: Vec<SessionEvent>, n: u64) -> Result<Vec<SessionEvent>, String> {
    let last = events
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::TurnStart(TurnStartEvent { turn, .. }) => Some(*turn),
            _ => None,
        })
        .max();
    let Some(last) = last else {
        return Err(format!(
            "--at-turn {n} is out of range: the session has no turns"
        ));
    };
    if n == 0 || n > last {
        return Err(format!(
            "--at-turn {n} is out of range: the session has turns 1..={last}"
        ));
    }
    let ended = events.iter().position(
        |e| matches!(&e.data, EventPayload::TurnEnd(TurnEndEvent { turn, .. }) if *turn == n),
    );
    let cut = match ended {
        Some(i) => i + 1,
        None => {
            let next = events
                .iter()
                .position(|e| {
                    matches!(&e.data, EventPayload::TurnStart(TurnStartEvent { turn, .. }) if *turn > n)
                })
                .unwrap_or(events.len());
            // The message that started the next turn goes with it.
            let mut cut = next;
            while cut > 0
                && matches!(
                    events[cut - 1].data,
                    EventPayload::UserMessage(_) | EventPayload::ContextMessage(_)
                )
            {
                cut -= 1;
            }
            cut
        }
    };
    let is_title = |e: &SessionEvent| matches!(&e.data, EventPayload::Other { kind, .. } if kind == dsh::title::TITLE_KIND);
    let late_title = events[cut..].iter().rev().find(|e| is_title(e)).cloned();
    let mut kept: Vec<SessionEvent> = events.into_iter().take(cut).collect();
    if let Some(mut title) = late_title {
        title.seq = kept.last().map_or(0, |e| e.seq + 1);
        kept.push(title);
    }
    Ok(kept)
}

/// Writes `events` as the new log `<dir>/<id>.jsonl`: a private temp file
/// (0600), synced, then renamed into place.
/// Images go to the new session's own `images/` by hash, as the live store
/// writes them.
fn write_new_log(dir: &Path, id: &str, events: &[SessionEvent]) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    let images = dsh_session::images_dir(dir, id);
    for e in events {
        match dsh_session::store_images(e, &images).map_err(std::io::Error::other)? {
            Some(stored) => dsh_session::write_jsonl_line(&stored, &mut bytes),
            None => dsh_session::write_jsonl_line(e, &mut bytes),
        }
    }
    write_private(&dir.join(format!("{id}.jsonl")), &bytes)
}

/// Writes `bytes` to `path` atomically: a temp file beside it (mode
/// 0600), synced, renamed over `path`.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let written = opts.open(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::{TurnEndReason, TurnTrigger};

    fn ev(seq: u64, data: EventPayload) -> SessionEvent {
        SessionEvent { seq, time: 0, data }
    }

    fn start(turn: u64) -> EventPayload {
        EventPayload::TurnStart(TurnStartEvent {
            turn,
            trigger: TurnTrigger::Continuation,
        })
    }

    fn end(turn: u64) -> EventPayload {
        EventPayload::TurnEnd(TurnEndEvent {
            turn,
            reason: TurnEndReason::Completed,
        })
    }

    #[test]
    fn a_cut_ends_with_the_turn_and_names_the_range_when_out_of_it() {
        let log = vec![
            ev(0, start(1)),
            ev(1, end(1)),
            ev(2, start(2)),
            ev(3, end(2)),
            ev(4, start(3)),
        ];
        assert_eq!(cut_at_turn(log.clone(), 1).unwrap().len(), 2);
        assert_eq!(cut_at_turn(log.clone(), 2).unwrap().len(), 4);
        // Turn 3 never ended: all of it.
        assert_eq!(cut_at_turn(log.clone(), 3).unwrap().len(), 5);
        let err = cut_at_turn(log.clone(), 4).unwrap_err();
        assert!(err.contains("1..=3"), "{err}");
        assert!(cut_at_turn(log, 0).unwrap_err().contains("1..=3"));
        assert!(cut_at_turn(Vec::new(), 1).unwrap_err().contains("no turns"));
    }
}
