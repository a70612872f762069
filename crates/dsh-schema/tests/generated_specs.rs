//! Properties over generated specs: conversion and validation agree on
//! `required` at every level, never panic, a generated valid value validates
//! clean, and one injected fault yields exactly one violation at its path.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../src/testing.rs"]
#[allow(dead_code)]
#[allow(unreachable_pub)]
mod testing;

use dsh_schema::{to_json_schema, validate_args, SchemaProp, SchemaSpec, SchemaType};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Number, Value};

const CASES: u32 = 256;

fn name() -> impl Strategy<Value = String> {
    // Now and then a key named `""`, whose children join without a dot.
    prop_oneof![
        9 => "[a-z][a-zA-Z0-9_]{0,5}",
        1 => Just(String::new()),
    ]
}

fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![-1e6f64..1e6, any::<i32>().prop_map(f64::from)]
}

fn scalar_prop() -> BoxedStrategy<SchemaProp> {
    let string =
        proptest::option::of(proptest::collection::vec("[a-z]{1,4}", 1..4)).prop_map(|e| {
            let p = SchemaProp::string();
            match e {
                Some(values) => p.with_enum(values.into_iter().map(Value::String)),
                None => p,
            }
        });
    let integer = prop_oneof![
        Just(SchemaProp::integer()),
        proptest::collection::vec(any::<i32>(), 1..4)
            .prop_map(|v| SchemaProp::integer().with_enum(v.into_iter().map(Value::from))),
        (any::<i32>(), any::<i32>()).prop_map(|(a, b)| {
            let (lo, hi) = (a.min(b), a.max(b));
            SchemaProp::integer().with_range(Some(lo.into()), Some(hi.into()))
        }),
    ];
    let number = prop_oneof![
        Just(SchemaProp::number()),
        proptest::collection::vec(finite(), 1..4).prop_map(|v| {
            SchemaProp::number().with_enum(
                v.into_iter()
                    .filter_map(Number::from_f64)
                    .map(Value::Number),
            )
        }),
        (finite(), finite()).prop_map(|(a, b)| {
            let (lo, hi) = (a.min(b), a.max(b));
            SchemaProp::number().with_range(Number::from_f64(lo), Number::from_f64(hi))
        }),
        finite().prop_map(|a| SchemaProp::number().above(a)),
        finite().prop_map(|a| SchemaProp::number().below(a)),
    ];
    let boolean = prop_oneof![
        Just(SchemaProp::boolean()),
        Just(SchemaProp::boolean().with_enum([json!(true)])),
        Just(SchemaProp::boolean().with_enum([json!(false)])),
        Just(SchemaProp::boolean().with_enum([json!(true), json!(false)])),
    ];
    let bounded_string = (0u64..4, 0u64..6)
        .prop_map(|(lo, extra)| SchemaProp::string().with_length(Some(lo), Some(lo + extra)));
    let constant = prop_oneof![
        "[a-z]{1,4}".prop_map(|s| SchemaProp::constant(SchemaType::String, Value::String(s))),
        any::<i32>().prop_map(|n| SchemaProp::constant(SchemaType::Integer, Value::from(n))),
    ];
    prop_oneof![
        string,
        integer,
        number,
        boolean,
        bounded_string,
        constant,
        Just(SchemaProp::null()),
        Just(SchemaProp::json()),
        Just(SchemaProp::object()),
        Just(SchemaProp::array())
    ]
    .boxed()
}

