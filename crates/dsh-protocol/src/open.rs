//! Support for open sets: tagged JSON records whose unknown kinds round-trip.
//!
//! A known kind deserializes into its typed variant; an unknown kind is kept
//! as the whole JSON object, so data a plugin logged is never dropped. Other
//! crates with open sets of their own (session event kinds, turn-end
//! reasons) use the same two functions.

use serde::de::{DeserializeOwned, Error as _};
use serde_json::{Map, Value};

/// A tagged object split into its known typed form or `(kind, object)`.
pub type Split<T> = Result<T, (String, Map<String, Value>)>;

/// Splits a tagged JSON object into "known kind" or "other".
///
/// Returns `Ok(Ok(known))` when `tag`'s value is in `known`, `Ok(Err((kind,
/// object)))` for any other kind, and an error when the value is not an
/// object, has no string tag, or a known kind has malformed fields.
pub fn split_tagged<T, E>(value: Value, tag: &str, known: &[&str]) -> Result<Split<T>, E>
where
    T: DeserializeOwned,
    E: serde::de::Error,
{
    let Value::Object(map) = value else {
        return Err(E::custom(format!(
            "expected an object with a \"{tag}\" field"
        )));
    };
    let kind = match map.get(tag) {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(E::custom(format!("\"{tag}\" must be a string"))),
        None => return Err(E::custom(format!("missing field \"{tag}\""))),
    };
    if known.contains(&kind.as_str()) {
        serde_json::from_value::<T>(Value::Object(map))
            .map(Ok)
            .map_err(|e| E::custom(format!("{tag} \"{kind}\": {e}")))
    } else {
        Ok(Err((kind, map)))
    }
}

/// Serializes an "other" record: its stored object, with the tag forced to `kind`.
pub fn other_to_value(tag: &str, kind: &str, data: &Map<String, Value>) -> Value {
    let mut map = data.clone();
    map.insert(tag.to_string(), Value::String(kind.to_string()));
    Value::Object(map)
}

/// Deserializes a `Value` from any deserializer, mapping the error type.
pub fn value_from<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    <Value as serde::Deserialize>::deserialize(d).map_err(D::Error::custom)
}
