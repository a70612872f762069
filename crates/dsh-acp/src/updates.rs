//! A session's events as `session/update` notifications.
//!
//! Text deltas become `agent_message_chunk`, reasoning deltas
//! `agent_thought_chunk`; a logged tool call becomes `tool_call` (status
//! `pending`, a title from the tool and its arguments, a `kind`, the file
//! as its location for file tools, the arguments as `rawInput`), a
//! `tool_call_update` with status `in_progress` when it starts running
//! (after any permission request), its result `tool_call_update` (`completed` or `failed`, the result text; for
//! a successful `write`, `edit` or `str_replace_editor` change, a `diff`
//! item with the file's text before and after: as the client took it when
//! it serves files, else as read from the disk around the call);
//! `todo/update` becomes a `plan`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    ContentBlock as AcpBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionNotification, SessionUpdate, TextContent, ToolCall as AcpCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind,
};
use dsh::Stack;
use dsh_kernel::sync::lock;
use dsh_kernel::Registration;
use dsh_llm::{ContentBlock, MessageSource, StreamChunk};
use dsh_session::{EventPayload, SessionEvent};
use dsh_tool_fs::EditorFiles;
use dsh_tools::{ToolCall, ToolResult};
use serde_json::Value;

use crate::files::ClientFiles;
use crate::Conn;

/// The ACP kind of a dsh tool.
pub fn kind_of(tool: &str) -> ToolKind {
    match tool {
        "read" | "skill" => ToolKind::Read,
        "write" | "edit" | "str_replace_editor" => ToolKind::Edit,
        "glob" | "grep" => ToolKind::Search,
        "bash" | "bash_output" | "bash_kill" | "job_output" | "job_list" | "job_kill" => {
            ToolKind::Execute
        }
        "todo_write" => ToolKind::Think,
        "exit_plan_mode" => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

/// The title of a call: what it does in a few words.
pub fn title_of(call: &ToolCall) -> String {
    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    let s = |k: &str| {
        args.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match call.name.as_str() {
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

/// The files a call touches, for the client to follow.
fn locations_of(call: &ToolCall, cwd: &Path) -> Vec<ToolCallLocation> {
    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    let key = match call.name.as_str() {
        "read" | "write" | "edit" => "file_path",
        "str_replace_editor" | "glob" | "grep" => "path",
        _ => return Vec::new(),
    };
    let Some(path) = args.get(key).and_then(Value::as_str) else {
        return Vec::new();
    };
    let mut location = ToolCallLocation::new(cwd.join(path));
    if let Some(line) = args.get("offset").and_then(Value::as_u64) {
        location = location.line(u32::try_from(line).ok());
    }
    vec![location]
}

fn text(t: impl Into<String>) -> AcpBlock {
    AcpBlock::Text(TextContent::new(t.into()))
}

fn notify(cx: &Conn, session: &str, update: SessionUpdate) {
    if let Err(e) = cx.send_notification(SessionNotification::new(session.to_string(), update)) {
        tracing::debug!(target: "dsh_acp", "session/update not sent: {e}");
    }
}

/// Sends `reply` as agent text (a slash command's answer).
pub(crate) fn say(cx: &Conn, session: &str, reply: &str) {
    notify(
        cx,
        session,
        SessionUpdate::AgentMessageChunk(ContentChunk::new(text(reply))),
    );
}

/// The `tool_call` for `call`.
fn call_update(call: &ToolCall, cwd: &Path, status: ToolCallStatus) -> SessionUpdate {
    SessionUpdate::ToolCall(
        AcpCall::new(call.call_id.as_str().to_string(), title_of(call))
            .kind(kind_of(&call.name))
            .status(status)
            .locations(locations_of(call, cwd))
            .raw_input(serde_json::from_str::<Value>(&call.arguments).ok()),
    )
}

/// The `tool_call_update` for `result`, with `diff` when given.
fn result_update(result: &ToolResult, diff: Option<Diff>) -> SessionUpdate {
    let mut content = vec![ToolCallContent::from(text(result.text()))];
    if let Some(d) = diff {
        content.push(ToolCallContent::Diff(d));
    }
    let status = if result.is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        result.call_id.as_str().to_string(),
        ToolCallUpdateFields::new().status(status).content(content),
    ))
}

/// The `plan` of a `todo/update` event's data.
fn plan_update(data: &Value) -> Option<SessionUpdate> {
    let todos = dsh::tools::todo::todos_of(data)?;
    let entries = todos
        .into_iter()
        .map(|t| {
            let status = match t.status {
                dsh::tools::TodoStatus::Pending => PlanEntryStatus::Pending,
                dsh::tools::TodoStatus::InProgress => PlanEntryStatus::InProgress,
                dsh::tools::TodoStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(t.content, PlanEntryPriority::Medium, status)
        })
        .collect();
    Some(SessionUpdate::Plan(Plan::new(entries)))
}

/// Streams the dsh session `dsh_id` of `stack` to the client as updates
/// of ACP session `id` from now on; undo stops it. `files`: the client's
/// files, whose writes carry their own before and after.
pub(crate) fn stream(
    cx: Conn,
    id: String,
    dsh_id: String,
    stack: &Arc<Stack>,
    files: Option<Arc<ClientFiles>>,
) -> Registration {
    let cwd = stack.resolved.cwd.clone();
    // The text of each file a write or edit is about to change.
    let before: Mutex<HashMap<String, (PathBuf, Option<String>)>> = Mutex::new(HashMap::new());
    let running = started(cx.clone(), id.clone(), dsh_id.clone(), stack);
    let events = stack.store.on_event().on(move |(session, event)| {
        if session.id().as_str() != dsh_id {
            return;
        }
        match &event.data {
            EventPayload::AssistantChunk(c) => match &c.chunk {
                StreamChunk::TextDelta { text: t, .. } => notify(
                    &cx,
                    &id,
                    SessionUpdate::AgentMessageChunk(ContentChunk::new(text(t.clone()))),
                ),
                StreamChunk::ReasoningDelta { text: t, .. } => notify(
                    &cx,
                    &id,
                    SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(t.clone()))),
                ),
                _ => {}
            },
            EventPayload::ToolCall(c) => {
                let call = &c.call;
                if let Some(path) = changed_file(call, &cwd) {
                    // The client's writes carry their old text; the disk's
                    // is read now.
                    let old = match &files {
                        Some(f) if f.writes() => None,
                        _ => std::fs::read_to_string(&path).ok(),
                    };
                    lock(&before).insert(call.call_id.as_str().to_string(), (path, old));
                }
                notify(&cx, &id, call_update(call, &cwd, ToolCallStatus::Pending));
            }
            EventPayload::ToolResult(r) => {
                let result = &r.result;
                let diff = lock(&before)
                    .remove(result.call_id.as_str())
                    .filter(|_| !result.is_error)
                    .and_then(|(path, old)| {
                        if let Some(f) = files.as_ref().filter(|f| f.writes()) {
                            let (old, new) = f.take_change(&path)?;
                            return Some(Diff::new(path, new).old_text(old));
                        }
                        let new = std::fs::read_to_string(&path).ok()?;
                        Some(Diff::new(path, new).old_text(old))
                    });
                notify(&cx, &id, result_update(result, diff));
            }
            EventPayload::Other { kind, data } if kind == dsh::tools::todo::TODO_UPDATE_EVENT => {
                if let Some(update) = plan_update(data) {
                    notify(&cx, &id, update);
                }
            }
            _ => {}
        }
    });
    Registration::merge(vec![running, events])
}

/// Sends `tool_call_update` with status `in_progress` when a call of the
/// dsh session `dsh_id` starts running: after the guards and any
/// permission request, before its body (a `tools/execute` listener).
fn started(cx: Conn, id: String, dsh_id: String, stack: &Stack) -> Registration {
    stack
        .tools
        .on_execute()
        .prepend(move |(call, env): dsh_tools::Execution, next| {
            let ours = env
                .extensions
                .get::<Arc<dyn dsh_agent::Agent>>()
                .is_some_and(|a| a.session().id().as_str() == dsh_id);
            if ours {
                notify(
                    &cx,
                    &id,
                    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        call.call_id.as_str().to_string(),
                        ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                    )),
                );
            }
            next.run((call, env))
        })
}

