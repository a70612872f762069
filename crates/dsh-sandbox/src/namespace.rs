//! The namespace layer: a command's own view of the system, set up in the
//! child between fork and exec, under Landlock and the seccomp filter.
//!
//! What a command gets (see [`Plan`]):
//! - a user namespace mapping only the caller's uid and gid (the command
//!   sees the user's own ids) and a mount namespace in which every mount is
//!   read-only (`mount_setattr(…, AT_RECURSIVE, MOUNT_ATTR_RDONLY)`), and
//!   each writable root is a read-write clone of itself at the same path
//!   (`open_tree(OPEN_TREE_CLONE)` before, `move_mount` after), so paths
//!   stay the user's and metadata changes elsewhere fail with `EROFS`;
//! - a PID namespace with its own `/proc`: the command sees its own process
//!   tree only; an IPC namespace;
//! - optionally a private `/tmp` (a directory of the session's bound over
//!   `/tmp`) and a network namespace with only loopback, in which a
//!   listening socket on `127.0.0.1:`[`PROXY_PORT`] is made and passed to
//!   the parent over a socket pair (the parent's proxy accepts on it and
//!   connects from the host's network).
//!
//! The process tree, from the process `spawn` forked (the *keeper*, in the
//! host's PID namespace and the command's process group) down:
//! - the keeper unshares the namespaces, writes the id maps, sets up the
//!   mounts and forks the *init*, then only waits for it and exits the way
//!   the command did (same code, or the same signal re-raised);
//! - the init (PID 1 of the new namespace) mounts `/proc`, forks the
//!   command, reaps orphans, and when the command exits reports its wait
//!   status to the keeper and exits, which ends every process left in the
//!   namespace. It is a copy of dsh, so it first makes itself
//!   non-dumpable and blanks its argument and environment strings: the
//!   command cannot read dsh's memory, environment or command line through
//!   `/proc/1`;
//! - the command applies Landlock and seccomp and executes the program.
//!
//! Everything that runs after the fork is a raw system call on data built
//! before it: nothing allocates, nothing takes a lock.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::launch::{Exec, Stacks};
use crate::unix_gate::{self, Gate};

/// The port a command's proxy listener has inside its network namespace
/// (`127.0.0.1:3128`): where `HTTP_PROXY` and friends point.
pub const PROXY_PORT: u16 = 3128;

/// `[sandbox] namespaces`: whether confined commands also get the
/// namespace layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NamespaceMode {
    /// Use it where the machine allows, else run with Landlock alone and
    /// say so (the default).
    #[default]
    Auto,
    /// Refuse to run commands (`SANDBOX_UNAVAILABLE`) where it cannot be
    /// set up.
    Required,
    /// Never use it (Landlock and seccomp only).
    Off,
}

impl NamespaceMode {
    /// The config spelling: `auto`, `required` or `off`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Required => "required",
            Self::Off => "off",
        }
    }
}

impl std::fmt::Display for NamespaceMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for NamespaceMode {
    type Err = String;

    /// Parses `auto`, `required` or `off`; the error names the valid values.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "required" => Ok(Self::Required),
            "off" => Ok(Self::Off),
            other => Err(format!(
                "unknown namespaces setting {other:?}: expected \"auto\", \"required\" or \"off\""
            )),
        }
    }
}

/// The network a command's namespace gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NetNs {
    /// The host's network (no network namespace).
    Host,
    /// A network namespace with only loopback.
    Empty,
    /// Loopback plus a proxy listener handed to the parent.
    Proxied,
}

/// One step of the set-up, for the error a failed one gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Stage {
    Unshare = 1,
    IdMaps,
    Loopback,
    Listener,
    Propagation,
    CloneRoot,
    ReadOnly,
    AttachRoot,
    Chdir,
    Fork,
    Proc,
    Devpts,
    Gate,
    Command,
}

impl Stage {
    /// Every step, in order.
    const ALL: [Self; 14] = [
        Self::Unshare,
        Self::IdMaps,
        Self::Loopback,
        Self::Listener,
        Self::Propagation,
        Self::CloneRoot,
        Self::ReadOnly,
        Self::AttachRoot,
        Self::Chdir,
        Self::Fork,
        Self::Proc,
        Self::Devpts,
        Self::Gate,
        Self::Command,
    ];

    fn from_u8(v: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|s| *s as u8 == v)
    }

    fn what(self) -> &'static str {
        match self {
            Self::Unshare => "creating user, mount, PID and IPC namespaces",
            Self::IdMaps => "mapping the user and group ids into the user namespace",
            Self::Loopback => "bringing up loopback in the network namespace",
            Self::Listener => "making the proxy listener in the network namespace",
            Self::Propagation => "making the mount namespace's mounts private",
            Self::CloneRoot => "cloning a writable root (open_tree)",
            Self::ReadOnly => "making / read-only (mount_setattr)",
            Self::AttachRoot => "attaching a writable root (move_mount)",
            Self::Chdir => "entering the working directory",
            Self::Fork => "starting the namespace's init process",
            Self::Proc => "mounting /proc for the PID namespace",
            Self::Devpts => "mounting a private /dev/pts",
            Self::Gate => "making the Unix socket gate's channel",
            Self::Command => "confining and executing the command",
        }
    }
}

/// A failed step: which and the OS error number.
pub(crate) type StepError = (Stage, i32);

