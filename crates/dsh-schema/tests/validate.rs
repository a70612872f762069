//! The violation texts, their order, and the edge cases of `validate_args`.

use dsh_schema::{validate_args, SchemaProp, SchemaSpec, SchemaType};
use serde_json::{json, Value};

fn bash_spec() -> SchemaSpec {
    SchemaSpec::new()
        .with("command", SchemaProp::string().required(true))
        .with("description", SchemaProp::string().required(true))
        .with("timeoutMs", SchemaProp::number())
        .with("workdir", SchemaProp::string())
        .with("run_in_background", SchemaProp::boolean())
}

fn nested_spec() -> SchemaSpec {
    let item = SchemaSpec::new()
        .with("c", SchemaProp::string_enum(["x", "y"]).required(true))
        .with("n", SchemaProp::integer());
    SchemaSpec::new().with(
        "a",
        SchemaProp::object_with(
            SchemaSpec::new()
                .with("b", SchemaProp::string().required(true))
                .with("list", SchemaProp::array_of(SchemaProp::object_with(item))),
        )
        .required(true),
    )
}

fn v(spec: &SchemaSpec, value: Value) -> Vec<String> {
    validate_args(spec, &value)
}

#[test]
fn valid_args_have_no_violations() {
    assert!(v(
        &bash_spec(),
        json!({"command": "ls", "description": "list"})
    )
    .is_empty());
    assert!(v(
        &bash_spec(),
        json!({"command": "ls", "description": "d", "timeoutMs": 1.5, "workdir": "/", "run_in_background": false, "extra": [1]})
    )
    .is_empty());
}

#[test]
fn top_level_must_be_an_object() {
    for bad in [
        json!([]),
        json!("x"),
        json!(null),
        json!(1),
        json!(true),
        json!([{"command": "ls"}]),
    ] {
        assert_eq!(v(&bash_spec(), bad), ["\"arguments\" must be an object"]);
    }
    // Even an empty spec needs an object.
    assert_eq!(
        v(&SchemaSpec::new(), json!([])),
        ["\"arguments\" must be an object"]
    );
    assert!(v(&SchemaSpec::new(), json!({})).is_empty());
}

#[test]
fn every_violation_in_spec_order() {
    assert_eq!(
        v(
            &bash_spec(),
            json!({"timeoutMs": "5", "workdir": 3, "run_in_background": "yes"})
        ),
        [
            "missing required property \"command\"",
            "missing required property \"description\"",
            "\"timeoutMs\" must be a number",
            "\"workdir\" must be a string",
            "\"run_in_background\" must be a boolean",
        ]
    );
}

#[test]
fn null_is_a_present_value_of_the_wrong_type() {
    assert_eq!(
        v(
            &bash_spec(),
            json!({"command": null, "description": "d", "workdir": null})
        ),
        [
            "\"command\" must be a string",
            "\"workdir\" must be a string"
        ]
    );
}

#[test]
fn every_type_noun() {
    let spec = SchemaSpec::new()
        .with("s", SchemaProp::string())
        .with("n", SchemaProp::number())
        .with("i", SchemaProp::integer())
        .with("b", SchemaProp::boolean())
        .with("o", SchemaProp::object())
        .with("a", SchemaProp::array());
    assert_eq!(
        v(
            &spec,
            json!({"s": 1, "n": "1", "i": 1.5, "b": 0, "o": [], "a": {}})
        ),
        [
            "\"s\" must be a string",
            "\"n\" must be a number",
            "\"i\" must be an integer",
            "\"b\" must be a boolean",
            "\"o\" must be an object",
            "\"a\" must be an array",
        ]
    );
}

#[test]
fn integers_are_numbers_without_fraction() {
    let spec = SchemaSpec::new().with("i", SchemaProp::integer());
    for ok in [
        json!(1),
        json!(-3),
        json!(1.0),
        json!(1e3),
        json!(u64::MAX),
        json!(i64::MIN),
    ] {
        assert!(v(&spec, json!({ "i": ok })).is_empty(), "{ok}");
    }
    for bad in [json!(1.5), json!(-0.1), json!("1")] {
        assert_eq!(v(&spec, json!({ "i": bad })), ["\"i\" must be an integer"]);
    }
}

