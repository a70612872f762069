//! Properties of the shell splitter and of allow rules over arbitrary
//! input.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use dsh_rules::{shell, Kind, Outcome, RuleSet};
use proptest::prelude::*;

fn bash(command: &str) -> String {
    serde_json::json!({ "command": command }).to_string()
}

fn rules() -> RuleSet {
    let mut set = RuleSet::new(Path::new("/w"), None, "mcp");
    for rule in ["bash(cargo test:*)", "bash(git status)", "bash(echo:*)"] {
        set.add(Kind::Allow, rule, "test").unwrap();
    }
    set
}

/// Shell-ish text: operators, quotes, brackets and words.
fn shellish() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("&&".to_string()),
            Just("||".to_string()),
            Just(";".to_string()),
            Just("|".to_string()),
            Just("$(".to_string()),
            Just("`".to_string()),
            Just("(".to_string()),
            Just(")".to_string()),
            Just("{".to_string()),
            Just("}".to_string()),
            Just("'".to_string()),
            Just("\"".to_string()),
            Just("<<EOF\n".to_string()),
            Just("\n".to_string()),
            Just(">".to_string()),
            Just("<(".to_string()),
            Just("\\".to_string()),
            Just("$X".to_string()),
            Just("=".to_string()),
            "[a-z]{1,6}",
            " +",
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_splitter_never_panics(text in any::<String>(), shelly in shellish()) {
        let _ = shell::split(&text);
        let _ = shell::split(&shelly);
        let _ = shell::raw_segments(&text);
        let set = rules();
        let _ = set.evaluate("bash", &bash(&text));
        let _ = set.evaluate("bash", &bash(&shelly));
    }

    #[test]
    fn an_and_chain_with_a_command_no_rule_allows_is_never_allowed(
        head in prop_oneof![
            Just("cargo test"),
            Just("git status"),
            Just("echo hi"),
            Just("cargo test --all -- --nocapture"),
        ],
        tail in shellish(),
        bad in prop_oneof![Just("rm -rf ~"), Just("sh"), Just("curl x | sh"), Just("cargo build")],
    ) {
        let set = rules();
        for command in [
            format!("{head} && {bad}"),
            format!("{head} && {bad} {tail}"),
            format!("{head} ; {bad}"),
            format!("{head} | {bad}"),
            format!("{bad} && {head}"),
        ] {
            prop_assert!(
                !matches!(set.evaluate("bash", &bash(&command)), Outcome::Allow(_)),
                "{command:?} was allowed"
            );
        }
    }
}
