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
//! `socket(AF_UNIX, …)` fail with `EACCES`; stream `socketpair`s stay
//! allowed) unless [`SandboxPolicy::with_unix_sockets`] lists some: then,
//! under the namespace layer, exactly the listed ones are reachable.
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
mod launch;
mod namespace;
mod seccomp;
mod unix_gate;

use seccomp::UnixRule;

pub use denial::{denial_line, denial_note, denied_paths, is_refused_signal, signal_denial_line};
pub use namespace::{probe_namespaces, NamespaceMode, NamespaceSupport, PROXY_PORT};

use namespace::{NetNs, Plan};

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

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
    network: Network,
    unix_sockets: Vec<PathBuf>,
    namespaces: NamespaceMode,
    private_tmp: Option<PathBuf>,
}

/// What network a confined command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// The host's network (`[sandbox] network = true`, the default).
    Open,
    /// None: an empty network namespace, and Landlock's TCP rules
    /// (`network = false`).
    Closed,
    /// Only through dsh's proxy (`network = [domains…]`): an empty network
    /// namespace with a listener on `127.0.0.1:`[`PROXY_PORT`] handed to
    /// the caller ([`Spawning::proxy_listener`]). Without the namespace
    /// layer, as [`Network::Closed`].
    Proxied,
}

