//! Loading specs (JSON and TOML), load-time errors, and the conversion.

use dsh_protocol::codes::ErrorCode;
use dsh_schema::{to_json_schema, SchemaProp, SchemaSpec, SchemaType};
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

#[test]
fn empty_descriptions_are_omitted_at_every_level() {
    let empty = || Some(String::new());
    let mut leaf = SchemaProp::string();
    leaf.description = empty();
    let mut item = SchemaProp::integer();
    item.description = empty();
    let mut list = SchemaProp::array_of(item);
    list.description = empty();
    let mut inner = SchemaProp::object_with(SchemaSpec::new().with("leaf", leaf.clone()));
    inner.description = empty();
    let mut outer = SchemaProp::object_with(
        SchemaSpec::new()
            .with("inner", inner)
            .with("list", list.clone())
            .with("kept", SchemaProp::boolean().with_description("kept")),
    );
    outer.description = empty();
    let spec = SchemaSpec::new()
        .with("leaf", leaf)
        .with("list", list)
        .with("outer", outer)
        .with(
            "grid",
            SchemaProp::array_of(SchemaProp::array_of({
                let mut cell = SchemaProp::number();
                cell.description = empty();
                cell
            })),
        );
    assert_eq!(
        serde_json::to_string(&to_json_schema(&spec)).unwrap(),
        r#"{"type":"object","properties":{"leaf":{"type":"string"},"list":{"type":"array","items":{"type":"integer"}},"outer":{"type":"object","properties":{"inner":{"type":"object","properties":{"leaf":{"type":"string"}}},"list":{"type":"array","items":{"type":"integer"}},"kept":{"type":"boolean","description":"kept"}}},"grid":{"type":"array","items":{"type":"array","items":{"type":"number"}}}}}"#
    );
    // Loaded specs behave the same.
    let loaded = SchemaSpec::from_value(&json!({
        "a": {"type": "string", "description": ""},
        "b": {"type": "array", "items": {"type": "object", "description": "", "properties": {
            "c": {"type": "integer", "description": ""}
        }}}
    }))
    .unwrap();
    assert_eq!(
        to_json_schema(&loaded),
        json!({"type": "object", "properties": {
            "a": {"type": "string"},
            "b": {"type": "array", "items": {"type": "object", "properties": {
                "c": {"type": "integer"}
            }}}
        }})
    );
}

