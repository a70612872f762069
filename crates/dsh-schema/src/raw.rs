//! Raw JSON Schemas (an MCP tool's `inputSchema`, a tool declared in
//! config): [`classify_json_schema`] checks one against the subset dsh can
//! enforce exactly and, when it fits, gives the [`SchemaSpec`] that
//! validates the same values with the usual wording.
//!
//! The subset is the DSL's own keywords (`type` — one name, or a name plus
//! `"null"` — `properties`, `required`, `additionalProperties` as a boolean,
//! `items` as one schema, `enum`, `const`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength`,
//! `minItems`, `maxItems`, `oneOf`), `anyOf` where its branches are disjoint
//! by type (it then means the same as `oneOf`), `$ref` to a local
//! definition (`#/$defs/N` or `#/definitions/N`, not recursive), and the
//! annotations `title`, `description`, `default`, `examples`, `$schema`,
//! `$id`, `$comment`, `format`, `deprecated`, `readOnly`, `writeOnly`
//! (shown, never enforced). Anything else is reported as "unsupported
//! keyword K at path P", so a schema is never half-validated.

use serde_json::{Map, Value};

use crate::spec::{SchemaProp, SchemaSpec, SchemaType};
use crate::validate::type_matches;

/// Why a raw schema is outside the enforced subset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// The keyword (or construct) that is not supported.
    pub keyword: String,
    /// Where, as a JSON pointer into the schema (`""` for the root).
    pub path: String,
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.path.is_empty() {
            "the root"
        } else {
            &self.path
        };
        write!(f, "unsupported keyword {} at {at}", self.keyword)
    }
}

impl std::error::Error for Unsupported {}

/// The keywords that only annotate.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$schema",
    "$id",
    "$comment",
    "format",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// A raw schema inside the enforced subset: the spec, and whether its root
/// refuses undeclared keys (`additionalProperties: false`, common in
/// generated MCP schemas), which the spec's open top level cannot say.
#[derive(Debug, Clone, PartialEq)]
pub struct RawSchema {
    /// The equivalent spec.
    pub spec: SchemaSpec,
    /// The root's `additionalProperties: false`.
    pub closed: bool,
}

impl RawSchema {
    /// The violations of `value`: [`validate_args`](crate::validate_args)
    /// against the spec, then, for a closed root, each undeclared top-level
    /// key (`"x" is not an allowed property`) in the value's order.
    pub fn validate(&self, value: &Value) -> Vec<String> {
        let mut out = crate::validate_args(&self.spec, value);
        if let (true, Value::Object(map)) = (self.closed, value) {
            for key in map.keys().filter(|k| !self.spec.contains(k)) {
                out.push(format!("\"{key}\" is not an allowed property"));
            }
        }
        out
    }
}

/// Deepest `$ref` chain followed (a deeper one is treated as recursive).
const MAX_REF_DEPTH: usize = 16;

/// Classifies a raw tool-input schema: `Ok` with the equivalent spec when
/// every keyword is in the enforced subset (see the module docs), else the
/// first unsupported keyword in document order. The root must be an object
/// schema (`"type": "object"`, or no type); its `additionalProperties:
/// false` is kept as [`RawSchema::closed`].
///
/// # Errors
/// [`Unsupported`] naming the keyword and where it is.
pub fn classify_json_schema(schema: &Value) -> Result<RawSchema, Unsupported> {
    let cx = Context { root: schema };
    let Value::Object(map) = schema else {
        return Err(unsupported("a non-object schema", ""));
    };
    match map.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(unsupported(
                format!("type {other} (the root must be an object)"),
                "",
            ))
        }
    }
    for key in map.keys() {
        match key.as_str() {
            "type"
            | "properties"
            | "required"
            | "additionalProperties"
            | "dependentRequired"
            | "$defs"
            | "definitions" => {}
            k if ANNOTATIONS.contains(&k) => {}
            other => return Err(unsupported(other, "")),
        }
    }
    let groups = match map.get("dependentRequired") {
        None => Vec::new(),
        Some(d) => together_groups(d)?,
    };
    let closed = match map.get("additionalProperties") {
        None | Some(Value::Bool(true)) => false,
        Some(Value::Bool(false)) => true,
        Some(_) => return Err(unsupported("additionalProperties with a schema", "")),
    };
    let mut spec = cx.object_properties(map, "", 0)?;
    for group in &groups {
        let names: Vec<&str> = group.iter().map(String::as_str).collect();
        spec.require_together(&names);
    }
    Ok(RawSchema { spec, closed })
}

