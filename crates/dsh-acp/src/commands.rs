//! Slash commands in ACP prompts. A client sends a command the agent
//! advertised (`available_commands_update`) as a prompt whose text starts
//! with `/name`; dsh answers it without a model turn, as agent text, and
//! the prompt ends with `end_turn`.

use dsh::{SandboxMode, Stack};
use dsh_agent::Agent;
use std::sync::Arc;

/// The commands advertised to ACP clients: `(name, description)`, those
/// of `dsh chat` that make sense in an editor.
pub const COMMANDS: &[(&str, &str)] = &[
    ("help", "List the commands"),
    (
        "permission",
        "Show or set the permission mode: read-only, workspace-write, danger-full-access",
    ),
    ("plan", "Turn plan mode on (/plan) or off (/plan off)"),
    (
        "compact",
        "Compact the conversation, optionally with a focus",
    ),
    ("todo", "Show the todo list"),
    (
        "session",
        "Show the session id, its log file and the context meter",
    ),
];

/// `/name rest` when `text` is a command advertised here.
pub fn parse(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    COMMANDS
        .iter()
        .any(|(n, _)| *n == name)
        .then(|| (name, args.trim()))
}

/// Runs command `name` with `args` on the session's stack and agent;
/// returns the text to show.
pub async fn run(stack: &Stack, agent: &Arc<dyn Agent>, name: &str, args: &str) -> String {
    match name {
        "help" => COMMANDS
            .iter()
            .map(|(n, d)| format!("/{n}: {d}"))
            .collect::<Vec<_>>()
            .join("\n"),
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
    fn only_advertised_commands_parse() {
        assert_eq!(parse("/plan off"), Some(("plan", "off")));
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
