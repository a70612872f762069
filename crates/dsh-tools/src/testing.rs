//! Drift-guard support for property tests (feature `testing`): a proptest
//! strategy for JSON that satisfies a spec, and the checks that a
//! [`ToolArgs`] type agrees with its validator.
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

use std::fmt::Debug;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Number, Value};

use dsh_tools::{
    deserialize_validated, normalize_integers, validate_args, SchemaProp, SchemaSpec, SchemaType,
    ToolArgs,
};

/// JSON objects that satisfy `spec`: every required key, optional keys
/// sometimes, values of the declared type inside the declared bounds and
/// enums, integers sometimes written as integral floats (`3.0`), plus
/// unrelated extra keys.
pub fn valid_value(spec: &SchemaSpec) -> BoxedStrategy<Value> {
    object_strategy(spec)
}

fn object_strategy(spec: &SchemaSpec) -> BoxedStrategy<Value> {
    let entries: Vec<BoxedStrategy<Option<(String, Value)>>> = spec
        .iter()
        .map(|(name, prop)| {
            let name = name.to_string();
            let value = prop_strategy(prop);
            if prop.required {
                value.prop_map(move |v| Some((name.clone(), v))).boxed()
            } else {
                proptest::option::of(value)
                    .prop_map(move |v| v.map(|v| (name.clone(), v)))
                    .boxed()
            }
        })
        .collect();
    let names: Vec<String> = spec.names().map(str::to_string).collect();
    let extras = proptest::collection::vec(("[a-z]{1,8}", scalar()), 0..2);
    (entries, extras)
        .prop_map(move |(entries, extras)| {
            let mut map = Map::new();
            for (k, v) in entries.into_iter().flatten() {
                map.insert(k, v);
            }
            for (k, v) in extras {
                // Extra keys must not shadow declared ones (those are checked).
                if !names.contains(&k) && !map.contains_key(&k) {
                    map.insert(k, v);
                }
            }
            Value::Object(map)
        })
        .boxed()
}

/// A value satisfying one property.
pub fn prop_strategy(prop: &SchemaProp) -> BoxedStrategy<Value> {
    if let Some(members) = &prop.enum_values {
        let members: Vec<Value> = members
            .iter()
            .filter(|m| within_bounds(prop, m))
            .cloned()
            .collect();
        if !members.is_empty() {
            return proptest::sample::select(members).boxed();
        }
    }
    match prop.ty {
        SchemaType::String => "\\PC{0,12}".prop_map(Value::String).boxed(),
        SchemaType::Boolean => any::<bool>().prop_map(Value::Bool).boxed(),
        SchemaType::Integer => integer_strategy(prop),
        SchemaType::Number => number_strategy(prop),
        SchemaType::Object => match &prop.properties {
            Some(props) => object_strategy(props),
            None => proptest::collection::btree_map("[a-z]{1,6}", scalar(), 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect()))
                .boxed(),
        },
        SchemaType::Array => match &prop.items {
            Some(items) => proptest::collection::vec(prop_strategy(items), 0..4)
                .prop_map(Value::Array)
                .boxed(),
            None => proptest::collection::vec(scalar(), 0..3)
                .prop_map(Value::Array)
                .boxed(),
        },
    }
}

fn scalar() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-z ]{0,6}".prop_map(Value::String),
    ]
    .boxed()
}

fn within_bounds(prop: &SchemaProp, v: &Value) -> bool {
    let Some(x) = v.as_f64() else { return true };
    prop.minimum
        .as_ref()
        .and_then(Number::as_f64)
        .is_none_or(|m| x >= m)
        && prop
            .maximum
            .as_ref()
            .and_then(Number::as_f64)
            .is_none_or(|m| x <= m)
}

fn bound_i128(n: Option<&Number>, ceil: bool) -> Option<i128> {
    let n = n?;
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    let f = n.as_f64()?;
    let r = if ceil { f.ceil() } else { f.floor() };
    // Clamp into the range JSON integers take in serde_json.
    Some(r.clamp(i64::MIN as f64, u64::MAX as f64) as i128)
}

