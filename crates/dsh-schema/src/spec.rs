//! The schema DSL: [`SchemaSpec`], [`SchemaProp`], [`SchemaType`] and their
//! builders and serde forms (loading rules live in `load`, the conversion in
//! `convert`).

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Number, Value};

use crate::error::SpecError;

/// The type of a property. Closed set; serialized lowercase (`"integer"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchemaType {
    /// A JSON string.
    String,
    /// Any JSON number.
    Number,
    /// A JSON number with no fractional part (`1` and `1.0` both count).
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A JSON object (never an array, never `null`).
    Object,
    /// A JSON array.
    Array,
    /// JSON `null` only.
    Null,
    /// Any JSON value, unchecked (also the type of a `one_of` property,
    /// whose branches decide).
    Json,
}

impl SchemaType {
    /// Every type, in the order error messages list them.
    pub const ALL: [SchemaType; 8] = [
        SchemaType::String,
        SchemaType::Number,
        SchemaType::Integer,
        SchemaType::Boolean,
        SchemaType::Object,
        SchemaType::Array,
        SchemaType::Null,
        SchemaType::Json,
    ];

    /// The JSON Schema name (`"string"`, `"integer"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaType::String => "string",
            SchemaType::Number => "number",
            SchemaType::Integer => "integer",
            SchemaType::Boolean => "boolean",
            SchemaType::Object => "object",
            SchemaType::Array => "array",
            SchemaType::Null => "null",
            SchemaType::Json => "json",
        }
    }

    /// The type named `name`, if it is one of [`SchemaType::ALL`].
    pub fn from_name(name: &str) -> Option<SchemaType> {
        SchemaType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The noun phrase of violation texts: `a string`, `an integer`, …
    pub(crate) fn article_noun(self) -> &'static str {
        match self {
            SchemaType::String => "a string",
            SchemaType::Number => "a number",
            SchemaType::Integer => "an integer",
            SchemaType::Boolean => "a boolean",
            SchemaType::Object => "an object",
            SchemaType::Array => "an array",
            SchemaType::Null => "null",
            SchemaType::Json => "any JSON value",
        }
    }

    /// Whether `enum` and `const` make sense on this type.
    pub(crate) fn is_scalar(self) -> bool {
        !matches!(self, SchemaType::Object | SchemaType::Array)
    }
}

impl fmt::Display for SchemaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One property of a [`SchemaSpec`].
///
/// Plain data: build it with [`SchemaProp::new`] and the `with_*` helpers, or
/// load it as part of a spec. `required` only has meaning for a property of a
/// spec (an `items` or `one_of` prop ignores it). `minimum`/`maximum` are
/// inclusive bounds for `number`/`integer` properties (the derive sets them
/// for bounded integer types such as `u8`); `min_length`/`max_length` bound
/// a string's length in characters, `min_items`/`max_items` an array's.
/// A `one_of` property has type [`SchemaType::Json`]: a value must match
/// exactly one branch. The serialized (JSON) names are camelCase
/// (`oneOf`, `additionalProperties`, `minLength`, …); loading accepts the
/// snake_case spellings too.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchemaProp {
    /// The property's type.
    #[serde(rename = "type")]
    pub ty: SchemaType,
    /// Whether the key must be present in its object.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// Shown to the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The one allowed value (a JSON scalar or `null`), compared like an
    /// enum member; checked after the type.
    #[serde(rename = "const", skip_serializing_if = "Option::is_none")]
    pub const_value: Option<Value>,
    /// The allowed values (JSON scalars); membership is checked after the type.
    #[serde(rename = "enum", skip_serializing_if = "Option::is_none")]
    pub enum_values: Option<Vec<Value>>,
    /// Documentation only: shown to the model, never applied by validation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Inclusive lower bound (`number`/`integer` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum: Option<Number>,
    /// Inclusive upper bound (`number`/`integer` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum: Option<Number>,
    /// Exclusive lower bound (`number`/`integer` only): the value must be
    /// greater.
    #[serde(rename = "exclusiveMinimum", skip_serializing_if = "Option::is_none")]
    pub exclusive_minimum: Option<Number>,
    /// Exclusive upper bound (`number`/`integer` only): the value must be
    /// less.
    #[serde(rename = "exclusiveMaximum", skip_serializing_if = "Option::is_none")]
    pub exclusive_maximum: Option<Number>,
    /// Fewest characters (Unicode scalar values) of a `string`.
    #[serde(rename = "minLength", skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Most characters of a `string`.
    #[serde(rename = "maxLength", skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// Fewest elements of an `array`.
    #[serde(rename = "minItems", skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most elements of an `array`.
    #[serde(rename = "maxItems", skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The properties of an `object` (absent: any object).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<SchemaSpec>,
    /// The element schema of an `array` (absent: any array).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Box<SchemaProp>>,
    /// Whether an `object` with `properties` accepts keys it does not list
    /// (`None`: open, as `Some(true)`). `false` makes each unknown key a
    /// violation. The spec's top level is always open.
    #[serde(
        rename = "additionalProperties",
        skip_serializing_if = "Option::is_none"
    )]
    pub additional_properties: Option<bool>,
    /// The branches of a `one_of` property (type [`SchemaType::Json`]).
    #[serde(rename = "oneOf", skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<SchemaProp>>,
}