/// The file a call changes: `write`'s and `edit`'s `file_path`,
/// `str_replace_editor`'s `path` for every command but `view`.
fn changed_file(call: &ToolCall, cwd: &Path) -> Option<PathBuf> {
    let args: Value = serde_json::from_str(&call.arguments).ok()?;
    let key = match call.name.as_str() {
        "write" | "edit" => "file_path",
        "str_replace_editor" if args.get("command")? != "view" => "path",
        _ => return None,
    };
    Some(cwd.join(args.get(key)?.as_str()?))
}

/// Replays a saved session to the client: the user's messages, the
/// model's text and reasoning, tool calls and their results (final
/// states; no diffs: the old texts are gone), the last todo list. A call's
/// relative path is located in `cwd` (the session's), as it was live.
pub(crate) fn replay(cx: &Conn, id: &str, events: &[SessionEvent], cwd: &Path) {
    let mut plan = None;
    for e in events {
        match &e.data {
            EventPayload::UserMessage(m) if m.source == MessageSource::User => {
                let t = crate::text_of(&m.content);
                notify(
                    cx,
                    id,
                    SessionUpdate::UserMessageChunk(ContentChunk::new(text(t))),
                );
            }
            EventPayload::AssistantMessage(m) => {
                for b in &m.content {
                    match b {
                        ContentBlock::Text(t) => notify(
                            cx,
                            id,
                            SessionUpdate::AgentMessageChunk(ContentChunk::new(text(
                                t.text.clone(),
                            ))),
                        ),
                        ContentBlock::Reasoning(r) => notify(
                            cx,
                            id,
                            SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(
                                r.text.clone(),
                            ))),
                        ),
                        ContentBlock::ToolCall(c) => {
                            notify(cx, id, call_update(c, cwd, ToolCallStatus::Pending));
                        }
                        _ => {}
                    }
                }
            }
            EventPayload::ToolResult(r) => notify(cx, id, result_update(&r.result, None)),
            EventPayload::Other { kind, data } if kind == dsh::tools::todo::TODO_UPDATE_EVENT => {
                plan = plan_update(data);
            }
            _ => {}
        }
    }
    if let Some(p) = plan {
        notify(cx, id, p);
    }
}
