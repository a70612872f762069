//! `dsh session show FILE`, `dsh session replay FILE`, `dsh session list`,
//! `dsh session stats FILE|ID [--json]`, `dsh session clean ID… | --all`.
//!
//! Exit codes: 0 success (a torn last line is reported on stderr but is not
//! an error), 2 unusable input (missing file, corrupt log — the line number
//! is on stderr — unknown session or no session directory), 1 when files
//! could not be removed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use dsh_llm::{ContentBlock, MessageSource, StreamChunk, TokenUsage};
use dsh_protocol::{ToolCall, ToolResult};
use dsh_session::{
    list_sessions, load_jsonl, session_stats, AssistantMessageEvent, ChunkEvent, ErrorEvent,
    EventPayload, LoadedLog, MessageEvent, SessionEvent, SessionStats, SessionStore, SteeringEvent,
    StepEvent, ToolCallEvent, ToolResultEvent, TurnEndEvent, TurnEndReason, TurnStartEvent,
    TurnTrigger, UsageEvent,
};

use crate::cli::{SessionArgs, SessionCommand};

/// Runs `dsh session`; returns the exit code.
pub(crate) fn run(args: SessionArgs) -> u8 {
    match args.command {
        SessionCommand::Show {
            file,
            full,
            timeline,
            chunks,
            requests,
            session_dir,
        } => match locate(&file, session_dir)
            .ok_or(2)
            .and_then(|f| load(&f).map(|l| (f, l)))
        {
            Ok((_, log)) if requests => show_requests(&log.events),
            Ok((file, log)) if timeline || chunks => {
                let text = render_timeline(&file, &log.events, chunks);
                crate::output::emit(&crate::sanitize::visible(&text))
            }
            Ok((file, log)) => show_transcript(&file, &log.events, full),
            Err(code) => code,
        },
        SessionCommand::Replay { file, session_dir } => {
            match locate(&file, session_dir).ok_or(2).and_then(|f| load(&f)) {
                Ok(log) => replay(log),
                Err(code) => code,
            }
        }
        SessionCommand::List { session_dir, tree } => list(session_dir, tree),
        SessionCommand::Stats {
            session,
            json,
            session_dir,
        } => stats(&session, json, session_dir),
        SessionCommand::Clean {
            ids,
            all,
            older_than: Some(age),
            dry_run,
            session_dir,
        } if ids.is_empty() && !all => {
            crate::commands::manage::clean_older(session_dir, age, dry_run)
        }
        SessionCommand::Clean {
            ids,
            all,
            dry_run,
            session_dir,
            ..
        } => clean(session_dir, &ids, all, dry_run),
        SessionCommand::Rm { ids, session_dir } => crate::commands::manage::rm(session_dir, &ids),
        SessionCommand::Fork {
            id,
            at_turn,
            session_dir,
        } => crate::commands::manage::fork(session_dir, &id, at_turn),
        SessionCommand::Export {
            id,
            format,
            output,
            session_dir,
        } => crate::commands::export::run(&id, format, output, session_dir),
        SessionCommand::Rewind {
            id,
            to_turn,
            files_only,
            conversation_only,
            force,
            stack,
        } => crate::commands::rewind::rewind(
            &id,
            to_turn,
            files_only,
            conversation_only,
            force,
            stack,
        ),
        SessionCommand::Compact { id, focus, stack } => {
            crate::commands::block_on(compact(id, focus, stack))
        }
    }
}

async fn compact(id: String, focus: Option<String>, stack: crate::app::StackArgs) -> u8 {
    let settings = crate::app::settings(&stack, dsh::ProjectTrust::Refuse);
    let resolved = match crate::app::resolve(&settings) {
        Ok(r) => r,
        Err(e) => return crate::commands::report(&e),
    };
    if resolved.model == dsh::echo_model::ECHO_MODEL {
        crate::output::say!("dsh: {}", dsh::NEEDS_MODEL);
        return 2;
    }
    let id = match crate::commands::resolve::find(&resolved.session_dir, &id) {
        Ok(found) => found.id,
        Err(e) => return e.report(),
    };
    let controller = dsh_controller::Controller::new(settings);
    let options = dsh_controller::SessionOptions {
        resume: Some(id.clone()),
        ..Default::default()
    };
    let session = match crate::commands::open_session(&controller, options).await {
        Ok(session) => session,
        Err(code) => return code,
    };
    crate::commands::say_open_warnings(&session);
    let window = resolved.context_window;
    let code = match session.compact(focus.as_deref()).await {
        Ok(outcome) => {
            crate::output::say!(
                "session {id}: {}",
                dsh_controller::commands::describe_compaction(&outcome, window)
            );
            0
        }
        Err(e) => {
            crate::output::say!("dsh: {e}");
            1
        }
    };
    crate::commands::shutdown_bounded(controller.shutdown("dsh session compact ended")).await;
    code
}

