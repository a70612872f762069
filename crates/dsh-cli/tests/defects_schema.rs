//! Issue 33 item 15: a spec file can say "these properties go together"
//! (`"$together"`), `dsh schema json-schema` shows it as
//! `dependentRequired`, and `dsh schema validate` enforces it, in the JSON
//! and the TOML form.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_testkit::cli::{output_within, Home, Outcome, LIMIT};

/// `dsh schema ARGS…` in `home`: its exit code, stdout and stderr.
fn dsh_schema(home: &Home, args: &[&str]) -> (i32, String, String) {
    let mut c = home.dsh();
    c.arg("schema").args(args);
    Outcome::from(output_within(c, None, LIMIT)).into_parts()
}

const JSON_SPEC: &str = r#"{
  "command": {"type": "string", "required": true},
  "sandbox_permissions": {"type": "string", "enum": ["require_escalated"]},
  "justification": {"type": "string"},
  "$together": [["sandbox_permissions", "justification"]]
}"#;

const TOML_SPEC: &str = r#"
"$together" = [["sandbox_permissions", "justification"]]

[command]
type = "string"
required = true

[sandbox_permissions]
type = "string"
enum = ["require_escalated"]

[justification]
type = "string"
"#;

#[test]
fn a_spec_file_declaring_a_group_shows_and_enforces_it() {
    let dir = Home::new(env!("CARGO_BIN_EXE_dsh"));
    std::fs::write(dir.path().join("spec.json"), JSON_SPEC).unwrap();
    std::fs::write(dir.path().join("spec.toml"), TOML_SPEC).unwrap();
    std::fs::write(
        dir.path().join("partial.json"),
        r#"{"command": "rm -rf build", "sandbox_permissions": "require_escalated"}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("whole.json"),
        r#"{"command": "ls", "sandbox_permissions": "require_escalated", "justification": "why"}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("neither.json"), r#"{"command": "ls"}"#).unwrap();
    for spec in ["spec.json", "spec.toml"] {
        let (code, stdout, stderr) =
            dsh_schema(&dir, &["json-schema", "--spec", spec, "--compact"]);
        assert_eq!(code, 0, "{spec}: {stderr}");
        let schema: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(
            schema["dependentRequired"],
            serde_json::json!({
                "sandbox_permissions": ["justification"],
                "justification": ["sandbox_permissions"]
            }),
            "{spec}: {stdout}"
        );
        assert!(
            schema["properties"].get("$together").is_none(),
            "{spec}: the group key is not a property: {stdout}"
        );

        let (code, stdout, _) = dsh_schema(
            &dir,
            &["validate", "--spec", spec, "--args", "partial.json"],
        );
        assert_eq!(code, 1, "{spec}: {stdout}");
        assert_eq!(
            stdout.trim(),
            r#"{"valid": false, "violations": ["\"sandbox_permissions\" and \"justification\" must be given together; \"justification\" is missing"]}"#
        );
        for args in ["whole.json", "neither.json"] {
            let (code, stdout, stderr) =
                dsh_schema(&dir, &["validate", "--spec", spec, "--args", args]);
            assert_eq!(code, 0, "{spec} {args}: {stdout}{stderr}");
        }
    }
}

#[test]
fn a_group_naming_no_property_is_an_unusable_spec() {
    let dir = Home::new(env!("CARGO_BIN_EXE_dsh"));
    std::fs::write(
        dir.path().join("spec.json"),
        r#"{"a": {"type": "string"}, "$together": [["a", "b"]]}"#,
    )
    .unwrap();
    let (code, stdout, stderr) = dsh_schema(&dir, &["json-schema", "--spec", "spec.json"]);
    assert_eq!(code, 2, "{stdout}");
    assert!(
        stderr.contains(r#""$together[0]": names "b", which is not a property"#),
        "{stderr}"
    );
}
