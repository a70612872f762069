//! The sandbox's layers through the binary: `dsh run` logs which layers
//! its commands get (`sandbox/layers`), says once on stderr when the
//! namespace layer is missing under `namespaces = "auto"`, refuses
//! commands under `"required"`, and a `[sandbox] network` list reaches
//! only listed hosts, each refusal logged as `sandbox/network-denied` and
//! told to the model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use dsh_testkit::cli::{outcome, Home};
use tokio::process::Command;

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

async fn run(c: Command) -> (i32, String, String) {
    outcome(c).await.into_parts()
}

/// Whether the namespace layer works here; prints why not.
fn layer_here() -> bool {
    match dsh_sandbox::probe_namespaces().layer {
        Ok(()) => true,
        Err(why) => {
            eprintln!("SKIP: the namespace layer is unavailable here: {why}");
            false
        }
    }
}

#[tokio::test]
async fn run_logs_the_layers_and_a_command_sees_only_its_own_processes() {
    if !layer_here() {
        return;
    }
    let home = Home::new(DSH);
    let mut c = home.tokio_dsh();
    c.args(["run", "run ps -e -o comm= && touch /etc/dsh-layers-x"]);
    let (code, stdout, stderr) = run(c).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !stderr.contains("namespace layer"),
        "no fallback notice: {stderr}"
    );
    // Its own tree: the init, bash, ps; not dsh.
    assert!(stdout.contains("dsh-init\nbash\nps\n"), "{stdout}");
    assert!(!stdout.contains("\ndsh\n"), "{stdout}");
    assert!(stdout.contains("Read-only file system"), "{stdout}");
    assert!(!std::path::Path::new("/etc/dsh-layers-x").exists());
    let layers = home.of_type("sandbox/layers");
    assert_eq!(layers.len(), 1, "{layers:?}");
    assert_eq!(layers[0]["mode"], "workspace-write");
    assert_eq!(layers[0]["namespaces"], "active");
    assert_eq!(layers[0]["network"], "host");
}

/// The layer cannot hold a workspace that belongs to another user when
/// dsh runs as root (root in a user namespace has no rights over it): the
/// real fallback path on a machine whose kernel has the layer.
#[tokio::test]
async fn without_the_layer_auto_says_so_once_and_required_refuses() {
    // SAFETY-free check of the effective uid through /proc.
    let euid = std::fs::metadata("/proc/self").unwrap().uid();
    if euid != 0 {
        eprintln!(
            "SKIP: the fallback is provoked by a workspace of another user, which needs root"
        );
        return;
    }
    let home = Home::new(DSH);
    std::os::unix::fs::chown(home.cwd(), Some(4242), Some(4242)).unwrap();
    let mut c = home.tokio_dsh();
    c.args(["run", "run echo one && echo two > /dev/null"]);
    let (code, stdout, stderr) = run(c).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("one"), "{stdout}");
    let notices = stderr.matches("the namespace layer is unavailable").count();
    assert_eq!(notices, 1, "{stderr}");
    assert!(stderr.contains("belongs to uid 4242"), "{stderr}");
    let layers = home.of_type("sandbox/layers");
    assert!(
        layers[0]["namespaces"]
            .as_str()
            .unwrap()
            .starts_with("unavailable: dsh runs as root"),
        "{layers:?}"
    );

    let cfg = home.path().join("required.toml");
    std::fs::write(&cfg, "[sandbox]\nnamespaces = \"required\"\n").unwrap();
    let mut c = home.tokio_dsh();
    c.args(["run", "--config"]).arg(&cfg).arg("run echo never");
    let (_, stdout, stderr) = run(c).await;
    assert!(
        stdout.contains("the namespace layer cannot be set up")
            && stdout.contains("[sandbox] namespaces = \"required\"; the command was not run"),
        "{stdout}\n{stderr}"
    );
    assert!(!stdout.contains("never\n"), "{stdout}");
    let mut c = home.tokio_dsh();
    c.args(["doctor", "--config"]).arg(&cfg);
    let (code, stdout, _) = run(c).await;
    assert_eq!(
        code, 1,
        "doctor fails when commands would be refused: {stdout}"
    );
    assert!(stdout.contains("enforcement: none"), "{stdout}");
}

/// A loopback server the test owns, counting requests.
fn upstream() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            counted.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n",
            );
        }
    });
    (port, hits)
}

#[tokio::test]
async fn a_network_list_reaches_listed_hosts_only_and_logs_each_refusal() {
    if !layer_here() || dsh_sandbox::probe_namespaces().network.is_err() {
        eprintln!("SKIP: no network namespaces here");
        return;
    }
    let (port, hits) = upstream();
    let home = Home::new(DSH);
    let cfg = home.path().join("net.toml");
    std::fs::write(
        &cfg,
        "[sandbox]\nnetwork = [\"127.0.0.1\", \"*.example.com\"]\n",
    )
    .unwrap();
    // --noproxy '' makes curl use the proxy for 127.0.0.1 too (NO_PROXY
    // keeps loopback direct by default).
    let mut c = home.tokio_dsh();
    c.args(["run", "--config"]).arg(&cfg).arg(format!(
        "run curl -sS --noproxy '' http://127.0.0.1:{port}/ok; curl -sS http://unlisted.invalid/; echo end"
    ));
    let (code, stdout, stderr) = run(c).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("hello"), "{stdout}");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    assert!(
        stdout.contains(
            "[sandbox: network to unlisted.invalid denied; allowed: 127.0.0.1, *.example.com]"
        ),
        "{stdout}"
    );
    let denied = home.of_type("sandbox/network-denied");
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(denied[0]["host"], "unlisted.invalid");
    assert_eq!(denied[0]["port"], 80);
    let layers = home.of_type("sandbox/layers");
    assert_eq!(layers[0]["network"], "proxy: 127.0.0.1, *.example.com");

    let mut c = home.tokio_dsh();
    c.args(["doctor", "--config"]).arg(&cfg);
    let (_, stdout, _) = run(c).await;
    assert!(
        stdout.contains("  network for commands: proxy: 127.0.0.1, *.example.com\n"),
        "{stdout}"
    );
}

#[tokio::test]
async fn a_bad_network_entry_is_a_config_problem_naming_it() {
    let home = Home::new(DSH);
    let cfg = home.path().join("bad.toml");
    std::fs::write(&cfg, "[sandbox]\nnetwork = [\"*\"]\n").unwrap();
    let mut c = home.tokio_dsh();
    c.args(["doctor", "--config"]).arg(&cfg);
    let (code, stdout, _) = run(c).await;
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("[sandbox] network"), "{stdout}");
    assert!(stdout.contains("NETWORK_ENTRY_BARE_WILDCARD"), "{stdout}");
    std::fs::write(&cfg, "[sandbox]\nnetwork = \"yes\"\n").unwrap();
    let mut c = home.tokio_dsh();
    c.args(["doctor", "--config"]).arg(&cfg);
    let (code, stdout, _) = run(c).await;
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("true, false, or a list of host names"),
        "{stdout}"
    );
}
