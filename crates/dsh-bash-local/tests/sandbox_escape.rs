//! The escape suite: commands under `workspace-write` and `read-only` try to
//! write where their mode forbids, change metadata, signal, read or trace
//! processes outside them, reach sockets, change their mounts or make
//! namespaces, and each attempt must leave the target untouched. The world
//! is checked (the files on disk, the processes, the listeners), not the
//! tool's report. `danger-full-access` must allow every one of them.
//!
//! The "outside" directory lives under Cargo's per-crate temp dir
//! (`target/tmp`), which is neither the system temp dir nor the workspace.
//! A test skips itself with a message when Landlock is missing or when that
//! directory happens to be writable under the mode anyway (a checkout under
//! `/tmp`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Fixture;
use dsh_bash::{BashExecutor, BashRequest};
use dsh_kernel::ErrorCode;
use dsh_sandbox::{SandboxMode, SandboxPolicy};
use tempfile::TempDir;

/// A directory the confined command must not be able to write to, with a
/// victim file holding [`ORIGINAL`].
struct Outside {
    dir: TempDir,
}

const ORIGINAL: &str = "original\n";

impl Outside {
    fn new() -> Self {
        let dir = dsh_testkit::outside_temp_dir(env!("CARGO_TARGET_TMPDIR"), "escape-");
        std::fs::write(dir.path().join("victim"), ORIGINAL).unwrap();
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn victim(&self) -> String {
        std::fs::read_to_string(self.path("victim")).unwrap()
    }
}

/// Whether the tests can run here; prints why not.
fn landlock_here(mode: SandboxMode, ws: &Path, outside: &Outside) -> bool {
    let support = dsh_sandbox::probe();
    if !support.filesystem_full() {
        eprintln!("SKIP: Landlock cannot confine commands on this kernel ({support})");
        return false;
    }
    if SandboxPolicy::for_mode(mode, ws, None).is_writable(outside.dir.path()) {
        eprintln!(
            "SKIP: {} is writable under {mode} (the checkout is under the temp dir)",
            outside.dir.path().display()
        );
        return false;
    }
    true
}

/// The inode number of `path` (which must exist).
fn inode(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().ino()
}

fn fixture(mode: SandboxMode) -> Fixture {
    Fixture::new(|c| c.sandbox = mode)
}

fn sh_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// `$HOME` when it is outside the writable roots.
fn home_outside(ws: &Path) -> Option<PathBuf> {
    let home = PathBuf::from(std::env::var_os("HOME")?);
    let policy = SandboxPolicy::for_mode(SandboxMode::WorkspaceWrite, ws, None);
    (home.is_dir() && !policy.is_writable(&home)).then_some(home)
}

fn unique(name: &str) -> String {
    format!("{name}-{}-{}", std::process::id(), rand_suffix())
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[tokio::test]
async fn workspace_write_confines_every_escape_route() {
    let f = fixture(SandboxMode::WorkspaceWrite);
    let ws = f.tmp.path().to_path_buf();
    let out = Outside::new();
    if !landlock_here(SandboxMode::WorkspaceWrite, &ws, &out) {
        return;
    }
    let o = |n: &str| sh_quote(&out.path(n));

    // A plain write outside the workspace, with the recognizable line.
    let r = f.run(&format!("echo x > {}", o("plain"))).await;
    assert_ne!(r.exit_code, Some(0));
    assert!(!out.path("plain").exists());
    assert_eq!(
        r.sandbox_denial.as_deref(),
        Some("[sandbox: write denied under workspace-write mode]"),
        "{r:?}"
    );

    // Overwriting and appending to an existing file outside.
    f.run(&format!("echo x > {}", o("victim"))).await;
    f.run(&format!("echo x >> {}", o("victim"))).await;
    f.run(&format!("truncate -s 0 {}", o("victim"))).await;
    assert_eq!(out.victim(), ORIGINAL);

    // /etc.
    let etc = PathBuf::from("/etc").join(unique("dsh-escape"));
    let r = f.run(&format!("touch {}", sh_quote(&etc))).await;
    assert!(!etc.exists(), "{r:?}");
    assert!(r.sandbox_denial.is_some(), "{r:?}");

    // $HOME.
    if let Some(home) = home_outside(&ws) {
        let target = home.join(unique(".dsh-escape"));
        f.run(&format!("echo x > {}", sh_quote(&target))).await;
        assert!(!target.exists());
    } else {
        eprintln!("note: $HOME is unset or writable under workspace-write; its case is skipped");
    }

    // A symlink inside the workspace pointing outside.
    std::os::unix::fs::symlink(out.path("victim"), ws.join("link")).unwrap();
    f.run("echo x > link; echo y >> link").await;
    assert_eq!(out.victim(), ORIGINAL);
    std::os::unix::fs::symlink(out.dir.path(), ws.join("dirlink")).unwrap();
    f.run("echo x > dirlink/via-dir-link").await;
    assert!(!out.path("via-dir-link").exists());

    // A hard link made by the command, then written through.
    let r = f.run(&format!("ln {} hard", o("victim"))).await;
    assert_ne!(r.exit_code, Some(0), "{r:?}");
    assert!(!ws.join("hard").exists());
    f.run("echo x >> hard").await;
    assert_eq!(out.victim(), ORIGINAL);

    // `..` paths.
    let depth = ws.components().count();
    let dots = "../".repeat(depth + 2);
    let rel = format!(
        "{dots}{}",
        out.path("dotdot")
            .display()
            .to_string()
            .trim_start_matches('/')
    );
    f.run(&format!("echo x > '{rel}'")).await;
    assert!(!out.path("dotdot").exists());

    // /proc/self/root.
    let via_proc = format!("/proc/self/root{}", out.path("via-proc").display());
    f.run(&format!("echo x > '{via_proc}'")).await;
    assert!(!out.path("via-proc").exists());

    // Renaming a workspace file out of the workspace; moving the victim in.
    std::fs::write(ws.join("inside"), "mine\n").unwrap();
    let r = f.run(&format!("mv inside {}", o("moved"))).await;
    assert_ne!(r.exit_code, Some(0), "{r:?}");
    assert!(!out.path("moved").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("inside")).unwrap(),
        "mine\n"
    );
    // Under the namespace layer the workspace is another mount, so `mv`
    // falls back to copy-then-unlink: the copy (`stolen`) is a read, which
    // every mode allows (as `cp` would), and the unlink must fail. What
    // must hold is that the victim was not moved: the same file (inode) is
    // still at its path with its content.
    let victim_ino = inode(&out.path("victim"));
    f.run(&format!("mv {} stolen", o("victim"))).await;
    assert_eq!(out.victim(), ORIGINAL);
    assert_eq!(
        inode(&out.path("victim")),
        victim_ino,
        "the victim was moved"
    );

    // Removing outside.
    f.run(&format!("rm -f {}", o("victim"))).await;
    assert_eq!(out.victim(), ORIGINAL);

    // Late writers: a child in its own session that outlives the call (the
    // danger-full-access test shows the same route writes when unconfined),
    // and a background task.
    // The call waits until the child is in its own session (it marks that
    // inside the workspace), so the call's clean-up cannot win the race.
    f.run(&format!(
        "setsid -f bash -c ': > started; sleep 0.3; echo x > {}' >/dev/null 2>&1 < /dev/null; \
         while [ ! -e started ]; do sleep 0.01; done",
        out.path("late-setsid").display()
    ))
    .await;
    assert!(ws.join("started").exists());
    let task = f.start(&format!("sleep 0.3; echo x > {}", o("late-task")));
    f.wait(&task.id).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    for name in ["late-setsid", "late-task"] {
        assert!(!out.path(name).exists(), "{name} was written");
    }

    // What the mode allows still works: the workspace and the temp dir.
    let tmp_file = std::env::temp_dir().join(unique("dsh-sandbox-ok"));
    let r = f
        .run(&format!(
            "echo ok > here && echo ok > {} && echo ok > /dev/null",
            sh_quote(&tmp_file)
        ))
        .await;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert_eq!(r.sandbox_denial, None);
    assert_eq!(std::fs::read_to_string(ws.join("here")).unwrap(), "ok\n");
    assert_eq!(std::fs::read_to_string(&tmp_file).unwrap(), "ok\n");
    std::fs::remove_file(tmp_file).unwrap();
    f.exec.dispose().await;
}

#[tokio::test]
async fn read_only_refuses_every_write() {
    let f = fixture(SandboxMode::ReadOnly);
    let ws = f.tmp.path().to_path_buf();
    let out = Outside::new();
    if !landlock_here(SandboxMode::ReadOnly, &ws, &out) {
        return;
    }
    std::fs::write(ws.join("existing"), "keep\n").unwrap();
    let tmp_file = std::env::temp_dir().join(unique("dsh-ro"));
    for cmd in [
        "echo x > new".to_string(),
        "echo x >> existing".to_string(),
        "rm existing".to_string(),
        "mkdir d".to_string(),
        "mv existing renamed".to_string(),
        format!("echo x > {}", sh_quote(&tmp_file)),
        format!("echo x > {}", sh_quote(&out.path("victim"))),
    ] {
        let r = f.run(&cmd).await;
        assert_ne!(r.exit_code, Some(0), "`{cmd}` succeeded: {r:?}");
    }
    assert!(!ws.join("new").exists());
    assert!(!ws.join("d").exists());
    assert!(!ws.join("renamed").exists());
    assert!(!tmp_file.exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("existing")).unwrap(),
        "keep\n"
    );
    assert_eq!(out.victim(), ORIGINAL);

