//! The UI event vocabulary: what a front end is told about a session.
//!
//! Every event is an [`Event`]: a sequence number (per session, from 0, no
//! gaps), a time, and an [`EventBody`]. The bodies are the facts a person
//! watching the session wants: text as it streams, a tool call from start
//! to finish with a one-line title and, for file changes, the diff, the
//! todo list, approval questions and their answers, the agent's status
//! with the turn's timings, usage, errors. The JSON shape is the serde
//! shape of these types (`{"seq", "time", "type", ...fields}`, fields in
//! camelCase); it is the wire format of `dsh serve` too, so a change here
//! is a protocol change.

use dsh_protocol::{MessageSource, SessionEvent, TurnEndReason};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One UI event of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// Position in the session's event stream: 0 for the first, one more
    /// for each next. A client that saw `seq` resumes from `seq + 1`.
    pub seq: u64,
    /// When it happened, milliseconds since the Unix epoch.
    pub time: u64,
    /// What happened.
    #[serde(flatten)]
    pub body: EventBody,
}

/// What happened. Tagged by `type` (snake case); fields are camelCase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum EventBody {
    /// The session is open: its id, model, permission mode, plan mode and
    /// workspace. The first event of every stream; again after `/clear`
    /// with the new log's id and `cleared` naming the old one.
    SessionStarted {
        /// The id of the session's log (`dsh chat --resume <id>`).
        session_id: String,
        /// The model the next request uses.
        model: String,
        /// The permission mode (`read-only`, `workspace-write`,
        /// `danger-full-access`).
        permission: String,
        /// Whether plan mode is on.
        plan_mode: bool,
        /// The workspace directory.
        cwd: String,
        /// Whether the session was resumed from its log (its history
        /// follows as events) rather than started empty.
        resumed: bool,
        /// After `/clear`: the id of the session that was cleared.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cleared: Option<String>,
    },
    /// A notice that did not stop anything (an ignored config key, a
    /// repaired log, an MCP server that did not start, fewer sandbox
    /// layers than asked).
    Warning {
        /// One line for the user.
        message: String,
    },
    /// A message that started or steered a turn: the user's, or a notice
    /// (a background job finished) that woke the agent.
    UserMessage {
        /// Its text.
        text: String,
        /// Who sent it (`user`, or what woke the agent).
        #[schemars(with = "serde_json::Value")]
        source: MessageSource,
        /// Sent while a turn ran (steering) rather than starting one.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        steering: bool,
    },
    /// A turn began.
    TurnStarted {
        /// Turn number in the session, from 1.
        turn: u64,
    },
    /// Answer text as it streams.
    MessageDelta {
        /// The next piece.
        text: String,
    },
    /// Reasoning text as it streams.
    ReasoningDelta {
        /// The next piece.
        text: String,
    },
    /// The model's message of a step is complete.
    MessageCompleted {
        /// Its whole text (empty when the step only called tools).
        text: String,
    },
    /// The model called a tool (before the boundary checks it).
    ToolStarted {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// The arguments exactly as the model wrote them.
        arguments: String,
        /// One line saying what it does (`Run \`cargo test\``,
        /// `Edit src/main.rs`).
        title: String,
    },
    /// The call passed the boundary and its approval, and runs now.
    ToolRunning {
        /// The call's id.
        call_id: String,
    },
    /// The call's result.
    ToolFinished {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// Whether the result is an error.
        is_error: bool,
        /// The whole result text, as the model reads it.
        output: String,
        /// The file the call changed, before and after, when it changed
        /// one (write, edit).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<FileDiff>,
    },
    /// The todo list changed; the whole list.
    Todos {
        /// The items, in order.
        items: Vec<TodoEntry>,
    },
    /// A question for the person: may this call run, or is this plan
    /// approved? Answer with [`crate::Session::answer`]; the first answer
    /// wins.
    ApprovalAsked {
        /// The question's id (unique in the session).
        approval_id: String,
        /// What is asked about.
        kind: ApprovalKind,
        /// The call it is about.
        call_id: String,
        /// The tool.
        tool: String,
        /// The call's arguments exactly as the model wrote them.
        arguments: String,
        /// One line: what the call wants.
        summary: String,
        /// The command, the diff, or the plan, whole.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// The model's own reason for asking.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        justification: Option<String>,
        /// The permission rule "always allow" would save for this call
        /// (`bash(cargo test:*)`), offered after an allow-for-the-session
        /// answer ([`crate::Session::save_rule`]); none for a plan.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        suggested_rule: Option<String>,
    },
    /// A question was answered (or withdrawn).
    ApprovalDecided {
        /// The question's id.
        approval_id: String,
        /// The answer.
        decision: Decision,
    },
    /// The model asks the person questions (the `ask_user` tool). Reply
    /// with [`crate::Session::answer_question`]; the first reply wins.
    QuestionAsked {
        /// The questions' id (unique in the session).
        question_id: String,
        /// The `ask_user` call that asks.
        call_id: String,
        /// The questions, in order (1 to 4).
        questions: Vec<QuestionSpec>,
    },
    /// The questions were answered, declined, or withdrawn (published as
    /// declined: the turn was aborted, nobody watches any more).
    QuestionAnswered {
        /// The questions' id.
        question_id: String,
        /// The reply.
        reply: QuestionReply,
    },
    /// The agent's status changed.
    Status {
        /// `idle`, `running` or `disposed`.
        status: String,
    },
    /// What the agent is doing now, told when it changes: `thinking` (a
    /// request was sent, nothing streamed yet), `streaming` (text or
    /// reasoning arrives), `running` (a tool runs; `detail` is its title),
    /// `waiting` (for an answer to an approval question), `idle` (the
    /// turn ended). The event's `time` is when it began.
    Activity {
        /// `thinking`, `streaming`, `running`, `waiting` or `idle`.
        state: String,
        /// For `running`: the tool call's title (`Run \`cargo test\``).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// What one request used (as the provider reported it).
    Usage {
        /// Input tokens.
        input_tokens: u64,
        /// Output tokens.
        output_tokens: u64,
        /// Input tokens served from the provider's cache.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_read_tokens: Option<u64>,
    },
    /// How full the context window is (the meter after a request).
    Context {
        /// Tokens in the context.
        tokens: u64,
        /// The model's window.
        window: u64,
    },
    /// A turn ended, with its timings.
    TurnEnded {
        /// Turn number.
        turn: u64,
        /// How it ended, as the log says it (`{"kind": "completed"}`,
        /// `aborted` with `reason`, `error` with `message` and `code`,
        /// `max-steps`, …).
        #[schemars(with = "serde_json::Value")]
        reason: TurnEndReason,
        /// Why the model's last step stopped, in the log's words (`stop`,
        /// `tool-calls`, `max-tokens`, `aborted`, `error`), when it said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish: Option<String>,
        /// Milliseconds from the start of the turn to its end.
        duration_ms: u64,
        /// Milliseconds from the start of the turn to the first streamed
        /// text or reasoning, when any came.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_token_ms: Option<u64>,
        /// Output tokens of the turn's requests.
        output_tokens: u64,
        /// Output tokens per second of streaming (first token to end).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens_per_second: Option<f64>,
        /// Share of the turn's input tokens served from the provider's
        /// cache, 0 to 1, when the provider reports cache hits.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_hit_rate: Option<f64>,
    },
    /// An error was logged (a failed request, a log that did not reach
    /// disk).
    Error {
        /// Its stable code, when it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        /// What went wrong.
        message: String,
    },
    /// The model for the next requests changed.
    ModelChanged {
        /// The new model.
        model: String,
    },
    /// The permission mode changed.
    PermissionChanged {
        /// The new mode.
        mode: String,
    },
    /// Plan mode was turned on or off.
    PlanModeChanged {
        /// Whether it is on now.
        on: bool,
    },
    /// The history was compacted.
    Compacted {
        /// Tokens in the context after.
        tokens_after: u64,
    },
    /// Files were set back to a checkpoint (`/undo`, `/redo`, `/rewind`).
    FilesRestored {
        /// `undo`, `redo` or `rewind`.
        action: String,
        /// The turn undone, redone, or rewound to.
        turn: u64,
        /// The files set back (written).
        restored: Vec<String>,
        /// The files deleted.
        deleted: Vec<String>,
        /// The files left alone because they were changed by hand since.
        user_changed: Vec<String>,
    },
    /// The conversation went back to before turn `to_turn`; what followed
    /// stays in the log as an earlier branch.
    Rewound {
        /// The turn gone back to.
        to_turn: u64,
    },
    /// The session got a title.
    TitleChanged {
        /// The title.
        title: String,
    },
    /// A session log event, exactly as logged (the JSONL line). Only
    /// delivered to subscriptions that ask for it
    /// ([`crate::Subscription::with_log`]).
    Log {
        /// The event (`{"type", "seq", "time", "data"}`).
        #[schemars(with = "serde_json::Value")]
        event: Arc<SessionEvent>,
    },
    /// The session was closed; nothing follows.
    Closed {
        /// Why (`closed by the client`, `the server stopped`).
        reason: String,
    },
}

