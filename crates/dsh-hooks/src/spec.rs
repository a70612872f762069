//! What hooks exist: `[[hooks.<Event>]]` in dsh.toml ([`HooksSection`]) and
//! the `hooks` object of a Claude Code `settings.json` pasted into a
//! `hooks.json` ([`HookSet::from_claude_json`]), compiled into a
//! [`HookSet`].

use std::time::Duration;

use regex_automata::meta::Regex;
use serde::Deserialize;
use serde_json::Value;

/// Default time a hook may run: 60 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The agent events a hook can run on (Claude Code's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// Before a tool call runs (after the model made it, before validation):
    /// may allow, ask or block it.
    PreToolUse,
    /// After a tool call succeeded: may add a note for the model.
    PostToolUse,
    /// When the user sends a prompt: may block it or add context to it.
    UserPromptSubmit,
    /// When a turn is about to end: may make the agent go on.
    Stop,
}

impl HookEvent {
    /// Every event, in the order above.
    pub const ALL: [HookEvent; 4] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
    ];

    /// The event's name (`hook_event_name` on the hook's stdin).
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
        }
    }

    /// The event named `name`, if dsh supports it.
    pub fn from_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Whether the event is about a tool call (its hooks have matchers).
    pub fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }
}

/// Which tool names a hook's script expects to see in `tool_name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// dsh's own names (`bash`, `write`): hooks from dsh.toml.
    Dsh,
    /// Claude Code's names (`Bash`, `Write`) where a dsh tool has one:
    /// hooks from a pasted `hooks.json`.
    ClaudeCode,
}

/// The Claude Code name of a dsh tool, where there is one: the built-in
/// tools by their Claude Code names, MCP tools as `mcp__<server>__<tool>`
/// (dsh's default MCP names already have that form and have no other name:
/// `None`; the older `<server>__<tool>` names, `mcp_tool_prefix = ""`, get
/// the `mcp__` prefix).
pub fn claude_code_name(tool: &str) -> Option<String> {
    let known = match tool {
        "bash" => "Bash",
        "bash_output" => "BashOutput",
        "bash_kill" => "KillShell",
        "read" => "Read",
        "write" => "Write",
        "edit" => "Edit",
        "glob" => "Glob",
        "grep" => "Grep",
        "todo_write" => "TodoWrite",
        "web_fetch" => "WebFetch",
        "web_search" => "WebSearch",
        "subagent" => "Task",
        "exit_plan_mode" => "ExitPlanMode",
        other if other.contains("__") && !other.starts_with("mcp__") => {
            return Some(format!("mcp__{other}"));
        }
        _ => return None,
    };
    Some(known.to_string())
}

/// One `[[hooks.<Event>]]` entry of dsh.toml.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// A regular expression over the tool's name, matched whole (`bash`,
    /// `write|edit`, `mcp__.*`); absent, empty or `*` matches every tool.
    /// Only for `PreToolUse` and `PostToolUse`.
    pub matcher: Option<String>,
    /// The shell command (`sh -c`); it reads the event JSON on stdin.
    pub command: String,
    /// Seconds the command may run (default 60).
    pub timeout: Option<u64>,
}

/// `[hooks]` of dsh.toml: the hooks per event.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HooksSection {
    /// `[[hooks.PreToolUse]]`.
    #[serde(rename = "PreToolUse", default)]
    pub pre_tool_use: Vec<HookEntry>,
    /// `[[hooks.PostToolUse]]`.
    #[serde(rename = "PostToolUse", default)]
    pub post_tool_use: Vec<HookEntry>,
    /// `[[hooks.UserPromptSubmit]]`.
    #[serde(rename = "UserPromptSubmit", default)]
    pub user_prompt_submit: Vec<HookEntry>,
    /// `[[hooks.Stop]]`.
    #[serde(rename = "Stop", default)]
    pub stop: Vec<HookEntry>,
}