    let r = f.run("echo x > new").await;
    assert_eq!(
        r.sandbox_denial.as_deref(),
        Some("[sandbox: write denied under read-only mode]")
    );
    // Reading, /dev/null and output capture still work.
    let r = f
        .run(&format!(
            "cat existing {} > /dev/null && echo fine",
            sh_quote(&out.path("victim"))
        ))
        .await;
    assert_eq!((r.exit_code, r.stdout.text.as_str()), (Some(0), "fine\n"));
    f.exec.dispose().await;
}

#[tokio::test]
async fn danger_full_access_allows_each_route() {
    let f = fixture(SandboxMode::DangerFullAccess);
    let ws = f.tmp.path().to_path_buf();
    let out = Outside::new();
    let o = |n: &str| sh_quote(&out.path(n));
    std::os::unix::fs::symlink(out.path("victim"), ws.join("link")).unwrap();
    std::fs::write(ws.join("inside"), "mine\n").unwrap();
    let via_proc = format!("/proc/self/root{}", out.path("via-proc").display());
    let r = f
        .run(&format!(
            "set -e; echo x > {}; echo y >> link; ln {} hard; echo x > '{via_proc}'; mv inside {}",
            o("plain"),
            o("victim"),
            o("moved")
        ))
        .await;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert!(out.path("plain").exists());
    assert!(out.path("via-proc").exists());
    assert!(out.path("moved").exists());
    assert!(ws.join("hard").exists());
    assert_eq!(out.victim(), format!("{ORIGINAL}y\n"));
    f.run(&format!(
        "setsid -f bash -c ': > started; sleep 0.2; echo x > {}' >/dev/null 2>&1 </dev/null; \
         while [ ! -e started ]; do sleep 0.01; done",
        out.path("late").display()
    ))
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !out.path("late").exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(out.path("late").exists());
    f.exec.dispose().await;
}

#[tokio::test]
async fn the_mode_changes_for_new_commands_and_a_request_can_override_it() {
    let f = fixture(SandboxMode::WorkspaceWrite);
    let ws = f.tmp.path().to_path_buf();
    let out = Outside::new();
    if !landlock_here(SandboxMode::WorkspaceWrite, &ws, &out) {
        return;
    }
    let target = sh_quote(&out.path("escalated"));
    f.run(&format!("echo x > {target}")).await;
    assert!(!out.path("escalated").exists());
    // An approved escalation for one request.
    let r = f
        .run_req(
            BashRequest::new(format!("echo x > {target}"))
                .with_sandbox(SandboxMode::DangerFullAccess),
        )
        .await;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert!(out.path("escalated").exists());
    // The executor's mode narrowed for later commands.
    f.exec.set_sandbox_mode(SandboxMode::ReadOnly);
    assert_eq!(f.exec.sandbox_mode(), SandboxMode::ReadOnly);
    let r = f.run("echo x > here").await;
    assert_ne!(r.exit_code, Some(0));
    assert!(!ws.join("here").exists());
    f.exec.dispose().await;
}

#[tokio::test]
async fn a_command_failing_on_its_own_is_not_blamed_on_the_sandbox() {
    let f = fixture(SandboxMode::WorkspaceWrite);
    let ws = f.tmp.path().to_path_buf();
    let out = Outside::new();
    if !landlock_here(SandboxMode::WorkspaceWrite, &ws, &out) {
        return;
    }
    for cmd in [
        "false",
        "ls /no/such/dir",
        "echo 'Permission denied' >&2; exit 1",
        "chmod 000 locked && cat locked",
        "echo x > /etc/passwd-but-exit-0 2>/dev/null; true",
    ] {
        let r = f.run(cmd).await;
        assert_eq!(r.sandbox_denial, None, "`{cmd}` was blamed: {r:?}");
    }
    f.exec.dispose().await;
}

#[tokio::test]
async fn network_false_blocks_tcp_and_network_true_allows_it() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let _ = conn.write_all(b"hello\n");
            let mut sink = [0u8; 16];
            let _ = conn.read(&mut sink);
        }
    });
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && head -n1 <&3");

    let open = fixture(SandboxMode::WorkspaceWrite);
    let r = open.run(&connect).await;
    assert_eq!(
        (r.exit_code, r.stdout.text.as_str()),
        (Some(0), "hello\n"),
        "{r:?}"
    );
    open.exec.dispose().await;

    let support = dsh_sandbox::probe();
    let closed = Fixture::new(|c| c.network = false);
    if !support.network_rules() {
        // Fails closed: nothing runs.
        let spec = closed.exec.resolve(BashRequest::new("true"));
        let err = closed.exec.run(spec).await.unwrap_err();
        assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
        eprintln!("SKIP: Landlock network rules unavailable ({support}); checked fail-closed only");
        return;
    }
    let r = closed.run(&connect).await;
    assert_ne!(r.exit_code, Some(0), "{r:?}");
    assert_eq!(r.stdout.text, "");
    closed.exec.dispose().await;
}

/// Whether this kernel scopes confined commands (Landlock ABI 6+). When it
/// does not, asserts the state `dsh doctor` reports (and that prepared
/// confinements say so too), so the caller can check that the attempt
/// really goes through, instead of skipping.
fn scoping_here(ws: &Path) -> bool {
    let support = dsh_sandbox::probe();
    let scoped = dsh_sandbox::SandboxPolicy::for_mode(SandboxMode::WorkspaceWrite, ws, None)
        .prepare()
        .unwrap()
        .scoped();
    assert_eq!(scoped, support.scoping(), "{support}");
    if !scoped {
        assert!(
            support.scoping_summary().starts_with("not scoped: "),
            "{}",
            support.scoping_summary()
        );
        eprintln!(
            "note: Landlock does not scope here ({support}); checking that doctor's \
             \"not scoped\" is the truth"
        );
    }
    scoped
}

/// A `sleep` the test process starts outside any Landlock domain (killed
/// and reaped when dropped).
struct Bystander(std::process::Child);

impl Bystander {
    fn start() -> Self {
        Self::spawn(std::process::Command::new("sleep").arg("60"))
    }

    /// Starts `cmd` (a long-running program) as the bystander.
    fn spawn(cmd: &mut std::process::Command) -> Self {
        Self(cmd.spawn().unwrap())
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }

    /// Waits for its exit (bounded) and returns the signal that ended it.
    fn death_signal(&mut self) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        let deadline = std::time::Instant::now() + common::DEADLINE;
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status.signal();
            }
            assert!(std::time::Instant::now() < deadline, "still alive");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Landlock's scoping alone (the namespace layer off, [`Fixture::host_pids`]):
