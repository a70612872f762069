//! Loading specs (JSON and TOML), load-time errors, and the conversion.

use dsh_tools::{to_json_schema, SchemaProp, SchemaSpec, SchemaType};
use serde_json::json;

fn load(v: serde_json::Value) -> Result<SchemaSpec, String> {
    SchemaSpec::from_value(&v).map_err(|e| e.to_string())
}

#[test]
fn loads_the_reference_json_form_in_order() {
    let spec: SchemaSpec = serde_json::from_value(json!({
        "zeta": {"type": "string", "required": true, "description": "last letter"},
        "alpha": {"type": "integer", "minimum": 0},
        "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
        "opts": {"type": "object", "properties": {"x": {"type": "boolean", "required": true}}},
        "list": {"type": "array", "items": {"type": "number"}}
    }))
    .unwrap();
    let names: Vec<&str> = spec.names().collect();
    assert_eq!(names, ["zeta", "alpha", "mode", "opts", "list"]);
    let zeta = spec.get("zeta").unwrap();
    assert_eq!(zeta.ty, SchemaType::String);
    assert!(zeta.required);
    assert_eq!(zeta.description.as_deref(), Some("last letter"));
    assert_eq!(
        spec.get("list").unwrap().items.as_deref(),
        Some(&SchemaProp::number())
    );
    // Serialize back: the same JSON form (required only when true).
    let back = serde_json::to_value(&spec).unwrap();
    assert_eq!(
        back["zeta"],
        json!({"type": "string", "required": true, "description": "last letter"})
    );
    assert_eq!(back["alpha"], json!({"type": "integer", "minimum": 0}));
    let again: SchemaSpec = serde_json::from_value(back).unwrap();
    assert_eq!(again, spec);
}

#[test]
fn loads_toml_in_document_order() {
    let text = r#"
[command]
type = "string"
required = true
description = "the bash command"

[timeoutMs]
type = "number"

[mode]
type = "string"
enum = ["fast", "slow"]

[opts]
type = "object"
[opts.properties.depth]
type = "integer"
required = true
"#;
    let spec: SchemaSpec = toml::from_str(text).unwrap();
    let names: Vec<&str> = spec.names().collect();
    assert_eq!(names, ["command", "timeoutMs", "mode", "opts"]);
    let depth = spec
        .get("opts")
        .unwrap()
        .properties
        .as_ref()
        .unwrap()
        .get("depth")
        .unwrap();
    assert!(depth.required);
    assert_eq!(depth.ty, SchemaType::Integer);
}

#[test]
fn malformed_specs_name_the_property_path() {
    let cases = [
        (json!([1]), "invalid schema spec: a spec must be an object mapping property names to properties, got an array"),
        (json!({"a": {"type": "strng"}}), "property \"a\": unknown type \"strng\""),
        (json!({"a": {"required": true}}), "property \"a\": missing \"type\""),
        (json!({"a": {"type": "string", "required": "yes"}}), "property \"a\": \"required\" must be true or false, got a string"),
        (json!({"a": {"type": "string", "enum": "x"}}), "property \"a\": \"enum\" must be a list of values"),
        (json!({"a": {"type": "object", "enum": [1]}}), "property \"a\": \"enum\" is not allowed on an object property"),
        (json!({"a": {"type": "array", "enum": [1]}}), "\"enum\" is not allowed on an array property"),
        (json!({"a": {"type": "string", "enum": [{"x": 1}]}}), "\"enum\" values must be strings, numbers or booleans, got an object"),
        (json!({"a": {"type": "string", "enum": [1]}}), "\"enum\" value 1 is not a string"),
        (json!({"a": {"type": "string", "enum": []}}), "\"enum\" must list at least one value"),
        (json!({"a": {"type": "object", "properties": {"b": {"type": 3}}}}), "property \"a.b\": \"type\" must be a string, got a number"),
        (json!({"a": {"type": "array", "items": {"type": "object", "properties": {"c": {"type": "x"}}}}}), "property \"a[].c\": unknown type \"x\""),
        (json!({"a": {"type": "string", "items": {"type": "string"}}}), "property \"a\": \"items\" is only allowed on array properties"),
        (json!({"a": {"type": "string", "properties": {}}}), "\"properties\" is only allowed on object properties"),
        (json!({"a": {"type": "string", "requried": true}}), "property \"a\": unknown key \"requried\""),
        (json!({"a": {"type": "string", "minimum": 1}}), "\"minimum\" is only allowed on number and integer properties"),
        (json!({"a": {"type": "integer", "minimum": 3, "maximum": 1}}), "\"minimum\" 3 is greater than \"maximum\" 1"),
        (json!({"a": "string"}), "property \"a\": a property must be an object"),
        (json!({"a": {"type": "string", "description": 5}}), "\"description\" must be a string"),
        (json!({"a": {"type": "integer", "default": "5"}}), "property \"a\": \"default\" \"5\" is not an integer"),
    ];
    for (spec, expected) in cases {
        let err = load(spec.clone()).unwrap_err();
        assert!(
            err.contains(expected),
            "spec {spec}: got {err:?}, expected {expected:?}"
        );
    }
}

#[test]
fn toml_errors_go_through_serde() {
    let err = toml::from_str::<SchemaSpec>("[a]\ntype = \"nope\"\n").unwrap_err();
    assert!(err.to_string().contains("unknown type \"nope\""), "{err}");
}

#[test]
fn conversion_keeps_order_required_at_every_level_and_copies_fields() {
    let spec = SchemaSpec::new()
        .with(
            "command",
            SchemaProp::string().required(true).with_description("cmd"),
        )
        .with(
            "mode",
            SchemaProp::string_enum(["a", "b"]).with_default(json!("a")),
        )
        .with(
            "opts",
            SchemaProp::object_with(
                SchemaSpec::new()
                    .with("depth", SchemaProp::integer().required(true))
                    .with("loose", SchemaProp::object()),
            )
            .required(true),
        )
        .with("tags", SchemaProp::array_of(SchemaProp::string()))
        .with("any", SchemaProp::array());
    let schema = to_json_schema(&spec);
    assert_eq!(
        serde_json::to_string(&schema).unwrap(),
        r#"{"type":"object","properties":{"command":{"type":"string","description":"cmd"},"mode":{"type":"string","enum":["a","b"],"default":"a"},"opts":{"type":"object","properties":{"depth":{"type":"integer"},"loose":{"type":"object"}},"required":["depth"]},"tags":{"type":"array","items":{"type":"string"}},"any":{"type":"array"}},"required":["command","opts"]}"#
    );
}

#[test]
fn empty_spec_converts_without_required() {
    assert_eq!(
        to_json_schema(&SchemaSpec::new()),
        json!({"type": "object", "properties": {}})
    );
}

#[test]
fn check_catches_bad_specs_built_in_code() {
    let spec = SchemaSpec::new().with(
        "o",
        SchemaProp::object_with(
            SchemaSpec::new().with("e", SchemaProp::integer().with_enum([json!("x")])),
        ),
    );
    let err = spec.check().unwrap_err();
    assert_eq!(err.path(), "o.e");
    assert_eq!(err.code(), "INVALID_SPEC");
}
