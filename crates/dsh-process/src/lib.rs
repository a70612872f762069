//! Process groups for child processes that must not outlive their owner.
//!
//! Start reading at [`spawn_leader`]: it spawns a [`tokio::process::Command`]
//! as the leader of a new session or a new process group ([`GroupMode`]) and
//! returns the child with its [`ProcessGroup`]. The group can then be
//! signalled as a whole ([`ProcessGroup::signal`]), probed
//! ([`ProcessGroup::has_members`]), emptied ([`ProcessGroup::kill_and_wait_empty`]),
//! or stopped together with its leader ([`stop`]: SIGTERM to the group, a
//! grace period, SIGKILL to the group, then the leader is reaped).
//! [`describe_exit`] puts an [`ExitStatus`] into words for messages.
//!
//! Unix only. Nothing here runs in the background: no task is spawned, and
//! dropping any value of this crate sends no signal.

#![deny(unsafe_code)]
#![warn(missing_docs)]

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::killpg;
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio::time::Instant;

pub mod env;
pub mod words;

/// The signal type taken by [`ProcessGroup::signal`] (re-exported from `nix`).
pub use nix::sys::signal::Signal;

/// Probe interval of [`ProcessGroup::kill_and_wait_empty`].
const EMPTY_POLL: Duration = Duration::from_millis(2);

/// How [`spawn_leader`] detaches the child from the caller.
///
/// Either way the child leads a new process group whose id is its pid, so
/// the group (the child and everything it starts that does not leave the
/// group) can be signalled at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupMode {
    /// `setsid(2)` in the child, between fork and exec: a new session and a
    /// new process group, both with the child's pid as id. The child has no
    /// controlling terminal, so nothing it starts can open `/dev/tty` (e.g.
    /// to prompt for a password) or receive terminal signals such as Ctrl-C.
    NewSession,
    /// `setpgid(0, 0)` in the child ([`Command::process_group`]`(0)`): a new
    /// process group in the caller's session. The group is not the
    /// terminal's foreground group, so a Ctrl-C meant for the caller does not
    /// reach it; the controlling terminal is kept.
    NewProcessGroup,
}

/// A process group, identified by its id (the pid of its leader).
///
/// A plain, copyable id: dropping it does nothing, and it does not keep the
/// group alive. The kernel does not reuse a pid as long as a process group
/// with that id has members, so signalling is safe until the group is empty;
/// after that (the leader reaped, no member left) the id could in theory be
/// taken by a new group leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcessGroup {
    pgid: Pid,
}

impl ProcessGroup {
    /// The group with id `pgid`; `None` unless `pgid > 0` (0 and negative
    /// values would address the caller's own group or every process).
    pub fn from_raw(pgid: i32) -> Option<ProcessGroup> {
        (pgid > 0).then(|| ProcessGroup {
            pgid: Pid::from_raw(pgid),
        })
    }

    /// The group id, always `> 0`.
    pub fn as_raw(self) -> i32 {
        self.pgid.as_raw()
    }

    /// Sends `signal` to every member of the group (`killpg(2)`).
    ///
    /// Returns whether it was delivered, i.e. whether the group had members
    /// (zombies, not yet reaped, count). Failures are not errors: `ESRCH`
    /// (the group is gone) is the expected one and yields `false` silently;
    /// any other (`EPERM`) is logged at debug level and yields `false`.
    pub fn signal(self, signal: Signal) -> bool {
        self.send(Some(signal))
    }

    /// Whether the group still has members (`killpg(pgid, 0)`), zombies that
    /// are not reaped yet included. `ESRCH` means no; so does any other
    /// failure, which is logged at debug level.
    pub fn has_members(self) -> bool {
        self.send(None)
    }

    /// SIGKILLs every member of the group, then waits until the group is
    /// empty, probing it every 2 ms, for at most `limit`.
    ///
    /// Meant for leftovers once the leader is reaped: members are not the
    /// caller's children, so there is nothing to wait on but the group
    /// itself, and they are gone once their parent (often init) reaps them.
    ///
    /// Returns `false` only when members were still there after `limit`;
    /// `true` when the group emptied, or had no members (or could not be
    /// signalled, see [`ProcessGroup::signal`]) in the first place. Dropping
    /// the future stops the waiting, not the kill, which has been sent.
    pub async fn kill_and_wait_empty(self, limit: Duration) -> bool {
        if !self.signal(Signal::SIGKILL) {
            return true;
        }
        let deadline = Instant::now() + limit;
        while self.has_members() {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(EMPTY_POLL).await;
        }
        true
    }