impl SchemaProp {
    /// An optional property of type `ty` with nothing else set.
    pub fn new(ty: SchemaType) -> Self {
        SchemaProp {
            ty,
            required: false,
            description: None,
            const_value: None,
            enum_values: None,
            default: None,
            minimum: None,
            maximum: None,
            exclusive_minimum: None,
            exclusive_maximum: None,
            min_length: None,
            max_length: None,
            min_items: None,
            max_items: None,
            properties: None,
            items: None,
            additional_properties: None,
            one_of: None,
        }
    }

    /// `null`.
    pub fn null() -> Self {
        Self::new(SchemaType::Null)
    }

    /// `json`: any JSON value.
    pub fn json() -> Self {
        Self::new(SchemaType::Json)
    }

    /// A value that must match exactly one of `branches`.
    pub fn one_of(branches: impl IntoIterator<Item = SchemaProp>) -> Self {
        let mut prop = Self::new(SchemaType::Json);
        prop.one_of = Some(branches.into_iter().collect());
        prop
    }

    /// A string that only accepts `value` (a tag).
    pub fn string_const(value: impl Into<String>) -> Self {
        Self::string().with_const(Value::String(value.into()))
    }

    /// A property of type `ty` that only accepts `value`.
    pub fn constant(ty: SchemaType, value: Value) -> Self {
        Self::new(ty).with_const(value)
    }

    /// `string`.
    pub fn string() -> Self {
        Self::new(SchemaType::String)
    }

    /// `number`.
    pub fn number() -> Self {
        Self::new(SchemaType::Number)
    }

    /// `integer`.
    pub fn integer() -> Self {
        Self::new(SchemaType::Integer)
    }

    /// `boolean`.
    pub fn boolean() -> Self {
        Self::new(SchemaType::Boolean)
    }

    /// `object` without `properties` (any object).
    pub fn object() -> Self {
        Self::new(SchemaType::Object)
    }

    /// `object` with the given properties. Groups of
    /// [`SchemaSpec::require_together`] in `properties` are dropped: they
    /// are shown and checked for a tool's top-level arguments only, so a
    /// nested object never carries them (a struct with
    /// `#[tool(together(…))]` nested as a property loses its groups there).
    pub fn object_with(properties: SchemaSpec) -> Self {
        Self::object().with_properties(properties)
    }

    /// `array` without `items` (any array).
    pub fn array() -> Self {
        Self::new(SchemaType::Array)
    }

    /// `array` whose elements match `items`.
    pub fn array_of(items: SchemaProp) -> Self {
        Self::array().with_items(items)
    }

    /// A string restricted to `values`.
    pub fn string_enum<I, S>(values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::string().with_enum(values.into_iter().map(|s| Value::String(s.into())))
    }

    /// Sets `required`.
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the enum list.
    pub fn with_enum(mut self, values: impl IntoIterator<Item = Value>) -> Self {
        self.enum_values = Some(values.into_iter().collect());
        self
    }

    /// Sets `const`.
    pub fn with_const(mut self, value: Value) -> Self {
        self.const_value = Some(value);
        self
    }

    /// Sets the inclusive lower bound from an `f64` (integral values become
    /// integers); a non-finite value clears it.
    pub fn at_least(mut self, minimum: f64) -> Self {
        self.minimum = bound_number(minimum);
        self
    }

    /// Sets the inclusive upper bound from an `f64`, as [`SchemaProp::at_least`].
    pub fn at_most(mut self, maximum: f64) -> Self {
        self.maximum = bound_number(maximum);
        self
    }

    /// Sets the exclusive lower bound from an `f64` (the value must be
    /// greater), as [`SchemaProp::at_least`].
    pub fn above(mut self, bound: f64) -> Self {
        self.exclusive_minimum = bound_number(bound);
        self
    }

