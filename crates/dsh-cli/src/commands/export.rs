//! `dsh session export FILE|ID --format md|html|jsonl [-o FILE]`: a saved
//! session as something to share or attach to an issue.
//!
//! - `md`: a readable transcript — the title, start date, model(s),
//!   session id and workspace; each user message; the assistant's
//!   markdown as it was written; each tool call as its name and its
//!   arguments in a fenced block, a file change (`edit`, `write`,
//!   `str_replace_editor`) as a fenced unified diff instead of the texts
//!   it carries, its result (cut at [`RESULT_LINES`] lines, with a note);
//!   errors; compactions, rewinds and sub-agents as notes; the token
//!   totals at the end. Everything in the log is shown, an abandoned
//!   (rewound) branch included, in log order.
//! - `html`: the same as one self-contained page: inline CSS, no script,
//!   nothing loaded from anywhere (no `src` at all; the only links are
//!   those the conversation's own markdown holds, and images become such
//!   links). Messages go through pulldown-cmark with raw HTML turned into
//!   text, so a message holding `<script>` shows it; links other than
//!   `http(s)`, `mailto` and relative ones lose their target.
//! - `jsonl`: the log's lines as stored.
//!
//! stdout by default (control characters made visible, as everywhere dsh
//! prints foreign text); `-o FILE` writes the file atomically, mode 0600.
//! Exit 0, 2 for a session that cannot be found or read, 1 when the
//! output cannot be written.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use dsh_llm::ContentBlock;
use dsh_session::{
    AssistantMessageEvent, ErrorEvent, EventPayload, MessageEvent, SessionEvent, SteeringEvent,
    ToolCallEvent, ToolResultEvent, TurnEndEvent, TurnEndReason,
};
use serde_json::Value;

use crate::cli::ExportFormat;

/// The lines of a tool result an export shows; the rest is counted.
pub(crate) const RESULT_LINES: usize = 200;

/// Runs `dsh session export`; returns the exit code.
pub(crate) fn run(
    arg: &str,
    format: ExportFormat,
    output: Option<PathBuf>,
    session_dir: Option<PathBuf>,
) -> u8 {
    let Some(path) = crate::commands::session::locate(arg, session_dir) else {
        return 2;
    };
    let text = match format {
        ExportFormat::Jsonl => match std::fs::read(&path) {
            Ok(bytes) => {
                return match output {
                    Some(out) => write_out(&out, &bytes),
                    None => crate::output::emit(&crate::sanitize::json_visible(
                        &String::from_utf8_lossy(&bytes),
                    )),
                }
            }
            Err(e) => {
                crate::output::say!("dsh: cannot read {}: {e}", path.display());
                return 2;
            }
        },
        ExportFormat::Md | ExportFormat::Html => {
            let log = match crate::commands::session::load(&path) {
                Ok(log) => log,
                Err(code) => return code,
            };
            let id = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let transcript = Transcript::of(&id, &log.events);
            let text = if format == ExportFormat::Md {
                transcript.markdown()
            } else {
                transcript.html()
            };
            crate::sanitize::visible(&text).into_owned()
        }
    };
    match output {
        Some(out) => write_out(&out, text.as_bytes()),
        None => crate::output::emit(&text),
    }
}

/// Writes an export to `path` (atomically, 0600); the exit code.
fn write_out(path: &Path, bytes: &[u8]) -> u8 {
    match crate::commands::manage::write_private(path, bytes) {
        Ok(()) => 0,
        Err(e) => {
            crate::output::say!("dsh: cannot write {}: {e}", path.display());
            1
        }
    }
}

// ---------------------------------------------------------------------------
// the transcript, format-free

/// A session as the export shows it, in log order.
struct Transcript {
    id: String,
    title: Option<String>,
    started_ms: u64,
    models: Vec<String>,
    cwd: Option<String>,
    items: Vec<Item>,
    turns: u64,
    tool_calls: u64,
    tokens: dsh_session::TokenTotals,
}

/// One thing that happened.
enum Item {
    /// A message to the agent: the user's (`who` = `User`), or a plugin's,
    /// another agent's, a steering or context message.
    Message { who: String, text: String },
    /// The assistant's markdown.
    Answer(String),
    /// A tool call and, once answered, its result.
    Call(Box<Call>),
    /// An error: the text (with its code).
    Error(String),
    /// A note about the session itself (a compaction, a rewind, a
    /// sub-agent, a turn that stopped).
    Note(String),
}