#[test]
fn enum_numbers_keep_their_exact_value_through_loading_and_printing() {
    // 123456789012345683968 is exactly an f64 (beyond u64, so it is held as
    // one); 123456789012345678901 is not, and its nearest f64 is the same
    // value. Parsing must round correctly, and printing must give text that
    // parses back to that very value.
    const EXACT: u128 = 123456789012345683968;
    let spec = SchemaSpec::from_json_str(
        r#"{"n": {"type": "number", "enum": [123456789012345683968, 123456789012345678901]}}"#,
    )
    .unwrap();
    let text = to_json_schema(&spec).to_string();
    // serde_json prints an f64 in its shortest round-trip form.
    assert_eq!(
        text,
        r#"{"type":"object","properties":{"n":{"type":"number","enum":[1.2345678901234568e+20,1.2345678901234568e+20]}}}"#
    );
    let back: serde_json::Value = serde_json::from_str(&text).unwrap();
    for member in back["properties"]["n"]["enum"].as_array().unwrap() {
        let f = member.as_f64().unwrap();
        assert_eq!(f as u128, EXACT, "{member}");
    }
    // Loaded members hold that value, and a model sending the exact digits
    // is accepted.
    for m in spec.get("n").unwrap().enum_values.as_ref().unwrap() {
        assert_eq!(m.as_f64().map(|f| f as u128), Some(EXACT), "{m}");
    }
    let args: serde_json::Value = serde_json::from_str(r#"{"n": 123456789012345683968}"#).unwrap();
    assert!(dsh_schema::is_valid(&spec, &args));
}

#[test]
fn spec_error_paths_under_a_key_named_empty_join_without_a_leading_dot() {
    let err = |v: serde_json::Value| SchemaSpec::from_value(&v).unwrap_err();
    let e = err(json!({"": {"type": "object", "properties": {"a": {"type": "x"}}}}));
    assert_eq!(e.path(), "a");
    assert_eq!(
        e.to_string(),
        r#"invalid schema spec: property "a": unknown type "x" (expected one of string, number, integer, boolean, object, array, null, json)"#
    );
    let e = err(
        json!({"o": {"type": "object", "properties": {"": {"type": "object", "properties": {"a": {"type": 1}}}}}}),
    );
    assert_eq!(e.path(), "o..a");
    let e =
        err(json!({"": {"type": "array", "items": {"type": "object", "properties": {"b": {}}}}}));
    assert_eq!(e.path(), "[].b");
    // Specs built in code report the same paths.
    let built = SchemaSpec::new().with(
        "",
        SchemaProp::object_with(
            SchemaSpec::new().with("a", SchemaProp::string().with_enum([json!(1)])),
        ),
    );
    assert_eq!(built.check().unwrap_err().path(), "a");
}

/// The bash tool's shape: two optional properties given together.
fn escalating() -> SchemaSpec {
    SchemaSpec::new()
        .with("command", SchemaProp::string().required(true))
        .with("sandbox_permissions", SchemaProp::string())
        .with("justification", SchemaProp::string())
        .with_together(&["sandbox_permissions", "justification"])
}

#[test]
fn together_groups_serialize_under_their_key_and_load_back() {
    let spec = escalating();
    let value = serde_json::to_value(&spec).unwrap();
    assert_eq!(
        value["$together"],
        json!([["sandbox_permissions", "justification"]])
    );
    let back: SchemaSpec = serde_json::from_value(value).unwrap();
    assert_eq!(back, spec);
    assert_eq!(
        to_json_schema(&back)["dependentRequired"],
        json!({"sandbox_permissions": ["justification"], "justification": ["sandbox_permissions"]})
    );
    // TOML too: the key is quoted, and comes before the property tables.
    let text = toml::to_string(&spec).unwrap();
    assert!(text.starts_with("\"$together\" = "), "{text}");
    let back: SchemaSpec = toml::from_str(&text).unwrap();
    assert_eq!(back, spec);
    // Without groups the key is absent.
    let plain = SchemaSpec::new().with("a", SchemaProp::string());
    assert_eq!(
        serde_json::to_value(&plain).unwrap(),
        json!({"a": {"type": "string"}})
    );
}

#[test]
fn a_spec_file_declares_groups_and_they_are_enforced() {
    let text = r#"
"$together" = [["sandbox_permissions", "justification"]]

[command]
type = "string"
required = true

[sandbox_permissions]
type = "string"

[justification]
type = "string"
"#;
    let spec: SchemaSpec = toml::from_str(text).unwrap();
    assert_eq!(spec, escalating());
    assert_eq!(
        dsh_schema::validate_args(&spec, &json!({"command": "ls", "justification": "x"})),
        [
            r#""sandbox_permissions" and "justification" must be given together; "sandbox_permissions" is missing"#
        ]
    );
}

#[test]
fn malformed_groups_are_refused_with_their_place() {
    let props = || {
        json!({"a": {"type": "string"}, "b": {"type": "string"}})
            .as_object()
            .unwrap()
            .clone()
    };
    let with = |groups: serde_json::Value| {
        let mut m = props();
        m.insert("$together".into(), groups);
        load(serde_json::Value::Object(m)).unwrap_err()
    };
    assert!(with(json!("a,b")).contains("must be a list of groups"));
    assert!(with(json!(["a", "b"])).contains(r#""$together[0]": a group must be a list"#));
    assert!(with(json!([["a", 1]])).contains("a property name must be a string"));
    assert!(with(json!([["a"]])).contains("at least two property names"));
    assert!(with(json!([["a", "a"]])).contains("names \"a\" twice"));
    let unknown = with(json!([["a", "c"]]));
    assert!(
        unknown.contains(r#""$together[0]": names "c", which is not a property"#)
            && unknown.contains("(properties: a, b)"),
        "{unknown}"
    );
    let nested = load(json!({"o": {"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "string"}, "$together": [["a", "b"]]
    }}}))
    .unwrap_err();
    assert!(
        nested.contains(r#""o.$together": "#) && nested.contains("top level"),
        "{nested}"
    );
}

#[test]
fn nested_objects_never_carry_groups_and_check_agrees_with_load() {
    // object_with drops the groups of the spec it nests (a derived struct
    // with #[tool(together)] used as a property).
    let nested = SchemaProp::object_with(escalating());
    assert!(nested.properties.as_ref().unwrap().together().is_empty());
    // Set by hand, they fail the same check loading applies.
    let mut by_hand = SchemaProp::object();
    by_hand.properties = Some(escalating());
    let spec = SchemaSpec::new().with("o", by_hand);
    assert_eq!(spec.check().unwrap_err().path(), "o.$together");
    // A group naming a property the spec lacks, built in code.
    let ghost = SchemaSpec::new()
        .with("a", SchemaProp::string())
        .with_together(&["a", "ghost"]);
    assert_eq!(ghost.check().unwrap_err().path(), "$together[0]");
    // The key is not a property name.
    let named = SchemaSpec::new().with("$together", SchemaProp::string());
    assert!(named
        .check()
        .unwrap_err()
        .to_string()
        .contains("not a property name"));
}
