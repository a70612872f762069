//! [`ToolRegistry`]: registered tools, what the model is shown, and the
//! `tools/execute` pipeline that turns every call into a result.

use dsh_kernel::sync::{lock, read, write};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use dsh_kernel::{
    BoxFuture, EmitHook, ErrorCode, Extensions, Kernel, KernelError, Registration, Scope,
    WaterfallHook,
};
use dsh_llm::{ContentBlock, FinishReason, ToolSchema, ToolSet};
use dsh_protocol::{CallId, ToolCall, ToolFailure, ToolResult};
use futures_util::future::{select, Either};
use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::error::{codes, ToolError};
use crate::guard::{self, Approver, PreExecute, Verdict};
use crate::tool::{ArgsCheck, Concurrency, Tool, ToolContext, ToolOutput};

/// What the caller of [`ToolRegistry::execute`] adds to a [`ToolCall`]: how
/// the model step ended, the cancellation token and the caller's context.
#[derive(Debug, Clone, Default)]
pub struct CallEnv {
    /// How the model step that produced the call ended (`MaxTokens`: the
    /// arguments may be cut off).
    pub finish: Option<FinishReason>,
    /// Aborts the call: the tool gets a short grace to answer in its own
    /// words, then its future is dropped and the result is `ABORTED`.
    pub cancel: CancellationToken,
    /// Caller context (the agent loop inserts its [`ContextSink`](crate::ContextSink));
    /// tools look it up by type through [`ToolContext`].
    pub extensions: Extensions,
}

/// The `tools/execute` waterfall's argument: the call exactly as the model
/// made it, and its environment. Listeners may veto or wrap; the arguments
/// they pass on are what runs.
pub type Execution = (ToolCall, CallEnv);

/// An error result for `call_id`: the first block is `Error: <message>`,
/// notes follow as further text blocks, and the structured failure (code,
/// message, violations) rides along. The one place error results are
/// rendered.
pub fn error_result(call_id: impl Into<CallId>, error: &ToolError) -> ToolResult {
    let mut content = vec![ContentBlock::text(format!("Error: {}", error.message()))];
    content.extend(error.notes().iter().cloned().map(ContentBlock::text));
    ToolResult {
        call_id: call_id.into(),
        content,
        is_error: true,
        failure: Some(ToolFailure {
            code: error.code().to_string(),
            message: error.message().to_string(),
            violations: error.violations().to_vec(),
        }),
    }
}

/// A successful result for `call_id`: the output's content, then one text
/// block per note.
pub fn success_result(call_id: impl Into<CallId>, output: ToolOutput) -> ToolResult {
    let mut content = output.content;
    content.extend(output.notes.into_iter().map(ContentBlock::text));
    ToolResult::success(call_id, content)
}

/// `arguments` with the nulls strict compilation introduced removed (see
/// [`dsh_schema::strip_introduced_nulls`]); unparsable text is passed on
/// as it is, for the tool to report.
fn without_introduced_nulls(spec: &dsh_schema::SchemaSpec, arguments: String) -> String {
    match serde_json::from_str::<serde_json::Value>(&arguments) {
        Ok(mut value) => {
            dsh_schema::strip_introduced_nulls(spec, &mut value);
            value.to_string()
        }
        Err(_) => arguments,
    }
}

/// Runs one tool's calls. The tool's body is the single listener of this
/// hook, so its registration carries the kernel's activity gate:
/// `Scope::close_and_wait` waits until no call of the tool is running.
type CallHook = WaterfallHook<(String, ToolContext), Result<ToolOutput, ToolError>>;

struct Entry {
    id: u64,
    name: String,
    tool: Arc<dyn Tool>,
    /// What the model is shown: the tool's schema, or its strict-dialect
    /// compilation.
    shown: ToolSchema,
    runner: Arc<CallHook>,
}

