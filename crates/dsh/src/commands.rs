//! The chat commands (`/help`, `/model`, …): one table every front end
//! shares. `dsh chat` dispatches and completes from it; the ACP server
//! advertises it (`available_commands_update`). The table says what a
//! command is, never how a front end shows it.
//!
//! A line is a command when it starts with `/` followed by a name (ASCII
//! letters, digits, `_`, `-` and `:`, starting with a letter or digit)
//! and then the end of the line or whitespace ([`parse`]): `/usr/bin/ls is
//! broken`, `/etc/hosts` and `/ hello` are messages for the model, `/xyz`
//! and `/frontend:test` are commands (custom ones, see
//! [`crate::custom_commands`], or unknown ones, which a front end reports
//! instead of sending).

/// One chat command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlashCommand {
    /// The name, without the slash (`model`).
    pub name: &'static str,
    /// What it does, one sentence.
    pub description: &'static str,
    /// The argument it takes, when it takes one (`name`, `mode`, `focus`);
    /// always optional.
    pub hint: Option<&'static str>,
}

/// Every chat command, in the order `/help` lists them.
pub const SLASH_COMMANDS: &[SlashCommand] = &[
    SlashCommand {
        name: "help",
        description: "List the chat commands",
        hint: None,
    },
    SlashCommand {
        name: "model",
        description: "Show the model and the models served, or switch to another for the next turns",
        hint: Some("name"),
    },
    SlashCommand {
        name: "permission",
        description: "Show the permission mode, or change it (read-only, workspace-write, danger-full-access)",
        hint: Some("mode"),
    },
    SlashCommand {
        name: "plan",
        description: "Turn plan mode on (explore and present a plan before changing anything); /plan off leaves it",
        hint: Some("on|off"),
    },
    SlashCommand {
        name: "compact",
        description: "Compact the conversation history now, optionally focusing the summary",
        hint: Some("focus"),
    },
    SlashCommand {
        name: "init",
        description: "Ask the model to explore the project and write its AGENTS.md (or improve the existing one)",
        hint: None,
    },
    SlashCommand {
        name: "todo",
        description: "Show the current todo list",
        hint: None,
    },
    SlashCommand {
        name: "undo",
        description: "Set the files the last turn changed back to how they were before it (--force also overwrites files changed by hand since)",
        hint: Some("--force"),
    },
    SlashCommand {
        name: "redo",
        description: "Reapply the file changes the last /undo set back",
        hint: Some("--force"),
    },
    SlashCommand {
        name: "rewind",
        description: "List the turns, or go back to before turn N: files and conversation (--files-only, --conversation-only)",
        hint: Some("N"),
    },
    SlashCommand {
        name: "session",
        description: "Show the session id, its log file and its token usage",
        hint: None,
    },
    SlashCommand {
        name: "cost",
        description: "Show what this session cost: tokens by kind, cache-hit rate, money, where the prices come from",
        hint: None,
    },
    SlashCommand {
        name: "clear",
        description: "Start a new session (empty history) in the same process",
        hint: None,
    },
    SlashCommand {
        name: "exit",
        description: "Leave the chat",
        hint: None,
    },
];

/// The permission modes `/permission` accepts, for completion.
pub const PERMISSION_MODES: [&str; 3] = ["read-only", "workspace-write", "danger-full-access"];

/// The command in `line`: `Some((name, rest))` when the line (leading
/// whitespace ignored) is `/` + a name (`[A-Za-z0-9_:-]+`, starting with
/// a letter or digit) + end or whitespace; `rest` is the remainder,
/// trimmed. A first word with another `/` or any other character (a path)
/// is no command. The name may be no command of [`SLASH_COMMANDS`]
/// ([`find`] says). `None`: a message for the model.
pub fn parse(line: &str) -> Option<(&str, &str)> {
    let body = line.trim_start().strip_prefix('/')?;
    if !body.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return None;
    }
    let end = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':')))
        .unwrap_or(body.len());
    let (name, rest) = body.split_at(end);
    if name.is_empty() || !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    Some((name, rest.trim()))
}

/// The command named `name` (without the slash), if there is one.
pub fn find(name: &str) -> Option<&'static SlashCommand> {
    SLASH_COMMANDS.iter().find(|c| c.name == name)
}

/// The names (without the slash) of the commands starting with `prefix`
/// (without the slash), in table order; all of them for `""`.
pub fn complete(prefix: &str) -> Vec<&'static str> {
    SLASH_COMMANDS
        .iter()
        .map(|c| c.name)
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// `/help, /model, …`: every command name with its slash, comma-separated.
pub fn names() -> String {
    SLASH_COMMANDS
        .iter()
        .map(|c| format!("/{}", c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lists_the_nine_in_order() {
        let names: Vec<_> = SLASH_COMMANDS.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "help",
                "model",
                "permission",
                "plan",
                "compact",
                "init",
                "todo",
                "undo",
                "redo",
                "rewind",
                "session",
                "cost",
                "clear",
                "exit"
            ]
        );
        assert_eq!(find("model").and_then(|c| c.hint), Some("name"));
        assert_eq!(find("permission").and_then(|c| c.hint), Some("mode"));
        assert_eq!(find("compact").and_then(|c| c.hint), Some("focus"));
        assert!(find("nope").is_none());
        assert!(SLASH_COMMANDS.iter().all(|c| !c.description.is_empty()));
    }

    #[test]
    fn parse_takes_slash_words_only() {
        assert_eq!(parse("/help"), Some(("help", "")));
        assert_eq!(
            parse("  /model  deepseek-v4-pro "),
            Some(("model", "deepseek-v4-pro"))
        );
        assert_eq!(
            parse("/compact keep the API notes"),
            Some(("compact", "keep the API notes"))
        );
        assert_eq!(parse("/xyz"), Some(("xyz", "")));
        assert_eq!(parse("/usr/bin/ls is broken"), None);
        assert_eq!(parse("/etc/hosts"), None);
        assert_eq!(parse("/ hello"), None);
        assert_eq!(parse("/"), None);
        assert_eq!(parse("/v2 api"), Some(("v2", "api")));
        assert_eq!(
            parse("/frontend:test-all_2 src"),
            Some(("frontend:test-all_2", "src"))
        );
        assert_eq!(parse("/-x"), None);
        assert_eq!(parse("/:x"), None);
        assert_eq!(parse("/a.b"), None);
        assert_eq!(parse("/review/x"), None);
        assert_eq!(parse("/usr/bin/ls"), None);
        assert_eq!(parse("hello /help"), None);
        assert_eq!(parse("/plan\toff"), Some(("plan", "off")));
    }

    #[test]
    fn complete_by_prefix_in_table_order() {
        assert_eq!(complete("per"), ["permission"]);
        assert_eq!(complete("p"), ["permission", "plan"]);
        assert_eq!(complete("c"), ["compact", "cost", "clear"]);
        assert_eq!(complete("").len(), SLASH_COMMANDS.len());
        assert!(complete("zz").is_empty());
        assert!(names().starts_with("/help, /model, /permission"));
        assert!(names().ends_with("/clear, /exit"));
    }
}
