//! The boundary's cost per call: parsing the argument text (into the
//! borrowed `ArgValue` the typed call path uses, and into a
//! `serde_json::Value` for comparison), validating it, both together, and
//! the spec → JSON Schema conversion done once per tool.
//!
//! `cargo bench -p dsh-benches --bench validate`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use dsh_schema::{
    to_json_schema, to_strict_schema, validate_args, ArgValue, SchemaProp, SchemaSpec, SchemaType,
    ToolArgs,
};
use serde_json::{json, Value};

/// A spec with 50 leaves: five objects of ten properties each.
fn nested_spec_and_args() -> (SchemaSpec, String) {
    let mut spec = serde_json::Map::new();
    let mut args = serde_json::Map::new();
    for g in 0..5 {
        let mut props = serde_json::Map::new();
        let mut obj = serde_json::Map::new();
        for i in 0..10 {
            let (ty, v) = match i % 3 {
                0 => ("string", json!(format!("value {g}-{i}"))),
                1 => ("integer", json!(g * 100 + i)),
                _ => ("boolean", json!(i % 2 == 0)),
            };
            props.insert(format!("field_{i}"), json!({"type": ty, "required": true}));
            obj.insert(format!("field_{i}"), v);
        }
        spec.insert(
            format!("group_{g}"),
            json!({"type": "object", "required": true, "properties": props}),
        );
        args.insert(format!("group_{g}"), Value::Object(obj));
    }
    let spec: SchemaSpec = serde_json::from_value(Value::Object(spec)).expect("valid spec");
    (spec, Value::Object(args).to_string())
}

/// The second-edition keywords: a `one_of` of three branches whose last one
/// matches, a `const`, string and array bounds.
fn second_edition_spec_and_args() -> (SchemaSpec, String) {
    let tagged = |tag: &str| {
        SchemaProp::object_with(
            SchemaSpec::new()
                .with(
                    "kind",
                    SchemaProp::constant(SchemaType::String, json!(tag)).required(true),
                )
                .with("path", SchemaProp::string().with_length(Some(1), Some(256))),
        )
        .with_additional_properties(false)
    };
    let spec = SchemaSpec::new()
        .with(
            "target",
            SchemaProp::one_of([SchemaProp::integer(), tagged("dir"), tagged("file")])
                .required(true),
        )
        .with(
            "mode",
            SchemaProp::constant(SchemaType::String, json!("fast")),
        )
        .with(
            "tags",
            SchemaProp::array_of(SchemaProp::string().with_length(Some(1), Some(32)))
                .with_item_count(Some(1), Some(8)),
        );
    let args = json!({"target": {"kind": "file", "path": "src/main.rs"}, "mode": "fast",
                      "tags": ["read", "source", "rust"]});
    (spec, args.to_string())
}

fn bench(c: &mut Criterion) {
    let bash = dsh_tool_bash::BashArgs::schema_spec();
    let (nested, nested_args) = nested_spec_and_args();
    let (second, second_args) = second_edition_spec_and_args();
    let cases = [
        (
            "bash_valid",
            &bash,
            r#"{"command":"ls -la src","description":"List source files","timeoutMs":60000}"#
                .to_string(),
        ),
        (
            "bash_3_violations",
            &bash,
            r#"{"command":5,"description":"x","timeoutMs":"soon","run_in_background":"yes"}"#
                .to_string(),
        ),
        ("nested_50_leaves", &nested, nested_args),
        ("one_of_const_bounds", &second, second_args),
    ];
    let mut g = c.benchmark_group("boundary");
    for (name, spec, text) in &cases {
        let value: Value = serde_json::from_str(text).expect("valid JSON");
        let tree = ArgValue::parse(text).expect("valid JSON");
        let n = validate_args(spec, &tree).len();
        assert_eq!(
            n,
            if *name == "bash_3_violations" { 3 } else { 0 },
            "{name}"
        );
        assert_eq!(validate_args(spec, &value), validate_args(spec, &tree));
        // What the typed call path runs.
        g.bench_function(format!("parse/{name}"), |b| {
            b.iter(|| ArgValue::parse(black_box(text)).expect("valid JSON"))
        });
        g.bench_function(format!("validate/{name}"), |b| {
            b.iter(|| validate_args(black_box(*spec), black_box(&tree)))
        });
        g.bench_function(format!("parse+validate/{name}"), |b| {
            b.iter(|| {
                let tree = ArgValue::parse(black_box(text)).expect("valid JSON");
                validate_args(black_box(*spec), &tree)
            })
        });
        // The same on a `serde_json::Value` (ordered maps), for comparison.
        g.bench_function(format!("parse_value/{name}"), |b| {
            b.iter(|| serde_json::from_str::<Value>(black_box(text)).expect("valid JSON"))
        });
        g.bench_function(format!("validate_value/{name}"), |b| {
            b.iter(|| validate_args(black_box(*spec), black_box(&value)))
        });
    }
    // The floor of reporting three violations: three messages of the same
    // lengths built and collected, nothing checked.
    let messages = validate_args(&bash, &ArgValue::parse(&cases[1].2).expect("valid JSON"));
    g.bench_function("floor/3_messages", |b| {
        b.iter(|| {
            let mut out = Vec::new();
            for m in black_box(&messages) {
                let mut s = String::with_capacity(48 + m.len());
                s.push_str(m);
                out.push(s);
            }
            out
        })
    });
    g.finish();
    // Once per tool (and per tool-set change): the spec the model is shown.
    let mut g = c.benchmark_group("schema");
    g.bench_function("to_json_schema/bash", |b| {
        b.iter(|| to_json_schema(black_box(&bash)))
    });
    g.bench_function("to_json_schema/nested_50_leaves", |b| {
        b.iter(|| to_json_schema(black_box(&nested)))
    });
    g.finish();
    // Once per start-up: the bash tool's spec in DeepSeek's strict dialect.
    let mut g = c.benchmark_group("strict");
    g.bench_function("compile/bash", |b| {
        b.iter(|| to_strict_schema(black_box(&bash)).expect("bash is expressible"))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
