//! The escalation guard: a `bash`, `write` or `edit` call with
//! `sandbox_permissions` asks the user before it runs under a wider mode
//! than the session's.
//!
//! The guard only reads the call (the arguments are never rewritten). A
//! request that is not strictly wider than the current mode is denied with
//! a reason the model can act on; a wider one becomes an `ask` whose
//! question shows the command and the model's justification, and whose
//! session grant covers exactly this command under exactly this mode. The
//! tools use the wider mode only when the registry marks the call
//! approved. The question shows the command, the new content (`write`) or
//! the lines replaced (`edit`).

use std::sync::Arc;

use dsh_bash_local::LocalBashExecutor;
use dsh_kernel::Registration;
use dsh_protocol::SandboxMode;
use dsh_tools::{PreExecute, Question, ToolRegistry, Verdict};
use serde_json::Value;

/// Tools whose calls may carry `sandbox_permissions`.
pub const ESCALATING_TOOLS: [&str; 3] = ["bash", "write", "edit"];

/// Longest content or diff shown in a question, in characters.
const DETAIL_CHARS: usize = 4000;

/// Installs the guard on `registry`, judging against `executor`'s current
/// mode. Undo the registration to remove it.
pub fn install(registry: &ToolRegistry, executor: Arc<LocalBashExecutor>) -> Registration {
    registry.add_guard(move |pre: &PreExecute| {
        let verdict = verdict(&pre.call.name, &pre.call.arguments, executor.sandbox_mode());
        Box::pin(async move { verdict })
    })
}

/// The verdict for a call of `tool` with the raw `arguments` while the
/// session is in `current` mode. Arguments that do not parse, do not ask
/// for a known mode or lack the justification are allowed here:
/// validation rejects them next (and the bash tool refuses an unapproved
/// escalation anyway).
pub fn verdict(tool: &str, arguments: &str, current: SandboxMode) -> Verdict {
    if !ESCALATING_TOOLS.contains(&tool) {
        return Verdict::Allow;
    }
    let Ok(args) = serde_json::from_str::<Value>(arguments) else {
        return Verdict::Allow;
    };
    let Some(asked) = args
        .get("sandbox_permissions")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<SandboxMode>().ok())
    else {
        return Verdict::Allow;
    };
    if asked <= current {
        let what = if tool == "bash" {
            "the command"
        } else {
            "the call"
        };
        return Verdict::Deny(format!(
            "sandbox_permissions \"{asked}\" is not wider than the current mode {current}; run {what} without sandbox_permissions"
        ));
    }
    // Without a justification the call is invalid (both or neither):
    // validation names the violation; nobody is asked about it.
    let Some(justification) = args
        .get("justification")
        .and_then(Value::as_str)
        .filter(|j| !j.is_empty())
    else {
        return Verdict::Allow;
    };
    let field = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or("");
    let (summary, detail, exact) = match tool {
        "bash" => (
            format!("run a command under {asked}"),
            field("command").to_string(),
            field("command").to_string(),
        ),
        "write" => (
            format!("write {} under {asked}", field("file_path")),
            clip(field("content")),
            format!("{} {}", field("file_path"), field("content")),
        ),
        _ => (
            format!("edit {} under {asked}", field("file_path")),
            clip(&diff_lines(field("old_string"), field("new_string"))),
            format!(
                "{} {} {} {}",
                field("file_path"),
                field("old_string"),
                field("new_string"),
                args.get("replace_all").and_then(Value::as_bool) == Some(true)
            ),
        ),
    };
    Verdict::Ask(Question {
        summary: format!("{summary} (the session is in {current} mode)"),
        detail: Some(detail),
        justification: Some(justification.to_string()),
        grant_key: Some(format!("{tool} {asked} {exact}")),
    })
}

/// An edit as `-`/`+` lines: what the user approves.
fn diff_lines(old: &str, new: &str) -> String {
    let mut out = String::new();
    for line in old.lines() {
        out.push_str(&format!("-{line}\n"));
    }
    for line in new.lines() {
        out.push_str(&format!("+{line}\n"));
    }
    out.trim_end().to_string()
}

