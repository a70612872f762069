//! `validate_args`: the runtime mirror of [`to_json_schema`](crate::to_json_schema),
//! plus the two helpers of the typed call path that walk the same structure
//! (integer normalisation and near-miss notes).

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

use crate::number::cmp_numbers;
use crate::spec::{SchemaProp, SchemaSpec, SchemaType};

/// Checks `value` against `spec`; returns the violations in words a model can
/// act on, empty when valid.
///
/// Total: never panics, whatever the value. The exact mirror of
/// [`to_json_schema`](crate::to_json_schema):
/// - the top level must be a JSON object (`"arguments" must be an object`,
///   and nothing else is reported then);
/// - per property, in spec order: absent and `required` →
///   `missing required property "a.b"`; present → type check (`null` is a
///   present value of the wrong type) → `"a.b" must be a string` (`a number`,
///   `an integer`, `a boolean`, `an object`, `an array`); only when the type
///   passed: `enum` membership (`"a[2].c" must be one of ["x","y"]`, numbers
///   compared by value as f64, strings by exact code points), then the
///   inclusive bounds (`"n" must be at least 0` / `at most 255`); then
///   recursion into `properties` / `items` (depth-first, spec order, array
///   elements in index order);
/// - `integer` is a number with no fractional part (`1` and `1.0` both are);
/// - extra keys are allowed; `default` is not applied.
///
/// Paths name array elements `[i]` and join a key with `.` only to a
/// non-empty prefix (`a[2].c`; the child `a` of a key named `""` is `a`).
/// At most one violation is reported per value. Allocates nothing when the
/// value is valid (paths are rendered only for a violation).
pub fn validate_args(spec: &SchemaSpec, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match value {
        Value::Object(map) => check_object(spec, map, None, &mut out),
        _ => out.push("\"arguments\" must be an object".to_string()),
    }
    out
}

/// Whether `value` passes [`validate_args`]. Allocates nothing when it does.
pub fn is_valid(spec: &SchemaSpec, value: &Value) -> bool {
    validate_args(spec, value).is_empty()
}

/// One segment of a value path, linked to its parent on the stack.
#[derive(Clone, Copy)]
struct PathNode<'a> {
    seg: Seg<'a>,
    parent: Option<&'a PathNode<'a>>,
}

#[derive(Clone, Copy)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

impl PathNode<'_> {
    /// `a.b[3].c`
    fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        out
    }

    /// Appends the path to `out`. A key is joined with `.` only to a
    /// non-empty prefix (the reference rule), so the child `a` of a key
    /// named `""` is `a`, not `.a`.
    fn render_into(&self, out: &mut String) {
        let start = out.len();
        self.render_after(out, start);
    }

    /// [`PathNode::render_into`] for a path that began at `out[start..]`.
    fn render_after(&self, out: &mut String, start: usize) {
        if let Some(p) = self.parent {
            p.render_after(out, start);
        }
        match self.seg {
            Seg::Key(k) => {
                if out.len() > start {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => {
                // Writing to a String cannot fail.
                let _ = write!(out, "[{i}]");
            }
        }
    }

    /// `"<path>"<rest>` in one allocation.
    fn quoted_then(&self, rest: &str) -> String {
        let mut out = String::with_capacity(24 + rest.len());
        out.push('"');
        self.render_into(&mut out);
        out.push('"');
        out.push_str(rest);
        out
    }
}

/// The value of `name` in `map`. Tool arguments are small objects, where
/// comparing keys beats hashing the name.
fn lookup<'v>(map: &'v Map<String, Value>, name: &str) -> Option<&'v Value> {
    if map.len() <= 8 {
        map.iter().find(|(k, _)| k.as_str() == name).map(|(_, v)| v)
    } else {
        map.get(name)
    }
}

fn check_object(
    spec: &SchemaSpec,
    map: &Map<String, Value>,
    parent: Option<&PathNode<'_>>,
    out: &mut Vec<String>,
) {
    for (name, prop) in spec {
        let node = PathNode {
            seg: Seg::Key(name),
            parent,
        };
        match lookup(map, name) {
            None => {
                if prop.required {
                    let mut msg = String::from("missing required property \"");
                    node.render_into(&mut msg);
                    msg.push('"');
                    out.push(msg);
                }
            }
            Some(v) => check_value(prop, v, &node, out),
        }
    }
}

