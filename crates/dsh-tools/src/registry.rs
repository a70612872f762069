//! [`ToolRegistry`]: registered tools, what the model is shown, and the
//! `tools/execute` pipeline that turns every call into a result.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use dsh_kernel::{
    BoxFuture, EmitHook, Extensions, Kernel, KernelError, Registration, Scope, WaterfallHook,
};
use dsh_llm::{ContentBlock, FinishReason, ToolSchema};
use futures_util::future::{select, Either};
use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::error::{codes, ToolError};
use crate::tool::{Tool, ToolInvocation, ToolOutput};

/// One tool call to execute: what the `tools/execute` waterfall carries.
#[derive(Debug, Clone)]
pub struct ToolExecution {
    /// The tool-call id, copied into the result.
    pub call_id: String,
    /// The tool name the model asked for.
    pub name: String,
    /// The raw argument text the model produced (`""` means `{}`).
    pub arguments: String,
    /// How the model step ended (`MaxTokens`: the arguments may be cut off).
    pub finish: Option<FinishReason>,
    /// Aborts the call: the tool's future is dropped and the result is `ABORTED`.
    pub cancel: CancellationToken,
    /// Caller context (the agent loop inserts its agent handle); tools look
    /// it up by type.
    pub extensions: Extensions,
}

impl ToolExecution {
    /// A call with no finish reason, a fresh token and empty extensions.
    pub fn new(
        call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolExecution {
            call_id: call_id.into(),
            name: name.into(),
            arguments: arguments.into(),
            finish: None,
            cancel: CancellationToken::new(),
            extensions: Extensions::new(),
        }
    }
}

/// The outcome of one call; never a Rust error: failures are `is_error`
/// results the model reads.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolExecutionResult {
    /// The tool-call id.
    pub call_id: String,
    /// The content; for errors the first block is the text `Error: <message>`,
    /// notes follow as further text blocks.
    pub content: Vec<ContentBlock>,
    /// Whether the call failed.
    pub is_error: bool,
    /// The structured failure, for plugins (retry guards, UI); `None` on success.
    pub failure: Option<ToolFailure>,
}

/// The structured side of an error result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    /// The tool name as called.
    pub tool: String,
    /// `INVALID_ARGS`, `INVALID_JSON`, `UNKNOWN_TOOL`, `TOOL_FAILED`,
    /// `TOOL_PANICKED`, `ARGS_DRIFT`, `ABORTED`, or a tool's own code.
    pub code: String,
    /// The model-facing message (without `Error: `).
    pub message: String,
    /// The violations of an `INVALID_ARGS` failure.
    pub violations: Vec<String>,
}

impl ToolExecutionResult {
    /// A successful result: the content, then one text block per note.
    pub fn success(call_id: impl Into<String>, output: ToolOutput) -> Self {
        let mut content = output.content;
        content.extend(output.notes.into_iter().map(ContentBlock::text));
        ToolExecutionResult {
            call_id: call_id.into(),
            content,
            is_error: false,
            failure: None,
        }
    }

    /// An error result: `Error: <message>`, then one text block per note.
    pub fn failure(call_id: impl Into<String>, tool: impl Into<String>, error: &ToolError) -> Self {
        let mut content = vec![ContentBlock::text(format!("Error: {}", error.message()))];
        content.extend(error.notes().iter().cloned().map(ContentBlock::text));
        ToolExecutionResult {
            call_id: call_id.into(),
            content,
            is_error: true,
            failure: Some(ToolFailure {
                tool: tool.into(),
                code: error.code().to_string(),
                message: error.message().to_string(),
                violations: error.violations().to_vec(),
            }),
        }
    }

    /// The failure code, `None` on success.
    pub fn code(&self) -> Option<&str> {
        self.failure.as_ref().map(|f| f.code.as_str())
    }

    /// The text blocks joined with `\n` (for logs and tests).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The `tool-result` block for the model history.
    pub fn to_block(&self) -> ContentBlock {
        ContentBlock::tool_result(self.call_id.clone(), self.content.clone(), self.is_error)
    }
}

