//! The dsh plugin kernel: services looked up by type, typed hooks with three
//! dispatch modes, and scopes that undo registrations.
//!
//! Start reading at [`Kernel`] (the service container every plugin receives)
//! and the three hook types: [`EmitHook`] (synchronous notification),
//! [`WaterfallHook`] (around-middleware with a `next` continuation) and
//! [`ParallelHook`] (listeners awaited together). Every registration returns a
//! [`Registration`]; a [`Scope`] collects them and undoes them in reverse order.
//!
//! The kernel holds no domain knowledge: it does not know what a tool, a model
//! or a session is. Hooks are owned by the services that declare them
//! (`tools.on_execute`, `session.on_event`, …).
//!
//! The crate also holds the harness-wide error shape, [`DshError`]: a stable
//! `code`, a message and an optional cause; the [`Plugin`] entry verb; and
//! the lock-poisoning policy ([`sync`]).

#![warn(missing_docs)]

mod error;
mod extensions;
mod hooks;
mod plugin;
mod registration;
mod services;
pub mod sync;

pub use error::{BoxError, DshError, ErrorCode};
pub use extensions::Extensions;
pub use hooks::{panic_text, BoxFuture, EmitHook, Next, ParallelHook, WaterfallHook};
pub use plugin::Plugin;
pub use registration::{Registration, Scope};
pub use services::{Kernel, KernelError};
