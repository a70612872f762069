//! OS confinement of the commands dsh runs, per permission mode.
//!
//! Start at [`SandboxPolicy`]: a mode ([`SandboxMode`]) plus the roots a
//! command may write under. [`SandboxPolicy::prepare`] builds the kernel
//! rules **in the parent** (Linux Landlock: a ruleset file descriptor with
//! one rule per root); [`Confinement::apply_to`] makes the child restrict
//! itself between fork and exec with two raw system calls
//! (`prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self`), so nothing is
//! allocated after the fork. Every process the command starts (background
//! jobs, `setsid` daemons) inherits the restriction; it cannot be lifted.
//!
//! Rules, in every confining mode: read and execute everywhere; write only
//! under [`SandboxPolicy::writable_roots`] and to the [`DEVICE_NODES`].
//! Unix sockets on the file system are denied (a seccomp filter makes
//! `socket(AF_UNIX, …)` fail with `EACCES`; `socketpair` stays allowed)
//! unless [`SandboxPolicy::with_unix_sockets`] lists some.
//! `danger-full-access` applies nothing. Confinement fails closed: when the
//! kernel cannot enforce every rule asked for, [`SandboxPolicy::prepare`]
//! fails with [`SandboxError::Unavailable`] and the caller must not run the
//! command.
//!
//! [`denial_note`] recognises a command that failed because of the sandbox
//! (non-zero exit, the kernel's error text, a path outside the roots) and
//! gives the line shown to the model.

#![warn(missing_docs)]

mod denial;
mod unix_filter;

pub use denial::{denial_line, denial_note, denied_paths, is_refused_signal, signal_denial_line};

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

pub use dsh_protocol::SandboxMode;
use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, ABI,
};

/// The oldest Landlock ABI dsh confines with: 3 adds `truncate(2)` rules,
/// without which a confined command could still empty any file it can read.
pub const MIN_ABI: u32 = 3;

/// The oldest Landlock ABI that scopes a domain (Linux 6.12): from it on,
/// a confined command can neither signal a process outside its domain nor
/// connect to an abstract Unix socket created outside it. Below it commands
/// still run, unscoped ([`Confinement::scoped`], [`SandboxSupport::scoping`]).
pub const SCOPE_ABI: u32 = 6;

/// The newest Landlock ABI whose rights dsh asks for (that of the
/// `landlock` crate); newer kernels enforce these rights too.
pub const MAX_ABI: u32 = 7;

/// Where POSIX shared memory and named semaphores live (`shm_open`,
/// `sem_open`): writable in `workspace-write` like the temp directory, so
/// `multiprocessing.Pool` and friends work in a confined command.
pub const SHARED_MEMORY_DIR: &str = "/dev/shm";

/// Device nodes that stay writable in every mode (those that exist):
/// discarding output, terminals, random numbers.
pub const DEVICE_NODES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
    "/dev/ptmx",
    "/dev/pts",
];

/// Why a command cannot be confined as asked.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SandboxError {
    /// The kernel cannot enforce the mode (no Landlock, an ABI too old, a
    /// rule it refused). The command must not run. Code
    /// `SANDBOX_UNAVAILABLE`.
    #[error("the {mode} sandbox cannot be applied: {reason}; the command was not run (run with --permission danger-full-access to run commands unconfined)")]
    Unavailable {
        /// The mode that was asked for.
        mode: SandboxMode,
        /// What the kernel lacks or refused.
        reason: String,
    },
}

impl SandboxError {
    /// The stable error code: `SANDBOX_UNAVAILABLE`.
    pub fn code(&self) -> &'static str {
        dsh_protocol::codes::SANDBOX_UNAVAILABLE
    }
}

