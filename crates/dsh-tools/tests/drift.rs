//! The drift guard for derived types: every value validation accepts
//! deserializes (no ARGS_DRIFT), and every value of the type, serialized,
//! validates clean.

#[path = "../src/testing.rs"]
#[allow(dead_code, unused_imports, unreachable_pub)]
mod testing;

use std::collections::{BTreeSet, HashSet};

use dsh_tools::{ErrorCode, NoArgs, ToolArgs};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

const CASES: u32 = 256;

#[derive(Debug, Clone, Serialize, Deserialize, ToolArgs)]
struct BashArgs {
    /// The bash command to run.
    command: String,
    description: String,
    #[serde(rename = "timeoutMs")]
    timeout_ms: Option<f64>,
    workdir: Option<String>,
    #[serde(default)]
    run_in_background: bool,
}

#[derive(
    Debug, Clone, Copy, Serialize, Deserialize, ToolArgs, PartialEq, Eq, Hash, PartialOrd, Ord,
)]
#[serde(rename_all = "snake_case")]
enum Level {
    Low,
    MidHigh,
    #[serde(rename = "max")]
    Maximum,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToolArgs)]
#[serde(rename_all = "camelCase")]
struct Inner {
    max_depth: u8,
    follow_links: Option<bool>,
    levels: Vec<Level>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToolArgs)]
struct Shared {
    verbose: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToolArgs)]
struct Everything {
    level: Level,
    inner: Inner,
    maybe_inner: Option<Inner>,
    matrix: Vec<Vec<i16>>,
    set: BTreeSet<Level>,
    hashed: HashSet<u32>,
    meta: Map<String, Value>,
    ratio: f32,
    precise: f64,
    tiny: i8,
    unsigned: u64,
    signed: i64,
    wide: i128,
    uwide: u128,
    size: usize,
    boxed: Box<u32>,
    #[serde(skip)]
    #[allow(dead_code)]
    skipped: String,
    #[serde(default = "seven")]
    defaulted: u16,
    #[serde(flatten)]
    shared: Shared,
    r#type: Option<String>,
}

fn seven() -> u16 {
    7
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToolArgs)]
#[serde(default, rename_all = "SCREAMING-KEBAB-CASE")]
struct AllDefault {
    some_text: String,
    some_number: u32,
    nested: Option<Shared>,
}

/// The bash tool's escalation pair, as the real `BashArgs` declares it.
#[derive(Debug, Clone, Serialize, Deserialize, ToolArgs)]
#[tool(together("sandbox_permissions", "justification"))]
struct Escalation {
    command: String,
    sandbox_permissions: Option<String>,
    justification: Option<String>,
}

/// Groups of its own, groups brought by a flattened struct, and a struct
/// with groups nested as a property (where it carries none).
#[derive(Debug, Clone, Serialize, Deserialize, ToolArgs)]
#[serde(rename_all = "camelCase")]
#[tool(together("firstLine", "lastLine"))]
struct Grouped {
    first_line: Option<u32>,
    last_line: Option<u32>,
    #[serde(flatten)]
    escalation: Escalation,
    nested: Option<Escalation>,
}

#[test]
fn together_groups_do_not_drift_and_round_trip() {
    testing::assert_no_drift::<Escalation>(CASES);
    testing::assert_no_drift::<Grouped>(CASES);
    let spec = Grouped::schema_spec();
    // The flattened struct's groups come with its properties, then the
    // struct's own.
    assert_eq!(
        spec.together(),
        [
            vec![
                "sandbox_permissions".to_string(),
                "justification".to_string()
            ],
            vec!["firstLine".to_string(), "lastLine".to_string()],
        ]
    );
    let nested = spec.get("nested").unwrap().properties.as_ref().unwrap();
    assert!(nested.together().is_empty());
}

#[test]
fn bash_args_do_not_drift() {
    testing::assert_no_drift::<BashArgs>(CASES);
}

#[test]
fn inner_does_not_drift() {
    testing::assert_no_drift::<Inner>(CASES);
}

#[test]
fn everything_does_not_drift() {
    testing::assert_no_drift::<Everything>(CASES);
}

#[test]
fn all_default_does_not_drift() {
    testing::assert_no_drift::<AllDefault>(CASES);
}

#[test]
fn no_args_does_not_drift() {
    testing::assert_no_drift::<NoArgs>(CASES);
}

fn level() -> impl Strategy<Value = Level> {
    prop_oneof![Just(Level::Low), Just(Level::MidHigh), Just(Level::Maximum)]
}

fn finite_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        proptest::num::f64::NORMAL | proptest::num::f64::ZERO | proptest::num::f64::SUBNORMAL,
        any::<i32>().prop_map(f64::from),
    ]
}

