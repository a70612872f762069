//! The namespace layer as a user of the bash tool sees it: a confined
//! command runs as the user's own uid in a process tree of its own (its
//! shell is pid 2 under `dsh-init`), its background jobs are handled as
//! without the layer, `/tmp` can be private to the session, device nodes
//! and terminals work, paths stay the user's and writes to the workspace
//! land on the host. With `namespaces = "off"` Landlock still confines.
//!
//! Every test first checks that the layer can be set up here; where it
//! cannot, it checks that `namespaces = "required"` refuses to run a
//! command (`SANDBOX_UNAVAILABLE`) and prints a SKIP line saying why. The
//! escape attempts the layer stops are in `sandbox_escape.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::Fixture;
use dsh_bash::{BashExecutor, BashRequest};
use dsh_bash_local::LocalBashConfig;
use dsh_sandbox::{NamespaceMode, SandboxMode};
use dsh_testkit::procs::live_with;

/// The confining modes, in the order the tests run them.
const CONFINING: [SandboxMode; 2] = [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly];

/// Whether Landlock and the namespace layer can be set up here (see
/// [`common::layer_here`]).
async fn layer_here() -> bool {
    common::layer_here(SandboxMode::WorkspaceWrite).await
}

/// An executor confining under `mode` with the layer required (a command
/// fails rather than run without it); `tweak` adjusts the rest.
fn layered(mode: SandboxMode, tweak: impl FnOnce(&mut LocalBashConfig)) -> Fixture {
    Fixture::new(|c| {
        c.sandbox = mode;
        c.namespaces = NamespaceMode::Required;
        tweak(c);
    })
}

/// A name no other test (or run) uses.
fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

fn sh_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// The effective uid and gid of this process (those of `/proc/self`).
fn own_ids() -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata("/proc/self").unwrap();
    (me.uid(), me.gid())
}

/// `sleep` processes a test starts with a marker duration
/// (`sleep <base>.<pid><n>`), found on the host by their command line and
/// SIGKILLed when dropped, so none outlives a failed test.
struct Sleepers {
    marker: String,
}

impl Sleepers {
    /// Markers `<base>.<this pid>` (`base` tells tests apart).
    fn new(base: u32) -> Self {
        Self {
            marker: format!("{base}.{}", std::process::id()),
        }
    }

    /// The `sleep` command of marker number `n`.
    fn sleep(&self, n: u32) -> String {
        format!("sleep {}{n}", self.marker)
    }

    /// Live processes running [`Sleepers::sleep`] of `n`.
    fn live(&self, n: u32) -> Vec<i32> {
        // The trailing space (a NUL in the command line) keeps `…1` from
        // matching `…12`.
        live_with("sleep", &format!("{} ", self.sleep(n)))
    }
}

