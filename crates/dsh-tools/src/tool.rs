//! The [`Tool`] trait and the three ways to define one: typed
//! ([`define_tool`]), declared at runtime from a spec
//! ([`define_tool_from_spec`]) and raw JSON Schema ([`raw_tool`]).

use std::future::Future;
use std::sync::Arc;

use dsh_kernel::{BoxFuture, DshError, Extensions};
use dsh_llm::{ContentBlock, FinishReason, MessageSource, ToolSchema};
use dsh_protocol::CallId;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::{codes, ToolArgsError, ToolError};
use dsh_schema::{
    near_miss_notes, normalize_integers, reads_as_is, to_json_schema, validate_args, ArgValue,
    SchemaSpec, ToolArgs,
};

/// A tool the model can call. Object safe: the registry holds `Arc<dyn Tool>`.
///
/// Most tools are built with [`define_tool`] or a [`ArgsTool`] struct;
/// implement the trait directly only for special cases. `call` must not
/// block; it may panic or never finish — the registry contains panics and
/// drops the future when the call is cancelled, so a tool must be
/// cancel-safe (clean up on drop).
pub trait Tool: Send + Sync + 'static {
    /// What the model is shown: name, description, JSON Schema parameters.
    fn schema(&self) -> &ToolSchema;

    /// Runs one call on the raw argument text the model produced (`""`
    /// means `{}`). Errors become `is_error` results `Error: <message>`.
    fn call(
        &self,
        arguments: &str,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;

    /// Who checks the arguments against the schema (for listings); typed
    /// tools by default.
    fn args_check(&self) -> ArgsCheck {
        ArgsCheck::Dsh
    }

    /// The arguments' spec when the tool has one (typed tools; raw tools
    /// whose schema is inside the enforced subset): what the registry
    /// compiles for provider strict mode. `None` by default.
    fn arg_spec(&self) -> Option<SchemaSpec> {
        None
    }

    /// Whether the call with these raw `arguments` may run alongside the
    /// other calls of its step ([`Concurrency::Safe`]: reads and searches)
    /// or must run alone ([`Concurrency::Exclusive`], the default: anything
    /// with a side effect). Must be cheap and must not fail: arguments that
    /// do not parse are harmless (the call fails validation) and may be
    /// called safe.
    fn concurrency(&self, arguments: &str) -> Concurrency {
        let _ = arguments;
        Concurrency::Exclusive
    }
}

/// How one tool call may be scheduled among the calls of its step (see
/// [`Tool::concurrency`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Concurrency {
    /// Runs alongside the neighbouring safe calls of its step.
    Safe,
    /// Waits for every call before it and blocks every call after it.
    Exclusive,
}

/// A tool's rule for [`Tool::concurrency`]: one answer for every call, or
/// a function of the raw argument text.
#[derive(Clone)]
pub enum ConcurrencyRule {
    /// The same for every call.
    Always(Concurrency),
    /// Decided per call from the raw argument text.
    PerCall(Arc<dyn Fn(&str) -> Concurrency + Send + Sync>),
}

impl ConcurrencyRule {
    /// The rule's answer for `arguments`.
    pub fn of(&self, arguments: &str) -> Concurrency {
        match self {
            ConcurrencyRule::Always(c) => *c,
            ConcurrencyRule::PerCall(f) => f(arguments),
        }
    }
}

impl Default for ConcurrencyRule {
    /// [`Concurrency::Exclusive`] for every call.
    fn default() -> Self {
        ConcurrencyRule::Always(Concurrency::Exclusive)
    }
}

impl std::fmt::Debug for ConcurrencyRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConcurrencyRule::Always(c) => write!(f, "Always({c:?})"),
            ConcurrencyRule::PerCall(_) => f.write_str("PerCall(..)"),
        }
    }
}