/// Everything the child needs, built in the parent.
#[derive(Debug)]
pub(crate) struct Plan {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Writable roots, shallowest first, none inside another.
    roots: Vec<CString>,
    /// A directory bound over `/tmp`.
    private_tmp: Option<CString>,
    net: NetNs,
    /// The argument and environment strings of this process (start, end).
    strings: [(usize, usize); 2],
    /// The Unix socket gate the init runs (`allow_unix_sockets`).
    gate: Option<Gate>,
}

impl Plan {
    /// The plan for these roots (existing directories; `/` among them
    /// means nothing is made read-only), an optional private `/tmp` source
    /// directory and network.
    pub(crate) fn new(roots: &[PathBuf], private_tmp: Option<&Path>, net: NetNs) -> Self {
        // SAFETY: getuid/getgid cannot fail and touch no memory.
        #[allow(unsafe_code)]
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let tmp = Path::new("/tmp");
        let mut sorted: Vec<&PathBuf> = roots
            .iter()
            .filter(|r| r.is_dir())
            // The private /tmp replaces the shared one; roots inside /tmp
            // (a workspace there) are attached on top of it.
            .filter(|r| private_tmp.is_none() || r.as_path() != tmp)
            .collect();
        sorted.sort_by_key(|r| r.components().count());
        let mut kept: Vec<&PathBuf> = Vec::new();
        for root in sorted {
            if !kept.iter().any(|k| root.starts_with(k)) {
                kept.push(root);
            }
        }
        let plan = Self {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            roots: kept.into_iter().filter_map(|p| c_path(p)).collect(),
            private_tmp: private_tmp.and_then(c_path),
            net,
            strings: own_strings(),
            gate: None,
        };
        plan.make_mount_points();
        plan
    }

    /// Makes the mount points of the roots under `/tmp` inside the private
    /// `/tmp` (an earlier command may have removed them: they are in its
    /// writable `/tmp`). Best effort: a missing one fails that command's
    /// set-up, not this.
    fn make_mount_points(&self) {
        let Some(private) = &self.private_tmp else {
            return;
        };
        let private = Path::new(std::ffi::OsStr::from_bytes(private.as_bytes()));
        for root in &self.roots {
            let root = Path::new(std::ffi::OsStr::from_bytes(root.as_bytes()));
            if let Ok(rel) = root.strip_prefix("/tmp") {
                let _ = std::fs::create_dir_all(private.join(rel));
            }
        }
    }

    /// Makes the init answer the command's connects through `gate`.
    pub(crate) fn set_gate(&mut self, gate: Gate) {
        self.gate = Some(gate);
    }

    /// Whether the init runs a Unix socket gate.
    pub(crate) fn gated(&self) -> bool {
        self.gate.is_some()
    }

    /// The network this plan gives.
    pub(crate) fn net(&self) -> NetNs {
        self.net
    }
}

fn c_path(p: &Path) -> Option<CString> {
    CString::new(p.as_os_str().as_bytes()).ok()
}

/// `(arg_start, arg_end)` and `(env_start, env_end)` of this process, from
/// `/proc/self/stat` (fields 48 to 51); zeros when unreadable.
fn own_strings() -> [(usize, usize); 2] {
    static AREAS: OnceLock<[(usize, usize); 2]> = OnceLock::new();
    *AREAS.get_or_init(|| {
        let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
            return [(0, 0); 2];
        };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            return [(0, 0); 2];
        };
        // `rest` starts at field 3.
        let fields: Vec<usize> = rest
            .split_whitespace()
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        let at = |n: usize| fields.get(n - 3).copied().unwrap_or(0);
        [(at(48), at(49)), (at(50), at(51))]
    })
}

/// A socket pair over which the keeper hands the proxy listener to the
/// parent: `(parent end, child end)`, both close-on-exec.
pub(crate) fn listener_channel() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two descriptors into the local array.
    #[allow(unsafe_code)]
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    #[allow(unsafe_code)]
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Receives the listener the keeper sent on `parent_end` (without
/// blocking: the keeper sends it before the command is executed, so it is
/// there once the spawn returned).
///
/// # Errors
/// `WouldBlock` when nothing was sent; the OS error of `recvmsg`; `Other`
/// when the message carried no descriptor.
pub(crate) fn receive_listener(parent_end: &OwnedFd) -> io::Result<std::net::TcpListener> {
    match receive_fd(parent_end.as_raw_fd(), libc::MSG_DONTWAIT) {
        // SAFETY: the descriptor was just received and is owned by nobody else.
        #[allow(unsafe_code)]
        Ok(fd) => Ok(unsafe { std::net::TcpListener::from_raw_fd(fd) }),
        Err(0) => Err(io::Error::other(
            "the proxy listener message carried no descriptor",
        )),
        Err(errno) => Err(io::Error::from_raw_os_error(errno)),
    }
}

/// Receives one descriptor sent with [`send_fd`] on `chan` (close-on-exec).
/// Async-signal-safe.
///
/// # Errors
/// The errno of `recvmsg` (`EAGAIN` with `MSG_DONTWAIT` and nothing
/// sent), or 0 when the peer closed or sent no descriptor.
#[allow(unsafe_code)]
fn receive_fd(chan: RawFd, flags: libc::c_int) -> Result<RawFd, i32> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut space = [0u64; 8];
    // SAFETY: a zeroed msghdr is valid; its pointers are set to live locals
    // below, and the control buffer is 64 bytes, aligned for cmsghdr.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&space) as _;
        let n = loop {
            let n = libc::recvmsg(chan, &mut msg, flags | libc::MSG_CMSG_CLOEXEC);
            if n >= 0 || last_errno() != libc::EINTR {
                break n;
            }
        };
        if n < 0 {
            return Err(last_errno());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if n == 0
            || cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(0);
        }
        Ok(std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()))
    }
}