impl Network {
    /// The network of the `[sandbox] network` setting: a host list
    /// (`listed`) goes through the proxy whatever `open` says; otherwise
    /// `open` is `true` or `false`.
    pub fn of_setting(listed: bool, open: bool) -> Self {
        match (listed, open) {
            (true, _) => Self::Proxied,
            (false, true) => Self::Open,
            (false, false) => Self::Closed,
        }
    }
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
            network: Network::Open,
            unix_sockets: Vec::new(),
            namespaces: NamespaceMode::Auto,
            private_tmp: None,
        }
    }

    /// Whether confining modes add the namespace layer ([`NamespaceMode`];
    /// default [`NamespaceMode::Auto`]).
    pub fn with_namespaces(mut self, mode: NamespaceMode) -> Self {
        self.namespaces = mode;
        self
    }

    /// The namespace setting.
    pub fn namespaces(&self) -> NamespaceMode {
        self.namespaces
    }

    /// Binds `dir` (an existing private directory of the session) over
    /// `/tmp` in the command's mount namespace (`[sandbox] private_tmp`).
    /// Only with the namespace layer; ignored without it.
    pub fn with_private_tmp(mut self, dir: PathBuf) -> Self {
        self.private_tmp = Some(dir);
        self
    }

    /// The network confined commands get ([`Network`]; default open).
    pub fn with_network_access(mut self, network: Network) -> Self {
        self.network = network;
        self
    }

    /// The Unix sockets on the file system a confined command may reach
    /// (`[sandbox] allow_unix_sockets`; default none). With none listed,
    /// confined commands cannot create Unix sockets at all (seccomp:
    /// `socket(AF_UNIX, …)` fails with `EACCES`). With a list and the
    /// namespace layer, commands may make stream and seqpacket Unix
    /// sockets, and every `connect` is checked by the namespace's init:
    /// it reaches a listed socket (the same inode, whatever the path
    /// spelling) and nothing else (`EACCES`). Without the namespace layer
    /// the list cannot be enforced and Unix sockets stay denied
    /// ([`Confinement::unix_sockets_fallback`] says why). Has no effect
    /// under `danger-full-access`.
    pub fn with_unix_sockets(mut self, allowed: Vec<PathBuf>) -> Self {
        self.unix_sockets = allowed;
        self
    }

    /// The Unix sockets listed as reachable ([`SandboxPolicy::with_unix_sockets`]).
    pub fn allowed_unix_sockets(&self) -> &[PathBuf] {
        &self.unix_sockets
    }

    /// Whether this policy keeps confined commands off every Unix socket
    /// on the file system: a confining mode with no socket listed (with a
    /// list, [`Confinement::unix_sockets_denied`] tells whether the list
    /// could be enforced).
    pub fn denies_unix_sockets(&self) -> bool {
        self.mode.confines() && self.unix_sockets.is_empty()
    }

    /// Allows (`true`, the default) or denies TCP connect and bind. Denying
    /// needs Landlock ABI 4; on older kernels [`SandboxPolicy::prepare`]
    /// fails. Has no effect under `danger-full-access`.
    pub fn with_network(mut self, allow: bool) -> Self {
        self.network = if allow {
            Network::Open
        } else {
            Network::Closed
        };
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

    /// Whether the host's network is open to commands ([`Network::Open`]).
    pub fn network(&self) -> bool {
        self.network == Network::Open
    }

    /// The network setting.
    pub fn network_access(&self) -> Network {
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
    ///
    /// Without the namespace layer, the rules of the last few policies are
    /// kept and given again for an equal policy while its writable roots
    /// are the same directories (same device and inode), so repeated
    /// commands do not rebuild them; a root removed and made again gets
    /// new rules. Under the layer each command adds a rule for its own
    /// `/dev/pts` instance to the ruleset, so each gets a ruleset of its
    /// own and nothing is kept. Errors are not kept.
    pub fn prepare(&self) -> Result<Confinement, SandboxError> {
        if !self.mode.confines() {
            return Ok(Confinement::none());
        }
        let roots = self.root_identities();
        let cache = PREPARED.get_or_init(|| std::sync::Mutex::new(Vec::new()));
        if let Ok(cached) = cache.lock() {
            if let Some((_, _, c)) = cached.iter().find(|(p, r, _)| p == self && *r == roots) {
                return Ok(c.clone());
            }
        }
        let built = self.build()?;
        if built.plan.is_some() {
            // The command adds its own rule to this ruleset: never shared.
            return Ok(built);
        }
        if let Ok(mut cached) = cache.lock() {
            cached.retain(|(p, _, _)| p != self);
            if cached.len() >= PREPARED_KEPT {
                cached.remove(0);
            }
            cached.push((self.clone(), roots, built.clone()));
        }
        Ok(built)
    }

    /// The device and inode of each writable root and of the private
    /// `/tmp` (`None` where missing), in order: what the ruleset's rules
    /// are tied to.
    fn root_identities(&self) -> Vec<Option<(u64, u64)>> {
        use std::os::unix::fs::MetadataExt;
        self.writable_roots
            .iter()
            .chain(self.private_tmp.iter())
            .map(|r| std::fs::metadata(r).ok().map(|m| (m.dev(), m.ino())))
            .collect()
    }

    /// [`SandboxPolicy::prepare`] without the kept rules.
    fn build(&self) -> Result<Confinement, SandboxError> {
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
        let (plan, fallback) = self.namespace_plan()?;
        // TCP through Landlock: closed for `false`, and for a domain list
        // that has no network namespace to go through the proxy in.
        let tcp_closed = match self.network {
            Network::Open => false,
            Network::Closed => true,
            Network::Proxied => plan.as_ref().is_none_or(|p| p.net() != NetNs::Proxied),
        };
        if tcp_closed && found < 4 && plan.as_ref().is_none_or(|p| p.net() == NetNs::Host) {
            return Err(unavailable(format!(
                "closing the network needs a network namespace or Landlock ABI 4 or later; this kernel has ABI {found} and no namespace layer"
            )));
        }
        let mut plan = plan;
        // A list is enforced by the gated filter and the init's gate; where
        // either cannot be had, Unix sockets stay denied.
        let gated = match plan.as_mut() {
            _ if self.unix_sockets.is_empty() => None,
            None => Some(Err(format!(
                "allow_unix_sockets needs the namespace layer, which commands do not get ({})",
                fallback.as_deref().unwrap_or("unknown reason")
            ))),
            Some(plan) => Some(
                unix_gate::Gate::new(
                    &self.unix_sockets,
                    tcp_closed && found >= 4,
                    plan.net() != NetNs::Host,
                )
                .and_then(|gate| {
                    let filter = seccomp::program(UnixRule::Gated)?;
                    plan.set_gate(gate);
                    Ok(filter)
                }),
            ),
        };
        let (filter, unix_fallback) = match gated {
            Some(Ok(filter)) => (filter, None),
            denied => (
                seccomp::program(UnixRule::Denied).map_err(|why| {
                    unavailable(format!(
                        "{why} (needed to keep commands in their namespaces and off Unix sockets)"
                    ))
                })?,
                denied.and_then(Result::err),
            ),
        };
        let abi = abi_enum(found.min(MAX_ABI));
        let err = |e: landlock::RulesetError| unavailable(e.to_string());
        let all = AccessFs::from_all(abi);
        let read = AccessFs::from_read(abi) | (all & AccessFs::IoctlDev);
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(all)
            .map_err(err)?;
        if tcp_closed && found >= 4 {
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
        let mut roots: Vec<&PathBuf> = self.writable_roots.iter().filter(|r| r.exists()).collect();
        if plan.is_some() {
            roots.extend(self.private_tmp.iter().filter(|r| r.exists()));
        }
        created = created
            .add_rules(path_beneath_rules(roots, all))
            .map_err(err)?;
        let fd: Option<OwnedFd> = created.into();
        let Some(fd) = fd else {
            return Err(unavailable("the kernel created no ruleset".into()));
        };
        let network_namespace = plan.as_ref().is_some_and(|p| p.net() != NetNs::Host);
        // SAFETY: geteuid cannot fail and touches no memory.
        #[allow(unsafe_code)]
        let root = unsafe { libc::geteuid() } == 0;
        Ok(Confinement {
            // Without the user namespace, root would keep its powers.
            drop_root_powers: root && plan.is_none(),
            fs_access: all.bits(),
            ruleset: Some(Arc::new(fd)),
            scoped,
            unix_fallback,
            filter: Some(filter),
            plan: plan.map(Arc::new),
            fallback,
            network_namespace,
        })
    }

    /// The namespace plan for this policy, or why commands run without it
    /// (`None` plan, `Some` reason).
    ///
    /// # Errors
    /// [`SandboxError::Unavailable`] when [`NamespaceMode::Required`] and
    /// the layer (or the network namespace the network setting needs)
    /// cannot be set up.
    fn namespace_plan(&self) -> Result<(Option<Plan>, Option<String>), SandboxError> {
        if self.namespaces == NamespaceMode::Off {
            return Ok((None, Some("[sandbox] namespaces = \"off\"".to_string())));
        }
        let required = |why: &str| {
            SandboxError::Unavailable {
            mode: self.mode,
            reason: format!(
                "the namespace layer cannot be set up ({why}) and [sandbox] namespaces = \"required\""
            ),
        }
        };
        let support = probe_namespaces();
        let why_not = match &support.layer {
            Err(why) => Some(why.clone()),
            Ok(()) => self.ownership_problem(),
        };
        if let Some(why) = why_not {
            if self.namespaces == NamespaceMode::Required {
                return Err(required(&why));
            }
            return Ok((None, Some(why)));
        }
        let net = match (self.network, &support.network) {
            (Network::Open, _) => NetNs::Host,
            (Network::Closed, Ok(())) => NetNs::Empty,
            (Network::Proxied, Ok(())) => NetNs::Proxied,
            (_, Err(why)) => {
                if self.namespaces == NamespaceMode::Required {
                    return Err(required(&format!("network namespace: {why}")));
                }
                NetNs::Host
            }
        };
        let private_tmp = self.private_tmp.as_deref().filter(|d| d.is_dir());
        Ok((
            Some(Plan::new(&self.writable_roots, private_tmp, net)),
            None,
        ))
    }

    /// Why a user namespace would take rights the command needs: dsh runs
    /// as root and the workspace belongs to another user (root in a user
    /// namespace has no rights over files of unmapped users).
    fn ownership_problem(&self) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid cannot fail and touches no memory.
        #[allow(unsafe_code)]
        let euid = unsafe { libc::geteuid() };
        if euid != 0 {
            return None;
        }
        let workspace = self.writable_roots.first()?;
        let owner = std::fs::metadata(workspace).ok()?.uid();
        (owner != 0).then(|| {
            format!(
                "dsh runs as root but the workspace {} belongs to uid {owner}, which root in a user namespace could not write",
                workspace.display()
            )
        })
    }
}

/// Policies whose rules [`SandboxPolicy::prepare`] keeps (the newest).
const PREPARED_KEPT: usize = 4;

/// The kept rules: policy, root identities, confinement.
type Prepared = Vec<(SandboxPolicy, Vec<Option<(u64, u64)>>, Confinement)>;
static PREPARED: OnceLock<std::sync::Mutex<Prepared>> = OnceLock::new();

/// Prepared kernel rules, ready to be applied to children. Cheap to clone;
/// the ruleset descriptor (close-on-exec, so commands never inherit it)
/// closes when the last clone is dropped, which must be after the spawn.
#[derive(Debug, Clone)]
pub struct Confinement {
    ruleset: Option<Arc<OwnedFd>>,
    /// Every file-system right the ruleset handles (for the rule the
    /// command adds for its own `/dev/pts`).
    fs_access: u64,
    /// Drop every capability but [`KEPT_CAPABILITIES`] before exec (root
    /// without the namespace layer).
    drop_root_powers: bool,
    scoped: bool,
    /// Why a listed set of Unix sockets is not enforced (they are denied).
    unix_fallback: Option<String>,
    filter: Option<Arc<Vec<libc::sock_filter>>>,
    plan: Option<Arc<Plan>>,
    fallback: Option<String>,
    network_namespace: bool,
}

impl Confinement {
    fn none() -> Self {
        Self {
            ruleset: None,
            fs_access: 0,
            drop_root_powers: false,
            scoped: false,
            unix_fallback: None,
            filter: None,
            plan: None,
            fallback: None,
            network_namespace: false,
        }
    }

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

    /// Whether the command is kept off every Unix socket on the file
    /// system (the seccomp filter refuses `socket(AF_UNIX, …)`): `true`
    /// when this confines and the policy listed no `allow_unix_sockets`,
    /// or listed some that cannot be enforced here
    /// ([`Confinement::unix_sockets_fallback`]).
    pub fn unix_sockets_denied(&self) -> bool {
        self.confines() && !self.unix_sockets_gated()
    }

    /// Whether the command reaches exactly the listed Unix sockets, each
    /// `connect` checked by the namespace's init.
    pub fn unix_sockets_gated(&self) -> bool {
        self.plan.as_ref().is_some_and(|p| p.gated())
    }

    /// Why the policy's `allow_unix_sockets` list is not enforced (Unix
    /// sockets are then denied): no namespace layer, or a kernel without
    /// seccomp user notifications. `None` when there is no list or it is
    /// enforced.
    pub fn unix_sockets_fallback(&self) -> Option<&str> {
        self.unix_fallback.as_deref()
    }

    /// Whether commands get the namespace layer (a read-only view of the
    /// system, their own process tree and `/proc`).
    pub fn namespaces(&self) -> bool {
        self.plan.is_some()
    }

    /// Whether commands get a network namespace of their own (only
    /// loopback; with [`Network::Proxied`], the proxy listener).
    pub fn network_namespace(&self) -> bool {
        self.network_namespace
    }

    /// Why a confining policy runs without the namespace layer (`None`
    /// when it has it, or when nothing is confined).
    pub fn namespace_fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// What one spawn of `cmd` needs besides the rules: the working
    /// directory to enter again inside the namespace layer, the program,
    /// arguments and environment of `cmd` ready to execute (under the
    /// layer the sandbox executes the program itself, in a process that
    /// shares the forked child's memory instead of copying it), stacks
    /// for that process and the namespace's init and, for
    /// [`Network::Proxied`], the socket pair the proxy listener comes back
    /// through. `cmd` must be complete, and its environment explicit
    /// (`env_clear` then the variables the command gets): under the layer
    /// the command gets exactly the variables `cmd` sets. Call before
    /// [`Confinement::apply_to`]; keep the result alive until the spawn
    /// returned.
    ///
    /// # Errors
    /// `workdir` or a string of `cmd` contains a NUL byte, the program is
    /// not found in the `PATH` the command gets (`NotFound`), or the socket
    /// pair or the stacks cannot be made. The command must not be spawned
    /// then.
    pub fn spawning(
        &self,
        workdir: &Path,
        cmd: &tokio::process::Command,
    ) -> std::io::Result<Spawning> {
        let mut spawning = Spawning::default();
        if let (Some(plan), Some(_)) = (&self.plan, &self.ruleset) {
            spawning.workdir = Some(
                CString::new(workdir.as_os_str().as_bytes())
                    .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?,
            );
            spawning.exec = Some(Arc::new(launch::Exec::of(cmd.as_std())?));
            spawning.stacks = Some(Arc::new(launch::Stacks::new()?));
            if plan.gated() {
                spawning.denials = Some(denials_pipe()?);
            }
            if plan.net() == NetNs::Proxied {
                let (parent, child) = namespace::listener_channel()?;
                spawning.parent_end = Some(parent);
                spawning.child_end = Some(child);
            }
        }
        Ok(spawning)
    }

    /// Makes the child of `cmd` confine itself before it executes the
    /// program: the namespace layer (entering the working directory again
    /// inside it), then Landlock, then the seccomp filter. If any step
    /// fails in the child, the spawn fails with that OS error: the program
    /// never runs unconfined. Register this after the child's session or
    /// process group is set up (the layer forks: later `pre_exec` steps run
    /// in the command, not in the group's leader). `spawning` comes from
    /// [`Confinement::spawning`] of this confinement; without its working
    /// directory the layer is set up in `/`. Keep `self` and `spawning`
    /// alive until the spawn returned.
    pub fn apply_to(&self, cmd: &mut tokio::process::Command, spawning: &Spawning) {
        let Some(fd) = &self.ruleset else {
            return;
        };
        let layer = match (&self.plan, &spawning.exec, &spawning.stacks) {
            (Some(plan), Some(exec), Some(stacks)) => {
                let workdir = spawning.workdir.clone().unwrap_or_else(|| c"/".to_owned());
                let chan = spawning.child_end.as_ref().map_or(-1, |c| c.as_raw_fd());
                Some(LayerSpawn {
                    plan: Arc::clone(plan),
                    workdir,
                    chan,
                    denials: spawning.denials.as_ref().map_or(-1, |(_, w)| w.as_raw_fd()),
                    exec: Arc::clone(exec),
                    stacks: Arc::clone(stacks),
                })
            }
            (Some(_), _, _) => {
                // Without what `spawning` prepares the layer cannot start
                // the command: fail the spawn rather than run it without.
                // SAFETY: the closure only builds an io::Error from a raw
                // OS code (no allocation).
                #[allow(unsafe_code)]
                unsafe {
                    cmd.pre_exec(|| Err(std::io::Error::from_raw_os_error(libc::EINVAL)));
                }
                return;
            }
            (None, _, _) => None,
        };
        restrict_before_exec(
            cmd,
            (fd.as_raw_fd(), self.fs_access),
            layer,
            self.filter.clone(),
            self.drop_root_powers,
        );
    }
}

/// What a spawn under [`Confinement::apply_to`] needs and leaves to
/// collect: the proxy listener of a [`Network::Proxied`] command. Drop it
/// after the spawn returned.
#[derive(Debug, Default)]
pub struct Spawning {
    workdir: Option<CString>,
    /// The gate's denials pipe: (read end, write end).
    denials: Option<(OwnedFd, OwnedFd)>,
    exec: Option<Arc<launch::Exec>>,
    stacks: Option<Arc<launch::Stacks>>,
    parent_end: Option<OwnedFd>,
    child_end: Option<OwnedFd>,
}

impl Spawning {
    /// The Unix socket connects the gate refused
    /// ([`Confinement::unix_sockets_gated`]), to read once the command has
    /// ended (`None` when the command has no gate). Call after the spawn
    /// returned, before [`Spawning::proxy_listener`].
    pub fn unix_denials(&mut self) -> Option<UnixDenials> {
        self.denials.take().map(|(read, _write)| UnixDenials(read))
    }

    /// The listening socket the command's network namespace got on
    /// `127.0.0.1:`[`PROXY_PORT`] (`None` when the command has no proxied
    /// network). Call once the spawn succeeded; serve it (accept and
    /// connect out) for as long as the command runs.
    ///
    /// # Errors
    /// The child sent nothing or the message carried no descriptor.
    pub fn proxy_listener(self) -> std::io::Result<Option<std::net::TcpListener>> {
        drop(self.child_end);
        match &self.parent_end {
            Some(end) => namespace::receive_listener(end).map(Some),
            None => Ok(None),
        }
    }
}

/// The Unix socket addresses the gate refused one command (see
/// [`Spawning::unix_denials`]).
#[derive(Debug)]
pub struct UnixDenials(OwnedFd);

impl UnixDenials {
    /// The refused addresses so far, in order, each once (paths as the
    /// command wrote them; abstract names with a leading `@`). Never
    /// blocks; reading takes them.
    pub fn take(&self) -> Vec<String> {
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: reads into a live local buffer of its length.
            #[allow(unsafe_code)]
            let n = unsafe { libc::read(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n as usize]);
        }
        let mut seen = Vec::new();
        for path in unix_gate::read_denials(&bytes) {
            if !seen.contains(&path) {
                seen.push(path);
            }
        }
        seen
    }
}