/// What a command may do: the mode, the roots it may write under, and
/// whether it may use TCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    mode: SandboxMode,
    writable_roots: Vec<PathBuf>,
    network: bool,
    unix_sockets: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// The policy of `mode` for a session working in `workspace`:
    /// - `read-only`: no writable roots (only the [`DEVICE_NODES`], and
    ///   `spill_dir` when given);
    /// - `workspace-write`: `workspace`, the system temp directory,
    ///   [`SHARED_MEMORY_DIR`] when it exists (POSIX semaphores and shared
    ///   memory: Python's multiprocessing, for one) and `spill_dir`;
    /// - `danger-full-access`: no confinement.
    ///
    /// Roots are canonicalised when they exist (a symlinked workspace is
    /// its target). Network is allowed ([`SandboxPolicy::with_network`]).
    pub fn for_mode(mode: SandboxMode, workspace: &Path, spill_dir: Option<&Path>) -> Self {
        let mut roots = Vec::new();
        if mode == SandboxMode::WorkspaceWrite {
            roots.push(workspace.to_path_buf());
            roots.push(std::env::temp_dir());
            if Path::new(SHARED_MEMORY_DIR).is_dir() {
                roots.push(PathBuf::from(SHARED_MEMORY_DIR));
            }
        }
        roots.extend(spill_dir.map(Path::to_path_buf));
        let mut writable_roots: Vec<PathBuf> = Vec::new();
        for root in roots {
            let root = std::fs::canonicalize(&root).unwrap_or_else(|_| lexical_clean(&root));
            if !writable_roots.contains(&root) {
                writable_roots.push(root);
            }
        }
        Self {
            mode,
            writable_roots,
            network: true,
            unix_sockets: Vec::new(),
        }
    }

    /// The Unix sockets on the file system a confined command may reach
    /// (`[sandbox] allow_unix_sockets`; default none). With none listed,
    /// confined commands cannot create Unix sockets at all (seccomp:
    /// `socket(AF_UNIX, …)` fails with `EACCES`). Until dsh binds only the
    /// listed sockets into a namespace, a non-empty list lifts that filter:
    /// the command may then reach any Unix socket its file rules let it
    /// see. Has no effect under `danger-full-access`.
    pub fn with_unix_sockets(mut self, allowed: Vec<PathBuf>) -> Self {
        self.unix_sockets = allowed;
        self
    }

    /// The Unix sockets listed as reachable ([`SandboxPolicy::with_unix_sockets`]).
    pub fn allowed_unix_sockets(&self) -> &[PathBuf] {
        &self.unix_sockets
    }

    /// Whether a confined command is kept off Unix sockets by the seccomp
    /// filter: a confining mode with no socket listed.
    pub fn denies_unix_sockets(&self) -> bool {
        self.mode.confines() && self.unix_sockets.is_empty()
    }

    /// Allows (`true`, the default) or denies TCP connect and bind. Denying
    /// needs Landlock ABI 4; on older kernels [`SandboxPolicy::prepare`]
    /// fails. Has no effect under `danger-full-access`.
    pub fn with_network(mut self, allow: bool) -> Self {
        self.network = allow;
        self
    }

    /// The mode.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Where a confined command may write (besides the device nodes),
    /// canonical.
    pub fn writable_roots(&self) -> &[PathBuf] {
        &self.writable_roots
    }

    /// Whether TCP is allowed.
    pub fn network(&self) -> bool {
        self.network
    }

    /// Whether `path` (absolute) lies under a writable root. Compares
    /// canonical paths: the deepest existing ancestor is resolved.
    pub fn is_writable(&self, path: &Path) -> bool {
        if !self.mode.confines() {
            return true;
        }
        let real = canonical_prefix(path);
        self.writable_roots
            .iter()
            .any(|root| real.starts_with(root))
            || DEVICE_NODES.iter().any(|d| real.starts_with(d))
    }

    /// Builds the kernel rules for this policy, in the calling process.
    /// `danger-full-access` (network allowed or not) gives a confinement
    /// that does nothing.
    ///
    /// # Errors
    /// [`SandboxError::Unavailable`] when Landlock is missing or disabled,
    /// its ABI is below [`MIN_ABI`], network denial is asked on an ABI below
    /// 4, or the kernel refused a rule. Never applies a weaker set of rules
    /// than asked.
    ///
    /// Also [`SandboxError::Unavailable`] when
    /// [`SandboxPolicy::denies_unix_sockets`] and the kernel has no seccomp
    /// filter support (or dsh no filter for this architecture): the filter
    /// is part of the confining modes' rules.
    ///
    /// From ABI [`SCOPE_ABI`] on, the ruleset also scopes signals and
    /// abstract Unix sockets ([`Confinement::scoped`] is then `true`); on
    /// ABI 3 to 5 the command runs without that scoping rather than not at
    /// all, which [`SandboxSupport`] reports.
    pub fn prepare(&self) -> Result<Confinement, SandboxError> {
        if !self.mode.confines() {
            return Ok(Confinement {
                ruleset: None,
                scoped: false,
                unix_filter: None,
            });
        }
        let unavailable = |reason: String| SandboxError::Unavailable {
            mode: self.mode,
            reason,
        };
        let found = landlock_abi().map_err(|e| unavailable(e.to_string()))?;
        if found < MIN_ABI {
            return Err(unavailable(format!(
                "Landlock ABI {found} found, dsh needs ABI {MIN_ABI} or later (Linux 6.2+)"
            )));
        }
        if !self.network && found < 4 {
            return Err(unavailable(format!(
                "[sandbox] network = false needs Landlock ABI 4 or later; this kernel has ABI {found}"
            )));
        }
        let unix_filter = if self.denies_unix_sockets() {
            Some(unix_filter::program().map_err(|why| {
                unavailable(format!("{why} (needed to deny Unix sockets to commands)"))
            })?)
        } else {
            None
        };
        let abi = abi_enum(found.min(MAX_ABI));
        let err = |e: landlock::RulesetError| unavailable(e.to_string());
        let all = AccessFs::from_all(abi);
        let read = AccessFs::from_read(abi) | (all & AccessFs::IoctlDev);
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(all)
            .map_err(err)?;
        if !self.network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(abi))
                .map_err(err)?;
        }
        // Asked only where the kernel has it: with HardRequirement, asking
        // on an older ABI would fail the whole ruleset.
        let scoped = found >= SCOPE_ABI;
        if scoped {
            ruleset = ruleset
                .scope(Scope::Signal | Scope::AbstractUnixSocket)
                .map_err(err)?;
        }
        let mut created = ruleset
            .create()
            .map_err(err)?
            .add_rules(path_beneath_rules(["/"], read))
            .map_err(err)?;
        let devices: Vec<&str> = DEVICE_NODES
            .iter()
            .copied()
            .filter(|d| Path::new(d).exists())
            .collect();
        created = created
            .add_rules(path_beneath_rules(devices, all))
            .map_err(err)?;
        let roots: Vec<&PathBuf> = self.writable_roots.iter().filter(|r| r.exists()).collect();
        created = created
            .add_rules(path_beneath_rules(roots, all))
            .map_err(err)?;
        let fd: Option<OwnedFd> = created.into();
        match fd {
            Some(fd) => Ok(Confinement {
                ruleset: Some(Arc::new(fd)),
                scoped,
                unix_filter,
            }),
            None => Err(unavailable("the kernel created no ruleset".into())),
        }
    }
}