/// Who checks a tool's arguments before its body runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgsCheck {
    /// dsh, against the spec the model was shown (typed and spec tools).
    Dsh,
    /// dsh, against a raw schema inside the enforced subset (an MCP server
    /// with `validate_args = true`).
    Local,
    /// The tool's server (raw tools); the schema is inside the subset dsh
    /// could enforce.
    Server,
    /// The tool's server; the schema is outside the subset (the reason names
    /// the keyword and where), so dsh never validates it, even when asked.
    Unsupported(String),
}

impl std::fmt::Display for ArgsCheck {
    /// `dsh`, `local`, `server`, `unsupported: <reason>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArgsCheck::Dsh => f.write_str("dsh"),
            ArgsCheck::Local => f.write_str("local"),
            ArgsCheck::Server => f.write_str("server"),
            ArgsCheck::Unsupported(why) => write!(f, "unsupported: {why}"),
        }
    }
}

/// Where a tool sends context for its agent's model outside its own result
/// (a background task's completion notice): appended to the session now,
/// visible to the next model request, without starting a turn.
///
/// The agent loop puts its agent into every call's extensions as
/// `Arc<dyn ContextSink>`; tools reach it with [`ToolContext::sink`].
pub trait ContextSink: Send + Sync + 'static {
    /// Appends `content` from `source` as a context message.
    ///
    /// # Errors
    /// The sink's owner is gone (the agent was disposed): code
    /// `AGENT_DISPOSED`; nothing was appended.
    fn inject_context(
        &self,
        content: Vec<ContentBlock>,
        source: MessageSource,
    ) -> Result<(), DshError>;

    /// Delivers the notice that something the agent started in the
    /// background (a bash task, a sub-agent) has finished. While the agent
    /// works it is a context message (as [`ContextSink::inject_context`]);
    /// an idle agent is woken instead: the notice starts a turn, unless it
    /// has been woken too often since its user last spoke, and then the
    /// notice waits as a context message for the next turn. The default
    /// only injects.
    ///
    /// # Errors
    /// As [`ContextSink::inject_context`].
    fn deliver_notice(
        &self,
        content: Vec<ContentBlock>,
        source: MessageSource,
    ) -> Result<(), DshError> {
        self.inject_context(content, source)
    }
}

/// What a tool returns: content blocks, plus notes the registry appends as
/// extra text blocks (e.g. the near-miss notes of typed tools).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    /// The result content.
    pub content: Vec<ContentBlock>,
    /// Notes shown after the content, one text block each.
    pub notes: Vec<String>,
}

impl ToolOutput {
    /// Content without notes.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        ToolOutput {
            content,
            notes: Vec::new(),
        }
    }

    /// One text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)])
    }
}

impl From<Vec<ContentBlock>> for ToolOutput {
    fn from(content: Vec<ContentBlock>) -> Self {
        ToolOutput::new(content)
    }
}

/// What a tool body gets besides its arguments: the body's view of one call.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The tool-call id.
    pub call_id: CallId,
    /// The tool's name.
    pub tool: String,
    /// How the model step that produced the call ended (`MaxTokens`: the
    /// arguments may be cut off).
    pub finish: Option<FinishReason>,
    /// Cancelled when the call is aborted; long-running bodies select on it.
    pub cancel: CancellationToken,
    /// Context from the caller, looked up by type.
    pub extensions: Extensions,
}

impl ToolContext {
    /// The caller's `T` from the extensions (e.g. the agent handle).
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.extensions.get::<T>()
    }

    /// The agent's context sink, when the caller provided one.
    pub fn sink(&self) -> Option<&Arc<dyn ContextSink>> {
        self.extensions.get::<Arc<dyn ContextSink>>()
    }

    /// A context for `tool` with a fresh token and nothing else (tests,
    /// direct calls).
    pub fn detached(call_id: impl Into<CallId>, tool: impl Into<String>) -> Self {
        ToolContext {
            call_id: call_id.into(),
            tool: tool.into(),
            finish: None,
            cancel: CancellationToken::new(),
            extensions: Extensions::new(),
        }
    }
}

