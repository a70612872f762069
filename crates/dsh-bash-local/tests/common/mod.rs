//! Test support shared by the integration tests of dsh-bash-local.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_bash::{BashExecutor, BashRequest, RunResult, TaskInfo};
use dsh_bash_local::{LocalBashConfig, LocalBashExecutor};
use tempfile::TempDir;

/// Upper bound for anything a test waits on; hitting it is a failure.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// An executor whose spill directory lives in its own temp dir.
pub struct Fixture {
    pub exec: LocalBashExecutor,
    pub tmp: TempDir,
}

impl Fixture {
    /// Default config with a 200 ms kill grace; `tweak` adjusts it.
    pub fn new(tweak: impl FnOnce(&mut LocalBashConfig)) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut config = LocalBashConfig {
            kill_grace: Duration::from_millis(200),
            spill_dir: Some(tmp.path().to_path_buf()),
            cwd: Some(tmp.path().to_path_buf()),
            ..LocalBashConfig::default()
        };
        tweak(&mut config);
        Self {
            exec: LocalBashExecutor::new(config),
            tmp,
        }
    }

    /// Runs `command` in the foreground with the default timeout.
    pub async fn run(&self, command: &str) -> RunResult {
        self.run_req(BashRequest::new(command)).await
    }

    /// Resolves and runs `req`, failing the test on an executor error.
    pub async fn run_req(&self, req: BashRequest) -> RunResult {
        let spec = self.exec.resolve(req);
        tokio::time::timeout(DEADLINE, self.exec.run(spec))
            .await
            .expect("run finished before the deadline")
            .expect("run succeeded")
    }

    /// Starts `command` in the background.
    pub fn start(&self, command: &str) -> TaskInfo {
        let spec = self.exec.resolve(BashRequest::new(command));
        self.exec.start(spec).expect("start succeeded")
    }

    /// Waits for task `id` to complete.
    pub async fn wait(&self, id: &str) -> TaskInfo {
        tokio::time::timeout(DEADLINE, self.exec.wait(id))
            .await
            .expect("task finished before the deadline")
            .expect("task known")
    }

    /// A FIFO in the fixture's temp dir.
    pub fn fifo(&self, name: &str) -> PathBuf {
        let path = self.tmp.path().join(name);
        let status = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("mkfifo runs");
        assert!(status.success(), "mkfifo failed");
        path
    }
}

/// Blocks (off the runtime) until a writer has written to the FIFO and closed
/// it; returns what was written. This is how tests learn that a command is
/// running, without sleeping.
pub async fn read_fifo(path: &Path) -> String {
    let path = path.to_path_buf();
    let read = tokio::task::spawn_blocking(move || std::fs::read_to_string(path));
    tokio::time::timeout(DEADLINE, read)
        .await
        .expect("fifo written before the deadline")
        .expect("reader task")
        .expect("fifo readable")
}

/// Parses whitespace-separated pids.
pub fn pids(text: &str) -> Vec<i32> {
    text.split_whitespace()
        .map(|p| p.parse().expect("pid"))
        .collect()
}

/// `(state, pgrp)` of a live (possibly zombie) process, from /proc.
fn proc_stat(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is parenthesised and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Whether `pid` is still a running (non-zombie) process.
pub fn is_alive(pid: i32) -> bool {
    matches!(proc_stat(pid), Some((state, _)) if state != 'Z' && state != 'X')
}

/// Live (non-zombie) members of process group `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| matches!(proc_stat(*pid), Some((s, g)) if g == pgid && s != 'Z' && s != 'X'))
        .collect()
}

/// Asserts, right now, that every pid in `pids` and every member of group
/// `pgid` is gone (or a zombie waiting for init to reap it).
pub fn assert_gone(pgid: i32, pids: &[i32]) {
    let alive: Vec<i32> = pids.iter().copied().filter(|p| is_alive(*p)).collect();
    let members = group_members(pgid);
    assert!(
        alive.is_empty() && members.is_empty(),
        "processes survived: pids {alive:?}, group {pgid} members {members:?}"
    );
}

/// Waits until [`assert_gone`] holds, failing after [`DEADLINE`]. Only for
/// kills that cannot be awaited (a dropped future or executor); it probes
/// every few milliseconds.
pub async fn eventually_gone(pgid: i32, pids: &[i32]) {
    let start = std::time::Instant::now();
    while !(pids.iter().all(|p| !is_alive(*p)) && group_members(pgid).is_empty()) {
        if start.elapsed() >= DEADLINE {
            assert_gone(pgid, pids);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
