//! Slash commands in ACP prompts. dsh advertises the chat's command table
//! ([`dsh::commands::SLASH_COMMANDS`]) in `available_commands_update`; a
//! client sends one as a prompt whose text starts with `/name`, and dsh
//! answers it without a model turn, as agent text (the prompt ends with
//! `end_turn`). `/clear` starts a new dsh session under the same ACP
//! session and `/exit` ends the ACP session; the server handles those two.

use dsh::{SandboxMode, Stack};
use dsh_agent::Agent;
use std::sync::Arc;

/// `/name rest` when `text` is one of the chat's commands.
pub fn parse(text: &str) -> Option<(&str, &str)> {
    dsh::commands::parse(text.trim()).filter(|(name, _)| dsh::commands::find(name).is_some())
}

/// Runs command `name` with `args` on the session's stack and agent;
/// returns the text to show.
pub async fn run(stack: &Stack, agent: &Arc<dyn Agent>, name: &str, args: &str) -> String {
    match name {
        "help" => dsh::commands::SLASH_COMMANDS
            .iter()
            .map(|c| match c.hint {
                Some(h) => format!("/{} [{h}]: {}", c.name, c.description),
                None => format!("/{}: {}", c.name, c.description),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        "model" if args.is_empty() => format!(
            "model: {} (models: {})",
            stack.model(),
            stack.models().join(", ")
        ),
        "model" => match stack.set_model(args, "/model", Some(agent.as_ref())) {
            Ok(()) => format!("model: {args} for the next requests"),
            Err(e) => e.to_string(),
        },
        "permission" if args.is_empty() => {
            format!("permission mode: {}", stack.permission().as_str())
        }
        "permission" => match args.parse::<SandboxMode>() {
            Ok(mode) => {
                stack.set_permission(mode, "/permission", Some(agent.as_ref()));
                format!("permission mode: {}", mode.as_str())
            }
            Err(_) => format!(
                "unknown permission mode \"{args}\"; modes: read-only, workspace-write, danger-full-access"
            ),
        },
        "plan" => {
            let on = match args {
                "" | "on" => true,
                "off" => false,
                _ => return "usage: /plan [on|off]".to_string(),
            };
            stack.set_plan_mode(on, "/plan", Some(agent.as_ref()));
            format!("plan mode: {}", if on { "on" } else { "off" })
        }
        "compact" => {
            let focus = (!args.is_empty()).then_some(args);
            match stack.compact_now(agent, focus).await {
                Ok(outcome) => format!("compacted: {outcome:?}"),
                Err(e) => format!("cannot compact: {e}"),
            }
        }
        "todo" => {
            let todos = stack.todos(agent.as_ref());
            if todos.is_empty() {
                "no todo list".to_string()
            } else {
                dsh::tools::todo::checklist(&todos)
            }
        }
        "session" => {
            let id = agent.session().id().to_string();
            let file = stack.resolved.session_dir.join(format!("{id}.jsonl"));
            format!("session {id}\nlog {}", file.display())
        }
        other => format!("unknown command /{other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
