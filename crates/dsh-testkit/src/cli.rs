//! The real `dsh` binary in a private home, for the end-to-end tests of
//! `crates/dsh-cli/tests/`.
//!
//! A [`Home`] is a fresh temp directory that dsh sees as `HOME` and as its
//! XDG config, data and state directories; [`Home::dsh`] builds a
//! [`std::process::Command`] for the binary with an environment that
//! cannot reach a real account or the developer's settings (every
//! inherited `DEEPSEEK_*` and `DSH_*` variable removed, `NO_COLOR` set,
//! stdin empty, stdout and stderr captured). The binary's path is an
//! argument because `env!("CARGO_BIN_EXE_dsh")` exists only inside
//! dsh-cli's own tests:
//!
//! ```ignore
//! const DSH: &str = env!("CARGO_BIN_EXE_dsh");
//! let home = Home::new(DSH).in_dir("project");
//! let out = home.dsh().args(["run", "echo hi"]).output().unwrap();
//! assert_eq!(home.only_log().last().unwrap()["type"], "turn/end");
//! ```
//!
//! Everything here is bounded in time: a hung dsh fails the test (after
//! being killed) instead of hanging it. The free functions ([`wait_until`],
//! [`wait_exit`], [`output_within`], [`outcome`]) poll a condition or wait
//! for a process; none sleeps in place of synchronising.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long one dsh command may take in the helpers that take no explicit
/// limit ([`outcome`], [`Home::outcome`]) before it counts as hung.
pub const LIMIT: Duration = Duration::from_secs(60);

/// A private home for one test: a temp directory (removed on drop) that
/// dsh sees as `HOME`, `XDG_CONFIG_HOME=<home>/config`,
/// `XDG_DATA_HOME=<home>/data` and `XDG_STATE_HOME=<home>/state`, and a
/// working directory in it (the home itself unless [`Home::in_dir`] names
/// another).
pub struct Home {
    dir: tempfile::TempDir,
    bin: PathBuf,
    cwd: PathBuf,
}

