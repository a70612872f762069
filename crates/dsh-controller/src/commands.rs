//! The chat commands (`/model`, `/permission`, `/plan`, …) run against a
//! session: [`crate::Session::command`] returns a [`Reply`] saying what
//! happened as data, and [`Reply::text`] words it the way the chat does.
//! A front end with other words (ACP's shorter replies) matches on the
//! reply; one that has none uses the text, so a new command appears
//! everywhere once it is added here.

use dsh::tools::TodoItem;
use dsh::SandboxMode;

use crate::CommandError;

/// What a chat command did.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `/help`: the table is [`dsh::commands::SLASH_COMMANDS`].
    Help,
    /// `/model`: the model in use and the ones served.
    Model {
        /// In use.
        current: String,
        /// Served.
        models: Vec<String>,
    },
    /// `/model NAME`: switched for the next requests.
    ModelSwitched {
        /// Before.
        from: String,
        /// Now.
        to: String,
    },
    /// `/model NAME` naming the model in use.
    ModelUnchanged {
        /// In use.
        model: String,
    },
    /// `/permission`: the mode in force.
    Permission {
        /// In force.
        current: SandboxMode,
    },
    /// `/permission MODE`: changed.
    PermissionChanged {
        /// Before.
        from: SandboxMode,
        /// Now.
        to: SandboxMode,
    },
    /// `/permission MODE` naming the mode in force.
    PermissionUnchanged {
        /// In force.
        mode: SandboxMode,
    },
    /// `/plan [on|off]`.
    Plan {
        /// Asked for.
        on: bool,
        /// Whether that changed the mode.
        changed: bool,
    },
    /// `/compact [focus]`.
    Compacted {
        /// What the compaction did.
        outcome: dsh_compaction::Outcome,
        /// The model's context window.
        window: u64,
    },
    /// `/todo`.
    Todos(Vec<TodoItem>),
    /// `/session`.
    Session(Box<crate::SessionInfo>),
    /// `/clear`: a new log; the old one is saved.
    Cleared {
        /// The cleared session's id.
        old: String,
        /// The new one's.
        new: String,
    },
    /// `/exit`: the front end leaves the session (the controller does not
    /// close it by itself).
    Exit,
    /// The command failed or was misused; the error says how.
    Failed(CommandError),
}

impl Reply {
    /// The chat's wording. Foreign parts (a model name, an error) are
    /// quoted as they are: a terminal front end sanitises the text.
    pub fn text(&self) -> String {
        match self {
            Reply::Help => help(),
            Reply::Model { current, models } => format!(
                "model: {current} (models: {}; switch with /model NAME)",
                models.join(", ")
            ),
            Reply::ModelSwitched { from, to } => {
                format!("model: {to} (was {from}) for the next requests")
            }
            Reply::ModelUnchanged { model } => format!("model is already {model}"),
            Reply::Permission { current } => format!(
                "permission mode: {current} (change with /permission {})",
                dsh::commands::PERMISSION_MODES.join("|")
            ),
            Reply::PermissionChanged { from, to } => {
                format!("permission mode: {to} (was {from})")
            }
            Reply::PermissionUnchanged { mode } => format!("permission mode is already {mode}"),
            Reply::Plan { on, changed } => match (on, changed) {
                (true, true) => "plan mode: on — the model explores with read-only tools and presents a plan for you to approve; write, edit and bash are denied until then (/plan off leaves plan mode)".to_string(),
                (true, false) => "plan mode is already on (/plan off leaves it)".to_string(),
                (false, true) => "plan mode: off".to_string(),
                (false, false) => "plan mode is not on (/plan turns it on)".to_string(),
            },
            Reply::Compacted { outcome, window } => describe_compaction(outcome, *window),
            Reply::Todos(todos) if todos.is_empty() => "no todo list".to_string(),
            Reply::Todos(todos) => dsh::tools::todo::checklist(todos),
            Reply::Session(info) => info.describe(),
            Reply::Cleared { old, new } => format!(
                "new session: {new} (history cleared; {old} is saved, resume it with `dsh chat --resume {old}`)"
            ),
            Reply::Exit => "bye".to_string(),
            Reply::Failed(e) => format!("dsh: {}", e.message),
        }
    }
}

/// `/help`: one line per command, `/name [hint]` then what it does.
fn help() -> String {
    let usage = |c: &dsh::commands::SlashCommand| match c.hint {
        Some(h) => format!("/{} [{h}]", c.name),
        None => format!("/{}", c.name),
    };
    let width = dsh::commands::SLASH_COMMANDS
        .iter()
        .map(|c| usage(c).len())
        .max()
        .unwrap_or(0);
    let mut out = String::from("commands:");
    for c in dsh::commands::SLASH_COMMANDS {
        out.push_str(&format!("\n  {:width$}  {}", usage(c), c.description));
    }
    out
}

/// What a compaction did, for the user: `compacted: … (ctx N% · used/window)`.
pub fn describe_compaction(outcome: &dsh_compaction::Outcome, window: u64) -> String {
    use dsh_compaction::Outcome;
    let (what, tokens) = match outcome {
        Outcome::Nothing => return "nothing to compact".into(),
        Outcome::Pruned { tokens_after } => ("old tool results cut", tokens_after),
        Outcome::Summarised { tokens_after } => {
            ("the older history is now a summary", tokens_after)
        }
        Outcome::FellBack { tokens_after } => (
            "the summary was not shorter, so old tool results were cut instead",
            tokens_after,
        ),
    };
    format!(
        "compacted: {what} ({})",
        dsh_session::format_usage(*tokens, window)
    )
}

/// A usage error for command `name`.
pub(crate) fn usage(text: &str) -> Reply {
    Reply::Failed(CommandError::new(
        dsh_protocol::codes::INVALID_COMMAND,
        format!("usage: {text}"),
    ))
}