/// Prepared kernel rules, ready to be applied to children. Cheap to clone;
/// the ruleset descriptor (close-on-exec, so commands never inherit it)
/// closes when the last clone is dropped, which must be after the spawn.
#[derive(Debug, Clone)]
pub struct Confinement {
    ruleset: Option<Arc<OwnedFd>>,
    scoped: bool,
    unix_filter: Option<Arc<Vec<libc::sock_filter>>>,
}

impl Confinement {
    /// Whether applying this restricts anything (`false` for
    /// `danger-full-access`).
    pub fn confines(&self) -> bool {
        self.ruleset.is_some()
    }

    /// Whether the command's Landlock domain is scoped: it cannot signal
    /// processes outside the domain (dsh, the user's other programs, other
    /// commands) nor connect to abstract Unix sockets created outside it.
    /// `true` exactly when this confines and the kernel has ABI
    /// [`SCOPE_ABI`] or later.
    pub fn scoped(&self) -> bool {
        self.scoped
    }

    /// Whether the command is kept off Unix sockets on the file system
    /// (the seccomp filter is installed): `true` exactly when this
    /// confines and the policy listed no `allow_unix_sockets`.
    pub fn unix_sockets_denied(&self) -> bool {
        self.unix_filter.is_some()
    }

    /// Makes the child of `cmd` restrict itself before it executes the
    /// program. If the restriction fails in the child, the spawn fails with
    /// that OS error: the program never runs unconfined. Keep `self` alive
    /// until the spawn returned.
    pub fn apply_to(&self, cmd: &mut tokio::process::Command) {
        let Some(fd) = &self.ruleset else {
            return;
        };
        let raw = fd.as_raw_fd();
        restrict_before_exec(cmd, raw, self.unix_filter.clone());
    }
}