/// a confined command sees the processes outside it but is refused
/// (`EPERM`) when it signals one. With the layer the same signals find no
/// such process: see
/// `confined_commands_cannot_signal_processes_outside_their_namespace`.
///
/// One test (not one per mode) because the SIGTERM listener is process-wide:
/// the control's signal to this process must not reach a confined check.
#[tokio::test]
async fn confined_commands_cannot_signal_outside_their_domain() {
    use tokio::signal::unix::{signal, SignalKind};
    let me = std::process::id();
    // A handler instead of the default action: the control below signals
    // this very process, and a confined signal that got through must fail
    // the test rather than kill it. (A handler is reset at exec, so the
    // commands this binary spawns keep the default action.)
    let mut term = signal(SignalKind::terminate()).unwrap();
    let mut bystander = Bystander::start();
    let b = bystander.pid();
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let f = Fixture::host_pids(|c| c.sandbox = mode);
        let ws = f.tmp.path().to_path_buf();
        let out = Outside::new();
        if !landlock_here(mode, &ws, &out) {
            return;
        }
        if !scoping_here(&ws) {
            // Not scoped: the kill goes through, as doctor says.
            let r = f.run(&format!("kill -TERM {b}; echo rc=$?")).await;
            assert_eq!(r.stdout.text, "rc=0\n", "{r:?}");
            assert_eq!(bystander.death_signal(), Some(SIGTERM));
            f.exec.dispose().await;
            return;
        }
        // The spawner of the command is this test process ($PPID), as dsh
        // is in a session.
        let r = f
            .run(&format!(
                "echo ppid=$PPID; kill -TERM {b}; echo bystander=$?; kill -TERM {me}; echo me=$?; \
                 kill -0 $PPID; echo probe=$?"
            ))
            .await;
        assert_eq!(
            r.stdout.text,
            format!("ppid={me}\nbystander=1\nme=1\nprobe=1\n"),
            "{mode}: {r:?}"
        );
        assert!(
            r.stderr.text.contains("Operation not permitted"),
            "{mode}: {r:?}"
        );
        assert!(bystander.alive(), "{mode}: the bystander was killed");
        // A command that fails on the refused signal is told why; one that
        // fails to signal a process that does not exist is not blamed.
        let r = f.run(&format!("kill -TERM {b}")).await;
        assert_eq!(
            r.sandbox_denial.as_deref(),
            Some(dsh_sandbox::signal_denial_line(mode).as_str()),
            "{mode}: {r:?}"
        );
        let r = f.run("kill -TERM 2147483000").await;
        assert_ne!(r.exit_code, Some(0), "{mode}: {r:?}");
        assert_eq!(r.sandbox_denial, None, "{mode}: {r:?}");
        // Signals inside the command's own domain still work: bash job
        // control on its own children.
        let r = f
            .run("sleep 30 & kill -TERM $!; wait $!; echo status=$?")
            .await;
        assert_eq!(r.stdout.text, "status=143\n", "{mode}: {r:?}");
        f.exec.dispose().await;
    }
    assert!(
        tokio::time::timeout(Duration::from_millis(200), term.recv())
            .await
            .is_err(),
        "a confined command delivered SIGTERM to the test process"
    );
    assert!(bystander.alive());

    // The unconfined control: the same kills go through.
    let f = fixture(SandboxMode::DangerFullAccess);
    let r = f
        .run(&format!(
            "kill -TERM {b}; echo bystander=$?; kill -TERM {me}; echo me=$?"
        ))
        .await;
    assert_eq!(r.stdout.text, "bystander=0\nme=0\n", "{r:?}");
    assert_eq!(bystander.death_signal(), Some(SIGTERM));
    tokio::time::timeout(common::DEADLINE, term.recv())
        .await
        .expect("the control's SIGTERM reached the test process");
    f.exec.dispose().await;
}

/// SIGTERM's number on Linux.
const SIGTERM: i32 = 15;

/// A confined command cannot connect to an abstract Unix socket this
/// (unconfined) process listens on; the unconfined control can.
#[tokio::test]
async fn confined_commands_cannot_reach_outside_abstract_sockets() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let name = unique("dsh-escape-abstract");
    let listener =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
    listener.set_nonblocking(true).unwrap();
    let nothing_accepted = |listener: &UnixListener| matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    let connect = |name: &str| {
        format!(
            "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); \
             s.connect('\\0{name}'); print('connected')\""
        )
    };
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let f = fixture(mode);
        let ws = f.tmp.path().to_path_buf();
        let out = Outside::new();
        if !landlock_here(mode, &ws, &out) {
            return;
        }
        let r = f.run(&connect(&name)).await;
        assert_eq!(r.stdout.text, "", "{mode}: {r:?}");
        assert!(
            r.stderr.text.contains("PermissionError: [Errno 13]"),
            "{mode}: {r:?}"
        );
        assert!(nothing_accepted(&listener), "{mode}: a connection arrived");
        f.exec.dispose().await;
        // With Unix sockets listed, abstract names stay out of reach:
        // refused by the gate (it cannot connect to them on the command's
        // behalf without escaping Landlock's scoping), or by the filter
        // where the list cannot be enforced.
        let f = Fixture::new(|c| {
            c.sandbox = mode;
            c.allow_unix_sockets = vec![PathBuf::from("/nonexistent/dsh-test.sock")];
        });
        let r = f.run(&connect(&name)).await;
        assert_ne!(r.exit_code, Some(0), "{mode}: {r:?}");
        assert_eq!(r.stdout.text, "", "{mode}: {r:?}");
        assert!(
            r.stderr.text.contains("PermissionError: [Errno 13]"),
            "{mode}: {r:?}"
        );
        assert!(nothing_accepted(&listener), "{mode}: a connection arrived");
        f.exec.dispose().await;
        if !layer_here(mode).await {
            continue;
        }
        // In a network namespace of the command's own, every abstract
        // name is the command's: one it made is reachable through the
        // gate, and the outside one is not even there.
        let f = Fixture::new(|c| {
            c.sandbox = mode;
            c.network = false;
            c.allow_unix_sockets = vec![PathBuf::from("/nonexistent/dsh-test.sock")];
        });
        let inner = unique("dsh-inner");
        let r = f
            .run(&format!(
                "python3 -c \"import socket; l=socket.socket(socket.AF_UNIX); \
                 l.bind('\\0{inner}'); l.listen(1); s=socket.socket(socket.AF_UNIX); \
                 s.connect('\\0{inner}'); print('inner ok')\""
            ))
            .await;
        assert_eq!(r.stdout.text, "inner ok\n", "{mode}: {r:?}");
        let r = f.run(&connect(&name)).await;
        assert_ne!(r.exit_code, Some(0), "{mode}: {r:?}");
        assert!(nothing_accepted(&listener), "{mode}: a connection arrived");
        f.exec.dispose().await;
    }
    // The unconfined control connects.
    let f = fixture(SandboxMode::DangerFullAccess);
    let r = f.run(&connect(&name)).await;
    assert_eq!(
        (r.exit_code, r.stdout.text.as_str()),
        (Some(0), "connected\n"),
        "{r:?}"
    );
    assert!(!nothing_accepted(&listener), "the control's connection");
    f.exec.dispose().await;
}

