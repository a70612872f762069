//! How a command starts under the namespace layer, through the public API
//! (`prepare`, `spawning`, `apply_to`) and real processes: it gets exactly
//! the environment set on the command, runs as PID 2 under the
//! namespace's init, and a failure before its program runs fails the
//! spawn with the OS error instead of leaving anything behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use dsh_sandbox::{NamespaceMode, SandboxMode, SandboxPolicy};
use tokio::process::Command;

/// Whether the layer is here; prints why not.
fn layer_here() -> bool {
    match dsh_sandbox::probe_namespaces().layer {
        Ok(()) => true,
        Err(why) => {
            eprintln!("SKIP: namespace layer unavailable: {why}");
            false
        }
    }
}

fn policy(ws: &Path) -> SandboxPolicy {
    SandboxPolicy::for_mode(SandboxMode::WorkspaceWrite, ws, None)
        .with_namespaces(NamespaceMode::Required)
}

/// A command with an explicit environment, run in `ws`.
fn command(ws: &Path, program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(ws)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("DSH_LAUNCH_TEST", "seen")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

#[tokio::test]
async fn the_command_gets_exactly_its_environment_and_runs_under_the_init() {
    if !layer_here() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let c = policy(ws.path()).prepare().unwrap();
    assert!(c.namespaces());
    let mut cmd = command(
        ws.path(),
        "sh",
        &["-c", "env | sort; echo \"pid $$ ppid $PPID\"; pwd"],
    );
    let spawning = c.spawning(ws.path(), &cmd).unwrap();
    c.apply_to(&mut cmd, &spawning);
    let out = cmd.output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // sh adds PWD (and may add SHLVL and _); nothing of this process's
    // environment comes through.
    let inherited: Vec<&&str> = lines
        .iter()
        .filter(|l| {
            l.contains('=')
                && !l.starts_with("PWD=")
                && !l.starts_with("SHLVL=")
                && !l.starts_with("_=")
        })
        .collect();
    assert_eq!(
        inherited,
        [&"DSH_LAUNCH_TEST=seen", &"PATH=/usr/bin:/bin"],
        "{text}"
    );
    assert!(lines.contains(&"pid 2 ppid 1"), "{text}");
    assert_eq!(
        lines.last().copied(),
        Some(ws.path().canonicalize().unwrap().to_str().unwrap()),
        "{text}"
    );
}

#[tokio::test]
async fn a_program_that_cannot_be_executed_fails_the_spawn_with_its_error() {
    if !layer_here() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    // Found and executable, but its interpreter does not exist: execve
    // fails with ENOENT in the command process, after the namespaces.
    let script = ws.path().join("broken");
    std::fs::write(&script, "#!/nonexistent/interpreter\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let c = policy(ws.path()).prepare().unwrap();
    let mut cmd = command(ws.path(), script.to_str().unwrap(), &[]);
    let spawning = c.spawning(ws.path(), &cmd).unwrap();
    c.apply_to(&mut cmd, &spawning);
    let err = cmd.spawn().expect_err("the program cannot run");
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}");
    // A program that is not found in the command's PATH fails before
    // anything is forked.
    let missing = command(ws.path(), "dsh-launch-no-such-program", &[]);
    let err = c.spawning(ws.path(), &missing).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}");
}

#[tokio::test]
async fn applying_the_layer_without_its_spawning_refuses_to_start() {
    if !layer_here() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let c = policy(ws.path()).prepare().unwrap();
    let mut cmd = command(ws.path(), "true", &[]);
    c.apply_to(&mut cmd, &dsh_sandbox::Spawning::default());
    let err = cmd
        .spawn()
        .expect_err("nothing runs without the prepared launch");
    assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}");
}

/// `prepare` keeps the rules of a policy, but a workspace removed and
/// made again (a new directory at the same path) gets new ones: a command
/// can still write there. Landlock alone and with the layer.
#[tokio::test]
async fn a_workspace_made_again_gets_rules_for_the_new_directory() {
    // Outside /tmp, which workspace-write also lets commands write.
    let outer = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = outer.path().join("ws");
    for namespaces in [NamespaceMode::Off, NamespaceMode::Auto] {
        std::fs::create_dir_all(&ws).unwrap();
        let policy = SandboxPolicy::for_mode(SandboxMode::WorkspaceWrite, &ws, None)
            .with_namespaces(namespaces);
        let out = touch(&policy, &ws, "a").await;
        assert!(out.status.success(), "{namespaces}: {out:?}");
        let out = touch(&policy, &ws, "b").await;
        assert!(out.status.success(), "{namespaces}, kept rules: {out:?}");
        std::fs::remove_dir_all(&ws).unwrap();
        std::fs::create_dir(&ws).unwrap();
        let out = touch(&policy, &ws, "c").await;
        assert!(out.status.success(), "{namespaces}, new directory: {out:?}");
        assert!(ws.join("c").exists());
        std::fs::remove_dir_all(&ws).unwrap();
    }
}

/// Runs `touch name` in `ws` under `policy`; the confinement and the
/// spawning stay alive until the spawn returned.
async fn touch(policy: &SandboxPolicy, ws: &Path, name: &str) -> std::process::Output {
    let c = policy.prepare().unwrap();
    let mut cmd = command(ws, "touch", &[name]);
    let spawning = c.spawning(ws, &cmd).unwrap();
    c.apply_to(&mut cmd, &spawning);
    cmd.output().await.unwrap()
}
