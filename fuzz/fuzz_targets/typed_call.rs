//! The typed-argument pipeline on raw model text: parse → validate →
//! deserialize never panics and never reports ARGS_DRIFT.
#![no_main]

use dsh_tools::{read_args, ErrorCode, ToolArgs};
use libfuzzer_sys::fuzz_target;
use serde::Deserialize;

#[allow(dead_code)]
#[derive(Deserialize, ToolArgs)]
struct Args {
    command: String,
    #[serde(rename = "timeoutMs")]
    timeout_ms: Option<f64>,
    depth: Option<u8>,
    ratio: Option<f32>,
    tags: Option<Vec<String>>,
    #[serde(default)]
    background: bool,
}

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = read_args::<Args>("fuzz", raw, None) {
        assert_ne!(e.code(), "ARGS_DRIFT", "{}", e.message());
    }
});
