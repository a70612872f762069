//! Spec loading (JSON and TOML) never panics, and whatever loads survives
//! the checks and a serialize → load round trip.
#![no_main]

use dsh_schema::{to_json_schema, SchemaSpec};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let loaded = [
        SchemaSpec::from_json_str(text).ok(),
        toml::from_str::<SchemaSpec>(text).ok(),
    ];
    for spec in loaded.into_iter().flatten() {
        assert!(spec.check().is_ok(), "a loaded spec must pass check()");
        let _ = to_json_schema(&spec);
        let value = serde_json::to_value(&spec).expect("specs serialize");
        let back = SchemaSpec::from_value(&value).expect("a serialized spec loads back");
        assert_eq!(back, spec);
    }
});
