//! Typed arguments: [`ToolArgs`] (a struct's spec) and [`ToolArgsField`]
//! (the schema of one field type), implemented by `#[derive(ToolArgs)]`
//! (the derive lives in dsh-tools: `dsh_tools::ToolArgs`).

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::hash::Hash;
use std::path::PathBuf;

use serde::de::{Deserialize, Deserializer, IgnoredAny};
use serde_json::{Map, Number, Value};

use crate::spec::{SchemaProp, SchemaSpec};

/// A type whose values are a tool's arguments: a JSON object described by
/// [`ToolArgs::schema_spec`].
///
/// Implement it with `#[derive(dsh_tools::ToolArgs)]` next to
/// `#[derive(Deserialize)]`;
/// the derive reads the same serde attributes, so that every value that
/// passes [`validate_args`](crate::validate_args) against the spec
/// deserializes into the type (the drift guard's property tests check this).
pub trait ToolArgs {
    /// The spec the model is shown and the arguments are validated against.
    fn schema_spec() -> SchemaSpec;
}

/// The schema of a field type of a [`ToolArgs`] struct (`required` and
/// `description` are set by the derive from the field).
///
/// Implemented for `String`, `PathBuf`, `bool`, every integer type (with
/// `minimum`/`maximum` so that out-of-range numbers fail validation instead
/// of deserialization), `f32`/`f64`, `Vec<T>`, `VecDeque<T>`, `BTreeSet<T>`,
/// `HashSet<T>`, `Box<T>`, `serde_json::Map<String, Value>` (any object),
/// `serde_json::Value` (`json`, any value), `()` (`null`),
/// and for types deriving `ToolArgs` (structs: objects with properties;
/// unit-only enums: string enums). `Option<T>` is handled by the derive at the
/// field level (an optional key), and is deliberately not a `ToolArgsField`:
/// JSON `null` is never valid, so `Vec<Option<T>>` could not be truthful.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument field",
    label = "no JSON schema for this type",
    note = "supported: String, PathBuf, bool, integers, f32/f64, Vec<T>, BTreeSet<T>, HashSet<T>, Box<T>, serde_json::Map<String, Value>, serde_json::Value, (), Option<T> directly on a field, and structs / enums that derive ToolArgs"
)]
pub trait ToolArgsField {
    /// The property of a field of this type.
    fn schema_prop() -> SchemaProp;
}

impl ToolArgsField for String {
    fn schema_prop() -> SchemaProp {
        SchemaProp::string()
    }
}

impl ToolArgsField for PathBuf {
    fn schema_prop() -> SchemaProp {
        SchemaProp::string()
    }
}

impl ToolArgsField for bool {
    fn schema_prop() -> SchemaProp {
        SchemaProp::boolean()
    }
}

impl ToolArgsField for f64 {
    fn schema_prop() -> SchemaProp {
        SchemaProp::number()
    }
}

impl ToolArgsField for f32 {
    /// A number within ±3.40282356e38: every such value reads as a finite
    /// f32 (rounding to `f32::MAX` at the top, which prints as
    /// `3.4028235e38`); larger values would silently become infinity.
    fn schema_prop() -> SchemaProp {
        SchemaProp::number().with_range(Number::from_f64(-F32_LIMIT), Number::from_f64(F32_LIMIT))
    }
}

/// Above `f32::MAX` (so its printed form, even parsed a little off, stays
/// inside) and below the midpoint to the next power of two (3.4028235678e38),
/// so everything inside rounds to a finite f32.
const F32_LIMIT: f64 = 3.40282356e38;

macro_rules! bounded_int {
    ($($t:ty),*) => {$(
        impl ToolArgsField for $t {
            fn schema_prop() -> SchemaProp {
                SchemaProp::integer()
                    .with_range(Some(Number::from(<$t>::MIN)), Some(Number::from(<$t>::MAX)))
            }
        }
    )*};
}

bounded_int!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

impl ToolArgsField for i128 {
    /// JSON integers that serde_json reads exactly: i64::MIN ..= u64::MAX.
    fn schema_prop() -> SchemaProp {
        SchemaProp::integer().with_range(Some(Number::from(i64::MIN)), Some(Number::from(u64::MAX)))
    }
}

impl ToolArgsField for u128 {
    /// JSON integers that serde_json reads exactly: 0 ..= u64::MAX.
    fn schema_prop() -> SchemaProp {
        SchemaProp::integer().with_range(Some(Number::from(0u8)), Some(Number::from(u64::MAX)))
    }
}

impl<T: ToolArgsField> ToolArgsField for Vec<T> {
    fn schema_prop() -> SchemaProp {
        SchemaProp::array_of(T::schema_prop())
    }
}

impl<T: ToolArgsField> ToolArgsField for VecDeque<T> {
    fn schema_prop() -> SchemaProp {
        SchemaProp::array_of(T::schema_prop())
    }
}

impl<T: ToolArgsField + Ord> ToolArgsField for BTreeSet<T> {
    fn schema_prop() -> SchemaProp {
        SchemaProp::array_of(T::schema_prop())
    }
}

impl<T: ToolArgsField + Eq + Hash, S> ToolArgsField for HashSet<T, S> {
    fn schema_prop() -> SchemaProp {
        SchemaProp::array_of(T::schema_prop())
    }
}

impl<T: ToolArgsField + ?Sized> ToolArgsField for Box<T> {
    fn schema_prop() -> SchemaProp {
        T::schema_prop()
    }
}

impl ToolArgsField for Map<String, Value> {
    fn schema_prop() -> SchemaProp {
        SchemaProp::object()
    }
}

impl ToolArgsField for Value {
    /// `json`: any value, unchecked.
    fn schema_prop() -> SchemaProp {
        SchemaProp::json()
    }
}

impl ToolArgsField for () {
    /// `null` (serde reads `()` from JSON `null` only).
    fn schema_prop() -> SchemaProp {
        SchemaProp::null()
    }
}

/// The arguments of a tool that takes none: the spec is empty and any object
/// is accepted (extra keys are ignored, as everywhere).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct NoArgs {}

impl ToolArgs for NoArgs {
    fn schema_spec() -> SchemaSpec {
        SchemaSpec::new()
    }
}

impl<'de> Deserialize<'de> for NoArgs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d)?;
        Ok(NoArgs {})
    }
}