    /// Sets the exclusive upper bound from an `f64` (the value must be less).
    pub fn below(mut self, bound: f64) -> Self {
        self.exclusive_maximum = bound_number(bound);
        self
    }

    /// Sets the string length bounds (characters).
    pub fn with_length(mut self, min: Option<u64>, max: Option<u64>) -> Self {
        self.min_length = min;
        self.max_length = max;
        self
    }

    /// Sets the array length bounds.
    pub fn with_item_count(mut self, min: Option<u64>, max: Option<u64>) -> Self {
        self.min_items = min;
        self.max_items = max;
        self
    }

    /// Sets `additionalProperties`.
    pub fn with_additional_properties(mut self, allowed: bool) -> Self {
        self.additional_properties = Some(allowed);
        self
    }

    /// Sets the (documentation-only) default.
    pub fn with_default(mut self, default: Value) -> Self {
        self.default = Some(default);
        self
    }

    /// Sets the inclusive bounds.
    pub fn with_range(mut self, minimum: Option<Number>, maximum: Option<Number>) -> Self {
        self.minimum = minimum;
        self.maximum = maximum;
        self
    }

    /// Sets `properties`, dropping its groups of
    /// [`SchemaSpec::require_together`] as [`SchemaProp::object_with`] does.
    pub fn with_properties(mut self, mut properties: SchemaSpec) -> Self {
        properties.together.clear();
        self.properties = Some(properties);
        self
    }

    /// Sets `items`.
    pub fn with_items(mut self, items: SchemaProp) -> Self {
        self.items = Some(Box::new(items));
        self
    }
}

/// `x` as a spec number: an integer when integral and within i64, else a
/// float; `None` for NaN and infinities.
fn bound_number(x: f64) -> Option<Number> {
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        // Integral and below 2^53: exact as an i64.
        Some(Number::from(x as i64))
    } else {
        Number::from_f64(x)
    }
}

/// The reserved top-level key of a spec's JSON and TOML form that lists its
/// groups of properties given together or not at all
/// ([`SchemaSpec::require_together`]): `"$together": [["a", "b"], …]`. The
/// `$` keeps it apart from property names (JSON Schema spells its own
/// keywords the same way); no property may be named so.
pub const TOGETHER_KEY: &str = "$together";

/// An ordered map from property name to [`SchemaProp`]: the arguments of a
/// tool, or the properties of a nested object.
///
/// Order is kept everywhere (conversion, validation, serialization). Inserting
/// an existing name replaces its property in place. Deserializes from the
/// reference's JSON form (`{"path": {"type": "string", "required": true}}`)
/// and from TOML through any serde format; a malformed spec is an error that
/// names the property path.
///
/// A spec may also name groups of top-level properties that must be given
/// together or not at all ([`SchemaSpec::require_together`]), shown to the
/// model as `dependentRequired`. Its JSON form holds them under the
/// reserved key [`TOGETHER_KEY`] next to the properties
/// (`{"a": {…}, "b": {…}, "$together": [["a", "b"]]}`), so serializing a
/// spec and loading it back gives the same spec. Groups belong to the top
/// level only: a nested spec ([`SchemaProp::properties`]) has none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaSpec {
    props: Vec<(String, SchemaProp)>,
    together: Vec<Vec<String>>,
}

impl SchemaSpec {
    /// An empty spec (a tool without arguments).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces `name` (replacing keeps the original position).
    pub fn insert(&mut self, name: impl Into<String>, prop: SchemaProp) {
        let name = name.into();
        if let Some(slot) = self.props.iter_mut().find(|(n, _)| *n == name) {
            slot.1 = prop;
        } else {
            self.props.push((name, prop));
        }
    }

    /// Requires the top-level properties `names` (two or more) to be given
    /// together or not at all: a value with some of them present and others
    /// absent is invalid. Groups are kept in the order added; a group of
    /// fewer than two names is ignored.
    pub fn require_together(&mut self, names: &[&str]) {
        if names.len() >= 2 {
            self.together
                .push(names.iter().map(|n| (*n).to_string()).collect());
        }
    }

    /// Adds the group as loaded, short ones included, so that the load
    /// checks can refuse it with its place.
    pub(crate) fn together_unchecked(&mut self, names: &[&str]) {
        self.together
            .push(names.iter().map(|n| (*n).to_string()).collect());
    }

    /// Builder form of [`SchemaSpec::require_together`].
    pub fn with_together(mut self, names: &[&str]) -> Self {
        self.require_together(names);
        self
    }