/// A confined command cannot reach a Unix socket on the file system that
/// this (unconfined) process listens on outside the workspace: creating
/// the socket fails with `EACCES` (seccomp) and nothing arrives. A socket
/// pair still works; `allow_unix_sockets` and the unconfined control
/// connect.
#[tokio::test]
async fn confined_commands_cannot_reach_unix_sockets_on_the_file_system() {
    use std::os::unix::net::UnixListener;
    let out = Outside::new();
    let sock = out.path("s.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    listener.set_nonblocking(true).unwrap();
    let nothing_accepted = |listener: &UnixListener| matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    let connect = format!(
        "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); \
         s.connect('{}'); print('connected')\"",
        sock.display()
    );
    let pair =
        "python3 -c \"import socket; a,b=socket.socketpair(); a.send(b'x'); print(b.recv(1))\"";
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let f = fixture(mode);
        let ws = f.tmp.path().to_path_buf();
        if !landlock_here(mode, &ws, &out) {
            return;
        }
        let r = f.run(&connect).await;
        assert_ne!(r.exit_code, Some(0), "{mode}: {r:?}");
        assert_eq!(r.stdout.text, "", "{mode}: {r:?}");
        assert!(
            r.stderr
                .text
                .contains("PermissionError: [Errno 13] Permission denied"),
            "{mode}: {r:?}"
        );
        assert!(nothing_accepted(&listener), "{mode}: a connection arrived");
        // A background job is under the same filter.
        let task = f.start(&connect);
        let done = f.wait(&task.id).await;
        assert_ne!(done.exit_code, Some(0), "{mode}: {done:?}");
        assert!(nothing_accepted(&listener), "{mode}: a connection arrived");
        // A stream socket pair reaches nothing outside and stays allowed;
        // a datagram pair could `sendto` any datagram socket by path and
        // is refused.
        let r = f.run(pair).await;
        assert_eq!(
            (r.exit_code, r.stdout.text.as_str()),
            (Some(0), "b'x'\n"),
            "{mode}: {r:?}"
        );
        let r = f.run(DGRAM_PAIR).await;
        assert!(
            r.stderr.text.contains("PermissionError: [Errno 13]"),
            "{mode}: {r:?}"
        );
        f.exec.dispose().await;
    }
    // Without the namespace layer a list cannot be enforced: Unix sockets
    // stay denied.
    let f = Fixture::new(|c| {
        c.sandbox = SandboxMode::WorkspaceWrite;
        c.namespaces = dsh_sandbox::NamespaceMode::Off;
        c.allow_unix_sockets = vec![sock.clone()];
    });
    let r = f.run(&connect).await;
    assert!(
        r.stderr.text.contains("PermissionError: [Errno 13]"),
        "{r:?}"
    );
    assert!(nothing_accepted(&listener), "a connection arrived");
    f.exec.dispose().await;
    // The unconfined control connects.
    let f = fixture(SandboxMode::DangerFullAccess);
    let r = f.run(&connect).await;
    assert_eq!(
        (r.exit_code, r.stdout.text.as_str()),
        (Some(0), "connected\n"),
        "{r:?}"
    );
    assert!(!nothing_accepted(&listener), "the control's connection");
    f.exec.dispose().await;
}

/// A `socketpair(AF_UNIX, SOCK_DGRAM)` in Python.
const DGRAM_PAIR: &str = "python3 -c \"import socket; a,b=socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); print('pair')\"";

/// `python3` connecting a Unix stream socket to `path` (as written, so
/// relative paths resolve from the command's directory) and printing
/// `connected` or the error number.
fn unix_connect(path: &str) -> String {
    format!(
        "python3 -c \"import socket,sys; s=socket.socket(socket.AF_UNIX)\ntry:\n s.connect(sys.argv[1]); print('connected')\nexcept OSError as e:\n print('errno', e.errno)\" {}",
        quote(path)
    )
}

/// With `allow_unix_sockets` and the namespace layer, exactly the listed
/// sockets are reachable: by their path, through a symbolic link, by a
/// relative path, from a background job and from a process left running
/// after the command's shell exited; an unlisted socket outside (also
/// through a link in the workspace, and one made by the command itself)
/// is refused with `EACCES` and receives nothing; datagram Unix sockets
/// are refused. The listening side is this (unconfined) process.
#[tokio::test]
async fn a_list_reaches_exactly_the_listed_unix_sockets() {
    use std::os::unix::net::UnixListener;
    let out = Outside::new();
    let listed = out.path("listed.sock");
    let other = out.path("other.sock");
    let listening = |p: &Path| {
        let l = UnixListener::bind(p).unwrap();
        l.set_nonblocking(true).unwrap();
        l
    };
    let (listed_l, other_l) = (listening(&listed), listening(&other));
    let accepted = |l: &UnixListener| {
        let mut n = 0;
        while l.accept().is_ok() {
            n += 1;
        }
        n
    };
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        if !layer_here(mode).await {
            return;
        }
        let f = Fixture::new(|c| {
            c.sandbox = mode;
            c.allow_unix_sockets = vec![listed.clone()];
        });
        let ws = f.tmp.path().to_path_buf();
        std::os::unix::fs::symlink(&listed, ws.join("to-listed")).unwrap();
        std::os::unix::fs::symlink(&other, ws.join("to-other")).unwrap();
        let listed_s = listed.display().to_string();
        let other_s = other.display().to_string();
        let r = f.run(&unix_connect(&listed_s)).await;
        assert_eq!(r.stdout.text, "connected\n", "{mode}: {r:?}");
        assert_eq!(r.sandbox_denial, None, "{mode}: {r:?}");
        assert_eq!(accepted(&listed_l), 1, "{mode}: the listed socket");
        let r = f.run(&unix_connect("to-listed")).await;
        assert_eq!(r.stdout.text, "connected\n", "{mode} through a link: {r:?}");
        let r = f
            .run(&format!(
                "cd {} && {}",
                quote(&out.dir.path().display().to_string()),
                unix_connect("listed.sock")
            ))
            .await;
        assert_eq!(r.stdout.text, "connected\n", "{mode} relative: {r:?}");
        assert_eq!(accepted(&listed_l), 2, "{mode}");
        for path in [other_s.as_str(), "to-other"] {
            let r = f.run(&unix_connect(path)).await;
            assert_eq!(r.stdout.text, "errno 13\n", "{mode} {path}: {r:?}");
            // Told as a fact, naming the path as the command wrote it.
            assert_eq!(
                r.sandbox_denial,
                Some(format!(
                    "[sandbox: Unix socket {path} denied; allowed: {listed_s}]"
                )),
                "{mode}: {r:?}"
            );
        }
        assert_eq!(accepted(&other_l), 0, "{mode}: the unlisted socket");
        let r = f.run(DGRAM_PAIR).await;
        assert!(
            r.stderr.text.contains("PermissionError: [Errno 13]"),
            "{mode}: {r:?}"
        );
        let r = f
            .run("python3 -c \"import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\"")
            .await;
        assert!(
            r.stderr.text.contains("PermissionError: [Errno 13]"),
            "{mode}: {r:?}"
        );
        // TCP keeps working under the gate (made on the command's behalf).
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        let r = f
            .run(&format!(
                "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port})); print('tcp')\""
            ))
            .await;
        assert_eq!(r.stdout.text, "tcp\n", "{mode}: {r:?}");
        assert!(tcp.accept().is_ok());
        if mode == SandboxMode::WorkspaceWrite {
            // A socket the command makes in its workspace is not listed.
            let r = f
                .run(&format!(
                    "python3 -c \"import socket; l=socket.socket(socket.AF_UNIX); l.bind('own.sock'); l.listen(1)\" && {}",
                    unix_connect("own.sock")
                ))
                .await;
            assert_eq!(r.stdout.text, "errno 13\n", "{r:?}");
            // A background job, and a process that outlives its shell,
            // are answered too: the init serves as long as the namespace
            // has a process.
            let task = f.start(&unix_connect(&listed_s));
            let done = f.wait(&task.id).await;
            assert_eq!(done.exit_code, Some(0), "{done:?}");
            assert_eq!(accepted(&listed_l), 1, "the background job");
            std::fs::write(ws.join("late.sh"), unix_connect(&listed_s)).unwrap();
            let r = f
                .run("setsid sh -c 'sleep 0.5; sh late.sh > late.txt 2>&1' > /dev/null 2>&1 &")
                .await;
            assert_eq!(r.exit_code, Some(0), "{r:?}");
            let late = ws.join("late.txt");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while std::fs::read_to_string(&late).map_or(true, |t| t.is_empty())
                && std::time::Instant::now() < deadline
            {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            assert_eq!(std::fs::read_to_string(&late).unwrap(), "connected\n");
            assert_eq!(accepted(&listed_l), 1, "the late process");
        }
        f.exec.dispose().await;
    }
}