/// Runs one tool's calls. The tool's body is the single listener of this
/// hook, so its registration carries the kernel's activity gate:
/// `Scope::close_and_wait` waits until no call of the tool is running.
type CallHook = WaterfallHook<ToolInvocation, Result<ToolOutput, ToolError>>;

struct Entry {
    id: u64,
    name: String,
    tool: Arc<dyn Tool>,
    runner: Arc<CallHook>,
}

struct Inner {
    tools: RwLock<Vec<Entry>>,
    next_id: AtomicU64,
    on_execute: WaterfallHook<ToolExecution, ToolExecutionResult>,
    on_change: EmitHook<()>,
}

impl Inner {
    fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.entry(name).map(|(tool, _)| tool)
    }

    fn entry(&self, name: &str) -> Option<(Arc<dyn Tool>, Arc<CallHook>)> {
        self.tools
            .read()
            .expect("tool registry lock poisoned")
            .iter()
            .find(|e| e.name == name)
            .map(|e| (e.tool.clone(), e.runner.clone()))
    }

    fn names(&self) -> Vec<String> {
        self.tools
            .read()
            .expect("tool registry lock poisoned")
            .iter()
            .map(|e| e.name.clone())
            .collect()
    }

    fn schemas(&self) -> Vec<ToolSchema> {
        self.tools
            .read()
            .expect("tool registry lock poisoned")
            .iter()
            .map(|e| e.tool.schema().clone())
            .collect()
    }

    fn notify(&self) {
        // Listener failures are contained and logged by the hook.
        let _ = self.on_change.emit(&());
    }
}

