//! The exact result texts of the reference's bash tools.

use dsh_bash::{CollectedOutput, RunResult, TaskRead};

fn stream_text(o: &CollectedOutput) -> String {
    if !o.truncated {
        return o.text.clone();
    }
    let path = o
        .spill_path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "(unavailable)".into());
    format!("{}\n[output truncated; full output: {path}]", o.text)
}

/// The `bash` tool's text for a foreground run: stdout, a `[stderr]` section,
/// then markers (`[timed out after Nms]`, then `[killed by signal: X]` or
/// `[exit code: N]`, the detached note, the sandbox line), with no trailing newline after the markers.
pub fn render_run_result(r: &RunResult) -> String {
    let out = stream_text(&r.stdout);
    let err = stream_text(&r.stderr);
    let mut body = out;
    if !err.is_empty() {
        if !body.is_empty() && !body.ends_with('\n') {
            body.push('\n');
        }
        body.push_str("[stderr]\n");
        body.push_str(&err);
    }
    if body.is_empty() {
        body = "(no output)".into();
    }
    let mut markers = Vec::new();
    if r.timed_out {
        markers.push(format!("[timed out after {}ms]", r.timeout_ms));
    }
    if let Some(sig) = &r.signal {
        markers.push(format!("[killed by signal: {sig}]"));
    } else if let Some(code) = r.exit_code.filter(|c| *c != 0) {
        markers.push(format!("[exit code: {code}]"));
    }
    if r.detached {
        markers.push(DETACHED_NOTE.to_string());
    }
    if let Some(line) = &r.sandbox_denial {
        markers.push(line.clone());
    }
    if markers.is_empty() {
        return body;
    }
    if !body.ends_with('\n') {
        body.push('\n');
    }
    body + &markers.join("\n")
}

/// The line a foreground result ends with when a process that left the
/// shell's process group still held the output after the shell exited.
pub const DETACHED_NOTE: &str = "a background process still holds the output; it was left running";

/// The `bash_output` tool's text: the new output (or `(no new output)`), a
/// lossy-read note with the spill paths, and the status line.
pub fn render_task_read(read: &TaskRead) -> String {
    let mut text = if read.delta.is_empty() {
        "(no new output)".to_string()
    } else {
        read.delta.clone()
    };
    if read.lossy {
        let paths: Vec<String> = [&read.stdout_spill_path, &read.stderr_spill_path]
            .into_iter()
            .flatten()
            .map(|p| p.display().to_string())
            .collect();
        text.push_str(&format!(
            "\n[some output was dropped from memory; full output: {}]",
            paths.join(", ")
        ));
    }
    text.push('\n');
    text.push_str(&dsh_bash::status_line(&read.task));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn out(text: &str) -> CollectedOutput {
        CollectedOutput {
            text: text.into(),
            truncated: false,
            spill_path: None,
        }
    }

    fn result(stdout: &str, stderr: &str, exit: Option<i32>, signal: Option<&str>) -> RunResult {
        RunResult {
            exit_code: exit,
            signal: signal.map(Into::into),
            timed_out: false,
            detached: false,
            aborted: false,
            timeout_ms: 120_000,
            stdout: out(stdout),
            stderr: out(stderr),
            sandbox_denial: None,
        }
    }

    #[test]
    fn the_sandbox_line_comes_after_the_exit_code() {
        let mut r = result(
            "",
            "touch: cannot touch '/etc/x': Permission denied\n",
            Some(1),
            None,
        );
        r.sandbox_denial = Some("[sandbox: write denied under workspace-write mode]".into());
        assert_eq!(
            render_run_result(&r),
            "[stderr]\ntouch: cannot touch '/etc/x': Permission denied\n[exit code: 1]\n[sandbox: write denied under workspace-write mode]"
        );
    }

    #[test]
    fn reference_examples() {
        assert_eq!(
            render_run_result(&result("hello\n", "", Some(0), None)),
            "hello\n"
        );
        assert_eq!(
            render_run_result(&result("", "", Some(0), None)),
            "(no output)"
        );
        assert_eq!(
            render_run_result(&result("out\n", "err\n", Some(0), None)),
            "out\n[stderr]\nerr\n"
        );
        assert_eq!(
            render_run_result(&result("failing\n", "", Some(3), None)),
            "failing\n[exit code: 3]"
        );
        assert_eq!(
            render_run_result(&result("x", "", Some(7), None)),
            "x\n[exit code: 7]"
        );
        assert_eq!(
            render_run_result(&result("", "", None, Some("SIGKILL"))),
            "(no output)\n[killed by signal: SIGKILL]"
        );
        assert_eq!(
            render_run_result(&result("out", "err", Some(0), None)),
            "out\n[stderr]\nerr"
        );
        let mut timed = result("", "", None, Some("SIGTERM"));
        timed.timed_out = true;
        timed.timeout_ms = 100;
        assert_eq!(
            render_run_result(&timed),
            "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]"
        );
        let mut detached = result("started\n", "", Some(0), None);
        detached.detached = true;
        assert_eq!(
            render_run_result(&detached),
            "started\na background process still holds the output; it was left running"
        );
        let mut timed_ok = result("", "", Some(0), None);
        timed_ok.timed_out = true;
        timed_ok.timeout_ms = 1000;
        assert_eq!(
            render_run_result(&timed_ok),
            "(no output)\n[timed out after 1000ms]"
        );
        let mut trunc = result("tail", "", Some(0), None);
        trunc.stdout.truncated = true;
        assert_eq!(
            render_run_result(&trunc),
            "tail\n[output truncated; full output: (unavailable)]"
        );
        trunc.stdout.spill_path = Some(PathBuf::from("/tmp/x.log"));
        trunc.stdout.text = "tail\n".into();
        trunc.stderr = out("e");
        assert_eq!(
            render_run_result(&trunc),
            "tail\n\n[output truncated; full output: /tmp/x.log]\n[stderr]\ne"
        );
    }

    #[test]
    fn task_reads() {
        use dsh_bash::{TaskInfo, TaskStatus};
        let task = |status, exit| TaskInfo {
            id: "bash-1".into(),
            command: "x".into(),
            status,
            exit_code: exit,
            signal: None,
        };
        let read = TaskRead {
            task: task(TaskStatus::Running, None),
            delta: "first\n".into(),
            lossy: false,
            stdout_spill_path: None,
            stderr_spill_path: None,
        };
        assert_eq!(render_task_read(&read), "first\n\n[status: running]");
        let read = TaskRead {
            task: task(TaskStatus::Completed, Some(0)),
            delta: String::new(),
            lossy: true,
            stdout_spill_path: Some("/a".into()),
            stderr_spill_path: Some("/b".into()),
        };
        assert_eq!(
            render_task_read(&read),
            "(no new output)\n[some output was dropped from memory; full output: /a, /b]\n[status: completed, exit code: 0]"
        );
    }
}