struct Inner {
    tools: RwLock<Vec<Entry>>,
    /// The shown schemas as a [`ToolSet`], built on first use after a
    /// change (cleared under the `tools` write lock; lock order: `tools`,
    /// then `set`).
    set: std::sync::Mutex<Option<ToolSet>>,
    next_id: AtomicU64,
    /// Compile tools registered from now on to the strict dialect.
    strict: std::sync::atomic::AtomicBool,
    /// Tools that could not be made strict, and why.
    strict_warnings: std::sync::Mutex<Vec<String>>,
    on_execute: WaterfallHook<Execution, ToolResult>,
    pre_execute: WaterfallHook<PreExecute, Verdict>,
    approver: RwLock<Option<Arc<dyn Approver>>>,
    on_change: EmitHook<()>,
    /// Names left out of the tool list an `UNKNOWN_TOOL` result gives
    /// ([`ToolRegistry::unlist`]), once per call of `unlist`.
    unlisted: RwLock<Vec<String>>,
}

impl Inner {
    fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.entry(name).map(|(tool, _)| tool)
    }

    fn entry(&self, name: &str) -> Option<(Arc<dyn Tool>, Arc<CallHook>)> {
        read(&self.tools)
            .iter()
            .find(|e| e.name == name)
            .map(|e| (e.tool.clone(), e.runner.clone()))
    }

    fn names(&self) -> Vec<String> {
        read(&self.tools).iter().map(|e| e.name.clone()).collect()
    }

    fn schemas(&self) -> Vec<ToolSchema> {
        self.tool_set().to_vec()
    }

    fn tool_set(&self) -> ToolSet {
        let tools = read(&self.tools);
        let mut cache = lock(&self.set);
        cache
            .get_or_insert_with(|| ToolSet::new(tools.iter().map(|e| e.shown.clone()).collect()))
            .clone()
    }

    /// Forgets the cached set; call with the `tools` write lock held.
    fn changed(&self) {
        *lock(&self.set) = None;
    }

    fn checks(&self) -> Vec<(ToolSchema, ArgsCheck)> {
        read(&self.tools)
            .iter()
            .map(|e| (e.shown.clone(), e.tool.args_check()))
            .collect()
    }

    fn notify(&self) {
        // Listener failures are contained and logged by the hook.
        self.on_change.emit(&());
    }
}

