//! Spawning `bash -c` in its own session and driving it to completion:
//! output pumps, timeout, abort, SIGTERM → SIGKILL escalation of the group.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use dsh_bash::{BashError, BashSpec};
use dsh_process::{spawn_leader_then, GroupMode, ProcessGroup, Signal};
use dsh_sandbox::SandboxPolicy;
use nix::errno::Errno;
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::output::{self, SharedStream};
use crate::spill::{SpillDir, StreamKind};

/// Variables that would make a non-interactive bash source a file.
const STARTUP_FILE_VARS: [&str; 2] = ["BASH_ENV", "ENV"];

/// Overrides that keep tools from paging, colouring or assuming a terminal.
const MODEL_FRIENDLY_ENV: [(&str, &str); 4] = [
    ("NO_COLOR", "1"),
    ("TERM", "dumb"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
];

/// Stand-in for "never" in timers that are armed later.
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// A spawned shell, not yet driven.
pub(crate) struct Spawned {
    child: Child,
    /// The process group (= session); the shell is its leader.
    group: ProcessGroup,
    stdout: ChildStdout,
    stderr: ChildStderr,
    /// The proxy serving the command's network namespace, for as long as
    /// the command runs (a domain list in `[sandbox] network`).
    served: Option<(dsh_netproxy::Served, dsh_netproxy::Proxy)>,
    /// The Unix socket connects the namespace's gate refused, and the
    /// sockets listed (`[sandbox] allow_unix_sockets`).
    unix_denials: Option<(dsh_sandbox::UnixDenials, Vec<std::path::PathBuf>)>,
}

/// Checks the workdir and spawns `bash -c <command>` as the leader of a new
/// session, with the scrubbed environment and piped stdout/stderr, confined
/// by `policy` (fails closed: [`BashError::SandboxUnavailable`] and nothing
/// runs when the kernel cannot enforce it).
pub(crate) fn spawn(
    spec: &BashSpec,
    passthrough: &[String],
    policy: &SandboxPolicy,
    proxy: Option<&dsh_netproxy::Proxy>,
) -> Result<Spawned, BashError> {
    check_workdir(&spec.workdir)?;
    let confinement = policy
        .prepare()
        .map_err(|e| BashError::SandboxUnavailable {
            message: e.to_string(),
        })?;
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.workdir)
        .env_clear()
        .envs(child_env(std::env::vars_os(), passthrough))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if confinement.network_namespace() && proxy.is_some() {
        cmd.envs(proxy_env());
    }
    // A new session: the shell (or, with the namespace layer, the keeper
    // that waits for it) leads its own process group (so the whole tree can
    // be signalled) and has no controlling terminal (so nothing can block
    // reading a password from /dev/tty). The confinement comes after the
    // session, in the child.
    let mut spawning =
        confinement
            .spawning(&spec.workdir, &cmd)
            .map_err(|e| BashError::SpawnFailed {
                reason: match e.kind() {
                    // The program itself, searched in the command's PATH.
                    io::ErrorKind::NotFound => format!("bash: {}", os_error_text(&e)),
                    _ => format!("sandbox: {}", os_error_text(&e)),
                },
            })?;
    let (mut child, group) = spawn_leader_then(&mut cmd, GroupMode::NewSession, |cmd| {
        confinement.apply_to(cmd, &spawning);
    })
    .map_err(|e| match e.kind() {
        io::ErrorKind::NotFound if !spec.workdir.is_dir() => BashError::BadWorkdir {
            path: spec.workdir.clone(),
            reason: os_error_text(&e),
        },
        _ => BashError::SpawnFailed {
            reason: format!("bash: {}", os_error_text(&e)),
        },
    })?;
    // The child has exec'd (or failed to): the ruleset may close now.
    drop(confinement);
    let unix_denials = spawning
        .unix_denials()
        .map(|d| (d, policy.allowed_unix_sockets().to_vec()));
    let served = match (spawning.proxy_listener(), proxy) {
        (Ok(Some(listener)), Some(proxy)) => match proxy.serve(listener) {
            Ok(served) => Some((served, proxy.clone())),
            Err(e) => {
                // The command runs with no way out; it says so itself
                // when it tries (connection refused).
                tracing::warn!("cannot serve the command's network proxy: {e}");
                None
            }
        },
        (Ok(_), _) => None,
        (Err(e), _) => {
            tracing::warn!("the command's proxy listener did not arrive: {e}");
            None
        }
    };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        // Unreachable with Stdio::piped(); handled rather than trusted.
        group.signal(Signal::SIGKILL);
        return Err(BashError::SpawnFailed {
            reason: "bash started without output pipes".to_string(),
        });
    };
    Ok(Spawned {
        child,
        group,
        stdout,
        stderr,
        served,
        unix_denials,
    })
}