impl Drop for Sleepers {
    fn drop(&mut self) {
        for pid in live_with("sleep", &format!("sleep {}", self.marker)) {
            // ESRCH would only mean it is gone already.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// A file on the host removed when dropped (if it exists).
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        // NotFound is the expected case when the test passed.
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The command runs as the caller's own uid and gid (mapped into its user
/// namespace), is pid 2 under the namespace's init, and sees only its own
/// processes: `/proc` and `ps` list `dsh-init`, its shell and `ps`, never
/// this test process.
#[tokio::test]
async fn a_command_sees_its_own_ids_and_only_its_own_processes() {
    if !layer_here().await {
        return;
    }
    let (uid, gid) = own_ids();
    let me = std::process::id();
    for mode in CONFINING {
        let f = layered(mode, |_| {});
        let r = f
            .run(
                "id -u; id -g; echo \"$$ $PPID\"; \
                 for p in /proc/[0-9]*; do echo \"${p#/proc/} $(cat $p/comm)\"; done; \
                 ps -e -o pid=,comm=; true",
            )
            .await;
        assert_eq!(r.exit_code, Some(0), "{mode}: {r:?}");
        let lines: Vec<&str> = r.stdout.text.lines().map(str::trim).collect();
        assert_eq!(
            lines[..5],
            [
                uid.to_string().as_str(),
                gid.to_string().as_str(),
                "2 1",
                "1 dsh-init",
                "2 bash"
            ],
            "{mode}: {r:?}"
        );
        let ps: Vec<(&str, &str)> = lines[5..]
            .iter()
            .map(|l| l.split_once(char::is_whitespace).unwrap())
            .map(|(pid, comm)| (pid, comm.trim()))
            .collect();
        assert_eq!(ps.len(), 3, "{mode}: {r:?}");
        assert_eq!(ps[..2], [("1", "dsh-init"), ("2", "bash")], "{mode}: {r:?}");
        assert_eq!(ps[2].1, "ps", "{mode}: {r:?}");
        assert!(
            !r.stdout.text.contains(&me.to_string()),
            "{mode}: the test process ({me}) is visible: {r:?}"
        );
        f.exec.dispose().await;
    }
}

/// A job a foreground command leaves in the background (`sleep 30 &`) is
/// stopped once the command ended, whether it holds the output (after the
/// grace) or not; nothing of it is left on the host.
#[tokio::test]
async fn a_background_job_is_stopped_after_its_foreground_command() {
    if !layer_here().await {
        return;
    }
    let sleepers = Sleepers::new(311);
    for (n, mode) in (0..).zip(CONFINING) {
        let f = layered(mode, |c| c.timeout_ms = 120_000);
        let holding = 2 * n;
        let quiet = 2 * n + 1;
        let r = f
            .run(&format!(
                "{} & {} >/dev/null 2>&1 & echo started",
                sleepers.sleep(holding),
                sleepers.sleep(quiet)
            ))
            .await;
        assert_eq!(
            (r.exit_code, r.stdout.text.as_str()),
            (Some(0), "started\n"),
            "{mode}: {r:?}"
        );
        assert!(!r.timed_out && !r.detached, "{mode}: {r:?}");
        for job in [holding, quiet] {
            assert_eq!(
                sleepers.live(job),
                Vec::<i32>::new(),
                "{mode}: job {job} left running"
            );
        }
        f.exec.dispose().await;
    }
}

/// A daemon (`setsid sleep … &`) is left running, as without the layer,
/// and the result says the output was detached. It runs inside the
/// command's PID namespace (two pids in `NSpid`); the host kills it.
#[tokio::test]
async fn a_setsid_daemon_is_left_running_and_the_result_says_detached() {
    if !layer_here().await {
        return;
    }
    let sleepers = Sleepers::new(312);
    for (n, mode) in (0..).zip(CONFINING) {
        let f = layered(mode, |c| c.timeout_ms = 120_000);
        let r = f
            .run(&format!("setsid {} & echo started", sleepers.sleep(n)))
            .await;
        assert_eq!(
            (r.exit_code, r.stdout.text.as_str()),
            (Some(0), "started\n"),
            "{mode}: {r:?}"
        );
        assert!(r.detached, "{mode}: {r:?}");
        let daemon = sleepers.live(n);
        assert_eq!(daemon.len(), 1, "{mode}: the daemon is not running");
        let status = std::fs::read_to_string(format!("/proc/{}/status", daemon[0])).unwrap();
        let nspid = status
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .unwrap();
        assert_eq!(
            nspid.split_whitespace().count(),
            2,
            "{mode}: not in a PID namespace of its own: NSpid {nspid}"
        );
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(daemon[0]),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        // The namespace's init reaps it.
        common::eventually_gone(daemon[0], &daemon).await;
        f.exec.dispose().await;
    }
}

/// A timeout kills the command's whole process tree: its jobs and their
/// children, nested shells included, are gone when the call returns.
#[tokio::test]
async fn a_timeout_kills_the_commands_process_tree() {
    if !layer_here().await {
        return;
    }
    let sleepers = Sleepers::new(313);
    for (n, mode) in (0..).zip(CONFINING) {
        let f = layered(mode, |c| c.timeout_ms = 500);
        let [a, b, c] = [3 * n, 3 * n + 1, 3 * n + 2];
        let r = f
            .run(&format!(
                "{} & bash -c '{} & {}'",
                sleepers.sleep(a),
                sleepers.sleep(b),
                sleepers.sleep(c)
            ))
            .await;
        assert!(r.timed_out, "{mode}: {r:?}");
        for job in [a, b, c] {
            assert_eq!(
                sleepers.live(job),
                Vec::<i32>::new(),
                "{mode}: sleep {job} survived the timeout"
            );
        }
        f.exec.dispose().await;
    }
}

/// With `private_tmp`, a command's `/tmp` is the session's own: a file it
/// writes there is not in the host's `/tmp`, a host file in `/tmp` is not
/// visible to it, and the executor's next command finds the file while
/// another executor does not. Without it (the control) the file lands in
/// the host's `/tmp`.
///
/// The workspace is outside `/tmp` here: see
/// `a_private_tmp_keeps_a_workspace_under_tmp`.
#[tokio::test]
async fn a_private_tmp_is_the_sessions_own() {
    if !layer_here().await {
        return;
    }
    let ws = dsh_testkit::outside_temp_dir(env!("CARGO_TARGET_TMPDIR"), "ns-private-tmp-");
    let host_file = Removed(PathBuf::from("/tmp").join(unique("dsh-ns-host")));
    std::fs::write(&host_file.0, "host\n").unwrap();
    let cmd_file = Removed(PathBuf::from("/tmp").join(unique("dsh-ns-cmd")));
    let (host, mine) = (sh_quote(&host_file.0), sh_quote(&cmd_file.0));
    let private = |mode| {
        layered(mode, |c| {
            c.cwd = Some(ws.path().to_path_buf());
            c.private_tmp = true;
        })
    };
    let f = private(SandboxMode::WorkspaceWrite);
    let r = f
        .run(&format!(
            "test -e {host} && echo host-file-visible; echo mine > {mine} && echo wrote"
        ))
        .await;
    assert_eq!(
        (r.exit_code, r.stdout.text.as_str()),
        (Some(0), "wrote\n"),
        "{r:?}"
    );
    assert!(
        !cmd_file.0.exists(),
        "the command's file is in the host's /tmp"
    );
    let r = f.run(&format!("cat {mine}")).await;
    assert_eq!(r.stdout.text, "mine\n", "the next command: {r:?}");
    let other = private(SandboxMode::WorkspaceWrite);
    let r = other.run(&format!("test -e {mine} || echo absent")).await;
    assert_eq!(r.stdout.text, "absent\n", "another executor: {r:?}");
    other.exec.dispose().await;
    f.exec.dispose().await;

    // The control: without private_tmp the same write lands on the host.
    let shared = layered(SandboxMode::WorkspaceWrite, |c| {
        c.cwd = Some(ws.path().to_path_buf());
    });
    let r = shared
        .run(&format!(
            "test -e {host} && echo host-file-visible; echo mine > {mine}"
        ))
        .await;
    assert_eq!(r.stdout.text, "host-file-visible\n", "{r:?}");
    assert_eq!(std::fs::read_to_string(&cmd_file.0).unwrap(), "mine\n");
    shared.exec.dispose().await;
}

/// With `private_tmp` and a workspace under `/tmp` (a project in
/// `/tmp/work`, or the temp dirs of these tests), the workspace must stay
/// visible and writable at its path.
#[tokio::test]
async fn a_private_tmp_keeps_a_workspace_under_tmp() {
    if !layer_here().await {
        return;
    }
    let f = layered(SandboxMode::WorkspaceWrite, |c| c.private_tmp = true);
    let ws = std::fs::canonicalize(f.tmp.path()).unwrap();
    let spec = f.exec.resolve(BashRequest::new("pwd; echo here > here"));
    let r = f.exec.run(spec).await.expect("the command runs");
    assert_eq!(r.stdout.text, format!("{}\n", ws.display()), "{r:?}");
    assert_eq!(std::fs::read_to_string(ws.join("here")).unwrap(), "here\n");
    f.exec.dispose().await;
}

/// `/dev/null`, `/dev/zero` and `/dev/urandom` work, and a pseudo-terminal
/// can be opened and used, under both modes.
#[tokio::test]
async fn device_nodes_and_terminals_work() {
    if !layer_here().await {
        return;
    }
    for mode in CONFINING {
        let f = layered(mode, |_| {});
        let r = f
            .run(
                "head -c 4 /dev/zero | od -An -tx1; head -c 16 /dev/urandom | wc -c; \
                 echo x > /dev/null && echo null-ok; \
                 python3 -c 'import os, pty; m, s = pty.openpty(); os.write(s, b\"hi\\n\"); \
                 print(os.ttyname(s).rsplit(\"/\", 1)[0], os.read(m, 16))'",
            )
            .await;
        assert_eq!(
            (r.exit_code, r.stdout.text.as_str()),
            (Some(0), " 00 00 00 00\n16\nnull-ok\n/dev/pts b'hi\\r\\n'\n"),
            "{mode}: {r:?}"
        );
        f.exec.dispose().await;
    }
}

/// Paths stay the user's: the command works in the host's workspace path,
/// and a refused write names the path the user wrote (`/etc/x`), says
/// `Read-only file system`, and is blamed on the sandbox.
#[tokio::test]
async fn errors_name_the_users_paths() {
    if !layer_here().await {
        return;
    }
    let etc = PathBuf::from("/etc").join(unique("dsh-ns"));
    for mode in CONFINING {
        let f = layered(mode, |_| {});
        let ws = std::fs::canonicalize(f.tmp.path()).unwrap();
        let r = f.run("pwd").await;
        assert_eq!(
            r.stdout.text,
            format!("{}\n", ws.display()),
            "{mode}: {r:?}"
        );
        let mut refused = vec![etc.clone()];
        if mode == SandboxMode::ReadOnly {
            refused.push(ws.join("new"));
        }
        for path in refused {
            let r = f.run(&format!("touch {}", sh_quote(&path))).await;
            assert!(!path.exists(), "{mode}: {} was created", path.display());
            assert_eq!(
                r.stderr.text,
                format!(
                    "touch: cannot touch '{}': Read-only file system\n",
                    path.display()
                ),
                "{mode}: {r:?}"
            );
            assert_eq!(
                r.sandbox_denial.as_deref(),
                Some(dsh_sandbox::denial_line(mode).as_str()),
                "{mode}: {r:?}"
            );
        }
        f.exec.dispose().await;
    }
}

/// Under `workspace-write` the workspace, the temp dir and `/dev/shm` are
/// writable, and what the command writes there is on the host.
#[tokio::test]
async fn writes_to_the_writable_roots_land_on_the_host() {
    if !layer_here().await {
        return;
    }
    let f = layered(SandboxMode::WorkspaceWrite, |_| {});
    let ws = f.tmp.path().to_path_buf();
    let tmp = Removed(std::env::temp_dir().join(unique("dsh-ns-tmp")));
    let shm = Removed(Path::new(dsh_sandbox::SHARED_MEMORY_DIR).join(unique("dsh-ns-shm")));
    let r = f
        .run(&format!(
            "set -e; echo hi > f; mkdir -p d/e; echo there > d/e/g; mv f moved; ln -s moved link; \
             chmod 700 d; echo t > {}; echo s > {}",
            sh_quote(&tmp.0),
            sh_quote(&shm.0)
        ))
        .await;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    assert_eq!(read(&ws.join("moved")), "hi\n");
    assert!(!ws.join("f").exists());
    assert_eq!(read(&ws.join("link")), "hi\n");
    assert_eq!(read(&ws.join("d/e/g")), "there\n");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(ws.join("d"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
    assert_eq!(read(&tmp.0), "t\n");
    assert_eq!(read(&shm.0), "s\n");
    f.exec.dispose().await;
}

/// With `namespaces = "off"` Landlock still confines (a write outside the
/// workspace fails and is blamed on the sandbox) but the command shares
/// the host's process tree: it sees this test process, and is not pid 2.
#[tokio::test]
async fn without_the_layer_landlock_still_confines_but_processes_are_shared() {
    let landlock = dsh_sandbox::probe();
    if !landlock.filesystem_full() {
        eprintln!("SKIP: Landlock cannot confine here ({landlock})");
        return;
    }
    let me = std::process::id().to_string();
    let outside = dsh_testkit::outside_temp_dir(env!("CARGO_TARGET_TMPDIR"), "ns-off-");
    let target = outside.path().join("written");
    for mode in CONFINING {
        let f = Fixture::host_pids(|c| c.sandbox = mode);
        let r = f.run(&format!("echo x > {}", sh_quote(&target))).await;
        assert!(!target.exists(), "{mode}: wrote outside: {r:?}");
        assert_ne!(r.exit_code, Some(0), "{mode}: {r:?}");
        assert_eq!(
            r.sandbox_denial.as_deref(),
            Some(dsh_sandbox::denial_line(mode).as_str()),
            "{mode}: {r:?}"
        );
        let r = f.run("echo $$; ps -e -o pid=").await;
        let pids: Vec<&str> = r.stdout.text.split_whitespace().collect();
        assert_ne!(pids.first(), Some(&"2"), "{mode}: {r:?}");
        assert!(pids[1..].contains(&me.as_str()), "{mode}: {r:?}");
        f.exec.dispose().await;
    }
}
