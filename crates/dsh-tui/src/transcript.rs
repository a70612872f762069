//! The one renderer of a session's events into lines: the live chat, a
//! resumed chat's earlier conversation and `dsh session show` all go
//! through [`Transcript`], so they read the same.
//!
//! [`Transcript::on_event`] returns the lines that are final (they go to
//! the terminal's scrollback once and are never redrawn);
//! [`Transcript::live`] renders what is still moving (the open markdown
//! block, reasoning as it streams, the tool calls running) for a live
//! area that is redrawn.
//!
//! What is shown:
//! - the user's messages as `› text`; a message that was not the user's
//!   (a background job woke the agent) as `↻ first line`;
//! - the answer as rendered markdown ([`crate::markdown`]), settled block
//!   by block as it streams;
//! - reasoning dimmed, collapsed to its first lines unless
//!   [`Options::reasoning`];
//! - each tool call as one line with its outcome (`● Bash cargo test —
//!   exit 0, 3.1s`, `● Read src/main.rs (lines 1-200)`, `● Edit
//!   src/lib.rs (+3 −1)`, `● Grep "fn main" in src — 14 matches`, MCP
//!   calls as `server · tool(args…)`), its result folded to a few lines
//!   with `… +N lines` (whole with [`Options::full`]), file changes as
//!   red/green diffs with line numbers;
//! - the todo list as a checklist, approval answers, compactions, and the
//!   end of a turn (the context meter, or why it stopped).

use std::collections::HashMap;

use dsh_controller::{ApprovalKind, Decision, Event, EventBody, FileDiff, TodoEntry};
use dsh_protocol::TurnEndReason;
use serde_json::Value;

use crate::markdown::{self, MarkdownStream};
use crate::status::{count, seconds};
use crate::text::{dim, wrap, Color, Line, Modifier, Span, Style};

/// How a transcript is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Columns to wrap at.
    pub width: usize,
    /// Show reasoning whole (`/reasoning on`), else its first lines.
    pub reasoning: bool,
    /// Show tool results whole (`dsh session show --full`), else folded.
    pub full: bool,
}

impl Options {
    /// Folded results and collapsed reasoning at `width` columns.
    pub fn new(width: usize) -> Self {
        Options {
            width,
            reasoning: false,
            full: false,
        }
    }
}

/// Lines of a tool result shown under its call when folded.
pub const RESULT_LINES: usize = 4;
/// Lines of a diff shown when folded.
pub const DIFF_LINES: usize = 24;
/// Lines of reasoning shown when collapsed.
pub const REASONING_LINES: usize = 3;
/// Characters of a call's arguments shown on its line.
const ARGS_CHARS: usize = 80;

/// Tools whose call shows no line of its own: what matters is shown
/// otherwise (the checklist, the plan in its question).
const QUIET: [&str; 2] = ["todo_write", "exit_plan_mode"];

/// A tool call seen and not finished.
#[derive(Debug, Clone)]
struct Call {
    id: String,
    name: String,
    arguments: String,
    title: String,
    started: u64,
}

/// The renderer's state across a session's events (see the module doc).
pub struct Transcript {
    opts: Options,
    /// The answer being streamed (`None` between messages).
    answer: Option<MarkdownStream>,
    /// Reasoning streamed and not yet shown.
    reasoning: String,
    calls: Vec<Call>,
    /// Questions put and not answered: their one-line summary and call.
    questions: HashMap<String, (String, String)>,
    /// The last tool result, whole (Ctrl-O shows it).
    last_output: Option<(String, String)>,
    /// The last context reading: (tokens, window).
    context: Option<(u64, u64)>,
    /// The workspace, to show paths relative to it.
    cwd: String,
    /// The last line given out was blank (or nothing was given out yet).
    blank: bool,
}

impl Transcript {
    /// A transcript rendered with `opts`.
    pub fn new(opts: Options) -> Self {
        Transcript {
            opts,
            answer: None,
            reasoning: String::new(),
            calls: Vec::new(),
            questions: HashMap::new(),
            last_output: None,
            context: None,
            cwd: String::new(),
            blank: true,
        }
    }

    /// The options in use.
    pub fn options(&self) -> Options {
        self.opts
    }

    /// Changes the width (what is rendered from now on) and whether
    /// reasoning is shown whole.
    pub fn set_options(&mut self, opts: Options) {
        self.opts = opts;
        if let Some(md) = &mut self.answer {
            md.set_width(opts.width);
        }
    }

    /// Renders a whole saved session (its events replayed,
    /// [`dsh_controller::translate::replay`]).
    pub fn render_all(events: &[Event], opts: Options) -> Vec<Line> {
        let mut t = Transcript::new(opts);
        let mut lines = Vec::new();
        for e in events {
            lines.extend(t.on_event(e));
        }
        lines.extend(t.flush());
        lines
    }

    /// The lines of the last tool result, whole (for Ctrl-O).
    pub fn expand_last_output(&self) -> Vec<Line> {
        let Some((title, output)) = &self.last_output else {
            return vec![Line::styled("  (no tool output yet)", dim())];
        };
        let mut out = vec![Line::styled(format!("  ⎿ {title} (whole output)"), dim())];
        for l in output.trim_end().lines() {
            out.extend(wrap(
                &[Span::plain(l.to_string())],
                self.opts.width,
                &[Span::plain("    ")],
                &[Span::plain("    ")],
            ));
        }
        out
    }

