//! `#[derive(ToolArgs)]`: the spec follows serde's attributes.

use std::collections::BTreeSet;
use std::path::PathBuf;

use dsh_tools::{
    to_json_schema, validate_args, SchemaProp, SchemaSpec, SchemaType, ToolArgs, ToolArgsField,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// Run a shell command.
#[allow(dead_code)]
#[derive(Debug, Deserialize, ToolArgs)]
struct BashArgs {
    /// The bash command to run.
    command: String,
    /// Short description
    /// of what it does.
    description: String,
    /// Timeout in milliseconds.
    #[serde(rename = "timeoutMs")]
    timeout_ms: Option<f64>,
    workdir: Option<PathBuf>,
    #[serde(default)]
    run_in_background: bool,
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, ToolArgs, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum Mode {
    FastPath,
    #[serde(rename = "slow")]
    Slow,
    #[serde(skip)]
    Hidden,
}

/// Nested options.
#[allow(dead_code)]
#[derive(Debug, Deserialize, ToolArgs)]
#[serde(rename_all = "camelCase")]
struct Options {
    max_depth: u8,
    follow_links: Option<bool>,
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, ToolArgs)]
struct Common {
    verbose: bool,
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, ToolArgs)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
struct Everything {
    mode: Mode,
    modes: Vec<Mode>,
    /// Per-field doc wins over the type's doc.
    options: Options,
    more: Option<Options>,
    list: Vec<Vec<i32>>,
    set: BTreeSet<String>,
    meta: Map<String, Value>,
    ratio: f32,
    small: i8,
    big: u64,
    huge: i128,
    boxed: Box<u32>,
    #[serde(skip)]
    skipped: String,
    #[serde(skip_deserializing, default)]
    also_skipped: String,
    #[serde(default = "default_level")]
    level: u16,
    #[serde(flatten)]
    common: Common,
    r#type: String,
    #[serde(rename(serialize = "ser", deserialize = "de"))]
    renamed_both: String,
}

fn default_level() -> u16 {
    3
}

#[allow(dead_code)]
#[derive(Debug, Deserialize, ToolArgs)]
#[serde(default)]
struct AllDefault {
    a: String,
    b: u32,
}

impl Default for AllDefault {
    fn default() -> Self {
        AllDefault {
            a: "x".into(),
            b: 1,
        }
    }
}

#[test]
fn bash_like_args() {
    let spec = BashArgs::schema_spec();
    assert_eq!(
        to_json_schema(&spec),
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command to run."},
                "description": {"type": "string", "description": "Short description\nof what it does."},
                "timeoutMs": {"type": "number", "description": "Timeout in milliseconds."},
                "workdir": {"type": "string"},
                "run_in_background": {"type": "boolean"}
            },
            "required": ["command", "description"]
        })
    );
}

#[test]
fn unit_enums_are_string_enums_with_serde_names() {
    let prop = Mode::schema_prop();
    assert_eq!(prop.ty, SchemaType::String);
    assert_eq!(
        prop.enum_values,
        Some(vec![json!("fast-path"), json!("slow")])
    );
    let m: Mode = serde_json::from_value(json!("fast-path")).unwrap();
    assert_eq!(m, Mode::FastPath);
}

#[test]
fn every_supported_shape() {
    let spec = Everything::schema_spec();
    let names: Vec<&str> = spec.names().collect();
    assert_eq!(
        names,
        [
            "MODE", "MODES", "OPTIONS", "MORE", "LIST", "SET", "META", "RATIO", "SMALL", "BIG",
            "HUGE", "BOXED", "LEVEL", "verbose", "TYPE", "de"
        ]
    );
    let get = |n: &str| spec.get(n).unwrap().clone();
    assert!(get("MODE").required);
    assert_eq!(get("MODES").items.unwrap().enum_values.unwrap().len(), 2);
    let options = get("OPTIONS");
    assert_eq!(
        options.description.as_deref(),
        Some("Per-field doc wins over the type's doc.")
    );
    let props = options.properties.unwrap();
    assert_eq!(
        props.names().collect::<Vec<_>>(),
        ["maxDepth", "followLinks"]
    );
    assert_eq!(
        props.get("maxDepth").unwrap(),
        &SchemaProp::integer()
            .required(true)
            .with_range(Some(0.into()), Some(255.into()))
    );
    let more = get("MORE");
    assert!(!more.required);
    assert_eq!(more.description.as_deref(), Some("Nested options."));
    assert_eq!(
        get("LIST"),
        SchemaProp::array_of(SchemaProp::array_of(
            SchemaProp::integer().with_range(Some(i32::MIN.into()), Some(i32::MAX.into()))
        ))
        .required(true)
    );
    assert_eq!(get("SET").items.unwrap().ty, SchemaType::String);
    assert_eq!(get("META"), SchemaProp::object().required(true));
    let ratio = get("RATIO");
    assert_eq!(ratio.ty, SchemaType::Number);
    assert_eq!(ratio.maximum, serde_json::Number::from_f64(3.40282356e38));
    assert_eq!(get("SMALL").minimum, Some((-128).into()));
    assert_eq!(get("BIG").maximum, Some(u64::MAX.into()));
    assert_eq!(get("HUGE").minimum, Some(i64::MIN.into()));
    assert_eq!(get("BOXED").ty, SchemaType::Integer);
    assert!(!get("LEVEL").required);
    assert!(get("verbose").required);
    assert!(get("TYPE").required);
    assert!(get("de").required);
}

