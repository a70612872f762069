//! The server protocol, written once as Rust types: every JSON-RPC method
//! with its parameters and result, the notifications, and the error
//! object. `docs/serve-protocol.json` is generated from these types
//! ([`schema_document`]); a test fails when the file is stale.
//!
//! Frames are JSON-RPC 2.0. Over stdio (`dsh serve --stdio`) one message
//! per line; over WebSocket (`GET /api/ws`) one message per text frame.
//! Field names are camelCase; absent optional fields are omitted.

use dsh_controller::{CommandError, Decision, Event, QuestionReply, SessionInfo};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The protocol's version; `initialize` returns it.
pub const PROTOCOL_VERSION: u32 = 1;

/// `initialize`: who the client is.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InitializeParams {
    /// The client's name, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The protocol version the client speaks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<u32>,
}

/// `initialize`'s result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// `dsh`.
    pub server: String,
    /// dsh's version.
    pub version: String,
    /// [`PROTOCOL_VERSION`].
    pub protocol: u32,
    /// The methods served.
    pub methods: Vec<String>,
    /// The chat commands `session/command` runs, in `/help` order.
    pub commands: Vec<CommandInfo>,
}

/// One chat command.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandInfo {
    /// Its name, without the slash (`model`).
    pub name: String,
    /// What it does, one sentence.
    pub description: String,
    /// The argument it takes, when it takes one (`name`, `mode`); always
    /// optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Where a custom command comes from: `project` (`.dsh/commands/`,
    /// `.claude/commands/`) or `user` (`~/.config/dsh/commands/`,
    /// `~/.claude/commands/`); absent for a built-in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// `session/create`: a new session.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateParams {
    /// Its workspace (absolute; default: the server's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The model (default: the configured one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The permission mode (default: the configured one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<String>,
    /// Start in plan mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_mode: Option<bool>,
}

/// The parameters of the methods that name only a session
/// (`session/load`, `session/fork`, `session/close`, `session/info`,
/// `session/unsubscribe`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionParams {
    /// The session: the id it was opened under, or its log's.
    pub session_id: String,
}

/// A session as the methods that open one return it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionResult {
    /// The id to name it by in later calls (stays the same after
    /// `/clear`).
    pub session_id: String,
    /// What it is now.
    pub info: SessionInfo,
    /// Its custom commands (Markdown files in the workspace's and the
    /// user's command folders), which `session/command` runs like the
    /// built-in ones `initialize` lists; the folders are looked at again
    /// at most every 2 s.
    #[serde(default)]
    pub commands: Vec<CommandInfo>,
}

/// `session/list`'s result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListResult {
    /// The sessions open in this server.
    pub open: Vec<OpenSession>,
    /// The sessions saved in the session directory, newest first.
    pub saved: Vec<SavedSession>,
}

/// An open session in a list.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenSession {
    /// The id it was opened under.
    pub session_id: String,
    /// What it is now.
    pub info: SessionInfo,
}

/// A saved session in a list.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SavedSession {
    /// Its id (`session/load` opens it).
    pub session_id: String,
    /// When it started, milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// Its title, when a model gave it one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its first prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_prompt: Option<String>,
    /// How many turns it ran.
    pub turns: u64,
    /// Tokens the provider reported over the session.
    pub tokens: u64,
}

/// `session/subscribe`: stream a session's events to this client as
/// `session.event` notifications, from `fromSeq` (default: from now).
/// A client that reconnects passes the last `seq` it saw plus one. While
/// subscribed the client is one of the session's answerers: it gets the
/// approval questions, and the first answer of any client wins.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubscribeParams {
    /// The session.
    pub session_id: String,
    /// The first event wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_seq: Option<u64>,
    /// Also stream the session log's events (`type: "log"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<bool>,
}

/// `session/subscribe`'s result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeResult {
    /// The number the next event published will have.
    pub next_seq: u64,
    /// The first number after a resumed session's replayed history.
    pub live_from: u64,
}

/// `session/prompt` and `session/steer`: a message from the user.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromptParams {
    /// The session.
    pub session_id: String,
    /// The message.
    pub text: String,
}

/// `session/abort`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AbortParams {
    /// The session.
    pub session_id: String,
    /// Why (logged with the turn's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `session/set_model`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetModelParams {
    /// The session.
    pub session_id: String,
    /// The model for the next requests.
    pub model: String,
}

/// `session/set_permission`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetPermissionParams {
    /// The session.
    pub session_id: String,
    /// `read-only`, `workspace-write` or `danger-full-access`.
    pub mode: String,
}