fn check_value(prop: &SchemaProp, v: &Value, node: &PathNode<'_>, out: &mut Vec<String>) {
    if !type_matches(prop.ty, v) {
        let mut msg = node.quoted_then(" must be ");
        msg.push_str(prop.ty.article_noun());
        out.push(msg);
        return;
    }
    if let Some(members) = &prop.enum_values {
        if !members.iter().any(|m| enum_eq(m, v)) {
            let mut msg = node.quoted_then(" must be one of [");
            for (i, m) in members.iter().enumerate() {
                if i > 0 {
                    msg.push(',');
                }
                // A Value displays as compact JSON; writing to a String cannot fail.
                let _ = write!(msg, "{m}");
            }
            msg.push(']');
            out.push(msg);
            return;
        }
    }
    if let Value::Number(n) = v {
        if let Some(min) = &prop.minimum {
            if cmp_numbers(n, min) == Ordering::Less {
                let mut msg = node.quoted_then(" must be at least ");
                let _ = write!(msg, "{min}");
                out.push(msg);
                return;
            }
        }
        if let Some(max) = &prop.maximum {
            if cmp_numbers(n, max) == Ordering::Greater {
                let mut msg = node.quoted_then(" must be at most ");
                let _ = write!(msg, "{max}");
                out.push(msg);
                return;
            }
        }
    }
    match v {
        Value::Object(map) => {
            if let Some(props) = &prop.properties {
                check_object(props, map, Some(node), out);
            }
        }
        Value::Array(items) => {
            if let Some(item) = &prop.items {
                for (i, x) in items.iter().enumerate() {
                    let child = PathNode {
                        seg: Seg::Index(i),
                        parent: Some(node),
                    };
                    check_value(item, x, &child, out);
                }
            }
        }
        _ => {}
    }
}

/// Whether `v` has type `ty` (`integer`: a number with no fractional part).
pub(crate) fn type_matches(ty: SchemaType, v: &Value) -> bool {
    match ty {
        SchemaType::String => v.is_string(),
        SchemaType::Number => v.is_number(),
        SchemaType::Integer => matches!(v, Value::Number(n) if is_integral(n)),
        SchemaType::Boolean => v.is_boolean(),
        SchemaType::Object => v.is_object(),
        SchemaType::Array => v.is_array(),
    }
}

/// A JSON number with no fractional part.
pub(crate) fn is_integral(n: &Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// Enum membership: numbers by value as f64, everything else structurally.
fn enum_eq(member: &Value, v: &Value) -> bool {
    match (member, v) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => member == v,
    }
}

/// Rewrites integral floats (`3.0`, `1e3`) at `integer` properties into
/// integers so that serde reads them into Rust integer types. Call on a value
/// that passed [`validate_args`]; values out of the i64/u64 range stay as
/// they are. Allocates nothing when there is nothing to rewrite.
pub fn normalize_integers(spec: &SchemaSpec, value: &mut Value) {
    if let Value::Object(map) = value {
        normalize_object(spec, map);
    }
}

fn normalize_object(spec: &SchemaSpec, map: &mut Map<String, Value>) {
    for (name, prop) in spec {
        if let Some(v) = map.get_mut(name) {
            normalize_value(prop, v);
        }
    }
}

fn normalize_value(prop: &SchemaProp, v: &mut Value) {
    match v {
        Value::Number(n) if prop.ty == SchemaType::Integer && !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64() {
                if let Some(int) = integral_to_number(f) {
                    *n = int;
                }
            }
        }
        Value::Object(map) => {
            if let Some(props) = &prop.properties {
                normalize_object(props, map);
            }
        }
        Value::Array(items) => {
            if let Some(item) = &prop.items {
                for x in items {
                    normalize_value(item, x);
                }
            }
        }
        _ => {}
    }
}

