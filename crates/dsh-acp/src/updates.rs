//! A session's controller events as `session/update` notifications, and
//! its approval questions as `session/request_permission`.
//!
//! One task per ACP session (`forward`) reads the session's event stream
//! ([`dsh_controller::Session::subscribe`]) from its first event and sends
//! what the client shows, in the stream's order:
//!
//! - Text deltas become `agent_message_chunk`, reasoning deltas
//!   `agent_thought_chunk`.
//! - A tool call becomes `tool_call` (status `pending`, the event's title,
//!   a `kind`, the file as its location for file tools, the arguments as
//!   `rawInput`), then a `tool_call_update` with status `in_progress` when
//!   it starts running (after any permission request), then its result
//!   `tool_call_update` (`completed` or `failed`, the result text, and for
//!   a change to a file the event's `diff`: before and after).
//! - The todo list becomes a `plan`.
//! - A change of plan mode or permission mode the client did not make
//!   (`/plan`, `/permission`, an approved plan) becomes
//!   `current_mode_update`.
//! - An approval question becomes `session/request_permission` (allow
//!   once, allow always, reject); the client's choice answers it, and a
//!   cancelled or failed request denies.
//! - The model's `ask_user` questions become one
//!   `session/request_permission` each, in order: the question's options
//!   (kind `allow_once`, `optionId` the option's index from 0; an open
//!   question offers `skip`), plus `decline` (`reject_once`); the tool
//!   call's title is the question. A decline, a cancelled or a failed
//!   request declines the whole call. ACP has no free-text answer and
//!   picks one option, so a multi-select question gets one.
//! - Warnings go to dsh's stderr: ACP has no channel for them.
//!
//! A loaded session's history (the events before
//! [`dsh_controller::Session::live_from`]) is replayed the same way, with
//! the user's own messages as `user_message_chunk`, the calls' final
//! states without diffs, and only the last todo list, after the rest.
//!
//! The task counts what it has sent (`Forwarded`): a prompt answers only
//! once every update of its turn is out.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    ContentBlock as AcpBlock, ContentChunk, CurrentModeUpdate, Diff, PermissionOption,
    PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate,
    TextContent, ToolCall as AcpCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use dsh_controller::{
    Decision, Event, EventBody, FileDiff, QuestionAnswer, QuestionReply, QuestionSpec, Session,
    TodoEntry,
};
use dsh_kernel::sync::lock;
use dsh_protocol::MessageSource;
use serde_json::Value;
use tokio::sync::watch;

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

