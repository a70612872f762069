//! `to_json_schema`: the spec as the JSON Schema the model is shown.

use serde_json::{Map, Value};

use crate::spec::{SchemaProp, SchemaSpec, SchemaType};

/// Converts a spec to the JSON Schema the model is shown:
/// `{"type":"object","properties":{…},"required":[…]}`.
///
/// Total. Property order is kept; `required` lists the `required: true` keys
/// at every level and is omitted when empty; `description` is copied when
/// non-empty (an empty one is omitted, at every level); `const`, `enum`,
/// `default`, `minimum`, `maximum`, `minLength`, `maxLength`, `minItems`,
/// `maxItems` are copied when present; `properties` only for objects that
/// have them (`{}` at the top level), `items` only for arrays that have them;
/// `additionalProperties` only where a nested object sets it (the top level
/// is open); a `json` property has no `type` (any value) and a `one_of`
/// property is `{"oneOf": [...]}`; groups of
/// [`SchemaSpec::require_together`] are the top level's
/// `dependentRequired` (each member requires the others).
pub fn to_json_schema(spec: &SchemaSpec) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), Value::String("object".into()));
    let (props, required) = object_parts(spec);
    out.insert("properties".into(), props);
    if let Some(required) = required {
        out.insert("required".into(), required);
    }
    if let Some(dependent) = dependent_required(spec) {
        out.insert("dependentRequired".into(), dependent);
    }
    Value::Object(out)
}

/// `{"a": ["b"], "b": ["a"]}` for the group `[a, b]` of
/// [`SchemaSpec::require_together`]; `None` without groups.
pub(crate) fn dependent_required(spec: &SchemaSpec) -> Option<Value> {
    if spec.together().is_empty() {
        return None;
    }
    let mut out = Map::new();
    for group in spec.together() {
        for name in group {
            let entry = out
                .entry(name.clone())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = entry {
                for other in group.iter().filter(|o| *o != name) {
                    if !list.iter().any(|v| v.as_str() == Some(other)) {
                        list.push(Value::String(other.clone()));
                    }
                }
            }
        }
    }
    Some(Value::Object(out))
}

fn object_parts(spec: &SchemaSpec) -> (Value, Option<Value>) {
    let mut props = Map::new();
    let mut required = Vec::new();
    for (name, prop) in spec {
        props.insert(name.to_string(), prop_schema(prop));
        if prop.required {
            required.push(Value::String(name.to_string()));
        }
    }
    let required = (!required.is_empty()).then_some(Value::Array(required));
    (Value::Object(props), required)
}

fn prop_schema(prop: &SchemaProp) -> Value {
    let mut out = Map::new();
    if prop.ty != SchemaType::Json {
        out.insert("type".into(), Value::String(prop.ty.as_str().into()));
    }
    // An empty description tells the model nothing: leave the key out.
    if let Some(d) = prop.description.as_ref().filter(|d| !d.is_empty()) {
        out.insert("description".into(), Value::String(d.clone()));
    }
    if let Some(c) = &prop.const_value {
        out.insert("const".into(), c.clone());
    }
    if let Some(e) = &prop.enum_values {
        out.insert("enum".into(), Value::Array(e.clone()));
    }
    if let Some(d) = &prop.default {
        out.insert("default".into(), d.clone());
    }
    if let Some(m) = &prop.minimum {
        out.insert("minimum".into(), Value::Number(m.clone()));
    }
    if let Some(m) = &prop.maximum {
        out.insert("maximum".into(), Value::Number(m.clone()));
    }
    if let Some(m) = &prop.exclusive_minimum {
        out.insert("exclusiveMinimum".into(), Value::Number(m.clone()));
    }
    if let Some(m) = &prop.exclusive_maximum {
        out.insert("exclusiveMaximum".into(), Value::Number(m.clone()));
    }
    for (key, n) in [
        ("minLength", prop.min_length),
        ("maxLength", prop.max_length),
        ("minItems", prop.min_items),
        ("maxItems", prop.max_items),
    ] {
        if let Some(n) = n {
            out.insert(key.into(), Value::from(n));
        }
    }
    if let Some(spec) = &prop.properties {
        let (props, required) = object_parts(spec);
        out.insert("properties".into(), props);
        if let Some(required) = required {
            out.insert("required".into(), required);
        }
    }
    if let Some(allowed) = prop.additional_properties {
        out.insert("additionalProperties".into(), Value::Bool(allowed));
    }
    if let Some(items) = &prop.items {
        out.insert("items".into(), prop_schema(items));
    }
    if let Some(branches) = &prop.one_of {
        out.insert(
            "oneOf".into(),
            Value::Array(branches.iter().map(prop_schema).collect()),
        );
    }
    Value::Object(out)
}
