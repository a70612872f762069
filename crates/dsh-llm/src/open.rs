//! Support for open sets (re-exported from `dsh-protocol`).

pub use dsh_protocol::open::*;