    /// The groups of [`SchemaSpec::require_together`], in order.
    pub fn together(&self) -> &[Vec<String>] {
        &self.together
    }

    /// Builder form of [`SchemaSpec::insert`].
    pub fn with(mut self, name: impl Into<String>, prop: SchemaProp) -> Self {
        self.insert(name, prop);
        self
    }

    /// Appends every property of `other` (used for `#[serde(flatten)]`).
    pub fn extend(&mut self, other: SchemaSpec) {
        for (name, prop) in other.props {
            self.insert(name, prop);
        }
        self.together.extend(other.together);
    }

    /// The property `name`.
    pub fn get(&self, name: &str) -> Option<&SchemaProp> {
        self.props.iter().find(|(n, _)| n == name).map(|(_, p)| p)
    }

    /// Mutable access to the property `name`.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut SchemaProp> {
        self.props
            .iter_mut()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p)
    }

    /// Removes and returns `name`, keeping the order of the rest.
    pub fn remove(&mut self, name: &str) -> Option<SchemaProp> {
        let i = self.props.iter().position(|(n, _)| n == name)?;
        Some(self.props.remove(i).1)
    }

    /// Whether `name` is a property.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The properties in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &SchemaProp)> + '_ {
        self.props.iter().map(|(n, p)| (n.as_str(), p))
    }

    /// The property names in order.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.props.iter().map(|(n, _)| n.as_str())
    }

    /// Number of properties.
    pub fn len(&self) -> usize {
        self.props.len()
    }

    /// Whether there are no properties.
    pub fn is_empty(&self) -> bool {
        self.props.is_empty()
    }

    /// Loads a spec from its JSON form (a [`Value`]): properties by name,
    /// plus the groups of [`SchemaSpec::require_together`] under
    /// [`TOGETHER_KEY`] at the top level.
    ///
    /// # Errors
    /// [`SpecError`] naming the property path when the value is not an object
    /// of properties, a property has an unknown or missing `type`, a
    /// non-boolean `required`, an `enum` that is not a non-empty list of
    /// scalars of the property's type or sits on an object/array, `properties`
    /// or `items` on the wrong type, an unknown key, or bounds that are not
    /// numbers; or (path `$together[i]`) a group that is not a list of two
    /// or more distinct names of declared properties, or groups inside a
    /// nested `properties`.
    pub fn from_value(value: &Value) -> Result<SchemaSpec, SpecError> {
        Self::from_value_at(value, "")
    }

    /// Loads a spec from JSON text. Errors as [`SchemaSpec::from_value`], plus
    /// unparsable text (path empty).
    pub fn from_json_str(text: &str) -> Result<SchemaSpec, SpecError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| SpecError::new("", format!("the spec is not valid JSON: {e}")))?;
        Self::from_value(&value)
    }

    /// Checks the structural rules of [`SchemaSpec::from_value`] on a spec
    /// built in code (builders do not check), groups included, and that no
    /// property is named [`TOGETHER_KEY`]. Loaded specs already pass.
    ///
    /// # Errors
    /// The first rule broken, naming the property path.
    pub fn check(&self) -> Result<(), SpecError> {
        self.check_at("")
    }
}

impl<'a> IntoIterator for &'a SchemaSpec {
    type Item = (&'a str, &'a SchemaProp);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, SchemaProp)>,
        fn(&'a (String, SchemaProp)) -> (&'a str, &'a SchemaProp),
    >;

    fn into_iter(self) -> Self::IntoIter {
        fn split(entry: &(String, SchemaProp)) -> (&str, &SchemaProp) {
            (entry.0.as_str(), &entry.1)
        }
        self.props.iter().map(split)
    }
}

impl FromIterator<(String, SchemaProp)> for SchemaSpec {
    fn from_iter<I: IntoIterator<Item = (String, SchemaProp)>>(iter: I) -> Self {
        let mut spec = SchemaSpec::new();
        for (n, p) in iter {
            spec.insert(n, p);
        }
        spec
    }
}

impl Serialize for SchemaSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let groups = usize::from(!self.together.is_empty());
        let mut map = s.serialize_map(Some(self.props.len() + groups))?;
        for (name, prop) in &self.props {
            map.serialize_entry(name, prop)?;
        }
        if !self.together.is_empty() {
            map.serialize_entry(TOGETHER_KEY, &self.together)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for SchemaSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        SchemaSpec::from_value(&value).map_err(D::Error::custom)
    }
}

impl<'de> Deserialize<'de> for SchemaProp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        SchemaProp::from_value_at(&value, "").map_err(D::Error::custom)
    }
}
