//! Real package-manager clients (pip, npm, cargo) under the network-by-domain
//! sandbox: a confined command reaches a listed registry through the
//! session's proxy and is refused an unlisted one. The registries are
//! stubs this test serves on the host's loopback; every check is on what
//! the stub received and what landed in the workspace, not on what the
//! client printed. `registry.test` and `other.test` both resolve to
//! 127.0.0.1 for the proxy; only `registry.test` (and the address) are
//! listed.
//!
//! A test skips, printing `SKIP:` and why, only when the machine has no
//! network namespaces or the client is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod registry_stub;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Fixture;
use dsh_bash::{BashExecutor, BashRequest, RunResult};
use dsh_sandbox::SandboxMode;
use registry_stub::{digests, json_str, read, tar_gz, zip, Seen, Stub};

/// The listed registry's name.
const LISTED: &str = "registry.test";
/// A name the proxy resolves to the stub too, but that is not listed.
const UNLISTED: &str = "other.test";
/// The note a refused run carries.
const REFUSED_NOTE: &str =
    "[sandbox: network to other.test denied; allowed: registry.test, 127.0.0.1]";
/// The shell's own limit for one client command (`timeout`), the
/// executor's, and the test's: a hang fails instead of blocking CI.
const CLIENT_TIMEOUT_S: u64 = 40;
const RUN_TIMEOUT: Duration = Duration::from_secs(50);
const TEST_DEADLINE: Duration = Duration::from_secs(60);

/// A workspace-write executor whose commands reach `registry.test` (and
/// 127.0.0.1) through the proxy; the proxy's denials are collected.
fn fixture() -> (Fixture, Arc<Mutex<Vec<String>>>) {
    common::proxied(
        SandboxMode::WorkspaceWrite,
        &[LISTED, "127.0.0.1"],
        &[LISTED, UNLISTED],
    )
}

/// Whether the namespace layer (with its network namespace) is here;
/// prints why not.
fn layer_here() -> bool {
    common::network_layer_here()
}

/// Whether `program args` runs on the host; prints SKIP when not. Returns
/// its first output line (the version) when it does.
fn client(program: &str, args: &[&str]) -> Option<String> {
    match Command::new(program).args(args).output() {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let version = text.lines().next().unwrap_or_default().to_string();
            eprintln!("client: {program} {}: {version}", args.join(" "));
            Some(version)
        }
        Ok(out) => {
            eprintln!(
                "SKIP: `{program} {}` failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
            None
        }
        Err(e) => {
            eprintln!("SKIP: {program} is not installed ({e})");
            None
        }
    }
}

/// Runs `command` (stderr folded into stdout by the caller) under the
/// client timeout, failing the test if the executor does not return.
async fn run(f: &Fixture, command: &str) -> RunResult {
    let command = format!(
        "timeout {CLIENT_TIMEOUT_S} bash -c {}",
        shell_quote(command)
    );
    let spec = f
        .exec
        .resolve(BashRequest::new(command).with_timeout_ms(RUN_TIMEOUT.as_millis() as u64));
    tokio::time::timeout(TEST_DEADLINE, f.exec.run(spec))
        .await
        .expect("run finished before the deadline")
        .expect("run succeeded")
}

/// `s` as one single-quoted shell word.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Asserts that every request the stub got came through the proxy for
/// the listed name: the proxy keeps the client's `Host` and rewrites the
/// target to origin-form, and a confined command has no other way to
/// the host's loopback (tests/network.rs proves that).
fn assert_via_proxy(seen: &[Seen], port: u16) {
    for s in seen {
        assert_eq!(s.host, format!("{LISTED}:{port}"), "{seen:?}");
        assert!(s.target.starts_with('/'), "origin-form: {seen:?}");
        assert_eq!(s.method, "GET", "{seen:?}");
    }
}

/// Asserts a refused run: it failed, carries the note, the proxy denied
/// only the unlisted name, and the stub saw nothing new.
fn assert_refused(r: &RunResult, denied: &Mutex<Vec<String>>, stub: &Stub, before: usize) {
    assert_ne!(r.exit_code, Some(0), "{r:?}");
    assert_eq!(r.sandbox_denial.as_deref(), Some(REFUSED_NOTE), "{r:?}");
    let denied = denied.lock().unwrap();
    assert!(!denied.is_empty(), "the proxy denied it: {r:?}");
    assert!(denied.iter().all(|h| h == UNLISTED), "{denied:?}");
    assert_eq!(
        stub.seen().len(),
        before,
        "the stub saw nothing more: {:?}",
        stub.seen()
    );
}