/// The groups of a root `dependentRequired` in which every member requires
/// all the others (what [`SchemaSpec::require_together`] says), in order of
/// first appearance.
fn together_groups(value: &Value) -> Result<Vec<Vec<String>>, Unsupported> {
    let not_mutual = || unsupported("dependentRequired that is not mutual", "");
    let Value::Object(map) = value else {
        return Err(unsupported("dependentRequired that is not an object", ""));
    };
    let mut deps: Vec<(String, Vec<String>)> = Vec::new();
    for (name, list) in map {
        let Value::Array(list) = list else {
            return Err(unsupported("dependentRequired with a non-list entry", ""));
        };
        let mut names = Vec::new();
        for v in list {
            let Value::String(n) = v else {
                return Err(unsupported("dependentRequired with a non-string entry", ""));
            };
            names.push(n.clone());
        }
        deps.push((name.clone(), names));
    }
    let group_of = |name: &str| -> Option<Vec<String>> {
        let (_, others) = deps.iter().find(|(n, _)| n == name)?;
        let mut g = vec![name.to_string()];
        g.extend(others.iter().filter(|o| *o != name).cloned());
        Some(g)
    };
    let same = |a: &[String], b: &[String]| a.len() == b.len() && a.iter().all(|x| b.contains(x));
    let mut groups: Vec<Vec<String>> = Vec::new();
    for (name, _) in &deps {
        let group = group_of(name).ok_or_else(not_mutual)?;
        if group.len() < 2 {
            continue;
        }
        for member in &group {
            let theirs = group_of(member).ok_or_else(not_mutual)?;
            if !same(&group, &theirs) {
                return Err(not_mutual());
            }
        }
        if !groups.iter().any(|g| same(g, &group)) {
            groups.push(group);
        }
    }
    Ok(groups)
}

struct Context<'a> {
    root: &'a Value,
}

fn unsupported(keyword: impl Into<String>, path: &str) -> Unsupported {
    Unsupported {
        keyword: keyword.into(),
        path: path.to_string(),
    }
}

impl<'a> Context<'a> {
    /// The spec of an object schema's `properties` + `required`.
    fn object_properties(
        &self,
        map: &'a Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Result<SchemaSpec, Unsupported> {
        let mut spec = SchemaSpec::new();
        if let Some(props) = map.get("properties") {
            let Value::Object(props) = props else {
                return Err(unsupported("properties that is not an object", path));
            };
            for (name, sub) in props {
                let sub_path = format!("{path}/properties/{}", escape(name));
                spec.insert(name.clone(), self.prop(sub, &sub_path, depth)?);
            }
        }
        if let Some(required) = map.get("required") {
            let Value::Array(names) = required else {
                return Err(unsupported("required that is not a list", path));
            };
            for name in names {
                let Value::String(name) = name else {
                    return Err(unsupported("required with a non-string entry", path));
                };
                match spec.get_mut(name) {
                    Some(p) => p.required = true,
                    // Required but undescribed: any value, present.
                    None => spec.insert(name.clone(), SchemaProp::json().required(true)),
                }
            }
        }
        Ok(spec)
    }