    /// Whether something is still open: an answer or reasoning streaming,
    /// a call running.
    pub fn is_open(&self) -> bool {
        self.answer.is_some() || !self.reasoning.is_empty() || !self.calls.is_empty()
    }

    /// Settles whatever is open (the answer streamed so far, reasoning)
    /// and returns it; for the end of a replay or a chat.
    pub fn flush(&mut self) -> Vec<Line> {
        let mut out = Vec::new();
        self.settle_reasoning(&mut out);
        self.settle_answer(&mut out);
        out
    }

    /// Feeds one event; returns the lines that became final with it.
    pub fn on_event(&mut self, event: &Event) -> Vec<Line> {
        let mut out = Vec::new();
        match &event.body {
            EventBody::SessionStarted {
                cwd,
                cleared,
                session_id,
                ..
            } => {
                self.cwd = cwd.clone();
                if cleared.is_some() {
                    self.push(
                        &mut out,
                        Line::styled(format!("── cleared: new session {session_id} ──"), dim()),
                    );
                }
            }
            EventBody::Warning { message } => {
                let lines = rows(
                    message,
                    Style::new().fg(Color::Yellow),
                    self.opts.width,
                    "⚠ ",
                );
                self.extend(&mut out, lines);
            }
            EventBody::UserMessage {
                text,
                source,
                steering,
            } => {
                self.flush_into(&mut out);
                self.user_message(&mut out, text, source, *steering);
            }
            EventBody::ReasoningDelta { text } => self.reasoning.push_str(text),
            EventBody::MessageDelta { text } => {
                self.settle_reasoning(&mut out);
                if self.answer.is_none() {
                    self.gap(&mut out);
                    self.answer = Some(MarkdownStream::new(self.opts.width));
                }
                let Some(md) = self.answer.as_mut() else {
                    return out;
                };
                let lines = md.push(text);
                self.extend(&mut out, lines);
            }
            EventBody::MessageCompleted { text } => {
                self.settle_reasoning(&mut out);
                if self.answer.is_some() {
                    self.settle_answer(&mut out);
                } else if !text.trim().is_empty() {
                    let lines = markdown::render(text, self.opts.width);
                    self.gap(&mut out);
                    self.extend(&mut out, lines);
                }
            }
            EventBody::ToolStarted {
                call_id,
                name,
                arguments,
                title,
            } => {
                self.flush_into(&mut out);
                self.calls.push(Call {
                    id: call_id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                    title: title.clone(),
                    started: event.time,
                });
            }
            EventBody::ToolRunning { call_id } => {
                // The clock of a call runs from when it runs (an approval
                // question may have held it).
                if let Some(c) = self.calls.iter_mut().find(|c| &c.id == call_id) {
                    c.started = event.time;
                }
            }
            EventBody::ToolFinished {
                call_id,
                name,
                is_error,
                output,
                diff,
            } => {
                let call = match self.calls.iter().position(|c| &c.id == call_id) {
                    Some(i) => self.calls.remove(i),
                    None => Call {
                        id: call_id.clone(),
                        name: name.clone(),
                        arguments: String::new(),
                        title: name.clone(),
                        started: event.time,
                    },
                };
                let took = event.time.saturating_sub(call.started);
                self.finished(&mut out, &call, *is_error, output, diff.as_ref(), took);
            }
            EventBody::Todos { items } => {
                let lines = checklist(items);
                self.extend(&mut out, lines);
            }
            EventBody::ApprovalAsked {
                approval_id,
                kind,
                summary,
                call_id,
                ..
            } => {
                let what = match kind {
                    ApprovalKind::Plan => "the plan".to_string(),
                    ApprovalKind::Tool => summary.clone(),
                };
                self.questions
                    .insert(approval_id.clone(), (what, call_id.clone()));
            }
            EventBody::ApprovalDecided {
                approval_id,
                decision,
            } => {
                let (what, _) = self.questions.remove(approval_id).unwrap_or_default();
                let line = decided(&what, decision);
                let lines = wrap(
                    &line.spans,
                    self.opts.width,
                    &[Span::styled("  ? ", dim())],
                    &[Span::plain("    ")],
                );
                self.extend(&mut out, lines);
            }
            EventBody::Context { tokens, window } => self.context = Some((*tokens, *window)),
            EventBody::Compacted { tokens_after } => {
                self.push(
                    &mut out,
                    Line::styled(
                        format!("· context compacted ({} tokens now)", count(*tokens_after)),
                        dim(),
                    ),
                );
            }
            EventBody::Rewound { to_turn } => {
                self.flush_into(&mut out);
                self.push(
                    &mut out,
                    Line::styled(
                        format!(
                            "↺ conversation rewound to before turn {to_turn} — the turns above from there on are an earlier branch"
                        ),
                        dim(),
                    ),
                );
            }
            EventBody::FilesRestored {
                action,
                turn,
                restored,
                deleted,
                user_changed,
            } => {
                let what = match action.as_str() {
                    "undo" => format!("↶ undid the file changes of turn {turn}"),
                    "redo" => format!("↷ redid the file changes of turn {turn}"),
                    _ => format!("↺ files set back to before turn {turn}"),
                };
                let mut parts = Vec::new();
                if !restored.is_empty() {
                    parts.push(format!("{} restored", restored.len()));
                }
                if !deleted.is_empty() {
                    parts.push(format!("{} deleted", deleted.len()));
                }
                if !user_changed.is_empty() {
                    parts.push(format!("{} changed by hand left alone", user_changed.len()));
                }
                let line = if parts.is_empty() {
                    what
                } else {
                    format!("{what} ({})", parts.join(", "))
                };
                self.push(&mut out, Line::styled(line, dim()));
            }
            EventBody::TurnEnded { reason, .. } => {
                self.flush_into(&mut out);
                // Calls without a result are over with the turn.
                self.calls.clear();
                self.turn_ended(&mut out, reason);
            }
            _ => {}
        }
        out
    }