/// POSIX shared memory is writable under workspace-write, so Python's
/// multiprocessing (named semaphores in /dev/shm) works in a confined
/// command, while read-only still refuses it.
#[tokio::test]
async fn shared_memory_serves_multiprocessing_under_workspace_write() {
    if !Path::new(dsh_sandbox::SHARED_MEMORY_DIR).is_dir() {
        panic!("this machine has no /dev/shm; the shared-memory root cannot be tested");
    }
    let pool = "python3 -c 'import multiprocessing as m; print(m.Pool(2).map(abs, [-1, -2]))'";
    let f = fixture(SandboxMode::WorkspaceWrite);
    let out = Outside::new();
    if !landlock_here(SandboxMode::WorkspaceWrite, f.tmp.path(), &out) {
        return;
    }
    let r = f.run(pool).await;
    assert_eq!(r.stdout.text, "[1, 2]\n", "{r:?}");
    f.exec.dispose().await;
    let f = fixture(SandboxMode::ReadOnly);
    let r = f.run(pool).await;
    assert_ne!(r.exit_code, Some(0), "{r:?}");
    // Landlock alone refuses the semaphore with EACCES (PermissionError);
    // under the namespace layer /dev/shm is a read-only mount first, so the
    // kernel answers EROFS (an OSError) before Landlock is asked.
    assert!(
        r.stderr.text.contains("PermissionError")
            || r.stderr
                .text
                .contains("OSError: [Errno 30] Read-only file system"),
        "{r:?}"
    );
    f.exec.dispose().await;
}

// Escapes the namespace layer closes: metadata changes (which Landlock does
// not see), other processes (signals, /proc, ptrace) and the command's own
// mounts and namespaces. Each attempt is run under both confining modes
// and checked on the host; each has an unconfined control showing that
// the same attempt works when nothing confines it, so the check can fail.

/// The confining modes, in the order the tests run them.
const CONFINING: [SandboxMode; 2] = [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly];

/// Whether the namespace layer is set up on this machine (see
/// [`common::layer_here`]).
async fn layer_here(mode: SandboxMode) -> bool {
    common::layer_here(mode).await
}

/// `text` quoted for the shell.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// What the host sees of a file that a metadata change would move: mode,
/// owner, times (ctime moves on any change, a chown to the same owner
/// included) and every extended attribute, ACLs included, as `getfattr`
/// dumps them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Meta {
    mode: u32,
    owner: (u32, u32),
    mtime: (i64, i64),
    ctime: (i64, i64),
    xattrs: String,
}

impl Meta {
    fn of(path: &Path) -> Self {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(path).unwrap();
        let dump = std::process::Command::new("getfattr")
            .args(["--dump", "--match=-", "--encoding=hex", "--absolute-names"])
            .arg(path)
            .output()
            .expect("getfattr runs (apt-get install -y attr acl)");
        assert!(
            dump.status.success(),
            "getfattr {}: {}",
            path.display(),
            String::from_utf8_lossy(&dump.stderr)
        );
        Self {
            mode: m.mode(),
            owner: (m.uid(), m.gid()),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            xattrs: String::from_utf8_lossy(&dump.stdout).into_owned(),
        }
    }
}

/// A metadata change a command attempts on a file: the command, given the
/// quoted path, and how the host tells, from before and after, that it
/// happened.
struct MetaChange {
    name: &'static str,
    command: fn(&str) -> String,
    happened: fn(&Meta, &Meta) -> bool,
}

fn metadata_changes() -> [MetaChange; 5] {
    [
        MetaChange {
            name: "chmod",
            command: |p| format!("chmod 600 {p}"),
            happened: |before, after| before.mode != after.mode,
        },
        // Giving the file to its own owner: allowed to anyone who owns it,
        // and moves nothing but ctime.
        MetaChange {
            name: "chown",
            command: |p| format!("chown --reference={p} {p}"),
            happened: |before, after| before.ctime != after.ctime,
        },
        MetaChange {
            name: "touch",
            command: |p| format!("touch -d 2001-01-01 {p}"),
            happened: |before, after| before.mtime != after.mtime,
        },
        MetaChange {
            name: "setfattr",
            command: |p| format!("setfattr -n user.x -v y {p}"),
            happened: |before, after| {
                !before.xattrs.contains("user.x=") && after.xattrs.contains("user.x=")
            },
        },
        MetaChange {
            name: "setfacl",
            command: |p| format!("setfacl -m u:nobody:r {p}"),
            happened: |before, after| {
                !before.xattrs.contains("system.posix_acl_access")
                    && after.xattrs.contains("system.posix_acl_access")
            },
        },
    ]
}

/// A new file `name` in `dir` holding [`ORIGINAL`], mode 0644.
fn fresh_file(dir: &Path, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, ORIGINAL).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    path
}

/// Panics, saying why, when the tools of the metadata attempts are missing
/// or `dir`'s file system keeps no user extended attributes or ACLs: the
/// attempts would prove nothing there.
fn require_xattr_support(dir: &Path) {
    let probe = fresh_file(dir, ".xattr-probe");
    let probes: [(&str, &[&str]); 2] = [
        ("setfattr", &["-n", "user.dsh-probe", "-v", "1"]),
        ("setfacl", &["-m", "u:nobody:r"]),
    ];
    for (tool, args) in probes {
        let out = std::process::Command::new(tool)
            .args(args)
            .arg(&probe)
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "{tool} cannot run ({e}): install attr and acl (apt-get install -y attr acl)"
                )
            });
        assert!(
            out.status.success(),
            "the file system of {} does not support what {tool} sets ({}); the metadata escape \
             attempts cannot be tested here",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    std::fs::remove_file(probe).unwrap();
}

/// Metadata changes (mode, owner, times, extended attributes, ACLs) are
/// writes Landlock does not see; the namespace layer's read-only mounts
/// refuse them with `EROFS` outside the writable roots: outside the
/// workspace under both modes, inside it under `read-only`. The host finds
/// each file exactly as before, and the result says the sandbox refused.
/// Unconfined, each change happens.
#[tokio::test]
async fn confined_commands_cannot_change_metadata_outside_their_roots() {
    let out = Outside::new();
    require_xattr_support(out.dir.path());
    for mode in CONFINING {
        let f = fixture(mode);
        let ws = f.tmp.path().to_path_buf();
        if !landlock_here(mode, &ws, &out) || !layer_here(mode).await {
            return;
        }
        let mut places = vec![("outside", out.dir.path().to_path_buf())];
        if mode == SandboxMode::ReadOnly {
            require_xattr_support(&ws);
            places.push(("in the workspace", ws.clone()));
        }
        for (place, dir) in &places {
            for change in metadata_changes() {
                let file = fresh_file(dir, &format!("{mode}-{}", change.name));
                let before = Meta::of(&file);
                let r = f.run(&(change.command)(&sh_quote(&file))).await;
                let what = format!("{mode}, {} {place}", change.name);
                assert_eq!(Meta::of(&file), before, "{what} changed the file: {r:?}");
                assert_eq!(std::fs::read_to_string(&file).unwrap(), ORIGINAL, "{what}");
                assert_ne!(r.exit_code, Some(0), "{what}: {r:?}");
                assert!(
                    r.stderr.text.contains("Read-only file system"),
                    "{what}: {r:?}"
                );
                assert_eq!(
                    r.sandbox_denial.as_deref(),
                    Some(dsh_sandbox::denial_line(mode).as_str()),
                    "{what}: {r:?}"
                );
            }
        }
        if mode == SandboxMode::WorkspaceWrite {
            // What the mode allows: the same changes to a workspace file.
            // (Not the ACL: it names `nobody`, a user the command's user
            // namespace does not map, which the kernel refuses with EINVAL.)
            for change in metadata_changes()
                .into_iter()
                .filter(|c| c.name != "setfacl")
            {
                let file = fresh_file(&ws, &format!("allowed-{}", change.name));
                let before = Meta::of(&file);
                let r = f.run(&(change.command)(&sh_quote(&file))).await;
                assert_eq!(r.exit_code, Some(0), "{}: {r:?}", change.name);
                assert!(
                    (change.happened)(&before, &Meta::of(&file)),
                    "{} in the workspace did not happen",
                    change.name
                );
            }
        }
        f.exec.dispose().await;
    }
    // The unconfined control: every change happens, outside and inside.
    let f = fixture(SandboxMode::DangerFullAccess);
    let ws = f.tmp.path().to_path_buf();
    for dir in [out.dir.path(), ws.as_path()] {
        for change in metadata_changes() {
            let file = fresh_file(dir, &format!("control-{}", change.name));
            let before = Meta::of(&file);
            // Timestamps come from a clock that may tick coarsely: let it
            // tick, so a change made at once is not given the same ctime.
            std::thread::sleep(Duration::from_millis(20));
            let r = f.run(&(change.command)(&sh_quote(&file))).await;
            assert_eq!(r.exit_code, Some(0), "control {}: {r:?}", change.name);
            assert!(
                (change.happened)(&before, &Meta::of(&file)),
                "control {} on {} did not happen",
                change.name,
                file.display()
            );
        }
    }
    f.exec.dispose().await;
}

