//! Test support shared by the integration tests of dsh-bash-local.
#![allow(dead_code)] // each test binary uses a different subset
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic
#![allow(unreachable_pub)] // shared by several test binaries

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

    /// [`Fixture::new`] without the namespace layer: for tests that read
    /// process ids from inside the command (`$$`, `$!`) and check them
    /// from outside, where the layer's PID namespace would number them
    /// differently. The layer's own process handling is tested in
    /// `namespaces.rs`.
    pub fn host_pids(tweak: impl FnOnce(&mut LocalBashConfig)) -> Self {
        Self::new(|c| {
            c.namespaces = dsh_sandbox::NamespaceMode::Off;
            tweak(c);
        })
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

// Each test binary uses a different subset of the shared helpers.
#[allow(unused_imports)]
pub use dsh_testkit::procs::{assert_gone, group_members, is_alive, pids};

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

/// An executor in `mode` whose commands reach the network through a proxy
/// that allows `allowed` and resolves each of `names` to 127.0.0.1, and
/// the hosts the proxy refused, as the session log would see them.
pub fn proxied(
    mode: dsh_sandbox::SandboxMode,
    allowed: &[&str],
    names: &[&str],
) -> (Fixture, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::sync::{Arc, Mutex};
    let denied = Arc::new(Mutex::new(Vec::new()));
    let log = denied.clone();
    let loopback = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    let resolver = names
        .iter()
        .fold(dsh_netproxy::StaticResolver::new(), |r, name| {
            r.with(name, [loopback])
        });
    let proxy = dsh_netproxy::Proxy::new(
        dsh_netproxy::Allowlist::parse(allowed).unwrap(),
        Arc::new(resolver),
    )
    .with_observer(Arc::new(move |d: &dsh_netproxy::Denial| {
        log.lock().unwrap().push(d.host.clone())
    }));
    let f = Fixture::new(|c| {
        c.sandbox = mode;
        c.network_proxy = Some(proxy);
    });
    (f, denied)
}

/// Whether the namespace layer and network namespaces are here; prints
/// a SKIP line saying why not.
pub fn network_layer_here() -> bool {
    let support = dsh_sandbox::probe_namespaces();
    match (&support.layer, &support.network) {
        (Ok(()), Ok(())) => true,
        (layer, net) => {
            eprintln!("SKIP: no network namespaces here (layer: {layer:?}, network: {net:?})");
            false
        }
    }
}

/// Whether Landlock and the namespace layer can be set up here. When they
/// cannot, checks that `namespaces = "required"` refuses to run a command
/// under `mode` (`SANDBOX_UNAVAILABLE`) and prints `SKIP: namespace layer
/// unavailable: <why>`, for the caller to return: without the layer its
/// attempts are not all stopped.
pub async fn layer_here(mode: dsh_sandbox::SandboxMode) -> bool {
    let landlock = dsh_sandbox::probe();
    let why = if landlock.filesystem_full() {
        dsh_sandbox::probe_namespaces().layer.err()
    } else {
        Some(format!("Landlock cannot confine here ({landlock})"))
    };
    let Some(why) = why else {
        return true;
    };
    let f = Fixture::new(|c| {
        c.sandbox = mode;
        c.namespaces = dsh_sandbox::NamespaceMode::Required;
    });
    let spec = f.exec.resolve(BashRequest::new("true"));
    let err = f.exec.run(spec).await.unwrap_err();
    assert_eq!(
        dsh_kernel::ErrorCode::code(&err),
        "SANDBOX_UNAVAILABLE",
        "{err}"
    );
    f.exec.dispose().await;
    eprintln!("SKIP: namespace layer unavailable: {why}");
    false
}