/// Installs the child-side restriction: only async-signal-safe system
/// calls, no allocation.
#[allow(unsafe_code)]
fn restrict_before_exec(
    cmd: &mut tokio::process::Command,
    ruleset_fd: i32,
    filter: Option<Arc<Vec<libc::sock_filter>>>,
) {
    // SAFETY: the closure runs in the forked child before exec; it only
    // makes raw system calls (async-signal-safe), touches no lock and
    // allocates nothing (the seccomp program was built before the fork and
    // is owned by the closure). `ruleset_fd` stays open in the child because the
    // parent holds it until the spawn returned (close-on-exec closes it at
    // exec).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, ruleset_fd, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(prog) = &filter {
                unix_filter::install(prog)?;
            }
            Ok(())
        });
    }
}

/// The Landlock ABI version of the running kernel.
///
/// # Errors
/// The OS error of `landlock_create_ruleset` (`ENOSYS`: not built in;
/// `EOPNOTSUPP`: disabled at boot).
#[allow(unsafe_code)]
fn landlock_abi() -> std::io::Result<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_long = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the
    // call only returns the ABI number; no memory is read or written.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => std::io::Error::other("this kernel has no Landlock support"),
            Some(libc::EOPNOTSUPP) => {
                std::io::Error::other("Landlock is disabled on this kernel (boot option lsm=)")
            }
            _ => e,
        });
    }
    Ok(u32::try_from(v).unwrap_or(0))
}

fn abi_enum(v: u32) -> ABI {
    match v {
        0 => ABI::Unsupported,
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        6 => ABI::V6,
        _ => ABI::V7,
    }
}

/// What this machine can enforce, for `dsh doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSupport {
    /// The Landlock ABI found; `Err` says why there is none.
    pub abi: Result<u32, String>,
}

impl SandboxSupport {
    /// Whether `read-only` and `workspace-write` can be enforced in full.
    pub fn filesystem_full(&self) -> bool {
        matches!(self.abi, Ok(v) if v >= MIN_ABI)
    }

    /// Whether `[sandbox] network = false` can be enforced.
    pub fn network_rules(&self) -> bool {
        matches!(self.abi, Ok(v) if v >= 4)
    }

    /// Whether confined commands are scoped (ABI [`SCOPE_ABI`]+): no
    /// signal to a process outside their Landlock domain, no connection to
    /// an abstract Unix socket created outside it.
    pub fn scoping(&self) -> bool {
        self.filesystem_full() && matches!(self.abi, Ok(v) if v >= SCOPE_ABI)
    }

    /// One line for `dsh doctor`'s `scoping:` entry: `signals and abstract
    /// Unix sockets confined (ABI 6+)`, or why confined commands are not
    /// scoped on this machine.
    pub fn scoping_summary(&self) -> String {
        match &self.abi {
            _ if self.scoping() => {
                format!("signals and abstract Unix sockets confined (ABI {SCOPE_ABI}+)")
            }
            Ok(v) if *v >= MIN_ABI => format!(
                "not scoped: Landlock ABI {v} has no scoping (needs ABI {SCOPE_ABI}, Linux 6.12+); \
                 confined commands can signal your other processes and connect to abstract Unix sockets"
            ),
            _ => "not scoped: Landlock cannot confine commands here".to_string(),
        }
    }
}

impl std::fmt::Display for SandboxSupport {
    /// One line: `landlock ABI 7: filesystem full, network rules available`,
    /// or why commands cannot be confined.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.abi {
            Err(why) => write!(
                f,
                "landlock unavailable ({why}): confined modes refuse to run commands (SANDBOX_UNAVAILABLE)"
            ),
            Ok(v) if *v < MIN_ABI => write!(
                f,
                "landlock ABI {v}: too old (needs {MIN_ABI}); confined modes refuse to run commands (SANDBOX_UNAVAILABLE)"
            ),
            Ok(v) => write!(
                f,
                "landlock ABI {v}: filesystem full, network rules {}",
                if self.network_rules() {
                    "available"
                } else {
                    "unavailable (needs ABI 4)"
                }
            ),
        }
    }
}