impl Home {
    /// A fresh home for the dsh binary at `bin` (in dsh-cli's tests,
    /// `env!("CARGO_BIN_EXE_dsh")`); dsh runs in the home itself.
    ///
    /// # Panics
    /// When no temp directory can be made.
    pub fn new(bin: impl AsRef<Path>) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir for the home");
        let cwd = dir.path().to_path_buf();
        Self {
            dir,
            bin: bin.as_ref().to_path_buf(),
            cwd,
        }
    }

    /// Makes `name` under the home (created, with its parents) dsh's
    /// working directory: a `ws` or `project` that is not the home.
    ///
    /// # Panics
    /// When the directory cannot be made.
    #[must_use]
    pub fn in_dir(mut self, name: &str) -> Self {
        self.cwd = self.dir.path().join(name);
        std::fs::create_dir_all(&self.cwd).expect("the working directory");
        self
    }

    /// Makes the user config directory ([`Home::config_dir`]), for tests
    /// that write their own files in it.
    ///
    /// # Panics
    /// When the directory cannot be made.
    #[must_use]
    pub fn with_config_dir(self) -> Self {
        std::fs::create_dir_all(self.config_dir()).expect("the user config directory");
        self
    }

    /// The home directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The directory dsh runs in (see [`Home::in_dir`]).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The dsh binary this home runs.
    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// dsh's user config directory, `<home>/config/dsh` (not created).
    pub fn config_dir(&self) -> PathBuf {
        self.path().join("config/dsh")
    }

    /// The user config file, `<home>/config/dsh/dsh.toml`.
    pub fn user_config(&self) -> PathBuf {
        self.config_dir().join("dsh.toml")
    }

    /// Writes `text` as the user config (trusted: it is the user's own),
    /// creating its directory.
    ///
    /// # Panics
    /// When the file cannot be written.
    pub fn write_user_config(&self, text: &str) {
        std::fs::create_dir_all(self.config_dir()).expect("the user config directory");
        std::fs::write(self.user_config(), text).expect("the user config is writable");
    }

    /// Writes `text` as `dsh.toml` in the working directory: a project
    /// config, untrusted until `dsh trust`.
    ///
    /// # Panics
    /// When the file cannot be written.
    pub fn write_project_config(&self, text: &str) {
        std::fs::write(self.cwd.join("dsh.toml"), text).expect("the project config is writable");
    }

    /// The default session directory, `<home>/data/dsh/sessions`.
    pub fn sessions(&self) -> PathBuf {
        self.path().join("data/dsh/sessions")
    }

    /// Every entry of [`Home::sessions`] (logs, session directories,
    /// anything else), sorted by name; none when it does not exist.
    pub fn session_entries(&self) -> Vec<PathBuf> {
        let mut all: Vec<PathBuf> = std::fs::read_dir(self.sessions())
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        all.sort();
        all
    }

    /// The session logs (`*.jsonl`) in [`Home::sessions`], sorted by name
    /// (session ids sort by creation time); none when it does not exist.
    pub fn session_logs(&self) -> Vec<PathBuf> {
        self.session_entries()
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect()
    }

    /// The events of every session log, in [`Home::session_logs`] order.
    ///
    /// # Panics
    /// When a log cannot be read or a line is not JSON.
    pub fn logs(&self) -> Vec<Vec<Value>> {
        self.session_logs().iter().map(|p| events(p)).collect()
    }

    /// The events of the one session log.
    ///
    /// # Panics
    /// Unless there is exactly one log, or when it is not JSONL.
    pub fn only_log(&self) -> Vec<Value> {
        let files = self.session_logs();
        assert_eq!(files.len(), 1, "{files:?}");
        events(&files[0])
    }

    /// The data of every event of type `ty` in the one session log.
    ///
    /// # Panics
    /// As [`Home::only_log`].
    pub fn of_type(&self, ty: &str) -> Vec<Value> {
        self.only_log()
            .into_iter()
            .filter(|e| e["type"] == ty)
            .map(|e| e["data"].clone())
            .collect()
    }

    /// The id of the one session (its log's name without `.jsonl`).
    ///
    /// # Panics
    /// Unless the session directory holds exactly one log.
    pub fn only_session(&self) -> String {
        let ids: Vec<String> = self
            .session_logs()
            .iter()
            .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
            .collect();
        assert_eq!(ids.len(), 1, "{ids:?}");
        ids[0].clone()
    }

    /// `dsh` (no arguments yet) in the working directory, with the home's
    /// environment: every inherited `DEEPSEEK_*` and `DSH_*` variable
    /// removed (so the offline echo model answers unless a test sets one),
    /// `NO_COLOR=1`, `HOME` and the three XDG directories in the home;
    /// stdin empty, stdout and stderr piped. A test adds its own variables
    /// and stdio after this.
    pub fn dsh(&self) -> Command {
        let home = self.path();
        let mut c = Command::new(&self.bin);
        c.current_dir(&self.cwd);
        for name in inherited_dsh_vars() {
            c.env_remove(name);
        }
        c.env("NO_COLOR", "1")
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_STATE_HOME", home.join("state"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// [`Home::dsh`] for a tokio test: killed when dropped.
    pub fn tokio_dsh(&self) -> tokio::process::Command {
        let mut c = tokio::process::Command::from(self.dsh());
        c.kill_on_drop(true);
        c
    }

    /// `dsh ARGS…` to its end, bounded by `limit` (a hang fails the test);
    /// its output and how long it took.
    ///
    /// # Panics
    /// When dsh cannot start or does not exit within `limit` (it is killed
    /// then).
    pub fn run(&self, args: &[&str], limit: Duration) -> (Output, Duration) {
        let started = Instant::now();
        let mut child = self.dsh().args(args).spawn().expect("dsh starts");
        wait_exit(&mut child, limit);
        let out = child.wait_with_output().expect("dsh's output");
        (out, started.elapsed())
    }

    /// `dsh ARGS…` in a tokio test, to its end within [`LIMIT`].
    ///
    /// # Panics
    /// As [`outcome`].
    pub async fn outcome(&self, args: &[&str]) -> Outcome {
        let mut c = self.tokio_dsh();
        c.args(args);
        outcome(c).await
    }
}