/// Sends descriptor `fd` over the socket `chan`. Async-signal-safe.
///
/// # Errors
/// The errno of `sendmsg`.
#[allow(unsafe_code)]
pub(crate) fn send_fd(chan: RawFd, fd: RawFd) -> Result<(), i32> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut space = [0u64; 8];
    // SAFETY: a zeroed msghdr is valid; its pointers are set to live
    // locals, and the control buffer (64 bytes, aligned) holds one
    // descriptor's message.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        let n = libc::sendmsg(chan, &msg, libc::MSG_NOSIGNAL);
        if n != 1 {
            return Err(if n < 0 { last_errno() } else { libc::EIO });
        }
    }
    Ok(())
}

/// What the command process does once the namespaces are set up: the
/// rest of its confinement, then its program.
pub(crate) struct Launch<'a> {
    /// Applies Landlock, seccomp and the rest in the command process
    /// (given the gate's channel, if any); `Err` is an errno. `None` in
    /// the probe.
    pub(crate) confine: Option<&'a (dyn Fn(Option<RawFd>) -> Result<(), i32> + Sync)>,
    /// The program (`None`: the command process exits with 0, as in the
    /// probe).
    pub(crate) exec: Option<&'a Exec>,
    /// The stacks of the init and the command process.
    pub(crate) stacks: &'a Stacks,
    /// Where the gate reports refused Unix addresses (the write end of a
    /// non-blocking pipe the caller reads; -1: nowhere).
    pub(crate) denials: RawFd,
}

/// Enters the namespaces and starts the command. Runs in the forked child
/// (the keeper); returns only when something failed before the program
/// was executed (the caller then reports the error: the program never
/// ran). `workdir` is entered again once the mounts are in place; `chan`
/// is the child end of [`listener_channel`] for [`NetNs::Proxied`].
///
/// The keeper starts the init with `clone(CLONE_VM)` and the init starts
/// the command process with `clone(CLONE_VM | CLONE_VFORK)`, each on a
/// stack of [`Launch::stacks`]: neither copies the keeper's memory (a
/// copy of dsh's). While the command process runs, the init is suspended
/// and the keeper blocked reading the init's report, so nothing else runs
/// in the shared memory before the program is executed (the three share
/// the C library's `errno` too: the keeper and the init decide on return
/// values, not on `errno`, once both run).
///
/// Async-signal-safe: raw system calls on `plan`'s prepared data.
#[allow(unsafe_code)]
pub(crate) fn enter(plan: &Plan, workdir: &CStr, chan: RawFd, launch: &Launch) -> StepError {
    match set_up(plan, workdir, chan) {
        // SAFETY: the namespaces are set up; `start` only makes raw system
        // calls on prepared data.
        Ok(()) => unsafe { start(plan, launch) },
        Err(e) => e,
    }
}

/// Creates the namespaces, writes the id maps and sets up the mounts and
/// the working directory.
#[allow(unsafe_code)]
fn set_up(plan: &Plan, workdir: &CStr, chan: RawFd) -> Result<(), StepError> {
    let fail = |stage: Stage| (stage, last_errno());
    let mut flags =
        libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
    if plan.net != NetNs::Host {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY (whole function): raw system calls with pointers to data owned
    // by `plan` or to locals, alive for each call; no allocation.
    unsafe {
        // A non-dumpable parent (dsh makes itself one) leaves /proc/self
        // owned by root: the id maps could not be written.
        libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        if libc::unshare(flags) != 0 {
            return Err(fail(Stage::Unshare));
        }
        write_file(c"/proc/self/setgroups", b"deny").map_err(|e| (Stage::IdMaps, e))?;
        write_file(c"/proc/self/uid_map", &plan.uid_map).map_err(|e| (Stage::IdMaps, e))?;
        write_file(c"/proc/self/gid_map", &plan.gid_map).map_err(|e| (Stage::IdMaps, e))?;
        if plan.net != NetNs::Host {
            loopback_up().map_err(|e| (Stage::Loopback, e))?;
        }
        if plan.net == NetNs::Proxied {
            send_listener(chan).map_err(|e| (Stage::Listener, e))?;
        }
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        ) != 0
        {
            return Err(fail(Stage::Propagation));
        }
        let everything_writable = plan.roots.iter().any(|r| r.as_bytes() == b"/");
        if !everything_writable {
            mount_views(plan)?;
        }
        if libc::chdir(workdir.as_ptr()) != 0 {
            return Err(fail(Stage::Chdir));
        }
    }
    Ok(())
}