/// Probes the kernel's Landlock support. Never fails.
pub fn probe() -> SandboxSupport {
    SandboxSupport {
        abi: landlock_abi().map_err(|e| e.to_string()),
    }
}

/// Whether this machine can keep confined commands off Unix sockets (a
/// kernel with seccomp filters, and a filter dsh has for this
/// architecture). `Err` says why not; confining modes that deny Unix
/// sockets then refuse to run commands. Never fails otherwise.
pub fn probe_unix_socket_filter() -> Result<(), String> {
    unix_filter::program().map(|_| ())
}

/// One line for `dsh doctor`'s `unix sockets:` entry, given the mode, the
/// `[sandbox] allow_unix_sockets` list and [`probe_unix_socket_filter`]'s
/// answer: `denied to commands (seccomp)`, `allowed (allow_unix_sockets
/// lists /x; until the namespace layer, any path)`, or why neither.
pub fn unix_sockets_summary(
    mode: SandboxMode,
    allowed: &[PathBuf],
    filter: &Result<(), String>,
) -> String {
    if !mode.confines() {
        return "allowed (danger-full-access runs commands unconfined)".to_string();
    }
    if !allowed.is_empty() {
        let list: Vec<String> = allowed.iter().map(|p| p.display().to_string()).collect();
        return format!(
            "allowed (allow_unix_sockets lists {}; until the namespace layer, any path)",
            list.join(", ")
        );
    }
    match filter {
        Ok(()) => "denied to commands (seccomp)".to_string(),
        Err(why) => format!(
            "cannot be denied ({why}): confined modes refuse to run commands (SANDBOX_UNAVAILABLE)"
        ),
    }
}

/// `path` with its deepest existing ancestor canonicalised and the rest
/// appended, `..` removed lexically.
fn canonical_prefix(path: &Path) -> PathBuf {
    let clean = lexical_clean(path);
    let mut existing = clean.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return clean,
        }
    }
}