struct Call {
    name: String,
    /// The arguments as shown: pretty JSON without the texts the diff
    /// shows, or the raw text when they are not JSON.
    arguments: String,
    diff: Option<String>,
    result: Option<Outcome>,
}

struct Outcome {
    text: String,
    is_error: bool,
    code: Option<String>,
}

impl Transcript {
    fn of(id: &str, events: &[SessionEvent]) -> Self {
        let summary = Summary::of(events);
        let cwd = summary.cwd.clone();
        let cwd_text = cwd.clone().unwrap_or_default();
        let mut items = Vec::new();
        let mut calls: HashMap<String, usize> = HashMap::new();
        let mut last_error: Option<String> = None;
        for event in events {
            match &event.data {
                EventPayload::UserMessage(MessageEvent { content, source }) => {
                    items.push(Item::Message {
                        who: who(source, "User"),
                        text: texts(content),
                    });
                }
                EventPayload::ContextMessage(MessageEvent { content, source }) => {
                    items.push(Item::Message {
                        who: format!("Context ({})", who(source, "user")),
                        text: texts(content),
                    });
                }
                EventPayload::SteeringMessage(SteeringEvent {
                    content, source, ..
                }) => {
                    items.push(Item::Message {
                        who: format!("{} (while the turn ran)", who(source, "User")),
                        text: texts(content),
                    });
                }
                EventPayload::AssistantMessage(AssistantMessageEvent { content, .. }) => {
                    let text = texts(content);
                    if !text.trim().is_empty() {
                        items.push(Item::Answer(text));
                    }
                }
                EventPayload::ToolCall(ToolCallEvent { call, .. }) => {
                    let diff =
                        dsh_tui::transcript::unified_diff(&call.name, &call.arguments, &cwd_text);
                    let arguments = shown_arguments(&call.arguments, diff.is_some());
                    calls.insert(call.call_id.as_str().to_string(), items.len());
                    items.push(Item::Call(Box::new(Call {
                        name: call.name.clone(),
                        arguments,
                        diff,
                        result: None,
                    })));
                }
                EventPayload::ToolResult(ToolResultEvent { result, .. }) => {
                    let outcome = Outcome {
                        text: texts(&result.content),
                        is_error: result.is_error,
                        code: result.code().map(str::to_string),
                    };
                    match calls.get(result.call_id.as_str()).map(|i| &mut items[*i]) {
                        Some(Item::Call(call)) => {
                            // A file change's diff stands for a success.
                            if result.is_error {
                                call.diff = None;
                            }
                            call.result = Some(outcome);
                        }
                        _ => items.push(Item::Note(format!(
                            "a result for call {} (its call is not in the log)",
                            result.call_id.as_str()
                        ))),
                    }
                }
                EventPayload::Error(ErrorEvent { message, code, .. }) => {
                    last_error = Some(message.clone());
                    items.push(Item::Error(with_code(message, code.as_deref())));
                }
                EventPayload::TurnEnd(TurnEndEvent { turn, reason }) => {
                    let why = match reason {
                        TurnEndReason::Completed => None,
                        TurnEndReason::Error { message, code } => (last_error.as_ref()
                            != Some(message))
                        .then(|| format!("an error: {}", with_code(message, code.as_deref()))),
                        TurnEndReason::Aborted { reason } => Some(format!(
                            "aborted{}",
                            reason
                                .as_deref()
                                .map(|r| format!(" ({r})"))
                                .unwrap_or_default()
                        )),
                        TurnEndReason::MaxSteps => Some("the step limit".to_string()),
                        TurnEndReason::Interrupted => {
                            Some("an interruption (the process died)".to_string())
                        }
                        TurnEndReason::Disposed => Some("the session closing".to_string()),
                        other => Some(other.kind().to_string()),
                    };
                    if let Some(why) = why {
                        items.push(Item::Note(format!("Turn {turn} stopped: {why}.")));
                    }
                    last_error = None;
                }
                EventPayload::Compaction(c) => items.push(Item::Note(format!(
                    "The history up to here was summarised ({} characters) to save context.",
                    c.summary.chars().count()
                ))),
                EventPayload::Rewind(r) => items.push(Item::Note(format!(
                    "The conversation was rewound to before turn {}; what follows replaces turns {} on.",
                    r.to_turn, r.to_turn
                ))),
                EventPayload::Other { kind, data }
                    if kind == dsh::subagents::SUBAGENT_SPAWNED_EVENT =>
                {
                    let field = |k: &str| data.get(k).and_then(Value::as_str).unwrap_or("?");
                    items.push(Item::Note(format!(
                        "Sub-agent \"{}\" ran in session {}.",
                        field("description"),
                        field("sessionId")
                    )));
                }
                EventPayload::Other { kind, data } if kind == dsh_controller::FORK_EVENT => {
                    let from = data.get("from").and_then(Value::as_str).unwrap_or("?");
                    items.push(Item::Note(format!("Forked from session {from}.")));
                }
                _ => {}
            }
        }
        Transcript {
            id: id.to_string(),
            title: summary.title,
            started_ms: events.first().map_or(0, |e| e.time),
            models: summary.models,
            cwd,
            items,
            turns: summary.turns,
            tool_calls: calls.len() as u64,
            tokens: dsh_session::session_stats(events).tokens,
        }
    }