fn clean(session_dir: Option<PathBuf>, ids: &[String], all: bool, dry_run: bool) -> u8 {
    let Some(dir) = session_dir.or_else(default_session_dir) else {
        crate::output::say!(
            "dsh: cannot find the session directory: set XDG_DATA_HOME or HOME, or pass --session-dir"
        );
        return 2;
    };
    let ids: Vec<String> = if all {
        match list_sessions(&dir) {
            Ok(s) => s.into_iter().map(|s| s.id).collect(),
            Err(e) => {
                crate::output::say!("dsh: {e}");
                return 2;
            }
        }
    } else {
        let mut found = Vec::new();
        for arg in ids {
            match crate::commands::resolve::find(&dir, arg) {
                Ok(f) => found.push(f.id),
                Err(e) => return e.report(),
            }
        }
        found
    };
    let mut out = String::new();
    let mut failed = false;
    for id in &ids {
        if dsh_session::is_locked(&dir.join(format!("{id}.jsonl"))) {
            crate::output::say!("dsh: session \"{id}\" is in use by another dsh process; skipped");
            continue;
        }
        // Spilled output only: the checkpoints stay (`session rm` removes
        // the whole session).
        let files = dir.join(id).join("spill");
        if !files.is_dir() {
            continue;
        }
        let (count, bytes) = tree_size(&files);
        if dry_run {
            let _ = writeln!(
                out,
                "{id}: would remove {count} file(s), {bytes} bytes ({})",
                files.display()
            );
            continue;
        }
        match std::fs::remove_dir_all(&files) {
            Ok(()) => {
                let _ = writeln!(
                    out,
                    "{id}: removed {count} file(s), {bytes} bytes ({})",
                    files.display()
                );
            }
            Err(e) => {
                crate::output::say!("dsh: cannot remove {}: {e}", files.display());
                failed = true;
            }
        }
    }
    if out.is_empty() && !failed {
        out.push_str("nothing to clean\n");
    }
    let code = crate::output::emit(&crate::sanitize::visible(&out));
    if failed {
        1
    } else {
        code
    }
}

/// Number of files and their total size under `dir` (symlinks not followed).
pub(crate) fn tree_size(dir: &Path) -> (u64, u64) {
    let mut stack = vec![dir.to_path_buf()];
    let (mut count, mut bytes) = (0, 0);
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(entry.path()),
                Ok(m) => {
                    count += 1;
                    bytes += m.len();
                }
                Err(_) => {}
            }
        }
    }
    (count, bytes)
}

/// Loads a log, reporting a torn tail on stderr; `Err(exit code)` otherwise.
pub(crate) fn load(file: &Path) -> Result<LoadedLog, u8> {
    match load_jsonl(file) {
        Ok(log) => {
            if let Some(torn) = &log.torn_tail {
                crate::output::say!(
                    "dsh: {}:{}: torn last line ignored ({} bytes, an interrupted write); the {} events before it are intact",
                    file.display(),
                    torn.line_no,
                    torn.bytes,
                    log.events.len()
                );
            }
            Ok(log)
        }
        Err(e) => {
            crate::output::say!("dsh: {e}");
            Err(2)
        }
    }
}

fn replay(log: LoadedLog) -> u8 {
    // Replay exactly as the harness does: seed a fresh session, derive.
    let store = SessionStore::new();
    let session = match store.create(None, log.events) {
        Ok((session, _registration)) => session,
        Err(e) => {
            crate::output::say!("dsh: {e}");
            return 1;
        }
    };
    match serde_json::to_string_pretty(&session.derive_messages()) {
        Ok(json) => crate::output::emit(&format!("{}\n", crate::sanitize::json_visible(&json))),
        Err(e) => {
            crate::output::say!("dsh: cannot encode the history: {e}");
            1
        }
    }
}

