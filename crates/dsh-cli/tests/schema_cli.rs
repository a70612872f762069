//! `dsh schema …` through the built binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn dsh(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dsh"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the dsh binary runs");
    if let Some(input) = stdin {
        let written = child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(input.as_bytes());
        // dsh may exit on a usage error before reading its input.
        if let Err(e) = written {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
    }
    drop(child.stdin.take());
    child.wait_with_output().expect("dsh finishes")
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("temp file is writable");
    path
}

const SPEC: &str = r#"{
  "command": {"type": "string", "required": true, "description": "the command"},
  "timeoutMs": {"type": "number"},
  "opts": {"type": "object", "properties": {"mode": {"type": "string", "enum": ["a", "b"], "required": true}}}
}"#;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn json_schema_prints_the_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "spec.json", SPEC);
    let out = dsh(
        &["schema", "json-schema", "--spec", spec.to_str().unwrap()],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let schema: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        schema,
        serde_json::json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "the command"},
                "timeoutMs": {"type": "number"},
                "opts": {"type": "object", "properties": {"mode": {"type": "string", "enum": ["a", "b"]}}, "required": ["mode"]}
            },
            "required": ["command"]
        })
    );
    // Order is kept in the printed text.
    let text = stdout(&out);
    assert!(text.find("command").unwrap() < text.find("timeoutMs").unwrap());
    let compact = dsh(
        &[
            "schema",
            "json-schema",
            "--compact",
            "--spec",
            spec.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(stdout(&compact).lines().count(), 1);
}

#[test]
fn toml_specs_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(
        dir.path(),
        "spec.toml",
        "[zeta]\ntype = \"string\"\nrequired = true\n\n[alpha]\ntype = \"integer\"\n",
    );
    let out = dsh(
        &[
            "schema",
            "json-schema",
            "--compact",
            "--spec",
            spec.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        stdout(&out).trim(),
        r#"{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}},"required":["zeta"]}"#
    );
}

#[test]
fn validate_valid_and_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "spec.json", SPEC);
    let spec = spec.to_str().unwrap();
    let good = write(
        dir.path(),
        "good.json",
        r#"{"command": "ls", "opts": {"mode": "a"}}"#,
    );
    let out = dsh(
        &[
            "schema",
            "validate",
            "--spec",
            spec,
            "--args",
            good.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(stdout(&out), "{\"valid\": true, \"violations\": []}\n");

    let bad = write(
        dir.path(),
        "bad.json",
        r#"{"timeoutMs": "5", "opts": {"mode": "c"}}"#,
    );
    let out = dsh(
        &[
            "schema",
            "validate",
            "--spec",
            spec,
            "--args",
            bad.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        report,
        serde_json::json!({"valid": false, "violations": [
            "missing required property \"command\"",
            "\"timeoutMs\" must be a number",
            "\"opts.mode\" must be one of [\"a\",\"b\"]"
        ]})
    );
    assert_eq!(stdout(&out).lines().count(), 1);
}

#[test]
fn validate_reads_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "spec.json", SPEC);
    let spec = spec.to_str().unwrap();
    let out = dsh(
        &["schema", "validate", "--spec", spec, "--args", "-"],
        Some(r#"{"command":"x"}"#),
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = dsh(
        &["schema", "validate", "--spec", spec, "--args", "-"],
        Some("[1]"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stdout(&out),
        "{\"valid\": false, \"violations\": [\"\\\"arguments\\\" must be an object\"]}\n"
    );
    // Empty input means {} (as at the model boundary).
    let out = dsh(
        &["schema", "validate", "--spec", spec, "--args", "-"],
        Some(""),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("missing required property"));
    // Unparsable arguments are unusable input; the verdict says where.
    let out = dsh(
        &["schema", "validate", "--spec", spec, "--args", "-"],
        Some("{\"command\":"),
    );
    assert_eq!(out.status.code(), Some(2), "not JSON is unusable input");
    assert!(stdout(&out).contains("not valid JSON"), "{}", stdout(&out));
}

#[test]
fn unusable_input_exits_2_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "spec.json", SPEC);
    let spec = spec.to_str().unwrap();
    let missing = dir.path().join("nope.json");
    let missing = missing.to_str().unwrap();

    let out = dsh(&["schema", "json-schema", "--spec", missing], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read spec"));
    assert!(out.stdout.is_empty());

    let out = dsh(
        &["schema", "validate", "--spec", spec, "--args", missing],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read arguments"));

    let broken = write(
        dir.path(),
        "broken.json",
        r#"{"a": {"type": "object", "properties": {"b": {"type": "strng"}}}}"#,
    );
    let out = dsh(
        &[
            "schema",
            "validate",
            "--spec",
            broken.to_str().unwrap(),
            "--args",
            "-",
        ],
        Some("{}"),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("property \"a.b\": unknown type \"strng\""),
        "{err}"
    );

    let not_json = write(dir.path(), "spec2.json", "{");
    let out = dsh(
        &[
            "schema",
            "json-schema",
            "--spec",
            not_json.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));

    let bad_toml = write(
        dir.path(),
        "spec.toml",
        "[a]\ntype = \"string\"\nrequired = \"yes\"\n",
    );
    let out = dsh(
        &[
            "schema",
            "json-schema",
            "--spec",
            bad_toml.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"required\" must be true or false"));
}