/// `path` with `.` and `..` removed without touching the file system.
fn lexical_clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The policy of `mode` over the workspace `ws`, without a spill dir
    /// (shared with the denial module's tests).
    pub(crate) fn policy(mode: SandboxMode, ws: &Path) -> SandboxPolicy {
        SandboxPolicy::for_mode(mode, ws, None)
    }

    #[test]
    fn roots_per_mode() {
        let ws = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(ws.path()).unwrap();
        let tmp = std::fs::canonicalize(std::env::temp_dir()).unwrap();
        let p = policy(SandboxMode::WorkspaceWrite, ws.path());
        assert!(p.writable_roots().contains(&real));
        assert!(p.writable_roots().contains(&tmp));
        assert!(policy(SandboxMode::ReadOnly, ws.path())
            .writable_roots()
            .is_empty());
        let spill = ws.path().join("spill");
        let ro = SandboxPolicy::for_mode(SandboxMode::ReadOnly, ws.path(), Some(&spill));
        assert_eq!(ro.writable_roots(), [real.join("spill")]);
    }

    #[test]
    fn writable_judges_canonical_paths() {
        let ws = tempfile::tempdir().unwrap();
        let p = policy(SandboxMode::WorkspaceWrite, ws.path());
        assert!(p.is_writable(&ws.path().join("new/deep/file")));
        assert!(!p.is_writable(Path::new("/etc/passwd")));
        assert!(!p.is_writable(&ws.path().join("../../etc/x")));
        assert!(p.is_writable(Path::new("/dev/null")));
        std::os::unix::fs::symlink("/etc", ws.path().join("out")).unwrap();
        assert!(!p.is_writable(&ws.path().join("out/x")));
        let full = policy(SandboxMode::DangerFullAccess, ws.path());
        assert!(full.is_writable(Path::new("/etc/passwd")));
    }

    #[test]
    fn probe_reports_one_line() {
        let s = probe().to_string();
        assert!(s.starts_with("landlock"), "{s}");
        assert!(!s.contains('\n'));
        let old = SandboxSupport { abi: Ok(2) };
        assert!(!old.filesystem_full());
        assert!(old.to_string().contains("SANDBOX_UNAVAILABLE"));
        let new = SandboxSupport { abi: Ok(7) };
        assert_eq!(
            new.to_string(),
            "landlock ABI 7: filesystem full, network rules available"
        );
    }

    #[test]
    fn scoping_from_abi_6() {
        let cases = [
            (
                Err("no Landlock".to_string()),
                false,
                "not scoped: Landlock cannot",
            ),
            (Ok(2), false, "not scoped: Landlock cannot"),
            (
                Ok(5),
                false,
                "not scoped: Landlock ABI 5 has no scoping (needs ABI 6",
            ),
            (
                Ok(6),
                true,
                "signals and abstract Unix sockets confined (ABI 6+)",
            ),
            (
                Ok(7),
                true,
                "signals and abstract Unix sockets confined (ABI 6+)",
            ),
        ];
        for (abi, scoping, text) in cases {
            let s = SandboxSupport { abi };
            assert_eq!(s.scoping(), scoping, "{s:?}");
            let summary = s.scoping_summary();
            assert!(summary.starts_with(text), "{summary}");
            assert!(!summary.contains('\n'));
        }
    }

    #[test]
    fn prepared_confinement_is_scoped_exactly_when_the_kernel_can() {
        let ws = tempfile::tempdir().unwrap();
        let support = probe();
        for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
            match policy(mode, ws.path()).prepare() {
                Ok(c) => {
                    assert!(c.confines());
                    assert_eq!(c.scoped(), support.scoping(), "{support}");
                }
                Err(e) => assert!(!support.filesystem_full(), "{support}: {e}"),
            }
        }
        let full = policy(SandboxMode::DangerFullAccess, ws.path())
            .prepare()
            .unwrap();
        assert!(!full.scoped());
    }

    #[test]
    fn the_unix_socket_filter_is_in_force_only_in_confining_modes_without_a_list() {
        let ws = tempfile::tempdir().unwrap();
        let support = probe();
        let modes = [
            SandboxMode::ReadOnly,
            SandboxMode::WorkspaceWrite,
            SandboxMode::DangerFullAccess,
        ];
        for mode in modes {
            for allowed in [vec![], vec![PathBuf::from("/run/x.sock")]] {
                let p = policy(mode, ws.path()).with_unix_sockets(allowed.clone());
                let expect = mode.confines() && allowed.is_empty();
                assert_eq!(p.denies_unix_sockets(), expect, "{mode} {allowed:?}");
                match p.prepare() {
                    Ok(c) => assert_eq!(c.unix_sockets_denied(), expect, "{mode} {allowed:?}"),
                    Err(e) => assert!(!support.filesystem_full(), "{support}: {e}"),
                }
            }
        }
    }

    #[test]
    fn unix_sockets_summary_says_which_rule_holds() {
        let ok = Ok(());
        let ro = SandboxMode::ReadOnly;
        assert_eq!(
            unix_sockets_summary(ro, &[], &ok),
            "denied to commands (seccomp)"
        );
        assert_eq!(
            unix_sockets_summary(ro, &[PathBuf::from("/x")], &ok),
            "allowed (allow_unix_sockets lists /x; until the namespace layer, any path)"
        );
        assert!(unix_sockets_summary(ro, &[], &Err("no seccomp".into()))
            .contains("SANDBOX_UNAVAILABLE"));
        assert!(
            unix_sockets_summary(SandboxMode::DangerFullAccess, &[], &ok).starts_with("allowed")
        );
        assert_eq!(probe_unix_socket_filter(), Ok(()));
    }

    #[test]
    fn full_access_prepares_nothing() {
        let ws = tempfile::tempdir().unwrap();
        let c = policy(SandboxMode::DangerFullAccess, ws.path())
            .with_network(false)
            .prepare()
            .unwrap();
        assert!(!c.confines());
    }

    #[test]
    fn error_names_mode_and_way_out() {
        let e = SandboxError::Unavailable {
            mode: SandboxMode::WorkspaceWrite,
            reason: "this kernel has no Landlock support".into(),
        };
        assert_eq!(e.code(), "SANDBOX_UNAVAILABLE");
        let text = e.to_string();
        assert!(text.contains("workspace-write") && text.contains("danger-full-access"));
    }
}
