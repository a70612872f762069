//! The model boundary: the schema DSL, JSON Schema conversion, argument
//! validation, typed tool definition, and the tool registry.
//!
//! A model's tool call is untrusted JSON. Start reading at [`SchemaSpec`]
//! (the ordered property map a tool's arguments are described by),
//! [`validate_args`] (its runtime mirror of [`to_json_schema`]) and
//! [`define_tool`] (parse → validate → deserialize → run). The
//! [`ToolRegistry`] executes calls through the `tools/execute` waterfall and
//! turns every failure into an `is_error` result the model can act on.
//!
//! In Rust the argument **type** is the source of truth: `#[derive(ToolArgs)]`
//! builds the spec from a serde struct, and property tests prove that every
//! value validation accepts deserializes (no `ARGS_DRIFT`).
//!
//! Errors carry stable codes ([`codes`]); with the `testing` feature,
//! `dsh_tools::testing` offers the drift guard to crates that define argument
//! types.
//!
//! What this crate does not do: run tools concurrently or decide policy
//! (sandboxing, permissions, retries are `tools/execute` listeners), and it
//! does not validate raw JSON-Schema tools (MCP): they check their own input.
//!
//! ```
//! use dsh_tools::{define_tool, ToolArgs};
//! use dsh_llm::ContentBlock;
//!
//! /// Arguments of `greet`.
//! #[derive(serde::Deserialize, ToolArgs)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//!     #[serde(default)]
//!     shout: bool,
//! }
//!
//! let tool = define_tool("greet", "Greets someone", |args: Greet, _ctx| async move {
//!     let text = format!("hello {}", args.name);
//!     Ok(vec![ContentBlock::text(if args.shout { text.to_uppercase() } else { text })])
//! });
//! assert_eq!(tool.spec().len(), 2);
//! ```

#![deny(missing_docs)]

// Lets generated and shared code name this crate `dsh_tools` from inside.
extern crate self as dsh_tools;

mod error;
mod guard;
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}
mod registry;
pub mod regular;
#[cfg(feature = "testing")]
pub mod testing;
mod tool;

pub use dsh_kernel::ErrorCode;
pub use dsh_protocol::{ToolCall, ToolFailure, ToolResult};
pub use dsh_schema::{
    drop_undeclared_keys, is_valid, json_kind, near_miss_notes, normalize_integers, reads_as_is,
    to_json_schema, validate_args, ArgMap, ArgValue, JsonKind, JsonMap, JsonRead, NoArgs,
    SchemaProp, SchemaSpec, SchemaType, ToolArgs, ToolArgsField,
};
pub use dsh_tools_derive::ToolArgs;
pub use error::{codes, SpecError, ToolArgsError, ToolError};
pub use guard::{
    approved_escalation, Approval, Approved, Approver, PreExecute, Question, SandboxPermissions,
    Verdict, NO_APPROVER,
};
pub use registry::{error_result, success_result, unknown_tool, CallEnv, Execution, ToolRegistry};
pub use tool::{
    define_tool, define_tool_from_spec, define_tool_with_output, deserialize_validated,
    parse_arguments, prepare_args, raw_tool, read_args, ArgsCheck, ArgsTool, Concurrency,
    ConcurrencyRule, ContextSink, RawTool, Tool, ToolContext, ToolOutput, TypedTool, ValidArgs,
};
