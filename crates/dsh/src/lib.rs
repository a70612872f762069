//! dsh as a library: the composition root of the coding agent.
//!
//! [`resolve`] turns [`Settings`] (what a front end or an embedder chose),
//! the environment and `dsh.toml` into a [`Resolved`] configuration;
//! [`Stack::build`] wires the whole plugin stack from it (kernel, LLM
//! adapters, sessions, prompt, built-in tools, agents); [`Stack::start_mcp`]
//! adds MCP servers; [`Stack::create_agent`] starts the agent. The `dsh`
//! command line is one front end on this crate; nothing else wires the stack
//! by hand.
//!
//! ```no_run
//! use dsh::prelude::*;
//!
//! # async fn demo() -> Result<(), dsh::StackError> {
//! let resolved = dsh::resolve(&Settings { model: Some("echo".into()), ..Default::default() })?;
//! let stack = Stack::build(resolved)?;
//! let agent = stack.create_agent(None)?;
//! agent.agent().send(vec![ContentBlock::text("echo hi")], MessageSource::User).ok();
//! agent.dispose().await;
//! stack.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! Built-in tools live one per file under [`tools`]; the model-facing prompt
//! text lives in `.md` files under `src/prompt/`.

pub mod approval;
pub mod budget;
pub mod catalogue;
pub mod checkpoints;
pub mod commands;
pub mod config;
pub mod custom_commands;
pub mod echo_model;
pub mod escalation;
pub mod hooks;
pub mod plan;
pub mod prompt;
pub mod providers;
pub mod requests;
pub mod result_limit;
pub mod rules;
pub mod sandbox_layers;
mod settings;
mod stack;
pub mod subagents;
pub mod title;
pub mod tools;
pub mod trust;

pub use dsh_protocol::SandboxMode;
pub use settings::{diagnose, model_problem, resolve, Diagnosis, Resolved, Settings};
pub use stack::{
    feed_prompt, PreparedSession, Stack, StackOptions, MAIN_AGENT_ID, MODEL_CHANGE_EVENT,
    NEEDS_MODEL, SANDBOX_MODE_EVENT,
};
pub use trust::ProjectTrust;

use dsh_kernel::{DshError, ErrorCode};

/// Why the stack could not be set up or an agent not started.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    /// Unusable input: configuration, settings, session ids or files. A
    /// command line reports it as a usage error (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Anything else, with its code.
    #[error("{0}")]
    Failed(DshError),
}

impl ErrorCode for StackError {
    /// `Usage`: `INVALID_CONFIG`; `Failed`: the failure's own code.
    fn code(&self) -> &str {
        match self {
            StackError::Usage(_) => dsh_protocol::codes::INVALID_CONFIG,
            StackError::Failed(e) => e.code(),
        }
    }
}

impl<E: Into<DshError>> From<E> for StackError {
    fn from(e: E) -> Self {
        StackError::Failed(e.into())
    }
}

/// What an embedder needs most, in one import.
pub mod prelude {
    pub use crate::{resolve, Resolved, Settings, Stack, StackError, StackOptions};
    pub use dsh_agent::{Agent, AgentEvent, AgentOptions, AgentStatus};
    pub use dsh_agent_loop::{AgentHandle, LoopSetup};
    pub use dsh_kernel::{DshError, ErrorCode, Kernel, Plugin, Registration, Scope};
    pub use dsh_llm::{ContentBlock, Message, MessageSource, ModelRequest};
    pub use dsh_protocol::{
        AgentId, CallId, EventPayload, SessionEvent, SessionId, ToolCall, ToolResult,
    };
    pub use dsh_tools::{
        define_tool, ArgsTool, ContextSink, ToolArgs, ToolContext, ToolError, ToolRegistry,
    };
}