type CallFn =
    dyn Fn(&str, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync;

/// A tool whose arguments are validated against a [`SchemaSpec`] before its
/// body runs; built by [`define_tool`] or [`define_tool_from_spec`].
#[derive(Clone)]
pub struct TypedTool {
    schema: ToolSchema,
    spec: Arc<SchemaSpec>,
    output: Option<Arc<SchemaSpec>>,
    call: Arc<CallFn>,
    concurrency: ConcurrencyRule,
}

impl TypedTool {
    /// Marks every call of the tool [`Concurrency::Safe`] (a read-only
    /// tool); tools are exclusive unless they say so.
    pub fn concurrency_safe(self) -> Self {
        self.concurrency(ConcurrencyRule::Always(Concurrency::Safe))
    }

    /// Sets the tool's [`ConcurrencyRule`].
    pub fn concurrency(mut self, rule: ConcurrencyRule) -> Self {
        self.concurrency = rule;
        self
    }

    /// The spec the arguments are validated against.
    pub fn spec(&self) -> &SchemaSpec {
        &self.spec
    }

    /// The declared structured output, for tools built with
    /// [`define_tool_with_output`].
    pub fn output_spec(&self) -> Option<&SchemaSpec> {
        self.output.as_deref()
    }

    /// Sets the provider strict-mode flag of the schema.
    pub fn strict(mut self, strict: bool) -> Self {
        self.schema.strict = Some(strict);
        self
    }

    /// Wraps the tool for [`ToolRegistry::register`](crate::ToolRegistry::register).
    pub fn into_arc(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

impl std::fmt::Debug for TypedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedTool")
            .field("name", &self.schema.name)
            .finish()
    }
}

impl Tool for TypedTool {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    fn call(
        &self,
        arguments: &str,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        (self.call)(arguments, ctx)
    }

    fn arg_spec(&self) -> Option<SchemaSpec> {
        Some((*self.spec).clone())
    }

    fn concurrency(&self, arguments: &str) -> Concurrency {
        self.concurrency.of(arguments)
    }
}

/// Defines a typed tool: the spec comes from `A`'s [`ToolArgs`] derive.
///
/// At call time: the raw argument text is parsed (`""` means `{}`;
/// unparsable → `INVALID_JSON` saying where, and when the model hit its
/// token limit that the arguments were cut off) → validated
/// (`INVALID_ARGS`, `invalid arguments: v1; v2; …`; the body does not run) →
/// deserialized into `A` (a failure here is `ARGS_DRIFT`, a bug) → `body`.
/// Unknown keys that look like a declared one yield notes appended to the
/// result (also to error results).
pub fn define_tool<A, F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    body: F,
) -> TypedTool
where
    A: ToolArgs + DeserializeOwned + Send + 'static,
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ContentBlock>, ToolError>> + Send + 'static,
{
    typed_tool(
        name.into(),
        description.into(),
        A::schema_spec(),
        Keys::DropUndeclared,
        move |args: ValidArgs<'_>, ctx, notes| match args.read::<A>() {
            Err(e) => Box::pin(std::future::ready(Err(e.with_notes(notes)))),
            Ok(args) => finish_body(body(args, ctx), notes),
        },
    )
}

/// Defines a typed tool with a structured output: like [`define_tool`], but
/// the body returns an `O`, whose spec ([`ToolArgs`], usually derived) is
/// the tool's declared output. The value is serialized and validated
/// against that spec before it becomes content (one text block of compact
/// JSON). A mismatch is a bug in the tool: it is logged with its violations
/// (`tracing` error, target `dsh_tools`) and the model gets a neutral
/// `INVALID_TOOL_OUTPUT` error result, never the malformed value.
pub fn define_tool_with_output<A, O, F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    body: F,
) -> TypedTool
where
    A: ToolArgs + DeserializeOwned + Send + 'static,
    O: ToolArgs + Serialize + Send + 'static,
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    let output = Arc::new(O::schema_spec());
    let name = name.into();
    let checked = output.clone();
    let tool_name = name.clone();
    let mut tool = define_tool(name, description, move |args: A, ctx: ToolContext| {
        let fut = body(args, ctx);
        let spec = checked.clone();
        let tool_name = tool_name.clone();
        async move { checked_output(&tool_name, &spec, &fut.await?) }
    });
    tool.output = Some(output);
    tool
}