/// The files a call of `tool` with `arguments` touches, for the client to
/// follow; a relative path is located in `cwd`.
fn locations_of(tool: &str, arguments: &str, cwd: &Path) -> Vec<ToolCallLocation> {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let key = match tool {
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

/// Sends `update` for ACP session `session`; a connection that is gone
/// drops it.
pub(crate) fn notify(cx: &Conn, session: &str, update: SessionUpdate) {
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

/// The `plan` of a todo list.
fn plan_of(items: &[TodoEntry]) -> SessionUpdate {
    let entries = items
        .iter()
        .map(|t| {
            let status = match t.status.as_str() {
                "in_progress" => PlanEntryStatus::InProgress,
                "completed" => PlanEntryStatus::Completed,
                _ => PlanEntryStatus::Pending,
            };
            PlanEntry::new(t.content.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

/// The `tool_call_update` of a finished call: its status, its result
/// text and, when it changed a file, the diff.
fn result_update(
    call_id: &str,
    is_error: bool,
    output: &str,
    diff: Option<&FileDiff>,
) -> SessionUpdate {
    let mut content = vec![ToolCallContent::from(text(output))];
    if let Some(d) = diff {
        content.push(ToolCallContent::Diff(
            Diff::new(PathBuf::from(&d.path), d.new_text.clone()).old_text(d.old_text.clone()),
        ));
    }
    let status = if is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        call_id.to_string(),
        ToolCallUpdateFields::new().status(status).content(content),
    ))
}

/// How far the forwarding task of a session has got: every event numbered
/// below the count was sent (or had nothing to send).
#[derive(Clone)]
pub(crate) struct Forwarded(watch::Receiver<u64>);

impl Forwarded {
    /// Waits until every event numbered below `seq` was forwarded (at once
    /// when the session is closed and its stream read to the end).
    pub(crate) async fn reached(&self, seq: u64) {
        let mut rx = self.0.clone();
        // A task that ended (the sender dropped) forwards nothing more.
        let _ = rx.wait_for(|n| *n >= seq).await;
    }
}

/// Starts forwarding the events of `session` to the client as updates of
/// ACP session `id` (see the module docs), from the stream's first event;
/// a relative path of a call is located in `cwd`. `told` is the mode the
/// client was last told ([`crate::current_mode`]); the task updates it
/// when it tells another. The task ends when the session's stream does.
pub(crate) fn forward(
    cx: Conn,
    id: String,
    session: Arc<Session>,
    cwd: PathBuf,
    told: Arc<Mutex<String>>,
) -> Forwarded {
    let (tx, rx) = watch::channel(0);
    // With the log events: they are numbered too, and the count must pass
    // them (a command's last event may be one of them).
    let mut events = session.subscribe(Some(0)).with_log(true);
    let live_from = session.live_from();
    let mut stream = Stream {
        cx,
        id,
        session,
        cwd,
        told,
        live_from,
        arguments: HashMap::new(),
        replayed_plan: None,
        replaying: true,
    };
    tokio::spawn(async move {
        while let Some(item) = events.next().await {
            let next = match item {
                Ok(event) => {
                    stream.forward(&event);
                    event.seq + 1
                }
                Err(lost) => {
                    tracing::warn!(target: "dsh_acp", "{} session events were dropped before they were sent to the client", lost.to - lost.from);
                    lost.to
                }
            };
            if stream.replaying && next >= stream.live_from {
                stream.replay_done();
            }
            tx.send_replace(next);
        }
        tx.send_replace(u64::MAX);
    });
    Forwarded(rx)
}

/// The forwarding task's state.
struct Stream {
    cx: Conn,
    id: String,
    session: Arc<Session>,
    cwd: PathBuf,
    told: Arc<Mutex<String>>,
    /// The first event after a loaded session's history.
    live_from: u64,
    /// The arguments of each live call without a result, for its
    /// permission request's `rawInput`.
    arguments: HashMap<String, String>,
    /// The last todo list of the history, sent when it ends.
    replayed_plan: Option<SessionUpdate>,
    replaying: bool,
}

impl Stream {
    fn send(&self, update: SessionUpdate) {
        notify(&self.cx, &self.id, update);
    }

    fn forward(&mut self, event: &Event) {
        let live = event.seq >= self.live_from;
        match &event.body {
            // The client shows its own prompts; a history has no client.
            EventBody::UserMessage {
                text: t,
                source,
                steering: false,
            } if !live && *source == MessageSource::User => self.send(
                SessionUpdate::UserMessageChunk(ContentChunk::new(text(t.clone()))),
            ),
            EventBody::MessageDelta { text: t } => self.send(SessionUpdate::AgentMessageChunk(
                ContentChunk::new(text(t.clone())),
            )),
            EventBody::ReasoningDelta { text: t } => self.send(SessionUpdate::AgentThoughtChunk(
                ContentChunk::new(text(t.clone())),
            )),
            EventBody::ToolStarted {
                call_id,
                name,
                arguments,
                title,
            } => {
                if live {
                    self.arguments.insert(call_id.clone(), arguments.clone());
                }
                self.send(SessionUpdate::ToolCall(
                    AcpCall::new(call_id.clone(), title.clone())
                        .kind(kind_of(name))
                        .status(ToolCallStatus::Pending)
                        .locations(locations_of(name, arguments, &self.cwd))
                        .raw_input(serde_json::from_str::<Value>(arguments).ok()),
                ));
            }
            EventBody::ToolRunning { call_id } => {
                self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call_id.clone(),
                    ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                )))
            }
            EventBody::ToolFinished {
                call_id,
                is_error,
                output,
                diff,
                ..
            } => {
                self.arguments.remove(call_id);
                self.send(result_update(call_id, *is_error, output, diff.as_ref()));
            }
            EventBody::Todos { items } if live => self.send(plan_of(items)),
            EventBody::Todos { items } => self.replayed_plan = Some(plan_of(items)),
            EventBody::ApprovalAsked {
                approval_id,
                call_id,
                tool,
                summary,
                detail,
                ..
            } => {
                let title = match detail {
                    Some(d) => format!("{summary}: {d}"),
                    None => summary.clone(),
                };
                let input = self
                    .arguments
                    .get(call_id)
                    .and_then(|a| serde_json::from_str::<Value>(a).ok());
                let fields = ToolCallUpdateFields::new()
                    .title(title)
                    .kind(kind_of(tool))
                    .raw_input(input);
                self.ask(approval_id, ToolCallUpdate::new(call_id.clone(), fields));
            }
            EventBody::QuestionAsked {
                question_id,
                call_id,
                questions,
            } => self.ask_questions(question_id, call_id, questions),
            EventBody::PermissionChanged { .. } | EventBody::PlanModeChanged { .. } if live => {
                self.mode_changed();
            }
            EventBody::Warning { message } => tracing::warn!(target: "dsh_acp", "{message}"),
            _ => {}
        }
    }

    /// The history ended: its last todo list follows it.
    fn replay_done(&mut self) {
        self.replaying = false;
        if let Some(plan) = self.replayed_plan.take() {
            self.send(plan);
        }
    }

    /// Tells the client the session's mode when it is not the one it was
    /// last told.
    fn mode_changed(&self) {
        let mut told = lock(&self.told);
        let Some(now) = crate::current_mode(&self.session) else {
            return;
        };
        if *told != now {
            told.clone_from(&now);
            self.send(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                now,
            )));
        }
    }

    /// Puts approval question `approval_id` about `call` to the client:
    /// allow once, allow always, reject once. Its choice answers the
    /// question; a cancelled or failed request cancels it. An answer that
    /// comes after the question was settled otherwise (the turn was
    /// aborted) is dropped.
    fn ask(&self, approval_id: &str, call: ToolCallUpdate) {
        let request = RequestPermissionRequest::new(
            self.id.clone(),
            call,
            vec![
                PermissionOption::new("allow-once", "Allow once", PermissionOptionKind::AllowOnce),
                PermissionOption::new(
                    "allow-always",
                    "Allow always",
                    PermissionOptionKind::AllowAlways,
                ),
                PermissionOption::new("reject-once", "Reject", PermissionOptionKind::RejectOnce),
            ],
        );
        let sent = self.cx.send_request(request);
        let (session, approval_id) = (self.session.clone(), approval_id.to_string());
        tokio::spawn(async move {
            let decision = match sent.block_task().await {
                Ok(response) => match response.outcome {
                    RequestPermissionOutcome::Selected(s) => match s.option_id.to_string().as_str()
                    {
                        "allow-once" => Decision::AllowOnce,
                        "allow-always" => Decision::AllowAlways,
                        _ => Decision::Reject { note: None },
                    },
                    _ => Decision::Cancelled,
                },
                Err(e) => {
                    tracing::warn!(target: "dsh_acp", "permission request failed: {e}");
                    Decision::Cancelled
                }
            };
            if let Err(e) = session.answer(&approval_id, decision) {
                if e.code != dsh_protocol::codes::UNKNOWN_APPROVAL {
                    tracing::warn!(target: "dsh_acp", "permission answer not taken: {e}");
                }
            }
        });
    }
}