fn stats(session: &str, json: bool, session_dir: Option<PathBuf>) -> u8 {
    let Some(file) = resolve_session(session, session_dir) else {
        return 2;
    };
    let log = match load(&file) {
        Ok(log) => log,
        Err(code) => return code,
    };
    let stats = session_stats(&log.events);
    let catalogue = dsh::catalogue::Catalogue::for_reports();
    let cost = dsh_session::cost::session_cost(&log.events, |m: &str| catalogue.price(m));
    if json {
        let with_cost = serde_json::to_value(&stats).map(|mut v| {
            v["cost"] = crate::commands::usage::session_cost_json(&cost);
            v
        });
        match with_cost.and_then(|v| serde_json::to_string_pretty(&v)) {
            Ok(text) => crate::output::emit(&format!("{}\n", crate::sanitize::json_visible(&text))),
            Err(e) => {
                crate::output::say!("dsh: cannot encode the stats: {e}");
                1
            }
        }
    } else {
        let text = render_stats(&stats) + &crate::commands::usage::render_session_cost(&cost);
        crate::output::emit(&crate::sanitize::visible(&text))
    }
}

/// `session show --requests`: each step's request body as it was sent.
fn show_requests(events: &[dsh_session::SessionEvent]) -> u8 {
    let mut out = String::new();
    let steps = dsh::requests::step_requests(events);
    if steps.is_empty() {
        crate::output::say!(
            "dsh: the log records no requests (no step ran, or an older dsh wrote it)"
        );
        return 0;
    }
    for r in steps {
        let body = dsh::requests::request_body(&r.request, &r.adapter).map_err(|e| e.to_string());
        match body {
            Ok(body) => out.push_str(&format!(
                "--- turn {} step {} (seq {}): {} bytes\n{}\n",
                r.turn,
                r.step,
                r.seq,
                body.len(),
                String::from_utf8_lossy(&body)
            )),
            Err(e) => out.push_str(&format!(
                "--- turn {} step {} (seq {}): cannot rebuild: {e}\n",
                r.turn, r.step, r.seq
            )),
        }
    }
    crate::output::emit(&crate::sanitize::json_visible(&out))
}

/// The log `arg` names: a path when it looks like one (it has a `/` or
/// ends in `.jsonl`; loading then reports a missing file), else as
/// [`resolve_session`].
pub(crate) fn locate(arg: &str, session_dir: Option<PathBuf>) -> Option<PathBuf> {
    if arg.contains('/') || arg.ends_with(".jsonl") {
        return Some(PathBuf::from(arg));
    }
    resolve_session(arg, session_dir)
}

/// The log `arg` names: an existing file, else the session it names in
/// the directory (an id, a unique start of one, a part of a title:
/// [`crate::commands::resolve::find`]). `None` (reported on stderr) when
/// it is neither, or names several sessions.
fn resolve_session(arg: &str, session_dir: Option<PathBuf>) -> Option<PathBuf> {
    let path = Path::new(arg);
    if path.is_file() {
        return Some(path.to_path_buf());
    }
    let Some(dir) = session_dir.or_else(default_session_dir) else {
        crate::output::say!(
            "dsh: no session file \"{arg}\", and cannot find the session directory: set XDG_DATA_HOME or HOME, or pass --session-dir"
        );
        return None;
    };
    match crate::commands::resolve::find(&dir, arg) {
        Ok(found) => Some(found.path),
        Err(e) => {
            e.report();
            None
        }
    }
}