/// The tool registry, a kernel service (provide it as `Arc<ToolRegistry>`).
///
/// Holds tools by name in registration order, shows their schemas to the
/// model ([`ToolRegistry::schemas`], fed to the prompt assembly by
/// [`ToolRegistry::provide_to`]) and executes calls through the
/// `tools/execute` waterfall ([`ToolRegistry::execute`]), whose core turns
/// every failure — unknown tool, invalid arguments, tool error, panic,
/// cancellation — into an `is_error` result. Emits `tools/change` whenever a
/// tool is registered or unregistered.
pub struct ToolRegistry {
    inner: Arc<Inner>,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names())
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ToolRegistry {
            inner: Arc::new(Inner {
                tools: RwLock::new(Vec::new()),
                next_id: AtomicU64::new(1),
                on_execute: WaterfallHook::new("tools/execute"),
                on_change: EmitHook::new("tools/change"),
            }),
        }
    }

    /// Creates a registry and provides it to `kernel` as `Arc<ToolRegistry>`.
    ///
    /// # Errors
    /// [`KernelError::DuplicateService`] when a registry is already provided.
    pub fn provide(kernel: &Kernel) -> Result<(Arc<ToolRegistry>, Registration), KernelError> {
        let registry = Arc::new(ToolRegistry::new());
        let reg = kernel.provide(registry.clone())?;
        Ok((registry, reg))
    }

    /// Registers `tool` under its schema's name, after the existing tools.
    /// Undoing the returned registration removes exactly this tool (not a
    /// later one of the same name) and emits `tools/change`.
    ///
    /// # Errors
    /// `DUPLICATE_TOOL` when a tool of that name is registered.
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<Registration, ToolError> {
        let name = tool.schema().name.clone();
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let gated = {
            let mut tools = self
                .inner
                .tools
                .write()
                .expect("tool registry lock poisoned");
            if tools.iter().any(|e| e.name == name) {
                return Err(ToolError::new(
                    codes::DUPLICATE_TOOL,
                    format!("a tool named \"{name}\" is already registered; unregister it first or choose another name"),
                ));
            }
            let runner = Arc::new(CallHook::new("tools/call"));
            let body = tool.clone();
            let gated = runner.on(move |invocation, _next| body.call(invocation));
            tools.push(Entry {
                id,
                name,
                tool,
                runner,
            });
            gated
        };
        self.inner.notify();
        let weak = Arc::downgrade(&self.inner);
        let removal = Registration::new(move || {
            if let Some(inner) = weak.upgrade() {
                let removed = {
                    let mut tools = inner.tools.write().expect("tool registry lock poisoned");
                    let before = tools.len();
                    tools.retain(|e| e.id != id);
                    tools.len() != before
                };
                if removed {
                    inner.notify();
                }
            }
        });
        // Undone in reverse: first out of the list, then the body's listener.
        Ok(Registration::merge(vec![gated, removal]))
    }

    /// [`ToolRegistry::register`] with the registration added to `scope`:
    /// closing the scope unregisters the tool.
    ///
    /// # Errors
    /// `DUPLICATE_TOOL` as `register`.
    pub fn register_in(&self, scope: &Scope, tool: Arc<dyn Tool>) -> Result<(), ToolError> {
        scope.add(self.register(tool)?);
        Ok(())
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.inner.get(name)
    }

    /// The tool names in registration order.
    pub fn names(&self) -> Vec<String> {
        self.inner.names()
    }

    /// The schemas in registration order: what the model is shown.
    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.inner.schemas()
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.inner
            .tools
            .read()
            .expect("tool registry lock poisoned")
            .len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `tools/execute` waterfall. Listeners (sandbox, permission, retry)
    /// may rewrite the call, wrap the result, or veto by returning their own
    /// result without calling `next`.
    pub fn on_execute(&self) -> &WaterfallHook<ToolExecution, ToolExecutionResult> {
        &self.inner.on_execute
    }

    /// `tools/change`: emitted after a tool is registered or unregistered.
    pub fn on_change(&self) -> &EmitHook<()> {
        &self.inner.on_change
    }

    /// Registers this registry as a tool-schema provider of `prompt` (asked
    /// at every assembly) and forwards `tools/change` as
    /// `system-prompt/change`. Undo removes both.
    pub fn provide_to(&self, prompt: &dsh_prompt::PromptService) -> Registration {
        let weak = Arc::downgrade(&self.inner);
        let provider = prompt.add_tool_provider(move || {
            weak.upgrade()
                .map(|inner| inner.schemas())
                .unwrap_or_default()
        });
        let prompt = prompt.clone();
        let forward = self.inner.on_change.on(move |_| prompt.notify_change());
        Registration::merge(vec![provider, forward])
    }

    /// Executes one call through `tools/execute`. Never fails and never
    /// panics the caller: the core at the bottom of the waterfall yields
    /// - unknown tool → `Error: unknown tool "<name>"` with the closest name
    ///   and the list of tools (`UNKNOWN_TOOL`);
    /// - cancelled before the call → `ABORTED`; cancelled during it → the
    ///   tool's own result if it returns within 250 ms (bash says `command
    ///   aborted`), else `ABORTED` and the tool's future is dropped;
    /// - the tool's error → `Error: <message>` with its code (typed tools:
    ///   `INVALID_JSON`, `INVALID_ARGS`, `ARGS_DRIFT`, or the body's);
    /// - a panic → `Error: tool "<name>" panicked: <msg>` (`TOOL_PANICKED`);
    /// - success → the content blocks (plus notes).
    ///
    /// A panicking `tools/execute` listener is contained too
    /// (`LISTENER_PANICKED`). The returned future is `'static`.
    pub fn execute(&self, exec: ToolExecution) -> BoxFuture<'static, ToolExecutionResult> {
        let call_id = exec.call_id.clone();
        let name = exec.name.clone();
        // Weak: an in-flight call must not keep a dropped registry alive.
        let core_inner = Arc::downgrade(&self.inner);
        let core = move |exec: ToolExecution| {
            let inner = core_inner.upgrade();
            async move {
                match inner {
                    Some(inner) => execute_core(inner, exec).await,
                    None => unknown_tool(&exec, &[]),
                }
            }
        };
        let started =
            std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.on_execute.call(exec, core)));
        Box::pin(async move {
            let outcome = match started {
                Ok(fut) => AssertUnwindSafe(fut).catch_unwind().await,
                Err(payload) => Err(payload),
            };
            outcome.unwrap_or_else(|payload| {
                let msg = panic_message(&*payload);
                tracing::error!(target: "dsh_tools", tool = %name, "tools/execute listener panicked: {msg}");
                ToolExecutionResult::failure(
                    call_id,
                    name,
                    &ToolError::new(
                        codes::LISTENER_PANICKED,
                        format!("a tools/execute listener panicked: {msg}"),
                    ),
                )
            })
        })
    }
}