/// Serializes and validates a structured output (see
/// [`define_tool_with_output`]).
fn checked_output<O: Serialize>(
    tool: &str,
    spec: &SchemaSpec,
    output: &O,
) -> Result<Vec<ContentBlock>, ToolError> {
    let neutral = || {
        ToolError::new(
            codes::INVALID_TOOL_OUTPUT,
            format!(
                "internal error: tool \"{tool}\" produced a result that does not match its declared output; this is a bug in the tool, not in your call"
            ),
        )
    };
    let value = serde_json::to_value(output).map_err(|e| {
        tracing::error!(target: "dsh_tools", tool, error = %e, "tool output does not serialize (INVALID_TOOL_OUTPUT)");
        neutral()
    })?;
    let violations = validate_args(spec, &value);
    if !violations.is_empty() {
        tracing::error!(target: "dsh_tools", tool, violations = ?violations, "tool output does not match its declared schema (INVALID_TOOL_OUTPUT)");
        return Err(neutral());
    }
    Ok(vec![ContentBlock::text(value.to_string())])
}

/// A typed tool written as a struct: stateful tools (a task table, a cache,
/// a connection) keep their state in `self`. [`ArgsTool::into_tool`] gives it
/// the same pipeline as [`define_tool`]: the model is shown `Args`' spec, and
/// `run` sees only arguments that validated and deserialized.
///
/// ```
/// use std::sync::{Arc, atomic::{AtomicU64, Ordering}};
/// use dsh_tools::{ArgsTool, ToolArgs, ToolContext, ToolError};
/// use dsh_llm::ContentBlock;
///
/// /// Arguments of `count`.
/// #[derive(serde::Deserialize, ToolArgs)]
/// struct By { /// How much to add.
///     n: u64 }
///
/// #[derive(Default)]
/// struct Counter(AtomicU64);
///
/// impl ArgsTool for Counter {
///     type Args = By;
///     fn name(&self) -> &str { "count" }
///     fn description(&self) -> &str { "Adds n to a counter and returns the total" }
///     async fn run(self: Arc<Self>, args: By, _ctx: ToolContext) -> Result<Vec<ContentBlock>, ToolError> {
///         let total = self.0.fetch_add(args.n, Ordering::Relaxed) + args.n;
///         Ok(vec![ContentBlock::text(total.to_string())])
///     }
/// }
///
/// let tool = Counter::default().into_tool();
/// assert_eq!(tool.spec().len(), 1);
/// ```
pub trait ArgsTool: Send + Sync + Sized + 'static {
    /// The argument type; its [`ToolArgs`] spec is what the model is shown.
    type Args: ToolArgs + DeserializeOwned + Send + 'static;

    /// The tool's name.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// Runs one call with validated arguments. Errors become `is_error`
    /// results `Error: <message>`.
    fn run(
        self: Arc<Self>,
        args: Self::Args,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<Vec<ContentBlock>, ToolError>> + Send + 'static;

    /// The registrable tool.
    fn into_tool(self) -> TypedTool {
        let name = self.name().to_string();
        let description = self.description().to_string();
        let me = Arc::new(self);
        typed_tool(
            name,
            description,
            Self::Args::schema_spec(),
            Keys::DropUndeclared,
            move |args: ValidArgs<'_>, ctx, notes| match args.read::<Self::Args>() {
                Err(e) => Box::pin(std::future::ready(Err(e.with_notes(notes)))),
                Ok(args) => finish_body(me.clone().run(args, ctx), notes),
            },
        )
    }
}

