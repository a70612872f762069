//! `validate_args` and its companions are total: no input panics them, and
//! they agree with each other.
//!
//! Input: a spec and an argument text separated by the first NUL byte; both
//! are parsed leniently (an unusable spec falls back to a fixed one).
#![no_main]

use dsh_schema::{
    near_miss_notes, normalize_integers, to_json_schema, validate_args, SchemaProp, SchemaSpec,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn fallback_spec() -> SchemaSpec {
    let tagged = |tag: &str| {
        SchemaProp::object_with(
            SchemaSpec::new()
                .with("kind", SchemaProp::string_const(tag).required(true))
                .with("path", SchemaProp::string().with_length(Some(1), Some(16))),
        )
        .with_additional_properties(false)
    };
    SchemaSpec::new()
        .with("command", SchemaProp::string().required(true))
        .with(
            "target",
            SchemaProp::one_of([SchemaProp::integer().above(0.0), tagged("a"), tagged("b")]),
        )
        .with("blob", SchemaProp::json())
        .with("none", SchemaProp::null())
        .with(
            "tags",
            SchemaProp::array_of(SchemaProp::string()).with_item_count(Some(1), Some(3)),
        )
        .with("n", SchemaProp::integer().with_range(Some(0.into()), Some(255.into())))
        .with("mode", SchemaProp::string_enum(["a", "b"]))
        .with(
            "list",
            SchemaProp::array_of(SchemaProp::object_with(
                SchemaSpec::new().with("x", SchemaProp::number().required(true)),
            )),
        )
}

fuzz_target!(|data: &[u8]| {
    let (spec_bytes, args_bytes) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (&[][..], data),
    };
    let spec = std::str::from_utf8(spec_bytes)
        .ok()
        .and_then(|s| SchemaSpec::from_json_str(s).ok())
        .unwrap_or_else(fallback_spec);
    let Ok(value) = serde_json::from_slice::<Value>(args_bytes) else {
        return;
    };
    let violations = validate_args(&spec, &value);
    let _ = to_json_schema(&spec);
    let _ = near_miss_notes(&spec, &value, "fuzz");
    // Normalising a valid value keeps it valid.
    if violations.is_empty() {
        let mut v = value.clone();
        normalize_integers(&spec, &mut v);
        assert!(validate_args(&spec, &v).is_empty(), "normalisation broke {value}");
    }
    // is_valid is the quiet form of the same judgement.
    assert_eq!(dsh_schema::is_valid(&spec, &value), violations.is_empty());
    // The strict dialect: compiling never panics, and stripping nulls only
    // removes keys.
    let _ = dsh_schema::to_strict_schema(&spec);
    let mut stripped = value.clone();
    dsh_schema::strip_introduced_nulls(&spec, &mut stripped);
    // What dsh shows the model classifies back, and judges alike.
    let shown = to_json_schema(&spec);
    let raw = dsh_schema::classify_json_schema(&shown).expect("shown schemas are in the subset");
    assert_eq!(raw.validate(&value), violations, "raw and DSL disagree on {value}");
    // Any JSON as a raw schema: classification is total.
    if let Ok(raw) = dsh_schema::classify_json_schema(&value) {
        let _ = raw.validate(&shown);
    }
});