    /// What is still moving, for a live area redrawn at `now_ms`: the
    /// reasoning streaming (its last lines), the open markdown block, each
    /// running call with its elapsed time.
    pub fn live(&mut self, now_ms: u64) -> Vec<Line> {
        let mut out = Vec::new();
        if !self.reasoning.is_empty() {
            let mut lines = Vec::new();
            for (i, l) in last_lines(&self.reasoning, REASONING_LINES)
                .lines()
                .enumerate()
            {
                let first = if i == 0 { "✻ " } else { "  " };
                lines.extend(wrap(
                    &[Span::styled(l.to_string(), reasoning_style())],
                    self.opts.width,
                    &[Span::styled(first, reasoning_style())],
                    &[Span::styled("  ", reasoning_style())],
                ));
            }
            let skip = lines.len().saturating_sub(REASONING_LINES);
            out.extend(lines.into_iter().skip(skip));
        }
        if let Some(md) = &mut self.answer {
            out.extend(md.pending().iter().cloned());
        }
        for call in &self.calls {
            if QUIET.contains(&call.name.as_str()) {
                continue;
            }
            let secs = now_ms.saturating_sub(call.started) / 1000;
            let head = headline(&call.name, &call.arguments, &call.title, &self.cwd);
            let asked = self.questions.values().any(|(_, id)| id == &call.id);
            let state = if asked {
                " — waiting for approval".to_string()
            } else if call.name == "ask_user" {
                // The call runs while its questions wait for the person.
                " — waiting for your answer".to_string()
            } else {
                format!(" — running {secs}s")
            };
            let line = Line::new(vec![
                Span::styled("○ ", Style::new().fg(Color::Cyan)),
                Span::styled(head, Style::new().add_modifier(Modifier::BOLD)),
                Span::styled(state, dim()),
            ]);
            out.push(line.truncated(self.opts.width));
        }
        out
    }

    // ---- the parts ----

    fn user_message(
        &mut self,
        out: &mut Vec<Line>,
        text: &str,
        source: &dsh_protocol::MessageSource,
        steering: bool,
    ) {
        if *source != dsh_protocol::MessageSource::User {
            let first = text.lines().next().unwrap_or_default();
            self.gap(out);
            let line = Line::styled(format!("↻ {first}"), dim()).truncated(self.opts.width);
            self.push(out, line);
            return;
        }
        self.gap(out);
        let style = Style::new().add_modifier(Modifier::BOLD);
        let mut lines = Vec::new();
        for (i, l) in text.lines().enumerate() {
            let first = if i == 0 { "› " } else { "  " };
            lines.extend(wrap(
                &[Span::styled(l.to_string(), style)],
                self.opts.width,
                &[Span::styled(first, Style::new().fg(Color::Cyan))],
                &[Span::plain("  ")],
            ));
        }
        if steering {
            if let Some(last) = lines.last_mut() {
                last.spans
                    .push(Span::styled(" (while the turn ran)", dim()));
            }
        }
        self.extend(out, lines);
    }

    fn finished(
        &mut self,
        out: &mut Vec<Line>,
        call: &Call,
        is_error: bool,
        output: &str,
        diff: Option<&FileDiff>,
        took: u64,
    ) {
        let head = headline(&call.name, &call.arguments, &call.title, &self.cwd);
        self.last_output = Some((head.clone(), output.to_string()));
        if QUIET.contains(&call.name.as_str()) && !is_error {
            return;
        }
        let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
        let changes = if is_error {
            None
        } else {
            change_of(&call.name, &args, diff)
        };
        let outcome = outcome(&call.name, &args, is_error, output, changes.as_ref(), took);
        let bullet = if is_error {
            Style::new().fg(Color::Red)
        } else {
            Style::new().fg(Color::Green)
        };
        // The headline gives way so the outcome stays on its line.
        let room = self
            .opts
            .width
            .saturating_sub(2 + crate::text::display_width(&outcome))
            .max(12);
        let head = Line::plain(head).truncated(room).text();
        let mut spans = vec![
            Span::styled("● ", bullet),
            Span::styled(head, Style::new().add_modifier(Modifier::BOLD)),
        ];
        if !outcome.is_empty() {
            spans.push(Span::styled(outcome, dim()));
        }
        self.gap(out);
        let header = wrap(&spans, self.opts.width, &[], &[Span::plain("  ")]);
        self.extend(out, header);
        let fold = if self.opts.full {
            usize::MAX
        } else {
            RESULT_LINES
        };
        let body = if let Some(change) = &changes {
            let limit = if self.opts.full {
                usize::MAX
            } else {
                DIFF_LINES
            };
            diff_lines(change, self.opts.width, limit)
        } else if is_error {
            self.body(output, fold, Style::new().fg(Color::Red))
        } else if shows_output(&call.name) {
            self.body(output, fold, dim())
        } else {
            Vec::new()
        };
        self.extend(out, body);
    }