/// Defines a tool declared at runtime (e.g. from configuration): the same
/// pipeline as [`define_tool`], but the body receives the validated JSON
/// object (integral floats at `integer` properties rewritten as integers).
///
/// The spec is used as given; call [`SchemaSpec::check`] first when it was
/// built in code rather than loaded.
pub fn define_tool_from_spec<F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    spec: SchemaSpec,
    body: F,
) -> TypedTool
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ContentBlock>, ToolError>> + Send + 'static,
{
    typed_tool(
        name.into(),
        description.into(),
        spec,
        Keys::Keep,
        move |args: ValidArgs<'_>, ctx, notes| finish_body(body(args.into_value(), ctx), notes),
    )
}

/// The pipeline both typed builders share: parse the raw text and validate it
/// against `spec` (errors never reach `run`), then hand the validated value,
/// the call's context and the near-miss notes to `run`.
/// What the body of a spec'd tool sees of keys the spec does not declare.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keys {
    /// A typed body: they are dropped, so a type that denies unknown fields
    /// reads exactly what validation accepted.
    DropUndeclared,
    /// A JSON body: the object as sent.
    Keep,
}

fn typed_tool<R>(
    name: String,
    description: String,
    spec: SchemaSpec,
    keys: Keys,
    run: R,
) -> TypedTool
where
    R: Fn(
            ValidArgs<'_>,
            ToolContext,
            Vec<String>,
        ) -> BoxFuture<'static, Result<ToolOutput, ToolError>>
        + Send
        + Sync
        + 'static,
{
    let spec = Arc::new(spec);
    let schema = ToolSchema {
        name: name.clone(),
        description,
        parameters: to_json_schema(&spec),
        strict: None,
    };
    let call_spec = spec.clone();
    let call = move |arguments: &str,
                     ctx: ToolContext|
          -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        match check_args(&call_spec, &name, arguments, ctx.finish.as_ref(), keys) {
            Err(e) => Box::pin(std::future::ready(Err(e))),
            Ok((args, notes)) => run(args, ctx, notes),
        }
    };
    TypedTool {
        schema,
        spec,
        output: None,
        call: Arc::new(call),
        concurrency: ConcurrencyRule::default(),
    }
}

/// A tool given as raw JSON Schema (MCP): arguments are parsed (`""` means
/// `{}`; unparsable → `INVALID_JSON`) but **not** validated; the body
/// receives whatever JSON value the model sent and validates it itself.
#[derive(Clone)]
pub struct RawTool {
    schema: ToolSchema,
    check: ArgsCheck,
    call: Arc<CallFn>,
    concurrency: ConcurrencyRule,
}

impl std::fmt::Debug for RawTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawTool")
            .field("name", &self.schema.name)
            .finish()
    }
}

impl RawTool {
    /// Records who checks the arguments (default [`ArgsCheck::Server`]).
    pub fn with_check(mut self, check: ArgsCheck) -> Self {
        self.check = check;
        self
    }

    /// Sets the tool's [`ConcurrencyRule`] (default: exclusive; an MCP
    /// tool its server marks read-only is safe).
    pub fn concurrency(mut self, rule: ConcurrencyRule) -> Self {
        self.concurrency = rule;
        self
    }