/// What the init reads (from the keeper's stack, alive while it runs).
struct InitArgs<'a, 'b> {
    plan: &'a Plan,
    launch: &'a Launch<'b>,
    /// Descriptors the init keeps (those below, and the gate's denials
    /// pipe); once the command runs it closes the rest of its copy of the
    /// keeper's table.
    keep: [RawFd; 5],
    /// Where the init reports the command started ([`Started`]).
    report: RawFd,
    /// Where the init writes the command's wait status when it ends.
    status: RawFd,
    /// The init's and the command's ends of the gate's channel (-1
    /// without a gate).
    gate: [RawFd; 2],
}

/// What the command process reads (from the init's stack; the init is
/// suspended meanwhile and the keeper blocked reading).
struct CommandArgs<'a, 'b> {
    launch: &'a Launch<'b>,
    /// The command's end of the gate's channel (-1 without a gate).
    gate: RawFd,
    /// Where a failure's errno goes before the program runs
    /// (close-on-exec: closed by a successful exec).
    failed: RawFd,
}

/// The init's report to the keeper: the stage that failed (as `u32`, 0
/// when the program runs) and the errno.
type Started = [u8; 8];

/// Starts the init, which starts the command process, and becomes the
/// keeper. Returns only on failure.
#[allow(unsafe_code)]
unsafe fn start(plan: &Plan, launch: &Launch) -> StepError {
    let fail = |stage: Stage| (stage, last_errno());
    // Pipes: [read, write], close-on-exec.
    let (mut report, mut status) = ([-1; 2], [-1; 2]);
    for pipe in [&mut report, &mut status] {
        if libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return fail(Stage::Fork);
        }
    }
    let mut gate = [-1; 2];
    if plan.gate.is_some()
        && libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            gate.as_mut_ptr(),
        ) != 0
    {
        return fail(Stage::Gate);
    }
    let init_args = InitArgs {
        plan,
        launch,
        keep: [report[1], status[1], gate[0], gate[1], launch.denials],
        report: report[1],
        status: status[1],
        gate,
    };
    let init = libc::clone(
        init_main,
        launch.stacks.init_top(),
        libc::CLONE_VM | libc::SIGCHLD,
        (&init_args as *const InitArgs).cast_mut().cast(),
    );
    if init < 0 {
        return fail(Stage::Fork);
    }
    libc::close(report[1]);
    libc::close(status[1]);
    let mut started: Started = [0; 8];
    let (stage, errno) = if read_full(report[0], &mut started) {
        let stage = u32::from_ne_bytes([started[0], started[1], started[2], started[3]]);
        let errno = i32::from_ne_bytes([started[4], started[5], started[6], started[7]]);
        (Stage::from_u8(stage as u8), errno)
    } else {
        // The init died before reporting.
        (Some(Stage::Fork), libc::ECHILD)
    };
    match stage {
        None => keep(init, status[0]),
        Some(stage) => {
            reap(init);
            (stage, errno)
        }
    }
}

/// Sends the init's report: `stage` failed with `errno`, or (`None`) the
/// program runs.
#[allow(unsafe_code)]
unsafe fn report_started(fd: RawFd, failed: Option<(Stage, i32)>) {
    let (stage, errno) = failed.map_or((0u32, 0), |(s, e)| (s as u32, e));
    let mut msg: Started = [0; 8];
    msg[..4].copy_from_slice(&stage.to_ne_bytes());
    msg[4..].copy_from_slice(&errno.to_ne_bytes());
    libc::write(fd, msg.as_ptr().cast(), msg.len());
}

/// Reads exactly `buf.len()` bytes (retrying on `EINTR`); `false` at an
/// early end of file or an error.
#[allow(unsafe_code)]
unsafe fn read_full(fd: RawFd, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        let n = libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got);
        if n > 0 {
            got += n as usize;
        } else if n == 0 || last_errno() != libc::EINTR {
            return false;
        }
    }
    true
}

/// Waits for the child `pid` to end.
#[allow(unsafe_code)]
unsafe fn reap(pid: libc::pid_t) {
    let mut status = 0;
    while libc::waitpid(pid, &mut status, 0) < 0 && last_errno() == libc::EINTR {}
}

/// The command process: the rest of its confinement, then its program.
/// Reports a failure's errno on `failed` and exits. Never returns.
#[allow(unsafe_code)]
extern "C" fn command_main(args: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `args` points at the init's `CommandArgs`, alive while the
    // init is suspended (CLONE_VFORK) until this process executes its
    // program or exits; only raw system calls follow.
    unsafe {
        let args = &*(args as *const CommandArgs);
        let gate = (args.gate >= 0).then_some(args.gate);
        let errno = match args.launch.confine.map_or(Ok(()), |confine| confine(gate)) {
            Err(errno) => errno,
            Ok(()) => match args.launch.exec {
                Some(exec) => exec.execute(),
                None => libc::_exit(0),
            },
        };
        let word = errno.to_ne_bytes();
        libc::write(args.failed, word.as_ptr().cast(), 4);
        libc::_exit(127)
    }
}

