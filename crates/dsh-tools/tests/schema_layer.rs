//! The schema layer comes from dsh-schema: its items are re-exported
//! unchanged, and its two error codes agree with `dsh_tools::codes`.

use dsh_tools::{codes, ErrorCode, SpecError, ToolArgsError, ToolError};

#[test]
fn schema_error_codes_agree_with_the_tool_codes() {
    assert_eq!(SpecError::new("a", "bad").code(), codes::INVALID_SPEC);
    assert_eq!(ToolArgsError::new(vec![]).code(), codes::INVALID_ARGS);
    let spec: ToolError = SpecError::new("a", "bad").into();
    assert_eq!(spec.code(), codes::INVALID_SPEC);
    assert_eq!(spec.message(), r#"invalid schema spec: property "a": bad"#);
    let args: ToolError = ToolArgsError::new(vec!["x".into(), "y".into()]).into();
    assert_eq!(args.code(), codes::INVALID_ARGS);
    assert_eq!(args.message(), "invalid arguments: x; y");
    assert_eq!(args.violations(), ["x", "y"]);
}

#[test]
fn reexports_are_the_schema_crate_items() {
    let spec: dsh_schema::SchemaSpec =
        dsh_tools::SchemaSpec::new().with("a", dsh_schema::SchemaProp::string());
    assert_eq!(
        dsh_tools::to_json_schema(&spec),
        dsh_schema::to_json_schema(&spec)
    );
}
