//! `validate_args`: the runtime mirror of [`to_json_schema`](crate::to_json_schema),
//! plus the two helpers of the typed call path that walk the same structure
//! (integer normalisation and near-miss notes).

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

use crate::json::{json_eq, JsonKind, JsonMap, JsonRead};
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
///   then `const` (`"a" must be "file"`), enum, numeric bounds, string length
///   in characters (`"s" must be at least 1 character long`), array size
///   (`"a" must have at most 2 items`), then recursion; a nested object with
///   `additionalProperties: false` reports each undeclared key
///   (`"a.c" is not an allowed property`); a `one_of` value must match
///   exactly one branch (`"x" must match exactly one of: a string; …` /
///   `"x" matches more than one alternative (1, 2)`); the crate README has
///   the full wording;
/// - `integer` is a number with no fractional part (`1` and `1.0` both are);
/// - extra keys are allowed at the top level; `default` is not applied;
/// - last, each group of [`SchemaSpec::require_together`] given in part
///   (`"a" and "b" must be given together; "b" is missing`).
///
/// Paths name array elements `[i]` and join a key with `.` only to a
/// non-empty prefix (`a[2].c`; the child `a` of a key named `""` is `a`).
/// At most one violation is reported per value. Allocates nothing when the
/// value is valid (paths are rendered only for a violation).
///
/// Generic over the value's representation ([`JsonRead`]): a
/// `serde_json::Value` and an [`ArgValue`](crate::ArgValue) parsed from the
/// same text get the same violations.
pub fn validate_args<V: JsonRead>(spec: &SchemaSpec, value: &V) -> Vec<String> {
    let mut out = Vec::new();
    match value.kind() {
        JsonKind::Object(map) => {
            check_object(spec, map, None, &mut out);
            check_together(spec, map, &mut out);
        }
        _ => out.push("\"arguments\" must be an object".to_string()),
    }
    out
}

/// The groups of [`SchemaSpec::require_together`]: some members present
/// and others absent is `"a" and "b" must be given together; "b" is
/// missing` (one violation per group, after the properties' own).
fn check_together<S: Sink, M: JsonMap>(spec: &SchemaSpec, map: &M, out: &mut S) {
    for group in spec.together() {
        let present = group.iter().filter(|n| map.contains_key(n)).count();
        if present != 0 && present != group.len() {
            out.report(|| {
                let names: Vec<String> = group.iter().map(|n| format!("\"{n}\"")).collect();
                let missing: Vec<String> = group
                    .iter()
                    .filter(|n| !map.contains_key(n))
                    .map(|n| format!("\"{n}\""))
                    .collect();
                format!(
                    "{} must be given together; {} {} missing",
                    names.join(" and "),
                    missing.join(", "),
                    if missing.len() == 1 { "is" } else { "are" }
                )
            });
        }
    }
}

/// Whether `value` passes [`validate_args`]. Allocates nothing (also when it
/// does not pass).
pub fn is_valid<V: JsonRead>(spec: &SchemaSpec, value: &V) -> bool {
    match value.kind() {
        JsonKind::Object(map) => {
            let mut count = Count(0);
            check_object(spec, map, None, &mut count);
            check_together(spec, map, &mut count);
            count.0 == 0
        }
        _ => false,
    }
}

/// Where violations go: collected as text, or only counted (the quiet mode
/// `one_of` branches are tried in, which must not allocate).
trait Sink {
    fn report(&mut self, message: impl FnOnce() -> String);
}

impl Sink for Vec<String> {
    fn report(&mut self, message: impl FnOnce() -> String) {
        self.push(message());
    }
}

/// Counts violations without rendering them.
struct Count(usize);

impl Sink for Count {
    fn report(&mut self, _message: impl FnOnce() -> String) {
        self.0 += 1;
    }
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

/// The unnamed root a `one_of` branch is checked at to word its failure
/// relative to the value (`"path" is missing`).
const BRANCH_ROOT: PathNode<'static> = PathNode {
    seg: Seg::Key(""),
    parent: None,
};

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
        // Room for a path and what usually follows (` must be a boolean`).
        let mut out = String::with_capacity(48 + rest.len());
        out.push('"');
        self.render_into(&mut out);
        out.push('"');
        out.push_str(rest);
        out
    }
}