/// The variables that point a command's clients at the proxy in its
/// network namespace (`127.0.0.1:3128`), upper and lower case; loopback
/// stays direct.
fn proxy_env() -> Vec<(&'static str, String)> {
    let http = format!("http://127.0.0.1:{}", dsh_sandbox::PROXY_PORT);
    let socks = format!("socks5h://127.0.0.1:{}", dsh_sandbox::PROXY_PORT);
    let no_proxy = "localhost,127.0.0.1,::1".to_string();
    vec![
        ("HTTP_PROXY", http.clone()),
        ("http_proxy", http.clone()),
        ("HTTPS_PROXY", http.clone()),
        ("https_proxy", http),
        ("ALL_PROXY", socks.clone()),
        ("all_proxy", socks),
        ("NO_PROXY", no_proxy.clone()),
        ("no_proxy", no_proxy),
    ]
}

/// The workdir must exist and be a directory; the error names the path and
/// the OS error (e.g. `ENOENT: No such file or directory (os error 2)`).
fn check_workdir(workdir: &Path) -> Result<(), BashError> {
    match std::fs::metadata(workdir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(BashError::BadWorkdir {
            path: workdir.to_path_buf(),
            reason: "ENOTDIR: not a directory".to_string(),
        }),
        Err(e) => Err(BashError::BadWorkdir {
            path: workdir.to_path_buf(),
            reason: os_error_text(&e),
        }),
    }
}

/// `ENOENT: No such file or directory (os error 2)`: the errno name first, so
/// messages can be matched on it.
fn os_error_text(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => format!("{:?}: {e}", Errno::from_raw(code)),
        None => e.to_string(),
    }
}

/// The child's environment: `host` minus secrets (except `passthrough`)
/// and bash startup-file variables, plus the model-friendly overrides.
pub(crate) fn child_env(
    host: impl IntoIterator<Item = (OsString, OsString)>,
    passthrough: &[String],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = dsh_process::env::scrub(host, passthrough)
        .into_iter()
        .filter(|(name, _)| !is_startup_file_var(name))
        .filter(|(name, _)| !MODEL_FRIENDLY_ENV.iter().any(|(k, _)| name == k))
        .collect();
    env.extend(
        MODEL_FRIENDLY_ENV
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    env
}

fn is_startup_file_var(name: &OsStr) -> bool {
    STARTUP_FILE_VARS.iter().any(|v| name == *v)
}

/// The name of signal number `sig`, e.g. `SIGTERM`.
pub(crate) fn signal_name(sig: i32) -> String {
    match Signal::try_from(sig) {
        Ok(s) => s.as_str().to_string(),
        Err(_) => format!("SIG{sig}"),
    }
}

/// What stops a driven process besides its own exit.
pub(crate) struct DriveControl {
    /// Foreground timeout; `None` = none.
    pub(crate) timeout: Option<Duration>,
    /// The caller's abort token: firing sets `aborted` and starts the kill.
    pub(crate) abort: Option<CancellationToken>,
    /// The executor's kill request (kill(), dispose, dropped run): starts the
    /// kill without setting `aborted`.
    pub(crate) kill: CancellationToken,
    /// Delay between SIGTERM and SIGKILL.
    pub(crate) grace: Duration,
    /// How long after the shell exited the pipes are still read while
    /// something else holds them open, before the call stops its own jobs
    /// (see `stop_jobs_after_exit`) or detaches from a process outside the
    /// group.
    pub(crate) escaped_output_grace: Duration,
    /// Foreground calls: once the shell exited and the grace passed, members
    /// of the group still holding the pipes (`sleep 300 &`) are killed
    /// (SIGTERM, SIGKILL after `grace`) rather than waited for. Background
    /// tasks wait for them (their output stays readable).
    pub(crate) stop_jobs_after_exit: bool,
}

/// How a driven process ended.
pub(crate) struct Outcome {
    /// The shell's exit status, or why waiting for it failed.
    pub(crate) status: io::Result<ExitStatus>,
    /// The timeout elapsed.
    pub(crate) timed_out: bool,
    /// The abort token fired.
    pub(crate) aborted: bool,
    /// The shell exited but a process outside its group still held the
    /// output pipes; the call stopped reading them and left it running.
    pub(crate) detached: bool,
    /// The executor's kill request fired (kill(), dispose, dropped run).
    pub(crate) killed: bool,
    /// The notes of connections the sandbox refused: Unix sockets the
    /// gate refused, one per path (`[sandbox: Unix socket <path> denied;
    /// allowed: …]`), then hosts the network proxy refused, one per host
    /// (`[sandbox: network to <host> denied; allowed: …]`).
    pub(crate) network_denials: Vec<String>,
}

impl Outcome {
    /// Exit code, `None` after a signal death or a failed wait.
    pub(crate) fn exit_code(&self) -> Option<i32> {
        self.status.as_ref().ok().and_then(ExitStatus::code)
    }

    /// Terminating signal name, e.g. `SIGTERM`.
    pub(crate) fn signal(&self) -> Option<String> {
        self.status
            .as_ref()
            .ok()
            .and_then(ExitStatus::signal)
            .map(signal_name)
    }
}

/// Where the escalation of a kill stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escalation {
    /// No kill requested.
    Idle,
    /// SIGTERM sent; SIGKILL follows after the grace.
    Terminating,
    /// SIGKILL sent; pipes still held open after another grace are abandoned.
    Killed,
    /// The grace after SIGKILL passed.
    GaveUp,
}