    /// A result's text folded to `fold` lines under its call.
    fn body(&self, output: &str, fold: usize, style: Style) -> Vec<Line> {
        let text = output.trim_end();
        if text.is_empty() {
            return vec![Line::styled("  ⎿ (no output)", dim())];
        }
        let all: Vec<&str> = text.lines().collect();
        let mut out = Vec::new();
        for (i, l) in all.iter().take(fold).enumerate() {
            let first = if i == 0 { "  ⎿ " } else { "    " };
            let mut rows = wrap(
                &[Span::styled(l.to_string(), style)],
                self.opts.width,
                &[Span::styled(first, dim())],
                &[Span::plain("    ")],
            );
            // A very long line (minified, base64) is one row when folded.
            if fold != usize::MAX && rows.len() > 2 {
                rows.truncate(2);
                if let Some(last) = rows.last_mut() {
                    *last = last.clone().with(Span::styled("…", dim()));
                    *last = last.truncated(self.opts.width);
                }
            }
            out.extend(rows);
        }
        if all.len() > fold {
            out.push(Line::styled(
                format!("    … +{} lines (ctrl+o to expand)", all.len() - fold),
                dim(),
            ));
        }
        out
    }

    fn turn_ended(&mut self, out: &mut Vec<Line>, reason: &TurnEndReason) {
        let meter = self
            .context
            .take()
            .map(|(t, w)| Line::styled(dsh_session::format_usage(t, w), dim()));
        let red = Style::new().fg(Color::Red);
        let line = match reason {
            TurnEndReason::Completed => None,
            TurnEndReason::Aborted { reason } => Some(Line::styled(
                format!("[aborted: {}]", reason.as_deref().unwrap_or("aborted")),
                red,
            )),
            TurnEndReason::Error { message, code } => Some(Line::styled(
                format!(
                    "[error{}: {message}]",
                    code.as_deref().map(|c| format!(" {c}")).unwrap_or_default()
                ),
                red,
            )),
            TurnEndReason::MaxSteps => {
                Some(Line::styled("[stopped: the turn hit the step limit]", red))
            }
            other => Some(Line::styled(
                format!("[turn ended: {}]", other.kind()),
                dim(),
            )),
        };
        self.gap(out);
        if let Some(line) = line {
            let style = line.spans.first().map(|s| s.style).unwrap_or_default();
            let lines = rows(&line.text(), style, self.opts.width, "");
            self.extend(out, lines);
        }
        if let Some(m) = meter {
            self.push(out, m);
        }
    }

    fn settle_reasoning(&mut self, out: &mut Vec<Line>) {
        if self.reasoning.trim().is_empty() {
            self.reasoning.clear();
            return;
        }
        let text = std::mem::take(&mut self.reasoning);
        let mut lines = Vec::new();
        for (i, l) in text.trim().lines().enumerate() {
            let first = if i == 0 { "✻ " } else { "  " };
            lines.extend(wrap(
                &[Span::styled(l.to_string(), reasoning_style())],
                self.opts.width,
                &[Span::styled(first, reasoning_style())],
                &[Span::styled("  ", reasoning_style())],
            ));
        }
        if !self.opts.reasoning && lines.len() > REASONING_LINES {
            let more = lines.len() - REASONING_LINES;
            lines.truncate(REASONING_LINES);
            lines.push(Line::styled(
                format!("  … +{more} lines of reasoning (/reasoning on shows it all)"),
                dim(),
            ));
        }
        self.gap(out);
        self.extend(out, lines);
    }

    fn settle_answer(&mut self, out: &mut Vec<Line>) {
        if let Some(mut md) = self.answer.take() {
            let lines = md.finish();
            self.extend(out, lines);
        }
    }

    fn flush_into(&mut self, out: &mut Vec<Line>) {
        let lines = self.flush();
        out.extend(lines);
    }

    /// A blank line before a new block, unless one was just given.
    fn gap(&mut self, out: &mut Vec<Line>) {
        if !self.blank {
            out.push(Line::blank());
            self.blank = true;
        }
    }

    fn push(&mut self, out: &mut Vec<Line>, line: Line) {
        self.blank = line.width() == 0;
        out.push(line);
    }

    fn extend(&mut self, out: &mut Vec<Line>, lines: Vec<Line>) {
        for line in lines {
            // Never two blank lines in a row.
            if line.width() == 0 && self.blank {
                continue;
            }
            self.push(out, line);
        }
    }
}

// ---- tool lines ----