fn check_object<S: Sink, M: JsonMap>(
    spec: &SchemaSpec,
    map: &M,
    parent: Option<&PathNode<'_>>,
    out: &mut S,
) {
    // Properties found so far; the next one is looked for first at that
    // entry. Keys and property names are unique, so once every entry is
    // found the rest of the properties are absent without a look.
    let mut found_count = 0;
    for (name, prop) in spec {
        let node = PathNode {
            seg: Seg::Key(name),
            parent,
        };
        let found = if found_count == map.len() {
            None
        } else {
            map.get_near(found_count, name)
        };
        if found.is_some() {
            found_count += 1;
        }
        match found {
            None => {
                if prop.required {
                    out.report(|| {
                        let mut msg = String::from("missing required property \"");
                        node.render_into(&mut msg);
                        msg.push('"');
                        msg
                    });
                }
            }
            Some(v) => check_value(prop, v, &node, out),
        }
    }
}

/// `"<path>" <rest><value>` for a bound or const violation.
fn with_value(node: &PathNode<'_>, rest: &str, value: &dyn std::fmt::Display) -> String {
    let mut msg = node.quoted_then(rest);
    let _ = write!(msg, "{value}");
    msg
}

/// `1 character` / `2 characters`.
fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn check_value<S: Sink, V: JsonRead>(prop: &SchemaProp, v: &V, node: &PathNode<'_>, out: &mut S) {
    if !type_matches(prop.ty, v) {
        out.report(|| {
            let mut msg = node.quoted_then(" must be ");
            msg.push_str(prop.ty.article_noun());
            msg
        });
        return;
    }
    if let Some(c) = &prop.const_value {
        if !enum_eq(c, v) {
            out.report(|| with_value(node, " must be ", c));
            return;
        }
    }
    if let Some(members) = &prop.enum_values {
        if !members.iter().any(|m| enum_eq(m, v)) {
            out.report(|| {
                let mut msg = node.quoted_then(" must be one of [");
                for (i, m) in members.iter().enumerate() {
                    if i > 0 {
                        msg.push(',');
                    }
                    // A Value displays as compact JSON; writing to a String cannot fail.
                    let _ = write!(msg, "{m}");
                }
                msg.push(']');
                msg
            });
            return;
        }
    }
    match v.kind() {
        JsonKind::Number(n) => {
            if let Some(min) = &prop.minimum {
                if cmp_numbers(n, min) == Ordering::Less {
                    out.report(|| with_value(node, " must be at least ", min));
                    return;
                }
            }
            if let Some(max) = &prop.maximum {
                if cmp_numbers(n, max) == Ordering::Greater {
                    out.report(|| with_value(node, " must be at most ", max));
                    return;
                }
            }
            if let Some(min) = &prop.exclusive_minimum {
                if cmp_numbers(n, min) != Ordering::Greater {
                    out.report(|| with_value(node, " must be greater than ", min));
                    return;
                }
            }
            if let Some(max) = &prop.exclusive_maximum {
                if cmp_numbers(n, max) != Ordering::Less {
                    out.report(|| with_value(node, " must be less than ", max));
                    return;
                }
            }
        }
        JsonKind::String(s) if prop.min_length.is_some() || prop.max_length.is_some() => {
            if let Some(min) = prop.min_length.filter(|m| chars_below(s, *m)) {
                out.report(|| {
                    let n = plural(min, "character", "characters");
                    node.quoted_then(&format!(" must be at least {n} long"))
                });
                return;
            }
            if let Some(max) = prop.max_length.filter(|m| chars_above(s, *m)) {
                out.report(|| {
                    let n = plural(max, "character", "characters");
                    node.quoted_then(&format!(" must be at most {n} long"))
                });
                return;
            }
        }
        JsonKind::Array(items) => {
            let len = items.len() as u64;
            if let Some(min) = prop.min_items.filter(|m| len < *m) {
                out.report(|| {
                    let n = plural(min, "item", "items");
                    node.quoted_then(&format!(" must have at least {n}"))
                });
                return;
            }
            if let Some(max) = prop.max_items.filter(|m| len > *m) {
                out.report(|| {
                    let n = plural(max, "item", "items");
                    node.quoted_then(&format!(" must have at most {n}"))
                });
                return;
            }
        }
        _ => {}
    }
    match v.kind() {
        JsonKind::Object(map) => {
            if let Some(props) = &prop.properties {
                check_object(props, map, Some(node), out);
            }
            if prop.additional_properties == Some(false) {
                for (key, _) in map.entries() {
                    if !prop.properties.as_ref().is_some_and(|p| p.contains(key)) {
                        out.report(|| {
                            let child = PathNode {
                                seg: Seg::Key(key),
                                parent: Some(node),
                            };
                            child.quoted_then(" is not an allowed property")
                        });
                    }
                }
            }
        }
        JsonKind::Array(items) => {
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
    if let Some(branches) = &prop.one_of {
        check_one_of(branches, v, node, out);
    }
}

/// Whether `s` has fewer than `min` characters, counting no further than
/// needed (a character is 1 to 4 bytes).
fn chars_below(s: &str, min: u64) -> bool {
    let bytes = s.len() as u64;
    if bytes < min {
        return true;
    }
    if bytes >= min.saturating_mul(4) {
        return false;
    }
    (s.chars().take(min as usize).count() as u64) < min
}

/// Whether `s` has more than `max` characters, counting no further than
/// needed.
fn chars_above(s: &str, max: u64) -> bool {
    let bytes = s.len() as u64;
    if bytes <= max {
        return false;
    }
    if bytes > max.saturating_mul(4) {
        return true;
    }
    (s.chars().take((max as usize).saturating_add(1)).count() as u64) > max
}

/// Whether `v` satisfies `prop` on its own, as a property value or a
/// `one_of` branch is judged (`required` plays no part). Allocates nothing.
pub fn is_valid_prop<V: JsonRead>(prop: &SchemaProp, v: &V) -> bool {
    matches_branch(prop, v)
}

/// Whether `v` matches `branch` (quietly: nothing is allocated).
fn matches_branch<V: JsonRead>(branch: &SchemaProp, v: &V) -> bool {
    let mut count = Count(0);
    check_value(branch, v, &BRANCH_ROOT, &mut count);
    count.0 == 0
}

fn check_one_of<S: Sink, V: JsonRead>(
    branches: &[SchemaProp],
    v: &V,
    node: &PathNode<'_>,
    out: &mut S,
) {
    let mut first = None;
    let mut several = false;
    for (i, b) in branches.iter().enumerate() {
        if matches_branch(b, v) {
            if first.is_some() {
                several = true;
                break;
            }
            first = Some(i);
        }
    }
    match (first, several) {
        (Some(_), false) => {}
        (Some(_), true) => out.report(|| {
            let hits: Vec<String> = branches
                .iter()
                .enumerate()
                .filter(|(_, b)| matches_branch(b, v))
                .map(|(i, _)| (i + 1).to_string())
                .collect();
            node.quoted_then(&format!(
                " matches more than one alternative ({})",
                hits.join(", ")
            ))
        }),
        (None, _) => out.report(|| {
            let mut msg = node.quoted_then(" must match exactly one of: ");
            for (i, b) in branches.iter().enumerate() {
                if i > 0 {
                    msg.push_str("; ");
                }
                msg.push_str(&branch_brief(b));
                if let Some(reason) = branch_reason(b, v) {
                    let _ = write!(msg, " ({reason})");
                }
            }
            msg
        }),
    }
}

/// A few words naming a `one_of` branch: `a string`, `"auto"`,
/// `an object with "kind": "file"`, `one of ["a","b"]`.
fn branch_brief(b: &SchemaProp) -> String {
    if let Some(c) = &b.const_value {
        return c.to_string();
    }
    if let Some(members) = &b.enum_values {
        let list: Vec<String> = members.iter().map(Value::to_string).collect();
        return format!("one of [{}]", list.join(","));
    }
    if let Some(branches) = &b.one_of {
        return format!("one of {} alternatives", branches.len());
    }
    if b.ty == SchemaType::Object {
        let tag = b.properties.as_ref().and_then(|props| {
            props
                .iter()
                .find(|(_, p)| p.required && p.const_value.is_some())
        });
        if let Some((name, p)) = tag {
            if let Some(c) = &p.const_value {
                return format!("an object with \"{name}\": {c}");
            }
        }
    }
    b.ty.article_noun().to_string()
}

/// Why `v` failed branch `b`, relative to the value, when that is not
/// already plain from [`branch_brief`] (a wrong type or a wrong constant).
fn branch_reason<V: JsonRead>(b: &SchemaProp, v: &V) -> Option<String> {
    if !type_matches(b.ty, v) {
        return None;
    }
    if b.const_value.as_ref().is_some_and(|c| !enum_eq(c, v))
        || b.enum_values
            .as_ref()
            .is_some_and(|m| !m.iter().any(|x| enum_eq(x, v)))
    {
        return None;
    }
    let mut found = Vec::new();
    check_value(b, v, &BRANCH_ROOT, &mut found);
    let first = found.into_iter().next()?;
    Some(
        if let Some(rest) = first.strip_prefix("missing required property ") {
            format!("{rest} is missing")
        } else if let Some(rest) = first.strip_prefix("\"\" ") {
            rest.to_string()
        } else {
            first
        },
    )
}

/// Whether `v` has type `ty` (`integer`: a number with no fractional part).
pub(crate) fn type_matches<V: JsonRead>(ty: SchemaType, v: &V) -> bool {
    match (ty, v.kind()) {
        (SchemaType::String, JsonKind::String(_))
        | (SchemaType::Number, JsonKind::Number(_))
        | (SchemaType::Boolean, JsonKind::Bool(_))
        | (SchemaType::Object, JsonKind::Object(_))
        | (SchemaType::Array, JsonKind::Array(_))
        | (SchemaType::Null, JsonKind::Null)
        | (SchemaType::Json, _) => true,
        (SchemaType::Integer, JsonKind::Number(n)) => is_integral(n),
        _ => false,
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
fn enum_eq<V: JsonRead>(member: &Value, v: &V) -> bool {
    match (member, v.kind()) {
        (Value::Number(a), JsonKind::Number(b)) => a.as_f64() == b.as_f64(),
        _ => json_eq(member, v),
    }
}

/// Removes the top-level keys `spec` does not declare (validation ignores
/// them, and the model was told they were ignored): a typed tool's type then
/// never sees them, so one with `#[serde(deny_unknown_fields)]` reads the
/// same values validation accepted. Allocates nothing when every key is
/// declared.
pub fn drop_undeclared_keys(spec: &SchemaSpec, value: &mut Value) {
    if let Value::Object(map) = value {
        if map.keys().any(|k| !spec.contains(k)) {
            map.retain(|k, _| spec.contains(k));
        }
    }
}

/// Whether a value that passed [`validate_args`] reads into a typed tool's
/// type as it stands: [`drop_undeclared_keys`] and [`normalize_integers`]
/// would change nothing. Conservative: any integral float anywhere (`3.0`,
/// `1e3`, wherever it sits) or any top-level key the spec does not declare
/// answers `false`, and the caller takes the rewriting path. Allocates
/// nothing.
pub fn reads_as_is<V: JsonRead>(spec: &SchemaSpec, value: &V) -> bool {
    match value.kind() {
        JsonKind::Object(map) => {
            map.entries().all(|(k, _)| spec.contains(k)) && !has_integral_float(value)
        }
        _ => false,
    }
}

/// Whether `v` holds a float with no fractional part (what
/// [`normalize_integers`] may rewrite).
fn has_integral_float<V: JsonRead>(v: &V) -> bool {
    match v.kind() {
        JsonKind::Number(n) => !n.is_i64() && !n.is_u64() && is_integral(n),
        JsonKind::Array(items) => items.iter().any(has_integral_float),
        JsonKind::Object(map) => map.entries().any(|(_, x)| has_integral_float(x)),
        _ => false,
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
    if let Some(branch) = prop
        .one_of
        .as_ref()
        .and_then(|bs| bs.iter().find(|b| matches_branch(b, v)))
    {
        normalize_value(branch, v);
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
pub fn near_miss_notes<V: JsonRead>(spec: &SchemaSpec, value: &V, tool: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let JsonKind::Object(map) = value.kind() {
        notes_object(spec, map, None, tool, &mut out);
    }
    out
}

fn notes_object<M: JsonMap>(
    spec: &SchemaSpec,
    map: &M,
    parent: Option<&PathNode<'_>>,
    tool: &str,
    out: &mut Vec<String>,
) {
    for (key, _) in map.entries() {
        if spec.contains(key) {
            continue;
        }
        let candidates = spec.names().filter(|n| !map.contains_key(n));
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

fn notes_value<V: JsonRead>(
    prop: &SchemaProp,
    v: &V,
    node: &PathNode<'_>,
    tool: &str,
    out: &mut Vec<String>,
) {
    match v.kind() {
        JsonKind::Object(map) => {
            if let Some(props) = &prop.properties {
                notes_object(props, map, Some(node), tool, out);
            }
        }
        JsonKind::Array(items) => {
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
    fn character_bounds_count_characters_not_bytes() {
        for s in [
            "",
            "a",
            "ab",
            "é",
            "éé",
            "文件",
            "a文",
            "🦀🦀🦀",
            "abcd",
            "文件文件文件x",
        ] {
            let n = s.chars().count() as u64;
            for bound in 0..16u64 {
                assert_eq!(chars_below(s, bound), n < bound, "{s:?} below {bound}");
                assert_eq!(chars_above(s, bound), n > bound, "{s:?} above {bound}");
            }
        }
        assert!(!chars_above("x", u64::MAX));
        assert!(chars_below("x", u64::MAX));
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