    /// Wraps the tool for [`ToolRegistry::register`](crate::ToolRegistry::register).
    pub fn into_arc(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

impl Tool for RawTool {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    fn call(
        &self,
        arguments: &str,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        (self.call)(arguments, ctx)
    }

    fn args_check(&self) -> ArgsCheck {
        self.check.clone()
    }

    fn concurrency(&self, arguments: &str) -> Concurrency {
        self.concurrency.of(arguments)
    }

    fn arg_spec(&self) -> Option<SchemaSpec> {
        dsh_schema::classify_json_schema(&self.schema.parameters)
            .ok()
            .map(|raw| raw.spec)
    }
}

/// Defines a raw tool (see [`RawTool`]).
pub fn raw_tool<F, Fut>(schema: ToolSchema, body: F) -> RawTool
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ContentBlock>, ToolError>> + Send + 'static,
{
    let call = move |arguments: &str,
                     ctx: ToolContext|
          -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        match parse_arguments(arguments, ctx.finish.as_ref()) {
            Err(e) => Box::pin(std::future::ready(Err(e))),
            Ok(value) => finish_body(body(value, ctx), Vec::new()),
        }
    };
    RawTool {
        schema,
        check: ArgsCheck::Server,
        call: Arc::new(call),
        concurrency: ConcurrencyRule::default(),
    }
}

fn finish_body<Fut>(
    fut: Fut,
    notes: Vec<String>,
) -> BoxFuture<'static, Result<ToolOutput, ToolError>>
where
    Fut: Future<Output = Result<Vec<ContentBlock>, ToolError>> + Send + 'static,
{
    Box::pin(async move {
        match fut.await {
            Ok(content) => Ok(ToolOutput { content, notes }),
            Err(e) => Err(e.with_notes(notes)),
        }
    })
}

/// Parses the raw argument text: `""` (or only whitespace) means `{}`.
///
/// # Errors
/// `INVALID_JSON` with the parser's message, line, column and byte offset;
/// when `finish` is `MaxTokens`, the message says the arguments were cut off
/// at byte N because the model hit its output token limit.
pub fn parse_arguments(raw: &str, finish: Option<&FinishReason>) -> Result<Value, ToolError> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(raw).map_err(|e| invalid_json(raw, &e, finish))
}

fn invalid_json(raw: &str, e: &serde_json::Error, finish: Option<&FinishReason>) -> ToolError {
    let offset = byte_offset(raw, e);
    let mut message = format!("arguments are not valid JSON: {e} (byte {offset})");
    if matches!(finish, Some(FinishReason::MaxTokens)) {
        message.push_str(&format!(
            "; the arguments were cut off at byte {} because the model hit its output token limit: make a shorter call (split the work into several smaller calls)",
            raw.len()
        ));
    } else {
        message.push_str("; send the arguments as one JSON object");
    }
    ToolError::new(codes::INVALID_JSON, message)
}

/// The 0-based byte offset of a serde_json error (its column counts bytes
/// from the line start, 1-based); the end of the text for end-of-input errors.
fn byte_offset(raw: &str, e: &serde_json::Error) -> usize {
    if e.classify() == serde_json::error::Category::Eof {
        return raw.len();
    }
    let line_start: usize = raw
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(str::len)
        .sum();
    (line_start + e.column().saturating_sub(1)).min(raw.len())
}

/// Parses and validates raw arguments against `spec`; returns the value
/// (integers normalised) and the near-miss notes for tool `tool`.
///
/// # Errors
/// `INVALID_JSON` (see [`parse_arguments`]) or `INVALID_ARGS` listing every
/// violation (with the notes attached).
pub fn prepare_args(
    spec: &SchemaSpec,
    tool: &str,
    raw: &str,
    finish: Option<&FinishReason>,
) -> Result<(Value, Vec<String>), ToolError> {
    let (args, notes) = check_args(spec, tool, raw, finish, Keys::Keep)?;
    Ok((args.into_value(), notes))
}

/// Arguments that passed validation, as a typed body reads them.
#[derive(Debug)]
pub enum ValidArgs<'r> {
    /// The argument text, which reads into the type as it stands (no key
    /// to drop, no integer to normalise, no repeated key).
    Text(&'r str),
    /// The value after the rewrites (integers normalised; for a typed body
    /// undeclared top-level keys dropped).
    Value(Value),
}

impl ValidArgs<'_> {
    /// Reads the arguments into `A`.
    ///
    /// # Errors
    /// `ARGS_DRIFT` (see [`deserialize_validated`]).
    pub fn read<A: DeserializeOwned>(self) -> Result<A, ToolError> {
        match self {
            ValidArgs::Text(text) => serde_json::from_str(text).map_err(|e| drift(&e)),
            ValidArgs::Value(value) => deserialize_validated(value),
        }
    }

    /// The arguments as a JSON value.
    pub fn into_value(self) -> Value {
        match self {
            // The text was parsed once already: it parses again.
            ValidArgs::Text(text) => serde_json::from_str(text).unwrap_or_default(),
            ValidArgs::Value(value) => value,
        }
    }
}