#[test]
fn nested_paths_and_enum_rendering() {
    let spec = nested_spec();
    assert_eq!(
        v(
            &spec,
            json!({"a": {"list": [{"c": "x"}, {"c": "x", "n": 1.5}, {"c": "z"}, {}, 7]}})
        ),
        [
            "missing required property \"a.b\"",
            "\"a.list[1].n\" must be an integer",
            "\"a.list[2].c\" must be one of [\"x\",\"y\"]",
            "missing required property \"a.list[3].c\"",
            "\"a.list[4]\" must be an object",
        ]
    );
    assert_eq!(v(&spec, json!({})), ["missing required property \"a\""]);
    assert_eq!(v(&spec, json!({"a": null})), ["\"a\" must be an object"]);
}

#[test]
fn enum_is_checked_only_after_the_type() {
    let spec = SchemaSpec::new().with("c", SchemaProp::string_enum(["x"]));
    assert_eq!(v(&spec, json!({"c": 1})), ["\"c\" must be a string"]);
    assert_eq!(
        v(&spec, json!({"c": "X"})),
        ["\"c\" must be one of [\"x\"]"]
    );
}

#[test]
fn enum_numbers_compare_by_value() {
    let spec = SchemaSpec::new()
        .with("n", SchemaProp::number().with_enum([json!(1), json!(2.5)]))
        .with("i", SchemaProp::integer().with_enum([json!(1.0), json!(3)]))
        .with("b", SchemaProp::boolean().with_enum([json!(true)]));
    assert!(v(&spec, json!({"n": 1.0, "i": 1, "b": true})).is_empty());
    assert!(v(&spec, json!({"n": 2.5, "i": 3.0})).is_empty());
    assert_eq!(
        v(&spec, json!({"n": 2, "i": 2, "b": false})),
        [
            "\"n\" must be one of [1,2.5]",
            "\"i\" must be one of [1.0,3]",
            "\"b\" must be one of [true]",
        ]
    );
}

#[test]
fn strings_compare_by_exact_code_points() {
    // "é" precomposed vs. "e" + combining accent: different members.
    let spec = SchemaSpec::new().with("s", SchemaProp::string_enum(["caf\u{e9}"]));
    assert!(v(&spec, json!({"s": "caf\u{e9}"})).is_empty());
    assert_eq!(v(&spec, json!({"s": "cafe\u{301}"})).len(), 1);
}

