//! Loading specs from their JSON form, and the structural rules a spec must
//! keep. Every error names the property path (`a.b`, `a[]` for items).

use std::cmp::Ordering;

use serde_json::Value;

use crate::error::SpecError;
use crate::number::cmp_numbers;
use crate::spec::{SchemaProp, SchemaSpec, SchemaType, TOGETHER_KEY};

impl SchemaProp {
    /// Checks the rules a loaded spec must keep (see [`SchemaSpec::check`]),
    /// recursively; `path` names this property in the error.
    pub(crate) fn check(&self, path: &str) -> Result<(), SpecError> {
        self.check_shallow(path)?;
        if let Some(props) = &self.properties {
            props.check_at(path)?;
        }
        if let Some(items) = &self.items {
            items.check(&format!("{path}[]"))?;
        }
        for (i, branch) in self.one_of.iter().flatten().enumerate() {
            branch.check(&branch_path(path, i))?;
        }
        Ok(())
    }

    /// The rules of this level only.
    fn check_shallow(&self, path: &str) -> Result<(), SpecError> {
        if let Some(default) = &self.default {
            // A default is documentation for the model; one of the wrong type
            // would teach it a call that fails validation.
            if !crate::validate::type_matches(self.ty, default) {
                return Err(SpecError::new(
                    path,
                    format!("\"default\" {default} is not {}", self.ty.article_noun()),
                ));
            }
        }
        if let Some(values) = &self.enum_values {
            if !self.ty.is_scalar() {
                return Err(SpecError::new(
                    path,
                    format!("\"enum\" is not allowed on an {} property", self.ty),
                ));
            }
            if values.is_empty() {
                return Err(SpecError::new(
                    path,
                    "\"enum\" must list at least one value",
                ));
            }
            for v in values {
                if !crate::validate::type_matches(self.ty, v) {
                    return Err(SpecError::new(
                        path,
                        format!(
                            "\"enum\" value {v} is not {}, so it could never be accepted",
                            self.ty.article_noun()
                        ),
                    ));
                }
            }
        }
        if let Some(c) = &self.const_value {
            if !self.ty.is_scalar() || c.is_array() || c.is_object() {
                return Err(SpecError::new(
                    path,
                    format!(
                        "\"const\" must be a scalar or null on a scalar property, got {} on {}",
                        json_kind(c),
                        self.ty
                    ),
                ));
            }
            if !crate::validate::type_matches(self.ty, c) {
                return Err(SpecError::new(
                    path,
                    format!(
                        "\"const\" {c} is not {}, so it could never be accepted",
                        self.ty.article_noun()
                    ),
                ));
            }
            if self.enum_values.is_some() {
                return Err(SpecError::new(
                    path,
                    "use either \"const\" or \"enum\", not both",
                ));
            }
        }
        let count_bounds = [
            (
                "minLength",
                self.min_length,
                self.max_length,
                SchemaType::String,
            ),
            (
                "minItems",
                self.min_items,
                self.max_items,
                SchemaType::Array,
            ),
        ];
        for (name, min, max, ty) in count_bounds {
            let max_name = if ty == SchemaType::String {
                "maxLength"
            } else {
                "maxItems"
            };
            if (min.is_some() || max.is_some()) && self.ty != ty {
                return Err(SpecError::new(
                    path,
                    format!("\"{name}\"/\"{max_name}\" are only allowed on {ty} properties"),
                ));
            }
            if let (Some(min), Some(max)) = (min, max) {
                if min > max {
                    return Err(SpecError::new(
                        path,
                        format!("\"{name}\" {min} is greater than \"{max_name}\" {max}"),
                    ));
                }
            }
        }
        if self.additional_properties.is_some() && self.ty != SchemaType::Object {
            return Err(SpecError::new(
                path,
                format!(
                    "\"additionalProperties\" is only allowed on object properties, not on {}",
                    self.ty
                ),
            ));
        }
        if let Some(branches) = &self.one_of {
            if self.ty != SchemaType::Json {
                return Err(SpecError::new(
                    path,
                    format!(
                        "\"oneOf\" sets the type itself; leave \"type\" out (got {})",
                        self.ty
                    ),
                ));
            }
            if branches.is_empty() {
                return Err(SpecError::new(
                    path,
                    "\"oneOf\" must list at least one alternative",
                ));
            }
        }
        for (name, bound) in [
            ("minimum", &self.minimum),
            ("maximum", &self.maximum),
            ("exclusiveMinimum", &self.exclusive_minimum),
            ("exclusiveMaximum", &self.exclusive_maximum),
        ] {
            if bound.is_some() && !matches!(self.ty, SchemaType::Number | SchemaType::Integer) {
                return Err(SpecError::new(
                    path,
                    format!("\"{name}\" is only allowed on number and integer properties"),
                ));
            }
        }
        if let (Some(min), Some(max)) = (&self.minimum, &self.maximum) {
            if cmp_numbers(min, max) == Ordering::Greater {
                return Err(SpecError::new(
                    path,
                    format!("\"minimum\" {min} is greater than \"maximum\" {max}"),
                ));
            }
        }
        if self.properties.is_some() && self.ty != SchemaType::Object {
            return Err(SpecError::new(
                path,
                format!(
                    "\"properties\" is only allowed on object properties, not on {}",
                    self.ty
                ),
            ));
        }
        if self.items.is_some() && self.ty != SchemaType::Array {
            return Err(SpecError::new(
                path,
                format!(
                    "\"items\" is only allowed on array properties, not on {}",
                    self.ty
                ),
            ));
        }
        Ok(())
    }

