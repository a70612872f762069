//! The pure schema layer of dsh's model boundary: the schema DSL, its
//! conversion to JSON Schema, validation of untrusted tool arguments, and
//! loading specs from JSON or any serde format (TOML included).
//!
//! A model's tool call is untrusted JSON. Start reading at [`SchemaSpec`]
//! (the ordered property map a tool's arguments are described by),
//! [`to_json_schema`] (what the model is shown) and [`validate_args`] (its
//! exact runtime mirror, with violations in words the model can act on).
//! [`ToolArgs`] and [`ToolArgsField`] tie Rust types to specs; the derive
//! for them lives in `dsh-tools` (`#[derive(dsh_tools::ToolArgs)]`).
//!
//! This crate depends on serde, serde_json and memchr only: no async runtime, no
//! kernel, no LLM types. Running tools (parsing raw model text, the typed
//! call path, the registry) is `dsh-tools`, which re-exports everything here.
//!
//! ```
//! use dsh_schema::{to_json_schema, validate_args, SchemaProp, SchemaSpec};
//! use serde_json::json;
//!
//! let spec = SchemaSpec::new()
//!     .with("path", SchemaProp::string().required(true).with_description("File to read"))
//!     .with("limit", SchemaProp::integer().with_range(Some(0.into()), None));
//! assert_eq!(
//!     to_json_schema(&spec)["required"],
//!     json!(["path"])
//! );
//! assert_eq!(
//!     validate_args(&spec, &json!({"limit": -1})),
//!     [r#"missing required property "path""#, r#""limit" must be at least 0"#]
//! );
//! ```

#![deny(missing_docs)]

// Lets shared code (the `testing` strategies, also compiled into this
// crate's tests) name this crate `dsh_schema` from inside.
extern crate self as dsh_schema;

mod args;
mod convert;
mod error;
mod json;
mod load;
mod number;
mod raw;
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}
mod spec;
mod strict;
pub mod suggest;
#[cfg(feature = "testing")]
pub mod testing;
mod validate;

pub use args::{NoArgs, ToolArgs, ToolArgsField};
pub use convert::to_json_schema;
pub use error::{SpecError, ToolArgsError};
pub use json::{ArgMap, ArgValue, JsonKind, JsonMap, JsonRead};
pub use load::json_kind;
pub use raw::{classify_json_schema, RawSchema, Unsupported};
pub use spec::{SchemaProp, SchemaSpec, SchemaType, TOGETHER_KEY};
pub use strict::{strip_introduced_nulls, to_strict_schema, Inexpressible};
pub use validate::{
    drop_undeclared_keys, is_valid, is_valid_prop, near_miss_notes, normalize_integers,
    reads_as_is, validate_args,
};
