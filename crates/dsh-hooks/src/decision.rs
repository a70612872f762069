//! What a hook's run means (Claude Code's rules) and how several combine.
//!
//! - exit 0: proceed; stdout that is a JSON object may carry `decision`
//!   (`block`/`deny`, `ask`, `approve`/`allow`), `reason`,
//!   `continue: false` with `stopReason`, `additionalContext`,
//!   `systemMessage`, and `hookSpecificOutput` with `permissionDecision`
//!   (`allow`/`deny`/`ask`), `permissionDecisionReason` and
//!   `additionalContext`. Plain stdout of a `UserPromptSubmit` hook is
//!   context for the prompt; of other events it is ignored.
//! - exit 2: block, with stderr as the reason.
//! - any other exit, a timeout, a command that cannot start: a warning;
//!   the action proceeds.
//!
//! Several hooks on one event combine to the most restrictive effect
//! (block over ask over proceed); reasons of the winning kind are joined.
//! An `allow` never widens anything: it is just "proceed".

use serde_json::Value;

use crate::run::HookRun;
use crate::spec::HookEvent;

/// What a hook (or all hooks of an event) decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Go on.
    Proceed,
    /// Ask the user first (only `PreToolUse`; elsewhere it is proceed).
    Ask(String),
    /// Do not: block the call, the prompt, or the stop.
    Block(String),
}

impl Effect {
    fn rank(&self) -> u8 {
        match self {
            Effect::Proceed => 0,
            Effect::Ask(_) => 1,
            Effect::Block(_) => 2,
        }
    }

    /// The short name used in logs: `proceed`, `ask`, `block`.
    pub fn name(&self) -> &'static str {
        match self {
            Effect::Proceed => "proceed",
            Effect::Ask(_) => "ask",
            Effect::Block(_) => "block",
        }
    }

    /// The more restrictive of the two; equal kinds join their reasons.
    pub fn narrow(self, other: Effect) -> Effect {
        match self.rank().cmp(&other.rank()) {
            std::cmp::Ordering::Greater => self,
            std::cmp::Ordering::Less => other,
            std::cmp::Ordering::Equal => match (self, other) {
                (Effect::Ask(a), Effect::Ask(b)) => Effect::Ask(join(a, b)),
                (Effect::Block(a), Effect::Block(b)) => Effect::Block(join(a, b)),
                (same, _) => same,
            },
        }
    }
}

fn join(a: String, b: String) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b,
        (_, true) => a,
        _ => format!("{a}; {b}"),
    }
}

/// One hook's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// What it decided.
    pub effect: Effect,
    /// Text it adds to the model's context (`additionalContext`, or plain
    /// stdout of a `UserPromptSubmit` hook).
    pub context: Option<String>,
    /// Something to show the user (a failing hook, `systemMessage`).
    pub warning: Option<String>,
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// What `run` of a hook of `event` with `command` means.
pub fn read(event: HookEvent, command: &str, run: &HookRun) -> Reading {
    let proceed = |warning: Option<String>| Reading {
        effect: Effect::Proceed,
        context: None,
        warning,
    };
    if let Some(e) = &run.spawn_error {
        return proceed(Some(format!("hook `{command}` could not start: {e}")));
    }
    if run.timed_out {
        return proceed(Some(format!(
            "hook `{command}` timed out after {} s and was killed",
            run.duration.as_secs()
        )));
    }
    match run.exit {
        Some(0) => read_success(event, &run.stdout),
        Some(2) => {
            let reason = run.stderr.trim();
            Reading {
                effect: Effect::Block(if reason.is_empty() {
                    format!("blocked by hook `{command}`")
                } else {
                    reason.to_string()
                }),
                context: None,
                warning: None,
            }
        }
        other => {
            let how = match other {
                Some(code) => format!("exited with code {code}"),
                None => "was killed by a signal".to_string(),
            };
            let stderr = run.stderr.trim();
            let detail = if stderr.is_empty() {
                String::new()
            } else {
                format!(": {stderr}")
            };
            proceed(Some(format!("hook `{command}` {how}{detail}")))
        }
    }
}

