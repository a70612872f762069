//! Unix sockets and confined commands, through the binary: by default a
//! confined command cannot reach a Unix socket on the file system (the
//! seccomp filter refuses `socket(AF_UNIX, …)`); `[sandbox]
//! allow_unix_sockets` opens exactly the listed ones under the namespace
//! layer, and `dsh doctor` says which rule holds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::net::UnixListener;

use dsh_testkit::cli::{outcome, Home};
use tokio::process::Command;

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

async fn run(c: Command) -> (i32, String, String) {
    outcome(c).await.into_parts()
}

fn nothing_accepted(listener: &UnixListener) -> bool {
    matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

#[tokio::test]
async fn a_confined_command_reaches_a_unix_socket_only_when_the_config_allows_it() {
    if !dsh_sandbox::probe().filesystem_full() {
        eprintln!("SKIP: Landlock unavailable: {}", dsh_sandbox::probe());
        return;
    }
    let home = Home::new(DSH);
    let outside = dsh_testkit::outside_temp_dir(env!("CARGO_TARGET_TMPDIR"), "sock-");
    let sock = outside.path().join("s.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "run python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')\"",
        sock.display()
    );
    let denied = home.path().join("denied.toml");
    std::fs::write(&denied, "[sandbox]\nnetwork = true\n").unwrap();
    let allowed = home.path().join("allowed.toml");
    std::fs::write(
        &allowed,
        format!("[sandbox]\nallow_unix_sockets = [\"{}\"]\n", sock.display()),
    )
    .unwrap();

    let mut c = home.tokio_dsh();
    c.args(["run", "--config"]).arg(&denied).arg(&connect);
    let (code, stdout, stderr) = run(c).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("PermissionError: [Errno 13] Permission denied"),
        "{stdout}"
    );
    assert!(nothing_accepted(&listener), "a confined connection arrived");

    let mut c = home.tokio_dsh();
    c.args(["doctor", "--config"]).arg(&denied);
    let (_, stdout, _) = run(c).await;
    assert!(
        stdout.contains("  unix sockets: denied to commands (seccomp)\n"),
        "{stdout}"
    );

    let other = outside.path().join("other.sock");
    let other_listener = UnixListener::bind(&other).unwrap();
    other_listener.set_nonblocking(true).unwrap();
    let connect_other = connect.replace("s.sock", "other.sock");
    let layer = dsh_sandbox::probe_namespaces().layer;

    let mut c = home.tokio_dsh();
    c.args(["run", "--config"]).arg(&allowed).arg(&connect);
    let (code, stdout, stderr) = run(c).await;
    assert_eq!(code, 0, "{stderr}");
    let mut c = home.tokio_dsh();
    c.args(["doctor", "--config"]).arg(&allowed);
    let (_, doctor, _) = run(c).await;
    if let Err(why) = layer {
        eprintln!("SKIP (gate): namespace layer unavailable: {why}");
        assert!(stdout.contains("[Errno 13]"), "{stdout}");
        assert!(
            nothing_accepted(&listener),
            "a listed socket without the layer"
        );
        assert!(
            doctor.contains("  unix sockets: denied to commands (seccomp): the list ("),
            "{doctor}"
        );
        return;
    }
    assert!(stdout.contains("connected"), "{stdout}");
    assert!(!nothing_accepted(&listener), "the allowed connection");
    let mut c = home.tokio_dsh();
    c.args(["run", "--config"])
        .arg(&allowed)
        .arg(&connect_other);
    let (code, stdout, stderr) = run(c).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("PermissionError: [Errno 13] Permission denied"),
        "{stdout}"
    );
    assert!(
        nothing_accepted(&other_listener),
        "an unlisted socket was reached"
    );
    assert!(
        doctor.contains(&format!(
            "  unix sockets: only the listed ones: {} (each connect is checked by the command's namespace init)\n",
            sock.display()
        )),
        "{doctor}"
    );
}