/// The human-readable stats: one table row per tool, then the session line.
fn render_stats(stats: &SessionStats) -> String {
    let mut out = String::new();
    if stats.tools.is_empty() {
        out.push_str("no tool calls\n");
    } else {
        let rows: Vec<[String; 7]> = stats
            .tools
            .iter()
            .map(|(name, t)| {
                let mut codes: Vec<(&String, &u64)> = t.failures_by_code.iter().collect();
                codes.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
                let mut top: Vec<String> = codes
                    .iter()
                    .take(3)
                    .map(|(code, n)| format!("{code} {n}"))
                    .collect();
                if codes.len() > 3 {
                    top.push("…".into());
                }
                [
                    clip(&crate::sanitize::visible(name), 40),
                    t.calls.to_string(),
                    t.failures.to_string(),
                    t.self_corrections.to_string(),
                    percent(t.self_correction_rate),
                    mean(t.mean_steps_to_recovery),
                    if top.is_empty() {
                        "-".into()
                    } else {
                        crate::sanitize::visible(&top.join(", ")).into_owned()
                    },
                ]
            })
            .collect();
        let header = [
            "TOOL",
            "CALLS",
            "FAILED",
            "CORRECTED",
            "RATE",
            "MEAN STEPS",
            "TOP CODES",
        ];
        let mut widths = header.map(|h| h.chars().count());
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut line = |cells: [&str; 7]| {
            let mut l = String::new();
            for (i, cell) in cells.iter().enumerate() {
                let pad = widths[i].saturating_sub(cell.chars().count());
                match i {
                    0 => {
                        l.push_str(cell);
                        l.push_str(&" ".repeat(pad));
                    }
                    6 => l.push_str(cell),
                    _ => {
                        l.push_str(&" ".repeat(pad));
                        l.push_str(cell);
                    }
                }
                if i < 6 {
                    l.push_str("  ");
                }
            }
            out.push_str(l.trim_end());
            out.push('\n');
        };
        line(header);
        for row in &rows {
            line(row.each_ref().map(String::as_str));
        }
        for (name, t) in &stats.tools {
            if t.top_violation_paths.is_empty() {
                continue;
            }
            let paths: Vec<String> = t
                .top_violation_paths
                .iter()
                .map(|p| format!("{} {}", one_line(&p.path, 60), p.count))
                .collect();
            let _ = writeln!(
                out,
                "violations {}: {}",
                clip(&crate::sanitize::visible(name), 40),
                paths.join(", ")
            );
        }
    }
    let t = &stats.tokens;
    let _ = writeln!(
        out,
        "session: {} turns, {} steps, {} tool calls, {} failed, {} self-corrected (rate {}, mean steps {})",
        stats.turns,
        stats.steps,
        stats.tool_calls,
        stats.failures,
        stats.self_corrections,
        percent(stats.self_correction_rate),
        mean(stats.mean_steps_to_recovery),
    );
    let opt = |n: Option<i64>| n.map_or_else(|| "-".to_string(), |n| n.to_string());
    let _ = writeln!(
        out,
        "tokens: input {}, output {}, cache read {}, cache write {}, reasoning {}",
        t.input,
        t.output,
        opt(t.cache_read),
        opt(t.cache_write),
        opt(t.reasoning)
    );
    out
}

/// `50%`, `-` for none.
fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".into(), |r| format!("{:.0}%", r * 100.0))
}

/// `1.50`, `-` for none.
fn mean(m: Option<f64>) -> String {
    m.map_or_else(|| "-".into(), |m| format!("{m:.2}"))
}

fn list(session_dir: Option<PathBuf>, tree: bool) -> u8 {
    let Some(dir) = session_dir.or_else(default_session_dir) else {
        crate::output::say!(
            "dsh: cannot find the session directory: set XDG_DATA_HOME or HOME, or pass --session-dir"
        );
        return 2;
    };
    let sessions = match list_sessions(&dir) {
        Ok(s) => s,
        Err(e) => {
            crate::output::say!("dsh: {e}");
            return 2;
        }
    };
    if sessions.is_empty() {
        crate::output::say!("dsh: no sessions in {}", dir.display());
        return 0;
    }
    // Newest first; with --tree each session is followed by its children
    // (newest first too), indented two spaces per level. A child whose
    // parent's log is gone is shown as a root.
    let newest_first: Vec<&dsh_session::SessionSummary> = sessions.iter().rev().collect();
    let rows: Vec<(usize, &dsh_session::SessionSummary)> = if tree {
        let known: std::collections::HashSet<&str> =
            sessions.iter().map(|s| s.id.as_str()).collect();
        let mut rows = Vec::new();
        fn walk<'a>(
            at: &'a dsh_session::SessionSummary,
            depth: usize,
            all: &[&'a dsh_session::SessionSummary],
            rows: &mut Vec<(usize, &'a dsh_session::SessionSummary)>,
        ) {
            rows.push((depth, at));
            // Bounded: ids are unique, so a cycle is impossible below 64.
            if depth > 64 {
                return;
            }
            for child in all.iter().filter(|c| c.parent.as_deref() == Some(&at.id)) {
                walk(child, depth + 1, all, rows);
            }
        }
        for root in newest_first
            .iter()
            .filter(|s| s.parent.as_deref().is_none_or(|p| !known.contains(p)))
        {
            walk(root, 0, &newest_first, &mut rows);
        }
        rows
    } else {
        newest_first.iter().map(|s| (0, *s)).collect()
    };
    let width = rows
        .iter()
        .map(|(d, s)| s.id.len() + 2 * d)
        .max()
        .unwrap_or(2)
        .max(2);
    let mut out = format!(
        "{:<width$}  {:<19}  {:>5}  {:>9}  {:>9}  TITLE\n",
        "ID", "CREATED (UTC)", "TURNS", "TOKENS", "COST"
    );
    let catalogue = dsh::catalogue::Catalogue::for_reports();
    for (depth, s) in rows {
        let cost = crate::commands::usage::log_cost(&s.path, &catalogue);
        let title = s
            .title
            .clone()
            .or_else(|| s.first_prompt.as_deref().map(dsh::title::offline_title))
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| "-".into());
        let id = format!("{}{}", "  ".repeat(depth), s.id);
        out.push_str(&format!(
            "{id:<width$}  {:<19}  {:>5}  {:>9}  {:>9}  {title}\n",
            format_utc(s.created_ms),
            s.turns,
            s.tokens,
            cost
        ));
    }
    crate::output::emit(&crate::sanitize::visible(&out))
}