/// `one_of` with branches disjoint by construction: distinct types, and
/// objects told apart by a required constant `kind`.
fn one_of_prop(inner: BoxedStrategy<SchemaProp>) -> BoxedStrategy<SchemaProp> {
    let tagged = |tag: &'static str| {
        proptest::collection::vec((name(), inner.clone()), 0..2).prop_map(move |props| {
            let mut spec: SchemaSpec = props.into_iter().filter(|(n, _)| n != "kind").collect();
            spec.insert(
                "kind",
                SchemaProp::constant(SchemaType::String, json!(tag)).required(true),
            );
            SchemaProp::object_with(spec)
        })
    };
    let pool: Vec<BoxedStrategy<SchemaProp>> = vec![
        Just(SchemaProp::string()).boxed(),
        Just(SchemaProp::integer()).boxed(),
        Just(SchemaProp::boolean()).boxed(),
        Just(SchemaProp::null()).boxed(),
        tagged("a").boxed(),
        tagged("b").boxed(),
    ];
    (
        proptest::sample::subsequence((0..pool.len()).collect::<Vec<_>>(), 1..=3),
        pool,
    )
        .prop_map(|(picked, drawn)| {
            SchemaProp::one_of(picked.into_iter().map(|i| drawn[i].clone()))
        })
        .boxed()
}

fn with_flags(p: impl Strategy<Value = SchemaProp>) -> impl Strategy<Value = SchemaProp> {
    (p, any::<bool>(), proptest::option::of("[a-z ]{0,8}")).prop_map(|(p, required, d)| {
        let p = p.required(required);
        match d {
            Some(d) => p.with_description(d),
            None => p,
        }
    })
}

fn prop() -> BoxedStrategy<SchemaProp> {
    with_flags(scalar_prop())
        .prop_recursive(3, 32, 4, |inner| {
            prop_oneof![
                with_flags(
                    (
                        proptest::collection::vec((name(), inner.clone()), 0..4),
                        proptest::option::of(any::<bool>())
                    )
                        .prop_map(|(props, extra)| {
                            let mut p = SchemaProp::object_with(props.into_iter().collect());
                            p.additional_properties = extra;
                            p
                        })
                ),
                with_flags(inner.clone().prop_map(SchemaProp::array_of)),
                with_flags(
                    (inner.clone(), 0u64..3, 0u64..3).prop_map(|(item, lo, extra)| {
                        SchemaProp::array_of(item).with_item_count(Some(lo), Some(lo + extra))
                    })
                ),
                with_flags(one_of_prop(inner)),
            ]
        })
        .boxed()
}

fn spec() -> impl Strategy<Value = SchemaSpec> {
    proptest::collection::vec((name(), prop()), 0..6).prop_map(|props| props.into_iter().collect())
}

/// [`spec`] plus up to three groups of its properties given together.
fn spec_with_groups() -> impl Strategy<Value = SchemaSpec> {
    (
        spec(),
        proptest::collection::vec(proptest::collection::vec(any::<Index>(), 2..4), 0..3),
    )
        .prop_map(|(mut spec, groups)| {
            let names: Vec<String> = spec.names().map(str::to_string).collect();
            if names.len() < 2 {
                return spec;
            }
            for group in groups {
                let mut picked: Vec<&str> = Vec::new();
                for i in group {
                    let name = i.get(&names).as_str();
                    if !picked.contains(&name) {
                        picked.push(name);
                    }
                }
                spec.require_together(&picked);
            }
            spec
        })
}

