//! Running one hook command: `sh -c <command>` in its own session, the
//! event JSON on stdin, stdout and stderr captured (bounded), a timeout.
//!
//! The command gets exactly the environment it is given (the caller
//! scrubs secrets) and no terminal. When it ends, times out or the future
//! is dropped (the turn was aborted), its whole process group is killed:
//! a hook leaves nothing running.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use dsh_process::{GroupMode, ProcessGroup, Signal};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// Most bytes kept of a hook's stdout and of its stderr (the rest is read
/// and dropped).
pub const MAX_CAPTURE: usize = 256 * 1024;

/// How long output is still read after the command exited (a background
/// child may hold the pipes open).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// What one run of a hook command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// The exit code; `None` when it was killed by a signal, timed out or
    /// could not start.
    pub exit: Option<i32>,
    /// Its stdout (lossy UTF-8, at most [`MAX_CAPTURE`] bytes).
    pub stdout: String,
    /// Its stderr (lossy UTF-8, at most [`MAX_CAPTURE`] bytes).
    pub stderr: String,
    /// It ran past its timeout and was killed.
    pub timed_out: bool,
    /// It could not be started (the reason).
    pub spawn_error: Option<String>,
    /// How long it ran.
    pub duration: Duration,
}

/// Kills the group when dropped unless disarmed: a run abandoned midway
/// (timeout, abort) leaves no process behind.
struct GroupGuard(Option<ProcessGroup>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            group.signal(Signal::SIGKILL);
        }
    }
}

async fn read_bounded(mut from: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = MAX_CAPTURE.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// Runs `command` with `sh -c` in `cwd` with exactly `env`, writing `input`
/// to its stdin and closing it. Never fails: a command that cannot start
/// is a [`HookRun`] with `spawn_error`. Dropping the future kills the
/// command's process group.
pub async fn run_command(
    command: &str,
    input: &[u8],
    cwd: &Path,
    env: &[(OsString, OsString)],
    timeout: Duration,
) -> HookRun {
    let started = Instant::now();
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let (mut child, group) = match dsh_process::spawn_leader(&mut cmd, GroupMode::NewSession) {
        Ok(c) => c,
        Err(e) => {
            return HookRun {
                exit: None,
                stdout: String::new(),
                stderr: String::new(),
                timed_out: false,
                spawn_error: Some(e.to_string()),
                duration: started.elapsed(),
            }
        }
    };
    let _guard = GroupGuard(Some(group));
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let input = input.to_vec();
    let feed = async move {
        if let Some(mut stdin) = stdin {
            // A hook that does not read its stdin closes the pipe: fine.
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        }
    };
    let out = tokio::spawn(async move {
        match stdout {
            Some(s) => read_bounded(s).await,
            None => Vec::new(),
        }
    });
    let err = tokio::spawn(async move {
        match stderr {
            Some(s) => read_bounded(s).await,
            None => Vec::new(),
        }
    });
    let waited = tokio::time::timeout(timeout, async {
        let ((), status) = tokio::join!(feed, child.wait());
        status
    })
    .await;
    let (exit, timed_out) = match waited {
        Ok(Ok(status)) => (status.code(), false),
        Ok(Err(_)) => (None, false),
        Err(_) => {
            group.signal(Signal::SIGKILL);
            let _ = child.start_kill();
            let _ = child.wait().await;
            (None, true)
        }
    };
    // The hook is done: what it left running goes, which also closes the
    // pipes it held. Output of a process that left the group is not
    // waited for.
    group.signal(Signal::SIGKILL);
    let collect = |mut h: tokio::task::JoinHandle<Vec<u8>>| async move {
        let bytes = match tokio::time::timeout(DRAIN_AFTER_EXIT, &mut h).await {
            Ok(Ok(bytes)) => bytes,
            _ => {
                h.abort();
                Vec::new()
            }
        };
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let (stdout, stderr) = tokio::join!(collect(out), collect(err));
    HookRun {
        exit,
        stdout,
        stderr,
        timed_out,
        spawn_error: None,
        duration: started.elapsed(),
    }
}
