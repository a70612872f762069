//! `dsh schema json-schema --spec FILE` and
//! `dsh schema validate --spec FILE --args FILE|-`.
//!
//! A spec file is the schema DSL in JSON (`{"path": {"type": "string",
//! "required": true}}`), or TOML when its name ends in `.toml`. Exit codes:
//! 0 success / valid, 1 invalid arguments, 2 unusable input (a missing or
//! unreadable file, a malformed spec — the message on stderr names the
//! property path —, or arguments that are not JSON: the verdict line still
//! says where the text stops parsing).

use std::io::Read as _;
use std::path::Path;

use dsh_schema::{to_json_schema, validate_args, SchemaSpec};
// The raw-text parser of the typed call path, so that `validate` reports
// unparsable arguments exactly as a tool call would (INVALID_JSON).
use dsh_tools::parse_arguments;

use crate::cli::{SchemaArgs, SchemaCommand};

/// Runs `dsh schema`; returns the exit code.
pub(crate) fn run(args: SchemaArgs) -> u8 {
    match args.command {
        SchemaCommand::JsonSchema { spec, compact } => match load_spec(&spec) {
            Ok(spec) => {
                let schema = to_json_schema(&spec);
                let text = if compact {
                    schema.to_string()
                } else {
                    // Pretty-printing a Value cannot fail; fall back to compact anyway.
                    serde_json::to_string_pretty(&schema).unwrap_or_else(|_| schema.to_string())
                };
                crate::output::emit(&format!("{}\n", crate::sanitize::json_visible(&text)))
            }
            Err(message) => fail(&message),
        },
        SchemaCommand::Validate { spec, args } => {
            let spec = match load_spec(&spec) {
                Ok(spec) => spec,
                Err(message) => return fail(&message),
            };
            let raw = match read_input(&args) {
                Ok(raw) => raw,
                Err(message) => return fail(&message),
            };
            // Same pipeline as a typed tool: unparsable text is reported as
            // a tool call would be (INVALID_JSON, saying where), in the
            // verdict line; it is unusable input, so the exit code is 2.
            let (violations, unusable) = match parse_arguments(&raw, None) {
                Ok(value) => (validate_args(&spec, &value), false),
                Err(e) => (vec![e.message().to_string()], true),
            };
            let valid = violations.is_empty();
            let line = verdict_line(valid, &violations);
            match crate::output::emit(&format!("{}\n", crate::sanitize::json_visible(&line))) {
                0 if valid => 0,
                0 if unusable => 2,
                0 => 1,
                lost => lost,
            }
        }
    }
}

/// `{"valid": <bool>, "violations": [<string>, …]}` on one line, spaced as
/// the contract writes it (any JSON parser reads it the same).
fn verdict_line(valid: bool, violations: &[String]) -> String {
    let items: Vec<String> = violations
        .iter()
        .map(|v| serde_json::Value::String(v.clone()).to_string())
        .collect();
    format!(
        "{{\"valid\": {valid}, \"violations\": [{}]}}",
        items.join(", ")
    )
}

fn fail(message: &str) -> u8 {
    crate::output::say!("dsh schema: {message}");
    2
}

/// Reads and loads a spec file; the error is the message for stderr.
fn load_spec(path: &Path) -> Result<SchemaSpec, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read spec {}: {e}", path.display()))?;
    let is_toml = path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("toml"));
    let loaded = if is_toml {
        toml::from_str::<SchemaSpec>(&text).map_err(|e| e.to_string())
    } else {
        SchemaSpec::from_json_str(&text).map_err(|e| e.to_string())
    };
    loaded.map_err(|e| format!("{}: {e}", path.display()))
}

/// The arguments text from a file, or stdin for `-`.
fn read_input(path: &Path) -> Result<String, String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read arguments from stdin: {e}"))?;
        Ok(text)
    } else {
        std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read arguments {}: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::verdict_line;

    #[test]
    fn verdict_line_is_json_spaced_like_the_contract() {
        assert_eq!(
            verdict_line(true, &[]),
            r#"{"valid": true, "violations": []}"#
        );
        let line = verdict_line(false, &["a \"b\"".into(), "c".into()]);
        assert_eq!(line, r#"{"valid": false, "violations": ["a \"b\"", "c"]}"#);
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["violations"][0], "a \"b\"");
    }
}
