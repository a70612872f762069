//! `dsh serve`: the controller API ([`dsh_controller`]) over the network
//! for one user, and the web app's server.
//!
//! - [`protocol`]: the JSON-RPC methods and notifications as Rust types;
//!   `docs/serve-protocol.json` is generated from them.
//! - [`server`]: a transport-agnostic [`Connection`] per client (bounded
//!   outbound queue; a client that stops reading is dropped, never a
//!   session).
//! - [`stdio`]: one client on stdin/stdout, newline-delimited.
//! - [`http`]: WebSocket and REST with a per-start bearer token, an
//!   `Origin` check and a strict Content-Security-Policy.

#![warn(missing_docs)]

pub mod http;
pub mod protocol;
pub mod server;
pub mod stdio;
pub mod web;

pub use http::{new_token, serve_http, Asset, HttpOptions};
pub use server::{Connection, Server};
pub use stdio::{serve_stdio, DEFAULT_MAX_LINE_BYTES};