/// `$XDG_DATA_HOME/dsh/sessions` (when absolute), else
/// `$HOME/.local/share/dsh/sessions`.
pub(crate) fn default_session_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/share"))
        })
        .map(|base| base.join("dsh").join("sessions"))
}

// ---------------------------------------------------------------------------
// the timeline

#[derive(Default)]
struct Totals {
    turns: u64,
    steps: u64,
    tool_calls: u64,
    tool_errors: u64,
    errors: u64,
    chunks: u64,
    usage_reports: u64,
    input: i64,
    output: i64,
    cache_read: i64,
    cache_write: i64,
    reasoning: i64,
}

impl Totals {
    /// The totals of a log's events.
    fn of(events: &[SessionEvent]) -> Self {
        let mut t = Totals::default();
        for event in events {
            match &event.data {
                EventPayload::TurnStart(_) => t.turns += 1,
                EventPayload::StepStart(_) => t.steps += 1,
                EventPayload::AssistantChunk(_) => t.chunks += 1,
                EventPayload::ToolCall(_) => t.tool_calls += 1,
                EventPayload::ToolResult(r) if r.result.is_error => t.tool_errors += 1,
                EventPayload::Usage(UsageEvent { usage, .. }) => {
                    t.usage_reports += 1;
                    add_usage(&mut t, usage);
                }
                EventPayload::Error(_) => t.errors += 1,
                _ => {}
            }
        }
        t
    }

    /// The two lines that end `dsh session show` (`totals: …`, `usage
    /// (…)`), each ending with a newline.
    fn lines(&self) -> String {
        format!(
            "totals: {} turns, {} steps, {} tool calls ({} failed), {} errors, {} chunks\n\
             usage ({} reports): input {}, output {}, cache read {}, cache write {}, reasoning {}\n",
            self.turns,
            self.steps,
            self.tool_calls,
            self.tool_errors,
            self.errors,
            self.chunks,
            self.usage_reports,
            self.input,
            self.output,
            self.cache_read,
            self.cache_write,
            self.reasoning
        )
    }
}

/// Prints a log as the chat shows a session ([`dsh_tui::transcript`]):
/// colour and terminal width on a terminal, plain text 100 columns wide
/// otherwise (`COLUMNS` overrides the width); then the totals.
fn show_transcript(file: &Path, events: &[SessionEvent], full: bool) -> u8 {
    use std::io::IsTerminal;
    let terminal = std::io::stdout().is_terminal();
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
        .filter(|c| *c >= 20)
        .or_else(|| terminal.then(dsh_tui::status::terminal_columns).flatten())
        .unwrap_or(100);
    let opts = dsh_tui::transcript::Options {
        width,
        reasoning: full,
        full,
    };
    let ui_events = dsh_controller::translate::replay(events);
    let lines = dsh_tui::transcript::Transcript::render_all(&ui_events, opts);
    let paint = dsh_tui::text::Paint::detect(terminal);
    let mut text = paint.line(&dsh_tui::text::Line::styled(
        header(file, events),
        dsh_tui::text::Style::new().add_modifier(dsh_tui::text::Modifier::DIM),
    ));
    text.push('\n');
    text.push_str(&paint.lines(&lines));
    text.push('\n');
    text.push_str(&Totals::of(events).lines());
    crate::output::emit(&text)
}

/// The first line of `dsh session show`: `session <name>: N events,
/// started <UTC time>` (no newline).
fn header(file: &Path, events: &[SessionEvent]) -> String {
    let name = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(
        "session {name}: {} events, started {}",
        events.len(),
        format_utc(events.first().map_or(0, |e| e.time))
    )
}

