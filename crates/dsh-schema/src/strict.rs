//! DeepSeek's strict function-calling dialect: [`to_strict_schema`]
//! compiles a spec to the schema strict mode accepts, and
//! [`strip_introduced_nulls`] undoes what the compilation added before a
//! call is validated.
//!
//! Strict mode (beta endpoint only) makes the model's arguments match the
//! schema exactly, but it accepts a narrow dialect: every object lists all
//! of its properties in `required` and says `additionalProperties: false`;
//! the types are `string`, `number`, `integer`, `boolean`, `object`,
//! `array`, `null`, with `enum` and `anyOf`. So the compiler:
//!
//! - makes each optional key required-but-nullable (`"type": ["string",
//!   "null"]`, or `anyOf` with `{"type": "null"}` for objects, arrays and
//!   alternatives); [`strip_introduced_nulls`] turns such a `null` back into
//!   an absent key;
//! - writes `const` as a one-member `enum` and `oneOf` as `anyOf` (exactly-one
//!   is still enforced by dsh);
//! - removes what strict does not support (`minimum`, `maximum`, the
//!   exclusive bounds, `minLength`, `maxLength`, `minItems`, `maxItems`,
//!   `default`); dsh still enforces all of them after the call.
//!
//! A spec the dialect cannot express without loss is refused with the
//! reason: a `json` value, an object without declared properties or with
//! `additionalProperties: true` (a map), an array without `items`, or an
//! optional key whose own type accepts `null` (absence and `null` could not
//! be told apart).

use serde_json::{Map, Value};

use crate::spec::{SchemaProp, SchemaSpec, SchemaType};
use crate::validate::is_valid_prop;

/// Why a spec cannot be compiled to the strict dialect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inexpressible {
    /// The property path (`a.b`, `a[]` for items; empty for the root).
    pub path: String,
    /// What strict mode cannot say.
    pub reason: String,
}

impl std::fmt::Display for Inexpressible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "\"{}\" {}", self.path, self.reason)
        }
    }
}

impl std::error::Error for Inexpressible {}

/// The strict-dialect schema of `spec` (see the module docs).
///
/// # Errors
/// [`Inexpressible`] naming the first property strict mode cannot express.
pub fn to_strict_schema(spec: &SchemaSpec) -> Result<Value, Inexpressible> {
    object_schema(spec, "")
}

fn object_schema(spec: &SchemaSpec, path: &str) -> Result<Value, Inexpressible> {
    let mut props = Map::new();
    let mut required = Vec::with_capacity(spec.len());
    for (name, prop) in spec {
        let sub = crate::load::join_path(path, name);
        let mut schema = prop_schema(prop, &sub)?;
        if !prop.required {
            if accepts_null(prop) {
                return Err(Inexpressible {
                    path: sub,
                    reason: "is optional and accepts null: strict mode would make absence and null the same".into(),
                });
            }
            schema = nullable(schema);
        }
        props.insert(name.to_string(), schema);
        required.push(Value::String(name.to_string()));
    }
    let mut out = Map::new();
    out.insert("type".into(), "object".into());
    out.insert("properties".into(), Value::Object(props));
    out.insert("required".into(), Value::Array(required));
    out.insert("additionalProperties".into(), Value::Bool(false));
    Ok(Value::Object(out))
}

fn prop_schema(prop: &SchemaProp, path: &str) -> Result<Value, Inexpressible> {
    let fail = |reason: &str| {
        Err(Inexpressible {
            path: path.to_string(),
            reason: reason.to_string(),
        })
    };
    let mut out = match prop.ty {
        SchemaType::Json if prop.one_of.is_none() => return fail("accepts any JSON value"),
        SchemaType::Json => {
            let branches = prop.one_of.as_deref().unwrap_or_default();
            let mut list = Vec::with_capacity(branches.len());
            for (i, b) in branches.iter().enumerate() {
                list.push(prop_schema(b, &format!("{path}.oneOf[{i}]"))?);
            }
            let mut m = Map::new();
            m.insert("anyOf".into(), Value::Array(list));
            m
        }
        SchemaType::Object => match (&prop.properties, prop.additional_properties) {
            (_, Some(true)) => return fail("is an object that allows any other key"),
            (None, _) => return fail("is an object with no declared properties (a map)"),
            (Some(props), _) => match object_schema(props, path)? {
                Value::Object(m) => m,
                _ => Map::new(),
            },
        },
        SchemaType::Array => {
            let Some(items) = &prop.items else {
                return fail("is an array of any values");
            };
            let mut m = Map::new();
            m.insert("type".into(), "array".into());
            m.insert("items".into(), prop_schema(items, &format!("{path}[]"))?);
            m
        }
        scalar => {
            let mut m = Map::new();
            m.insert("type".into(), scalar.as_str().into());
            if let Some(c) = &prop.const_value {
                m.insert("enum".into(), Value::Array(vec![c.clone()]));
            }
            if let Some(e) = &prop.enum_values {
                m.insert("enum".into(), Value::Array(e.clone()));
            }
            m
        }
    };
    if let Some(d) = prop.description.as_ref().filter(|d| !d.is_empty()) {
        out.insert("description".into(), Value::String(d.clone()));
    }
    Ok(Value::Object(out))
}

/// Whether the property's own schema accepts `null`.
fn accepts_null(prop: &SchemaProp) -> bool {
    is_valid_prop(prop, &Value::Null)
}

