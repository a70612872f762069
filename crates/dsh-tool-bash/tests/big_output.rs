//! 1 GiB of output through the `bash` tool: memory stays bounded and the
//! spill file holds every byte. Ignored by default (slow, 1 GiB of disk):
//!
//! `cargo test -p dsh-tool-bash --release --test big_output -- --ignored --nocapture`
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use std::io::Read;

use common::{ok_text, Harness};
use serde_json::json;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// Peak resident set size of this process (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("VmHWM value in kB");
    kib * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes 1 GiB; run manually with --release -- --ignored"]
async fn one_gib_of_output_keeps_rss_bounded_and_spills_everything() {
    let h = Harness::new(|_| {});
    let before = peak_rss();
    let started = std::time::Instant::now();
    let result = h
        .call(
            "bash",
            json!({
                "command": format!("head -c {GIB} /dev/zero"),
                "description": "Print 1 GiB of zero bytes",
                "timeoutMs": 600000,
            }),
        )
        .await;
    let elapsed = started.elapsed();
    let after = peak_rss();
    let text = ok_text(&result);
    const MARK: &str = "\n[output truncated; full output: ";
    let at = text.find(MARK).expect("truncation marker");
    let tail = &text[..at];
    assert_eq!(tail.len(), 64_000, "the default in-memory tail");
    assert!(tail.bytes().all(|b| b == 0));
    let path = text[at + MARK.len()..]
        .strip_suffix(']')
        .expect("marker ends the text");
    let size = std::fs::metadata(path).expect("spill file").len();
    assert_eq!(size, GIB, "the spill file holds every byte");
    let grew = after.saturating_sub(before);
    println!(
        "1 GiB through bash: {:.2?} ({:.0} MiB/s); peak RSS {} MiB -> {} MiB (+{:.1} MiB); spill file {size} bytes",
        elapsed,
        GIB as f64 / MIB as f64 / elapsed.as_secs_f64(),
        before / MIB,
        after / MIB,
        grew as f64 / MIB as f64,
    );
    assert!(grew < 64 * MIB, "peak RSS grew by {grew} bytes");

    // Every byte is the one written (checked with a small buffer).
    let mut file = std::fs::File::open(path).expect("open spill file");
    let mut buf = vec![0u8; MIB as usize];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf).expect("read spill file");
        if n == 0 {
            break;
        }
        assert!(
            buf[..n].iter().all(|b| *b == 0),
            "non-zero byte near offset {total}"
        );
        total += n as u64;
    }
    assert_eq!(total, GIB);
    h.dispose().await;
    assert!(!std::path::Path::new(path).exists(), "removed at dispose");
}
