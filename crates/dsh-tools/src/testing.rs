//! Drift-guard support for property tests (feature `testing`): the checks
//! that a [`ToolArgs`] type agrees with its validator, and (re-exported from
//! `dsh_schema::testing`) the proptest strategies for JSON that satisfies a
//! spec.
//!
//! Every crate that defines argument types runs the guard on them:
//!
//! ```ignore
//! // dev-dependency: dsh-tools = { workspace = true, features = ["testing"] }
//! #[test]
//! fn bash_args_do_not_drift() {
//!     dsh_tools::testing::assert_no_drift::<BashArgs>(256);
//! }
//! ```

use dsh_kernel::ErrorCode;
use std::fmt::Debug;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use dsh_tools::{deserialize_validated, normalize_integers, validate_args, SchemaSpec, ToolArgs};

pub use dsh_schema::testing::{prop_strategy, valid_value};

/// Drift check 1: a value that validates clean against `A`'s spec must
/// deserialize into `A` (through the same normalisation the typed tool path
/// uses). Values that do not validate are skipped (`Ok`).
///
/// # Errors
/// The `ARGS_DRIFT` message.
pub fn check_deserializes<A: ToolArgs + DeserializeOwned>(value: &Value) -> Result<(), String> {
    let spec = A::schema_spec();
    if !validate_args(&spec, value).is_empty() {
        return Ok(());
    }
    let mut value = value.clone();
    normalize_integers(&spec, &mut value);
    dsh_schema::drop_undeclared_keys(&spec, &mut value);
    deserialize_validated::<A>(value)
        .map(drop)
        .map_err(|e| format!("{}: {}", e.code(), e.message()))
}

/// Drift check 2: `args` serialized validates clean. `null`s at optional
/// keys are dropped first: they are how serde writes `None`, whereas a model
/// simply omits the key.
///
/// # Errors
/// The violations, or a serialization failure.
pub fn check_serialized<A: ToolArgs + Serialize>(args: &A) -> Result<(), String> {
    let spec = A::schema_spec();
    let mut value = serde_json::to_value(args).map_err(|e| format!("serialize: {e}"))?;
    strip_optional_nulls(&spec, &mut value);
    let violations = validate_args(&spec, &value);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(format!("{violations:?} for {value}"))
    }
}

/// `v` with every array sorted (by its compact JSON): hash sets serialize in
/// an order of their own, so two equal sets compare equal only so.
fn canonical_order(v: Value) -> Value {
    match v {
        Value::Array(items) => {
            let mut items: Vec<Value> = items.into_iter().map(canonical_order).collect();
            items.sort_by_cached_key(Value::to_string);
            Value::Array(items)
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, canonical_order(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Removes `null` values at keys the spec declares optional, recursively
/// (the same rule as [`dsh_schema::strip_introduced_nulls`], which it is).
pub fn strip_optional_nulls(spec: &SchemaSpec, value: &mut Value) {
    dsh_schema::strip_introduced_nulls(spec, value);
}

/// Checks that `spec` passes [`SchemaSpec::check`] and that its serialized
/// form loads back as the same spec, through a JSON value and through JSON
/// text (compared by names and groups there: text may move a float's last
/// bit).
///
/// # Errors
/// What differs, with the serialized form.
pub fn assert_spec_round_trips(spec: &SchemaSpec) -> Result<(), String> {
    spec.check()
        .map_err(|e| format!("the spec fails its own load checks: {e}"))?;
    let value = serde_json::to_value(spec).map_err(|e| format!("cannot serialize: {e}"))?;
    let back = SchemaSpec::from_value(&value).map_err(|e| format!("{e} loading {value}"))?;
    if &back != spec {
        return Err(format!("{value} loads back as {back:?}, not {spec:?}"));
    }
    let text = value.to_string();
    let back = SchemaSpec::from_json_str(&text).map_err(|e| format!("{e} loading {text}"))?;
    if back.names().ne(spec.names()) || back.together() != spec.together() {
        return Err(format!("{text} loads back as {back:?}"));
    }
    Ok(())
}

/// Runs the drift checks on `A`: its spec passes the load checks and,
/// written out in its JSON form, loads back as the same spec
/// (together-groups included; [`assert_spec_round_trips`]); then on
/// `cases` generated values of the spec, each must deserialize, and the
/// deserialized value, serialized again, must validate clean.
///
/// # Panics
/// On the first drift found (with proptest's minimal failing input).
pub fn assert_no_drift<A>(cases: u32)
where
    A: ToolArgs + DeserializeOwned + Serialize + Debug,
{
    let spec = A::schema_spec();
    if let Err(e) = assert_spec_round_trips(&spec) {
        panic!("{}: {e}", std::any::type_name::<A>());
    }
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&valid_value(&spec), |value| {
        let violations = validate_args(&spec, &value);
        prop_assert!(
            violations.is_empty(),
            "generator produced {value}: {violations:?}"
        );
        let mut normalized = value.clone();
        normalize_integers(&spec, &mut normalized);
        dsh_schema::drop_undeclared_keys(&spec, &mut normalized);
        let args: A = deserialize_validated(normalized)
            .map_err(|e| TestCaseError::fail(format!("ARGS_DRIFT for {value}: {}", e.message())))?;
        check_serialized(&args).map_err(|e| TestCaseError::fail(format!("{args:?}: {e}")))?;
        // The typed call path on the text (read in place when it can be)
        // reads the same arguments as the value path.
        let text = value.to_string();
        let (from_text, _) = dsh_tools::read_args::<A>("drift", &text, None).map_err(|e| {
            TestCaseError::fail(format!("{} for {text}: {}", e.code(), e.message()))
        })?;
        let canonical = |v: Result<Value, serde_json::Error>| v.ok().map(canonical_order);
        let (a, b) = (
            canonical(serde_json::to_value(&args)),
            canonical(serde_json::to_value(&from_text)),
        );
        prop_assert!(
            a.is_some() && a == b,
            "the text path read {b:?}, the value path {a:?}, for {text}"
        );
        Ok(())
    });
    if let Err(e) = result {
        panic!(
            "{} drifts from its validator: {e}",
            std::any::type_name::<A>()
        );
    }
}