/// The tool registry, a kernel service (provide it as `Arc<ToolRegistry>`).
///
/// Holds tools by name in registration order, shows their schemas to the
/// model ([`ToolRegistry::schemas`]; the composition library feeds them to
/// the prompt assembly) and executes calls through the
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
                set: std::sync::Mutex::new(None),
                next_id: AtomicU64::new(1),
                strict: std::sync::atomic::AtomicBool::new(false),
                strict_warnings: std::sync::Mutex::new(Vec::new()),
                on_execute: WaterfallHook::new("tools/execute"),
                pre_execute: WaterfallHook::new("tools/pre-execute"),
                approver: RwLock::new(None),
                on_change: EmitHook::new("tools/change"),
                unlisted: RwLock::new(Vec::new()),
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

    /// From now on, tools registered are shown to the model in the
    /// provider's strict dialect ([`dsh_schema::to_strict_schema`], with
    /// `strict: true`) when their spec can be expressed without loss, and the
    /// `null`s that compilation introduced are removed from their calls
    /// before the tool sees them. A tool that cannot be made strict is shown
    /// as before, and a warning says why ([`ToolRegistry::take_strict_warnings`]).
    /// Call it before registering tools; it does not change tools already
    /// registered.
    pub fn set_strict(&self, strict: bool) {
        self.inner
            .strict
            .store(strict, std::sync::atomic::Ordering::SeqCst);
    }

    /// The warnings of tools that could not be made strict since the last
    /// call (`tool "x" is sent without strict mode: …`), in registration
    /// order.
    pub fn take_strict_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *dsh_kernel::sync::lock(&self.inner.strict_warnings))
    }

    /// The schema to show for `tool`, and its spec when it is shown strict.
    fn strict_form(
        &self,
        tool: &Arc<dyn Tool>,
    ) -> (ToolSchema, Option<Arc<dsh_schema::SchemaSpec>>) {
        let schema = tool.schema().clone();
        if !self.inner.strict.load(std::sync::atomic::Ordering::SeqCst) {
            return (schema, None);
        }
        let refuse = |why: String| {
            dsh_kernel::sync::lock(&self.inner.strict_warnings).push(format!(
                "tool \"{}\" is sent without strict mode: {why}",
                schema.name
            ));
        };
        let Some(spec) = tool.arg_spec() else {
            refuse("its schema is outside the subset dsh can compile".into());
            return (schema, None);
        };
        match dsh_schema::to_strict_schema(&spec) {
            Ok(parameters) => {
                let shown = ToolSchema {
                    parameters,
                    strict: Some(true),
                    ..schema
                };
                (shown, Some(Arc::new(spec)))
            }
            Err(why) => {
                refuse(why.to_string());
                (schema, None)
            }
        }
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
            let mut tools = write(&self.inner.tools);
            if tools.iter().any(|e| e.name == name) {
                return Err(ToolError::new(
                    codes::DUPLICATE_TOOL,
                    format!("a tool named \"{name}\" is already registered; unregister it first or choose another name"),
                ));
            }
            let (shown, strict) = self.strict_form(&tool);
            let runner = Arc::new(CallHook::new("tools/call"));
            let body = tool.clone();
            let gated =
                runner.on(
                    move |(arguments, ctx): (String, ToolContext), _next| match &strict {
                        Some(spec) => body.call(&without_introduced_nulls(spec, arguments), ctx),
                        None => body.call(&arguments, ctx),
                    },
                );
            tools.push(Entry {
                id,
                name,
                tool,
                shown,
                runner,
            });
            self.inner.changed();
            gated
        };
        self.inner.notify();
        let weak = Arc::downgrade(&self.inner);
        let removal = Registration::new(move || {
            if let Some(inner) = weak.upgrade() {
                let removed = {
                    let mut tools = write(&inner.tools);
                    let before = tools.len();
                    tools.retain(|e| e.id != id);
                    inner.changed();
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

    /// Registers each of `tools` in order, as [`ToolRegistry::register`];
    /// undoing the returned registration removes them all.
    ///
    /// # Errors
    /// `DUPLICATE_TOOL` for the first name already taken; the tools
    /// registered before it are removed again, so nothing stays registered.
    pub fn register_all(
        &self,
        tools: impl IntoIterator<Item = Arc<dyn Tool>>,
    ) -> Result<Registration, ToolError> {
        let mut regs = Vec::new();
        for tool in tools {
            match self.register(tool) {
                Ok(r) => regs.push(r),
                Err(e) => {
                    Registration::merge(regs).undo();
                    return Err(e);
                }
            }
        }
        Ok(Registration::merge(regs))
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

    /// The schemas as a shared [`ToolSet`]: the same set (an O(1) clone,
    /// serialized at most once) until a tool is registered or removed.
    pub fn tool_set(&self) -> ToolSet {
        self.inner.tool_set()
    }

    /// The schemas in registration order, each with who checks its
    /// arguments (for `dsh tools list --json`).
    pub fn schemas_with_checks(&self) -> Vec<(ToolSchema, ArgsCheck)> {
        self.inner.checks()
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        read(&self.inner.tools).len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a guard to the `tools/pre-execute` stage, after the existing
    /// ones. Every call is put to every guard (a guard cannot skip the
    /// later ones); the verdicts combine to the most restrictive
    /// ([`Verdict::narrow`]), so a guard can only narrow what the others
    /// allow. A panicking guard denies the call. Undoing the registration
    /// removes the guard.
    pub fn add_guard<F>(&self, guard: F) -> Registration
    where
        F: Fn(&PreExecute) -> BoxFuture<'static, Verdict> + Send + Sync + 'static,
    {
        self.inner.pre_execute.on(move |pre: PreExecute, next| {
            let mine = std::panic::catch_unwind(AssertUnwindSafe(|| guard(&pre)));
            async move {
                let mine = match mine {
                    Ok(fut) => AssertUnwindSafe(fut).catch_unwind().await,
                    Err(payload) => Err(payload),
                }
                .unwrap_or_else(|payload| {
                    let msg = panic_message(&*payload);
                    tracing::error!(target: "dsh_tools", "a tools/pre-execute guard panicked: {msg}");
                    Verdict::Deny(format!("a permission guard failed: {msg}"))
                });
                let rest = next.run(pre).await;
                mine.narrow(rest)
            }
        })
    }

    /// Leaves `name` out of the list of tools an `UNKNOWN_TOOL` result
    /// names (and its "did you mean"), for a tool that stays callable but
    /// is not offered to the model (an old alias). Registered or not, the
    /// tool is untouched; undoing the registration lists it again.
    pub fn unlist(&self, name: impl Into<String>) -> Registration {
        let name = name.into();
        write(&self.inner.unlisted).push(name.clone());
        let weak = Arc::downgrade(&self.inner);
        Registration::new(move || {
            if let Some(inner) = weak.upgrade() {
                let mut unlisted = write(&inner.unlisted);
                if let Some(at) = unlisted.iter().position(|n| *n == name) {
                    unlisted.remove(at);
                }
            }
        })
    }

    /// Sets the approver that answers `ask` verdicts of calls whose
    /// extensions bring none (the CLI's terminal, or nobody). Undoing the
    /// registration removes it if it is still the one set.
    pub fn set_approver(&self, approver: Arc<dyn Approver>) -> Registration {
        *write(&self.inner.approver) = Some(approver.clone());
        let weak = Arc::downgrade(&self.inner);
        Registration::new(move || {
            if let Some(inner) = weak.upgrade() {
                let mut slot = write(&inner.approver);
                if slot.as_ref().is_some_and(|a| Arc::ptr_eq(a, &approver)) {
                    *slot = None;
                }
            }
        })
    }

    /// The `tools/execute` waterfall. Listeners (sandbox, permission, retry)
    /// may rewrite the call, wrap the result, or veto by returning their own
    /// result without calling `next`.
    pub fn on_execute(&self) -> &WaterfallHook<Execution, ToolResult> {
        &self.inner.on_execute
    }

    /// `tools/change`: emitted after a tool is registered or unregistered.
    pub fn on_change(&self) -> &EmitHook<()> {
        &self.inner.on_change
    }

    /// How `call` may be scheduled among the calls of its step: its tool's
    /// [`Tool::concurrency`] for the call's arguments; an unknown tool's call
    /// is [`Concurrency::Safe`] (it only produces its error result).
    pub fn concurrency(&self, call: &ToolCall) -> Concurrency {
        match self.inner.get(&call.name) {
            Some(tool) => tool.concurrency(&call.arguments),
            None => Concurrency::Safe,
        }
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
    pub fn execute(&self, call: &ToolCall, env: CallEnv) -> BoxFuture<'static, ToolResult> {
        if self.inner.pre_execute.is_empty() {
            return self.execute_allowed(call, env);
        }
        let pre = PreExecute {
            call: Arc::new(call.clone()),
            extensions: env.extensions.clone(),
        };
        let verdict = self
            .inner
            .pre_execute
            .call(pre, |_| async { Verdict::Allow });
        let this = ToolRegistry {
            inner: self.inner.clone(),
        };
        let call = call.clone();
        Box::pin(async move {
            let mut env = env;
            let refused = match verdict.await {
                Verdict::Allow => None,
                Verdict::Deny(reason) => Some(reason),
                Verdict::Ask(question) => {
                    let approver = env
                        .extensions
                        .get::<Arc<dyn Approver>>()
                        .cloned()
                        .or_else(|| read(&this.inner.approver).clone());
                    let approval = match approver {
                        Some(approver) => approver.decide(&call, &question, &env.extensions).await,
                        None => guard::Approval::Unavailable(guard::NO_APPROVER.to_string()),
                    };
                    if approval.allows() {
                        env.extensions.insert(guard::Approved { question });
                        None
                    } else {
                        Some(guard::refusal(&approval))
                    }
                }
            };
            match refused {
                None => this.execute_allowed(&call, env).await,
                Some(reason) => error_result(
                    call.call_id.clone(),
                    &ToolError::new(
                        codes::PERMISSION_DENIED,
                        format!("permission denied: {reason}"),
                    ),
                ),
            }
        })
    }

    /// [`ToolRegistry::execute`] after the guards allowed the call.
    fn execute_allowed(&self, call: &ToolCall, env: CallEnv) -> BoxFuture<'static, ToolResult> {
        let call_id = call.call_id.clone();
        let name = call.name.clone();
        // Weak: an in-flight call must not keep a dropped registry alive.
        let core_inner = Arc::downgrade(&self.inner);
        let core = move |(call, env): Execution| {
            let inner = core_inner.upgrade();
            async move {
                match inner {
                    Some(inner) => execute_core(inner, call, env).await,
                    None => unknown_tool(&call, &[]),
                }
            }
        };
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.inner.on_execute.call((call.clone(), env), core)
        }));
        Box::pin(async move {
            let outcome = match started {
                Ok(fut) => AssertUnwindSafe(fut).catch_unwind().await,
                Err(payload) => Err(payload),
            };
            outcome.unwrap_or_else(|payload| {
                let msg = panic_message(&*payload);
                tracing::error!(target: "dsh_tools", tool = %name, "tools/execute listener panicked: {msg}");
                error_result(
                    call_id,
                    &ToolError::new(
                        codes::LISTENER_PANICKED,
                        format!("a tools/execute listener panicked: {msg}"),
                    ),
                )
            })
        })
    }
}

async fn execute_core(inner: Arc<Inner>, call: ToolCall, env: CallEnv) -> ToolResult {
    let Some((_tool, runner)) = inner.entry(&call.name) else {
        let unlisted = read(&inner.unlisted).clone();
        let mut names = inner.names();
        names.retain(|n| !unlisted.contains(n));
        return unknown_tool(&call, &names);
    };
    drop(inner);
    let ToolCall {
        call_id,
        name,
        arguments,
    } = call;
    let CallEnv {
        finish,
        cancel,
        extensions,
    } = env;
    if cancel.is_cancelled() {
        return error_result(call_id, &aborted(&name));
    }
    let ctx = ToolContext {
        call_id: call_id.clone(),
        tool: name.clone(),
        finish,
        cancel: cancel.clone(),
        extensions,
    };
    let run = async move {
        let fut = std::panic::catch_unwind(AssertUnwindSafe(|| {
            runner.call(
                (arguments, ctx),
                |(_, ctx): (String, ToolContext)| async move {
                    // Reached only when the tool was unregistered after lookup.
                    Err(ToolError::new(
                        codes::UNKNOWN_TOOL,
                        format!(
                            "tool call {} failed: the tool was unregistered",
                            ctx.call_id
                        ),
                    ))
                },
            )
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
                Err(_) => return error_result(call_id, &aborted(&name)),
            }
        }
    };
    match outcome {
        Ok(Ok(output)) => success_result(call_id, output),
        Ok(Err(error)) => error_result(call_id, &error),
        Err(payload) => {
            let msg = panic_message(&*payload);
            tracing::error!(target: "dsh_tools", tool = %name, "tool panicked: {msg}");
            let error = ToolError::new(
                codes::TOOL_PANICKED,
                format!("tool \"{name}\" panicked: {msg}"),
            );
            error_result(call_id, &error)
        }
    }
}

/// How long a cancelled tool may take to return its own result.
const ABORT_GRACE: std::time::Duration = std::time::Duration::from_millis(250);

fn aborted(name: &str) -> ToolError {
    ToolError::aborted(format!("tool \"{name}\" was aborted"))
}

/// The `UNKNOWN_TOOL` result for `call` given the registered `names`: the
/// closest name when one is near, and the list of tools.
pub fn unknown_tool(call: &ToolCall, names: &[String]) -> ToolResult {
    let mut message = format!("unknown tool \"{}\"", call.name);
    if names.is_empty() {
        message.push_str("; no tools are available");
    } else {
        if let Some(best) =
            dsh_schema::suggest::closest(&call.name, names.iter().map(String::as_str))
        {
            message.push_str(&format!("; did you mean \"{best}\"?"));
        } else {
            message.push('.');
        }
        let list: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
        message.push_str(&format!(" Available tools: {}", list.join(", ")));
    }
    error_result(
        call.call_id.clone(),
        &ToolError::new(codes::UNKNOWN_TOOL, message),
    )
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    dsh_kernel::panic_text(payload).unwrap_or_else(|| "non-string panic payload".to_string())
}