    /// Parses one property from its JSON form; `path` names it in errors.
    pub(crate) fn from_value_at(value: &Value, path: &str) -> Result<SchemaProp, SpecError> {
        let Value::Object(map) = value else {
            return Err(wrong_kind(
                path,
                "a property must be an object like {\"type\": \"string\"}",
                value,
            ));
        };
        let one_of = map.get("oneOf").or_else(|| map.get("one_of"));
        let ty = match map.get("type") {
            None if one_of.is_some() => SchemaType::Json,
            None => {
                return Err(SpecError::new(
                    path,
                    "missing \"type\" (one of string, number, integer, boolean, object, array, null, json)",
                ))
            }
            Some(Value::String(name)) => SchemaType::from_name(name).ok_or_else(|| {
                SpecError::new(
                    path,
                    format!(
                        "unknown type \"{name}\" (expected one of string, number, integer, boolean, object, array, null, json)"
                    ),
                )
            })?,
            Some(other) => {
                return Err(wrong_kind(path, "\"type\" must be a string", other))
            }
        };
        let mut prop = SchemaProp::new(ty);
        for (key, v) in map {
            match key.as_str() {
                "type" => {}
                "required" => {
                    prop.required = v.as_bool().ok_or_else(|| {
                        wrong_kind(path, "\"required\" must be true or false", v)
                    })?;
                }
                "description" => {
                    let Value::String(s) = v else {
                        return Err(wrong_kind(path, "\"description\" must be a string", v));
                    };
                    prop.description = Some(s.clone());
                }
                "enum" => {
                    let Value::Array(values) = v else {
                        return Err(wrong_kind(path, "\"enum\" must be a list of values", v));
                    };
                    if let Some(bad) = values
                        .iter()
                        .find(|x| !matches!(x, Value::String(_) | Value::Number(_) | Value::Bool(_)))
                    {
                        return Err(wrong_kind(
                            path,
                            "\"enum\" values must be strings, numbers or booleans",
                            bad,
                        ));
                    }
                    prop.enum_values = Some(values.clone());
                }
                "default" => prop.default = Some(v.clone()),
                "const" => prop.const_value = Some(v.clone()),
                "minLength" | "min_length" => prop.min_length = Some(count(v, path, key)?),
                "maxLength" | "max_length" => prop.max_length = Some(count(v, path, key)?),
                "minItems" | "min_items" => prop.min_items = Some(count(v, path, key)?),
                "maxItems" | "max_items" => prop.max_items = Some(count(v, path, key)?),
                "additionalProperties" | "additional_properties" => {
                    prop.additional_properties = Some(v.as_bool().ok_or_else(|| {
                        wrong_kind(path, format!("\"{key}\" must be true or false"), v)
                    })?);
                }
                "oneOf" | "one_of" => {
                    let Value::Array(branches) = v else {
                        return Err(wrong_kind(
                            path,
                            format!("\"{key}\" must be a list of alternatives"),
                            v,
                        ));
                    };
                    let mut parsed = Vec::with_capacity(branches.len());
                    for (i, b) in branches.iter().enumerate() {
                        parsed.push(SchemaProp::from_value_at(b, &branch_path(path, i))?);
                    }
                    prop.one_of = Some(parsed);
                }
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusive_minimum"
                | "exclusiveMaximum" | "exclusive_maximum" => {
                    let Value::Number(n) = v else {
                        return Err(wrong_kind(path, format!("\"{key}\" must be a number"), v));
                    };
                    let slot = match key.as_str() {
                        "minimum" => &mut prop.minimum,
                        "maximum" => &mut prop.maximum,
                        "exclusiveMinimum" | "exclusive_minimum" => &mut prop.exclusive_minimum,
                        _ => &mut prop.exclusive_maximum,
                    };
                    *slot = Some(n.clone());
                }
                "properties" => {
                    prop.properties = Some(SchemaSpec::from_value_at(v, path)?);
                }
                "items" => {
                    prop.items = Some(Box::new(SchemaProp::from_value_at(
                        v,
                        &format!("{path}[]"),
                    )?));
                }
                other => {
                    return Err(SpecError::new(
                        path,
                        format!(
                            "unknown key \"{other}\" (allowed: type, required, description, const, enum, default, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems, maxItems, properties, additionalProperties, items, oneOf)"
                        ),
                    ))
                }
            }
        }
        // Nested levels were checked as they were parsed.
        prop.check_shallow(path)?;
        Ok(prop)
    }
}

