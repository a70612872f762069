//! Session log events → UI events. One `Translator` per session, fed
//! every log event in order, live or replayed from a saved log; it keeps
//! what the UI events need across events (the turn's timings, the text
//! of a file before the call that changes it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_kernel::sync::lock;
use dsh_protocol::{ContentBlock, EventPayload, SessionEvent, StreamChunk};
use serde_json::Value;

use crate::event::{EventBody, FileDiff, TodoEntry};

/// One line saying what a tool call does: `Read src/lib.rs`, `Run
/// \`cargo test\`` (or the command's description), `Search \`fn main\``;
/// other tools by their name.
pub fn tool_title(name: &str, arguments: &str) -> String {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let s = |k: &str| {
        args.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match name {
        "read" => format!("Read {}", s("file_path")),
        "write" => format!("Write {}", s("file_path")),
        "edit" => format!("Edit {}", s("file_path")),
        "str_replace_editor" => format!("{} {}", s("command"), s("path")),
        "glob" => format!("Find `{}`", s("pattern")),
        "grep" => format!("Search `{}`", s("pattern")),
        "bash" => {
            let d = s("description");
            if d.is_empty() {
                format!("Run `{}`", s("command"))
            } else {
                d
            }
        }
        "subagent" | "subagent_fork" => format!("Subagent: {}", s("description")),
        other => other.to_string(),
    }
}

/// The file a call of `name` with `arguments` changes, resolved against
/// `cwd`: `write` and `edit` (`file_path`), `str_replace_editor` other
/// than `view` (`path`).
pub fn changed_file(name: &str, arguments: &str, cwd: &Path) -> Option<PathBuf> {
    let args: Value = serde_json::from_str(arguments).ok()?;
    let key = match name {
        "write" | "edit" => "file_path",
        "str_replace_editor" if args.get("command")? != "view" => "path",
        _ => return None,
    };
    Some(cwd.join(args.get(key)?.as_str()?))
}

/// The UI events a saved log stands for, in order: numbered from 0, each
/// stamped with its log event's time (so timings read as they happened).
/// Diffs are not rebuilt (the files may have changed since); a renderer
/// shows an edit from its arguments instead.
pub fn replay(events: &[SessionEvent]) -> Vec<crate::Event> {
    let mut translator = Translator::new(PathBuf::new(), false, None);
    let mut out = Vec::new();
    for event in events {
        for body in translator.translate(event) {
            out.push(crate::Event {
                seq: out.len() as u64,
                time: event.time,
                body,
            });
        }
    }
    out
}

/// Changes written through an editor (`dsh acp` with a client that
/// serves writes): the text before and after, by path, until a diff
/// takes them.
#[derive(Default)]
pub(crate) struct WrittenChanges(Mutex<HashMap<PathBuf, (Option<String>, String)>>);

impl WrittenChanges {
    pub(crate) fn record(&self, path: &Path, old: Option<String>, new: String) {
        lock(&self.0).insert(path.to_path_buf(), (old, new));
    }

    fn take(&self, path: &Path) -> Option<(Option<String>, String)> {
        lock(&self.0).remove(path)
    }
}

/// What the current turn has seen so far, for its timings.
#[derive(Default)]
struct TurnClock {
    started: Option<u64>,
    first_token: Option<u64>,
    output_tokens: u64,
    input_tokens: u64,
    cache_read: Option<u64>,
    finish: Option<String>,
}

/// Turns one session's log events into UI events.
pub(crate) struct Translator {
    cwd: PathBuf,
    /// Live: the disk is read for diffs. Replaying: no diffs (the files
    /// changed since).
    live: bool,
    written: Option<Arc<WrittenChanges>>,
    /// Calls that change a file: the path and its text before the call.
    before: HashMap<String, (PathBuf, Option<String>)>,
    /// The tool of each call still without a result.
    names: HashMap<String, String>,
    /// The title of each call still without a result.
    titles: HashMap<String, String>,
    /// What the agent is doing, as last told ([`EventBody::Activity`]).
    activity: Option<(String, Option<String>)>,
    clock: TurnClock,
}

impl Translator {
    /// A translator for a session in `cwd`. `written`: changes an editor
    /// made (they replace the disk's before and after).
    pub(crate) fn new(cwd: PathBuf, live: bool, written: Option<Arc<WrittenChanges>>) -> Self {
        Self {
            cwd,
            live,
            written,
            before: HashMap::new(),
            names: HashMap::new(),
            titles: HashMap::new(),
            activity: None,
            clock: TurnClock::default(),
        }
    }

    /// The UI events `event` stands for, in order (often none).
    pub(crate) fn translate(&mut self, event: &SessionEvent) -> Vec<EventBody> {
        let mut out = Vec::new();
        match &event.data {
            EventPayload::TurnStart(t) => {
                self.clock = TurnClock {
                    started: Some(event.time),
                    ..TurnClock::default()
                };
                out.push(EventBody::TurnStarted { turn: t.turn });
            }
            EventPayload::UserMessage(m) => out.push(EventBody::UserMessage {
                text: text_of(&m.content),
                source: m.source.clone(),
                steering: false,
            }),
            EventPayload::SteeringMessage(m) => out.push(EventBody::UserMessage {
                text: text_of(&m.content),
                source: m.source.clone(),
                steering: true,
            }),
            EventPayload::AssistantChunk(c) => match &c.chunk {
                StreamChunk::TextDelta { text, .. } => {
                    self.clock.first_token.get_or_insert(event.time);
                    out.push(EventBody::MessageDelta { text: text.clone() });
                }
                StreamChunk::ReasoningDelta { text, .. } => {
                    self.clock.first_token.get_or_insert(event.time);
                    out.push(EventBody::ReasoningDelta { text: text.clone() });
                }
                StreamChunk::Finish { reason } => {
                    self.clock.finish = Some(reason.kind().to_string());
                }
                _ => {}
            },
            EventPayload::AssistantMessage(m) => out.push(EventBody::MessageCompleted {
                text: m
                    .content
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .collect::<Vec<_>>()
                    .join(""),
            }),
            EventPayload::ToolCall(c) => {
                let call = &c.call;
                if self.live {
                    if let Some(path) = changed_file(&call.name, &call.arguments, &self.cwd) {
                        let old = read_for_diff(&path);
                        self.before
                            .insert(call.call_id.as_str().to_string(), (path, old));
                    }
                }
                self.names
                    .insert(call.call_id.as_str().to_string(), call.name.clone());
                self.titles.insert(
                    call.call_id.as_str().to_string(),
                    tool_title(&call.name, &call.arguments),
                );
                out.push(EventBody::ToolStarted {
                    call_id: call.call_id.as_str().to_string(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    title: tool_title(&call.name, &call.arguments),
                });
            }
            EventPayload::ToolResult(r) => {
                let result = &r.result;
                let diff = self
                    .before
                    .remove(result.call_id.as_str())
                    .filter(|_| !result.is_error)
                    .and_then(|(path, old)| self.diff(path, old));
                out.push(EventBody::ToolFinished {
                    call_id: result.call_id.as_str().to_string(),
                    name: {
                        self.titles.remove(result.call_id.as_str());
                        self.names
                            .remove(result.call_id.as_str())
                            .unwrap_or_default()
                    },
                    is_error: result.is_error,
                    output: result.text(),
                    diff,
                });
            }
            EventPayload::Usage(u) => {
                let count = |n: i64| u64::try_from(n).unwrap_or(0);
                let (input, output) = (count(u.usage.input_tokens), count(u.usage.output_tokens));
                let cache = u.usage.cache_read_tokens.map(count);
                self.clock.output_tokens += output;
                self.clock.input_tokens += input;
                if let Some(c) = cache {
                    *self.clock.cache_read.get_or_insert(0) += c;
                }
                out.push(EventBody::Usage {
                    input_tokens: input,
                    output_tokens: output,
                    cache_read_tokens: cache,
                });
            }
            EventPayload::Error(e) => out.push(EventBody::Error {
                code: e.code.clone(),
                message: e.message.clone(),
            }),
            EventPayload::TurnEnd(end) => {
                let clock = std::mem::take(&mut self.clock);
                let started = clock.started.unwrap_or(event.time);
                let streaming_ms = clock
                    .first_token
                    .map(|t| event.time.saturating_sub(t))
                    .filter(|ms| *ms > 0);
                out.push(EventBody::TurnEnded {
                    turn: end.turn,
                    reason: end.reason.clone(),
                    finish: clock.finish,
                    duration_ms: event.time.saturating_sub(started),
                    first_token_ms: clock.first_token.map(|t| t.saturating_sub(started)),
                    output_tokens: clock.output_tokens,
                    tokens_per_second: streaming_ms
                        .filter(|_| clock.output_tokens > 0)
                        .map(|ms| clock.output_tokens as f64 * 1000.0 / ms as f64),
                    cache_hit_rate: clock
                        .cache_read
                        .filter(|_| clock.input_tokens > 0)
                        .map(|c| c as f64 / clock.input_tokens as f64),
                });
            }
            EventPayload::Compaction(c) => out.push(EventBody::Compacted {
                tokens_after: c.tokens_after,
            }),
            EventPayload::Prune(p) => out.push(EventBody::Compacted {
                tokens_after: p.tokens_after,
            }),
            EventPayload::Rewind(r) => out.push(EventBody::Rewound { to_turn: r.to_turn }),
            EventPayload::Other { kind, data } => {
                if let Some(body) = other(kind, data) {
                    out.push(body);
                }
            }
            _ => {}
        }
        out
    }

    /// The [`EventBody::Activity`] to tell after `bodies` (translated from
    /// one log event of kind `kind`), when what the agent does changed.
    pub(crate) fn activity_after(&mut self, kind: &str, bodies: &[EventBody]) -> Option<EventBody> {
        let state = if kind == dsh_agent_loop::REQUEST_SENT_KIND {
            "thinking"
        } else {
            match bodies.last()? {
                EventBody::MessageDelta { .. } | EventBody::ReasoningDelta { .. } => "streaming",
                EventBody::TurnEnded { .. } => "idle",
                _ => return None,
            }
        };
        self.tell((state.to_string(), None))
    }

    /// The [`EventBody::Activity`] of call `call_id` starting to run, or of
    /// a question put (`waiting`).
    pub(crate) fn activity_of(&mut self, state: &str, call_id: Option<&str>) -> Option<EventBody> {
        let detail = call_id.and_then(|id| self.titles.get(id).cloned());
        self.tell((state.to_string(), detail))
    }

    fn tell(&mut self, now: (String, Option<String>)) -> Option<EventBody> {
        if self.activity.as_ref() == Some(&now) {
            return None;
        }
        self.activity = Some(now.clone());
        Some(EventBody::Activity {
            state: now.0,
            detail: now.1,
        })
    }

    /// The change a call made to `path`: what an editor recorded, else
    /// the disk now against `old`.
    fn diff(&self, path: PathBuf, old: Option<String>) -> Option<FileDiff> {
        let (old, new) = match self.written.as_ref().and_then(|w| w.take(&path)) {
            Some(change) => change,
            None => (old, read_for_diff(&path)?),
        };
        Some(FileDiff {
            path: path.display().to_string(),
            old_text: old,
            new_text: new,
        })
    }
}

/// The largest file whose text goes into a diff.
const DIFF_MAX_BYTES: u64 = 4 * 1024 * 1024;

/// The text of `path` for a diff: only a regular UTF-8 file of at most
/// [`DIFF_MAX_BYTES`]. Opened without blocking (a fifo put in its place
/// does not hang the session) and checked after opening.
fn read_for_diff(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > DIFF_MAX_BYTES {
        return None;
    }
    let mut text = String::new();
    file.take(DIFF_MAX_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The UI event of a log-only event dsh's plugins write, when it is one.
fn other(kind: &str, data: &Value) -> Option<EventBody> {
    let str_field = |k: &str| data.get(k).and_then(Value::as_str).map(str::to_string);
    let num = |k: &str| data.get(k).and_then(Value::as_u64);
    Some(match kind {
        k if k == dsh::tools::todo::TODO_UPDATE_EVENT => EventBody::Todos {
            items: dsh::tools::todo::todos_of(data)?
                .into_iter()
                .map(|t| TodoEntry {
                    content: t.content,
                    status: serde_json::to_value(t.status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                })
                .collect(),
        },
        k if k == dsh_agent_loop::CONTEXT_USAGE_KIND => EventBody::Context {
            tokens: num("tokens")?,
            window: num("window")?,
        },
        k if k == dsh::MODEL_CHANGE_EVENT => EventBody::ModelChanged {
            model: str_field("model")?,
        },
        k if k == dsh::SANDBOX_MODE_EVENT => EventBody::PermissionChanged {
            mode: str_field("mode")?,
        },
        k if k == dsh::plan::PLAN_MODE_EVENT => EventBody::PlanModeChanged {
            on: data.get("active").and_then(Value::as_bool)?,
        },
        k if k == dsh::title::TITLE_KIND => EventBody::TitleChanged {
            title: str_field("title")?,
        },
        k if k == dsh::checkpoints::RESTORED_KIND => {
            let paths = |k: &str| -> Vec<String> {
                data.get(k)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.as_str().map(str::to_string))
                    .collect()
            };
            EventBody::FilesRestored {
                action: str_field("action")?,
                turn: num("turn")?,
                restored: paths("restored"),
                deleted: paths("deleted"),
                user_changed: paths("userChanged"),
            }
        }
        _ => return None,
    })
}

/// The text blocks of `content`, joined by newlines.
pub(crate) fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}
