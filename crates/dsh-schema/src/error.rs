//! The two errors of the schema layer: a malformed spec ([`SpecError`],
//! `INVALID_SPEC`) and arguments that violate one ([`ToolArgsError`],
//! `INVALID_ARGS`).

use std::fmt;

use dsh_protocol::codes::{self, ErrorCode};

/// A malformed [`SchemaSpec`](crate::SchemaSpec) (code `INVALID_SPEC`):
/// which property and what is wrong with it.
///
/// Displays as `invalid schema spec: property "<path>": <message>`, or
/// `invalid schema spec: <message>` when the path is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    path: String,
    message: String,
}

impl SpecError {
    /// An error at property `path` (`a.b`, `a[]` for array items; empty for
    /// the spec as a whole).
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        SpecError {
            path: path.into(),
            message: message.into(),
        }
    }

    /// The property path (empty for the whole spec).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What is wrong, without the path.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl ErrorCode for SpecError {
    /// `INVALID_SPEC`.
    fn code(&self) -> &str {
        codes::INVALID_SPEC
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "invalid schema spec: {}", self.message)
        } else {
            write!(
                f,
                "invalid schema spec: property \"{}\": {}",
                self.path, self.message
            )
        }
    }
}

impl std::error::Error for SpecError {}

/// Arguments that violate the schema (code `INVALID_ARGS`). The message the
/// model reads is `invalid arguments: v1; v2; …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolArgsError {
    violations: Vec<String>,
}

impl ToolArgsError {
    /// An error listing `violations` (normally non-empty, from
    /// [`validate_args`](crate::validate_args)).
    pub fn new(violations: Vec<String>) -> Self {
        ToolArgsError { violations }
    }

    /// The violations, in validation order.
    pub fn violations(&self) -> &[String] {
        &self.violations
    }

    /// The violations, in validation order, by value.
    pub fn into_violations(self) -> Vec<String> {
        self.violations
    }
}

impl ErrorCode for ToolArgsError {
    /// `INVALID_ARGS`.
    fn code(&self) -> &str {
        codes::INVALID_ARGS
    }
}

impl fmt::Display for ToolArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid arguments: ")?;
        for (i, v) in self.violations.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            f.write_str(v)?;
        }
        Ok(())
    }
}

impl std::error::Error for ToolArgsError {}