fn integer_strategy(prop: &SchemaProp) -> BoxedStrategy<Value> {
    let lo = bound_i128(prop.minimum.as_ref(), true).unwrap_or(i128::from(i64::MIN));
    let hi = bound_i128(prop.maximum.as_ref(), false).unwrap_or(i128::from(u64::MAX));
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (lo, lo) };
    let small_lo = lo.max(-1000).min(hi);
    let small_hi = hi.min(1000).max(small_lo);
    prop_oneof![
        (lo..=hi).prop_map(int_value),
        (small_lo..=small_hi).prop_map(int_value),
        // Integral floats count as integers too.
        (small_lo..=small_hi)
            .prop_map(|i| { Number::from_f64(i as f64).map_or(Value::Null, Value::Number) }),
        Just(int_value(lo)),
        Just(int_value(hi)),
    ]
    .boxed()
}

fn int_value(i: i128) -> Value {
    if let Ok(v) = i64::try_from(i) {
        Value::from(v)
    } else if let Ok(v) = u64::try_from(i) {
        Value::from(v)
    } else {
        Value::Null
    }
}

fn number_strategy(prop: &SchemaProp) -> BoxedStrategy<Value> {
    let lo = prop
        .minimum
        .as_ref()
        .and_then(Number::as_f64)
        .unwrap_or(-1e300);
    let hi = prop
        .maximum
        .as_ref()
        .and_then(Number::as_f64)
        .unwrap_or(1e300);
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (lo, lo) };
    let float = (lo..=hi).prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number));
    let edges = prop_oneof![
        Just(Number::from_f64(lo).map_or(Value::Null, Value::Number)),
        Just(Number::from_f64(hi).map_or(Value::Null, Value::Number)),
    ];
    // Small integers inside the bounds, when there are any.
    let (ilo, ihi) = (lo.ceil().max(-1000.0), hi.floor().min(1000.0));
    if ilo <= ihi {
        // Both are integral and within ±1000: the casts are exact.
        let ints = (ilo as i64..=ihi as i64).prop_map(Value::from);
        prop_oneof![float, ints, edges].boxed()
    } else {
        prop_oneof![float, edges].boxed()
    }
}

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

/// Removes `null` values at keys the spec declares optional, recursively.
pub fn strip_optional_nulls(spec: &SchemaSpec, value: &mut Value) {
    let Value::Object(map) = value else { return };
    for (name, prop) in spec {
        let remove = matches!(map.get(name), Some(Value::Null)) && !prop.required;
        if remove {
            map.shift_remove(name);
        } else if let Some(v) = map.get_mut(name) {
            strip_prop(prop, v);
        }
    }
}

fn strip_prop(prop: &SchemaProp, v: &mut Value) {
    match v {
        Value::Object(_) => {
            if let Some(props) = &prop.properties {
                strip_optional_nulls(props, v);
            }
        }
        Value::Array(items) => {
            if let Some(item) = &prop.items {
                for x in items {
                    strip_prop(item, x);
                }
            }
        }
        _ => {}
    }
}

/// Runs both drift checks on `cases` generated values of `A`'s spec: each
/// must deserialize, and the deserialized value, serialized again, must
/// validate clean.
///
/// # Panics
/// On the first drift found (with proptest's minimal failing input).
pub fn assert_no_drift<A>(cases: u32)
where
    A: ToolArgs + DeserializeOwned + Serialize + Debug,
{
    let spec = A::schema_spec();
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
        let args: A = deserialize_validated(normalized)
            .map_err(|e| TestCaseError::fail(format!("ARGS_DRIFT for {value}: {}", e.message())))?;
        check_serialized(&args).map_err(|e| TestCaseError::fail(format!("{args:?}: {e}")))?;
        Ok(())
    });
    if let Err(e) = result {
        panic!(
            "{} drifts from its validator: {e}",
            std::any::type_name::<A>()
        );
    }
}