/// The note for a refused Unix socket: `[sandbox: Unix socket <path>
/// denied; allowed: <listed, comma-separated>]`.
pub fn unix_denial_note(path: &str, allowed: &[PathBuf]) -> String {
    let listed: Vec<String> = allowed.iter().map(|p| p.display().to_string()).collect();
    format!(
        "[sandbox: Unix socket {path} denied; allowed: {}]",
        listed.join(", ")
    )
}

/// A non-blocking, close-on-exec pipe: (read end, write end).
fn denials_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the local array.
    #[allow(unsafe_code)]
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    #[allow(unsafe_code)]
    Ok(unsafe {
        use std::os::fd::FromRawFd;
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    })
}

/// The layer of one spawn.
struct LayerSpawn {
    plan: Arc<Plan>,
    /// The working directory, entered again inside the mounts.
    workdir: CString,
    /// The listener channel's child end (or -1).
    chan: i32,
    /// The gate's denials pipe's write end (or -1).
    denials: i32,
    exec: Arc<launch::Exec>,
    stacks: Arc<launch::Stacks>,
}

/// Installs the child-side restriction: only async-signal-safe system
/// calls, no allocation.
#[allow(unsafe_code)]
fn restrict_before_exec(
    cmd: &mut tokio::process::Command,
    (ruleset_fd, fs_access): (i32, u64),
    layer: Option<LayerSpawn>,
    filter: Option<Arc<Vec<libc::sock_filter>>>,
    drop_root_powers: bool,
) {
    // SAFETY: the closure runs in the forked child before exec; it only
    // makes raw system calls (async-signal-safe), touches no lock and
    // allocates nothing (the plan and the seccomp program were built before
    // the fork and are owned by the closure). `ruleset_fd` stays open in
    // the child because the parent holds it until the spawn returned
    // (close-on-exec closes it at exec).
    unsafe {
        cmd.pre_exec(move || {
            let confine = |gate_chan: Option<i32>| {
                confine_this_process(
                    (ruleset_fd, fs_access),
                    layer.is_some(),
                    filter.as_deref().map(Vec::as_slice),
                    drop_root_powers,
                    gate_chan,
                )
            };
            let Some(layer) = &layer else {
                return confine(None).map_err(std::io::Error::from_raw_os_error);
            };
            let launch = namespace::Launch {
                confine: Some(&confine),
                exec: Some(&layer.exec),
                stacks: &layer.stacks,
                denials: layer.denials,
            };
            // Returns only when the program could not be started.
            let (_, errno) = namespace::enter(&layer.plan, &layer.workdir, layer.chan, &launch);
            Err(std::io::Error::from_raw_os_error(errno))
        });
    }
}