    /// The title: the model's, else the first prompt cut short.
    fn title(&self) -> String {
        self.title
            .clone()
            .unwrap_or_else(|| format!("Session {}", self.id))
    }

    /// The header's facts, as (label, value).
    fn facts(&self) -> Vec<(&'static str, String)> {
        let mut facts = vec![
            ("Session", self.id.clone()),
            (
                "Started",
                format!(
                    "{} UTC",
                    crate::commands::session::format_utc(self.started_ms)
                ),
            ),
        ];
        if !self.models.is_empty() {
            facts.push(("Model", self.models.join(", ")));
        }
        if let Some(cwd) = &self.cwd {
            facts.push(("Directory", cwd.clone()));
        }
        facts.push((
            "Turns",
            format!("{}, {} tool calls", self.turns, self.tool_calls),
        ));
        facts
    }

    /// The token totals as (label, value), reported kinds only.
    fn usage(&self) -> Vec<(&'static str, String)> {
        let t = &self.tokens;
        let mut rows = vec![
            ("Input (uncached)", t.input.to_string()),
            ("Output", t.output.to_string()),
        ];
        for (label, n) in [
            ("Cache read", t.cache_read),
            ("Cache write", t.cache_write),
            ("Reasoning", t.reasoning),
        ] {
            if let Some(n) = n {
                rows.push((label, n.to_string()));
            }
        }
        rows
    }

    // ---- markdown ----

    fn markdown(&self) -> String {
        let mut out = format!("# {}\n\n", one_line(&self.title()));
        for (label, value) in self.facts() {
            let _ = writeln!(out, "- **{label}:** {}", inline_code(&value));
        }
        out.push('\n');
        let mut last_who: Option<&str> = None;
        for item in &self.items {
            match item {
                Item::Message { who, text } => {
                    let _ = write!(out, "---\n\n## {who}\n\n{}\n\n", text.trim_end());
                    last_who = Some(who);
                }
                Item::Answer(text) => {
                    if last_who != Some("Assistant") {
                        out.push_str("## Assistant\n\n");
                        last_who = Some("Assistant");
                    }
                    let _ = write!(out, "{}\n\n", text.trim_end());
                }
                Item::Call(call) => {
                    if last_who != Some("Assistant") {
                        out.push_str("## Assistant\n\n");
                        last_who = Some("Assistant");
                    }
                    let _ = write!(
                        out,
                        "**Tool call: `{}`**\n\n{}",
                        call.name.replace('`', "'"),
                        fenced("json", &call.arguments)
                    );
                    if let Some(diff) = &call.diff {
                        out.push_str(&fenced("diff", diff));
                    }
                    match &call.result {
                        Some(r) => {
                            let (shown, cut) = head_lines(&r.text, RESULT_LINES);
                            let label = match (r.is_error, &r.code) {
                                (true, Some(code)) => format!("Result (error, {code}):"),
                                (true, None) => "Result (error):".to_string(),
                                (false, _) => "Result:".to_string(),
                            };
                            let _ = write!(out, "{label}\n\n{}", fenced("text", shown));
                            if let Some(note) = cut_note(cut, &self.id) {
                                let _ = write!(out, "*{note}*\n\n");
                            }
                        }
                        None => out.push_str("*(no result was logged)*\n\n"),
                    }
                }
                Item::Error(text) => {
                    let _ = write!(out, "> **Error:** {}\n\n", one_line(text));
                }
                Item::Note(text) => {
                    let _ = write!(out, "*{}*\n\n", one_line(text));
                }
            }
        }
        out.push_str("---\n\n## Usage\n\n| tokens | |\n|---|---:|\n");
        for (label, value) in self.usage() {
            let _ = writeln!(out, "| {label} | {value} |");
        }
        out
    }