/// The human-readable timeline of a log (every line ends with a newline).
fn render_timeline(file: &Path, events: &[SessionEvent], show_chunks: bool) -> String {
    let mut out = header(file, events);
    out.push('\n');
    let start = events.first().map_or(0, |e| e.time);
    for event in events {
        let Some((indent, text)) = describe(event, show_chunks) else {
            continue;
        };
        let rel = event.time.saturating_sub(start);
        let prefix = format!(
            "{:>5} {:>9}  ",
            event.seq,
            format!("+{}.{:03}s", rel / 1000, rel % 1000)
        );
        let pad = " ".repeat(indent);
        for (i, line) in text.lines().enumerate() {
            if i == 0 {
                let _ = writeln!(out, "{prefix}{pad}{line}");
            } else {
                let _ = writeln!(out, "{}{pad}  {line}", " ".repeat(prefix.len()));
            }
        }
    }
    out.push_str(&Totals::of(events).lines());
    out
}

/// `(indent, text)` of one event, `None` to skip it; updates the totals.
fn describe(event: &SessionEvent, show_chunks: bool) -> Option<(usize, String)> {
    Some(match &event.data {
        EventPayload::TurnStart(TurnStartEvent { turn, trigger }) => {
            let why = match trigger {
                TurnTrigger::Message { source } => format!("message from {}", source_label(source)),
                TurnTrigger::Continuation => "continuation".into(),
                TurnTrigger::Other { kind, .. } => kind.clone(),
            };
            (0, format!("turn {turn} start ({why})"))
        }
        EventPayload::TurnEnd(TurnEndEvent { turn, reason }) => {
            let why = match reason {
                TurnEndReason::Completed => "completed".to_string(),
                TurnEndReason::Aborted { reason } => match reason {
                    Some(r) => format!("aborted: {r}"),
                    None => "aborted".into(),
                },
                TurnEndReason::Error { message, code } => {
                    format!("error{}: {message}", code_label(code.as_deref()))
                }
                TurnEndReason::Disposed => "disposed".into(),
                TurnEndReason::MaxSteps => "max-steps".into(),
                TurnEndReason::Interrupted => {
                    "interrupted (the process died; closed on resume)".into()
                }
                TurnEndReason::Other { kind, .. } => kind.clone(),
            };
            (0, format!("turn {turn} end: {why}"))
        }
        EventPayload::StepStart(StepEvent { step, .. }) => {
            (2, format!("step {step} start"))
        }
        EventPayload::StepEnd(StepEvent { step, .. }) => (2, format!("step {step} end")),
        EventPayload::UserMessage(MessageEvent { content, source }) => (
            0,
            format!(
                "user message ({}):{}",
                source_label(source),
                blocks(content)
            ),
        ),
        EventPayload::ContextMessage(MessageEvent { content, source }) => (
            0,
            format!(
                "context message ({}):{}",
                source_label(source),
                blocks(content)
            ),
        ),
        EventPayload::SteeringMessage(SteeringEvent {
            content, source, ..
        }) => (
            2,
            format!(
                "steering message ({}):{}",
                source_label(source),
                blocks(content)
            ),
        ),
        EventPayload::AssistantChunk(ChunkEvent { chunk, .. }) => {
            if !show_chunks {
                return None;
            }
            (4, format!("chunk {}", chunk_label(chunk)))
        }
        EventPayload::AssistantMessage(AssistantMessageEvent { content, .. }) => {
            (4, format!("assistant message:{}", blocks(content)))
        }
        EventPayload::ToolCall(ToolCallEvent { call, .. }) => {
            let ToolCall {
                call_id,
                name,
                arguments,
            } = call;
            (
                4,
                format!("tool call {name} [{call_id}] {}", clip(arguments, 400)),
            )
        }
        EventPayload::ToolResult(ToolResultEvent { result, .. }) => {
            let ToolResult {
                call_id,
                content,
                is_error,
                failure,
            } = result;
            let mut text = format!(
                "tool result [{call_id}] is_error={is_error}{}:{}",
                code_label(result.code()),
                blocks(content)
            );
            for gone in removed_spill_files(content) {
                let _ = write!(text, "\n[{gone} was removed (dsh session clean)]");
            }
            if let Some(f) = failure.as_ref().filter(|f| !f.violations.is_empty()) {
                text.push_str("\nviolations:");
                for v in &f.violations {
                    text.push_str("\n  - ");
                    text.push_str(v);
                }
            }
            (4, text)
        }
        EventPayload::Usage(UsageEvent { usage, .. }) => {
            (4, format!("usage: {}", usage_label(usage)))
        }
        EventPayload::Error(ErrorEvent {
            message,
            code,
            step,
            ..
        }) => {
            let indent = if *step == 0 { 0 } else { 4 };
            (
                indent,
                format!("error{}: {message}", code_label(code.as_deref())),
            )
        }
        EventPayload::Compaction(c) => (
            2,
            format!(
                "compaction: events {}..={} replaced by a summary ({} chars; next request ≈ {} tokens)",
                c.from_seq,
                c.to_seq,
                c.summary.chars().count(),
                c.tokens_after
            ),
        ),
        EventPayload::Prune(p) => (
            2,
            format!(
                "compaction: {} old tool result(s) cut to {}+{} chars (next request ≈ {} tokens)",
                p.seqs.len(),
                p.head_chars,
                p.tail_chars,
                p.tokens_after
            ),
        ),
        EventPayload::Rewind(r) => (
            2,
            format!(
                "conversation rewound to before turn {} (events from seq {} on are an earlier branch)",
                r.to_turn, r.from_seq
            ),
        ),
        EventPayload::Other { kind, data } if kind == dsh_agent_loop::CONTEXT_USAGE_KIND => {
            let field = |k: &str| data.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
            (
                4,
                format!(
                    "context: {} tokens next ({})",
                    field("tokens"),
                    dsh_session::format_usage(field("tokens"), field("window"))
                ),
            )
        }
        EventPayload::Other { kind, data } if kind == dsh::approval::ASKED_KIND => {
            let field = |k: &str| data.get(k).and_then(|v| v.as_str()).unwrap_or("?");
            let mut text = format!(
                "approval asked [{}]: {} wants to {}",
                field("callId"),
                field("tool"),
                field("summary")
            );
            if let Some(j) = data.get("justification").and_then(|v| v.as_str()) {
                text.push_str(&format!("\njustification: {j}"));
            }
            (4, text)
        }
        EventPayload::Other { kind, data } if kind == dsh::approval::DECIDED_KIND => {
            let field = |k: &str| data.get(k).and_then(|v| v.as_str()).unwrap_or("?");
            let mut text = format!(
                "approval decided [{}]: {} by {}",
                field("callId"),
                field("outcome"),
                field("by")
            );
            for extra in ["note", "reason"] {
                if let Some(v) = data.get(extra).and_then(|v| v.as_str()) {
                    text.push_str(&format!(" ({extra}: {v})"));
                }
            }
            (4, text)
        }
        EventPayload::Other { kind, data } if kind == dsh::subagents::SUBAGENT_SPAWNED_EVENT => {
            let field = |k: &str| data.get(k).and_then(|v| v.as_str()).unwrap_or("?");
            let how = match (data.get("fork"), data.get("background")) {
                (Some(serde_json::Value::Bool(true)), _) => " (fork)",
                (_, Some(serde_json::Value::Bool(true))) => " (background)",
                _ => "",
            };
            (
                4,
                format!(
                    "↳ subagent {} \"{}\"{how} [{}]: session {} (dsh session show {})",
                    field("agentId"),
                    field("description"),
                    field("callId"),
                    field("sessionId"),
                    field("sessionId")
                ),
            )
        }
        EventPayload::Other { kind, data } if kind == dsh::subagents::SUBAGENT_START_EVENT => {
            let field = |k: &str| data.get(k).and_then(|v| v.as_str()).unwrap_or("?");
            (
                0,
                format!(
                    "subagent of session {} (call {}): \"{}\"",
                    field("parentSessionId"),
                    field("callId"),
                    field("description")
                ),
            )
        }
        EventPayload::Other { kind, data } => (
            0,
            format!(
                "{kind}: {}",
                clip(&serde_json::to_string(data).unwrap_or_default(), 200)
            ),
        ),
    })
}