/// Drives `proc` to completion: the shell exited and both pipes reached EOF.
///
/// Timeout, abort and kill requests start the escalation (SIGTERM to the
/// group, SIGKILL after `grace`), once. So does, in a foreground call, a job
/// of the shell still holding a pipe `escaped_output_grace` after the shell
/// exited. Pipes held by a process outside the group (an empty group) are
/// abandoned at that point (`detached`), leaving the process running. If pipes are still held open a grace
/// after SIGKILL by a process that escaped the group (`setsid`), they are
/// abandoned so disposal cannot hang. On completion whatever is left in the
/// group (e.g. `cmd >/dev/null 2>&1 &`) is SIGKILLed and awaited (up to
/// `grace`): nothing outlives its call.
pub(crate) async fn drive(
    proc: Spawned,
    control: DriveControl,
    stdout: SharedStream,
    stderr: SharedStream,
    spill: Arc<SpillDir>,
) -> Outcome {
    let Spawned {
        mut child,
        group,
        stdout: out_pipe,
        stderr: err_pipe,
        served,
        unix_denials,
    } = proc;
    let out_pump = output::pump(out_pipe, stdout.clone(), spill.clone(), StreamKind::Stdout);
    let err_pump = output::pump(err_pipe, stderr.clone(), spill, StreamKind::Stderr);
    let wait = child.wait();
    let abort = async {
        match &control.abort {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    };
    let kill = control.kill.cancelled();
    let timeout = tokio::time::sleep(control.timeout.unwrap_or(FAR_FUTURE));
    let escalation_timer = tokio::time::sleep(FAR_FUTURE);
    // Armed when the shell exits with a pipe still open.
    let escaped_timer = tokio::time::sleep(FAR_FUTURE);
    tokio::pin!(
        out_pump,
        err_pump,
        wait,
        abort,
        kill,
        timeout,
        escalation_timer,
        escaped_timer
    );

    let mut status: Option<io::Result<ExitStatus>> = None;
    let (mut out_done, mut err_done) = (false, false);
    let (mut timed_out, mut aborted, mut kill_requested) = (false, false, false);
    let mut timeout_armed = control.timeout.is_some();
    let mut escalation = Escalation::Idle;
    let (mut escaped_armed, mut detached) = (false, false);

    let status = loop {
        let pipes_done = (out_done && err_done) || escalation == Escalation::GaveUp || detached;
        if pipes_done {
            if let Some(status) = status.take() {
                break status;
            }
        }
        let mut start_kill = false;
        // Some branch is always enabled here: without an exit status `wait`
        // is; with one, an unfinished pump is (or the loop broke above).
        tokio::select! {
            s = &mut wait, if status.is_none() => {
                status = Some(s);
                if !(out_done && err_done) {
                    escaped_armed = true;
                    escaped_timer.as_mut().reset(Instant::now() + control.escaped_output_grace);
                }
            }
            () = &mut escaped_timer, if escaped_armed => {
                escaped_armed = false;
                // Members of the group holding the pipes are ours: a
                // foreground call stops them, a background task waits for
                // them. An empty group means the holder left it (`setsid`, a
                // daemon).
                if !group.has_members() {
                    tracing::info!(
                        pgid = group.as_raw(),
                        "the shell exited but a process outside its group holds the output; detaching"
                    );
                    detached = true;
                } else {
                    if control.stop_jobs_after_exit && escalation == Escalation::Idle {
                        tracing::info!(
                            pgid = group.as_raw(),
                            "the shell exited but its background jobs hold the output; stopping them"
                        );
                        start_kill = true;
                    }
                    escaped_armed = true;
                    escaped_timer.as_mut().reset(Instant::now() + control.escaped_output_grace);
                }
            }
            () = &mut out_pump, if !out_done => out_done = true,
            () = &mut err_pump, if !err_done => err_done = true,
            () = &mut timeout, if timeout_armed => {
                timeout_armed = false;
                timed_out = true;
                start_kill = true;
            }
            () = &mut abort, if !aborted => {
                aborted = true;
                start_kill = true;
            }
            () = &mut kill, if !kill_requested => {
                kill_requested = true;
                start_kill = true;
            }
            () = &mut escalation_timer, if matches!(escalation, Escalation::Terminating | Escalation::Killed) => {
                if escalation == Escalation::Terminating {
                    group.signal(Signal::SIGKILL);
                    escalation = Escalation::Killed;
                    escalation_timer.as_mut().reset(Instant::now() + control.grace);
                } else {
                    if !(out_done && err_done) {
                        tracing::warn!(
                            pgid = group.as_raw(),
                            "bash output pipes still open after SIGKILL; a process outside the group holds them, giving up on them"
                        );
                    }
                    escalation = Escalation::GaveUp;
                }
            }
        }
        if start_kill && escalation == Escalation::Idle {
            group.signal(Signal::SIGTERM);
            escalation = Escalation::Terminating;
            escalation_timer
                .as_mut()
                .reset(Instant::now() + control.grace);
        }
    };
    // Leftovers that detached from the pipes but stayed in the group, and
    // members that closed the pipes but are still exiting. The shell is
    // reaped by now, so the group id could in theory be reused, but only by a
    // new session leader with that very pid in this instant.
    if !group.kill_and_wait_empty(control.grace).await {
        tracing::warn!(
            pgid = group.as_raw(),
            "bash process group still not empty after SIGKILL"
        );
    }
    if !(out_done && err_done) {
        // The shell is reaped and the group was SIGKILLed a grace ago, yet
        // the pipes are open: their holder left the group and keeps running,
        // as after a detach. (A SIGKILLed member may linger as a zombie until
        // init reaps it, so the group's emptiness is no test here.)
        if status.is_ok() {
            detached = true;
        }
        output::lock(&stdout).finish();
        output::lock(&stderr).finish();
    }
    let mut network_denials: Vec<String> = Vec::new();
    if let Some((denials, listed)) = unix_denials {
        for path in denials.take() {
            network_denials.push(dsh_sandbox::unix_denial_note(&path, &listed));
        }
    }
    if let Some((served, proxy)) = served {
        for denial in served.denials() {
            let note = denial.note(proxy.allowlist());
            if !network_denials.contains(&note) {
                network_denials.push(note);
            }
        }
    }
    Outcome {
        status,
        timed_out,
        aborted,
        detached,
        killed: kill_requested,
        network_denials,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_env_scrubs_and_overrides() {
        let host = [
            ("PATH", "/bin"),
            ("GITHUB_TOKEN", "t"),
            ("TERM", "xterm-256color"),
            ("BASH_ENV", "/tmp/rc"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = child_env(host, &[]);
        let get = |k: &str| {
            env.iter()
                .filter(|(n, _)| n == k)
                .map(|(_, v)| v.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(get("PATH"), ["/bin"]);
        assert!(get("GITHUB_TOKEN").is_empty());
        assert!(get("BASH_ENV").is_empty());
        assert_eq!(get("TERM"), ["dumb"]);
        assert_eq!(get("NO_COLOR"), ["1"]);
        assert_eq!(get("PAGER"), ["cat"]);
        assert_eq!(get("GIT_PAGER"), ["cat"]);
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(999), "SIG999");
    }
}