/// Clones the writable roots (and the private `/tmp`), makes every mount
/// read-only, and attaches the clones at their paths.
#[allow(unsafe_code)]
unsafe fn mount_views(plan: &Plan) -> Result<(), StepError> {
    // At most this many clones: the roots are a handful.
    const MAX: usize = 16;
    let mut clones = [-1; MAX];
    let mut n = 0;
    for root in plan.roots.iter().take(MAX - 1) {
        let fd = open_tree_clone(root);
        if fd < 0 {
            close_all(&clones[..n]);
            return Err((Stage::CloneRoot, last_errno()));
        }
        clones[n] = fd;
        n += 1;
    }
    let tmp = match &plan.private_tmp {
        Some(src) => {
            let fd = open_tree_clone(src);
            if fd < 0 {
                close_all(&clones[..n]);
                return Err((Stage::CloneRoot, last_errno()));
            }
            fd
        }
        None => -1,
    };
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let r = libc::syscall(
        libc::SYS_mount_setattr,
        libc::AT_FDCWD,
        c"/".as_ptr(),
        AT_RECURSIVE,
        &attr as *const MountAttr,
        std::mem::size_of::<MountAttr>(),
    );
    if r != 0 {
        let e = last_errno();
        close_all(&clones[..n]);
        return Err((Stage::ReadOnly, e));
    }
    // The private /tmp first: a root under /tmp then lands on top of it.
    if tmp >= 0 {
        let r = move_mount(tmp, c"/tmp");
        libc::close(tmp);
        if r != 0 {
            close_all(&clones[..n]);
            return Err((Stage::AttachRoot, last_errno()));
        }
    }
    for (i, root) in plan.roots.iter().take(n).enumerate() {
        let r = move_mount(clones[i], root);
        libc::close(clones[i]);
        if r != 0 {
            close_all(&clones[i + 1..n]);
            return Err((Stage::AttachRoot, last_errno()));
        }
    }
    // A devpts instance of the command's own: the user's terminals
    // (/dev/pts/N of the host) are not in it, and /dev/ptmx allocates
    // there.
    if libc::mount(
        c"devpts".as_ptr(),
        c"/dev/pts".as_ptr(),
        c"devpts".as_ptr(),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        c"newinstance,ptmxmode=0666,mode=0620".as_ptr().cast(),
    ) != 0
        || libc::mount(
            c"/dev/pts/ptmx".as_ptr(),
            c"/dev/ptmx".as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        ) != 0
    {
        return Err((Stage::Devpts, last_errno()));
    }
    Ok(())
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const AT_RECURSIVE: libc::c_int = 0x8000;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

#[allow(unsafe_code)]
unsafe fn open_tree_clone(path: &CStr) -> RawFd {
    libc::syscall(
        libc::SYS_open_tree,
        libc::AT_FDCWD,
        path.as_ptr(),
        OPEN_TREE_CLONE | AT_RECURSIVE as libc::c_uint | libc::O_CLOEXEC as libc::c_uint,
    ) as RawFd
}

#[allow(unsafe_code)]
unsafe fn move_mount(fd: RawFd, to: &CStr) -> libc::c_long {
    libc::syscall(
        libc::SYS_move_mount,
        fd,
        c"".as_ptr(),
        libc::AT_FDCWD,
        to.as_ptr(),
        MOVE_MOUNT_F_EMPTY_PATH,
    )
}

#[allow(unsafe_code)]
unsafe fn close_all(fds: &[RawFd]) {
    for &fd in fds {
        libc::close(fd);
    }
}

/// The keeper: closes everything but the status pipe, ignores the signals
/// a stop sends to the group (the command gets them itself), waits for
/// the command's status from the init and exits as the command did (the
/// init is left to the system's reaper when the namespace still has
/// processes). Never returns.
#[allow(unsafe_code)]
unsafe fn keep(init: libc::pid_t, status_read: RawFd) -> ! {
    close_except(&[status_read]);
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        libc::signal(sig, libc::SIG_IGN);
    }
    // The init reports the command's status as soon as it exits, then
    // lingers while the command's background processes run.
    let mut word = [0u8; 4];
    let status = if read_full(status_read, &mut word) {
        // Usually the init exits right after the command (nothing else
        // runs in the namespace): reap it rather than leave it to the
        // system. It closes the pipe when it exits; a namespace with
        // background processes left keeps it, and the keeper goes.
        let mut poll = libc::pollfd {
            fd: status_read,
            events: libc::POLLIN,
            revents: 0,
        };
        if libc::poll(&mut poll, 1, INIT_EXIT_WAIT_MS) == 1 {
            let mut init_status = 0;
            libc::waitpid(init, &mut init_status, 0);
        }
        i32::from_ne_bytes(word)
    } else {
        // The init died before the command did (killed): end as it did.
        // (The init shares this memory and errno: decide on return values.)
        let mut init_status = 0;
        if libc::waitpid(init, &mut init_status, 0) != init {
            libc::_exit(125);
        }
        init_status
    };
    exit_like(status)
}

/// How long the keeper waits for the init to follow the command before it
/// leaves the init to the system's reaper (milliseconds).
const INIT_EXIT_WAIT_MS: libc::c_int = 50;

/// Exits with `status`'s code, or dies of its signal. Never returns.
#[allow(unsafe_code)]
unsafe fn exit_like(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        // No core file of the keeper: it is not what crashed.
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        libc::kill(libc::getpid(), sig);
        libc::_exit(128 + sig);
    }
    libc::_exit(libc::WEXITSTATUS(status))
}

