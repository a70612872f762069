//! Shapes `#[derive(ToolArgs)]` refuses, each a `compile_fail` doctest (the
//! positive cases live in `tests/derive.rs`).
//!
//! `deny_unknown_fields` (validation allows extra keys, so deserialization must):
//! ```compile_fail
//! #[derive(serde::Deserialize, dsh_tools::ToolArgs)]
//! #[serde(deny_unknown_fields)]
//! struct A { x: String }
//! ```
//! A field `alias` (both names sent → validation passes, serde fails):
//! ```compile_fail
//! #[derive(serde::Deserialize, dsh_tools::ToolArgs)]
//! struct A { #[serde(alias = "y")] x: String }
//! ```
//! `deserialize_with` (the type no longer says what is accepted):
//! ```compile_fail
//! fn f<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> { serde::Deserialize::deserialize(d) }
//! #[derive(serde::Deserialize, dsh_tools::ToolArgs)]
//! struct A { #[serde(deserialize_with = "f")] x: String }
//! ```
//! Tuple structs:
//! ```compile_fail
//! #[derive(serde::Deserialize, dsh_tools::ToolArgs)]
//! struct A(String);
//! ```
//! Data-carrying enums:
//! ```compile_fail
//! #[derive(serde::Deserialize, dsh_tools::ToolArgs)]
//! enum E { A(String) }
//! ```
//! Tagged enums:
//! ```compile_fail
//! #[derive(serde::Deserialize, dsh_tools::ToolArgs)]
//! #[serde(untagged)]
//! enum E { A, B }
//! ```
//! Enums without variants:
//! ```compile_fail
//! #[derive(serde::Deserialize, dsh_tools::ToolArgs)]
//! enum E {}
//! ```
//! Generic types:
//! ```compile_fail
//! #[derive(serde::Deserialize, dsh_tools::ToolArgs)]
//! struct A<T> { x: T }
//! ```
//! Recursive types:
//! ```compile_fail
//! #[derive(serde::Deserialize, dsh_tools::ToolArgs)]
//! struct Tree { children: Vec<Tree> }
//! ```
//! Field types without a schema (`serde_json::Value` accepts anything):
//! ```compile_fail
//! #[derive(serde::Deserialize, dsh_tools::ToolArgs)]
//! struct A { x: serde_json::Value }
//! ```
//! `Option` below the field level (`null` is never valid):
//! ```compile_fail
//! #[derive(serde::Deserialize, dsh_tools::ToolArgs)]
//! struct A { x: Vec<Option<String>> }
//! ```
//! And the control case, which compiles:
//! ```
//! #[derive(serde::Deserialize, dsh_tools::ToolArgs)]
//! struct A { #[serde(rename = "y")] x: Option<Vec<u8>> }
//! ```