#[test]
fn container_default_makes_everything_optional() {
    let spec = AllDefault::schema_spec();
    assert!(spec.iter().all(|(_, p)| !p.required));
    assert!(validate_args(&spec, &json!({})).is_empty());
}

#[test]
fn derived_specs_pass_the_load_time_checks() {
    for spec in [
        BashArgs::schema_spec(),
        Everything::schema_spec(),
        AllDefault::schema_spec(),
        dsh_tools::NoArgs::schema_spec(),
        Escalating::schema_spec(),
    ] {
        spec.check().unwrap();
        // and survive a JSON round trip, together-groups included
        let back: SchemaSpec =
            serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
    }
}

#[test]
fn u8_bounds_keep_validation_truthful() {
    let spec = Options::schema_spec();
    assert_eq!(
        validate_args(&spec, &json!({"maxDepth": 256})),
        ["\"maxDepth\" must be at most 255"]
    );
    assert_eq!(
        validate_args(&spec, &json!({"maxDepth": -1})),
        ["\"maxDepth\" must be at least 0"]
    );
}

/// For every `rename_all` rule: the names in the spec are exactly the names
/// serde accepts (fields required, so a wrong name fails to deserialize).
macro_rules! rename_rule_case {
    ($test:ident, $rule:literal) => {
        #[test]
        fn $test() {
            #[allow(dead_code, non_camel_case_types)]
            #[derive(Debug, Deserialize, ToolArgs)]
            #[serde(rename_all = $rule)]
            struct S {
                two_words: bool,
                x: bool,
                a_b_c: bool,
                r#type: bool,
                e: V,
            }

            #[allow(dead_code, clippy::upper_case_acronyms)]
            #[derive(Debug, Deserialize, ToolArgs)]
            #[serde(rename_all = $rule)]
            enum V {
                TwoWords,
                X,
                ABc,
                Http2Server,
            }

            let spec = S::schema_spec();
            let members = V::schema_prop().enum_values.unwrap();
            assert_eq!(members.len(), 4);
            for member in &members {
                let mut obj = Map::new();
                for (name, prop) in spec.iter() {
                    let v = if prop.ty == SchemaType::Boolean {
                        Value::Bool(true)
                    } else {
                        member.clone()
                    };
                    obj.insert(name.to_string(), v);
                }
                let value = Value::Object(obj);
                assert!(validate_args(&spec, &value).is_empty());
                serde_json::from_value::<S>(value.clone())
                    .unwrap_or_else(|e| panic!("{} under {}: {e}", value, $rule));
            }
        }
    };
}

rename_rule_case!(rename_lowercase, "lowercase");
rename_rule_case!(rename_uppercase, "UPPERCASE");
rename_rule_case!(rename_pascal, "PascalCase");
rename_rule_case!(rename_camel, "camelCase");
rename_rule_case!(rename_snake, "snake_case");
rename_rule_case!(rename_screaming_snake, "SCREAMING_SNAKE_CASE");
rename_rule_case!(rename_kebab, "kebab-case");
rename_rule_case!(rename_screaming_kebab, "SCREAMING-KEBAB-CASE");

#[allow(dead_code)]
#[derive(Debug, Deserialize, ToolArgs)]
#[tool(together("sandbox_permissions", "why"))]
struct Escalating {
    command: String,
    sandbox_permissions: Option<String>,
    #[serde(rename = "why")]
    justification: Option<String>,
}

#[test]
fn together_groups_use_the_json_names_and_are_enforced() {
    let spec = Escalating::schema_spec();
    assert_eq!(
        spec.together(),
        [vec!["sandbox_permissions".to_string(), "why".to_string()]]
    );
    assert_eq!(
        dsh_tools::validate_args(&spec, &serde_json::json!({"command": "ls", "why": "x"})),
        [
            r#""sandbox_permissions" and "why" must be given together; "sandbox_permissions" is missing"#
        ]
    );
}