    // ---- html ----

    fn html(&self) -> String {
        let title = self.title();
        let mut out = String::new();
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        let _ = writeln!(out, "<title>{}</title>", escape(&title));
        let _ = writeln!(out, "<style>{CSS}</style>\n</head>\n<body>\n<main>");
        let _ = writeln!(out, "<h1>{}</h1>\n<dl class=\"facts\">", escape(&title));
        for (label, value) in self.facts() {
            let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", escape(label), escape(&value));
        }
        out.push_str("</dl>\n");
        let mut open_answer = false;
        let close = |out: &mut String, open: &mut bool| {
            if *open {
                out.push_str("</section>\n");
                *open = false;
            }
        };
        for item in &self.items {
            match item {
                Item::Message { who, text } => {
                    close(&mut out, &mut open_answer);
                    let _ = write!(
                        out,
                        "<section class=\"msg user\"><h2>{}</h2>\n{}</section>\n",
                        escape(who),
                        markdown_html(text)
                    );
                }
                Item::Answer(text) => {
                    if !open_answer {
                        out.push_str("<section class=\"msg assistant\"><h2>Assistant</h2>\n");
                        open_answer = true;
                    }
                    out.push_str(&markdown_html(text));
                }
                Item::Call(call) => {
                    if !open_answer {
                        out.push_str("<section class=\"msg assistant\"><h2>Assistant</h2>\n");
                        open_answer = true;
                    }
                    let failed = call.result.as_ref().is_some_and(|r| r.is_error);
                    let _ = write!(
                        out,
                        "<div class=\"call{}\"><div class=\"tool\">Tool call: <code>{}</code></div>\n<pre class=\"args\">{}</pre>\n",
                        if failed { " failed" } else { "" },
                        escape(&call.name),
                        escape(&call.arguments)
                    );
                    if let Some(diff) = &call.diff {
                        out.push_str(&diff_html(diff));
                    }
                    match &call.result {
                        Some(r) => {
                            let (shown, cut) = head_lines(&r.text, RESULT_LINES);
                            let label = match (r.is_error, &r.code) {
                                (true, Some(code)) => format!("Result (error, {code})"),
                                (true, None) => "Result (error)".to_string(),
                                (false, _) => "Result".to_string(),
                            };
                            let _ = write!(
                                out,
                                "<div class=\"label\">{}</div>\n<pre class=\"result\">{}</pre>\n",
                                escape(&label),
                                escape(shown)
                            );
                            if let Some(note) = cut_note(cut, &self.id) {
                                let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(&note));
                            }
                        }
                        None => out.push_str("<p class=\"note\">(no result was logged)</p>\n"),
                    }
                    out.push_str("</div>\n");
                }
                Item::Error(text) => {
                    let _ = writeln!(
                        out,
                        "<p class=\"error\"><strong>Error:</strong> {}</p>",
                        escape(text)
                    );
                }
                Item::Note(text) => {
                    let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(text));
                }
            }
        }
        close(&mut out, &mut open_answer);
        out.push_str("<section class=\"usage\"><h2>Usage</h2>\n<table>\n");
        for (label, value) in self.usage() {
            let _ = writeln!(
                out,
                "<tr><th>{}</th><td>{}</td></tr>",
                escape(label),
                escape(&value)
            );
        }
        out.push_str("</table></section>\n</main>\n</body>\n</html>\n");
        out
    }
}

/// What the header needs from the log, in one pass.
struct Summary {
    title: Option<String>,
    models: Vec<String>,
    cwd: Option<String>,
    turns: u64,
}