/// Under the namespace layer a confined command does not see the processes
/// outside it: `kill` of one is told `No such process`, the process lives
/// on, and the result carries the signal note (dsh does see that pid); a
/// pid that exists nowhere is not blamed on the sandbox. The unconfined
/// control kills the process. (Landlock's scoping without the layer:
/// `confined_commands_cannot_signal_outside_their_domain`.)
#[tokio::test]
async fn confined_commands_cannot_signal_processes_outside_their_namespace() {
    let mut bystander = Bystander::start();
    let b = bystander.pid();
    for mode in CONFINING {
        let f = fixture(mode);
        let ws = f.tmp.path().to_path_buf();
        let out = Outside::new();
        if !landlock_here(mode, &ws, &out) || !layer_here(mode).await {
            return;
        }
        for signal in ["TERM", "KILL", "STOP"] {
            let r = f.run(&format!("kill -{signal} {b}")).await;
            assert!(
                bystander.alive(),
                "{mode}: SIG{signal} reached the bystander"
            );
            assert_eq!(
                proc_status(b, "State").chars().next(),
                Some('S'),
                "{mode}: SIG{signal} stopped the bystander"
            );
            assert_ne!(r.exit_code, Some(0), "{mode} {signal}: {r:?}");
            assert!(
                r.stderr
                    .text
                    .contains(&format!("kill: ({b}) - No such process")),
                "{mode} {signal}: {r:?}"
            );
            assert_eq!(
                r.sandbox_denial.as_deref(),
                Some(dsh_sandbox::signal_denial_line(mode).as_str()),
                "{mode} {signal}: {r:?}"
            );
        }
        let r = f.run("kill -TERM 2147483000").await;
        assert_ne!(r.exit_code, Some(0), "{mode}: {r:?}");
        assert_eq!(r.sandbox_denial, None, "{mode}: {r:?}");
        f.exec.dispose().await;
    }
    let f = fixture(SandboxMode::DangerFullAccess);
    let r = f.run(&format!("kill -TERM {b}")).await;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert_eq!(bystander.death_signal(), Some(SIGTERM));
    f.exec.dispose().await;
}

/// The value of field `field` (`State`, `TracerPid`) in `/proc/<pid>/status`.
fn proc_status(pid: u32, field: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
        .trim()
        .to_string()
}

/// Builds the command that reads from the process given as a pid (or a
/// shell expression for one).
type ReadCommand = fn(&str) -> String;