/// The init (PID 1 of the namespace, in the keeper's memory on its own
/// stack): mounts `/proc`, starts the command process (in the same memory,
/// on another stack; suspended until it has executed its program) and
/// reports to the keeper, blanks dsh's argument and environment strings
/// (it is a copy of dsh) and makes itself non-dumpable, leaves the
/// command's process group (a session of its own: stopping the group
/// stops the command and its jobs, not the namespace), then reaps every
/// process of the namespace, reports the command's wait status to the
/// keeper when it ends, and, with a gate, answers the command's connects
/// ([`unix_gate`]), until no process is left: a command's background
/// processes keep running as they would without the layer. Never
/// returns.
#[allow(unsafe_code)]
extern "C" fn init_main(args: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `args` points at the keeper's `InitArgs`, alive as long as
    // the keeper, which never leaves `start` while the init runs (it
    // becomes the keeper, or reaps the init first); only raw system calls
    // follow.
    unsafe {
        let args = &*(args as *const InitArgs);
        libc::prctl(libc::PR_SET_NAME, c"dsh-init".as_ptr(), 0, 0, 0);
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            report_started(args.report, Some((Stage::Proc, last_errno())));
            libc::_exit(1);
        }
        let mut failed = [-1; 2];
        if libc::pipe2(failed.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            report_started(args.report, Some((Stage::Fork, last_errno())));
            libc::_exit(1);
        }
        let command_args = CommandArgs {
            launch: args.launch,
            gate: args.gate[1],
            failed: failed[1],
        };
        let command = libc::clone(
            command_main,
            args.launch.stacks.command_top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&command_args as *const CommandArgs).cast_mut().cast(),
        );
        // Here the command process has executed its program, or ended.
        let clone_errno = last_errno();
        libc::close(failed[1]);
        if args.gate[1] >= 0 {
            libc::close(args.gate[1]);
        }
        if command < 0 {
            report_started(args.report, Some((Stage::Fork, clone_errno)));
            libc::_exit(1);
        }
        let mut word = [0u8; 4];
        if read_full(failed[0], &mut word) {
            reap(command);
            report_started(
                args.report,
                Some((Stage::Command, i32::from_ne_bytes(word))),
            );
            libc::_exit(1);
        }
        libc::close(failed[0]);
        report_started(args.report, None);
        // The command has its descriptors (standard streams, the ruleset,
        // the spawn's error pipe…): the init keeps none of them.
        close_except(&args.keep);
        libc::close(args.report);
        // Nothing in it is worth reading.
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        for (start, end) in args.plan.strings {
            if start != 0 && end > start && end - start < (1 << 20) {
                std::ptr::write_bytes(start as *mut u8, 0, end - start);
            }
        }
        libc::setsid();
        serve_namespace(
            args.plan.gate.as_ref(),
            command,
            args.status,
            args.gate[0],
            args.launch.denials,
        )
    }
}

/// The init's loop: reaps (woken by a `signalfd` for `SIGCHLD`, or every
/// [`INIT_POLL_MS`] without one), reports `command`'s wait status on
/// `status` when it ends, receives the command's seccomp listener on
/// `gate_chan` and answers its notifications. Exits when no child is
/// left. Without a listener (the command failed before sending it)
/// connects fail with `ENOSYS`. Never returns.
#[allow(unsafe_code)]
unsafe fn serve_namespace(
    gate: Option<&Gate>,
    command: libc::pid_t,
    status: RawFd,
    gate_chan: RawFd,
    denials: RawFd,
) -> ! {
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    libc::sigaddset(&mut set, libc::SIGCHLD);
    libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    let sfd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
    let (mut chan, mut listener) = (gate_chan, -1);
    loop {
        // Reap whatever has ended (SIGCHLD may have come before the block).
        // With WNOHANG, -1 means no child at all (errno is shared with the
        // keeper: not read).
        loop {
            let mut wait_status = 0;
            let pid = libc::waitpid(-1, &mut wait_status, libc::WNOHANG);
            if pid == command {
                let word = wait_status.to_ne_bytes();
                libc::write(status, word.as_ptr().cast(), 4);
            }
            if pid < 0 {
                // The namespace is empty.
                libc::_exit(0);
            }
            if pid == 0 {
                break;
            }
        }
        let mut fds = [sfd, chan, listener].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        let timeout = if sfd < 0 { INIT_POLL_MS } else { -1 };
        if libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) <= 0 {
            continue;
        }
        if fds[0].revents != 0 {
            let mut info = [0u8; 128];
            while libc::read(sfd, info.as_mut_ptr().cast(), info.len()) > 0 {}
        }
        if fds[1].revents != 0 {
            listener = receive_fd(chan, libc::MSG_DONTWAIT).unwrap_or(-1);
            libc::close(chan);
            chan = -1;
        }
        if fds[2].revents & libc::POLLIN != 0 {
            if let Some(gate) = gate {
                unix_gate::serve_one(gate, listener, denials);
            }
        } else if fds[2].revents != 0 {
            // No process uses the filter any more.
            libc::close(listener);
            listener = -1;
        }
    }
}

/// How often the init looks for ended children when it has no `signalfd`
/// (milliseconds).
const INIT_POLL_MS: libc::c_int = 20;