/// `session/set_plan_mode`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetPlanModeParams {
    /// The session.
    pub session_id: String,
    /// On or off.
    pub on: bool,
}

/// `session/compact`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompactParams {
    /// The session.
    pub session_id: String,
    /// What the summary should keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
}

/// `session/answer`: the answer to an `approval_asked` event.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnswerParams {
    /// The session.
    pub session_id: String,
    /// The question (`approvalId` of the event).
    pub approval_id: String,
    /// The answer.
    pub decision: Decision,
}

/// `session/answer_question`: the reply to a `question_asked` event (the
/// model's `ask_user` questions).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnswerQuestionParams {
    /// The session.
    pub session_id: String,
    /// The questions (`questionId` of the event).
    pub question_id: String,
    /// `{"outcome": "answered", "answers": [{"selected": [0]}, {"text":
    /// "…"}, {}]}` (one per question, in order; `{}` skips one) or
    /// `{"outcome": "declined"}`.
    pub reply: QuestionReply,
}

/// `session/command`: a chat command line (`/model deepseek-v4-pro`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommandParams {
    /// The session.
    pub session_id: String,
    /// The line, starting with `/`.
    pub line: String,
}

/// `session/command`'s result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandResult {
    /// The reply, worded for a person.
    pub text: String,
    /// Whether the command failed (`text` says why).
    pub failed: bool,
    /// `/exit`: the client should leave the session.
    pub exit: bool,
}

/// `session/files`: workspace files for `@` completion.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FilesParams {
    /// The session.
    pub session_id: String,
    /// Part of the path (case blind; empty: any).
    #[serde(default)]
    pub query: String,
    /// At most this many (default 50, cap 1,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// `session/files`' result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FilesResult {
    /// Paths relative to the workspace, shortest first (ignored and
    /// hidden files left out).
    pub paths: Vec<String>,
}

/// `session/events` and `session/log`: a page of history.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PageParams {
    /// The session.
    pub session_id: String,
    /// The first number wanted (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_seq: Option<u64>,
    /// At most this many (default and cap 1,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// `session/events`' result: UI events the session still holds.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventsPage {
    /// The events, in order.
    pub events: Vec<Event>,
    /// Where the next page starts.
    pub next_seq: u64,
    /// Events before `fromSeq` that are no longer held (the ring dropped
    /// them): the first number held, when some were dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest_seq: Option<u64>,
}

/// `session/log`'s result: events of the session's log (the JSONL lines).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogPage {
    /// The log events (`{"type", "seq", "time", "data"}`), in order.
    #[schemars(with = "Vec<serde_json::Value>")]
    pub events: Vec<dsh_protocol::SessionEvent>,
    /// Where the next page starts.
    pub next_seq: u64,
}

/// A result with nothing to say.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Empty {}

/// `session/set_plan_mode`'s result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Changed {
    /// Whether the call changed anything.
    pub changed: bool,
}

/// `session/compact`'s result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Text {
    /// What happened, for a person.
    pub text: String,
}

/// The `session.event` notification: one event of a subscribed session.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventNotification {
    /// The session (as subscribed).
    pub session_id: String,
    /// The event.
    pub event: Event,
}

/// The `session.lost` notification: the client read too slowly and the
/// session's ring dropped events before they were sent; `from..to` are
/// gone (read the log for them), the stream goes on at `to`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LostNotification {
    /// The session.
    pub session_id: String,
    /// The first number missed.
    pub from: u64,
    /// Where the stream goes on.
    pub to: u64,
}

/// The `error` of a failed JSON-RPC response: `code` is JSON-RPC's
/// (`-32700` parse error, `-32600` invalid request, `-32601` unknown
/// method, `-32602` invalid params, `-32000` a dsh error); `data.code`
/// is dsh's stable code (`docs/error-codes.md`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RpcError {
    /// The JSON-RPC code.
    pub code: i64,
    /// What went wrong.
    pub message: String,
    /// dsh's code and message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<CommandError>,
}

/// One method: its name, what it does, its parameter and result types.
pub struct Method {
    /// The method name (`session/prompt`).
    pub name: &'static str,
    /// What it does, one line.
    pub summary: &'static str,
    /// The schema of its `params`.
    pub params: SchemaOf,
    /// The schema of its `result`.
    pub result: SchemaOf,
}

macro_rules! methods {
    ($( $name:literal, $params:ty, $result:ty, $summary:literal; )*) => {
        /// Every method, in documentation order.
        pub const METHODS: &[Method] = &[
            $( Method {
                name: $name,
                summary: $summary,
                params: |g| g.subschema_for::<$params>(),
                result: |g| g.subschema_for::<$result>(),
            }, )*
        ];
    };
}