/// Confines the calling process (the command, just before its program
/// runs): with the namespace layer (`in_layer`) the rule for its own
/// `/dev/pts`, then, root without the layer, the dropped capabilities,
/// `no_new_privs`, Landlock and the seccomp filter, whose listener goes to
/// the namespace's init over `gate_chan`. Async-signal-safe.
///
/// # Errors
/// The errno of the step that failed.
#[allow(unsafe_code)]
fn confine_this_process(
    (ruleset_fd, fs_access): (i32, u64),
    in_layer: bool,
    filter: Option<&[libc::sock_filter]>,
    drop_root_powers: bool,
    gate_chan: Option<i32>,
) -> Result<(), i32> {
    let errno = |e: std::io::Error| e.raw_os_error().unwrap_or(libc::EIO);
    // SAFETY: raw system calls on descriptors and data prepared before the
    // fork.
    unsafe {
        if in_layer {
            // The command's own devpts instance is not the host's
            // /dev/pts the ruleset names: allow it too.
            namespace::allow_own_devpts(ruleset_fd, fs_access)?;
        }
        if drop_root_powers {
            drop_capabilities().map_err(errno)?;
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(errno(std::io::Error::last_os_error()));
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset_fd, 0) != 0 {
            return Err(errno(std::io::Error::last_os_error()));
        }
        if let Some(prog) = filter {
            let listener = seccomp::install(prog, gate_chan.is_some()).map_err(errno)?;
            if let (Some(listener), Some(chan)) = (listener, gate_chan) {
                // The init answers the connects from now on.
                let sent = namespace::send_fd(chan, listener);
                libc::close(listener);
                libc::close(chan);
                sent?;
            }
        }
    }
    Ok(())
}