    /// Follows `$ref` to a local definition.
    fn resolve(
        &self,
        reference: &Value,
        path: &str,
        depth: usize,
    ) -> Result<&'a Value, Unsupported> {
        if depth >= MAX_REF_DEPTH {
            return Err(unsupported("a recursive $ref", path));
        }
        let Value::String(r) = reference else {
            return Err(unsupported("$ref that is not a string", path));
        };
        let name = r
            .strip_prefix("#/$defs/")
            .map(|n| ("$defs", n))
            .or_else(|| r.strip_prefix("#/definitions/").map(|n| ("definitions", n)));
        let Some((table, name)) = name else {
            return Err(unsupported(
                format!("$ref {r:?} (only #/$defs/… is supported)"),
                path,
            ));
        };
        let name = name.replace("~1", "/").replace("~0", "~");
        self.root
            .get(table)
            .and_then(|t| t.get(&name))
            .ok_or_else(|| unsupported(format!("$ref {r:?} to a missing definition"), path))
    }

    /// One property schema.
    fn prop(&self, schema: &'a Value, path: &str, depth: usize) -> Result<SchemaProp, Unsupported> {
        let Value::Object(map) = schema else {
            return match schema {
                // `true` accepts anything.
                Value::Bool(true) => Ok(SchemaProp::json()),
                _ => Err(unsupported(format!("schema {schema}"), path)),
            };
        };
        if let Some(reference) = map.get("$ref") {
            if map
                .keys()
                .any(|k| k != "$ref" && !ANNOTATIONS.contains(&k.as_str()))
            {
                return Err(unsupported("$ref beside other keywords", path));
            }
            let target = self.resolve(reference, path, depth)?;
            let mut prop = self.prop(target, path, depth + 1)?;
            if let Some(Value::String(d)) = map.get("description") {
                prop.description = Some(d.clone());
            }
            return Ok(prop);
        }
        for key in map.keys() {
            let known = matches!(
                key.as_str(),
                "type"
                    | "properties"
                    | "required"
                    | "additionalProperties"
                    | "items"
                    | "enum"
                    | "const"
                    | "minimum"
                    | "maximum"
                    | "exclusiveMinimum"
                    | "exclusiveMaximum"
                    | "minLength"
                    | "maxLength"
                    | "minItems"
                    | "maxItems"
                    | "oneOf"
                    | "anyOf"
            ) || ANNOTATIONS.contains(&key.as_str());
            if !known {
                return Err(unsupported(key.as_str(), path));
            }
        }
        if let Some(branches) = map.get("oneOf").or_else(|| map.get("anyOf")) {
            let keyword = if map.contains_key("oneOf") {
                "oneOf"
            } else {
                "anyOf"
            };
            if map.contains_key("oneOf") && map.contains_key("anyOf") {
                return Err(unsupported("oneOf together with anyOf", path));
            }
            if map
                .keys()
                .any(|k| k != keyword && !ANNOTATIONS.contains(&k.as_str()))
            {
                return Err(unsupported(
                    format!("{keyword} beside other keywords"),
                    path,
                ));
            }
            let Value::Array(list) = branches else {
                return Err(unsupported(format!("{keyword} that is not a list"), path));
            };
            if list.is_empty() {
                return Err(unsupported(format!("an empty {keyword}"), path));
            }
            let mut parsed = Vec::with_capacity(list.len());
            for (i, b) in list.iter().enumerate() {
                parsed.push(self.prop(b, &format!("{path}/{keyword}/{i}"), depth)?);
            }
            if keyword == "anyOf" && !disjoint_by_type(&parsed) {
                return Err(unsupported(
                    "anyOf whose branches are not disjoint by type",
                    path,
                ));
            }
            let mut prop = SchemaProp::one_of(parsed);
            prop.description = description(map);
            return Ok(prop);
        }
        let (ty, nullable) = self.type_of(map, path)?;
        let mut prop = SchemaProp::new(ty);
        prop.description = description(map);
        if let Some(d) = map.get("default") {
            // Shown to the model only when it fits the type (a wrong default
            // would teach a failing call).
            if type_matches(ty, d) {
                prop.default = Some(d.clone());
            }
        }
        if let Some(c) = map.get("const") {
            if c.is_array() || c.is_object() {
                return Err(unsupported("const with an array or object value", path));
            }
            prop.const_value = Some(c.clone());
        }
        if let Some(e) = map.get("enum") {
            let Value::Array(values) = e else {
                return Err(unsupported("enum that is not a list", path));
            };
            if values.is_empty() || values.iter().any(|v| v.is_array() || v.is_object()) {
                return Err(unsupported(
                    "enum with no values or non-scalar values",
                    path,
                ));
            }
            prop.enum_values = Some(values.clone());
        }
        for (key, slot) in [
            ("minimum", &mut prop.minimum),
            ("maximum", &mut prop.maximum),
            ("exclusiveMinimum", &mut prop.exclusive_minimum),
            ("exclusiveMaximum", &mut prop.exclusive_maximum),
        ] {
            if let Some(v) = map.get(key) {
                let Value::Number(n) = v else {
                    return Err(unsupported(format!("{key} that is not a number"), path));
                };
                *slot = Some(n.clone());
            }
        }
        for (key, slot) in [
            ("minLength", &mut prop.min_length),
            ("maxLength", &mut prop.max_length),
            ("minItems", &mut prop.min_items),
            ("maxItems", &mut prop.max_items),
        ] {
            if let Some(v) = map.get(key) {
                *slot = Some(
                    v.as_u64()
                        .ok_or_else(|| unsupported(format!("{key} that is not a count"), path))?,
                );
            }
        }
        if ty == SchemaType::Object {
            if map.contains_key("properties") || map.contains_key("required") {
                prop.properties = Some(self.object_properties(map, path, depth)?);
            }
            match map.get("additionalProperties") {
                None | Some(Value::Bool(true)) => {}
                Some(Value::Bool(false)) => prop.additional_properties = Some(false),
                Some(_) => return Err(unsupported("additionalProperties with a schema", path)),
            }
        }
        if let Some(items) = map.get("items") {
            if ty != SchemaType::Array {
                return Err(unsupported("items on a non-array", path));
            }
            if items.is_array() {
                return Err(unsupported("items as a list (tuple validation)", path));
            }
            prop.items = Some(Box::new(self.prop(
                items,
                &format!("{path}/items"),
                depth,
            )?));
        }
        // The DSL's structural rules (bounds on the right types, enum
        // members of the type, …) must hold too, or validation would differ.
        if let Err(e) = prop.check(path) {
            return Err(unsupported(e.to_string(), path));
        }
        Ok(if nullable {
            SchemaProp::one_of([prop, SchemaProp::null()])
        } else {
            prop
        })
    }

    /// The type of a schema: its `type` (one name, or `[name, "null"]`), or
    /// the type of its `const`/`enum` values, or `json` when unconstrained.
    fn type_of(
        &self,
        map: &Map<String, Value>,
        path: &str,
    ) -> Result<(SchemaType, bool), Unsupported> {
        match map.get("type") {
            Some(Value::String(name)) => SchemaType::from_name(name)
                .filter(|t| *t != SchemaType::Json)
                .map(|t| (t, false))
                .ok_or_else(|| unsupported(format!("type {name:?}"), path)),
            Some(Value::Array(names)) => {
                let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
                match names.as_slice() {
                    [one] => self.type_of_name(one, path).map(|t| (t, false)),
                    [a, "null"] | ["null", a] if *a != "null" => {
                        self.type_of_name(a, path).map(|t| (t, true))
                    }
                    _ => Err(unsupported("type with several names", path)),
                }
            }
            Some(other) => Err(unsupported(format!("type {other}"), path)),
            None => {
                let sample = map
                    .get("const")
                    .or_else(|| map.get("enum").and_then(|e| e.get(0)));
                Ok((
                    match sample {
                        Some(Value::String(_)) => SchemaType::String,
                        Some(Value::Number(_)) => SchemaType::Number,
                        Some(Value::Bool(_)) => SchemaType::Boolean,
                        Some(Value::Null) => SchemaType::Null,
                        _ if map.contains_key("properties") => SchemaType::Object,
                        _ if map.contains_key("items") => SchemaType::Array,
                        _ => SchemaType::Json,
                    },
                    false,
                ))
            }
        }
    }

    fn type_of_name(&self, name: &str, path: &str) -> Result<SchemaType, Unsupported> {
        SchemaType::from_name(name)
            .filter(|t| *t != SchemaType::Json)
            .ok_or_else(|| unsupported(format!("type {name:?}"), path))
    }
}

