//! Slash commands in ACP prompts. dsh advertises the chat's command table
//! ([`dsh::commands::SLASH_COMMANDS`]) in `available_commands_update`; a
//! client sends one as a prompt whose text starts with `/name`, and dsh
//! answers it without a model turn, as agent text (the prompt ends with
//! `end_turn`). The controller runs the command
//! ([`dsh_controller::Session::command`]) and says what happened as a
//! [`Reply`]; [`word`] gives it ACP's short wording. `/clear` starts a new
//! dsh log under the same ACP session; `/exit` ends the ACP session (the
//! server closes it).

use dsh_controller::Reply;

/// `/name rest` when `text` is one of the chat's commands.
pub fn parse(text: &str) -> Option<(&str, &str)> {
    dsh::commands::parse(text.trim()).filter(|(name, _)| dsh::commands::find(name).is_some())
}

/// What `/exit` answers: the session is closed.
pub const EXIT_TEXT: &str = "session ended; open a new one to go on";

/// The text shown for `reply`, the answer to command `name`: the short
/// ACP wording for the replies it has one for (`permission mode:
/// read-only`, `plan mode: on`, `model: echo (models: echo)`, `session
/// <id>\nlog <path>`, `new session: <new> (history cleared; <old> is
/// saved)`, a failure's message alone), the chat's
/// ([`Reply::text`]) for the others.
pub fn word(name: &str, reply: &Reply) -> String {
    match reply {
        Reply::Help { custom, untrusted } => help(custom, *untrusted),
        Reply::Model { current, models } => {
            format!("model: {current} (models: {})", models.join(", "))
        }
        Reply::ModelSwitched { to: model, .. } | Reply::ModelUnchanged { model } => {
            format!("model: {model} for the next requests")
        }
        Reply::Permission { current: mode }
        | Reply::PermissionChanged { to: mode, .. }
        | Reply::PermissionUnchanged { mode } => format!("permission mode: {}", mode.as_str()),
        Reply::Plan { on, .. } => format!("plan mode: {}", if *on { "on" } else { "off" }),
        Reply::Session(info) => {
            let log = match &info.log {
                Some(path) => path.display().to_string(),
                None => "none (sessions are kept in memory)".to_string(),
            };
            format!("session {}\nlog {log}", info.id)
        }
        Reply::Cleared { old, new } => {
            format!("new session: {new} (history cleared; {old} is saved)")
        }
        Reply::Exit => EXIT_TEXT.to_string(),
        Reply::Failed(e) => match name {
            "compact" => format!("cannot compact: {}", e.message),
            "clear" => format!("cannot clear: {}", e.message),
            _ => e.message.clone(),
        },
        other => other.text(),
    }
}

/// `/help`: one line per command, `/name [hint]: what it does`; the
/// custom commands after the built-in ones (`/name hint: (project) what
/// it does`), then how many project commands were not loaded.
fn help(custom: &[dsh::custom_commands::CommandSummary], untrusted: usize) -> String {
    let mut lines: Vec<String> = dsh::commands::SLASH_COMMANDS
        .iter()
        .map(|c| match c.hint {
            Some(h) => format!("/{} [{h}]: {}", c.name, c.description),
            None => format!("/{}: {}", c.name, c.description),
        })
        .collect();
    lines.extend(custom.iter().map(|c| match &c.argument_hint {
        Some(h) => format!("/{} {h}: ({}) {}", c.name, c.scope.label(), c.description),
        None => format!("/{}: ({}) {}", c.name, c.scope.label(), c.description),
    }));
    if untrusted > 0 {
        lines.push(format!(
            "{untrusted} project command(s) not loaded: the project is not trusted (dsh trust)"
        ));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh::SandboxMode;
    use dsh_controller::CommandError;

    #[test]
    fn only_the_chats_commands_parse() {
        assert_eq!(parse("/plan off"), Some(("plan", "off")));
        assert_eq!(parse("/clear"), Some(("clear", "")));
        assert_eq!(parse("  /help"), Some(("help", "")));
        assert_eq!(
            parse("/compact  the parser "),
            Some(("compact", "the parser"))
        );
        assert_eq!(parse("/usr/bin/ls is broken"), None);
        assert_eq!(parse("plan"), None);
        assert_eq!(parse("/nope"), None);
    }

    #[test]
    fn replies_take_the_short_acp_wording() {
        let changed = Reply::PermissionChanged {
            from: SandboxMode::WorkspaceWrite,
            to: SandboxMode::ReadOnly,
        };
        assert_eq!(word("permission", &changed), "permission mode: read-only");
        let plan = Reply::Plan {
            on: false,
            changed: false,
        };
        assert_eq!(word("plan", &plan), "plan mode: off");
        let switched = Reply::ModelSwitched {
            from: "a".into(),
            to: "b".into(),
        };
        assert_eq!(word("model", &switched), "model: b for the next requests");
        let failed = Reply::Failed(CommandError::new(
            "INVALID_COMMAND",
            "usage: /plan [on|off]",
        ));
        assert_eq!(word("plan", &failed), "usage: /plan [on|off]");
        assert_eq!(
            word(
                "compact",
                &Reply::Failed(CommandError::new("X", "no model"))
            ),
            "cannot compact: no model"
        );
        assert_eq!(word("todo", &Reply::Todos(Vec::new())), "no todo list");
        let help = word(
            "help",
            &Reply::Help {
                custom: Vec::new(),
                untrusted: 0,
            },
        );
        assert_eq!(
            help.lines().count(),
            dsh::commands::SLASH_COMMANDS.len(),
            "{help}"
        );
        assert!(help.contains("/plan [on|off]: "), "{help}");
    }
}
