//! The blind-retry guard: models that repeat a failing call unchanged learn
//! nothing from the error text alone.
//!
//! Each failed call is fingerprinted by tool name, error code and violation
//! texts (which carry the paths). Within one turn, the second identical
//! failure gets the tool's parameter schema appended to its result so the
//! model can compare; from the `limit`-th on, the loop steers the model to
//! stop repeating the call.

use std::collections::HashMap;

use dsh_llm::ContentBlock;
use dsh_tools::{ToolExecutionResult, ToolRegistry};

/// Counts identical failures within one turn.
#[derive(Debug)]
pub struct RetryGuard {
    limit: u32,
    seen: HashMap<(String, String, Vec<String>), u32>,
}

impl RetryGuard {
    /// A guard that steers after `limit` identical failures (the schema is
    /// attached from the second one; `limit` 0 disables the guard).
    pub fn new(limit: u32) -> Self {
        Self {
            limit,
            seen: HashMap::new(),
        }
    }

    /// Records `result` of a call to `tool`. May append the schema to the
    /// result's content; returns a steering note when the model should stop
    /// repeating the call.
    pub fn observe(
        &mut self,
        tool: &str,
        result: &mut ToolExecutionResult,
        registry: Option<&ToolRegistry>,
    ) -> Option<String> {
        if self.limit == 0 || !result.is_error {
            return None;
        }
        let failure = result.failure.as_ref()?;
        let key = (
            tool.to_string(),
            failure.code.clone(),
            failure.violations.clone(),
        );
        let count = self.seen.entry(key).or_insert(0);
        *count += 1;
        let count = *count;
        if count >= 2 {
            if let Some(schema) = registry.and_then(|r| r.get(tool)) {
                let params = serde_json::to_string(&schema.schema().parameters)
                    .unwrap_or_else(|_| "{}".into());
                result.content.push(ContentBlock::text(format!(
                    "note: this call failed the same way {count} times. The parameters of \"{tool}\" are: {params}"
                )));
            }
        }
        (count >= self.limit).then(|| {
            format!(
                "You have called \"{tool}\" {count} times in this turn and it failed the same way each time ({}). Stop repeating this call: read the error, compare your arguments with the tool's parameters, and change your approach.",
                failure.code
            )
        })
    }
}