fn description(map: &Map<String, Value>) -> Option<String> {
    map.get("description")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Whether no value can have the types of two branches (`integer` and
/// `number` overlap; `json` overlaps everything).
fn disjoint_by_type(branches: &[SchemaProp]) -> bool {
    let mut seen: Vec<SchemaType> = Vec::new();
    for b in branches {
        if b.one_of.is_some() || b.ty == SchemaType::Json {
            return false;
        }
        let overlaps = seen.iter().any(|t| {
            *t == b.ty
                || matches!(
                    (t, b.ty),
                    (SchemaType::Integer, SchemaType::Number)
                        | (SchemaType::Number, SchemaType::Integer)
                )
        });
        if overlaps {
            return false;
        }
        seen.push(b.ty);
    }
    true
}

/// A JSON-pointer segment.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate_args;
    use serde_json::json;

    #[test]
    fn a_typical_mcp_schema_is_supported_and_validates_with_the_usual_wording() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File", "minLength": 1},
                "mode": {"enum": ["r", "w"]},
                "limit": {"type": ["integer", "null"], "minimum": 0},
                "target": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/Range"}]}
            },
            "required": ["path"],
            "$defs": {"Range": {"type": "object", "properties": {"start": {"type": "integer"}},
                                "required": ["start"], "additionalProperties": false}}
        });
        let raw = classify_json_schema(&schema).unwrap();
        let spec = raw.spec.clone();
        assert!(!raw.closed);
        assert!(validate_args(
            &spec,
            &json!({"path": "a", "limit": null, "target": {"start": 1}})
        )
        .is_empty());
        assert_eq!(
            validate_args(
                &spec,
                &json!({"path": "", "mode": "x", "limit": -1, "target": {"end": 2}})
            ),
            [
                r#""path" must be at least 1 character long"#,
                r#""mode" must be one of ["r","w"]"#,
                r#""limit" must match exactly one of: an integer (must be at least 0); null"#,
                r#""target" must match exactly one of: a string; an object ("start" is missing)"#,
            ]
        );
    }

    #[test]
    fn anything_else_is_named_with_its_place() {
        let cases = [
            (
                json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "^a"}}}),
                "unsupported keyword pattern at /properties/p",
            ),
            (
                json!({"type": "object", "patternProperties": {}}),
                "unsupported keyword patternProperties at the root",
            ),
            (
                json!({"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "number"}]}}}),
                "anyOf whose branches are not disjoint by type at /properties/n",
            ),
            (
                json!({"type": "object", "properties": {"x": {"$ref": "https://example.com/s"}}}),
                "only #/$defs/",
            ),
            (
                json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/A"}}}),
                "a recursive $ref",
            ),
            (json!({"type": "array"}), "the root must be an object"),
            (
                json!({"type": "object", "properties": {"a": {"type": "object", "additionalProperties": {"type": "string"}}}}),
                "additionalProperties with a schema at /properties/a",
            ),
            (
                json!({"type": "object", "properties": {"a/b": {"allOf": []}}}),
                "allOf at /properties/a~1b",
            ),
            (
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
                "additionalProperties with a schema at the root",
            ),
        ];
        for (schema, want) in cases {
            let err = classify_json_schema(&schema).unwrap_err().to_string();
            assert!(err.contains(want), "{schema}: {err}");
        }
    }

    #[test]
    fn a_closed_root_names_each_undeclared_key() {
        let raw = classify_json_schema(
            &json!({"type": "object", "properties": {"a": {"type": "string"}},
                                               "additionalProperties": false}),
        )
        .unwrap();
        assert!(raw.closed);
        assert_eq!(
            raw.validate(&json!({"a": 1, "b": 2})),
            [
                r#""a" must be a string"#,
                r#""b" is not an allowed property"#
            ]
        );
    }

    #[test]
    fn an_empty_or_open_schema_is_supported() {
        assert!(classify_json_schema(&json!({"type": "object"}))
            .unwrap()
            .spec
            .is_empty());
        assert!(classify_json_schema(&json!({})).unwrap().spec.is_empty());
        let spec = classify_json_schema(
            &json!({"properties": {"any": true}, "required": ["any", "other"]}),
        )
        .unwrap()
        .spec;
        assert_eq!(
            validate_args(&spec, &json!({})),
            [
                r#"missing required property "any""#,
                r#"missing required property "other""#
            ]
        );
    }
}
