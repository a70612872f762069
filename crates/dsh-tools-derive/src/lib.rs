//! #[derive(ToolArgs)]: a SchemaSpec from a Rust type