fn add_usage(t: &mut Totals, u: &TokenUsage) {
    t.input += u.input_tokens;
    t.output += u.output_tokens;
    t.cache_read += u.cache_read_tokens.unwrap_or(0);
    t.cache_write += u.cache_write_tokens.unwrap_or(0);
    t.reasoning += u.reasoning_tokens.unwrap_or(0);
}

fn usage_label(u: &TokenUsage) -> String {
    let mut s = format!("input {}, output {}", u.input_tokens, u.output_tokens);
    if let Some(n) = u.cache_read_tokens {
        let _ = write!(s, ", cache read {n}");
    }
    if let Some(n) = u.cache_write_tokens {
        let _ = write!(s, ", cache write {n}");
    }
    if let Some(n) = u.reasoning_tokens {
        let _ = write!(s, ", reasoning {n}");
    }
    s
}

fn code_label(code: Option<&str>) -> String {
    code.map(|c| format!(" [{c}]")).unwrap_or_default()
}

fn source_label(source: &MessageSource) -> String {
    match source {
        MessageSource::User => "user".into(),
        MessageSource::Plugin { plugin } => format!("plugin {plugin}"),
        MessageSource::Agent { agent_id } => format!("agent {agent_id}"),
        MessageSource::Other { kind, .. } => kind.clone(),
    }
}