/// The capabilities a confined command run by root keeps without the
/// namespace layer: those of file ownership and permissions (`chown`,
/// overriding permission bits, `setuid`/`setgid`), binding low ports and
/// `nice`. Dropped (from the bounding, permitted, effective, inheritable
/// and ambient sets): among others `CAP_SYS_PTRACE` (reading other
/// processes' `/proc/<pid>/environ` and memory), `CAP_MKNOD`,
/// `CAP_SYS_ADMIN` (`sethostname`, `TIOCSTI`, mounts), `CAP_NET_ADMIN`,
/// `CAP_NET_RAW`, `CAP_KILL`, `CAP_SYS_MODULE`, `CAP_SYS_RAWIO`.
pub const KEPT_CAPABILITIES: [u32; 9] = [0, 1, 2, 3, 4, 6, 7, 10, 23];

/// Drops every capability not in [`KEPT_CAPABILITIES`]. Async-signal-safe.
///
/// # Errors
/// The OS error of `capget`/`capset` or of `PR_CAPBSET_DROP` (other than
/// `EINVAL` for a capability this kernel does not know).
#[allow(unsafe_code)]
fn drop_capabilities() -> std::io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let mut keep = [0u32; 2];
    for cap in KEPT_CAPABILITIES {
        keep[(cap / 32) as usize] |= 1 << (cap % 32);
    }
    // SAFETY: raw system calls on live locals; no allocation.
    unsafe {
        for cap in 0..64u32 {
            if keep[(cap / 32) as usize] & (1 << (cap % 32)) == 0
                && libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0
                && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let mut header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let mut data = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(
            libc::SYS_capget,
            &mut header as *mut Header,
            data.as_mut_ptr(),
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        for (d, k) in data.iter_mut().zip(keep) {
            d.effective &= k;
            d.permitted &= k;
            d.inheritable &= k;
        }
        if libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Makes this process non-dumpable (`PR_SET_DUMPABLE` 0): its memory,
/// environment and `/proc/<pid>` entries are then out of reach of
/// processes of the same user without `CAP_SYS_PTRACE`, which confined
/// commands run by root lose ([`KEPT_CAPABILITIES`]). Called by the bash
/// executor for the process that holds the API keys; no core files are
/// written for it afterwards. Never fails.
#[allow(unsafe_code)]
pub fn shield_this_process() {
    // SAFETY: a prctl with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
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
    fn a_list_is_gated_under_the_namespace_layer_and_denied_without_it() {
        let ws = tempfile::tempdir().unwrap();
        let support = probe();
        let layer = probe_namespaces().layer.is_ok();
        let modes = [
            SandboxMode::ReadOnly,
            SandboxMode::WorkspaceWrite,
            SandboxMode::DangerFullAccess,
        ];
        for mode in modes {
            for namespaces in [NamespaceMode::Auto, NamespaceMode::Off] {
                for allowed in [vec![], vec![PathBuf::from("/run/x.sock")]] {
                    let p = policy(mode, ws.path())
                        .with_namespaces(namespaces)
                        .with_unix_sockets(allowed.clone());
                    let listed = !allowed.is_empty();
                    assert_eq!(p.denies_unix_sockets(), mode.confines() && !listed);
                    let c = match p.prepare() {
                        Ok(c) => c,
                        Err(e) => {
                            assert!(!support.filesystem_full(), "{support}: {e}");
                            continue;
                        }
                    };
                    let gated = mode.confines() && listed && c.namespaces();
                    let case = format!("{mode} {namespaces} {allowed:?}");
                    assert_eq!(c.unix_sockets_gated(), gated, "{case}");
                    assert_eq!(c.unix_sockets_denied(), mode.confines() && !gated, "{case}");
                    let fallback = mode.confines() && listed && !gated;
                    assert_eq!(c.unix_sockets_fallback().is_some(), fallback, "{case}");
                    if namespaces == NamespaceMode::Off && fallback {
                        assert!(
                            c.unix_sockets_fallback()
                                .unwrap()
                                .starts_with("allow_unix_sockets needs the namespace layer"),
                            "{case}"
                        );
                    }
                    if layer && namespaces == NamespaceMode::Auto && mode.confines() {
                        assert_eq!(c.unix_sockets_gated(), listed, "{case}");
                    }
                }
            }
        }
    }

    #[test]
    fn prepared_rules_are_kept_for_an_equal_policy_on_the_same_directories() {
        let ws = tempfile::tempdir().unwrap();
        let dir = ws.path().join("w");
        std::fs::create_dir(&dir).unwrap();
        let layered = policy(SandboxMode::WorkspaceWrite, &dir);
        let p = layered.clone().with_namespaces(NamespaceMode::Off);
        let (Ok(a), Ok(b)) = (p.prepare(), p.prepare()) else {
            return; // no Landlock here: nothing is kept (errors are not)
        };
        let fd = |c: &Confinement| c.ruleset.as_ref().map(|f| f.as_raw_fd());
        assert_eq!(fd(&a), fd(&b), "the same rules");
        if probe_namespaces().layer.is_ok() {
            // Each command under the layer adds a rule of its own.
            let (x, y) = (layered.prepare().unwrap(), layered.prepare().unwrap());
            assert!(x.namespaces());
            assert_ne!(fd(&x), fd(&y), "a ruleset per layered command");
        }
        let other = p.clone().with_network(false).prepare().unwrap();
        assert_ne!(fd(&other), fd(&a), "another policy, other rules");
        std::fs::remove_dir(&dir).unwrap();
        std::fs::create_dir(&dir).unwrap();
        let c = p.prepare().unwrap();
        assert_ne!(fd(&c), fd(&a), "a new directory, new rules");
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