/// Closes every descriptor but those in `keep` (standard streams
/// included).
#[allow(unsafe_code)]
unsafe fn close_except(keep: &[RawFd]) {
    // The kept descriptors in ascending order (at most a few).
    let mut kept = [u32::MAX; 6];
    for (slot, &fd) in kept.iter_mut().zip(keep) {
        *slot = fd as u32;
    }
    kept.sort_unstable();
    let mut first = 0u32;
    for &k in &kept {
        if k == u32::MAX {
            break;
        }
        if k > first {
            close_range(first, k - 1);
        }
        first = first.max(k + 1);
    }
    close_range(first, u32::MAX);
}

/// Closes descriptors `first..=last`.
#[allow(unsafe_code)]
unsafe fn close_range(first: u32, last: u32) {
    if libc::syscall(libc::SYS_close_range, first, last, 0) != 0 {
        // Kernels before 5.9: close what a process usually has.
        for fd in first..=last.min(4095) {
            libc::close(fd as RawFd);
        }
    }
}

#[allow(unsafe_code)]
unsafe fn write_file(path: &CStr, data: &[u8]) -> Result<(), i32> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(last_errno());
    }
    let n = libc::write(fd, data.as_ptr().cast(), data.len());
    let e = last_errno();
    libc::close(fd);
    if n != data.len() as isize {
        return Err(if n < 0 { e } else { libc::EIO });
    }
    Ok(())
}

#[allow(unsafe_code)]
unsafe fn loopback_up() -> Result<(), i32> {
    let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
    if s < 0 {
        return Err(last_errno());
    }
    let mut req: libc::ifreq = std::mem::zeroed();
    req.ifr_name[0] = b'l' as libc::c_char;
    req.ifr_name[1] = b'o' as libc::c_char;
    let result = if libc::ioctl(s, libc::SIOCGIFFLAGS as _, &mut req) != 0 {
        Err(last_errno())
    } else {
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(s, libc::SIOCSIFFLAGS as _, &req) != 0 {
            Err(last_errno())
        } else {
            Ok(())
        }
    };
    libc::close(s);
    result
}

/// Makes a TCP listener on `127.0.0.1:PROXY_PORT` in this (new) network
/// namespace and sends it over `chan`.
#[allow(unsafe_code)]
unsafe fn send_listener(chan: RawFd) -> Result<(), i32> {
    let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
    if s < 0 {
        return Err(last_errno());
    }
    let mut addr: libc::sockaddr_in = std::mem::zeroed();
    addr.sin_family = libc::AF_INET as libc::sa_family_t;
    addr.sin_port = PROXY_PORT.to_be();
    addr.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    if libc::bind(s, (&addr as *const libc::sockaddr_in).cast(), len) != 0
        || libc::listen(s, 128) != 0
    {
        let e = last_errno();
        libc::close(s);
        return Err(e);
    }
    let sent = send_fd(chan, s);
    libc::close(s);
    sent
}

/// `struct landlock_path_beneath_attr` (packed).
#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds rules granting `access` beneath this mount namespace's `/dev/pts`
/// (the command's own instance) and on `/dev/ptmx` (bound to its `ptmx`)
/// to the ruleset `ruleset_fd`.
/// Async-signal-safe.
///
/// # Errors
/// The errno of `open` or `landlock_add_rule`.
#[allow(unsafe_code)]
pub(crate) fn allow_own_devpts(ruleset_fd: RawFd, access: u64) -> Result<(), i32> {
    /// The rights Landlock accepts on a file (not a directory): execute,
    /// write, read, truncate, ioctl on a device.
    const FILE_RIGHTS: u64 = 0b111 | (1 << 14) | (1 << 15);
    // The instance's directory, and /dev/ptmx (bound to its ptmx).
    allow_beneath(ruleset_fd, c"/dev/pts", libc::O_DIRECTORY, access)?;
    allow_beneath(ruleset_fd, c"/dev/ptmx", 0, access & FILE_RIGHTS)
}

#[allow(unsafe_code)]
fn allow_beneath(
    ruleset_fd: RawFd,
    path: &CStr,
    flags: libc::c_int,
    access: u64,
) -> Result<(), i32> {
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_long = 1;
    // SAFETY: raw system calls on a static path and a live local.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC | flags);
        if fd < 0 {
            return Err(last_errno());
        }
        let attr = PathBeneath {
            allowed_access: access,
            parent_fd: fd,
        };
        let r = libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset_fd,
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneath,
            0,
        );
        let e = last_errno();
        libc::close(fd);
        if r != 0 {
            return Err(e);
        }
    }
    Ok(())
}

fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// What the namespace layer can do on this machine: `Ok` or why not, for
/// the layer itself and for network namespaces. Probed once per process
/// by setting the layer up in a throw-away child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceSupport {
    /// User, mount, PID and IPC namespaces with a read-only view and
    /// `/proc`: `Err` says which step failed and why.
    pub layer: Result<(), String>,
    /// Network namespaces with loopback (needed by `network = false` and
    /// domain lists on top of the layer).
    pub network: Result<(), String>,
}

/// Probes the namespace layer (cached: the first call forks twice and
/// takes a few milliseconds). Never fails.
pub fn probe_namespaces() -> NamespaceSupport {
    static SUPPORT: OnceLock<NamespaceSupport> = OnceLock::new();
    SUPPORT
        .get_or_init(|| {
            let tmp = std::env::temp_dir();
            let layer = try_layer(&Plan::new(std::slice::from_ref(&tmp), None, NetNs::Host));
            let network = match &layer {
                Ok(()) => try_layer(&Plan::new(std::slice::from_ref(&tmp), None, NetNs::Empty)),
                Err(_) => Err("needs the namespace layer".to_string()),
            };
            NamespaceSupport { layer, network }
        })
        .clone()
}