impl HooksSection {
    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.entries().next().is_none()
    }

    /// Every entry with its event, in event order then file order.
    pub fn entries(&self) -> impl Iterator<Item = (HookEvent, &HookEntry)> {
        let by_event = [
            (HookEvent::PreToolUse, &self.pre_tool_use),
            (HookEvent::PostToolUse, &self.post_tool_use),
            (HookEvent::UserPromptSubmit, &self.user_prompt_submit),
            (HookEvent::Stop, &self.stop),
        ];
        by_event
            .into_iter()
            .flat_map(|(event, list)| list.iter().map(move |e| (event, e)))
    }

    /// `upper`'s hooks after this section's (both run).
    pub fn join(mut self, upper: HooksSection) -> HooksSection {
        self.pre_tool_use.extend(upper.pre_tool_use);
        self.post_tool_use.extend(upper.post_tool_use);
        self.user_prompt_submit.extend(upper.user_prompt_submit);
        self.stop.extend(upper.stop);
        self
    }
}

/// One compiled hook.
#[derive(Debug, Clone)]
pub struct Hook {
    /// The event it runs on.
    pub event: HookEvent,
    /// The matcher as written (`None`: every tool).
    pub matcher_text: Option<String>,
    matcher: Option<Regex>,
    /// The shell command.
    pub command: String,
    /// How long it may run.
    pub timeout: Duration,
    /// Which tool names it sees.
    pub dialect: Dialect,
    /// Where it was configured (a file path), for messages.
    pub source: String,
}

impl Hook {
    /// Whether the hook runs for a call of `tool` (dsh's name): the
    /// matcher matches the whole dsh name or the whole Claude Code name.
    /// Hooks of events without tools always run.
    pub fn matches(&self, tool: Option<&str>) -> bool {
        let (Some(re), Some(tool)) = (&self.matcher, tool) else {
            return true;
        };
        if re.is_match(tool) {
            return true;
        }
        claude_code_name(tool).is_some_and(|alias| re.is_match(alias.as_str()))
    }

    /// The name the hook's script sees in `tool_name`.
    pub fn tool_name_for(&self, tool: &str) -> String {
        match self.dialect {
            Dialect::Dsh => tool.to_string(),
            Dialect::ClaudeCode => claude_code_name(tool).unwrap_or_else(|| tool.to_string()),
        }
    }
}

/// Every configured hook, in configuration order.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    hooks: Vec<Hook>,
}

/// A matcher that matches every tool.
fn matches_all(m: &str) -> bool {
    let m = m.trim();
    m.is_empty() || m == "*"
}

fn compile(
    event: HookEvent,
    matcher: Option<&str>,
    command: &str,
    timeout: Option<u64>,
    dialect: Dialect,
    source: &str,
) -> Result<Hook, String> {
    if command.trim().is_empty() {
        return Err(format!(
            "{source}: a {} hook has an empty command",
            event.name()
        ));
    }
    let matcher_text = matcher.filter(|m| !matches_all(m)).map(str::to_string);
    let matcher = match &matcher_text {
        Some(m) => Some(Regex::new(&format!("^(?:{m})$")).map_err(|e| {
            format!(
                "{source}: {} hook matcher {m:?} is not a valid regular expression: {e}",
                event.name()
            )
        })?),
        None => None,
    };
    let timeout = match timeout {
        Some(0) => {
            return Err(format!(
                "{source}: {} hook timeout must be at least 1 second",
                event.name()
            ))
        }
        Some(s) => Duration::from_secs(s),
        None => DEFAULT_TIMEOUT,
    };
    Ok(Hook {
        event,
        matcher_text,
        matcher,
        command: command.to_string(),
        timeout,
        dialect,
        source: source.to_string(),
    })
}

impl HookSet {
    /// No hooks.
    pub fn new() -> Self {
        Self::default()
    }