#[tokio::test]
async fn pip_downloads_from_a_listed_index_through_the_proxy_and_is_refused_an_unlisted_one() {
    if !layer_here() || client("python3", &["-m", "pip", "--version"]).is_none() {
        return;
    }
    let stub = Stub::start();
    let wheel_name = "dshstub-0.1.0-py3-none-any.whl";
    let wheel = zip(&[
        ("dshstub/__init__.py", "VALUE = 42\n"),
        (
            "dshstub-0.1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: dshstub\nVersion: 0.1.0\n",
        ),
        (
            "dshstub-0.1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: dsh-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        ),
        ("dshstub-0.1.0.dist-info/RECORD", ""),
    ]);
    let sha256 = digests(&wheel).sha256_hex;
    let index = format!(
        "<!DOCTYPE html>\n<html><body>\n<a href=\"/files/{wheel_name}#sha256={sha256}\">{wheel_name}</a>\n</body></html>\n"
    );
    stub.serve("/simple/dshstub/", "text/html", index.into_bytes());
    stub.serve(
        &format!("/files/{wheel_name}"),
        "application/octet-stream",
        wheel.clone(),
    );
    let (f, denied) = fixture();
    // No user or site pip config, no find-links from the environment: the
    // index named here is the only source. `--trusted-host` because pip
    // ignores a plain-http index otherwise (before any connection).
    let pip = |host: &str, dir: &str| {
        format!(
            "unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL; \
             export PIP_CONFIG_FILE=/dev/null PIP_NO_CACHE_DIR=1; \
             python3 -m pip download --no-deps --disable-pip-version-check --no-input \
             --retries 0 --timeout 10 --index-url http://{host}:{port}/simple/ \
             --trusted-host {host} -d {dir} dshstub==0.1.0 2>&1",
            port = stub.port
        )
    };

    let r = run(&f, &pip(LISTED, "dl")).await;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert_eq!(r.sandbox_denial, None, "{r:?}");
    assert_eq!(
        read(&f.tmp.path().join("dl").join(wheel_name)),
        wheel,
        "the wheel arrived in the workspace byte for byte"
    );
    assert_eq!(
        stub.targets(),
        [
            "/simple/dshstub/".to_string(),
            format!("/files/{wheel_name}")
        ]
    );
    assert_via_proxy(&stub.seen(), stub.port);
    assert!(denied.lock().unwrap().is_empty());

    let before = stub.seen().len();
    let r = run(&f, &pip(UNLISTED, "refused")).await;
    assert_refused(&r, &denied, &stub, before);
    assert!(!f.tmp.path().join("refused").join(wheel_name).exists());
    f.exec.dispose().await;
}

#[tokio::test]
async fn npm_fetches_from_a_listed_registry_through_the_proxy_and_is_refused_an_unlisted_one() {
    if !layer_here() || client("npm", &["--version"]).is_none() {
        return;
    }
    let stub = Stub::start();
    let (name, version) = ("dsh-stub-pkg", "1.0.0");
    let tarball = tar_gz(&[
        (
            "package/package.json",
            "{\"name\":\"dsh-stub-pkg\",\"version\":\"1.0.0\",\"main\":\"index.js\"}\n",
        ),
        ("package/index.js", "module.exports = 42;\n"),
    ]);
    let d = digests(&tarball);
    let tarball_path = format!("/{name}/-/{name}-{version}.tgz");
    let packument = |host: &str| {
        format!(
            "{{\"name\":{n},\"dist-tags\":{{\"latest\":{v}}},\"versions\":{{{v}:{{\
             \"name\":{n},\"version\":{v},\"dist\":{{\
             \"tarball\":{t},\"integrity\":{i},\"shasum\":{s}}}}}}}}}",
            n = json_str(name),
            v = json_str(version),
            t = json_str(&format!("http://{host}:{}{tarball_path}", stub.port)),
            i = json_str(&format!("sha512-{}", d.sha512_b64)),
            s = json_str(&d.sha1_hex),
        )
    };
    stub.serve(
        &format!("/{name}"),
        "application/json",
        packument(LISTED).into_bytes(),
    );
    stub.serve(&tarball_path, "application/octet-stream", tarball.clone());
    let (f, denied) = fixture();
    // Cache and logs in the workspace; no user config; the proxy comes
    // from the environment the sandbox sets.
    let npm = |host: &str, dir: &str| {
        format!(
            "mkdir -p {dir} && cd {dir} && \
             export npm_config_cache=$PWD/../.npm npm_config_userconfig=/dev/null \
             npm_config_update_notifier=false; \
             npm pack {name}@{version} --registry http://{host}:{port}/ \
             --fetch-retries=0 --fetch-timeout=10000 --no-audit --no-fund 2>&1",
            port = stub.port
        )
    };

    let r = run(&f, &npm(LISTED, "dl")).await;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert_eq!(r.sandbox_denial, None, "{r:?}");
    assert_eq!(
        read(
            &f.tmp
                .path()
                .join("dl")
                .join(format!("{name}-{version}.tgz"))
        ),
        tarball,
        "the tarball arrived in the workspace byte for byte"
    );
    // npm asks for the packument more than once (the manifest, then the
    // pack; nothing is cacheable), the tarball once, nothing else.
    let targets = stub.targets();
    let (packuments, rest): (Vec<_>, Vec<_>) =
        targets.iter().partition(|t| **t == format!("/{name}"));
    assert!(!packuments.is_empty(), "{targets:?}");
    assert_eq!(rest, [&tarball_path], "{targets:?}");
    assert_via_proxy(&stub.seen(), stub.port);
    assert!(denied.lock().unwrap().is_empty());

    let before = stub.seen().len();
    let r = run(&f, &npm(UNLISTED, "refused")).await;
    assert_refused(&r, &denied, &stub, before);
    assert!(!f
        .tmp
        .path()
        .join("refused")
        .join(format!("{name}-{version}.tgz"))
        .exists());
    f.exec.dispose().await;
}

/// A scratch cargo project at `dir` depending on `dshstub` from the
/// sparse registry `stub` at `host:port`.
fn cargo_project(dir: &Path, host: &str, port: u16) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join(".cargo")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\ndshstub = { version = \"0.1.0\", registry = \"stub\" }\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        dir.join(".cargo/config.toml"),
        format!("[registries.stub]\nindex = \"sparse+http://{host}:{port}/index/\"\n"),
    )
    .unwrap();
}

