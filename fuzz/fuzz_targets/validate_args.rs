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
    SchemaSpec::new()
        .with("command", SchemaProp::string().required(true))
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
});
