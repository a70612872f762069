//! Recognising, in a failed command's stderr, a write the sandbox refused.
//!
//! Programs word the kernel's refusal in their own ways; [`denial_note`]
//! knows the common forms (listed on [`denied_paths`]) and blames the
//! sandbox only when such a line names a path outside the writable roots of
//! a confining mode and the command failed.

use std::path::{Path, PathBuf};

use crate::{SandboxMode, SandboxPolicy};

/// The line shown to the model when the sandbox stopped a command:
/// `[sandbox: write denied under workspace-write mode]`.
pub fn denial_line(mode: SandboxMode) -> String {
    format!("[sandbox: write denied under {mode} mode]")
}

/// The line shown to the model when a scoped command was refused a signal
/// to a process outside it: `[sandbox: signal to a process outside this
/// command denied under workspace-write mode; stop background jobs with
/// job_kill]`.
pub fn signal_denial_line(mode: SandboxMode) -> String {
    format!(
        "[sandbox: signal to a process outside this command denied under {mode} mode; stop background jobs with job_kill]"
    )
}

/// The error texts for a refused write, in lower case (matched in any
/// case): the C library's for `EACCES`, `EPERM`, `EXDEV` (a link or rename
/// across the sandbox boundary) and `EROFS`, and libuv's (Node) wording of
/// `EXDEV`.
const DENIAL_ERRORS: [&str; 5] = [
    "permission denied",
    "operation not permitted",
    "invalid cross-device link",
    "read-only file system",
    "cross-device link not permitted",
];

/// [`denial_line`] when a command under `policy` failed because of the
/// sandbox: the mode confines, the exit status is non-zero (or the command
/// died from a signal, `None`), and a line of `stderr` reports a refused
/// write in one of the forms [`denied_paths`] knows while naming a path
/// outside the writable roots. Relative paths are judged against `workdir`.
/// Else [`signal_denial_line`] when a line is `kill`/`pkill` refused with
/// `EPERM` ([`is_refused_signal`]) and this kernel scopes signals
/// ([`crate::SCOPE_ABI`]). `None` otherwise: a command that failed for its
/// own reasons is never blamed on the sandbox.
pub fn denial_note(
    policy: &SandboxPolicy,
    workdir: &Path,
    exit_code: Option<i32>,
    stderr: &str,
) -> Option<String> {
    if !policy.mode.confines() || exit_code == Some(0) {
        return None;
    }
    let blamed = stderr.lines().any(|line| {
        denied_paths(line).into_iter().any(|p| {
            let abs = if p.is_absolute() { p } else { workdir.join(p) };
            !policy.is_writable(&abs)
        })
    });
    if blamed {
        return Some(denial_line(policy.mode));
    }
    // Scoping (ABI 6+) is what refuses a signal to a process outside the
    // command's domain; without it an EPERM from kill is the target's
    // owner's doing, not the sandbox's.
    let signal_refused = stderr.lines().any(is_refused_signal);
    if signal_refused && crate::probe().scoping() {
        return Some(signal_denial_line(policy.mode));
    }
    // In its own PID namespace a command is told `No such process` for a
    // process that runs outside it: blamed when dsh sees that process.
    stderr
        .lines()
        .filter_map(unseen_signal_target)
        .any(|pid| Path::new(&format!("/proc/{pid}")).exists())
        .then(|| signal_denial_line(policy.mode))
}

/// The pid of a `kill`/`pkill` line refused with `ESRCH` (`No such
/// process`), in the forms [`is_refused_signal`] knows.
fn unseen_signal_target(line: &str) -> Option<u32> {
    let target = failed_kill_target(line, "no such process")?;
    let n: String = target.chars().take_while(char::is_ascii_digit).collect();
    n.parse().ok().filter(|p| *p > 1)
}

/// Where `kill` and `pkill` name the process in a failure line: bash's
/// builtin `kill: (123)`, procps and util-linux `kill: sending signal to
/// 123`, `pkill` `killing pid 123`.
const KILL_TARGET_MARKERS: [&str; 3] = ["kill: (", "kill: sending signal to ", "killing pid "];

/// The text after the target marker of a `kill`/`pkill` line (lower case)
/// ending with `error` (lower case), in the forms [`KILL_TARGET_MARKERS`]
/// names.
fn failed_kill_target(line: &str, error: &str) -> Option<String> {
    let lower = line.trim().to_ascii_lowercase();
    let head = lower.strip_suffix(error)?;
    KILL_TARGET_MARKERS
        .iter()
        .find_map(|m| head.find(m).map(|at| head[at + m.len()..].to_string()))
}