async fn execute_core(inner: Arc<Inner>, exec: ToolExecution) -> ToolExecutionResult {
    let Some((_tool, runner)) = inner.entry(&exec.name) else {
        let names = inner.names();
        return unknown_tool(&exec, &names);
    };
    drop(inner);
    let ToolExecution {
        call_id,
        name,
        arguments,
        finish,
        cancel,
        extensions,
    } = exec;
    if cancel.is_cancelled() {
        return ToolExecutionResult::failure(call_id, &name, &aborted(&name));
    }
    let invocation = ToolInvocation {
        call_id: call_id.clone(),
        arguments,
        finish,
        cancel: cancel.clone(),
        extensions,
    };
    let run = async move {
        let fut = std::panic::catch_unwind(AssertUnwindSafe(|| {
            runner.call(invocation, |inv: ToolInvocation| async move {
                // Reached only when the tool was unregistered after lookup.
                Err(ToolError::new(
                    codes::UNKNOWN_TOOL,
                    format!(
                        "tool call {} failed: the tool was unregistered",
                        inv.call_id
                    ),
                ))
            })
        }))?;
        AssertUnwindSafe(fut).catch_unwind().await
    };
    let cancelled = cancel.cancelled_owned();
    let outcome = match select(Box::pin(run), Box::pin(cancelled)).await {
        Either::Left((outcome, _)) => outcome,
        Either::Right(((), run)) => {
            // A tool that handles cancellation (bash kills its process group)
            // gets a moment to report in its own words; one that ignores the
            // token is dropped after the grace.
            match tokio::time::timeout(ABORT_GRACE, run).await {
                Ok(outcome) => outcome,
                Err(_) => return ToolExecutionResult::failure(call_id, &name, &aborted(&name)),
            }
        }
    };
    match outcome {
        Ok(Ok(output)) => ToolExecutionResult::success(call_id, output),
        Ok(Err(error)) => ToolExecutionResult::failure(call_id, &name, &error),
        Err(payload) => {
            let msg = panic_message(&*payload);
            tracing::error!(target: "dsh_tools", tool = %name, "tool panicked: {msg}");
            let error = ToolError::new(
                codes::TOOL_PANICKED,
                format!("tool \"{name}\" panicked: {msg}"),
            );
            ToolExecutionResult::failure(call_id, &name, &error)
        }
    }
}

/// How long a cancelled tool may take to return its own result.
const ABORT_GRACE: std::time::Duration = std::time::Duration::from_millis(250);

fn aborted(name: &str) -> ToolError {
    ToolError::aborted(format!("tool \"{name}\" was aborted"))
}

fn unknown_tool(exec: &ToolExecution, names: &[String]) -> ToolExecutionResult {
    let mut message = format!("unknown tool \"{}\"", exec.name);
    if names.is_empty() {
        message.push_str("; no tools are available");
    } else {
        if let Some(best) = crate::suggest::closest(&exec.name, names.iter().map(String::as_str)) {
            message.push_str(&format!("; did you mean \"{best}\"?"));
        }
        let list: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
        message.push_str(&format!(" Available tools: {}", list.join(", ")));
    }
    ToolExecutionResult::failure(
        exec.call_id.clone(),
        exec.name.clone(),
        &ToolError::new(codes::UNKNOWN_TOOL, message),
    )
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    dsh_kernel::panic_text(payload).unwrap_or_else(|| "non-string panic payload".to_string())
}