fn finite_f32() -> impl Strategy<Value = f32> {
    proptest::num::f32::NORMAL | proptest::num::f32::ZERO | proptest::num::f32::SUBNORMAL
}

prop_compose! {
    fn bash_args()(
        command in any::<String>(),
        description in any::<String>(),
        timeout_ms in proptest::option::of(finite_f64()),
        workdir in proptest::option::of(any::<String>()),
        run_in_background in any::<bool>(),
    ) -> BashArgs {
        BashArgs { command, description, timeout_ms, workdir, run_in_background }
    }
}

prop_compose! {
    fn inner()(
        max_depth in any::<u8>(),
        follow_links in proptest::option::of(any::<bool>()),
        levels in proptest::collection::vec(level(), 0..4),
    ) -> Inner {
        Inner { max_depth, follow_links, levels }
    }
}

prop_compose! {
    fn everything()(
        (level, inner, maybe_inner, matrix, set, hashed) in (
            level(),
            inner(),
            proptest::option::of(inner()),
            proptest::collection::vec(proptest::collection::vec(any::<i16>(), 0..3), 0..3),
            proptest::collection::btree_set(level(), 0..3),
            proptest::collection::hash_set(any::<u32>(), 0..3),
        ),
        (ratio, precise, tiny, unsigned, signed, wide, uwide, size) in (
            finite_f32(),
            finite_f64(),
            any::<i8>(),
            any::<u64>(),
            any::<i64>(),
            (i64::MIN as i128)..=(u64::MAX as i128),
            0..=(u64::MAX as u128),
            any::<usize>(),
        ),
        (boxed, skipped, defaulted, verbose, r#type) in (
            any::<u32>(),
            any::<String>(),
            any::<u16>(),
            any::<bool>(),
            proptest::option::of(any::<String>()),
        ),
    ) -> Everything {
        Everything {
            level, inner, maybe_inner, matrix, set, hashed, meta: Map::new(), ratio, precise, tiny,
            unsigned, signed, wide, uwide, size, boxed: Box::new(boxed), skipped, defaulted,
            shared: Shared { verbose }, r#type,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_bash_args_serialized_validate_clean(args in bash_args()) {
        prop_assert_eq!(testing::check_serialized(&args), Ok(()));
    }

    #[test]
    fn any_everything_serialized_validates_clean(args in everything()) {
        prop_assert_eq!(testing::check_serialized(&args), Ok(()));
    }

    /// The serialized form also survives the text round trip the model
    /// boundary really sees (f32 printed in its shortest form).
    #[test]
    fn any_everything_via_text_reads_back(args in everything()) {
        let mut value = serde_json::to_value(&args).unwrap();
        testing::strip_optional_nulls(&Everything::schema_spec(), &mut value);
        let text = value.to_string();
        let (back, notes) = dsh_tools::read_args::<Everything>("t", &text, None)
            .map_err(|e| TestCaseError::fail(format!("{}: {}", e.code(), e.message())))?;
        prop_assert!(notes.is_empty());
        prop_assert_eq!(back.tiny, args.tiny);
        prop_assert_eq!(back.wide, args.wide);
        prop_assert_eq!(back.ratio, args.ratio);
    }

    /// Arbitrary JSON (not only generated-valid JSON): whenever it validates,
    /// it deserializes.
    #[test]
    fn arbitrary_json_that_validates_deserializes(value in arbitrary_json()) {
        prop_assert_eq!(testing::check_deserializes::<BashArgs>(&value), Ok(()));
        prop_assert_eq!(testing::check_deserializes::<Inner>(&value), Ok(()));
        prop_assert_eq!(testing::check_deserializes::<AllDefault>(&value), Ok(()));
    }
}

/// Objects over the key names the test types use, with values of every kind.
fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        finite_f64().prop_map(Value::from),
        prop_oneof![Just(0.0), Just(1.0), Just(255.0), Just(256.0), Just(-1.0)]
            .prop_map(Value::from),
        "[a-z]{0,4}".prop_map(Value::String),
        prop_oneof![Just("low"), Just("mid_high"), Just("max"), Just("Low")]
            .prop_map(|s| Value::String(s.into())),
    ];
    let keys = prop_oneof![
        Just("command"),
        Just("description"),
        Just("timeoutMs"),
        Just("workdir"),
        Just("run_in_background"),
        Just("maxDepth"),
        Just("followLinks"),
        Just("levels"),
        Just("SOME-TEXT"),
        Just("SOME-NUMBER"),
        Just("NESTED"),
        Just("verbose"),
    ];
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((keys.clone(), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

// ---------------------------------------------------------------------------
// Second-edition shapes: data enums in every serde representation, closed
// nested objects, json and null fields, length and item bounds.

#[derive(Debug, Clone, Serialize, Deserialize, ToolArgs, PartialEq)]
struct Span {
    start: u32,
    end: Option<u32>,
}

/// Externally tagged (serde's default): `"Whole"`, `{"Lines": {...}}`,
/// `{"Pattern": "x"}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToolArgs, PartialEq)]
enum Target {
    Whole,
    Lines(Span),
    Pattern(String),
    #[serde(rename_all = "camelCase")]
    Around {
        line_no: u32,
        context_lines: Option<u8>,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize, ToolArgs, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Internal {
    File { path: String },
    Dir(Span),
    Stdin,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToolArgs, PartialEq)]
#[serde(tag = "t", content = "c")]
enum Adjacent {
    Num(i64),
    Pair { a: bool, b: Option<String> },
    Nothing,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToolArgs, PartialEq)]
#[serde(deny_unknown_fields)]
struct Closed {
    name: String,
    #[tool(min_length = 1, max_length = 8)]
    label: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToolArgs, PartialEq)]
#[serde(deny_unknown_fields)]
struct Second {
    target: Target,
    internal: Internal,
    adjacent: Option<Adjacent>,
    closed: Closed,
    #[tool(min_items = 1, max_items = 3)]
    tags: Vec<String>,
    blob: Value,
    nothing: Option<()>,
}

#[test]
fn data_enums_closed_objects_and_bounds_do_not_drift() {
    testing::assert_no_drift::<Second>(CASES);
}

#[test]
fn the_new_shapes_have_the_expected_schema() {
    let spec = Second::schema_spec();
    let schema = dsh_tools::to_json_schema(&spec);
    let props = &schema["properties"];
    assert_eq!(
        props["target"]["oneOf"][0],
        serde_json::json!({"type": "string", "const": "Whole"})
    );
    assert_eq!(
        props["target"]["oneOf"][2],
        serde_json::json!({"type": "object", "properties": {"Pattern": {"type": "string"}},
                           "required": ["Pattern"], "additionalProperties": false})
    );
    assert_eq!(
        props["internal"]["oneOf"][0]["properties"]["kind"],
        serde_json::json!({"type": "string", "const": "file"})
    );
    assert_eq!(
        props["internal"]["oneOf"][1]["required"],
        serde_json::json!(["kind", "start"])
    );
    assert_eq!(
        props["adjacent"]["oneOf"][1]["properties"]["c"]["required"],
        serde_json::json!(["a"])
    );
    assert_eq!(props["closed"]["additionalProperties"], false);
    assert_eq!(props["closed"]["properties"]["label"]["maxLength"], 8);
    assert_eq!(props["tags"]["minItems"], 1);
    assert_eq!(props["blob"], serde_json::json!({}));
    assert_eq!(props["nothing"], serde_json::json!({"type": "null"}));
    assert!(schema.get("additionalProperties").is_none());
    // Wording a model reads for a wrong variant.
    let bad = dsh_tools::validate_args(
        &spec,
        &serde_json::json!({"target": {"Lines": {"end": 3}}, "internal": {"kind": "pipe"},
                             "closed": {"name": "n", "x": 1}, "tags": [], "blob": null}),
    );
    assert_eq!(
        bad,
        [
            r#""target" must match exactly one of: "Whole"; an object ("Lines.start" is missing); an object ("Pattern" is missing); an object ("Around" is missing)"#,
            r#""internal" must match exactly one of: an object with "kind": "file" ("kind" must be "file"); an object with "kind": "dir" ("kind" must be "dir"); an object with "kind": "stdin" ("kind" must be "stdin")"#,
            r#""closed.x" is not an allowed property"#,
            r#""tags" must have at least 1 item"#,
        ]
    );
}

#[test]
fn a_top_level_closed_type_ignores_undeclared_keys_like_every_tool() {
    let (args, notes) =
        dsh_tools::read_args::<Closed>("t", r#"{"name": "n", "lable": "typo"}"#, None).unwrap();
    assert_eq!(args.name, "n");
    assert_eq!(notes.len(), 1, "{notes:?}");
}

#[test]
fn an_adjacent_unit_variant_takes_no_content_but_null() {
    use dsh_tools::ToolArgsField;
    let prop = Adjacent::schema_prop();
    for (value, ok) in [
        (serde_json::json!({"t": "Nothing"}), true),
        (serde_json::json!({"t": "Nothing", "c": null}), true),
        (serde_json::json!({"t": "Nothing", "c": false}), false),
    ] {
        assert_eq!(dsh_schema::is_valid_prop(&prop, &value), ok, "{value}");
        // Validation and serde agree on each.
        assert_eq!(
            serde_json::from_value::<Adjacent>(value.clone()).is_ok(),
            ok,
            "{value}"
        );
    }
}