    fn send(self, signal: Option<Signal>) -> bool {
        match killpg(self.pgid, signal) {
            Ok(()) => true,
            Err(Errno::ESRCH) => false,
            Err(e) => {
                tracing::debug!(pgid = self.pgid.as_raw(), ?signal, "killpg failed: {e}");
                false
            }
        }
    }
}

/// Spawns `cmd` as the leader of a new session or process group (see
/// [`GroupMode`]) and returns the child with its group.
///
/// The mode is applied to `cmd` itself and stays on it: spawn a given
/// `Command` through this function once, and do not combine it with
/// [`Command::process_group`] (with [`GroupMode::NewSession`] the child
/// would already lead a group and `setsid` would fail). Everything else
/// (arguments, environment, pipes, `kill_on_drop`) is the caller's; note
/// that `kill_on_drop` kills only the leader, never the rest of the group.
///
/// # Errors
/// Those of [`Command::spawn`], which include a failing `setsid` in the
/// child. If the spawned child has no usable pid (not expected to happen),
/// it is killed and an [`io::ErrorKind::Other`] error is returned.
pub fn spawn_leader(cmd: &mut Command, mode: GroupMode) -> io::Result<(Child, ProcessGroup)> {
    spawn_leader_then(cmd, mode, |_| {})
}

/// [`spawn_leader`], calling `then` on `cmd` after the group is set up
/// and before the spawn: `pre_exec` steps `then` registers run in the
/// child after `setsid`/`setpgid`, so a step that forks (a sandbox's
/// namespace layer) leaves the group's leader in the group.
///
/// # Errors
/// Those of [`spawn_leader`].
pub fn spawn_leader_then(
    cmd: &mut Command,
    mode: GroupMode,
    then: impl FnOnce(&mut Command),
) -> io::Result<(Child, ProcessGroup)> {
    match mode {
        GroupMode::NewSession => setsid_before_exec(cmd),
        GroupMode::NewProcessGroup => {
            cmd.process_group(0);
        }
    }
    then(cmd);
    let mut child = cmd.spawn()?;
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(ProcessGroup::from_raw);
    match group {
        Some(group) => Ok((child, group)),
        None => {
            // Best effort: the child is unusable without its pid.
            let _ = child.start_kill();
            Err(io::Error::other("the spawned process has no pid"))
        }
    }
}

/// Makes the child of `cmd` call `setsid(2)` between fork and exec.
#[allow(unsafe_code)]
fn setsid_before_exec(cmd: &mut Command) {
    // SAFETY: `pre_exec` is unsafe because the closure runs in the forked
    // child, where only async-signal-safe operations are sound (another
    // thread of the parent may have held a lock at fork time). The closure
    // captures nothing and only calls setsid(2), which is async-signal-safe;
    // on failure it converts the errno into an `io::Error` holding the raw
    // OS code, which does not allocate. It touches no lock, no allocator and
    // no state shared with the parent.
    unsafe {
        cmd.pre_exec(|| nix::unistd::setsid().map(drop).map_err(io::Error::from));
    }
}

/// Stops `child`, the leader of `group`: SIGTERM to the group, then up to
/// `grace` waiting for the leader to exit; if it has not, SIGKILL to the
/// group and to the leader itself (in case it left its group), then waits
/// until the leader is reaped.
///
/// Returns the leader's exit status: the one it exited with, if it did so
/// within the grace (also when it had already exited before the call), or
/// its death by SIGKILL. Members other than the leader are signalled but not
/// awaited; one that survives the SIGTERM while the leader exits within the
/// grace is still running when this returns (empty the group with
/// [`ProcessGroup::kill_and_wait_empty`] or [`ProcessGroup::signal`]).
///
/// # Errors
/// Those of [`Child::wait`]. Signalling never fails (see
/// [`ProcessGroup::signal`]).
///
/// Dropping the future stops the waiting; signals already sent stay sent and
/// the leader may be left unreaped.
pub async fn stop(
    child: &mut Child,
    group: ProcessGroup,
    grace: Duration,
) -> io::Result<ExitStatus> {
    group.signal(Signal::SIGTERM);
    if let Ok(status) = tokio::time::timeout(grace, child.wait()).await {
        return status;
    }
    group.signal(Signal::SIGKILL);
    // Also covers a leader that left its group; fails only if it is reaped.
    let _ = child.start_kill();
    child.wait().await
}

/// Puts an exit status into words, for messages: `exited with code 3`,
/// `was killed by signal 9`, or `exited` for a status that is neither (a
/// stop or continue report).
pub fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with code {code}");
    }
    if let Some(signal) = status.signal() {
        return format!("was killed by signal {signal}");
    }
    "exited".to_string()
}
