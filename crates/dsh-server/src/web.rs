//! The browser app's files, built into the binary (no build step: plain
//! ES modules). `dsh web` serves them; `dsh serve` does not.

use crate::http::Asset;

/// Every file of the app, by the path it is served at.
pub const ASSETS: &[Asset] = &[Asset {
    path: "/",
    content_type: "text/html; charset=utf-8",
    body: include_bytes!("../web/index.html"),
}];