/// Ways to read what a process keeps secret, given the pid (or a shell
/// expression for it): its environment, its command line and its memory
/// (the environment area, through `/proc/<pid>/mem`).
fn secret_reads() -> [(&'static str, ReadCommand); 3] {
    [
        ("environ", |pid| {
            format!("tr '\\0' '\\n' < /proc/{pid}/environ")
        }),
        ("cmdline", |pid| {
            format!("tr '\\0' '\\n' < /proc/{pid}/cmdline")
        }),
        ("mem", |pid| {
            format!(
                "python3 -c 'import sys; p = sys.argv[1]; \
                 f = open(\"/proc/%s/stat\" % p).read().rsplit(\")\", 1)[1].split(); \
                 s, e = int(f[47]), int(f[48]); m = open(\"/proc/%s/mem\" % p, \"rb\"); m.seek(s); \
                 sys.stdout.write(m.read(e - s).replace(b\"\\0\", b\"\\n\").decode(errors=\"replace\"))' {pid}"
            )
        }),
    ]
}

/// The entries (at least 8 bytes long) of a NUL-separated `/proc/self`
/// file of this process: what a command must not learn of it.
fn own_strings(file: &str) -> Vec<String> {
    std::fs::read(format!("/proc/self/{file}"))
        .unwrap()
        .split(|b| *b == 0)
        .filter(|s| s.len() >= 8)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// Which of `secrets` `text` contains (counted, never printed: this
/// process's environment may hold real ones).
fn count_revealed(text: &str, secrets: &[String]) -> usize {
    secrets.iter().filter(|s| text.contains(s.as_str())).count()
}

/// Whether an unconfined process of this user may read another's memory
/// or attach to it (`PTRACE_MODE_ATTACH`): root, or no Yama restriction.
fn unconfined_may_attach() -> bool {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "0".to_string());
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    root || scope == "0"
}

/// A confined command cannot read the environment, command line or memory
/// of a process outside it (one holding a fake API key), nor of the
/// process that spawned it: `$PPID` and pid 1, which under the namespace
/// layer are dsh's own fork (`dsh-init`, non-dumpable, its strings
/// blanked); this test process stands in for dsh. The unconfined control
/// reads both.
#[tokio::test]
async fn confined_commands_cannot_read_secrets_of_other_processes() {
    secrets_of_other_processes_stay_unread(dsh_sandbox::NamespaceMode::Auto).await;
}

/// The same attempts with Landlock alone (`namespaces = "off"`, or `auto`
/// on a machine without the layer).
#[tokio::test]
async fn landlock_alone_keeps_secrets_of_other_processes_unread() {
    secrets_of_other_processes_stay_unread(dsh_sandbox::NamespaceMode::Off).await;
}

async fn secrets_of_other_processes_stay_unread(namespaces: dsh_sandbox::NamespaceMode) {
    use std::os::unix::process::CommandExt;
    let secret = format!("sekrit-{}", rand_suffix());
    let holder = Bystander::spawn(
        std::process::Command::new("sleep")
            .arg0(format!("dsh-fake-agent --api-key={secret}"))
            .arg("60")
            .env("DSH_FAKE_API_KEY", &secret),
    );
    let holder_pid = holder.pid().to_string();
    let holder_secrets = vec![secret.clone()];
    let mut own_secrets = own_strings("environ");
    own_secrets.extend(own_strings("cmdline"));
    assert!(!own_secrets.is_empty());
    let targets: [(&str, &str, &[String]); 3] = [
        ("an outside process", &holder_pid, &holder_secrets),
        ("the spawner", "$PPID", &own_secrets),
        ("pid 1", "1", &own_secrets),
    ];
    for mode in CONFINING {
        let f = Fixture::new(|c| {
            c.sandbox = mode;
            c.namespaces = namespaces;
        });
        let ws = f.tmp.path().to_path_buf();
        let out = Outside::new();
        if !landlock_here(mode, &ws, &out) {
            return;
        }
        for (target, pid, secrets) in targets {
            for (route, read) in secret_reads() {
                // Without a PID namespace every process's command line is
                // world-readable, as on any Linux system (ps shows it):
                // only the environment and memory are secrets there.
                if namespaces == dsh_sandbox::NamespaceMode::Off && route == "cmdline" {
                    continue;
                }
                let r = f.run(&read(pid)).await;
                assert_eq!(
                    count_revealed(&r.stdout.text, secrets),
                    0,
                    "{mode}, namespaces {namespaces}: the {route} of {target} ({pid}) was read \
                     (stderr: {})",
                    r.stderr.text
                );
            }
        }
        f.exec.dispose().await;
    }
    // The unconfined control: the outside process's secret and this
    // process's strings are there to read (pid 1 is then the system's
    // init, not dsh's fork: not checked).
    let f = fixture(SandboxMode::DangerFullAccess);
    for (target, pid, secrets) in &targets[..2] {
        for (route, read) in secret_reads() {
            if route == "mem" && !unconfined_may_attach() {
                eprintln!(
                    "note: Yama keeps this user from reading another process's memory even \
                     unconfined; the mem control is skipped"
                );
                continue;
            }
            let r = f.run(&read(pid)).await;
            assert!(
                count_revealed(&r.stdout.text, secrets) > 0,
                "control: nothing of {target}'s {route} was read (stderr: {})",
                r.stderr.text
            );
        }
    }
    f.exec.dispose().await;
    drop(holder);
}

/// Waits (bounded) until a reader opened `fifo`, and returns the writing
/// end: closing it lets the reader go on.
async fn await_reader(fifo: &Path) -> std::fs::File {
    use std::os::unix::fs::OpenOptionsExt;
    let start = std::time::Instant::now();
    loop {
        // Without a reader a non-blocking open for writing fails (ENXIO).
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc_o_nonblock())
            .open(fifo)
        {
            Ok(file) => return file,
            Err(e) if e.raw_os_error() == Some(ENXIO) => {
                assert!(start.elapsed() < common::DEADLINE, "nobody opened {fifo:?}");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(e) => panic!("{fifo:?}: {e}"),
        }
    }
}

/// `O_NONBLOCK` on Linux.
fn libc_o_nonblock() -> i32 {
    nix::fcntl::OFlag::O_NONBLOCK.bits()
}

/// `ENXIO` on Linux.
const ENXIO: i32 = 6;

/// A command that tries `PTRACE_ATTACH` on `pid` (through ctypes), prints
/// `attach <result> <error>`, then holds on (tracer alive) until the host
/// opens and closes `fifo`.
fn attach_and_hold(pid: &str, fifo: &Path) -> String {
    format!(
        "python3 -c 'import ctypes, os, sys; l = ctypes.CDLL(None, use_errno=True); \
         r = l.ptrace(16, int(sys.argv[1]), 0, 0); \
         print(\"attach\", r, os.strerror(ctypes.get_errno()) if r else \"ok\", flush=True); \
         open(sys.argv[2]).read()' {pid} {}",
        sh_quote(fifo)
    )
}

/// A confined command cannot attach to a process outside it with ptrace,
/// with the namespace layer (the target is not in its PID namespace) or
/// without it (Landlock): while the would-be tracer still runs, the host
/// sees the target neither traced (`TracerPid: 0`) nor stopped. Nor can it
/// attach to pid 1 (under the layer, dsh's non-dumpable fork). The
/// unconfined control attaches.
#[tokio::test]
async fn confined_commands_cannot_ptrace_outside_processes() {
    use dsh_sandbox::NamespaceMode;
    for (mode, namespaces) in [
        (SandboxMode::WorkspaceWrite, NamespaceMode::Auto),
        (SandboxMode::ReadOnly, NamespaceMode::Auto),
        (SandboxMode::WorkspaceWrite, NamespaceMode::Off),
        (SandboxMode::ReadOnly, NamespaceMode::Off),
    ] {
        let f = Fixture::new(|c| {
            c.sandbox = mode;
            c.namespaces = namespaces;
        });
        let ws = f.tmp.path().to_path_buf();
        let out = Outside::new();
        if !landlock_here(mode, &ws, &out) {
            return;
        }
        let mode = format!("{mode}, namespaces {namespaces}");
        let target = Bystander::start();
        let fifo = f.fifo("hold");
        let attempt = attach_and_hold(&target.pid().to_string(), &fifo);
        let (r, (tracer, state)) = tokio::join!(f.run(&attempt), async {
            let hold = await_reader(&fifo).await;
            let seen = (
                proc_status(target.pid(), "TracerPid"),
                proc_status(target.pid(), "State"),
            );
            drop(hold);
            seen
        });
        assert_eq!(tracer, "0", "{mode}: the target was traced: {r:?}");
        assert!(
            state.starts_with('S'),
            "{mode}: the target is {state}: {r:?}"
        );
        assert!(r.stdout.text.starts_with("attach -1 "), "{mode}: {r:?}");
        let r = f
            .run(&format!(
                "{}; grep TracerPid /proc/1/status",
                attach_and_hold("1", Path::new("/dev/null"))
            ))
            .await;
        assert!(
            r.stdout.text.starts_with("attach -1 ") && r.stdout.text.contains("TracerPid:\t0"),
            "{mode}: {r:?}"
        );
        f.exec.dispose().await;
    }
    let f = fixture(SandboxMode::DangerFullAccess);
    if !unconfined_may_attach() {
        eprintln!("note: Yama keeps this user from attaching to a non-child even unconfined; the ptrace control is skipped");
        return;
    }
    let target = Bystander::start();
    let fifo = f.fifo("hold-control");
    let attempt = attach_and_hold(&target.pid().to_string(), &fifo);
    let (r, tracer) = tokio::join!(f.run(&attempt), async {
        let hold = await_reader(&fifo).await;
        let tracer = proc_status(target.pid(), "TracerPid");
        drop(hold);
        tracer
    });
    assert_ne!(tracer, "0", "control: not traced: {r:?}");
    assert!(r.stdout.text.starts_with("attach 0 ok"), "{r:?}");
    f.exec.dispose().await;
}

/// `attempt`, run between two reads of the command's mount table: prints
/// `rc=<its status>`, then `mounts-unchanged` or `mounts-changed`, then
/// `wrote-outside` if writing `probe` (a file outside the roots) worked.
fn watched(attempt: &str, probe: &Path) -> String {
    format!(
        "before=$(cat /proc/self/mountinfo); {attempt}; echo \"rc=$?\"; \
         after=$(cat /proc/self/mountinfo); \
         if [ \"$before\" = \"$after\" ]; then echo mounts-unchanged; else echo mounts-changed; fi; \
         (echo x > {}) 2>/dev/null && echo wrote-outside; true",
        sh_quote(probe)
    )
}

/// One way to change the command's mounts or namespaces.
struct MountAttempt {
    name: &'static str,
    /// What the confined command tries (in the workspace, where the host
    /// made a directory `sub`).
    attempt: String,
    /// The same change made unconfined, always inside namespaces of its
    /// own (never on the host's mounts), and what its output then shows.
    control: String,
    control_shows: &'static str,
}

fn mount_attempts(out: &Outside) -> Vec<MountAttempt> {
    let probe = out.path("after-control");
    let regained = out.path("regained");
    let private = |unshare: &str, setup: &str, attempt: &str| {
        format!(
            "{unshare} sh -c {}",
            quote(&format!("{setup}{}", watched(attempt, &probe)))
        )
    };
    vec![
        MountAttempt {
            name: "mount a tmpfs",
            attempt: "mount -t tmpfs dsh-escape sub".into(),
            control: private("unshare -Urm", "", "mount -t tmpfs dsh-escape sub"),
            control_shows: "mounts-changed",
        },
        MountAttempt {
            name: "unmount /proc",
            attempt: "umount /proc".into(),
            control: private(
                "unshare -Urm --fork --pid --mount-proc",
                "",
                "umount /proc",
            ),
            control_shows: "mounts-changed",
        },
        MountAttempt {
            name: "remount / read-write",
            attempt: "mount -o remount,rw /".into(),
            // The host's / is not read-only: a read-only tmpfs stands in.
            control: private(
                "unshare -Urm",
                "mount -t tmpfs -o ro dsh-escape sub && ",
                "mount -o remount,rw sub",
            ),
            control_shows: "mounts-changed",
        },
        MountAttempt {
            name: "new user namespace",
            attempt: "unshare -Ur true".into(),
            control: watched("unshare -Ur true", &probe),
            control_shows: "rc=0",
        },
        MountAttempt {
            name: "new user namespace by system call",
            attempt: "python3 -c 'import ctypes, os; l = ctypes.CDLL(None, use_errno=True); \
                      r = l.unshare(0x10000000); print(\"unshare\", r); os._exit(0 if r == 0 else 1)'"
                .into(),
            control: "python3 -c 'import ctypes; print(\"unshare\", ctypes.CDLL(None).unshare(0x10000000))'"
                .into(),
            control_shows: "unshare 0",
        },
        MountAttempt {
            name: "regain rights in a new user namespace",
            attempt: format!(
                "unshare -Urm sh -c {}",
                quote(&format!(
                    "mount -o remount,rw / && touch {}",
                    sh_quote(&regained)
                ))
            ),
            // Unconfined a new user namespace needs no remount to write
            // (and this container's / refuses one anyway).
            control: format!(
                "unshare -Urm sh -c {} && echo regained",
                quote(&format!("touch {}", sh_quote(&regained)))
            ),
            control_shows: "regained",
        },
    ]
}

/// A confined command can neither change its mounts (mount, unmount,
/// remount `/` read-write) nor make a namespace to regain rights in (the
/// seccomp filter refuses `mount`, `umount2`, `unshare`): the mount table
/// it sees is the same after each attempt, writing outside still fails,
/// and nothing lands outside. Each control makes the change unconfined in
/// namespaces of its own, showing the checks see it.
#[tokio::test]
async fn confined_commands_cannot_change_their_mounts_or_make_namespaces() {
    let out = Outside::new();
    for mode in CONFINING {
        let f = fixture(mode);
        let ws = f.tmp.path().to_path_buf();
        if !landlock_here(mode, &ws, &out) {
            return;
        }
        std::fs::create_dir(ws.join("sub")).unwrap();
        for a in mount_attempts(&out) {
            let probe = out.path(&format!("after-{mode}"));
            let r = f.run(&watched(&a.attempt, &probe)).await;
            let what = format!("{mode}, {}", a.name);
            assert!(!r.stdout.text.contains("rc=0\n"), "{what}: {r:?}");
            assert!(
                r.stdout.text.contains("mounts-unchanged\n"),
                "{what}: {r:?}"
            );
            assert!(!r.stdout.text.contains("wrote-outside"), "{what}: {r:?}");
            assert!(!probe.exists(), "{what}: wrote outside");
            assert!(!out.path("regained").exists(), "{what}: wrote outside");
            assert!(
                std::fs::read_dir(ws.join("sub")).unwrap().next().is_none(),
                "{what}"
            );
        }
        f.exec.dispose().await;
    }
    let f = fixture(SandboxMode::DangerFullAccess);
    std::fs::create_dir(f.tmp.path().join("sub")).unwrap();
    for a in mount_attempts(&out) {
        let r = f.run(&a.control).await;
        assert!(
            r.stdout.text.contains(a.control_shows),
            "control of {}: {r:?}",
            a.name
        );
    }
    assert!(out.path("regained").exists(), "the control did not regain");
    f.exec.dispose().await;
}

/// Whether this process runs as root (effective uid 0).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

/// Root's powers a command must not keep when confined: making a device
/// node in the workspace (through which a disk could be written past every
/// path rule) and setting the host's name (to the name it has already, so
/// the control changes nothing). Each attempt prints `<name>-done` when it
/// worked.
fn root_powers() -> [(&'static str, &'static str); 2] {
    [
        (
            "mknod",
            "mknod dev-node c 1 3 && echo x > dev-node && echo mknod-done",
        ),
        (
            "sethostname",
            "hostname \"$(hostname)\" && echo sethostname-done",
        ),
    ]
}

/// A confined command keeps none of root's powers over the system: under
/// the namespace layer its capabilities only reach its own user
/// namespace, so `mknod` and `sethostname` fail and no node appears. The
/// unconfined control (as root) does both.
#[tokio::test]
async fn confined_commands_cannot_use_roots_powers() {
    root_powers_stay_out_of_reach(dsh_sandbox::NamespaceMode::Auto).await;
}

/// The same with Landlock alone.
#[tokio::test]
async fn landlock_alone_keeps_roots_powers_out_of_reach() {
    root_powers_stay_out_of_reach(dsh_sandbox::NamespaceMode::Off).await;
}

async fn root_powers_stay_out_of_reach(namespaces: dsh_sandbox::NamespaceMode) {
    for mode in CONFINING {
        let f = Fixture::new(|c| {
            c.sandbox = mode;
            c.namespaces = namespaces;
        });
        let ws = f.tmp.path().to_path_buf();
        let out = Outside::new();
        if !landlock_here(mode, &ws, &out) {
            return;
        }
        if namespaces != dsh_sandbox::NamespaceMode::Off && !layer_here(mode).await {
            return;
        }
        for (name, attempt) in root_powers() {
            let r = f.run(attempt).await;
            let what = format!("{mode}, namespaces {namespaces}: {name}");
            assert!(
                std::fs::symlink_metadata(ws.join("dev-node")).is_err(),
                "{what} made a device node: {r:?}"
            );
            assert!(!r.stdout.text.contains("-done"), "{what}: {r:?}");
            assert_ne!(r.exit_code, Some(0), "{what}: {r:?}");
        }
        f.exec.dispose().await;
    }
    if !running_as_root() {
        eprintln!("note: not root: the unconfined control has none of root's powers either");
        return;
    }
    let f = fixture(SandboxMode::DangerFullAccess);
    for (name, attempt) in root_powers() {
        let r = f.run(attempt).await;
        assert!(
            r.stdout.text.contains(&format!("{name}-done")),
            "control {name}: {r:?}"
        );
    }
    assert!(f.tmp.path().join("dev-node").exists());
    f.exec.dispose().await;
}

/// A terminal of the user's, like the one dsh runs in or another of the
/// user's shells: a pseudo-terminal this process opens, with a line typed
/// (pending input) that its own reader has not read yet.
struct UsersTerminal {
    master: std::fs::File,
    slave: std::fs::File,
    path: PathBuf,
}

/// What is typed on the [`UsersTerminal`].
const TYPED: &str = "typed-secret\n";

impl UsersTerminal {
    fn open() -> Self {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let pty = nix::pty::openpty(None, None).unwrap();
        let path = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).unwrap();
        let mut master = std::fs::File::from(pty.master);
        master.write_all(TYPED.as_bytes()).unwrap();
        Self {
            master,
            slave: std::fs::File::from(pty.slave),
            path,
        }
    }

    /// What one read of `file` gives within half a second (`None`: nothing
    /// came).
    fn read_soon(file: &std::fs::File) -> Option<String> {
        use std::io::Read;
        let mut file = file.try_clone().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        // A read with nothing to read blocks this thread until the
        // terminal closes; the test does not wait for it.
        std::thread::spawn(move || {
            let mut buf = [0u8; 256];
            let got = file.read(&mut buf).map(|n| buf[..n].to_vec());
            let _ = tx.send(got);
        });
        let got = rx.recv_timeout(Duration::from_millis(500)).ok()?;
        Some(String::from_utf8_lossy(&got.unwrap()).into_owned())
    }

    /// The pending input, as the terminal's own reader (the user's shell)
    /// gets it.
    fn pending_input(&self) -> Option<String> {
        Self::read_soon(&self.slave)
    }

    /// What was written to the terminal (the screen), after the echo of
    /// what was typed.
    fn screen(&self) -> String {
        Self::read_soon(&self.master).unwrap_or_default()
    }
}