fn chunk_label(chunk: &StreamChunk) -> String {
    match chunk {
        StreamChunk::BlockStart { index, block_type } => {
            format!("block-start {index} {block_type}")
        }
        StreamChunk::TextDelta { index, text } => {
            format!("text-delta {index} {}", one_line(text, 80))
        }
        StreamChunk::ReasoningDelta { index, text } => {
            format!("reasoning-delta {index} {}", one_line(text, 80))
        }
        StreamChunk::ToolCallDelta {
            index,
            arguments_delta,
            ..
        } => format!("tool-call-delta {index} {}", one_line(arguments_delta, 80)),
        StreamChunk::BlockEnd { index, block } => format!("block-end {index} {}", block.kind()),
        StreamChunk::Usage { usage } => format!("usage {}", usage_label(usage)),
        StreamChunk::Finish { reason } => format!("finish {}", reason.kind()),
    }
}

/// Spill files a result names (`…/spill/…` paths) that no longer exist.
fn removed_spill_files(content: &[ContentBlock]) -> Vec<String> {
    let mut gone = Vec::new();
    for text in content.iter().filter_map(ContentBlock::as_text) {
        for word in text.split(|c: char| c.is_whitespace() || c == ']' || c == '[') {
            let path = word.trim_end_matches(['.', ',', ';', ')']);
            if path.contains("/spill/")
                && !gone.iter().any(|g| g == path)
                && !Path::new(path).exists()
            {
                gone.push(path.to_string());
            }
        }
    }
    gone
}

/// One line per block, each starting on a new line.
fn blocks(content: &[ContentBlock]) -> String {
    if content.is_empty() {
        return " (empty)".into();
    }
    let mut s = String::new();
    for block in content {
        s.push('\n');
        match block {
            ContentBlock::Text(b) => {
                let _ = write!(s, "text {}", one_line(&b.text, 300));
            }
            ContentBlock::Reasoning(b) => {
                let _ = write!(s, "reasoning {}", one_line(&b.text, 200));
            }
            ContentBlock::ToolCall(b) => {
                let _ = write!(
                    s,
                    "tool-call {} [{}] {}",
                    b.name,
                    b.call_id,
                    clip(&b.arguments, 400)
                );
            }
            ContentBlock::ToolResult(b) => {
                let texts: String = b.content.iter().filter_map(|c| c.as_text()).collect();
                let _ = write!(
                    s,
                    "tool-result [{}] is_error={} {}",
                    b.tool_call_id,
                    b.is_error.unwrap_or(false),
                    one_line(&texts, 300)
                );
            }
            ContentBlock::Image(b) => {
                let _ = write!(s, "{}", dsh_session::image_placeholder(b));
            }
            ContentBlock::Other { kind, .. } => {
                let _ = write!(s, "{kind} block");
            }
        }
    }
    s
}

/// A JSON string literal of `text` (so newlines stay on one line), clipped.
fn one_line(text: &str, max_chars: usize) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_default();
    clip(&quoted, max_chars)
}

/// `text` cut to `max_chars` characters, noting how much was cut.
fn clip(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
    }
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) of a Unix time in milliseconds.
pub(crate) fn format_utc(ms: u64) -> String {
    dsh_protocol::time::Utc::from_unix_ms(ms).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00");
        assert_eq!(format_utc(1_700_000_000_123), "2023-11-14 22:13:20");
        assert_eq!(format_utc(951_782_400_000), "2000-02-29 00:00:00");
    }

    #[test]
    fn clipping_is_char_safe() {
        assert_eq!(clip("üüü", 2), "üü… (6 bytes)");
        assert_eq!(clip("ab", 2), "ab");
        assert_eq!(one_line("a\nb", 10), r#""a\nb""#);
    }
}