    /// The hooks of a dsh.toml `[hooks]` section read from `source`.
    ///
    /// # Errors
    /// A matcher that is not a regular expression, an empty command, a
    /// zero timeout; the message names the file and the event.
    pub fn from_section(section: &HooksSection, source: &str) -> Result<HookSet, String> {
        let hooks = section
            .entries()
            .map(|(event, e)| {
                compile(
                    event,
                    e.matcher.as_deref(),
                    &e.command,
                    e.timeout,
                    Dialect::Dsh,
                    source,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(HookSet { hooks })
    }

    /// The hooks of a Claude Code hooks object: the whole `settings.json`
    /// (`{"hooks": {...}}`) or just its `hooks` value (`{"PreToolUse":
    /// [...]}`), read from `source`. Returns the set and warnings about
    /// what dsh skips: events it does not support and hook types other
    /// than `command`.
    ///
    /// # Errors
    /// Text that is not JSON or does not have Claude Code's shape (each
    /// event an array of `{matcher?, hooks: [{type, command, timeout?}]}`),
    /// an invalid matcher; the message names the file and where.
    pub fn from_claude_json(text: &str, source: &str) -> Result<(HookSet, Vec<String>), String> {
        let root: Value =
            serde_json::from_str(text).map_err(|e| format!("{source}: not valid JSON: {e}"))?;
        let Value::Object(mut root) = root else {
            return Err(format!("{source}: expected a JSON object"));
        };
        let events = match root.remove("hooks") {
            Some(Value::Object(inner)) => inner,
            Some(_) => return Err(format!("{source}: \"hooks\" must be an object")),
            None => root,
        };
        let mut hooks = Vec::new();
        let mut warnings = Vec::new();
        for (name, groups) in &events {
            let Some(event) = HookEvent::from_name(name) else {
                warnings.push(format!(
                    "{source}: hook event {name:?} is not supported by dsh (PreToolUse, PostToolUse, UserPromptSubmit, Stop); skipped"
                ));
                continue;
            };
            let Value::Array(groups) = groups else {
                return Err(format!("{source}: hooks.{name} must be an array"));
            };
            for (gi, group) in groups.iter().enumerate() {
                let at = format!("hooks.{name}[{gi}]");
                let matcher = match group.get("matcher") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(m)) => Some(m.as_str()),
                    Some(_) => return Err(format!("{source}: {at}.matcher must be a string")),
                };
                let Some(Value::Array(list)) = group.get("hooks") else {
                    return Err(format!("{source}: {at}.hooks must be an array"));
                };
                for (hi, h) in list.iter().enumerate() {
                    let here = format!("{at}.hooks[{hi}]");
                    let kind = h.get("type").and_then(Value::as_str).unwrap_or("command");
                    if kind != "command" {
                        warnings.push(format!(
                            "{source}: {here} has type {kind:?}; dsh runs only \"command\" hooks; skipped"
                        ));
                        continue;
                    }
                    let Some(command) = h.get("command").and_then(Value::as_str) else {
                        return Err(format!("{source}: {here}.command must be a string"));
                    };
                    let timeout = match h.get("timeout") {
                        None | Some(Value::Null) => None,
                        Some(t) => Some(t.as_u64().ok_or_else(|| {
                            format!("{source}: {here}.timeout must be a whole number of seconds")
                        })?),
                    };
                    hooks.push(compile(
                        event,
                        matcher,
                        command,
                        timeout,
                        Dialect::ClaudeCode,
                        source,
                    )?);
                }
            }
        }
        Ok((HookSet { hooks }, warnings))
    }

    /// `other`'s hooks after these.
    pub fn extend(&mut self, other: HookSet) {
        self.hooks.extend(other.hooks);
    }

    /// Whether there is no hook at all.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Whether any hook runs on `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }

    /// Every hook, in configuration order.
    pub fn iter(&self) -> impl Iterator<Item = &Hook> {
        self.hooks.iter()
    }

    /// The hooks that run on `event` for `tool` (dsh's name; `None` for
    /// events without a tool), in configuration order.
    pub fn matching<'a>(
        &'a self,
        event: HookEvent,
        tool: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Hook> + 'a {
        self.hooks
            .iter()
            .filter(move |h| h.event == event && h.matches(tool))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn section(toml_like: Vec<(HookEvent, Option<&str>)>) -> HooksSection {
        let mut s = HooksSection::default();
        for (event, matcher) in toml_like {
            let e = HookEntry {
                matcher: matcher.map(str::to_string),
                command: "true".into(),
                timeout: None,
            };
            match event {
                HookEvent::PreToolUse => s.pre_tool_use.push(e),
                HookEvent::PostToolUse => s.post_tool_use.push(e),
                HookEvent::UserPromptSubmit => s.user_prompt_submit.push(e),
                HookEvent::Stop => s.stop.push(e),
            }
        }
        s
    }

    #[test]
    fn matchers_match_the_whole_dsh_or_claude_code_name() {
        let set = HookSet::from_section(
            &section(vec![
                (HookEvent::PreToolUse, Some("bash")),
                (HookEvent::PreToolUse, Some("Write|Edit")),
                (HookEvent::PreToolUse, Some("mcp__mem__.*")),
                (HookEvent::PreToolUse, Some("*")),
            ]),
            "dsh.toml",
        )
        .unwrap();
        let count = |tool: &str| set.matching(HookEvent::PreToolUse, Some(tool)).count();
        assert_eq!(count("bash"), 2, "bash and *");
        assert_eq!(count("bash_output"), 1, "matched whole: only *");
        assert_eq!(count("write"), 2, "Write is write's Claude Code name");
        assert_eq!(count("edit"), 2);
        assert_eq!(count("read"), 1);
        assert_eq!(count("mem__store"), 2, "MCP tools as mcp__<server>__<tool>");
        assert_eq!(
            count("mcp__mem__store"),
            2,
            "dsh's own MCP names match as they are"
        );
        assert_eq!(count("mcp__other__store"), 1);
        assert_eq!(set.matching(HookEvent::Stop, None).count(), 0);
    }

    #[test]
    fn claude_code_settings_paste_in_whole_or_as_the_hooks_object() {
        let settings = r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "check.sh", "timeout": 5},
            {"type": "prompt", "prompt": "judge"}]}],
          "Notification": [{"hooks": [{"type": "command", "command": "notify"}]}],
          "Stop": [{"hooks": [{"type": "command", "command": "stop.sh"}]}]}}"#;
        let (set, warnings) = HookSet::from_claude_json(settings, "hooks.json").unwrap();
        let hooks: Vec<&Hook> = set.iter().collect();
        assert_eq!(hooks.len(), 2, "{hooks:?}");
        assert_eq!(hooks[0].command, "check.sh");
        assert_eq!(hooks[0].timeout, Duration::from_secs(5));
        assert_eq!(hooks[0].dialect, Dialect::ClaudeCode);
        assert_eq!(hooks[0].tool_name_for("bash"), "Bash");
        assert_eq!(hooks[1].event, HookEvent::Stop);
        assert_eq!(hooks[1].timeout, DEFAULT_TIMEOUT);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("\"Notification\"")));
        assert!(warnings.iter().any(|w| w.contains("\"prompt\"")));
        let inner =
            r#"{"PostToolUse": [{"matcher": "", "hooks": [{"type": "command", "command": "x"}]}]}"#;
        let (set, _) = HookSet::from_claude_json(inner, "hooks.json").unwrap();
        assert!(set.has(HookEvent::PostToolUse));
        assert!(set.iter().all(|h| h.matches(Some("anything"))));
    }

    #[test]
    fn bad_hooks_are_errors_naming_the_file_and_the_place() {
        let bad_regex = HookSet::from_section(
            &section(vec![(HookEvent::PreToolUse, Some("ba(sh"))]),
            "/p/dsh.toml",
        )
        .map(|_| ())
        .unwrap_err();
        assert!(bad_regex.starts_with("/p/dsh.toml: PreToolUse hook matcher \"ba(sh\""));
        for (text, wanted) in [
            ("[1]", "expected a JSON object"),
            ("{", "not valid JSON"),
            (r#"{"Stop": {}}"#, "hooks.Stop must be an array"),
            (r#"{"Stop": [{}]}"#, "hooks.Stop[0].hooks must be an array"),
            (
                r#"{"Stop": [{"hooks": [{"type": "command"}]}]}"#,
                "hooks.Stop[0].hooks[0].command must be a string",
            ),
            (
                r#"{"Stop": [{"hooks": [{"command": "x", "timeout": "5"}]}]}"#,
                "timeout must be a whole number of seconds",
            ),
            (
                r#"{"Stop": [{"hooks": [{"command": "x", "timeout": 0}]}]}"#,
                "timeout must be at least 1 second",
            ),
        ] {
            let err = HookSet::from_claude_json(text, "h.json")
                .map(|_| ())
                .unwrap_err();
            assert!(err.contains(wanted), "{text}: {err}");
            assert!(err.starts_with("h.json: "), "{err}");
        }
    }
}