/// Whether a line of stderr is `kill` or `pkill` reporting a signal the
/// kernel refused with `EPERM`, in the forms of bash's builtin (`bash: line
/// 1: kill: (123) - Operation not permitted`), procps' and util-linux's
/// `kill` (`kill: (123): Operation not permitted`, `kill: sending signal to
/// 123 failed: Operation not permitted`) and `pkill`/`killall` (`pkill:
/// killing pid 123 failed: Operation not permitted`).
pub fn is_refused_signal(line: &str) -> bool {
    const EPERM: &str = "operation not permitted";
    failed_kill_target(line, EPERM).is_some() || {
        let lower = line.trim().to_ascii_lowercase();
        lower.ends_with(EPERM) && lower.starts_with("killall: ")
    }
}

/// The paths a line of stderr names as refused, when the line reports a
/// refused write (`Permission denied`, `Operation not permitted`, `Invalid
/// cross-device link`, `Read-only file system`, Node's `cross-device link
/// not permitted`, in any case) in a known form; empty otherwise. The forms:
///
/// - the error text ends the line, after the path: coreutils and bash
///   (`touch: cannot touch '/x': Permission denied`, `cp: cannot create
///   regular file '/x': …`, `mkdir: cannot create directory ‘/x’: …`,
///   `bash: line 1: /x: …`), dash and busybox (`sh: 1: cannot create /x:
///   Permission denied`, `sh: can't create /x: …`), Go (`open /x:
///   permission denied`); also with Rust's ` (os error 13)` or Perl's
///   ` at FILE line N.` after it;
/// - Python: `PermissionError: [Errno 13] Permission denied: '/x'` (and
///   `'a' -> 'b'` for a rename);
/// - Node: `Error: EACCES: permission denied, open '/x'`;
/// - Ruby: `Permission denied @ rb_sysopen - /x (Errno::EACCES)`.
pub fn denied_paths(line: &str) -> Vec<PathBuf> {
    let line = strip_trailers(line.trim());
    let lower = line.to_ascii_lowercase();
    for error in DENIAL_ERRORS {
        let Some(at) = lower.rfind(error) else {
            continue;
        };
        // Lower-casing ASCII keeps byte offsets, so these slices line up.
        let (before, after) = (&line[..at], &line[at + error.len()..]);
        let found: Vec<PathBuf> = if after.is_empty() {
            paths_before(before)
        } else if let Some(rest) = after.strip_prefix(": ") {
            // Python: the quoted path(s) follow the error text.
            quoted(rest).collect()
        } else if after.starts_with(", ") {
            // Node: `, <syscall> '<path>'`.
            quoted(after).collect()
        } else if let Some(rest) = after.strip_prefix(" @ ") {
            // Ruby: `@ <function> - <path> (Errno::…)`.
            rest.split_once(" - ")
                .map(|(_, p)| p.split(" (Errno::").next().unwrap_or(p).trim())
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .into_iter()
                .collect()
        } else {
            Vec::new()
        };
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

/// `line` without what some runtimes write after the error text: Rust's
/// ` (os error N)` and Perl's ` at FILE line N.`.
fn strip_trailers(line: &str) -> &str {
    let mut line = line;
    if let Some(head) = line.strip_suffix(')') {
        if let Some((head, code)) = head.rsplit_once(" (os error ") {
            if code.bytes().all(|b| b.is_ascii_digit()) {
                line = head;
            }
        }
    }
    if let Some(head) = line.strip_suffix('.') {
        if let Some((head, tail)) = head.rsplit_once(" at ") {
            let is_perl = tail
                .rsplit_once(" line ")
                .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if is_perl {
                line = head;
            }
        }
    }
    line
}

/// Words between quotes (`'…'`, `"…"`, `‘…’`) in `text`.
fn quoted(text: &str) -> impl Iterator<Item = PathBuf> + '_ {
    text.split(['\'', '"', '‘', '’'])
        .skip(1)
        .step_by(2)
        .filter(|w| !w.is_empty())
        .map(PathBuf::from)
}

/// Candidate paths in the part of an error line before its closing error
/// text: quoted words, `: `-separated fields that look like paths, the
/// field just before the error (`bash: line 1: out.txt: …`), the object of
/// dash's and busybox's `cannot create X` / `can't create X`, and any
/// whitespace-separated word starting with `/` (Go's `open /x: …`).
fn paths_before(before: &str) -> Vec<PathBuf> {
    let before = before.trim_end().trim_end_matches(':');
    let mut out: Vec<PathBuf> = quoted(before).collect();
    let fields: Vec<&str> = before.split(": ").map(str::trim).collect();
    // The first field is the program's name (`sudo: Operation not
    // permitted`), never the path.
    if let Some(last) = fields
        .last()
        .filter(|f| fields.len() >= 2 && !f.is_empty() && !f.contains(' '))
    {
        out.push(PathBuf::from(last));
    }
    for field in &fields {
        if field.contains('/') && (!field.contains(' ') || field.starts_with('/')) {
            out.push(PathBuf::from(field));
        }
        for verb in ["cannot create ", "can't create "] {
            if let Some(object) = field.strip_prefix(verb).filter(|o| !o.is_empty()) {
                out.push(PathBuf::from(object));
            }
        }
        out.extend(
            field
                .split_whitespace()
                .filter(|w| w.starts_with('/'))
                .map(PathBuf::from),
        );
    }
    out
}

#[cfg(test)]
mod signal_target_tests {
    use super::unseen_signal_target;

    #[test]
    fn esrch_lines_give_their_pid() {
        assert_eq!(
            unseen_signal_target("bash: line 1: kill: (4242) - No such process"),
            Some(4242)
        );
        assert_eq!(
            unseen_signal_target("kill: sending signal to 77 failed: No such process"),
            Some(77)
        );
        assert_eq!(
            unseen_signal_target("pkill: killing pid 99 failed: No such process"),
            Some(99)
        );
        assert_eq!(unseen_signal_target("kill: (1) - No such process"), None);
        assert_eq!(
            unseen_signal_target("cat: x: No such file or directory"),
            None
        );
        assert_eq!(unseen_signal_target("kill: (abc) - No such process"), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::policy;

    /// The refused-signal forms of bash's builtin, procps/util-linux kill,
    /// pkill and killall; a missing process, or another error, is not one.
    #[test]
    fn refused_signals_are_recognised_in_each_programs_words() {
        for line in [
            "bash: line 1: kill: (4242) - Operation not permitted",
            "bash: kill: (4242) - Operation not permitted",
            "kill: (4242): Operation not permitted",
            "kill: sending signal to 4242 failed: Operation not permitted",
            "pkill: killing pid 4242 failed: Operation not permitted",
            "killall: 4242: Operation not permitted",
        ] {
            assert!(is_refused_signal(line), "{line}");
        }
        for line in [
            "bash: line 1: kill: (4242) - No such process",
            "touch: cannot touch '/etc/x': Operation not permitted",
            "kill: (4242): Operation not permitted here and there",
            "killing is not permitted",
        ] {
            assert!(!is_refused_signal(line), "{line}");
        }
    }

    /// Every recognised form, as the real programs print it, blamed under
    /// workspace-write when the path is outside, and the ways a line can
    /// look similar without being a sandbox denial.
    #[test]
    fn denial_note_needs_exit_errno_and_outside_path() {
        let ws = tempfile::tempdir().unwrap();
        let p = policy(SandboxMode::WorkspaceWrite, ws.path());
        let line = Some("[sandbox: write denied under workspace-write mode]".to_string());
        let cases = [
            (Some(1), "bash: line 1: /etc/x: Permission denied", true),
            (
                Some(1),
                "touch: cannot touch '/etc/x': Permission denied",
                true,
            ),
            (
                Some(1),
                "mv: cannot move 'a' to '/etc/a': Invalid cross-device link",
                true,
            ),
            (None, "bash: /etc/x: Permission denied", true),
            // dash and busybox ash.
            (
                Some(2),
                "sh: 1: cannot create /etc/x: Permission denied",
                true,
            ),
            (Some(1), "sh: can't create /etc/x: Permission denied", true),
            // coreutils.
            (
                Some(1),
                "cp: cannot create regular file '/etc/x': Permission denied",
                true,
            ),
            (
                Some(1),
                "mkdir: cannot create directory ‘/etc/d’: Permission denied",
                true,
            ),
            (
                Some(1),
                "ln: failed to create symbolic link '/etc/l': Permission denied",
                true,
            ),
            // Python, Node, Go, Rust, Perl, Ruby.
            (
                Some(1),
                "PermissionError: [Errno 13] Permission denied: '/etc/x'",
                true,
            ),
            (
                Some(1),
                "OSError: [Errno 18] Invalid cross-device link: 'a' -> '/etc/a'",
                true,
            ),
            (
                Some(1),
                "Error: EACCES: permission denied, open '/etc/x'",
                true,
            ),
            (
                Some(1),
                "Error: EXDEV: cross-device link not permitted, rename 'a' -> '/etc/a'",
                true,
            ),
            (Some(1), "open /etc/x: permission denied", true),
            (
                Some(1),
                "Error: writing /etc/x: Permission denied (os error 13)",
                true,
            ),
            (
                Some(1),
                "cannot open /etc/x: Permission denied at -e line 1.",
                true,
            ),
            (
                Some(1),
                "-e:1:in 'initialize': Permission denied @ rb_sysopen - /etc/x (Errno::EACCES)",
                true,
            ),
            (
                Some(1),
                "touch: cannot touch '/etc/x': Read-only file system",
                true,
            ),
            // Exit 0: the command coped.
            (Some(0), "bash: /etc/x: Permission denied", false),
            (
                Some(0),
                "PermissionError: [Errno 13] Permission denied: '/etc/x'",
                false,
            ),
            // Inside the workspace: not the sandbox.
            (Some(1), "bash: ./mine: Permission denied", false),
            (
                Some(2),
                "sh: 1: cannot create mine: Permission denied",
                false,
            ),
            (
                Some(1),
                "PermissionError: [Errno 13] Permission denied: 'mine'",
                false,
            ),
            (
                Some(1),
                "Error: EACCES: permission denied, open 'mine'",
                false,
            ),
            // No kernel error text.
            (Some(1), "/etc/x is not allowed by policy", false),
            (
                Some(1),
                "FileNotFoundError: [Errno 2] No such file or directory: '/etc/x'",
                false,
            ),
            // The error text in the middle of prose is not a report.
            (
                Some(1),
                "note: permission denied errors under /etc are expected",
                false,
            ),
            // No path.
            (Some(1), "sudo: Operation not permitted", false),
            (
                Some(1),
                "PermissionError: [Errno 13] Permission denied",
                false,
            ),
            (Some(1), "", false),
        ];
        for (exit, stderr, blamed) in cases {
            let got = denial_note(&p, ws.path(), exit, stderr);
            assert_eq!(got.is_some(), blamed, "{exit:?} {stderr:?}");
            if blamed {
                assert_eq!(got, line);
            }
        }
        let full = policy(SandboxMode::DangerFullAccess, ws.path());
        assert_eq!(
            denial_note(&full, ws.path(), Some(1), "bash: /etc/x: Permission denied"),
            None
        );
        // A bare relative name is the path: blamed under read-only, where
        // the workspace is not writable, in every form that names one.
        let ro = policy(SandboxMode::ReadOnly, ws.path());
        for bare in [
            "bash: line 1: out.txt: Permission denied",
            "sh: 1: cannot create out.txt: Permission denied",
            "PermissionError: [Errno 13] Permission denied: 'out.txt'",
            "Error: EACCES: permission denied, open 'out.txt'",
        ] {
            assert_eq!(
                denial_note(&ro, ws.path(), Some(1), bare),
                Some(denial_line(SandboxMode::ReadOnly)),
                "{bare}"
            );
            assert_eq!(denial_note(&p, ws.path(), Some(1), bare), None, "{bare}");
        }
        assert_eq!(
            denial_note(&ro, ws.path(), Some(1), "sudo: Operation not permitted"),
            None,
            "the program's name is not a path"
        );
    }

    #[test]
    fn denied_paths_names_the_path_of_each_form() {
        let cases: [(&str, &[&str]); 6] = [
            ("sh: 1: cannot create /x/f: Permission denied", &["/x/f"]),
            (
                "PermissionError: [Errno 13] Permission denied: '/x/f'",
                &["/x/f"],
            ),
            ("Error: EACCES: permission denied, open '/x/f'", &["/x/f"]),
            (
                "Permission denied @ rb_sysopen - /x/f (Errno::EACCES)",
                &["/x/f"],
            ),
            ("open /x/f: permission denied", &["/x/f"]),
            ("no error here: '/x/f'", &[]),
        ];
        for (line, want) in cases {
            let got = denied_paths(line);
            for w in want {
                assert!(got.contains(&PathBuf::from(w)), "{line}: {got:?}");
            }
            if want.is_empty() {
                assert!(got.is_empty(), "{line}: {got:?}");
            }
        }
    }

    #[test]
    fn trailers_are_stripped_only_when_they_are_trailers() {
        assert_eq!(
            strip_trailers("a: Permission denied (os error 13)"),
            "a: Permission denied"
        );
        assert_eq!(
            strip_trailers("x: Permission denied at -e line 12."),
            "x: Permission denied"
        );
        assert_eq!(strip_trailers("look at the line."), "look at the line.");
        assert_eq!(strip_trailers("(os error x)"), "(os error x)");
        assert_eq!(strip_trailers(""), "");
    }
}