/// The typed call path's checks on raw text: parsed into a borrowed
/// [`ArgValue`] (`""` means `{}`), notes and violations from it, then
/// either the text itself ([`ValidArgs::Text`], when the body is typed and
/// [`dsh_schema::reads_as_is`] holds and no key repeats) or the value with
/// the rewrites applied: exactly what parsing into a `Value` and rewriting
/// it gives.
///
/// # Errors
/// As [`prepare_args`].
fn check_args<'r>(
    spec: &SchemaSpec,
    tool: &str,
    raw: &'r str,
    finish: Option<&FinishReason>,
    keys: Keys,
) -> Result<(ValidArgs<'r>, Vec<String>), ToolError> {
    let text = if raw.trim().is_empty() { "{}" } else { raw };
    let tree = ArgValue::parse(text).map_err(|e| invalid_json(raw, &e, finish))?;
    let notes = near_miss_notes(spec, &tree, tool);
    let violations = validate_args(spec, &tree);
    if !violations.is_empty() {
        return Err(ToolError::from(ToolArgsError::new(violations)).with_notes(notes));
    }
    if keys == Keys::DropUndeclared && !tree.had_duplicate_keys() && reads_as_is(spec, &tree) {
        return Ok((ValidArgs::Text(text), notes));
    }
    let mut value = tree.to_value();
    normalize_integers(spec, &mut value);
    if keys == Keys::DropUndeclared {
        dsh_schema::drop_undeclared_keys(spec, &mut value);
    }
    Ok((ValidArgs::Value(value), notes))
}

/// Deserializes a value that passed validation (call
/// [`normalize_integers`](crate::normalize_integers) first, as
/// [`prepare_args`] does).
///
/// # Errors
/// `ARGS_DRIFT`: validation and the type disagree — a bug in the type's
/// `ToolArgs` implementation or in dsh, never the model's fault.
pub fn deserialize_validated<A: DeserializeOwned>(value: Value) -> Result<A, ToolError> {
    serde_json::from_value(value).map_err(|e| drift(&e))
}

/// `ARGS_DRIFT` for a validated value that did not deserialize (logged).
fn drift(e: &serde_json::Error) -> ToolError {
    tracing::error!(
        target: "dsh_tools",
        error = %e,
        "arguments passed validation but did not deserialize (ARGS_DRIFT)"
    );
    ToolError::new(
        codes::ARGS_DRIFT,
        format!(
            "internal error: the arguments passed validation but could not be read ({e}); this is a bug in the tool's argument type, not in your call"
        ),
    )
}

/// The whole typed-argument pipeline on raw text, as [`define_tool`] runs it:
/// parse → validate → normalise → deserialize. Returns the arguments and the
/// near-miss notes.
///
/// # Errors
/// `INVALID_JSON`, `INVALID_ARGS` or `ARGS_DRIFT`.
pub fn read_args<A: ToolArgs + DeserializeOwned>(
    tool: &str,
    raw: &str,
    finish: Option<&FinishReason>,
) -> Result<(A, Vec<String>), ToolError> {
    let spec = A::schema_spec();
    let (args, notes) = check_args(&spec, tool, raw, finish, Keys::DropUndeclared)?;
    let args = args.read().map_err(|e| e.with_notes(notes.clone()))?;
    Ok((args, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets() {
        let e = serde_json::from_str::<Value>("{\"a\" 1}").unwrap_err();
        assert_eq!(byte_offset("{\"a\" 1}", &e), 5);
        let raw = "{\n  \"a\": x}";
        let e = serde_json::from_str::<Value>(raw).unwrap_err();
        assert_eq!(&raw[byte_offset(raw, &e)..byte_offset(raw, &e) + 1], "x");
        let e = serde_json::from_str::<Value>("{\"a\":").unwrap_err();
        assert_eq!(byte_offset("{\"a\":", &e), 5);
    }
}
