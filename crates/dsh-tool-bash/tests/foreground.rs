//! Foreground `bash` calls through the registry: the exact result texts of
//! the reference (§10.1), truncation with spill files, and lossy output.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use common::{ok_text, Harness};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_examples_are_byte_exact() {
    let h = Harness::new(|_| {});
    for (command, expected) in [
        ("echo hello", "hello\n"),
        ("true", "(no output)"),
        ("echo out; echo err >&2", "out\n[stderr]\nerr\n"),
        ("echo failing; exit 3", "failing\n[exit code: 3]"),
        ("printf x; exit 7", "x\n[exit code: 7]"),
        ("printf out; printf err >&2", "out\n[stderr]\nerr"),
        ("echo err >&2", "[stderr]\nerr\n"),
        ("exit 1", "(no output)\n[exit code: 1]"),
        ("kill -KILL $$", "(no output)\n[killed by signal: SIGKILL]"),
    ] {
        let result = h.bash(command).await;
        assert!(!result.is_error, "{command}: non-zero exits are not errors");
        assert_eq!(result.failure, None, "{command}");
        assert_eq!(ok_text(&result), expected, "{command}");
    }
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_kills_with_sigterm_and_reports_both_markers() {
    let h = Harness::new(|_| {});
    let result = h
        .call(
            "bash",
            json!({"command": "sleep 60", "description": "Sleep a minute", "timeoutMs": 100}),
        )
        .await;
    assert!(!result.is_error, "a timeout is not an error");
    assert_eq!(
        ok_text(&result),
        "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]"
    );
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_command_that_traps_term_and_exits_zero() {
    let h = Harness::new(|_| {});
    // The group's SIGTERM also ends the `sleep`; `wait` returns at once for
    // the trapped signal and the trap exits 0. (A foreground `sleep` would
    // make bash print "Terminated" on stderr.)
    let command = "trap 'echo trapped; exit 0' TERM; echo ready; sleep 60 & wait";
    let result = h
        .call(
            "bash",
            json!({"command": command, "description": "Trap TERM", "timeoutMs": 1000}),
        )
        .await;
    assert_eq!(
        ok_text(&result),
        "ready\ntrapped\n[timed out after 1000ms]",
        "timed out, exit code 0, no signal marker"
    );
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fractional_timeout_is_accepted_and_rounds_up() {
    let h = Harness::new(|_| {});
    let result = h
        .call(
            "bash",
            json!({"command": "sleep 60", "description": "Sleep", "timeoutMs": 0.5}),
        )
        .await;
    assert_eq!(
        ok_text(&result),
        "(no output)\n[timed out after 1ms]\n[killed by signal: SIGTERM]"
    );
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workdir_is_used_relative_to_the_executor_cwd() {
    let h = Harness::new(|_| {});
    std::fs::create_dir(h.tmp.path().join("sub")).expect("mkdir");
    let result = h
        .call(
            "bash",
            json!({"command": "pwd", "description": "Print dir", "workdir": "sub"}),
        )
        .await;
    let expected = format!(
        "{}\n",
        h.tmp
            .path()
            .join("sub")
            .canonicalize()
            .expect("canonical")
            .display()
    );
    assert_eq!(ok_text(&result), expected);
    let result = h
        .call(
            "bash",
            json!({"command": "pwd", "description": "Print dir", "workdir": "/"}),
        )
        .await;
    assert_eq!(ok_text(&result), "/\n");
    h.dispose().await;
}

/// Splits `<tail>\n[output truncated; full output: PATH]<rest>` into the tail,
/// the path and the rest.
fn split_truncated(text: &str) -> (&str, &str, &str) {
    const MARK: &str = "\n[output truncated; full output: ";
    let at = text
        .find(MARK)
        .unwrap_or_else(|| panic!("no marker in {text:?}"));
    let after = &text[at + MARK.len()..];
    let end = after.find(']').expect("marker closed");
    (&text[..at], &after[..end], &after[end + 1..])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_streams_name_spill_files_holding_every_byte() {
    const CAP: usize = 100;
    let h = Harness::new(|c| c.max_output_bytes = CAP);
    let full_out: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    let full_err: String = (1..=500).map(|i| format!("e{i}\n")).collect();

    let text = ok_text(&h.bash("seq 1 1000; seq -f e%g 1 500 >&2").await);
    let (out_tail, out_path, rest) = split_truncated(&text);
    assert_eq!(
        out_tail,
        &full_out[full_out.len() - CAP..],
        "stdout keeps its tail"
    );
    let rest = rest
        .strip_prefix("\n[stderr]\n")
        .unwrap_or_else(|| panic!("stderr section follows the stdout marker: {rest:?}"));
    let (err_tail, err_path, end) = split_truncated(rest);
    assert_eq!(end, "", "the stderr marker ends the text");
    assert_eq!(
        err_tail,
        &full_err[full_err.len() - CAP..],
        "stderr keeps its tail"
    );
    assert_ne!(out_path, err_path);
    assert_eq!(
        std::fs::read_to_string(out_path).expect("stdout spill"),
        full_out
    );
    assert_eq!(
        std::fs::read_to_string(err_path).expect("stderr spill"),
        full_err
    );
    assert!(
        std::path::Path::new(out_path).starts_with(h.tmp.path()),
        "spill files live under the configured spill dir"
    );

    // Exactly at the cap: not truncated, no marker.
    let exact = ok_text(
        &h.bash(&format!("head -c {CAP} /dev/zero | tr '\\0' a"))
            .await,
    );
    assert_eq!(exact, "a".repeat(CAP));

    // Disposal removes the spill files (keep_spill_files is false).
    h.dispose().await;
    assert!(!std::path::Path::new(out_path).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncation_with_exit_code_keeps_marker_order() {
    let h = Harness::new(|c| c.max_output_bytes = 10);
    let text = ok_text(&h.bash("seq 1 100; exit 4").await);
    let (tail, path, rest) = split_truncated(&text);
    assert_eq!(tail, "98\n99\n100\n", "the last 10 bytes, byte-exact");
    assert_eq!(rest, "\n[exit code: 4]");
    let full: String = (1..=100).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(path).expect("spill"), full);
    h.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_and_invalid_utf8_output_is_lossy_not_a_panic() {
    let h = Harness::new(|_| {});
    let text = ok_text(&h.bash(r"printf 'a\377\376b\000c\n'").await);
    assert_eq!(text, "a\u{FFFD}\u{FFFD}b\0c\n");
    // A truncated split in the middle of a multi-byte character.
    let text = ok_text(&h.bash("head -c 100000 /dev/urandom").await);
    assert!(text.contains("[output truncated; full output: "));
    let text = ok_text(
        &h.bash(r"printf '\xe2\x82'; printf '\xff' >&2; exit 2")
            .await,
    );
    assert_eq!(text, "\u{FFFD}\n[stderr]\n\u{FFFD}\n[exit code: 2]");
    h.dispose().await;
}

/// SIGKILLs the processes whose command line is `sleep <marker>`; returns
/// how many there were.
fn kill_sleeps(marker: &str) -> usize {
    let needle = format!("sleep\0{marker}\0");
    let pids: Vec<i32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.ends_with(needle.as_bytes()))
        })
        .collect();
    for pid in &pids {
        // A failure would only mean it is already gone.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    pids.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escaped_process_holding_the_output_is_left_and_reported() {
    let h = Harness::new(|_| {});
    let marker = format!("300.{}", std::process::id());
    let started = std::time::Instant::now();
    let result = h
        .call(
            "bash",
            json!({
                "command": format!("setsid sleep {marker} & echo started"),
                "description": "Start a detached sleeper",
                "timeoutMs": 120000,
            }),
        )
        .await;
    let took = started.elapsed();
    let left = kill_sleeps(&marker);
    assert!(took < std::time::Duration::from_secs(30), "took {took:?}");
    assert_eq!(
        ok_text(&result),
        "started\na background process still holds the output; it was left running"
    );
    assert_eq!(left, 1, "the escaped sleep was left running");
    h.dispose().await;
}