/// The names of the inherited variables that could point dsh at a real
/// account, model or setting: every `DEEPSEEK_*` and `DSH_*`, plus the
/// ones [`Home::dsh`] always clears.
fn inherited_dsh_vars() -> Vec<OsString> {
    let mut names: Vec<OsString> = [
        "DEEPSEEK_API_KEY",
        "DEEPSEEK_BASE_URL",
        "DSH_MODEL",
        "DSH_PERMISSION",
        "DSH_LOG",
        // The provider presets' key variables (docs/providers.md).
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "ANTHROPIC_API_KEY",
        "OLLAMA_API_KEY",
        "LMSTUDIO_API_KEY",
        "VLLM_API_KEY",
        "LLAMACPP_API_KEY",
    ]
    .into_iter()
    .map(OsString::from)
    .collect();
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if (text.starts_with("DEEPSEEK_") || text.starts_with("DSH_")) && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// How a finished dsh went: its exit code (-1 for a death by signal) and
/// its output as text (lossy UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The exit code, -1 when a signal ended it.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Outcome {
    /// `(code, stdout, stderr)`.
    pub fn into_parts(self) -> (i32, String, String) {
        (self.code, self.stdout, self.stderr)
    }
}

impl From<Output> for Outcome {
    fn from(out: Output) -> Self {
        Self {
            code: out.status.code().unwrap_or(-1),
            stdout: text(&out.stdout),
            stderr: text(&out.stderr),
        }
    }
}

/// A DeepSeek streaming reply (for a [`crate::LoopbackServer`]) whose
/// answer is `text`: an empty assistant chunk, the text, a `stop` chunk
/// with usage (11 prompt, 2 completion tokens), `[DONE]`.
pub fn text_reply(text: &str) -> crate::ScriptedResponse {
    crate::ScriptedResponse::sse(&[
        serde_json::json!({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}).to_string(),
        serde_json::json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]}).to_string(),
        serde_json::json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":2}}).to_string(),
        "[DONE]".to_string(),
    ])
}

/// Runs `cmd` (a tokio command; stdout and stderr captured) to its end.
///
/// # Panics
/// When it cannot start, or takes longer than [`LIMIT`] (it is killed on
/// drop when built with `kill_on_drop`, as [`Home::tokio_dsh`] does).
pub async fn outcome(mut cmd: tokio::process::Command) -> Outcome {
    tokio::time::timeout(LIMIT, cmd.output())
        .await
        .expect("dsh finished in time")
        .expect("dsh runs")
        .into()
}

/// Runs `cmd` to its end, writing `stdin` to it first when given (a
/// closed pipe, dsh exiting before it reads, is not an error), and
/// returns its output.
///
/// # Panics
/// When it cannot start, or takes longer than `limit`: it is killed
/// (SIGKILL) and the test fails, a hang being a failure, not a stuck test.
pub fn output_within(mut cmd: Command, stdin: Option<&str>, limit: Duration) -> Output {
    if stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd.spawn().expect("dsh starts");
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let input = input.to_string();
        std::thread::spawn(move || {
            if let Err(e) = pipe.write_all(input.as_bytes()) {
                assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
            }
        });
    }
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("dsh's output"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("dsh did not finish within {limit:?} (killed)");
        }
    }
}

