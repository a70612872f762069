//! Real processes: spawning leaders, signalling and stopping their groups.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use dsh_process::{describe_exit, spawn_leader, stop, GroupMode, ProcessGroup, Signal};
use dsh_testkit::procs::{group_members, is_alive, pids};
use nix::unistd::{getpgid, getsid, Pid};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// Generous upper bound for anything that should happen "at once"; tests
/// share two cores with other builds.
const PROMPTLY: Duration = Duration::from_secs(5);

/// Spawns `sh -c script` as a group leader with stdout piped.
fn sh(script: &str, mode: GroupMode) -> (Child, ProcessGroup) {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    spawn_leader(&mut cmd, mode).expect("spawn sh")
}

/// The first line the child prints: the script signals readiness with it.
async fn first_line(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    tokio::time::timeout(PROMPTLY, BufReader::new(stdout).read_line(&mut line))
        .await
        .expect("the script printed its line in time")
        .expect("read stdout");
    line
}

/// Waits (bounded) until the group has no live member; `false` on timeout.
async fn group_empties(group: ProcessGroup) -> bool {
    let deadline = Instant::now() + PROMPTLY;
    while !group_members(group.as_raw()).is_empty() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

/// Waits (bounded) until `pid` runs the program `name`.
async fn wait_exec(pid: i32, name: &str) {
    let deadline = Instant::now() + PROMPTLY;
    loop {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim_end() == name {
            return;
        }
        assert!(Instant::now() < deadline, "{pid} did not exec {name}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A script whose leader waits on a background `sleep`; prints the sleep's pid.
const LEADER_AND_CHILD: &str = "sleep 30 & echo $!; wait";

#[tokio::test]
async fn stop_ends_the_leader_and_its_child_with_sigterm() {
    for mode in [GroupMode::NewSession, GroupMode::NewProcessGroup] {
        let (mut child, group) = sh(LEADER_AND_CHILD, mode);
        let leader = group.as_raw();
        let sleeper = pids(&first_line(&mut child).await)[0];
        assert!(is_alive(leader) && is_alive(sleeper), "{mode:?}");
        assert_eq!(group_members(leader).len(), 2, "{mode:?}");

        let started = Instant::now();
        let grace = Duration::from_secs(10);
        let status = stop(&mut child, group, grace).await.expect("wait");
        // SIGTERM was enough: no waiting for the grace, no SIGKILL.
        assert!(started.elapsed() < grace, "{mode:?}");
        assert_eq!(status.signal(), Some(Signal::SIGTERM as i32), "{mode:?}");
        assert!(!is_alive(leader), "{mode:?}");
        // The sleep got the group's SIGTERM too (it would live 30 s otherwise).
        assert!(
            group_empties(group).await,
            "{mode:?}: {:?}",
            group_members(leader)
        );
        assert!(!is_alive(sleeper), "{mode:?}");
    }
}

#[tokio::test]
async fn sigterm_ignoring_processes_are_sigkilled_after_the_grace() {
    // The ignored disposition is inherited by the sleep as well.
    let (mut child, group) = sh(
        "trap '' TERM; sleep 30 & echo $!; wait",
        GroupMode::NewSession,
    );
    let leader = group.as_raw();
    let sleeper = pids(&first_line(&mut child).await)[0];

    let grace = Duration::from_millis(300);
    let started = Instant::now();
    let status = tokio::time::timeout(PROMPTLY, stop(&mut child, group, grace))
        .await
        .expect("stop escalated to SIGKILL instead of hanging")
        .expect("wait");
    assert!(started.elapsed() >= grace, "SIGKILL came before the grace");
    assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
    assert_eq!(describe_exit(status), "was killed by signal 9");
    assert!(!is_alive(leader));
    assert!(group_empties(group).await, "{:?}", group_members(leader));
    assert!(!is_alive(sleeper));
}

#[tokio::test]
async fn stop_returns_the_status_the_leader_exits_with() {
    let (mut child, group) = sh(
        "trap 'exit 7' TERM; sleep 30 & echo $!; wait",
        GroupMode::NewProcessGroup,
    );
    let sleeper = pids(&first_line(&mut child).await)[0];
    // Until it has exec'd, the forked child still runs the shell's trap
    // handler, and a SIGTERM arriving then would be lost with the exec.
    wait_exec(sleeper, "sleep").await;
    let status = stop(&mut child, group, Duration::from_secs(10))
        .await
        .expect("wait");
    assert_eq!(status.code(), Some(7));
    assert_eq!(describe_exit(status), "exited with code 7");
    assert!(
        group_empties(group).await,
        "{:?}",
        group_members(group.as_raw())
    );
}

#[tokio::test]
async fn stop_of_a_leader_that_already_exited_returns_its_status() {
    let (mut child, group) = sh("exit 3", GroupMode::NewSession);
    // Exited (a zombie, not reaped yet): the group still "has members".
    let deadline = Instant::now() + PROMPTLY;
    while is_alive(group.as_raw()) {
        assert!(Instant::now() < deadline, "sh did not exit");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let status = stop(&mut child, group, Duration::from_secs(10))
        .await
        .expect("wait");
    assert_eq!(status.code(), Some(3));
    assert!(!group.has_members(), "reaped, so the group is gone");
}

#[tokio::test]
async fn modes_create_a_session_or_only_a_group() {
    let own_session = getsid(None).expect("getsid");

    let (mut child, group) = sh("echo ready; exec sleep 30", GroupMode::NewSession);
    first_line(&mut child).await;
    let pid = Pid::from_raw(group.as_raw());
    assert_eq!(getpgid(Some(pid)).expect("getpgid"), pid);
    assert_eq!(getsid(Some(pid)).expect("getsid"), pid);
    stop(&mut child, group, PROMPTLY).await.expect("wait");

    let (mut child, group) = sh("echo ready; exec sleep 30", GroupMode::NewProcessGroup);
    first_line(&mut child).await;
    let pid = Pid::from_raw(group.as_raw());
    assert_eq!(getpgid(Some(pid)).expect("getpgid"), pid);
    assert_eq!(getsid(Some(pid)).expect("getsid"), own_session);
    stop(&mut child, group, PROMPTLY).await.expect("wait");
}

#[tokio::test]
async fn signalling_a_group_that_is_gone_is_not_an_error() {
    let (mut child, group) = sh("echo ready; exec sleep 30", GroupMode::NewSession);
    first_line(&mut child).await;
    assert!(group.has_members());
    assert!(
        group.signal(Signal::SIGKILL),
        "a live group takes the signal"
    );
    let status = child.wait().await.expect("wait");
    assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));

    // Reaped: the group no longer exists.
    assert!(!group.has_members());
    assert!(!group.signal(Signal::SIGTERM));
    assert!(!group.signal(Signal::SIGKILL));
    let started = Instant::now();
    assert!(group.kill_and_wait_empty(PROMPTLY).await);
    assert!(started.elapsed() < PROMPTLY);
}

#[tokio::test]
async fn kill_and_wait_empty_kills_leftovers_of_an_exited_leader() {
    // The leader exits at once; the sleep stays in its group, detached from
    // the pipe.
    let (mut child, group) = sh(
        "sleep 30 </dev/null >/dev/null 2>&1 & echo $!",
        GroupMode::NewSession,
    );
    let sleeper = pids(&first_line(&mut child).await)[0];
    let status = child.wait().await.expect("wait");
    assert_eq!(status.code(), Some(0));
    assert!(group.has_members(), "the sleep is left in the group");
    assert!(is_alive(sleeper));

    assert!(group.kill_and_wait_empty(PROMPTLY).await);
    assert!(!group.has_members());
    assert!(!is_alive(sleeper));
}

#[test]
fn from_raw_rejects_ids_that_are_not_a_single_group() {
    assert_eq!(ProcessGroup::from_raw(0), None);
    assert_eq!(ProcessGroup::from_raw(-1), None);
    assert_eq!(
        ProcessGroup::from_raw(42).map(ProcessGroup::as_raw),
        Some(42)
    );
}

#[test]
fn describe_exit_texts() {
    assert_eq!(describe_exit(ExitStatus::from_raw(0)), "exited with code 0");
    assert_eq!(
        describe_exit(ExitStatus::from_raw(3 << 8)),
        "exited with code 3"
    );
    assert_eq!(
        describe_exit(ExitStatus::from_raw(Signal::SIGKILL as i32)),
        "was killed by signal 9"
    );
    assert_eq!(
        describe_exit(ExitStatus::from_raw(Signal::SIGTERM as i32)),
        "was killed by signal 15"
    );
    // A "stopped by SIGSTOP" wait status: neither a code nor a signal death.
    assert_eq!(describe_exit(ExitStatus::from_raw(0x137f)), "exited");
}