/// `text` cut to [`DETAIL_CHARS`], saying how much was left out.
fn clip(text: &str) -> String {
    match text.char_indices().nth(DETAIL_CHARS) {
        Some((i, _)) => format!("{}\n… ({} more bytes)", &text[..i], text.len() - i),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_tools_ask_with_the_content_or_the_diff() {
        let write = r#"{"file_path":"/etc/motd","content":"hello\n","sandbox_permissions":"danger-full-access","justification":"asked for"}"#;
        let Verdict::Ask(q) = verdict("write", write, SandboxMode::WorkspaceWrite) else {
            panic!("asked");
        };
        assert_eq!(
            q.summary,
            "write /etc/motd under danger-full-access (the session is in workspace-write mode)"
        );
        assert_eq!(q.detail.as_deref(), Some("hello\n"));
        assert_eq!(
            q.grant_key.as_deref(),
            Some("write danger-full-access /etc/motd hello\n")
        );
        let edit = r#"{"file_path":"/etc/hosts","old_string":"a\nb","new_string":"c","sandbox_permissions":"workspace-write","justification":"j"}"#;
        let Verdict::Ask(q) = verdict("edit", edit, SandboxMode::ReadOnly) else {
            panic!("asked");
        };
        assert_eq!(q.detail.as_deref(), Some("-a\n-b\n+c"));
        assert!(q
            .summary
            .starts_with("edit /etc/hosts under workspace-write"));
        let Verdict::Deny(reason) = verdict("edit", edit, SandboxMode::WorkspaceWrite) else {
            panic!("not wider");
        };
        assert!(
            reason.ends_with("run the call without sandbox_permissions"),
            "{reason}"
        );
        let long = format!(
            r#"{{"file_path":"/x","content":"{}","sandbox_permissions":"danger-full-access","justification":"j"}}"#,
            "y".repeat(5000)
        );
        let Verdict::Ask(q) = verdict("write", &long, SandboxMode::ReadOnly) else {
            panic!("asked");
        };
        assert!(q
            .detail
            .unwrap_or_default()
            .ends_with("… (1000 more bytes)"));
    }

    #[test]
    fn only_strictly_wider_requests_are_asked() {
        let args = r#"{"command":"touch /etc/x","description":"d","sandbox_permissions":"danger-full-access","justification":"needs /etc"}"#;
        let Verdict::Ask(q) = verdict("bash", args, SandboxMode::WorkspaceWrite) else {
            panic!("a wider request is asked");
        };
        assert_eq!(q.detail.as_deref(), Some("touch /etc/x"));
        assert_eq!(q.justification.as_deref(), Some("needs /etc"));
        assert_eq!(
            q.grant_key.as_deref(),
            Some("bash danger-full-access touch /etc/x")
        );
        assert!(q.summary.contains("workspace-write mode"), "{}", q.summary);

        let same = r#"{"command":"x","description":"d","sandbox_permissions":"workspace-write","justification":"j"}"#;
        let Verdict::Deny(reason) = verdict("bash", same, SandboxMode::WorkspaceWrite) else {
            panic!("not wider: denied");
        };
        assert!(
            reason.contains("not wider than the current mode workspace-write"),
            "{reason}"
        );
        assert!(matches!(
            verdict("bash", args, SandboxMode::DangerFullAccess),
            Verdict::Deny(_)
        ));
        // Plain calls, other tools and unparsable input are not this
        // guard's business.
        assert_eq!(
            verdict("bash", r#"{"command":"ls"}"#, SandboxMode::ReadOnly),
            Verdict::Allow
        );
        assert_eq!(verdict("read", args, SandboxMode::ReadOnly), Verdict::Allow);
        assert_eq!(verdict("glob", args, SandboxMode::ReadOnly), Verdict::Allow);
        assert_eq!(
            verdict("bash", "{not json", SandboxMode::ReadOnly),
            Verdict::Allow
        );
        let unjustified =
            r#"{"command":"x","description":"d","sandbox_permissions":"danger-full-access"}"#;
        assert_eq!(
            verdict("bash", unjustified, SandboxMode::ReadOnly),
            Verdict::Allow
        );
        assert_eq!(
            verdict(
                "bash",
                r#"{"sandbox_permissions":"root"}"#,
                SandboxMode::ReadOnly
            ),
            Verdict::Allow
        );
    }
}