/// Sets `plan` up in a forked child that exits at once.
#[allow(unsafe_code)]
fn try_layer(plan: &Plan) -> Result<(), String> {
    let mut report = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the local array.
    if unsafe { libc::pipe2(report.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("probe failed: {}", io::Error::last_os_error()));
    }
    let stacks = Stacks::new().map_err(|e| format!("probe failed: {e}"))?;
    let launch = Launch {
        confine: None,
        exec: None,
        stacks: &stacks,
        denials: -1,
    };
    // SAFETY: the child only makes raw system calls on prepared data
    // (`enter` is async-signal-safe) and leaves with `_exit` (the keeper
    // exits as the probe's command process did: 0).
    let child = unsafe { libc::fork() };
    if child == 0 {
        // SAFETY: see above.
        unsafe {
            libc::close(report[0]);
            let (stage, errno) = enter(plan, c"/", -1, &launch);
            let mut msg = [0u8; 5];
            msg[0] = stage as u8;
            msg[1..].copy_from_slice(&errno.to_ne_bytes());
            libc::write(report[1], msg.as_ptr().cast(), msg.len());
            libc::_exit(1);
        }
    }
    // SAFETY: closes our copy of the write end, which we own.
    unsafe { libc::close(report[1]) };
    // SAFETY: report[0] is ours; the OwnedFd closes it.
    let read_end = unsafe { OwnedFd::from_raw_fd(report[0]) };
    if child < 0 {
        return Err(format!("probe failed: {}", io::Error::last_os_error()));
    }
    let mut status = 0;
    // SAFETY: waits for our own child.
    while unsafe { libc::waitpid(child, &mut status, 0) } < 0 {
        if last_errno() != libc::EINTR {
            return Err(format!("probe failed: {}", io::Error::last_os_error()));
        }
    }
    let mut msg = [0u8; 5];
    let mut file = std::fs::File::from(read_end);
    let got = std::io::Read::read(&mut file, &mut msg).unwrap_or(0);
    if got == 5 {
        let errno = i32::from_ne_bytes([msg[1], msg[2], msg[3], msg[4]]);
        let what = Stage::from_u8(msg[0]).map_or("setting up namespaces", Stage::what);
        return Err(explain(what, errno));
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(format!(
            "the probe process ended with wait status {status:#x}"
        ))
    }
}

/// `<step> failed: <OS error>`, with what usually causes it.
fn explain(what: &str, errno: i32) -> String {
    let os = io::Error::from_raw_os_error(errno);
    let hint = match errno {
        libc::EPERM | libc::EACCES => {
            "; user namespaces are disabled or restricted here (sysctl \
             kernel.unprivileged_userns_clone=0 or user.max_user_namespaces=0, \
             Ubuntu's kernel.apparmor_restrict_unprivileged_userns=1 without an \
             AppArmor profile for dsh, or a container's seccomp policy)"
        }
        libc::ENOSPC => "; user.max_user_namespaces is exhausted or 0",
        libc::ENOSYS => "; this kernel lacks the system call (Linux 5.12+ needed)",
        libc::EINVAL => "; this kernel does not support it",
        _ => "",
    };
    format!("{what} failed: {os}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print() {
        for m in [
            NamespaceMode::Auto,
            NamespaceMode::Required,
            NamespaceMode::Off,
        ] {
            assert_eq!(m.as_str().parse::<NamespaceMode>(), Ok(m));
        }
        let e = "sometimes".parse::<NamespaceMode>().unwrap_err();
        assert!(e.contains("\"auto\", \"required\" or \"off\""), "{e}");
    }

    #[test]
    fn nested_roots_collapse_and_sort_shallow_first() {
        let a = tempfile::tempdir().unwrap();
        let inner = a.path().join("x/y");
        std::fs::create_dir_all(&inner).unwrap();
        let plan = Plan::new(
            &[
                inner.clone(),
                a.path().to_path_buf(),
                PathBuf::from("/nonexistent-dsh"),
            ],
            None,
            NetNs::Host,
        );
        assert_eq!(plan.roots, vec![c_path(a.path()).unwrap()]);
    }

    #[test]
    fn the_strings_of_this_process_are_found() {
        let [(a0, a1), (e0, e1)] = own_strings();
        assert!(a0 != 0 && a1 > a0, "{a0:#x}..{a1:#x}");
        assert!(e0 != 0 && e1 >= e0, "{e0:#x}..{e1:#x}");
    }

    #[test]
    fn errors_name_the_step_and_the_likely_cause() {
        let e = explain(Stage::Unshare.what(), libc::EPERM);
        assert!(
            e.starts_with("creating user, mount, PID and IPC namespaces failed"),
            "{e}"
        );
        assert!(e.contains("apparmor_restrict_unprivileged_userns"), "{e}");
        for (i, stage) in Stage::ALL.into_iter().enumerate() {
            assert_eq!(stage as usize, i + 1);
            assert_eq!(Stage::from_u8(stage as u8), Some(stage));
            assert!(!stage.what().is_empty());
        }
        assert_eq!(Stage::from_u8(0), None);
    }
}