/// The one path matching `<root>/*/<leaf>` (cargo names the registry's
/// directory after its URL with a hash).
fn under_registry_dir(root: &Path, leaf: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path().join(leaf))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(found.len(), 1, "{leaf} under {}: {found:?}", root.display());
    found.into_iter().next().unwrap()
}

#[tokio::test]
async fn cargo_fetches_from_a_listed_sparse_registry_through_the_proxy_and_is_refused_an_unlisted_one(
) {
    if !layer_here() || client("cargo", &["--version"]).is_none() {
        return;
    }
    let stub = Stub::start();
    let lib_rs = "pub const VALUE: u32 = 42;\n";
    let krate = tar_gz(&[
        (
            "dshstub-0.1.0/Cargo.toml",
            "[package]\nname = \"dshstub\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("dshstub-0.1.0/src/lib.rs", lib_rs),
    ]);
    let cksum = digests(&krate).sha256_hex;
    let base = format!("http://{LISTED}:{}", stub.port);
    stub.serve(
        "/index/config.json",
        "application/json",
        format!("{{\"dl\":\"{base}/dl/{{crate}}/{{version}}/download\",\"api\":\"{base}\"}}")
            .into_bytes(),
    );
    stub.serve(
        "/index/ds/hs/dshstub",
        "text/plain",
        format!(
            "{{\"name\":\"dshstub\",\"vers\":\"0.1.0\",\"deps\":[],\"cksum\":\"{cksum}\",\
             \"features\":{{}},\"yanked\":false}}\n"
        )
        .into_bytes(),
    );
    stub.serve(
        "/dl/dshstub/0.1.0/download",
        "application/octet-stream",
        krate.clone(),
    );
    let (f, denied) = fixture();
    let ws = f.tmp.path();
    cargo_project(&ws.join("app"), LISTED, stub.port);
    cargo_project(&ws.join("refused"), UNLISTED, stub.port);
    // CARGO_HOME in the workspace (the host's is read-only to the command);
    // the proxy comes from the environment the sandbox sets.
    let cargo = |dir: &str| {
        format!(
            "cd {dir} && unset CARGO_NET_OFFLINE CARGO_HTTP_PROXY; \
             export CARGO_HOME=$PWD/../cargo-home CARGO_NET_RETRY=0 CARGO_HTTP_TIMEOUT=10 \
             CARGO_TERM_COLOR=never; cargo fetch 2>&1"
        )
    };

    let r = run(&f, &cargo("app")).await;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert_eq!(r.sandbox_denial, None, "{r:?}");
    let home = ws.join("cargo-home/registry");
    assert_eq!(
        read(&under_registry_dir(
            &home.join("cache"),
            "dshstub-0.1.0.crate"
        )),
        krate,
        "the .crate arrived in the workspace byte for byte"
    );
    assert_eq!(
        read(&under_registry_dir(
            &home.join("src"),
            "dshstub-0.1.0/src/lib.rs"
        )),
        lib_rs.as_bytes(),
        "and was unpacked"
    );
    let lock = String::from_utf8(read(&ws.join("app/Cargo.lock"))).unwrap();
    assert!(
        lock.contains(&format!("source = \"sparse+{base}/index/\"")) && lock.contains(&cksum),
        "{lock}"
    );
    assert_eq!(
        stub.targets(),
        [
            "/index/config.json",
            "/index/ds/hs/dshstub",
            "/dl/dshstub/0.1.0/download"
        ]
    );
    assert_via_proxy(&stub.seen(), stub.port);
    assert!(denied.lock().unwrap().is_empty());

    let before = stub.seen().len();
    let r = run(&f, &cargo("refused")).await;
    assert_refused(&r, &denied, &stub, before);
    assert!(!ws.join("refused/Cargo.lock").exists());
    f.exec.dispose().await;
}