/// `schema` or `null`: a type list for a plain scalar (with `null` added to
/// its enum), `anyOf` otherwise.
fn nullable(schema: Value) -> Value {
    let Value::Object(mut m) = schema else {
        return schema;
    };
    let scalar = matches!(
        m.get("type").and_then(Value::as_str),
        Some("string" | "number" | "integer" | "boolean")
    );
    if scalar {
        // Rebuilt so that `type` stays the first key.
        let mut out = Map::new();
        for (k, v) in m {
            match (k.as_str(), v) {
                ("type", t) => {
                    out.insert(k, Value::Array(vec![t, "null".into()]));
                }
                ("enum", Value::Array(mut members)) => {
                    members.push(Value::Null);
                    out.insert(k, Value::Array(members));
                }
                (_, v) => {
                    out.insert(k, v);
                }
            }
        }
        return Value::Object(out);
    }
    let description = m.remove("description");
    let mut out = Map::new();
    out.insert(
        "anyOf".into(),
        Value::Array(vec![Value::Object(m), serde_json::json!({"type": "null"})]),
    );
    if let Some(d) = description {
        out.insert("description".into(), d);
    }
    Value::Object(out)
}

/// Removes the `null`s strict compilation introduced: an optional key whose
/// value is `null` (strict mode sends every key) becomes absent, at every
/// level (objects, array items, and the `one_of` branch the value is of).
/// Call it on a strict tool's arguments before validation. Allocates
/// nothing when there is nothing to remove.
pub fn strip_introduced_nulls(spec: &SchemaSpec, value: &mut Value) {
    if let Value::Object(map) = value {
        strip_object(spec, map);
    }
}

fn strip_object(spec: &SchemaSpec, map: &mut Map<String, Value>) {
    if spec
        .iter()
        .any(|(n, p)| !p.required && map.get(n).is_some_and(Value::is_null))
    {
        map.retain(|k, v| !(v.is_null() && spec.get(k).is_some_and(|p| !p.required)));
    }
    for (name, prop) in spec {
        if let Some(v) = map.get_mut(name) {
            strip_value(prop, v);
        }
    }
}

fn strip_value(prop: &SchemaProp, v: &mut Value) {
    if let Some(branches) = &prop.one_of {
        for b in branches {
            let mut candidate = v.clone();
            strip_value(b, &mut candidate);
            if is_valid_prop(b, &candidate) {
                *v = candidate;
                return;
            }
        }
        return;
    }
    match v {
        Value::Object(map) => {
            if let Some(props) = &prop.properties {
                strip_object(props, map);
            }
        }
        Value::Array(items) => {
            if let Some(item) = &prop.items {
                for x in items {
                    strip_value(item, x);
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
    fn optional_keys_become_nullable_and_everything_is_closed() {
        let spec = SchemaSpec::new()
            .with(
                "command",
                SchemaProp::string()
                    .required(true)
                    .with_length(Some(1), None),
            )
            .with("timeoutMs", SchemaProp::number().above(0.0))
            .with("mode", SchemaProp::string_enum(["a", "b"]))
            .with(
                "opts",
                SchemaProp::object_with(SchemaSpec::new().with("x", SchemaProp::boolean())),
            )
            .with("kind", SchemaProp::string_const("file").required(true));
        assert_eq!(
            to_strict_schema(&spec).unwrap(),
            json!({"type": "object", "properties": {
                "command": {"type": "string"},
                "timeoutMs": {"type": ["number", "null"]},
                "mode": {"type": ["string", "null"], "enum": ["a", "b", null]},
                "opts": {"anyOf": [{"type": "object",
                                    "properties": {"x": {"type": ["boolean", "null"]}},
                                    "required": ["x"], "additionalProperties": false},
                                   {"type": "null"}]},
                "kind": {"type": "string", "enum": ["file"]}
            }, "required": ["command", "timeoutMs", "mode", "opts", "kind"],
               "additionalProperties": false})
        );
    }

    #[test]
    fn lossy_specs_are_refused_with_the_place() {
        let cases = [
            (
                SchemaSpec::new().with("v", SchemaProp::json()),
                "\"v\" accepts any JSON value",
            ),
            (
                SchemaSpec::new().with("m", SchemaProp::object()),
                "\"m\" is an object with no declared properties (a map)",
            ),
            (
                SchemaSpec::new().with("a", SchemaProp::array()),
                "\"a\" is an array of any values",
            ),
            (
                SchemaSpec::new().with("n", SchemaProp::null()),
                "\"n\" is optional and accepts null",
            ),
        ];
        for (spec, want) in cases {
            let err = to_strict_schema(&spec).unwrap_err().to_string();
            assert!(err.starts_with(want), "{err}");
        }
    }

    #[test]
    fn introduced_nulls_are_removed_and_real_values_kept() {
        let inner = SchemaSpec::new()
            .with("x", SchemaProp::boolean())
            .with("y", SchemaProp::string().required(true));
        let spec = SchemaSpec::new()
            .with("a", SchemaProp::string())
            .with("b", SchemaProp::string().required(true))
            .with("o", SchemaProp::object_with(inner.clone()))
            .with("list", SchemaProp::array_of(SchemaProp::object_with(inner)));
        let mut v = json!({"a": null, "b": "keep", "o": {"x": null, "y": "y"},
                           "list": [{"x": null, "y": "1"}, {"x": true, "y": "2"}]});
        strip_introduced_nulls(&spec, &mut v);
        assert_eq!(
            v,
            json!({"b": "keep", "o": {"y": "y"}, "list": [{"y": "1"}, {"x": true, "y": "2"}]})
        );
        // A null at a required key is the model's mistake: it stays (and
        // fails validation).
        let mut bad = json!({"b": null});
        strip_introduced_nulls(&spec, &mut bad);
        assert_eq!(bad, json!({"b": null}));
    }
}
