//! Running the `git` binary against the private store, with a scrubbed
//! environment and hardened configuration, and reading its NUL-separated
//! output as raw path bytes.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::CheckpointError;

/// Configuration passed with `-c` on every call: no fsmonitor, hooks,
/// line-ending conversion, automatic gc, or quoting of paths.
const HARDENING: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.attributesFile=/dev/null",
    "core.symlinks=true",
    "core.filemode=true",
    "core.ignoreCase=false",
    "core.precomposeUnicode=false",
    "core.untrackedCache=false",
    "core.splitIndex=false",
    "core.sparseCheckout=false",
    "index.version=2",
    "gc.auto=0",
    // The index is a cache, rebuilt when torn; loose objects are never
    // synced by default either.
    "core.fsync=none",
    "maintenance.auto=false",
    "core.quotepath=false",
    "advice.addEmbeddedRepo=false",
    "protocol.allow=never",
];

/// Whether a variable of the parent's environment must not reach git: every
/// `GIT_*` variable (they would redirect the repository, index or config)
/// and anything that looks like a credential.
pub(crate) fn is_scrubbed(name: &OsStr) -> bool {
    let upper = name.to_string_lossy().to_ascii_uppercase();
    upper.starts_with("GIT_")
        || ["KEY", "SECRET", "TOKEN", "PASSWORD"]
            .iter()
            .any(|w| upper.contains(w))
}

/// How to run git against one store and work tree.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    pub(crate) git_dir: PathBuf,
    pub(crate) work_tree: PathBuf,
    /// `core.excludesFile`: the workspace repository's `.git/info/exclude`
    /// when there is one, else `/dev/null` (the user's global ignore file is
    /// never read).
    pub(crate) excludes_file: PathBuf,
}

impl Git {
    /// A `git` command with the store's environment and hardening, run in
    /// the work tree. `args` follow the hardening options.
    pub(crate) fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new("git");
        for (name, _) in std::env::vars_os() {
            if is_scrubbed(&name) {
                cmd.env_remove(&name);
            }
        }
        cmd.env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.work_tree)
            .env("GIT_INDEX_FILE", self.git_dir.join("index"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .env("LC_ALL", "C")
            .current_dir(&self.work_tree)
            .stdin(Stdio::null());
        for c in HARDENING {
            cmd.arg("-c").arg(c);
        }
        let mut excludes = OsString::from("core.excludesFile=");
        excludes.push(&self.excludes_file);
        cmd.arg("-c").arg(excludes);
        cmd.args(args);
        cmd
    }

    /// Runs git with `args`, feeding `input` on stdin (from a thread, so a
    /// large input cannot deadlock against a large output). A failure to
    /// start git (not installed) is `Unavailable`; a non-zero exit is
    /// returned as the `Output` for the caller to classify.
    pub(crate) fn output<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        input: Option<&[u8]>,
    ) -> Result<Output, CheckpointError> {
        let mut cmd = self.command(args);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        if input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd.spawn().map_err(|e| self.spawn_error(e))?;
        let stdin = child.stdin.take();
        std::thread::scope(|s| {
            if let (Some(mut pipe), Some(bytes)) = (stdin, input) {
                s.spawn(move || {
                    // A write error means git exited early; its status and
                    // stderr say why.
                    let _ = pipe.write_all(bytes);
                });
            }
            child.wait_with_output()
        })
        .map_err(|e| self.spawn_error(e))
    }

    /// Runs git and returns its stdout, or `Git` naming `what` with git's
    /// stderr when it exits non-zero.
    pub(crate) fn run<S: AsRef<OsStr>>(
        &self,
        what: &str,
        args: &[S],
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, CheckpointError> {
        let out = self.output(args, input)?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(self.failed(what, &out))
        }
    }

    /// The error for a git command that exited non-zero.
    pub(crate) fn failed(&self, what: &str, out: &Output) -> CheckpointError {
        CheckpointError::Git {
            command: what.to_string(),
            store: self.git_dir.clone(),
            message: stderr_message(out),
        }
    }

    /// The error for git that could not be started.
    pub(crate) fn spawn_error(&self, e: std::io::Error) -> CheckpointError {
        let reason = if e.kind() == std::io::ErrorKind::NotFound {
            "git is not installed (no `git` on PATH); install git to use checkpoints".to_string()
        } else {
            format!("cannot run git: {e}")
        };
        CheckpointError::Unavailable {
            store: self.git_dir.clone(),
            reason,
        }
    }
}

/// git's stderr, trimmed to its last lines, or the exit status when silent.
pub(crate) fn stderr_message(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return format!("exited with {}", out.status);
    }
    let start = lines.len().saturating_sub(4);
    lines[start..].join("; ")
}

/// Splits NUL-terminated output into paths (raw bytes, no decoding).
pub(crate) fn split_z(bytes: &[u8]) -> Vec<PathBuf> {
    bytes
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| PathBuf::from(OsString::from_vec(s.to_vec())))
        .collect()
}

/// Paths joined for a `-z --stdin` input: each followed by a NUL.
pub(crate) fn join_z<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Vec<u8> {
    let mut out = Vec::new();
    for p in paths {
        out.extend_from_slice(p.as_os_str().as_bytes());
        out.push(0);
    }
    out
}

/// A path as one line of `hash-object --stdin-paths` input: verbatim when
/// that is unambiguous, else C-quoted (git unquotes a line that starts with
/// `"`), so newlines, carriage returns and leading quotes survive.
pub(crate) fn stdin_path_line(path: &Path, out: &mut Vec<u8>) {
    let bytes = path.as_os_str().as_bytes();
    let needs_quote = bytes.first() == Some(&b'"') || bytes.iter().any(|b| *b < 0x20 || *b == 0x7f);
    if !needs_quote {
        out.extend_from_slice(bytes);
        out.push(b'\n');
        return;
    }
    out.push(b'"');
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b if !(0x20..0x7f).contains(&b) => {
                out.extend_from_slice(format!("\\{b:03o}").as_bytes());
            }
            b => out.push(b),
        }
    }
    out.extend_from_slice(b"\"\n");
}

/// Whether `s` is a full hex object id (SHA-1 or SHA-256).
pub(crate) fn is_oid(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_git_variables_and_credentials() {
        for name in [
            "GIT_DIR",
            "git_index_file",
            "DEEPSEEK_API_KEY",
            "GH_TOKEN",
            "MY_SECRET",
            "DB_PASSWORD",
        ] {
            assert!(is_scrubbed(OsStr::new(name)), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "DIGIT"] {
            assert!(!is_scrubbed(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn quotes_only_paths_that_need_it() {
        let mut out = Vec::new();
        stdin_path_line(Path::new("a b/c.txt"), &mut out);
        stdin_path_line(Path::new("x\ny"), &mut out);
        stdin_path_line(Path::new("\"q\\"), &mut out);
        stdin_path_line(Path::new(OsStr::from_bytes(b"\xff\r")), &mut out);
        assert_eq!(
            out,
            b"a b/c.txt\n\"x\\ny\"\n\"\\\"q\\\\\"\n\"\\377\\r\"\n".to_vec()
        );
    }

    #[test]
    fn oids_are_hex_of_the_right_length() {
        assert!(is_oid("4b825dc642cb6eb9a060e54bf8d69288fbee4904"));
        assert!(!is_oid("--output=/tmp/x"));
        assert!(!is_oid("4b825dc642cb6eb9a060e54bf8d69288fbee490"));
        assert!(!is_oid("HEAD"));
    }
}
