//! The terminal face of dsh, a client of the controller's event stream
//! ([`dsh_controller`]):
//!
//! - [`text`]: styled lines, word wrapping, ANSI output;
//! - [`sanitize`]: untrusted text made safe for a terminal;
//! - [`markdown`] and [`highlight`]: the model's markdown rendered as it
//!   streams, code highlighted;
//! - [`transcript`]: the one renderer of a session's events into lines,
//!   used by the live chat, `dsh session show` and a resumed chat;
//! - [`status`]: the live status line (what the agent does, timings,
//!   tokens, context, model, mode);
//! - [`ask`]: the choice dialog of the model's `ask_user` questions;
//! - [`composer`] and [`app`]: the inline chat UI.

pub mod app;
pub mod ask;
pub mod composer;
pub mod highlight;
pub mod markdown;
pub mod sanitize;
pub mod status;
pub mod text;
pub mod transcript;