impl Stream {
    /// Puts the `ask_user` questions `question_id` of `call_id` to the
    /// client, one `session/request_permission` per question, in order;
    /// the choices answer them, and any decline, cancel or failure
    /// declines them all. A reply that comes after the questions were
    /// settled otherwise (the turn was aborted) is dropped.
    fn ask_questions(&self, question_id: &str, call_id: &str, questions: &[QuestionSpec]) {
        let requests: Vec<(RequestPermissionRequest, usize)> = questions
            .iter()
            .map(|q| (question_request(&self.id, call_id, q), q.options.len()))
            .collect();
        let cx = self.cx.clone();
        let (session, question_id) = (self.session.clone(), question_id.to_string());
        tokio::spawn(async move {
            let mut answers = Vec::new();
            let mut reply = None;
            for (request, offered) in requests {
                let picked = match cx.send_request(request).block_task().await {
                    Ok(response) => match response.outcome {
                        RequestPermissionOutcome::Selected(s) => Some(s.option_id.to_string()),
                        _ => None,
                    },
                    Err(e) => {
                        tracing::warn!(target: "dsh_acp", "question request failed: {e}");
                        None
                    }
                };
                match picked.as_deref() {
                    Some("skip") => answers.push(QuestionAnswer::default()),
                    Some(id) => match id.parse::<u32>() {
                        Ok(i) if (i as usize) < offered => {
                            answers.push(QuestionAnswer::options(vec![i]));
                        }
                        _ => {
                            reply = Some(QuestionReply::Declined);
                            break;
                        }
                    },
                    None => {
                        reply = Some(QuestionReply::Declined);
                        break;
                    }
                }
            }
            let reply = reply.unwrap_or(QuestionReply::Answered { answers });
            if let Err(e) = session.answer_question(&question_id, reply) {
                if e.code != dsh_protocol::codes::UNKNOWN_QUESTION {
                    tracing::warn!(target: "dsh_acp", "question answer not taken: {e}");
                }
            }
        });
    }
}

