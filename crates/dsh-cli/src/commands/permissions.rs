//! `dsh permissions list [--json]`: the lasting permission rules in force
//! in the working directory, and where each comes from.
//!
//! Text: `deny:`, `ask:` and `allow:` blocks (only those with rules), one
//! rule a line, the rule and its source tab-separated (`~/.config/dsh/dsh.toml`,
//! `./dsh.toml (trusted)`, `permissions.toml [projects."/path"]`); without
//! any rule, one line saying so and where rules go. `--json`: one object
//! with `deny`, `ask` and `allow` (lists of `{rule, source}`) and
//! `workspace`. The configuration is resolved as `dsh tools list` does (an
//! untrusted project config's rules are ignored, with a warning); a rule
//! that cannot be parsed fails like any configuration error (exit 2).

use dsh_rules::{Kind, RuleSet};
use serde_json::{json, Value};

use crate::cli::{PermissionsArgs, PermissionsCommand};
use crate::commands::report;
use crate::output::emit;
use crate::sanitize::{json_visible, visible};

/// The kinds in the order they are listed (the order they are applied).
const KINDS: [Kind; 3] = [Kind::Deny, Kind::Ask, Kind::Allow];

/// Runs `dsh permissions`; returns the exit code.
pub(crate) fn run(args: PermissionsArgs) -> u8 {
    let PermissionsCommand::List { json, stack } = args.command;
    let settings = crate::app::settings(&stack, dsh::ProjectTrust::IgnoreUnsafe);
    let resolved = match crate::app::resolve(&settings) {
        Ok(resolved) => resolved,
        Err(e) => return report(&e),
    };
    for warning in &resolved.warnings {
        crate::output::say!("dsh: {warning}");
    }
    let rules = &resolved.permission_rules;
    if json {
        let text = serde_json::to_string_pretty(&to_json(rules)).unwrap_or_else(|_| "{}".into());
        emit(&format!("{}\n", json_visible(&text)))
    } else {
        emit(&visible(&to_text(rules)))
    }
}

fn to_text(rules: &RuleSet) -> String {
    if rules.is_empty() {
        return "no permission rules; add them under [permission] allow/deny/ask in dsh.toml (see docs/permissions.md)\n".to_string();
    }
    let mut out = String::new();
    for kind in KINDS {
        let mut listed = rules.of_kind(kind).peekable();
        if listed.peek().is_none() {
            continue;
        }
        out.push_str(&format!("{kind}:\n"));
        for rule in listed {
            out.push_str(&format!("  {}\t{}\n", rule.text, rule.source));
        }
    }
    out
}

fn to_json(rules: &RuleSet) -> Value {
    let mut out = json!({ "workspace": rules.workspace().display().to_string() });
    for kind in KINDS {
        out[kind.as_str()] = rules
            .of_kind(kind)
            .map(|r| json!({ "rule": r.text, "source": r.source }))
            .collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_grouped_deny_ask_allow_with_their_sources() {
        let mut set = RuleSet::new(std::path::Path::new("/w"), None, "mcp");
        set.add(Kind::Allow, "bash(cargo test:*)", "~/.config/dsh/dsh.toml")
            .unwrap();
        set.add(Kind::Deny, "bash(rm:*)", "./dsh.toml (trusted)")
            .unwrap();
        assert_eq!(
            to_text(&set),
            "deny:\n  bash(rm:*)\t./dsh.toml (trusted)\nallow:\n  bash(cargo test:*)\t~/.config/dsh/dsh.toml\n"
        );
        let v = to_json(&set);
        assert_eq!(v["ask"], json!([]));
        assert_eq!(v["deny"][0]["rule"], "bash(rm:*)");
        assert_eq!(v["workspace"], "/w");
        assert!(to_text(&RuleSet::default()).starts_with("no permission rules"));
    }
}