/// The one line naming a call: `Bash cargo test`, `Read src/main.rs`,
/// `Edit src/lib.rs`, `Grep "fn main" in src`, `Subagent "research X"`,
/// `Ask "Which database?" (+1 more)`, `server · tool(args…)` for an MCP
/// tool, `name(args…)` otherwise.
pub fn headline(name: &str, arguments: &str, title: &str, cwd: &str) -> String {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let s = |k: &str| {
        args.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let path = |k: &str| relative(&s(k), cwd);
    match name {
        "bash" => format!("Bash {}", one_line(&s("command"), ARGS_CHARS)),
        "read" => format!("Read {}", path("file_path")),
        "write" => format!("Write {}", path("file_path")),
        "edit" | "multi_edit" => format!("Edit {}", path("file_path")),
        "str_replace_editor" => match s("command").as_str() {
            "view" => format!("Read {}", path("path")),
            "create" => format!("Write {}", path("path")),
            _ => format!("Edit {}", path("path")),
        },
        "grep" => {
            let within = s("path");
            let within = if within.is_empty() || within == "." {
                String::new()
            } else {
                format!(" in {}", relative(&within, cwd))
            };
            format!("Grep \"{}\"{within}", one_line(&s("pattern"), ARGS_CHARS))
        }
        "glob" => format!("Glob \"{}\"", one_line(&s("pattern"), ARGS_CHARS)),
        "subagent" | "subagent_fork" | "task" => {
            format!("Subagent \"{}\"", one_line(&s("description"), ARGS_CHARS))
        }
        "ask_user" => {
            let questions = args.get("questions").and_then(Value::as_array);
            let first = questions
                .and_then(|q| q.first())
                .and_then(|q| q.get("question"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let more = match questions.map_or(0, Vec::len) {
                0 | 1 => String::new(),
                n => format!(" (+{} more)", n - 1),
            };
            format!("Ask \"{}\"{more}", one_line(first, ARGS_CHARS))
        }
        "todo_write" => "Update todos".to_string(),
        "exit_plan_mode" => "Present the plan".to_string(),
        _ => {
            // MCP tools: `mcp__<server>__<tool>`, or `<server>__<tool>`
            // with an empty tool prefix.
            let rest = name.strip_prefix("mcp__").unwrap_or(name);
            if let Some((server, tool)) = rest.split_once("__") {
                return format!("{server} · {tool}({})", short_args(&args));
            }
            if title != name && !title.is_empty() {
                return one_line(title, ARGS_CHARS);
            }
            format!("{name}({})", short_args(&args))
        }
    }
}

/// The arguments as `key: value, …`, cut to a line.
fn short_args(args: &Value) -> String {
    let text = match args {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}: {s}"),
                other => format!("{k}: {other}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    one_line(&text, ARGS_CHARS)
}

/// The first line of `text`, at most `max` characters, `…` when cut.
fn one_line(text: &str, max: usize) -> String {
    let mut lines = text.trim().lines();
    let first = lines.next().unwrap_or_default();
    let more = lines.next().is_some();
    match first.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &first[..i]),
        None if more => format!("{first} …"),
        None => first.to_string(),
    }
}

/// `path` relative to `cwd` when inside it.
fn relative(path: &str, cwd: &str) -> String {
    if cwd.is_empty() {
        return path.to_string();
    }
    match path.strip_prefix(cwd) {
        Some(rest) if rest.starts_with('/') => rest.trim_start_matches('/').to_string(),
        Some("") => ".".to_string(),
        _ => path.to_string(),
    }
}

/// What a call did, after its headline: ` — exit 0, 3.1s`, ` (lines
/// 1-200)`, ` (+3 −1)`, ` — 14 matches`, ` — error`.
fn outcome(
    name: &str,
    args: &Value,
    is_error: bool,
    output: &str,
    change: Option<&Change>,
    took_ms: u64,
) -> String {
    let secs = seconds(took_ms);
    if is_error {
        return format!(" — error, {secs}");
    }
    match name {
        "bash" => format!(" — {}, {secs}", call_outcome(name, false, output)),
        "read" => {
            let start = args
                .get("offset")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .max(1);
            let n = output.lines().count() as u64;
            if n == 0 {
                " (empty)".to_string()
            } else {
                format!(" (lines {start}-{})", start + n - 1)
            }
        }
        "write" | "edit" | "multi_edit" | "str_replace_editor" => match change {
            Some(c) => format!(" (+{} −{})", c.added, c.removed),
            None => String::new(),
        },
        "grep" => {
            let n = output.lines().filter(|l| !l.trim().is_empty()).count();
            if n == 0 || output.trim().starts_with("No matches") {
                " — no matches".to_string()
            } else {
                format!(" — {n} {}", if n == 1 { "match" } else { "matches" })
            }
        }
        "glob" => {
            let n = output.lines().filter(|l| !l.trim().is_empty()).count();
            format!(" — {n} {}", if n == 1 { "file" } else { "files" })
        }
        "todo_write" | "exit_plan_mode" => String::new(),
        _ => format!(" — {secs}"),
    }
}

/// How a call ended, in a word or two: a bash call's `exit N` (from the
/// `[exit code: N]` marker its result ends with; none is `exit 0`),
/// `killed by SIGNAL`, `timed out`, `started bash-1` (a background task);
/// `error` for an error result; `ok` for any other tool.
pub fn call_outcome(name: &str, is_error: bool, output: &str) -> String {
    if is_error {
        return "error".to_string();
    }
    if name != "bash" {
        return "ok".to_string();
    }
    if let Some(task) = output.trim().strip_prefix("started background task ") {
        return format!("started {}", task.split_whitespace().next().unwrap_or(""));
    }
    // The markers are the result's last lines.
    let (mut exit, mut killed, mut timed_out) = (None, None, false);
    for line in output.lines().rev().take(6) {
        let line = line.trim();
        if let Some(code) = marker(line, "[exit code: ") {
            exit.get_or_insert(code);
        } else if let Some(signal) = marker(line, "[killed by signal: ") {
            killed.get_or_insert(signal);
        } else if line.starts_with("[timed out after ") {
            timed_out = true;
        }
    }
    if timed_out {
        "timed out".to_string()
    } else if let Some(signal) = killed {
        format!("killed by {signal}")
    } else {
        format!("exit {}", exit.unwrap_or("0"))
    }
}

/// The value of `[label value]`.
fn marker<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    line.strip_prefix(label)?.strip_suffix(']')
}

/// Whether a successful result of `name` is shown under its line (a
/// read's text is not: the line says what was read).
fn shows_output(name: &str) -> bool {
    !matches!(
        name,
        "read" | "write" | "edit" | "multi_edit" | "str_replace_editor"
    )
}

// ---- diffs ----

/// A file change to show: the text before and after.
struct Change {
    old: String,
    new: String,
    /// The line of the file where `old`/`new` start (1 for a whole file).
    first_line: usize,
    added: usize,
    removed: usize,
}

/// The change a successful call made: its diff when the controller read
/// one, else what its arguments say (a replayed edit: `old_string` →
/// `new_string`; a write: the content).
fn change_of(name: &str, args: &Value, diff: Option<&FileDiff>) -> Option<Change> {
    let s = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    let (_path, old, new) = match diff {
        Some(d) => (
            d.path.clone(),
            d.old_text.clone().unwrap_or_default(),
            d.new_text.clone(),
        ),
        None => match name {
            "edit" => (s("file_path")?, s("old_string")?, s("new_string")?),
            "write" => (s("file_path")?, String::new(), s("content")?),
            "str_replace_editor" => match s("command")?.as_str() {
                "str_replace" => (s("path")?, s("old_str")?, s("new_str").unwrap_or_default()),
                "create" => (s("path")?, String::new(), s("file_text")?),
                "insert" => (s("path")?, String::new(), s("new_str")?),
                _ => return None,
            },
            _ => return None,
        },
    };
    let (added, removed) = count_changes(&old, &new);
    Some(Change {
        old,
        new,
        first_line: 1,
        added,
        removed,
    })
}

/// The change a file tool's call makes, from its arguments alone (an
/// edit's `old_string` → `new_string`; a write's content, or a
/// `str_replace_editor` create or insert, against nothing) as a unified
/// diff: `--- a/<path>` (`/dev/null` for nothing), `+++ b/<path>`, hunks
/// with 3 lines of context, the path relative to `cwd` when inside it.
/// `None` for another tool or arguments that do not say (`dsh session
/// export` shows it).
pub fn unified_diff(name: &str, arguments: &str, cwd: &str) -> Option<String> {
    let args: Value = serde_json::from_str(arguments).ok()?;
    let change = change_of(name, &args, None)?;
    let path = ["file_path", "path"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .map_or_else(|| "file".to_string(), |p| relative(p, cwd));
    // git's a/ b/ prefixes for a path in the workspace; an absolute one as
    // it is.
    let (old, new) = if path.starts_with('/') {
        (path.clone(), path)
    } else {
        (format!("a/{path}"), format!("b/{path}"))
    };
    let old = if change.old.is_empty() {
        "/dev/null".to_string()
    } else {
        old
    };
    let diff = similar::TextDiff::from_lines(&change.old, &change.new);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string();
    Some(text)
}

fn count_changes(old: &str, new: &str) -> (usize, usize) {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut added = 0;
    let mut removed = 0;
    for op in diff.ops() {
        for change in diff.iter_changes(op) {
            match change.tag() {
                similar::ChangeTag::Insert => added += 1,
                similar::ChangeTag::Delete => removed += 1,
                similar::ChangeTag::Equal => {}
            }
        }
    }
    (added, removed)
}

/// The change as unified-diff hunks (3 lines of context) with line
/// numbers: removed lines red `-`, added lines green `+`, at most `limit`
/// lines then `… +N lines`.
fn diff_lines(change: &Change, width: usize, limit: usize) -> Vec<Line> {
    let diff = similar::TextDiff::from_lines(&change.old, &change.new);
    let mut rows: Vec<Line> = Vec::new();
    let number_width = (change.first_line
        + change.old.lines().count().max(change.new.lines().count()))
    .to_string()
    .len()
    .max(3);
    let red = Style::new().fg(Color::Red);
    let green = Style::new().fg(Color::Green);
    for (i, group) in diff.grouped_ops(3).iter().enumerate() {
        if i > 0 {
            rows.push(Line::styled(format!("    {:>number_width$} ⋮", ""), dim()));
        }
        for op in group {
            for c in diff.iter_changes(op) {
                let (mark, style, number) = match c.tag() {
                    similar::ChangeTag::Delete => ("-", red, c.old_index()),
                    similar::ChangeTag::Insert => ("+", green, c.new_index()),
                    similar::ChangeTag::Equal => (" ", dim(), c.new_index()),
                };
                let number = number.map_or(String::new(), |n| (n + change.first_line).to_string());
                let text = c.value().trim_end_matches(['\n', '\r']).to_string();
                let prefix = vec![
                    Span::plain("    "),
                    Span::styled(format!("{number:>number_width$} "), dim()),
                    Span::styled(format!("{mark} "), style),
                ];
                let rest = vec![Span::plain(" ".repeat(4 + number_width + 3))];
                rows.extend(wrap(&[Span::styled(text, style)], width, &prefix, &rest));
            }
        }
    }
    if rows.len() > limit {
        let more = rows.len() - limit;
        rows.truncate(limit);
        rows.push(Line::styled(
            format!("    … +{more} lines (ctrl+o to expand)"),
            dim(),
        ));
    }
    rows
}

// ---- small pieces ----

/// The todo list: `  ⎿ Todo list (1/3 completed)`, then one line per
/// item, the one in progress bold, the done ones dim.
pub fn checklist(items: &[TodoEntry]) -> Vec<Line> {
    if items.is_empty() {
        return vec![Line::styled("  ⎿ Todo list cleared", dim())];
    }
    let done = items.iter().filter(|t| t.status == "completed").count();
    let mut out = vec![Line::styled(
        format!("  ⎿ Todo list ({done}/{} completed)", items.len()),
        dim(),
    )];
    for t in items {
        let (glyph, style) = match t.status.as_str() {
            "completed" => ("[x]", dim()),
            "in_progress" => ("[~]", Style::new().add_modifier(Modifier::BOLD)),
            _ => ("[ ]", Style::new()),
        };
        out.push(Line::styled(format!("    {glyph} {}", t.content), style));
    }
    out
}

/// The line saying how a question was answered (after a `  ? ` prefix).
fn decided(what: &str, decision: &Decision) -> Line {
    let plan = what == "the plan";
    let (text, style) = match decision {
        Decision::AllowOnce if plan => ("approved".to_string(), Style::new().fg(Color::Green)),
        Decision::Reject { note: Some(n) } if plan => (
            format!("not approved, planning goes on: {n}"),
            Style::new().fg(Color::Yellow),
        ),
        Decision::Reject { note: None } if plan => (
            "not approved, planning goes on".to_string(),
            Style::new().fg(Color::Yellow),
        ),
        Decision::AllowOnce => ("allowed once".to_string(), Style::new().fg(Color::Green)),
        Decision::AllowAlways => (
            "allowed for the session".to_string(),
            Style::new().fg(Color::Green),
        ),
        Decision::Reject { note: Some(n) } => (format!("denied: {n}"), Style::new().fg(Color::Red)),
        Decision::Reject { note: None } => ("denied".to_string(), Style::new().fg(Color::Red)),
        Decision::Cancelled => ("cancelled".to_string(), dim()),
    };
    Line::new(vec![
        Span::styled(one_line(what, ARGS_CHARS), dim()),
        Span::styled(" — ", dim()),
        Span::styled(text, style),
    ])
}

/// `text` in `style`, each of its lines wrapped at `width`: the first
/// row after `first`, every other one indented as deep.
fn rows(text: &str, style: Style, width: usize, first: &str) -> Vec<Line> {
    let indent = " ".repeat(crate::text::display_width(first));
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let head = if i == 0 { first } else { indent.as_str() };
        out.extend(wrap(
            &[Span::styled(l.to_string(), style)],
            width,
            &[Span::styled(head.to_string(), style)],
            &[Span::plain(indent.clone())],
        ));
    }
    out
}

fn last_lines(text: &str, n: usize) -> &str {
    let trimmed = text.trim_end();
    let mut idx = trimmed.len();
    for _ in 0..n {
        match trimmed[..idx].rfind('\n') {
            Some(i) => idx = i,
            None => return trimmed.trim_start(),
        }
    }
    trimmed[idx..].trim_start()
}

fn reasoning_style() -> Style {
    Style::new().add_modifier(Modifier::DIM | Modifier::ITALIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, body: EventBody) -> Event {
        Event {
            seq,
            time: 1_000 + seq * 100,
            body,
        }
    }

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::text).collect()
    }

    fn call(
        t: &mut Transcript,
        name: &str,
        args: &str,
        output: &str,
        is_error: bool,
    ) -> Vec<String> {
        let mut out = t.on_event(&event(
            1,
            EventBody::ToolStarted {
                call_id: "c1".into(),
                name: name.into(),
                arguments: args.into(),
                title: name.into(),
            },
        ));
        out.extend(t.on_event(&event(
            32,
            EventBody::ToolFinished {
                call_id: "c1".into(),
                name: name.into(),
                is_error,
                output: output.into(),
                diff: None,
            },
        )));
        // From the call's line on (a blank line may come first).
        texts(&out)
            .into_iter()
            .skip_while(String::is_empty)
            .collect()
    }

    #[test]
    fn headlines_say_what_a_call_does() {
        let h = |n: &str, a: &str| headline(n, a, n, "/w");
        assert_eq!(
            h("bash", r#"{"command":"cargo test\necho"}"#),
            "Bash cargo test …"
        );
        assert_eq!(
            h("read", r#"{"file_path":"/w/src/main.rs"}"#),
            "Read src/main.rs"
        );
        assert_eq!(
            h("grep", r#"{"pattern":"fn main","path":"/w/src"}"#),
            "Grep \"fn main\" in src"
        );
        assert_eq!(
            h("subagent", r#"{"description":"research X"}"#),
            "Subagent \"research X\""
        );
        assert_eq!(
            h("mcp__git__status", r#"{"repo":"."}"#),
            "git · status(repo: .)"
        );
        assert_eq!(
            h(
                "ask_user",
                r#"{"questions":[{"question":"Which database?"},{"question":"Port?"}]}"#
            ),
            "Ask \"Which database?\" (+1 more)"
        );
        assert_eq!(
            h("ask_user", r#"{"questions":[{"question":"Go?"}]}"#),
            "Ask \"Go?\""
        );
        assert_eq!(h("frob", r#"{"n":1}"#), "frob(n: 1)");
    }

    #[test]
    fn outcomes_read_the_bash_markers() {
        assert_eq!(call_outcome("bash", false, "x\n[exit code: 3]"), "exit 3");
        assert_eq!(call_outcome("bash", false, "done\n"), "exit 0");
        assert_eq!(
            call_outcome("bash", false, "[killed by signal: SIGTERM]"),
            "killed by SIGTERM"
        );
        assert_eq!(
            call_outcome("bash", false, "[timed out after 10s]"),
            "timed out"
        );
        assert_eq!(
            call_outcome("bash", false, "started background task bash-1 (x)"),
            "started bash-1"
        );
        assert_eq!(call_outcome("read", false, "..."), "ok");
        assert_eq!(call_outcome("bash", true, "..."), "error");
    }

    #[test]
    fn a_result_is_folded_unless_full() {
        let output: String = (1..=10).map(|i| format!("row {i}\n")).collect();
        let mut t = Transcript::new(Options::new(80));
        let lines = call(&mut t, "bash", r#"{"command":"seq 10"}"#, &output, false);
        assert_eq!(lines[0], "● Bash seq 10 — exit 0, 3.1s");
        assert_eq!(lines[1], "  ⎿ row 1");
        assert_eq!(lines[4], "    row 4");
        assert_eq!(lines[5], "    … +6 lines (ctrl+o to expand)");
        assert_eq!(lines.len(), 6);
        let whole = t.expand_last_output();
        assert_eq!(whole.len(), 11);
        let mut full = Transcript::new(Options {
            full: true,
            ..Options::new(80)
        });
        let lines = call(&mut full, "bash", r#"{"command":"seq 10"}"#, &output, false);
        assert_eq!(lines.len(), 11);
        assert_eq!(lines[10], "    row 10");
    }

    #[test]
    fn a_replayed_edit_shows_its_diff_from_the_arguments() {
        let mut t = Transcript::new(Options::new(80));
        let lines = call(
            &mut t,
            "edit",
            r#"{"file_path":"a.rs","old_string":"let x = 1;","new_string":"let x = 2;\nlet y = 3;"}"#,
            "Edited a.rs",
            false,
        );
        assert_eq!(lines[0], "● Edit a.rs (+2 −1)");
        assert!(
            lines.iter().any(|l| l.contains("1 - let x = 1;")),
            "{lines:?}"
        );
        assert!(
            lines.iter().any(|l| l.contains("2 + let y = 3;")),
            "{lines:?}"
        );
        // An error shows the error, no diff.
        let lines = call(
            &mut t,
            "edit",
            r#"{"file_path":"a.rs"}"#,
            "Error: stale",
            true,
        );
        assert_eq!(lines[0], "● Edit a.rs — error, 3.1s");
        assert_eq!(lines[1], "  ⎿ Error: stale");
    }

    #[test]
    fn a_file_call_is_a_unified_diff_of_its_arguments() {
        let edit =
            r#"{"file_path":"/ws/src/a.rs","old_string":"one\ntwo\n","new_string":"one\n2\n"}"#;
        let diff = unified_diff("edit", edit, "/ws").unwrap();
        assert!(
            diff.starts_with("--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +1,2 @@\n"),
            "{diff}"
        );
        assert!(diff.contains("\n-two\n+2\n"), "{diff}");
        let write = r#"{"file_path":"/elsewhere/b.txt","content":"hi\n"}"#;
        let diff = unified_diff("write", write, "/ws").unwrap();
        assert!(
            diff.starts_with("--- /dev/null\n+++ /elsewhere/b.txt\n"),
            "{diff}"
        );
        assert!(diff.ends_with("+hi\n"), "{diff}");
        assert_eq!(unified_diff("bash", r#"{"command":"ls"}"#, "/ws"), None);
    }

    #[test]
    fn reasoning_is_collapsed_to_its_first_lines() {
        let mut t = Transcript::new(Options::new(80));
        let text: String = (1..=6).map(|i| format!("thought {i}\n")).collect();
        t.on_event(&event(1, EventBody::ReasoningDelta { text }));
        assert!(
            texts(&t.live(0)).contains(&"  thought 6".to_string()),
            "{:?}",
            texts(&t.live(0))
        );
        let lines = texts(&t.on_event(&event(
            2,
            EventBody::MessageDelta {
                text: "Done.\n\n".into(),
            },
        )));
        assert_eq!(lines[0], "✻ thought 1");
        assert_eq!(lines[2], "  thought 3");
        assert_eq!(
            lines[3],
            "  … +3 lines of reasoning (/reasoning on shows it all)"
        );
        assert!(lines.contains(&"Done.".to_string()), "{lines:?}");
    }

    #[test]
    fn a_running_call_shows_in_the_live_area_with_its_time() {
        let mut t = Transcript::new(Options::new(80));
        t.on_event(&event(
            1,
            EventBody::ToolStarted {
                call_id: "c1".into(),
                name: "bash".into(),
                arguments: r#"{"command":"cargo test"}"#.into(),
                title: "Run".into(),
            },
        ));
        assert_eq!(texts(&t.live(13_200)), ["○ Bash cargo test — running 12s"]);
        assert!(t.is_open());
    }
}