/// Polls `ok` every 20 ms until it holds.
///
/// # Panics
/// When it still does not after `limit`, naming `what`.
pub fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child` to exit; its exit code (-1 for a death by signal).
///
/// # Panics
/// When it has not exited within `limit`: it is killed and the test fails.
pub fn wait_exit(child: &mut Child, limit: Duration) -> i32 {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("the child's status") {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("dsh did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `bytes` as text (lossy UTF-8).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The standard output of `out` as text.
pub fn stdout(out: &Output) -> String {
    text(&out.stdout)
}

/// The standard error of `out` as text.
pub fn stderr(out: &Output) -> String {
    text(&out.stderr)
}

/// The events of the session log (JSONL) at `path`.
///
/// # Panics
/// When it cannot be read or a line is not JSON.
pub fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("session log {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is an event"))
        .collect()
}

/// An interactive `dsh chat` on a real terminal: a detached tmux session
/// on a private server socket, killed on drop.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Whether tmux is installed.
    pub fn available() -> bool {
        Command::new("tmux")
            .arg("-V")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    }

    /// Fails the test unless tmux is installed (`.ci/run` installs it): a
    /// terminal test never skips silently.
    ///
    /// # Panics
    /// When tmux is missing.
    pub fn require() {
        assert!(
            Self::available(),
            "tmux is required for the terminal tests (apt-get install -y tmux; .ci/run does)"
        );
    }

    /// `dsh chat` in `home`'s working directory with its environment (as
    /// [`Home::dsh`], with `TERM=xterm-256color` and colour allowed) on a
    /// 160×50 terminal, in the plain line mode (`DSH_TUI=0`; the inline
    /// UI is tested through [`crate::screen::Screen`]); `tag` names the
    /// tmux socket (unique per test).
    ///
    /// # Panics
    /// When tmux cannot start the session.
    pub fn chat(home: &Home, tag: &str) -> Tmux {
        let script = home.path().join("run-dsh.sh");
        let q = |p: &Path| format!("'{}'", p.display());
        let unset: Vec<String> = inherited_dsh_vars()
            .iter()
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nunset {unset} NO_COLOR\nexport HOME={h} XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data XDG_STATE_HOME={h}/state TERM=xterm-256color DSH_TUI=0\ncd {cwd}\nexec {bin} chat\n",
                unset = unset.join(" "),
                h = q(home.path()),
                cwd = q(home.cwd()),
                bin = q(home.bin()),
            ),
        )
        .expect("the start script");
        let t = Tmux {
            socket: format!("dsh-test-{}-{tag}", std::process::id()),
        };
        let out = t.cmd(&[
            "new-session",
            "-d",
            "-s",
            "dsh",
            "-x",
            "160",
            "-y",
            "50",
            "sh",
            &script.to_string_lossy(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        t
    }

    /// `tmux ARGS…` on this session's server.
    ///
    /// # Panics
    /// When tmux cannot run.
    pub fn cmd(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs (the interactive tests need it)")
    }

    /// The screen as text (the last 200 lines of history too).
    pub fn screen(&self) -> String {
        text(
            &self
                .cmd(&["capture-pane", "-p", "-J", "-S", "-200", "-t", "dsh"])
                .stdout,
        )
    }

    /// [`Tmux::screen`] with its styling as escape sequences (`-e`).
    pub fn styled_screen(&self) -> String {
        text(
            &self
                .cmd(&["capture-pane", "-p", "-e", "-J", "-S", "-200", "-t", "dsh"])
                .stdout,
        )
    }

    /// Waits (30 s at most) until the screen satisfies `pred`: a state, not
    /// a fixed delay. Returns that screen.
    ///
    /// # Panics
    /// On time-out, naming `what` and showing the screen.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        self.wait_for_with(what, pred, Self::screen)
    }

    /// [`Tmux::wait_for`] on the [`Tmux::styled_screen`].
    ///
    /// # Panics
    /// As [`Tmux::wait_for`].
    pub fn wait_for_styled(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        self.wait_for_with(what, pred, Self::styled_screen)
    }

    fn wait_for_with(
        &self,
        what: &str,
        pred: impl Fn(&str) -> bool,
        capture: fn(&Self) -> String,
    ) -> String {
        poll_screen(
            what,
            Duration::from_secs(30),
            Duration::from_millis(50),
            || capture(self),
            pred,
            || capture(self),
        )
    }

    /// Types `keys` (tmux `send-keys` names: text, `Enter`, `C-c`…).
    ///
    /// # Panics
    /// When tmux refuses them.
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "dsh"];
        args.extend_from_slice(keys);
        assert!(self.cmd(&args).status.success());
    }

    /// Whether the session (dsh) is still running.
    pub fn alive(&self) -> bool {
        self.cmd(&["has-session", "-t", "dsh"]).status.success()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// Reads a screen with `get` every `every` until `pred` holds, for at
/// most `limit`; returns that screen.
///
/// # Panics
/// On time-out, naming `what` and showing what `shown` reads then.
pub(crate) fn poll_screen(
    what: &str,
    limit: Duration,
    every: Duration,
    mut get: impl FnMut() -> String,
    pred: impl Fn(&str) -> bool,
    shown: impl Fn() -> String,
) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let screen = get();
        if pred(&screen) {
            return screen;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; screen:\n{}",
            shown()
        );
        std::thread::sleep(every);
    }
}