impl SchemaSpec {
    pub(crate) fn check_at(&self, prefix: &str) -> Result<(), SpecError> {
        for (name, prop) in self {
            if name == TOGETHER_KEY {
                return Err(SpecError::new(
                    prefix,
                    format!("\"{TOGETHER_KEY}\" is the key of the groups of properties given together, not a property name"),
                ));
            }
            prop.check(&join_path(prefix, name))?;
        }
        self.check_groups(prefix)
    }

    /// The groups of [`SchemaSpec::require_together`]: only at the top
    /// level, each of two or more distinct declared properties.
    fn check_groups(&self, prefix: &str) -> Result<(), SpecError> {
        let path = join_path(prefix, TOGETHER_KEY);
        if !prefix.is_empty() && !self.together().is_empty() {
            return Err(SpecError::new(
                path,
                "groups of properties given together belong to the top level of a spec only (they are shown as the tool's dependentRequired)",
            ));
        }
        for (i, group) in self.together().iter().enumerate() {
            let at = format!("{path}[{i}]");
            if group.len() < 2 {
                return Err(SpecError::new(
                    at,
                    "a group needs at least two property names",
                ));
            }
            for (j, name) in group.iter().enumerate() {
                if group[..j].contains(name) {
                    return Err(SpecError::new(at, format!("names \"{name}\" twice")));
                }
                if !self.contains(name) {
                    let declared: Vec<&str> = self.names().collect();
                    return Err(SpecError::new(
                        at,
                        format!(
                            "names \"{name}\", which is not a property of the spec (properties: {})",
                            declared.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    pub(crate) fn from_value_at(value: &Value, prefix: &str) -> Result<SchemaSpec, SpecError> {
        let Value::Object(map) = value else {
            let what = if prefix.is_empty() {
                "a spec"
            } else {
                "\"properties\""
            };
            return Err(wrong_kind(
                prefix,
                format!("{what} must be an object mapping property names to properties"),
                value,
            ));
        };
        let mut spec = SchemaSpec::new();
        let mut groups = None;
        for (name, v) in map {
            if name == TOGETHER_KEY {
                groups = Some(v);
                continue;
            }
            let path = join_path(prefix, name);
            spec.insert(name.clone(), SchemaProp::from_value_at(v, &path)?);
        }
        if let Some(groups) = groups {
            for group in together_groups(groups, &join_path(prefix, TOGETHER_KEY))? {
                let names: Vec<&str> = group.iter().map(String::as_str).collect();
                spec.together_unchecked(&names);
            }
            spec.check_groups(prefix)?;
        }
        Ok(spec)
    }
}

/// The value of [`TOGETHER_KEY`]: a list of lists of property names.
fn together_groups(value: &Value, path: &str) -> Result<Vec<Vec<String>>, SpecError> {
    let shape = |got: &Value| {
        wrong_kind(
            path,
            format!(
                "\"{TOGETHER_KEY}\" must be a list of groups of property names, like [[\"a\", \"b\"]]"
            ),
            got,
        )
    };
    let Value::Array(groups) = value else {
        return Err(shape(value));
    };
    let mut out = Vec::with_capacity(groups.len());
    for (i, group) in groups.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let Value::Array(names) = group else {
            return Err(wrong_kind(
                at,
                "a group must be a list of property names",
                group,
            ));
        };
        let mut parsed = Vec::with_capacity(names.len());
        for name in names {
            let Value::String(name) = name else {
                return Err(wrong_kind(at, "a property name must be a string", name));
            };
            parsed.push(name.clone());
        }
        out.push(parsed);
    }
    Ok(out)
}

/// The error for a value of the wrong kind at `path`: `expected`, then
/// `, got <the kind of got>` (`"type" must be a string, got a number`).
fn wrong_kind(path: impl Into<String>, expected: impl std::fmt::Display, got: &Value) -> SpecError {
    SpecError::new(path, format!("{expected}, got {}", json_kind(got)))
}

/// The path of branch `i` of a `oneOf` at `path` in spec errors.
fn branch_path(path: &str, i: usize) -> String {
    format!("{path}.oneOf[{i}]")
}

/// A non-negative integer count (`minLength`, …).
fn count(v: &Value, path: &str, key: &str) -> Result<u64, SpecError> {
    v.as_u64().ok_or_else(|| {
        SpecError::new(
            path,
            format!(
                "\"{key}\" must be a non-negative integer, got {}",
                match v {
                    Value::Number(n) => n.to_string(),
                    other => json_kind(other).to_string(),
                }
            ),
        )
    })
}

/// `prefix.name`, or `name` at the top.
pub(crate) fn join_path(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// `a string`, `an array`, … for error messages about a JSON value.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