impl EventBody {
    /// The `type` tag of this body (`message_delta`, `tool_finished`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            EventBody::SessionStarted { .. } => "session_started",
            EventBody::Warning { .. } => "warning",
            EventBody::UserMessage { .. } => "user_message",
            EventBody::TurnStarted { .. } => "turn_started",
            EventBody::MessageDelta { .. } => "message_delta",
            EventBody::ReasoningDelta { .. } => "reasoning_delta",
            EventBody::MessageCompleted { .. } => "message_completed",
            EventBody::ToolStarted { .. } => "tool_started",
            EventBody::ToolRunning { .. } => "tool_running",
            EventBody::ToolFinished { .. } => "tool_finished",
            EventBody::Todos { .. } => "todos",
            EventBody::ApprovalAsked { .. } => "approval_asked",
            EventBody::ApprovalDecided { .. } => "approval_decided",
            EventBody::QuestionAsked { .. } => "question_asked",
            EventBody::QuestionAnswered { .. } => "question_answered",
            EventBody::Status { .. } => "status",
            EventBody::Activity { .. } => "activity",
            EventBody::Usage { .. } => "usage",
            EventBody::Context { .. } => "context",
            EventBody::TurnEnded { .. } => "turn_ended",
            EventBody::Error { .. } => "error",
            EventBody::ModelChanged { .. } => "model_changed",
            EventBody::PermissionChanged { .. } => "permission_changed",
            EventBody::PlanModeChanged { .. } => "plan_mode_changed",
            EventBody::Compacted { .. } => "compacted",
            EventBody::FilesRestored { .. } => "files_restored",
            EventBody::Rewound { .. } => "rewound",
            EventBody::TitleChanged { .. } => "title_changed",
            EventBody::Log { .. } => "log",
            EventBody::Closed { .. } => "closed",
        }
    }
}