#[test]
fn bounds_are_inclusive_and_exact() {
    let spec = SchemaSpec::new().with(
        "n",
        SchemaProp::integer().with_range(Some(0.into()), Some(u64::MAX.into())),
    );
    assert!(v(&spec, json!({"n": 0})).is_empty());
    assert!(v(&spec, json!({"n": u64::MAX})).is_empty());
    assert_eq!(v(&spec, json!({"n": -1})), ["\"n\" must be at least 0"]);
    // 2^64 parses as a float: beyond u64::MAX, exactly.
    let big: Value = serde_json::from_str(r#"{"n": 18446744073709551616}"#).unwrap();
    assert_eq!(
        validate_args(&spec, &big),
        ["\"n\" must be at most 18446744073709551615"]
    );
    let small = SchemaSpec::new().with(
        "x",
        SchemaProp::number().with_range(Some(0.into()), Some(255.into())),
    );
    assert_eq!(
        v(&small, json!({"x": 255.5})),
        ["\"x\" must be at most 255"]
    );
    assert_eq!(v(&small, json!({"x": -0.5})), ["\"x\" must be at least 0"]);
    assert!(v(&small, json!({"x": 254.5})).is_empty());
}

#[test]
fn default_is_not_applied_and_objects_without_properties_only_check_type() {
    let spec = SchemaSpec::new()
        .with(
            "d",
            SchemaProp::string().required(true).with_default(json!("x")),
        )
        .with("o", SchemaProp::object())
        .with("a", SchemaProp::array());
    assert_eq!(
        v(&spec, json!({"o": {"any": [null]}, "a": [null, {}, 1]})),
        ["missing required property \"d\""]
    );
}

#[test]
fn array_of_arrays_paths() {
    let spec = SchemaSpec::new().with(
        "m",
        SchemaProp::array_of(SchemaProp::array_of(SchemaProp::integer())),
    );
    assert_eq!(
        v(&spec, json!({"m": [[1, 2], [3, "x"], 5]})),
        [
            "\"m[1][1]\" must be an integer",
            "\"m[2]\" must be an array"
        ]
    );
}

#[test]
fn a_key_named_empty_joins_without_a_leading_dot() {
    // A segment is joined with `.` only to a non-empty prefix: the child
    // `a` of key `""` is `a`, not `.a`.
    let inner = SchemaSpec::new()
        .with("a", SchemaProp::string().required(true))
        .with("n", SchemaProp::integer());
    let spec = SchemaSpec::new()
        .with("", SchemaProp::object_with(inner.clone()).required(true))
        .with(
            "list",
            SchemaProp::array_of(SchemaProp::object_with(
                SchemaSpec::new().with("", SchemaProp::object_with(inner.clone())),
            )),
        )
        .with(
            "o",
            SchemaProp::object_with(SchemaSpec::new().with(
                "",
                SchemaProp::object_with(SchemaSpec::new().with("", SchemaProp::object_with(inner))),
            )),
        );
    assert_eq!(v(&spec, json!({})), [r#"missing required property """#]);
    assert_eq!(v(&spec, json!({"": 1})), [r#""" must be an object"#]);
    assert_eq!(
        v(&spec, json!({"": {"n": "x"}})),
        [
            r#"missing required property "a""#,
            r#""n" must be an integer"#
        ]
    );
    assert_eq!(
        v(&spec, json!({"": {"a": "ok"}, "list": [{"": {"a": 1}}]})),
        [r#""list[0]..a" must be a string"#]
    );
    assert_eq!(
        v(&spec, json!({"": {"a": "ok"}, "o": {"": {"": {}}}})),
        [r#"missing required property "o...a""#]
    );
}

#[test]
fn near_miss_notes_under_a_key_named_empty_join_the_same_way() {
    let spec = SchemaSpec::new().with(
        "",
        SchemaProp::object_with(SchemaSpec::new().with("timeoutMs", SchemaProp::number())),
    );
    assert_eq!(
        dsh_schema::near_miss_notes(&spec, &json!({"": {"timeout_ms": 5}}), "bash"),
        [
            r#"note: argument "timeout_ms" is not a parameter of bash and was ignored; did you mean "timeoutMs"?"#
        ]
    );
}

// ---------------------------------------------------------------------------
// The second-edition vocabulary: null, json, const, one_of,
// additionalProperties, lengths and item counts. These pin the wording.

fn kind_file() -> SchemaProp {
    SchemaProp::object_with(
        SchemaSpec::new()
            .with(
                "kind",
                SchemaProp::constant(SchemaType::String, json!("file")).required(true),
            )
            .with("path", SchemaProp::string().required(true)),
    )
}

#[test]
fn one_of_names_each_branch_and_the_first_reason() {
    let spec = SchemaSpec::new().with("x", SchemaProp::one_of([SchemaProp::string(), kind_file()]));
    assert!(validate_args(&spec, &json!({"x": "a"})).is_empty());
    assert!(validate_args(&spec, &json!({"x": {"kind": "file", "path": "p"}})).is_empty());
    assert_eq!(
        validate_args(&spec, &json!({"x": {"kind": "file"}})),
        [
            r#""x" must match exactly one of: a string; an object with "kind": "file" ("path" is missing)"#
        ]
    );
    assert_eq!(
        validate_args(&spec, &json!({"x": {"kind": "dir", "path": "p"}})),
        [
            r#""x" must match exactly one of: a string; an object with "kind": "file" ("kind" must be "file")"#
        ]
    );
    assert_eq!(
        validate_args(&spec, &json!({"x": 3})),
        [r#""x" must match exactly one of: a string; an object with "kind": "file""#]
    );
    let overlapping = SchemaSpec::new().with(
        "x",
        SchemaProp::one_of([
            SchemaProp::integer(),
            SchemaProp::number(),
            SchemaProp::string(),
        ]),
    );
    assert_eq!(
        validate_args(&overlapping, &json!({"x": 2})),
        [r#""x" matches more than one alternative (1, 2)"#]
    );
    let bounded = SchemaSpec::new().with(
        "x",
        SchemaProp::one_of([
            SchemaProp::string().with_length(Some(2), None),
            SchemaProp::constant(SchemaType::String, json!("auto")),
        ]),
    );
    assert_eq!(
        validate_args(&bounded, &json!({"x": "a"})),
        [r#""x" must match exactly one of: a string (must be at least 2 characters long); "auto""#]
    );
}

#[test]
fn null_json_and_const() {
    let spec = SchemaSpec::new()
        .with("n", SchemaProp::null())
        .with("any", SchemaProp::json().required(true))
        .with("c", SchemaProp::constant(SchemaType::Integer, json!(3)));
    assert!(validate_args(
        &spec,
        &json!({"n": null, "any": [1, {"a": null}], "c": 3.0})
    )
    .is_empty());
    assert_eq!(
        validate_args(&spec, &json!({"n": 0, "c": 4})),
        [
            r#""n" must be null"#,
            r#"missing required property "any""#,
            r#""c" must be 3"#
        ]
    );
}

#[test]
fn lengths_in_characters_and_item_counts() {
    let spec = SchemaSpec::new()
        .with("s", SchemaProp::string().with_length(Some(1), Some(3)))
        .with("t", SchemaProp::string().with_length(Some(2), None))
        .with(
            "a",
            SchemaProp::array_of(SchemaProp::integer()).with_item_count(Some(1), Some(2)),
        )
        .with("b", SchemaProp::array().with_item_count(Some(2), None));
    // Three characters, nine bytes.
    assert!(validate_args(&spec, &json!({"s": "äöü", "a": [1]})).is_empty());
    assert_eq!(
        validate_args(&spec, &json!({"s": "", "t": "x", "a": [], "b": [1]})),
        [
            r#""s" must be at least 1 character long"#,
            r#""t" must be at least 2 characters long"#,
            r#""a" must have at least 1 item"#,
            r#""b" must have at least 2 items"#
        ]
    );
    assert_eq!(
        validate_args(&spec, &json!({"s": "abcd", "a": [1, 2, 3]})),
        [
            r#""s" must be at most 3 characters long"#,
            r#""a" must have at most 2 items"#
        ]
    );
}

#[test]
fn closed_nested_objects_name_each_unknown_key() {
    let spec = SchemaSpec::new().with(
        "a",
        SchemaProp::object_with(SchemaSpec::new().with("b", SchemaProp::string()))
            .with_additional_properties(false),
    );
    assert!(validate_args(&spec, &json!({"a": {"b": "x"}, "top": "open"})).is_empty());
    assert_eq!(
        validate_args(&spec, &json!({"a": {"b": "x", "c": 1, "d": 2}})),
        [
            r#""a.c" is not an allowed property"#,
            r#""a.d" is not an allowed property"#
        ]
    );
    let schema = dsh_schema::to_json_schema(&spec);
    assert_eq!(
        schema["properties"]["a"]["additionalProperties"],
        json!(false)
    );
    assert!(
        schema.get("additionalProperties").is_none(),
        "the top level stays open"
    );
}

#[test]
fn new_keywords_load_from_json_and_toml_and_convert() {
    let spec = SchemaSpec::from_json_str(
        r#"{"target": {"oneOf": [{"type": "string", "minLength": 1},
                                  {"type": "object", "additionalProperties": false,
                                   "properties": {"kind": {"type": "string", "const": "file", "required": true}}}]},
            "tags": {"type": "array", "items": {"type": "string"}, "min_items": 1, "maxItems": 4},
            "nothing": {"type": "null"}, "blob": {"type": "json"}}"#,
    )
    .unwrap();
    let schema = dsh_schema::to_json_schema(&spec);
    assert_eq!(
        schema["properties"]["target"],
        json!({"oneOf": [
            {"type": "string", "minLength": 1},
            {"type": "object", "properties": {"kind": {"type": "string", "const": "file"}},
             "required": ["kind"], "additionalProperties": false}
        ]})
    );
    assert_eq!(
        schema["properties"]["tags"],
        json!({"type": "array", "minItems": 1, "maxItems": 4, "items": {"type": "string"}})
    );
    assert_eq!(schema["properties"]["blob"], json!({}));
    assert_eq!(schema["properties"]["nothing"], json!({"type": "null"}));
    let from_toml: SchemaSpec = toml_spec(
        "[target]\none_of = [{ type = \"string\" }, { type = \"integer\" }]\n[name]\ntype = \"string\"\nmin_length = 1\n",
    );
    assert_eq!(from_toml.get("name").unwrap().min_length, Some(1));
    assert_eq!(
        from_toml
            .get("target")
            .unwrap()
            .one_of
            .as_ref()
            .unwrap()
            .len(),
        2
    );
}

#[allow(clippy::unwrap_used)] // a test helper
fn toml_spec(text: &str) -> SchemaSpec {
    // TOML goes through serde: the same loader as JSON.
    let value: serde_json::Value =
        serde_json::to_value(text.parse::<toml::Table>().unwrap()).unwrap();
    SchemaSpec::from_value(&value).unwrap()
}

#[test]
fn bad_uses_of_the_new_keywords_are_spec_errors() {
    let bad = [
        (
            r#"{"a": {"type": "string", "const": 1}}"#,
            r#""const" 1 is not a string"#,
        ),
        (
            r#"{"a": {"type": "object", "const": 1}}"#,
            r#""const" must be a scalar"#,
        ),
        (
            r#"{"a": {"type": "integer", "minLength": 1}}"#,
            "only allowed on string",
        ),
        (
            r#"{"a": {"type": "string", "minLength": 3, "maxLength": 2}}"#,
            "greater than",
        ),
        (
            r#"{"a": {"type": "string", "minLength": -1}}"#,
            "non-negative integer",
        ),
        (
            r#"{"a": {"type": "array", "maxItems": 1.5}}"#,
            "non-negative integer",
        ),
        (
            r#"{"a": {"type": "string", "additionalProperties": false}}"#,
            "only allowed on object",
        ),
        (r#"{"a": {"oneOf": []}}"#, "at least one alternative"),
        (
            r#"{"a": {"type": "string", "oneOf": [{"type": "string"}]}}"#,
            "leave \"type\" out",
        ),
        (r#"{"a": {"oneOf": [{"type": "strin"}]}}"#, "a.oneOf[0]"),
    ];
    for (text, want) in bad {
        let err = SchemaSpec::from_json_str(text).unwrap_err().to_string();
        assert!(err.contains(want), "{text}: {err}");
    }
}

fn escalation_spec() -> SchemaSpec {
    SchemaSpec::new()
        .with("command", SchemaProp::string().required(true))
        .with("sandbox_permissions", SchemaProp::string())
        .with("justification", SchemaProp::string())
        .with_together(&["sandbox_permissions", "justification"])
}

#[test]
fn properties_required_together_are_both_or_neither() {
    let spec = escalation_spec();
    assert!(v(&spec, json!({"command": "ls"})).is_empty());
    assert!(v(
        &spec,
        json!({"command": "ls", "sandbox_permissions": "danger-full-access", "justification": "needs /etc"})
    )
    .is_empty());
    assert_eq!(
        v(
            &spec,
            json!({"command": "ls", "sandbox_permissions": "danger-full-access"})
        ),
        [
            r#""sandbox_permissions" and "justification" must be given together; "justification" is missing"#
        ]
    );
    assert_eq!(
        v(&spec, json!({"justification": "x"})),
        [
            r#"missing required property "command""#,
            r#""sandbox_permissions" and "justification" must be given together; "sandbox_permissions" is missing"#
        ],
        "after the properties' own violations"
    );
    assert!(!dsh_schema::is_valid(
        &spec,
        &json!({"command": "ls", "justification": "x"})
    ));
    assert!(dsh_schema::is_valid(&spec, &json!({"command": "ls"})));
}

#[test]
fn together_groups_are_shown_as_dependent_required_and_load_back() {
    let spec = escalation_spec()
        .with("c", SchemaProp::string())
        .with_together(&["command", "c", "justification"]);
    let shown = dsh_schema::to_json_schema(&spec);
    assert_eq!(
        shown["dependentRequired"],
        json!({
            "sandbox_permissions": ["justification"],
            "justification": ["sandbox_permissions", "command", "c"],
            "command": ["c", "justification"],
            "c": ["command", "justification"],
        })
    );
    // Overlapping groups are not mutual as one dependentRequired map.
    assert!(dsh_schema::classify_json_schema(&shown).is_err());
    let simple = escalation_spec();
    let raw = dsh_schema::classify_json_schema(&dsh_schema::to_json_schema(&simple)).unwrap();
    assert_eq!(raw.spec, simple);
    let one_way = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                         "dependentRequired": {"a": ["b"]}});
    let e = dsh_schema::classify_json_schema(&one_way).unwrap_err();
    assert!(
        e.to_string()
            .contains("dependentRequired that is not mutual"),
        "{e}"
    );
}
