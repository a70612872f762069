//! Hundreds of megabytes of output stream through to the spill file without the
//! executor holding it in memory. Its own test binary so the peak RSS it
//! measures is this test's alone.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use common::Fixture;
use dsh_bash::BashExecutor;

/// Peak resident set size of this process in KiB (Linux `VmHWM`).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM line")
}

#[tokio::test]
async fn huge_output_keeps_rss_small() {
    // 8× the RSS bound asserted below, small enough to keep the suite fast.
    const SIZE: u64 = 256 << 20;
    let f = Fixture::new(|_| {});
    let before = peak_rss_kib();
    let r = f.run(&format!("head -c {SIZE} /dev/zero")).await;
    let grown_mib = (peak_rss_kib().saturating_sub(before)) / 1024;
    assert_eq!(r.exit_code, Some(0));
    assert!(r.stdout.truncated);
    assert_eq!(r.stdout.text.len(), 64_000);
    let spill = r.stdout.spill_path.clone().expect("spilled");
    assert_eq!(std::fs::metadata(&spill).expect("spill meta").len(), SIZE);
    eprintln!("peak RSS grew by {grown_mib} MiB");
    assert!(grown_mib < 32, "peak RSS grew by {grown_mib} MiB");
    f.exec.dispose().await;
    assert!(!spill.exists());
}