fn spec_and_value() -> impl Strategy<Value = (SchemaSpec, Value)> {
    spec().prop_flat_map(|spec| {
        let value = testing::valid_value(&spec);
        (Just(spec), value)
    })
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        finite().prop_map(Value::from),
        "\\PC{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec(("[a-z]{1,3}", inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// `required` of the conversion equals the `required: true` keys, at every
/// level (object properties and array items, recursively).
fn required_agrees(spec: &SchemaSpec, schema: &Value) -> Result<(), String> {
    let expected: Vec<Value> = spec
        .iter()
        .filter(|(_, p)| p.required)
        .map(|(n, _)| Value::String(n.to_string()))
        .collect();
    match schema.get("required") {
        None if expected.is_empty() => {}
        Some(Value::Array(got)) if !got.is_empty() && *got == expected => {}
        other => return Err(format!("required {other:?} but expected {expected:?}")),
    }
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or("no properties")?;
    let names: Vec<&str> = props.keys().map(String::as_str).collect();
    let spec_names: Vec<&str> = spec.names().collect();
    if names != spec_names {
        return Err(format!("order {names:?} != {spec_names:?}"));
    }
    for (name, prop) in spec {
        prop_agrees(prop, &props[name])?;
    }
    Ok(())
}

fn prop_agrees(prop: &SchemaProp, schema: &Value) -> Result<(), String> {
    let type_ok = if prop.ty == SchemaType::Json {
        schema.get("type").is_none()
    } else {
        schema["type"] == prop.ty.as_str()
    };
    if !type_ok {
        return Err(format!("type {} != {}", schema["type"], prop.ty));
    }
    for (key, want) in [
        ("const", prop.const_value.clone()),
        ("minLength", prop.min_length.map(Value::from)),
        ("maxLength", prop.max_length.map(Value::from)),
        ("minItems", prop.min_items.map(Value::from)),
        ("maxItems", prop.max_items.map(Value::from)),
        (
            "additionalProperties",
            prop.additional_properties.map(Value::from),
        ),
    ] {
        if schema.get(key).cloned() != want {
            return Err(format!("{key} {:?} != {want:?}", schema.get(key)));
        }
    }
    match &prop.one_of {
        Some(branches) => {
            let got = schema["oneOf"].as_array().ok_or("no oneOf")?;
            if got.len() != branches.len() {
                return Err("oneOf length".into());
            }
            for (b, s) in branches.iter().zip(got) {
                prop_agrees(b, s)?;
            }
        }
        None if schema.get("oneOf").is_some() => return Err("oneOf without spec".into()),
        None => {}
    }
    // Only a non-empty description is copied.
    let description = prop.description.as_deref().filter(|d| !d.is_empty());
    if schema.get("description").and_then(Value::as_str) != description {
        return Err(format!(
            "description {:?} for {:?}",
            schema.get("description"),
            prop.description
        ));
    }
    match &prop.properties {
        Some(props) => required_agrees(props, schema)?,
        None => {
            if schema.get("properties").is_some() || schema.get("required").is_some() {
                return Err("properties without spec".into());
            }
        }
    }
    match &prop.items {
        Some(items) => prop_agrees(items, &schema["items"])?,
        None => {
            if schema.get("items").is_some() {
                return Err("items without spec".into());
            }
        }
    }
    Ok(())
}

/// A place where one fault can be injected, and the violation it must cause.
struct Site {
    /// JSON pointer of the value (for drops: of the key to remove).
    pointer: String,
    /// Parent pointer and key, for drops.
    drop: Option<(String, String)>,
    /// Object pointer and key, for an inserted unknown key.
    insert: Option<(String, String)>,
    replacement: Value,
    expected: String,
    /// `expected` is only the start of the violation (`one_of` lists every
    /// branch after it).
    prefix: bool,
}

impl Site {
    fn replace(pointer: &str, replacement: Value, expected: String) -> Site {
        Site {
            pointer: pointer.to_string(),
            drop: None,
            insert: None,
            replacement,
            expected,
            prefix: false,
        }
    }
}

fn collect_sites(
    spec: &SchemaSpec,
    value: &Value,
    pointer: &str,
    path: &str,
    swap_null: bool,
    out: &mut Vec<Site>,
) {
    let Value::Object(map) = value else { return };
    for (name, prop) in spec {
        let Some(v) = map.get(name) else { continue };
        let p = format!("{pointer}/{name}");
        let display = if path.is_empty() {
            name.to_string()
        } else {
            format!("{path}.{name}")
        };
        if prop.required {
            out.push(Site {
                drop: Some((pointer.to_string(), name.to_string())),
                ..Site::replace(
                    &p,
                    Value::Null,
                    format!("missing required property \"{display}\""),
                )
            });
        }
        collect_value_sites(prop, v, &p, &display, swap_null, out);
    }
}

fn collect_value_sites(
    prop: &SchemaProp,
    v: &Value,
    pointer: &str,
    path: &str,
    swap_null: bool,
    out: &mut Vec<Site>,
) {
    if prop.one_of.is_some() {
        // 1.5 is of no branch's type (string, integer, boolean, null, object).
        out.push(Site {
            prefix: true,
            ..Site::replace(
                pointer,
                json!(1.5),
                format!("\"{path}\" must match exactly one of: "),
            )
        });
        return;
    }
    let noun = match prop.ty {
        SchemaType::String => Some(("a string", json!(1))),
        SchemaType::Number => Some(("a number", json!("1"))),
        SchemaType::Integer => Some(("an integer", json!(1.5))),
        SchemaType::Boolean => Some(("a boolean", json!("true"))),
        SchemaType::Object => Some(("an object", json!([]))),
        SchemaType::Array => Some(("an array", json!({}))),
        SchemaType::Null => Some(("null", json!(1))),
        SchemaType::Json => None,
    };
    if let Some((noun, wrong)) = noun {
        let wrong = if swap_null && prop.ty != SchemaType::Null {
            Value::Null
        } else {
            wrong
        };
        out.push(Site::replace(
            pointer,
            wrong,
            format!("\"{path}\" must be {noun}"),
        ));
    }
    if let Some(bound) = &prop.exclusive_minimum {
        out.push(Site::replace(
            pointer,
            Value::Number(bound.clone()),
            format!("\"{path}\" must be greater than {bound}"),
        ));
    }
    if let Some(bound) = &prop.exclusive_maximum {
        out.push(Site::replace(
            pointer,
            Value::Number(bound.clone()),
            format!("\"{path}\" must be less than {bound}"),
        ));
    }
    if let Some(c) = &prop.const_value {
        let other = match c {
            Value::String(s) => json!(format!("{s}~")),
            Value::Number(n) => json!(n.as_i64().unwrap_or(0).wrapping_add(1)),
            _ => Value::Null,
        };
        out.push(Site::replace(
            pointer,
            other,
            format!("\"{path}\" must be {c}"),
        ));
    }
    let chars = |n: u64| {
        if n == 1 {
            "1 character".to_string()
        } else {
            format!("{n} characters")
        }
    };
    if let Some(min) = prop.min_length.filter(|m| *m > 0) {
        out.push(Site::replace(
            pointer,
            json!("x".repeat(min as usize - 1)),
            format!("\"{path}\" must be at least {} long", chars(min)),
        ));
    }
    if let Some(max) = prop.max_length {
        out.push(Site::replace(
            pointer,
            json!("x".repeat(max as usize + 1)),
            format!("\"{path}\" must be at most {} long", chars(max)),
        ));
    }
    let items = |n: u64| {
        if n == 1 {
            "1 item".to_string()
        } else {
            format!("{n} items")
        }
    };
    if let Value::Array(elems) = v {
        if let Some(min) = prop.min_items.filter(|m| *m > 0) {
            let fewer: Vec<Value> = elems.iter().take(min as usize - 1).cloned().collect();
            out.push(Site::replace(
                pointer,
                Value::Array(fewer),
                format!("\"{path}\" must have at least {}", items(min)),
            ));
        }
        if let (Some(max), Some(first)) = (prop.max_items, elems.first()) {
            let mut more = elems.clone();
            while more.len() as u64 <= max {
                more.push(first.clone());
            }
            out.push(Site::replace(
                pointer,
                Value::Array(more),
                format!("\"{path}\" must have at most {}", items(max)),
            ));
        }
    }
    if let (Value::Object(map), Some(false)) = (v, prop.additional_properties) {
        let key = "zz_unknown";
        let declared = prop.properties.as_ref().is_some_and(|p| p.contains(key));
        if !declared && !map.contains_key(key) {
            let display = if path.is_empty() {
                key.to_string()
            } else {
                format!("{path}.{key}")
            };
            out.push(Site {
                insert: Some((pointer.to_string(), key.to_string())),
                ..Site::replace(
                    pointer,
                    json!(1),
                    format!("\"{display}\" is not an allowed property"),
                )
            });
        }
    }
    if let Some(members) = &prop.enum_values {
        let outside = match prop.ty {
            SchemaType::String => Some(Value::String(
                members.iter().filter_map(Value::as_str).collect::<String>() + "~",
            )),
            SchemaType::Integer | SchemaType::Number => {
                let max = members
                    .iter()
                    .filter_map(Value::as_f64)
                    .fold(f64::MIN, f64::max);
                Some(Value::from(max.floor() as i64 + 1))
            }
            SchemaType::Boolean => {
                let has = |b: bool| members.contains(&Value::Bool(b));
                match (has(true), has(false)) {
                    (true, false) => Some(json!(false)),
                    (false, true) => Some(json!(true)),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(outside) = outside {
            out.push(Site::replace(
                pointer,
                outside,
                format!(
                    "\"{path}\" must be one of {}",
                    serde_json::to_string(members).unwrap()
                ),
            ));
        }
    }
    match v {
        Value::Object(_) => {
            if let Some(props) = &prop.properties {
                collect_sites(props, v, pointer, path, swap_null, out);
            }
        }
        Value::Array(items) => {
            if let Some(item) = &prop.items {
                for (i, x) in items.iter().enumerate() {
                    collect_value_sites(
                        item,
                        x,
                        &format!("{pointer}/{i}"),
                        &format!("{path}[{i}]"),
                        swap_null,
                        out,
                    );
                }
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn conversion_required_matches_spec_at_every_level(spec in spec()) {
        let schema = to_json_schema(&spec);
        prop_assert_eq!(&schema["type"], "object");
        if let Err(e) = required_agrees(&spec, &schema) {
            return Err(TestCaseError::fail(format!("{e} in {schema}")));
        }
    }

    #[test]
    fn generated_specs_pass_the_load_checks_and_round_trip(spec in spec_with_groups()) {
        prop_assert_eq!(spec.check(), Ok(()));
        let back: SchemaSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
        prop_assert_eq!(&back, &spec);
        // Through text too (serde_json's float parsing may differ in the last
        // bit, so compare the structure only).
        let text = serde_json::to_string(&spec).unwrap();
        let back = SchemaSpec::from_json_str(&text).unwrap();
        prop_assert_eq!(back.names().collect::<Vec<_>>(), spec.names().collect::<Vec<_>>());
        prop_assert_eq!(back.together(), spec.together());
        // And TOML, when TOML can hold the spec (it has no null).
        if let Ok(text) = toml::to_string(&spec) {
            let back: SchemaSpec = toml::from_str(&text)
                .map_err(|e| TestCaseError::fail(format!("{e} loading {text}")))?;
            prop_assert_eq!(back.names().collect::<Vec<_>>(), spec.names().collect::<Vec<_>>());
            prop_assert_eq!(back.together(), spec.together());
        }
    }

    #[test]
    fn never_panics_on_any_value(spec in spec(), value in arbitrary_json()) {
        let _ = validate_args(&spec, &value);
        let _ = to_json_schema(&spec);
        let _ = dsh_schema::near_miss_notes(&spec, &value, "t");
        let mut v = value.clone();
        dsh_schema::normalize_integers(&spec, &mut v);
        let _ = SchemaSpec::from_value(&value);
        if let Ok(raw) = dsh_schema::classify_json_schema(&value) {
            let _ = raw.validate(&value);
        }
    }

    /// What dsh shows the model is itself inside the raw subset, and the
    /// classified spec judges values exactly as the original.
    #[test]
    fn shown_schemas_classify_back_to_an_equivalent_spec(
        (spec, value) in spec_and_value(),
        other in arbitrary_json(),
    ) {
        let shown = to_json_schema(&spec);
        let raw = dsh_schema::classify_json_schema(&shown)
            .map_err(|e| TestCaseError::fail(format!("{e} in {shown}")))?;
        prop_assert!(!raw.closed);
        prop_assert_eq!(raw.validate(&value), validate_args(&spec, &value));
        let probe = serde_json::json!({"wrapped": other});
        prop_assert_eq!(raw.validate(&probe).len(), validate_args(&spec, &probe).len());
    }

    #[test]
    fn generated_values_validate_clean((spec, value) in spec_and_value()) {
        let violations = validate_args(&spec, &value);
        prop_assert!(violations.is_empty(), "{:?} for {}", violations, value);
    }

    #[test]
    fn one_fault_one_violation_at_its_path(
        (spec, value) in spec_and_value(),
        pick in any::<Index>(),
        swap_null in any::<bool>(),
    ) {
        let mut sites = Vec::new();
        collect_sites(&spec, &value, "", "", swap_null, &mut sites);
        prop_assume!(!sites.is_empty());
        let site = &sites[pick.index(sites.len())];
        let mut broken = value.clone();
        match (&site.drop, &site.insert) {
            (Some((parent, key)), _) => {
                let obj = broken.pointer_mut(parent).and_then(Value::as_object_mut).unwrap();
                obj.shift_remove(key);
            }
            (None, Some((object, key))) => {
                let obj = broken.pointer_mut(object).and_then(Value::as_object_mut).unwrap();
                obj.insert(key.clone(), site.replacement.clone());
            }
            (None, None) => *broken.pointer_mut(&site.pointer).unwrap() = site.replacement.clone(),
        }
        let violations = validate_args(&spec, &broken);
        if site.prefix {
            prop_assert_eq!(violations.len(), 1, "{:?} value {} broken {}", violations, value, broken);
            prop_assert!(violations[0].starts_with(&site.expected), "{:?} vs {}", violations, site.expected);
        } else {
            prop_assert_eq!(violations, vec![site.expected.clone()], "value {} broken {}", value, broken);
        }
    }
}

/// What a strict-mode model sends for `value`: every optional key that is
/// absent, present as `null` (at every level the compiler closed).
fn fill_nulls(spec: &SchemaSpec, value: &mut Value) {
    let Value::Object(map) = value else { return };
    for (name, prop) in spec {
        match map.get_mut(name) {
            None if !prop.required => {
                map.insert(name.to_string(), Value::Null);
            }
            None => {}
            Some(v) => fill_value(prop, v),
        }
    }
}

fn fill_value(prop: &SchemaProp, v: &mut Value) {
    if prop.one_of.is_some() {
        return;
    }
    match v {
        Value::Object(_) => {
            if let Some(props) = &prop.properties {
                fill_nulls(props, v);
            }
        }
        Value::Array(items) => {
            if let Some(item) = &prop.items {
                for x in items {
                    fill_value(item, x);
                }
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    /// Strict compilation never panics, and what a strict model sends for a
    /// valid value validates clean once the introduced nulls are stripped.
    #[test]
    fn strict_nulls_round_trip((spec, value) in spec_and_value()) {
        if dsh_schema::to_strict_schema(&spec).is_ok() {
            let mut sent = value.clone();
            fill_nulls(&spec, &mut sent);
            dsh_schema::strip_introduced_nulls(&spec, &mut sent);
            let violations = validate_args(&spec, &sent);
            prop_assert!(violations.is_empty(), "{:?} for {}", violations, sent);
        }
    }
}

/// Argument text with what an ordered `Value` map treats specially:
/// repeated keys, escaped keys and strings, nesting.
fn argument_text() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("\\u0061".to_string()),
        "[a-z]{1,3}",
    ];
    let leaf = prop_oneof![
        Just("null".to_string()),
        Just("true".to_string()),
        Just("3.0".to_string()),
        Just("-0".to_string()),
        Just("1e3".to_string()),
        Just("18446744073709551615".to_string()),
        Just("\"x\\ny\"".to_string()),
        // Numbers at the edges of the integer fast path and beyond.
        prop::sample::select(vec![
            "0",
            "-0",
            "01",
            "-01",
            "-",
            "1.",
            ".5",
            "1e",
            "-0.0",
            "1E+2",
            "2e-3",
            "999999999999999999",
            "-999999999999999999",
            "9999999999999999999",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551616",
            "123456789012345678901234",
            "1e400",
            "1-2",
            "+1",
        ])
        .prop_map(str::to_string),
        // Strings the fast path hands on or must refuse.
        prop::sample::select(vec![
            r#""\u00e9""#,
            r#""\ud83e\udd80""#,
            r#""\ud800""#,
            r#""\x""#,
            "\"raw\ttab\"",
            r#""a\\""#,
            r#""unterminated"#,
            r#""q\"uote""#,
        ])
        .prop_map(str::to_string),
        // Junk around and between values.
        prop::sample::select(vec![
            " 1 ",
            "\t[]\n",
            "[1,]",
            "{,}",
            "tru",
            "nul",
            "[1 2]",
            "{\"a\" 1}"
        ])
        .prop_map(str::to_string),
        any::<i64>().prop_map(|n| n.to_string()),
        "\\PC{0,4}".prop_map(|s| Value::String(s).to_string()),
    ];
    leaf.prop_recursive(4, 40, 5, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4)
                .prop_map(|xs| format!("[{}]", xs.join(","))),
            proptest::collection::vec((key.clone(), inner), 0..5).prop_map(|kv| {
                let members: Vec<String> = kv
                    .into_iter()
                    .map(|(k, v)| format!("\"{k}\":{v}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// The borrowed argument tree reads as the `Value` of the same text:
    /// same parse errors, same value (order included), same violations and
    /// notes against any spec, and `reads_as_is` only when rewriting would
    /// change nothing.
    #[test]
    fn arg_value_reads_like_value(
        spec in spec(),
        text in prop_oneof![argument_text(), arbitrary_json().prop_map(|v| v.to_string()), "\\PC{0,12}"],
    ) {
        use dsh_schema::{near_miss_notes, normalize_integers, drop_undeclared_keys, reads_as_is, ArgValue};
        let value = serde_json::from_str::<Value>(&text).map_err(|e| e.to_string());
        let tree = ArgValue::parse(&text).map_err(|e| e.to_string());
        match (&value, &tree) {
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (Ok(value), Ok(tree)) => {
                prop_assert_eq!(tree.to_value().to_string(), value.to_string());
                prop_assert_eq!(validate_args(&spec, tree), validate_args(&spec, value));
                prop_assert_eq!(near_miss_notes(&spec, tree, "t"), near_miss_notes(&spec, value, "t"));
                prop_assert_eq!(dsh_schema::is_valid(&spec, tree), dsh_schema::is_valid(&spec, value));
                if reads_as_is(&spec, tree) {
                    let mut rewritten = value.clone();
                    normalize_integers(&spec, &mut rewritten);
                    drop_undeclared_keys(&spec, &mut rewritten);
                    prop_assert_eq!(rewritten.to_string(), value.to_string());
                }
            }
            _ => prop_assert!(false, "one parsed, the other did not: {:?} / {:?}", value, tree),
        }
    }
}

/// Long strings take the fast path's other branches: plain ones are
/// borrowed, escaped ones past the inline limit go to serde_json whole, a
/// raw control character deep inside is serde_json's error.
#[test]
fn long_strings_read_like_value() {
    use dsh_schema::ArgValue;
    let line = "fn f() { let x = \\\"y\\\"; }";
    let texts = [
        format!(r#"{{"content":"{}"}}"#, "a".repeat(5000)),
        format!(r#"{{"content":"{}","n":1}}"#, vec![line; 200].join("\\n")),
        format!(r#"{{"a":"{}\\n","b":"x"}}"#, "é".repeat(600)),
        format!("{{\"content\":\"{}\u{1}\"}}", "a".repeat(3000)),
        format!(r#"{{"content":"{}\q"}}"#, "\\n".repeat(700)),
    ];
    for text in &texts {
        let value = serde_json::from_str::<Value>(text).map(|v| v.to_string());
        let tree = ArgValue::parse(text).map(|t| t.to_value().to_string());
        assert_eq!(
            tree.map_err(|e| e.to_string()),
            value.map_err(|e| e.to_string()),
            "{}",
            &text[..60]
        );
    }
}