/// A file a tool call changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    /// The file, absolute.
    pub path: String,
    /// Its text before (`None`: the call created it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_text: Option<String>,
    /// Its text after.
    pub new_text: String,
}

/// One todo item as the UI shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TodoEntry {
    /// What is to be done.
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
}

impl TodoEntry {
    /// The entry as the todo tool's item; `None` for a status the tool
    /// does not know.
    pub fn item(&self) -> Option<dsh::tools::TodoItem> {
        Some(dsh::tools::TodoItem {
            content: self.content.clone(),
            status: serde_json::from_value(serde_json::Value::String(self.status.clone())).ok()?,
        })
    }
}

/// What an approval question is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalKind {
    /// A tool call outside the permission mode.
    Tool,
    /// The plan `exit_plan_mode` presents (approving it ends plan mode).
    Plan,
}

/// An answer to an approval question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run this call (approve this plan).
    AllowOnce,
    /// Run it, and calls with the same grant (the exact command) for the
    /// rest of the session.
    AllowAlways,
    /// Do not run it (keep planning); the note reaches the model.
    Reject {
        /// The person's words for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The question was withdrawn (Ctrl-C, the turn was aborted, nobody
    /// watches any more); the call is denied.
    Cancelled,
}

impl Decision {
    /// The tool layer's answer for this decision.
    pub fn approval(&self) -> dsh_tools::Approval {
        match self {
            Decision::AllowOnce => dsh_tools::Approval::AllowedOnce,
            Decision::AllowAlways => dsh_tools::Approval::AllowedForSession,
            Decision::Reject { note } => dsh_tools::Approval::Rejected { note: note.clone() },
            Decision::Cancelled => dsh_tools::Approval::Cancelled,
        }
    }
}

/// One `ask_user` question as a front end shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionSpec {
    /// The question.
    pub question: String,
    /// A short label for it (`Database`), when the model gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// The choices offered, in order (their index is what an answer
    /// selects); empty for an open question. The person may always answer
    /// in free text instead.
    #[serde(default)]
    pub options: Vec<QuestionChoice>,
    /// Whether several options may be chosen.
    #[serde(default)]
    pub multi_select: bool,
}

impl QuestionSpec {
    /// The front end's view of the tool's question.
    pub fn of(q: &dsh::tools::ask_user::UserQuestion) -> Self {
        Self {
            question: q.question.clone(),
            header: q.header.clone(),
            options: q
                .choices()
                .iter()
                .map(|o| QuestionChoice {
                    label: o.label.clone(),
                    description: o.description.clone(),
                })
                .collect(),
            multi_select: q.is_multi_select(),
        }
    }
}

/// One choice of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionChoice {
    /// The choice, a few words.
    pub label: String,
    /// What choosing it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The person's reply to an `ask_user` call's questions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum QuestionReply {
    /// One answer per question, in order.
    Answered {
        /// The answers.
        answers: Vec<QuestionAnswer>,
    },
    /// The person dismissed the questions (the model is told they
    /// declined and goes on).
    Declined,
}

/// The answer to one question: options chosen (indexes from 0) and/or
/// free text; neither skips the question (`(no answer)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionAnswer {
    /// Indexes of the chosen options; at most one unless the question is
    /// multi-select.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selected: Vec<u32>,
    /// The person's own words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl QuestionAnswer {
    /// Options `selected`, no text.
    pub fn options(selected: Vec<u32>) -> Self {
        Self {
            selected,
            text: None,
        }
    }

    /// Free text only.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            selected: Vec::new(),
            text: Some(text.into()),
        }
    }

    /// The tool's answer.
    pub fn to_answer(&self) -> dsh::tools::ask_user::Answer {
        dsh::tools::ask_user::Answer {
            selected: self.selected.iter().map(|&i| i as usize).collect(),
            text: self.text.clone(),
        }
    }
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