impl Summary {
    fn of(events: &[SessionEvent]) -> Self {
        let mut s = Summary {
            title: None,
            models: Vec::new(),
            cwd: None,
            turns: 0,
        };
        let mut first_prompt = None;
        for e in events {
            match &e.data {
                EventPayload::TurnStart(_) => s.turns += 1,
                EventPayload::UserMessage(MessageEvent { content, .. })
                    if first_prompt.is_none() =>
                {
                    first_prompt = Some(texts(content));
                }
                EventPayload::Other { kind, data } => {
                    let text = |k: &str| data.get(k).and_then(Value::as_str).map(str::to_string);
                    if kind == dsh::title::TITLE_KIND {
                        s.title = text("title");
                    } else if kind == dsh_session::WORKSPACE_EVENT {
                        s.cwd = text("cwd").or(s.cwd.take());
                    } else if kind == dsh_agent_loop::REQUEST_OPTIONS_KIND {
                        if let Some(model) = text("model") {
                            if !s.models.contains(&model) {
                                s.models.push(model);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        if s.title.is_none() {
            s.title = first_prompt
                .as_deref()
                .map(dsh::title::offline_title)
                .filter(|t| !t.is_empty());
        }
        s
    }
}

/// Who sent a message: `user` as `default`, else the plugin or agent.
fn who(source: &dsh_llm::MessageSource, default: &str) -> String {
    match source {
        dsh_llm::MessageSource::User => default.to_string(),
        dsh_llm::MessageSource::Plugin { plugin } => format!("Plugin {plugin}"),
        dsh_llm::MessageSource::Agent { agent_id } => format!("Agent {agent_id}"),
        dsh_llm::MessageSource::Other { kind, .. } => kind.clone(),
    }
}

/// The text blocks of `content`, joined by blank lines; other blocks
/// (tool calls, which have events of their own; reasoning) are left out,
/// images named.
fn texts(content: &[ContentBlock]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::Image(b) => {
                parts.push(format!("*{}*", dsh_session::image_placeholder(b)))
            }
            ContentBlock::ToolResult(r) => parts.extend(
                r.content
                    .iter()
                    .filter_map(|c| c.as_text().map(str::to_string)),
            ),
            _ => {}
        }
    }
    parts.join("\n\n")
}

/// The arguments as shown: pretty JSON, without the texts a diff shows
/// (`with_diff`); the raw text when they are not JSON.
fn shown_arguments(arguments: &str, with_diff: bool) -> String {
    let Ok(mut value) = serde_json::from_str::<Value>(arguments) else {
        return arguments.to_string();
    };
    if with_diff {
        if let Some(map) = value.as_object_mut() {
            for key in [
                "content",
                "old_string",
                "new_string",
                "file_text",
                "old_str",
                "new_str",
            ] {
                if map.remove(key).is_some() {
                    map.insert(key.to_string(), Value::String("(in the diff)".into()));
                }
            }
        }
    }
    serde_json::to_string_pretty(&value).unwrap_or_else(|_| arguments.to_string())
}

fn with_code(message: &str, code: Option<&str>) -> String {
    match code {
        Some(code) => format!("[{code}] {message}"),
        None => message.to_string(),
    }
}

/// The first `n` lines of `text` and how many lines follow them.
fn head_lines(text: &str, n: usize) -> (&str, usize) {
    match text.match_indices('\n').nth(n.saturating_sub(1)) {
        Some((at, _)) if n > 0 => (&text[..=at], text[at + 1..].lines().count()),
        _ => (text, 0),
    }
}

/// The note under a result cut short, if it was.
fn cut_note(cut: usize, id: &str) -> Option<String> {
    (cut > 0).then(|| {
        format!(
            "… {cut} more line(s) not shown; `dsh session show --full {id}` prints the whole result."
        )
    })
}

/// `text` in a fenced block whose fence is longer than any backtick run
/// inside, ending with a blank line.
fn fenced(lang: &str, text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest.max(2) + 1);
    let body = text.trim_end_matches('\n');
    format!("{fence}{lang}\n{body}\n{fence}\n\n")
}

/// `text` as inline code (a fence of backticks longer than any inside).
fn inline_code(text: &str) -> String {
    let text = one_line(text);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// `text` on one line (line breaks as spaces).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` safe inside HTML text and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A unified diff as a `<pre>`, each line classed (`add`, `del`, `hunk`).
fn diff_html(diff: &str) -> String {
    let mut out = String::from("<pre class=\"diff\">");
    for line in diff.lines() {
        let class = if line.starts_with("+++") || line.starts_with("---") {
            "file"
        } else if line.starts_with('+') {
            "add"
        } else if line.starts_with('-') {
            "del"
        } else if line.starts_with("@@") {
            "hunk"
        } else {
            "ctx"
        };
        let _ = writeln!(out, "<span class=\"{class}\">{}</span>", escape(line));
    }
    out.push_str("</pre>\n");
    out
}

/// Markdown as HTML, safe to embed: raw HTML (blocks and inline) becomes
/// text (a block shown as code), images become links, and a link's
/// target is kept only for `http(s)`, `mailto`, fragments and relative
/// paths.
fn markdown_html(text: &str) -> String {
    use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(text, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::HtmlBlock) => Event::Start(Tag::CodeBlock(CodeBlockKind::Indented)),
        Event::End(TagEnd::HtmlBlock) => Event::End(TagEnd::CodeBlock),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        })
        | Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_url(dest_url),
            title,
            id,
        }),
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

/// `url` when it is `http(s)`, `mailto`, a fragment or a relative path;
/// `#` otherwise (`javascript:`, `data:`, `file:` …).
fn safe_url(url: pulldown_cmark::CowStr<'_>) -> pulldown_cmark::CowStr<'_> {
    let lower = url.trim().to_ascii_lowercase();
    let scheme_end = lower.find([':', '/', '?', '#']);
    let has_scheme = scheme_end.is_some_and(|i| lower[i..].starts_with(':'));
    let allowed = !has_scheme
        || ["http://", "https://", "mailto:"]
            .iter()
            .any(|p| lower.starts_with(p));
    if allowed {
        url
    } else {
        "#".into()
    }
}

/// The page's style: readable, light and dark, nothing fetched.
const CSS: &str = "\
:root{color-scheme:light dark;--fg:#1f2328;--bg:#fff;--muted:#656d76;--box:#f6f8fa;--line:#d0d7de;--add:#1a7f37;--del:#cf222e;--addbg:#dafbe1;--delbg:#ffebe9}\
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#8d96a0;--box:#161b22;--line:#30363d;--add:#3fb950;--del:#f85149;--addbg:#12261e;--delbg:#25171c}}\
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.55 system-ui,-apple-system,'Segoe UI',sans-serif}\
main{max-width:900px;margin:0 auto;padding:24px}\
h1{font-size:1.6em;margin:0 0 .4em}h2{font-size:1em;text-transform:uppercase;letter-spacing:.05em;color:var(--muted);margin:0 0 .5em}\
.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;color:var(--muted);margin:0 0 24px}.facts dt{font-weight:600}.facts dd{margin:0;word-break:break-all}\
.msg{border-top:1px solid var(--line);padding:16px 0}.user{background:var(--box);padding:16px;border-radius:8px;border:1px solid var(--line);margin:16px 0}\
pre{background:var(--box);border:1px solid var(--line);border-radius:6px;padding:10px;overflow-x:auto;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre}\
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em}\
.call{border-left:3px solid var(--line);padding-left:12px;margin:12px 0}.call.failed{border-left-color:var(--del)}.tool,.label{font-weight:600;margin:4px 0}\
.diff span{display:block}.diff .add{color:var(--add);background:var(--addbg)}.diff .del{color:var(--del);background:var(--delbg)}.diff .hunk,.diff .file{color:var(--muted)}\
.note{color:var(--muted);font-style:italic}.error{color:var(--del)}\
table{border-collapse:collapse}th,td{border:1px solid var(--line);padding:4px 10px;text-align:left}td{text-align:right}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_and_unsafe_links_do_not_survive() {
        let html = markdown_html(
            "hi <script>alert(1)</script> [a](javascript:alert(1)) [b](https://x.test/) ![c](https://img.test/c.png)\n\n<div onclick=\"x\">raw</div>\n",
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("<div"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains("href=\"https://x.test/\""), "{html}");
        assert!(!html.contains("<img") && !html.contains("src="), "{html}");
        assert!(html.contains("href=\"https://img.test/c.png\""), "{html}");
    }

    #[test]
    fn fences_outgrow_the_backticks_inside() {
        assert_eq!(fenced("text", "a\n"), "```text\na\n```\n\n");
        assert_eq!(fenced("", "x ```` y"), "`````\nx ```` y\n`````\n\n");
        assert_eq!(inline_code("a`b"), "``a`b``");
        assert_eq!(head_lines("1\n2\n3\n4\n", 2), ("1\n2\n", 2));
        assert_eq!(head_lines("1\n2", 5), ("1\n2", 0));
        assert_eq!(safe_url("foo/bar.md".into()).as_ref(), "foo/bar.md");
        assert_eq!(safe_url("Data:text/html,x".into()).as_ref(), "#");
        assert_eq!(safe_url("mailto:a@b".into()).as_ref(), "mailto:a@b");
    }
}
