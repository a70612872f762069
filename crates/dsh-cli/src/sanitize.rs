//! Untrusted text made safe for a terminal: the rules live in
//! [`dsh_tui::sanitize`], shared with the terminal UI.

pub(crate) use dsh_tui::sanitize::{json_visible, visible};