/// The permission request asking question `q` of call `call_id`: its
/// options (`allow_once`, ids `0`, `1`, …; `skip` for an open question)
/// and `decline` (`reject_once`); the call's title is the question.
fn question_request(session: &str, call_id: &str, q: &QuestionSpec) -> RequestPermissionRequest {
    let mut options: Vec<PermissionOption> = q
        .options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let name = match &o.description {
                Some(d) => format!("{} — {d}", o.label),
                None => o.label.clone(),
            };
            PermissionOption::new(i.to_string(), name, PermissionOptionKind::AllowOnce)
        })
        .collect();
    if options.is_empty() {
        options.push(PermissionOption::new(
            "skip",
            "Skip (free text is not possible here)",
            PermissionOptionKind::AllowOnce,
        ));
    }
    options.push(PermissionOption::new(
        "decline",
        "Decline to answer",
        PermissionOptionKind::RejectOnce,
    ));
    let title = match &q.header {
        Some(h) => format!("{h}: {}", q.question),
        None => q.question.clone(),
    };
    let fields = ToolCallUpdateFields::new()
        .title(title)
        .kind(ToolKind::Other);
    RequestPermissionRequest::new(
        session.to_string(),
        ToolCallUpdate::new(call_id.to_string(), fields),
        options,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_tools_are_located_in_the_cwd() {
        let cwd = Path::new("/w");
        let at = locations_of("read", r#"{"file_path":"a.txt","offset":7}"#, cwd);
        assert_eq!(at.len(), 1);
        assert_eq!(at[0].path, Path::new("/w/a.txt"));
        assert_eq!(at[0].line, Some(7));
        assert!(locations_of("bash", r#"{"command":"ls"}"#, cwd).is_empty());
        assert!(locations_of("read", "not json", cwd).is_empty());
    }

    #[test]
    fn a_todo_list_is_a_plan_in_order() {
        let entry = |content: &str, status: &str| TodoEntry {
            content: content.into(),
            status: status.into(),
        };
        let SessionUpdate::Plan(plan) = plan_of(&[
            entry("a", "completed"),
            entry("b", "in_progress"),
            entry("c", "pending"),
        ]) else {
            panic!("not a plan");
        };
        let got: Vec<(&str, PlanEntryStatus)> = plan
            .entries
            .iter()
            .map(|e| (e.content.as_str(), e.status.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", PlanEntryStatus::Completed),
                ("b", PlanEntryStatus::InProgress),
                ("c", PlanEntryStatus::Pending)
            ]
        );
    }

    #[test]
    fn a_result_carries_its_text_and_diff() {
        let diff = FileDiff {
            path: "/w/a.txt".into(),
            old_text: None,
            new_text: "new\n".into(),
        };
        let SessionUpdate::ToolCallUpdate(u) = result_update("c1", false, "ok", Some(&diff)) else {
            panic!("not an update");
        };
        assert_eq!(u.fields.status, Some(ToolCallStatus::Completed));
        let content = u.fields.content.unwrap();
        assert!(matches!(&content[1], ToolCallContent::Diff(d)
            if d.path == Path::new("/w/a.txt") && d.old_text.is_none() && d.new_text == "new\n"));
        let SessionUpdate::ToolCallUpdate(u) = result_update("c1", true, "no", None) else {
            panic!("not an update");
        };
        assert_eq!(u.fields.status, Some(ToolCallStatus::Failed));
        assert_eq!(u.fields.content.unwrap().len(), 1);
    }
}
