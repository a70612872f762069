//! The blind-retry guard: models that repeat a failing call unchanged learn
//! nothing from the error text alone.
//!
//! Each failed call is fingerprinted by tool name, error code and violation
//! texts (which carry the paths). Within one turn, the second identical
//! failure gets the tool's parameter schema appended to its result so the
//! model can compare; from the `limit`-th on, the loop steers the model to
//! stop repeating the call.
//!
//! The guard is a `tools/execute` listener ([`install`]), so every listener
//! registered before it (outside it) sees the result exactly as the model
//! will. Its per-turn state is a [`TurnGuard`] the loop puts into each call's
//! extensions; calls without one (not made by the loop) pass through.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use dsh_kernel::sync::lock;
use dsh_kernel::{Kernel, KernelError, Registration};
use dsh_llm::ContentBlock;
use dsh_tools::{Execution, ToolRegistry, ToolResult};

/// A failure's fingerprint: tool name, error code, violation texts.
type Fingerprint = (String, String, Vec<String>);

/// The per-turn state of the guard: counts identical failures and holds the
/// steering note the loop delivers after the call.
#[derive(Debug)]
pub struct TurnGuard {
    limit: u32,
    seen: Mutex<HashMap<Fingerprint, u32>>,
    note: Mutex<Option<String>>,
}

impl TurnGuard {
    /// A guard that steers after `limit` identical failures (the schema is
    /// attached from the second one; `limit` 0 disables the guard).
    pub fn new(limit: u32) -> Self {
        Self {
            limit,
            seen: Mutex::new(HashMap::new()),
            note: Mutex::new(None),
        }
    }

    /// Records `result` of a call to `tool`. May append the schema (from
    /// `registry`) to the result's content, and leaves a steering note for
    /// [`TurnGuard::take_note`] when the model should stop repeating the
    /// call.
    pub fn observe(&self, tool: &str, result: &mut ToolResult, registry: Option<&ToolRegistry>) {
        if self.limit == 0 || !result.is_error {
            return;
        }
        let Some(failure) = result.failure.as_ref() else {
            return;
        };
        let key = (
            tool.to_string(),
            failure.code.clone(),
            failure.violations.clone(),
        );
        let count = {
            let mut seen = lock(&self.seen);
            let count = seen.entry(key).or_insert(0);
            *count += 1;
            *count
        };
        let code = failure.code.clone();
        if count >= 2 {
            if let Some(schema) = registry.and_then(|r| r.get(tool)) {
                let params = schema.schema().parameters.to_string();
                result.content.push(ContentBlock::text(format!(
                    "note: this call failed the same way {count} times. The parameters of \"{tool}\" are: {params}"
                )));
            }
        }
        if count >= self.limit {
            *lock(&self.note) = Some(format!(
                "You have called \"{tool}\" {count} times in this turn and it failed the same way each time ({code}). Stop repeating this call: read the error, compare your arguments with the tool's parameters, and change your approach."
            ));
        }
    }

    /// The steering note left by the last [`TurnGuard::observe`], once.
    pub fn take_note(&self) -> Option<String> {
        lock(&self.note).take()
    }
}

/// Marks a registry whose `tools/execute` already carries the guard.
struct Installed;

/// Adds the guard's `tools/execute` listener to `registry` once per kernel
/// (later calls are no-ops). The listener runs the rest of the chain, then
/// applies the call's [`TurnGuard`] (if the call has one) to the result.
pub fn install(kernel: &Kernel, registry: &Arc<ToolRegistry>) -> Registration {
    match kernel.provide(Arc::new(Installed)) {
        Ok(marker) => {
            let weak: Weak<ToolRegistry> = Arc::downgrade(registry);
            let listener = registry
                .on_execute()
                .on(move |(call, env): Execution, next| {
                    let guard = env.extensions.get::<Arc<TurnGuard>>().cloned();
                    let registry = weak.clone();
                    async move {
                        let tool = call.name.clone();
                        let mut result = next.run((call, env)).await;
                        if let Some(guard) = guard {
                            guard.observe(&tool, &mut result, registry.upgrade().as_deref());
                        }
                        result
                    }
                });
            Registration::merge(vec![marker, listener])
        }
        Err(KernelError::DuplicateService(_)) | Err(KernelError::MissingService(_)) => {
            Registration::noop()
        }
    }
}