/// An integral, in-range f64 as an exact integer number.
fn integral_to_number(f: f64) -> Option<Number> {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    const TWO_64: f64 = 18_446_744_073_709_551_616.0;
    if !f.is_finite() || f.fract() != 0.0 {
        return None;
    }
    // The casts are exact: `f` is integral and inside the target's range.
    if (-TWO_63..TWO_63).contains(&f) {
        Some(Number::from(f as i64))
    } else if (0.0..TWO_64).contains(&f) {
        Some(Number::from(f as u64))
    } else {
        None
    }
}

/// Notes for unknown keys that look like a declared key nobody set (edit
/// distance ≤ 2 or a case/underscore variant, at the same level), e.g.
/// `note: argument "timeout_ms" is not a parameter of bash and was ignored;
/// did you mean "timeoutMs"?`. Nested objects and array elements are
/// walked too (paths as in violations). Empty for a non-object value.
pub fn near_miss_notes(spec: &SchemaSpec, value: &Value, tool: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Value::Object(map) = value {
        notes_object(spec, map, None, tool, &mut out);
    }
    out
}

fn notes_object(
    spec: &SchemaSpec,
    map: &Map<String, Value>,
    parent: Option<&PathNode<'_>>,
    tool: &str,
    out: &mut Vec<String>,
) {
    for key in map.keys() {
        if spec.contains(key) {
            continue;
        }
        let candidates = spec.names().filter(|n| !map.contains_key(*n));
        if let Some(best) = crate::suggest::closest(key, candidates) {
            let given = PathNode {
                seg: Seg::Key(key),
                parent,
            };
            let meant = PathNode {
                seg: Seg::Key(best),
                parent,
            };
            out.push(format!(
                "note: argument \"{}\" is not a parameter of {tool} and was ignored; did you mean \"{}\"?",
                given.render(),
                meant.render()
            ));
        }
    }
    for (name, prop) in spec {
        if let Some(v) = map.get(name) {
            let node = PathNode {
                seg: Seg::Key(name),
                parent,
            };
            notes_value(prop, v, &node, tool, out);
        }
    }
}

fn notes_value(
    prop: &SchemaProp,
    v: &Value,
    node: &PathNode<'_>,
    tool: &str,
    out: &mut Vec<String>,
) {
    match v {
        Value::Object(map) => {
            if let Some(props) = &prop.properties {
                notes_object(props, map, Some(node), tool, out);
            }
        }
        Value::Array(items) => {
            if let Some(item) = &prop.items {
                for (i, x) in items.iter().enumerate() {
                    let child = PathNode {
                        seg: Seg::Index(i),
                        parent: Some(node),
                    };
                    notes_value(item, x, &child, tool, out);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integral_floats_become_integers() {
        let spec = SchemaSpec::new()
            .with("n", SchemaProp::integer())
            .with("x", SchemaProp::number());
        let mut v = json!({"n": 3.0, "x": 3.0});
        normalize_integers(&spec, &mut v);
        assert_eq!(v, json!({"n": 3, "x": 3.0}));
        assert!(v["n"].is_i64());
        let mut big = json!({"n": 1.8e19});
        normalize_integers(&spec, &mut big);
        assert!(big["n"].is_u64());
        let mut huge = json!({"n": 1e300});
        normalize_integers(&spec, &mut huge);
        assert!(huge["n"].is_f64());
    }

    #[test]
    fn path_rendering() {
        let a = PathNode {
            seg: Seg::Key("a"),
            parent: None,
        };
        let i = PathNode {
            seg: Seg::Index(2),
            parent: Some(&a),
        };
        let c = PathNode {
            seg: Seg::Key("c"),
            parent: Some(&i),
        };
        assert_eq!(c.render(), "a[2].c");
        let empty = PathNode {
            seg: Seg::Key(""),
            parent: None,
        };
        let a = PathNode {
            seg: Seg::Key("a"),
            parent: Some(&empty),
        };
        assert_eq!(a.render(), "a");
        assert_eq!(a.quoted_then(" x"), "\"a\" x");
        let i = PathNode {
            seg: Seg::Index(0),
            parent: Some(&empty),
        };
        assert_eq!(i.render(), "[0]");
    }
}