methods! {
    "initialize", InitializeParams, InitializeResult, "Says who the client is; returns the server's name, version, protocol and methods.";
    "session/create", CreateParams, SessionResult, "Opens a new session (in `cwd`, with a model, a permission mode, plan mode).";
    "session/load", SessionParams, SessionResult, "Opens a saved session (its history is replayed as events from 0), or returns the open one.";
    "session/fork", SessionParams, SessionResult, "Opens a new session whose history is a copy of another's.";
    "session/list", Empty, ListResult, "Lists the open and the saved sessions.";
    "session/info", SessionParams, SessionResult, "What an open session is now.";
    "session/close", SessionParams, Empty, "Closes a session: its turn aborted, its log flushed, its commands stopped.";
    "session/subscribe", SubscribeParams, SubscribeResult, "Streams a session's events to this client from a sequence number; makes it an answerer of approvals.";
    "session/unsubscribe", SessionParams, Empty, "Stops streaming a session's events to this client.";
    "session/prompt", PromptParams, Empty, "Sends a message that starts a turn (TURN_RUNNING when one runs: one client drives a turn at a time).";
    "session/steer", PromptParams, Empty, "Sends a message into the running turn (or starts one).";
    "session/abort", AbortParams, Empty, "Aborts the running turn.";
    "session/set_model", SetModelParams, Empty, "Switches the model for the next requests.";
    "session/set_permission", SetPermissionParams, Empty, "Changes the permission mode.";
    "session/set_plan_mode", SetPlanModeParams, Changed, "Turns plan mode on or off.";
    "session/compact", CompactParams, Text, "Compacts the history now (between turns).";
    "session/answer", AnswerParams, Empty, "Answers an approval question; the first answer wins (UNKNOWN_APPROVAL after).";
    "session/answer_question", AnswerQuestionParams, Empty, "Replies to the model's ask_user questions (a question_asked event); the first reply wins (UNKNOWN_QUESTION after, INVALID_ANSWER when the answers do not fit).";
    "session/command", CommandParams, CommandResult, "Runs a chat command line (`/model`, `/permission`, `/plan`, `/compact`, `/todo`, `/session`, `/clear`, `/help`, `/exit`).";
    "session/files", FilesParams, FilesResult, "Workspace files whose path contains a query, for `@` completion.";
    "session/events", PageParams, EventsPage, "A page of the session's events still held (for a client that reloads).";
    "session/log", PageParams, LogPage, "A page of the session's log (the JSONL events).";
    "shutdown", Empty, Empty, "Ends the connection (over stdio: the server).";
}

/// Makes the schema of a type in a generator (its `$defs` collected there).
pub type SchemaOf = fn(&mut schemars::SchemaGenerator) -> schemars::Schema;

/// The notifications the server sends: name, what it means, its params.
pub const NOTIFICATIONS: &[(&str, &str, SchemaOf)] = &[
    ("session.event", "One event of a subscribed session.", |g| {
        g.subschema_for::<EventNotification>()
    }),
    (
        "session.lost",
        "Events a slow client missed; the stream goes on after them.",
        |g| g.subschema_for::<LostNotification>(),
    ),
];

/// The protocol as one JSON Schema document: `methods` (params and result
/// of each), `notifications`, `error`, and every type under `$defs`.
pub fn schema_document() -> serde_json::Value {
    let mut g = schemars::SchemaGenerator::default();
    let methods: serde_json::Map<String, serde_json::Value> = METHODS
        .iter()
        .map(|m| {
            (
                m.name.to_string(),
                serde_json::json!({
                    "summary": m.summary,
                    "params": (m.params)(&mut g),
                    "result": (m.result)(&mut g),
                }),
            )
        })
        .collect();
    let notifications: serde_json::Map<String, serde_json::Value> = NOTIFICATIONS
        .iter()
        .map(|(name, summary, params)| {
            (
                (*name).to_string(),
                serde_json::json!({ "summary": summary, "params": params(&mut g) }),
            )
        })
        .collect();
    let error = g.subschema_for::<RpcError>();
    let defs: serde_json::Map<String, serde_json::Value> =
        g.take_definitions(true).into_iter().collect();
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "dsh serve protocol",
        "description": "JSON-RPC 2.0 over WebSocket (GET /api/ws, one message per text frame) or stdio (dsh serve --stdio, one message per line). Generated from crates/dsh-server/src/protocol.rs; do not edit.",
        "protocol": PROTOCOL_VERSION,
        "methods": methods,
        "notifications": notifications,
        "error": error,
        "$defs": defs,
    })
}
