//! `dsh web` in a real browser: starts `dsh web --no-open --model echo
//! --permission read-only` in a temporary home and runs
//! `tests/web/driver.mjs` (playwright-core driving Debian's chromium, no
//! browser downloaded) against the `open:` link it prints. The driver's
//! scenarios: the security headers and a wrong token, the app's files,
//! first paint, a session with a streamed answer and a tool card,
//! markdown, approving and rejecting a call (the file on disk or not),
//! the permission picker, plan mode and the plan review, slash and `@`
//! completion (the commands `initialize` lists), the model picker (the
//! session's `info.models`), stop, a reload mid-turn, a reload while an
//! approval waits (the question still there, answered after it), a
//! dropped connection resumed, two tabs on one session, HTML injection,
//! the sidebar, and a session of 1,000 tool calls.
//!
//! Needs `node`, `chromium` (`DSH_CHROMIUM` names another) and
//! `npm ci` run in `tests/web/`; a missing one fails the test (it does
//! not skip). `DSH_WEB_SCREENSHOTS=docs/web` writes the screenshots there
//! (otherwise into the temporary home).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The driver's whole run may take this long.
const DRIVER_TIMEOUT: Duration = Duration::from_secs(300);

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn driver_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/web")
}

/// Starts `dsh web`; returns it and its `open:` link.
fn start(home: &Path, work: &Path) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dsh"))
        .args([
            "web",
            "--no-open",
            "--model",
            "echo",
            "--permission",
            "read-only",
            "--config",
        ])
        .arg(home.join("none.toml"))
        .current_dir(work)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env_remove("DEEPSEEK_API_KEY")
        .env_remove("DSH_PERMISSION")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("dsh web starts");
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut printed = Vec::new();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| {
                panic!("dsh web printed no open: line ({e}); it printed {printed:?}")
            });
        if let Some(url) = line.strip_prefix("open: ") {
            return (server, url.to_string());
        }
        printed.push(line);
    }
}

/// What a missing tool means, said once.
fn need(program: &str, install: &str) {
    let found = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "the browser tests need `{program}`, which was not found: {install}"
    );
}

#[test]
fn the_web_app_works_in_a_real_browser() {
    need("node", "apt-get install -y nodejs npm");
    let chromium = std::env::var("DSH_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    need(&chromium, "apt-get install -y chromium");
    let dir = driver_dir();
    assert!(
        dir.join("node_modules/playwright-core/package.json")
            .is_file(),
        "the browser tests need playwright-core: run `npm ci` in {}",
        dir.display()
    );

    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("none.toml"), "").unwrap();
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let sessions = home.path().join("data/dsh/sessions");
    let shots = match std::env::var_os("DSH_WEB_SCREENSHOTS") {
        Some(d) => Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(d),
        None => home.path().join("shots"),
    };
    let (_server, open) = start(home.path(), &work);

    let mut driver = Command::new("node")
        .arg(dir.join("driver.mjs"))
        .current_dir(&dir)
        .env("DSH_WEB_OPEN", &open)
        .env("DSH_WEB_WORKDIR", &work)
        .env("DSH_WEB_SESSIONS", &sessions)
        .env("DSH_WEB_SHOTS", &shots)
        .env("DSH_CHROMIUM", &chromium)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs the driver");
    let mut stdout = driver.stdout.take().unwrap();
    let mut stderr = driver.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = driver.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > DRIVER_TIMEOUT {
            let _ = driver.kill();
            let _ = driver.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = out.join().unwrap();
    let err = err.join().unwrap();
    println!("{out}");
    eprintln!("{err}");
    let status = status.unwrap_or_else(|| {
        panic!("the browser driver did not finish in {DRIVER_TIMEOUT:?}:\n{out}\n{err}")
    });
    assert!(
        status.success(),
        "the browser driver failed ({status}):\n{out}\n{err}"
    );
    let result = out
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("the driver printed no RESULT line:\n{out}"));
    let result: serde_json::Value = serde_json::from_str(result).unwrap();
    assert_eq!(result["failed"], 0, "{result}");
    assert!(
        result["passed"].as_u64().unwrap() >= 25,
        "every scenario ran: {result}"
    );
    assert!(
        result["timings"]["firstContentfulPaintMs"]
            .as_f64()
            .is_some(),
        "first paint measured: {result}"
    );
}
