//! Property-test strategies (feature `testing`): JSON values that satisfy a
//! spec, for checks that whatever validation accepts is handled downstream.
//!
//! dsh-tools' drift guard (`dsh_tools::testing::assert_no_drift`) builds on
//! [`valid_value`]. Use it in a `proptest!` block, or draw values directly:
//!
//! ```
//! use dsh_schema::testing::valid_value;
//! use dsh_schema::{is_valid, SchemaProp, SchemaSpec};
//! use proptest::strategy::{Strategy, ValueTree};
//! use proptest::test_runner::TestRunner;
//!
//! let spec = SchemaSpec::new()
//!     .with("n", SchemaProp::integer().required(true))
//!     .with("mode", SchemaProp::string_enum(["fast", "slow"]));
//! let mut runner = TestRunner::deterministic();
//! for _ in 0..32 {
//!     let value = valid_value(&spec).new_tree(&mut runner).unwrap().current();
//!     assert!(is_valid(&spec, &value), "{value}");
//! }
//! ```

use proptest::prelude::*;
use serde_json::{Map, Number, Value};

use dsh_schema::{SchemaProp, SchemaSpec, SchemaType};

/// JSON objects that satisfy `spec`: every required key, optional keys
/// sometimes, values of the declared type inside the declared bounds,
/// lengths, enums and constants, integers sometimes written as integral
/// floats (`3.0`), a value of exactly one `one_of` branch, plus unrelated
/// extra keys where the object is open.
pub fn valid_value(spec: &SchemaSpec) -> BoxedStrategy<Value> {
    object_strategy(spec, true)
}

fn object_strategy(spec: &SchemaSpec, open: bool) -> BoxedStrategy<Value> {
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
    let together: Vec<Vec<String>> = spec.together().to_vec();
    let extras = proptest::collection::vec(("[a-z]{1,8}", scalar()), 0..if open { 2 } else { 1 });
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
            // Groups given together or not at all: a partial group is
            // dropped whole.
            for group in &together {
                if !group.iter().all(|k| map.contains_key(k)) {
                    for k in group {
                        map.remove(k);
                    }
                }
            }
            Value::Object(map)
        })
        .boxed()
}

/// A value satisfying one property.
pub fn prop_strategy(prop: &SchemaProp) -> BoxedStrategy<Value> {
    if let Some(c) = &prop.const_value {
        return Just(c.clone()).boxed();
    }
    if let Some(branches) = &prop.one_of {
        let all = branches.clone();
        let choices: Vec<BoxedStrategy<Value>> = branches.iter().map(prop_strategy).collect();
        return proptest::strategy::Union::new(choices)
            .prop_filter("matches exactly one branch", move |v| {
                all.iter()
                    .filter(|b| dsh_schema::is_valid_prop(b, v))
                    .count()
                    == 1
            })
            .boxed();
    }
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
        SchemaType::String if prop.min_length.is_some() || prop.max_length.is_some() => {
            let lo = prop.min_length.unwrap_or(0).min(64) as usize;
            let hi = prop
                .max_length
                .unwrap_or(lo as u64 + 12)
                .min(lo as u64 + 12) as usize;
            proptest::collection::vec(proptest::char::any(), lo..=hi.max(lo))
                .prop_map(|cs| Value::String(cs.into_iter().collect()))
                .boxed()
        }
        SchemaType::String => "\\PC{0,12}".prop_map(Value::String).boxed(),
        SchemaType::Null => Just(Value::Null).boxed(),
        SchemaType::Json => scalar(),
        SchemaType::Boolean => any::<bool>().prop_map(Value::Bool).boxed(),
        SchemaType::Integer | SchemaType::Number
            if prop.exclusive_minimum.is_some() || prop.exclusive_maximum.is_some() =>
        {
            let bounds = prop.clone();
            let inner = if prop.ty == SchemaType::Integer {
                integer_strategy(prop)
            } else {
                number_strategy(prop)
            };
            // Small values near the exclusive bounds too, so the filter passes often.
            let near = exclusive_near(prop);
            prop_oneof![inner, near]
                .prop_filter("inside the exclusive bounds", move |v| {
                    within_exclusive(&bounds, v)
                })
                .boxed()
        }
        SchemaType::Integer => integer_strategy(prop),
        SchemaType::Number => number_strategy(prop),
        SchemaType::Object => match &prop.properties {
            Some(props) => object_strategy(props, prop.additional_properties != Some(false)),
            None if prop.additional_properties == Some(false) => {
                Just(Value::Object(Map::new())).boxed()
            }
            None => proptest::collection::btree_map("[a-z]{1,6}", scalar(), 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect()))
                .boxed(),
        },
        SchemaType::Array => {
            let lo = prop.min_items.unwrap_or(0).min(8) as usize;
            let hi = prop.max_items.unwrap_or(lo as u64 + 3).min(lo as u64 + 3) as usize;
            let len = lo..=hi.max(lo);
            match &prop.items {
                Some(items) => proptest::collection::vec(prop_strategy(items), len)
                    .prop_map(Value::Array)
                    .boxed(),
                None => proptest::collection::vec(scalar(), len)
                    .prop_map(Value::Array)
                    .boxed(),
            }
        }
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

fn within_exclusive(prop: &SchemaProp, v: &Value) -> bool {
    let Some(x) = v.as_f64() else { return false };
    prop.exclusive_minimum
        .as_ref()
        .and_then(Number::as_f64)
        .is_none_or(|m| x > m)
        && prop
            .exclusive_maximum
            .as_ref()
            .and_then(Number::as_f64)
            .is_none_or(|m| x < m)
}

/// Integers just inside an exclusive bound (`bound + 1 ..= bound + 100`, or
/// below an upper one).
fn exclusive_near(prop: &SchemaProp) -> BoxedStrategy<Value> {
    let start = match (&prop.exclusive_minimum, &prop.exclusive_maximum) {
        (Some(min), _) => min.as_f64().map_or(0, |m| m.floor() as i64 + 1),
        (None, Some(max)) => max.as_f64().map_or(0, |m| m.ceil() as i64 - 100),
        (None, None) => 0,
    };
    (start..start.saturating_add(100))
        .prop_map(Value::from)
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
