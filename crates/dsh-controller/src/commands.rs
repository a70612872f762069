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
    /// `/help`: the table is [`dsh::commands::SLASH_COMMANDS`], then the
    /// session's custom commands.
    Help {
        /// The custom commands, sorted by name.
        custom: Vec<dsh::custom_commands::CommandSummary>,
        /// Project command files not loaded: the project is not trusted.
        untrusted: usize,
    },
    /// A command that became the user's message (a custom command,
    /// `/init`): its turn runs (or waits for the running one).
    Sent(Box<SentCommand>),
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
    /// `/cost`: what the session cost so far.
    Cost(Box<dsh::catalogue::CostReport>),
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
    /// `/undo`, `/redo`: what was set back or reapplied.
    Restored(Box<dsh::checkpoints::Restored>),
    /// `/rewind`: the turns of the branch.
    Turns(Vec<dsh::checkpoints::TurnPoint>),
    /// `/rewind N`: what went back.
    Rewound(Box<dsh::checkpoints::Rewound>),
    /// The command failed or was misused; the error says how.
    Failed(CommandError),
}

impl Reply {
    /// The chat's wording. Foreign parts (a model name, an error) are
    /// quoted as they are: a terminal front end sanitises the text.
    pub fn text(&self) -> String {
        match self {
            Reply::Help { custom, untrusted } => help(custom, *untrusted),
            Reply::Sent(sent) => sent.describe(),
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
            Reply::Cost(report) => report.text(),
            Reply::Cleared { old, new } => format!(
                "new session: {new} (history cleared; {old} is saved, resume it with `dsh chat --resume {old}`)"
            ),
            Reply::Exit => "bye".to_string(),
            Reply::Restored(r) => r.describe(),
            Reply::Turns(turns) => crate::undo::describe_turns(turns),
            Reply::Rewound(r) => r.describe(),
            Reply::Failed(e) => format!("dsh: {}", e.message),
        }
    }
}

/// `/help`: one line per command, `/name [hint]` then what it does; the
/// custom commands after the built-in ones, each with where it comes
/// from, and a line saying how many project commands were not loaded.
fn help(custom: &[dsh::custom_commands::CommandSummary], untrusted: usize) -> String {
    let usage = |c: &dsh::commands::SlashCommand| match c.hint {
        Some(h) => format!("/{} [{h}]", c.name),
        None => format!("/{}", c.name),
    };
    let custom_usage = |c: &dsh::custom_commands::CommandSummary| match &c.argument_hint {
        Some(h) => format!("/{} {h}", c.name),
        None => format!("/{}", c.name),
    };
    let width = dsh::commands::SLASH_COMMANDS
        .iter()
        .map(|c| usage(c).chars().count())
        .chain(custom.iter().map(|c| custom_usage(c).chars().count()))
        .max()
        .unwrap_or(0);
    let mut out = String::from("commands:");
    for c in dsh::commands::SLASH_COMMANDS {
        out.push_str(&format!("\n  {:width$}  {}", usage(c), c.description));
    }
    if !custom.is_empty() {
        out.push_str("\ncustom commands:");
        for c in custom {
            out.push_str(&format!(
                "\n  {:width$}  ({}) {}",
                custom_usage(c),
                c.scope.label(),
                c.description
            ));
        }
    }
    if untrusted > 0 {
        out.push_str(&format!(
            "\n{untrusted} project command{} not loaded: the project is not trusted (dsh trust)",
            if untrusted == 1 { "" } else { "s" }
        ));
    }
    out
}

/// What a command that became the user's message sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentCommand {
    /// The command's name (`review`, `init`).
    pub name: String,
    /// `project`, `user` or `builtin`.
    pub source: String,
    /// The model of its turn, when the command switched it for that turn.
    pub model: Option<String>,
    /// The only tools of its turn, when the command limits them.
    pub tools: Option<Vec<String>>,
    /// Things the user should know (a `model:` not served, ignored).
    pub notes: Vec<String>,
}

impl SentCommand {
    /// `/review (project command): sent; model M for this turn; tools: a,
    /// b` and the notes, one per line.
    pub fn describe(&self) -> String {
        let mut out = match self.source.as_str() {
            "builtin" => format!("/{}: sent to the model", self.name),
            source => format!("/{} ({source} command): sent to the model", self.name),
        };
        if let Some(model) = &self.model {
            out.push_str(&format!("; model {model} for this turn"));
        }
        if let Some(tools) = &self.tools {
            let list = if tools.is_empty() {
                "none".to_string()
            } else {
                tools.join(", ")
            };
            out.push_str(&format!("; tools: {list}"));
        }
        for note in &self.notes {
            out.push_str(&format!("\nnote: {note}"));
        }
        out
    }
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