/// A command that opens the terminal at `path`, prints what input it can
/// take from it (`took …`) and writes `WROTE` on it.
fn use_terminal(path: &Path) -> String {
    format!(
        "python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY); \
         print(\"took\", os.read(fd, 64), flush=True); os.write(fd, b\"WROTE\")' {}",
        sh_quote(path)
    )
}

/// A confined command can neither take what the user types in another of
/// their terminals nor write on it: the input stays pending for the
/// terminal's own reader and nothing appears on its screen. The unconfined
/// control takes the input and writes.
#[tokio::test]
async fn confined_commands_cannot_use_the_users_other_terminals() {
    for mode in CONFINING {
        let f = fixture(mode);
        let ws = f.tmp.path().to_path_buf();
        let out = Outside::new();
        if !landlock_here(mode, &ws, &out) || !layer_here(mode).await {
            return;
        }
        let tty = UsersTerminal::open();
        let r = f.run(&use_terminal(&tty.path)).await;
        assert_eq!(
            tty.pending_input().as_deref(),
            Some(TYPED),
            "{mode}: the typed line was taken: {r:?}"
        );
        assert!(
            !tty.screen().contains("WROTE"),
            "{mode}: the command wrote on the terminal: {r:?}"
        );
        f.exec.dispose().await;
    }
    let f = fixture(SandboxMode::DangerFullAccess);
    let tty = UsersTerminal::open();
    let r = f.run(&use_terminal(&tty.path)).await;
    assert!(r.stdout.text.contains("typed-secret"), "control: {r:?}");
    assert!(tty.screen().contains("WROTE"), "control: {r:?}");
    f.exec.dispose().await;
}