fn read_success(event: HookEvent, stdout: &str) -> Reading {
    let trimmed = stdout.trim();
    let json = trimmed
        .starts_with('{')
        .then(|| serde_json::from_str::<Value>(trimmed).ok())
        .flatten()
        .filter(Value::is_object);
    let Some(out) = json else {
        let context = (event == HookEvent::UserPromptSubmit && !trimmed.is_empty())
            .then(|| trimmed.to_string());
        return Reading {
            effect: Effect::Proceed,
            context,
            warning: None,
        };
    };
    let specific = out.get("hookSpecificOutput");
    let reason = text(out.get("reason"))
        .or_else(|| text(specific.and_then(|s| s.get("permissionDecisionReason"))))
        .unwrap_or_default();
    let mut effect = Effect::Proceed;
    if out.get("continue").and_then(Value::as_bool) == Some(false) {
        let why = text(out.get("stopReason")).unwrap_or_else(|| reason.clone());
        effect = effect.narrow(Effect::Block(why));
    }
    let decisions = [
        text(out.get("decision")),
        text(specific.and_then(|s| s.get("permissionDecision"))),
    ];
    for d in decisions.into_iter().flatten() {
        let this = match d.as_str() {
            "block" | "deny" => Effect::Block(reason.clone()),
            "ask" if event == HookEvent::PreToolUse => Effect::Ask(reason.clone()),
            _ => Effect::Proceed,
        };
        effect = effect.narrow(this);
    }
    let context = [
        text(out.get("additionalContext")),
        text(specific.and_then(|s| s.get("additionalContext"))),
    ]
    .into_iter()
    .flatten()
    .reduce(|a, b| if a == b { a } else { format!("{a}\n{b}") });
    Reading {
        effect,
        context,
        warning: text(out.get("systemMessage")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn run(exit: Option<i32>, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            exit,
            stdout: stdout.into(),
            stderr: stderr.into(),
            timed_out: false,
            spawn_error: None,
            duration: Duration::from_millis(3),
        }
    }

    #[test]
    fn exit_codes_follow_claude_code() {
        let pre = HookEvent::PreToolUse;
        assert_eq!(
            read(pre, "h", &run(Some(0), "", "")).effect,
            Effect::Proceed
        );
        assert_eq!(
            read(pre, "h", &run(Some(2), "", "no rm -rf\n")).effect,
            Effect::Block("no rm -rf".into())
        );
        assert_eq!(
            read(pre, "h", &run(Some(2), "", "")).effect,
            Effect::Block("blocked by hook `h`".into())
        );
        let warned = read(pre, "h", &run(Some(1), "", "oops"));
        assert_eq!(warned.effect, Effect::Proceed);
        assert_eq!(
            warned.warning.as_deref(),
            Some("hook `h` exited with code 1: oops")
        );
        let mut slow = run(None, "", "");
        slow.timed_out = true;
        slow.duration = Duration::from_secs(60);
        let r = read(pre, "h", &slow);
        assert_eq!(r.effect, Effect::Proceed);
        assert!(r
            .warning
            .unwrap_or_default()
            .contains("timed out after 60 s"));
    }

    #[test]
    fn json_decisions_and_context() {
        let pre = HookEvent::PreToolUse;
        let r = |s: &str| read(pre, "h", &run(Some(0), s, ""));
        assert_eq!(
            r(r#"{"decision": "block", "reason": "not here"}"#).effect,
            Effect::Block("not here".into())
        );
        assert_eq!(
            r(r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "sure?"}}"#).effect,
            Effect::Ask("sure?".into())
        );
        assert_eq!(
            r(r#"{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}"#).effect,
            Effect::Block("no".into())
        );
        assert_eq!(r(r#"{"decision": "approve"}"#).effect, Effect::Proceed);
        assert_eq!(
            r(r#"{"continue": false, "stopReason": "halt"}"#).effect,
            Effect::Block("halt".into())
        );
        let with_context =
            r(r#"{"additionalContext": "tests live in t/", "systemMessage": "note"}"#);
        assert_eq!(with_context.context.as_deref(), Some("tests live in t/"));
        assert_eq!(with_context.warning.as_deref(), Some("note"));
        // Not JSON: ignored, except as prompt context.
        assert_eq!(r("{not json").effect, Effect::Proceed);
        assert_eq!(r("plain").context, None);
        let prompt = read(
            HookEvent::UserPromptSubmit,
            "h",
            &run(Some(0), "today is Friday\n", ""),
        );
        assert_eq!(prompt.context.as_deref(), Some("today is Friday"));
        // `ask` means nothing after the fact.
        let post = read(
            HookEvent::PostToolUse,
            "h",
            &run(Some(0), r#"{"decision": "ask"}"#, ""),
        );
        assert_eq!(post.effect, Effect::Proceed);
    }

    #[test]
    fn the_most_restrictive_effect_wins() {
        let b = |s: &str| Effect::Block(s.into());
        let a = |s: &str| Effect::Ask(s.into());
        assert_eq!(Effect::Proceed.narrow(a("x")), a("x"));
        assert_eq!(a("x").narrow(b("y")), b("y"));
        assert_eq!(b("y").narrow(a("x")), b("y"));
        assert_eq!(b("y").narrow(b("z")), b("y; z"));
        assert_eq!(b("").narrow(b("z")), b("z"));
        assert_eq!(Effect::Proceed.narrow(Effect::Proceed), Effect::Proceed);
    }
}
