//! The seccomp filter of confined commands, built in the parent
//! ([`program`]) and loaded in the child ([`install`], which allocates
//! nothing). Three rule sets:
//! - **Unix sockets**, one of two ways ([`UnixRule`]):
//!   - *denied*: `socket(AF_UNIX, …)` fails with `EACCES`; so does
//!     `socketpair(AF_UNIX, SOCK_DGRAM, …)`, whose sockets could `sendto`
//!     any datagram socket by path; stream and seqpacket pairs stay
//!     allowed (they reach nothing but each other);
//!   - *gated* (`allow_unix_sockets` lists some, under the namespace
//!     layer): Unix stream and seqpacket sockets may be made, datagram
//!     ones not, and every `connect` goes to the namespace's init as a
//!     user notification ([`crate::unix_gate`]), which makes it on the
//!     command's behalf only to a listed socket;
//! - **io_uring** (always): `io_uring_setup`, `io_uring_enter` and
//!   `io_uring_register` fail with `ENOSYS` (runtimes fall back to plain
//!   system calls): a ring's `socket` and `connect` operations would pass
//!   the filter unseen;
//! - **Namespace escapes** (always): no new namespaces (`unshare` and
//!   `clone` with a `CLONE_NEW*` flag, `setns`: `EPERM`; `clone3`, whose
//!   flags a filter cannot see: `ENOSYS`, so C libraries fall back to
//!   `clone`), and no mount changes (`mount`, `umount2`, `pivot_root` and
//!   the new mount API, `mount_setattr` included: `EPERM`). A command can
//!   therefore neither undo the read-only view of the namespace layer nor
//!   build a user namespace of its own to regain rights.
//!
//! Every other system call is allowed. The filter checks the architecture
//! of every call, so another ABI of the same kernel cannot slip past:
//! - x86_64: the native ABI and the x32 ABI (numbers with bit 30 set); the
//!   i386 ABI, including `socketcall(2)`, whose arguments the filter
//!   cannot see (`SYS_SOCKET`, `SYS_SOCKETPAIR` and, gated, `SYS_CONNECT`
//!   through it are refused to 32-bit programs);
//! - aarch64, and the 32-bit Arm ABI;
//! - any other architecture value kills the process.

use std::sync::Arc;

/// `AF_UNIX`.
const AF_UNIX: u32 = 1;
/// `SOCK_DGRAM`, the type (low four bits of the second argument) of a
/// datagram socket.
const SOCK_DGRAM: u32 = 2;
/// The bits of the type argument that are the type (the rest are flags).
const SOCK_TYPE_MASK: u32 = 0xf;
/// `socketcall(2)` calls: `SYS_SOCKET`, `SYS_CONNECT`, `SYS_SOCKETPAIR`.
const SYS_SOCKET: u32 = 1;
const SYS_CONNECT: u32 = 3;
const SYS_SOCKETPAIR: u32 = 8;
/// `EACCES`: what `socket(AF_UNIX, …)` fails with ("Permission denied").
const EACCES: u32 = 13;
/// `EPERM`: what namespace and mount calls fail with.
const EPERM: u32 = 1;
/// `ENOSYS`: what `clone3` fails with.
const ENOSYS: u32 = 38;

/// Every `CLONE_NEW*` flag `unshare(2)` takes (`CLONE_NEWTIME` included).
const UNSHARE_NS: u32 = 0x0002_0000
    | 0x0200_0000
    | 0x0400_0000
    | 0x0800_0000
    | 0x1000_0000
    | 0x2000_0000
    | 0x4000_0000
    | 0x80;
/// The `CLONE_NEW*` flags of `clone(2)` (its low byte is the exit signal).
const CLONE_NS: u32 = UNSHARE_NS & !0xff;

const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;
/// `SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV`.
const WAIT_KILLABLE_RECV: libc::c_ulong = 1 << 5;

/// Offsets in `struct seccomp_data`: `nr`, `arch`, and the low 32 bits of
/// `args[0]` (little-endian; the arguments checked are `int`s or flags in
/// the low half).
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARG0_LO: u32 = 16;
const OFF_ARG1_LO: u32 = 24;

/// `BPF_LD | BPF_W | BPF_ABS` (0x00 | 0x00 | 0x20).
const BPF_LD_W_ABS: u16 = 0x20;
/// `BPF_JMP | BPF_JEQ | BPF_K`.
const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
/// `BPF_JMP | BPF_JSET | BPF_K`.
const BPF_JMP_JSET_K: u16 = 0x05 | 0x40;
/// `BPF_JMP | BPF_JGE | BPF_K`.
const BPF_JMP_JGE_K: u16 = 0x05 | 0x30;
/// `BPF_JMP | BPF_JA` (jump by `k`).
const BPF_JMP_JA: u16 = 0x05;
/// `BPF_RET | BPF_K`.
const BPF_RET_K: u16 = 0x06;
/// `BPF_ALU | BPF_AND | BPF_K`.
const BPF_ALU_AND_K: u16 = 0x04 | 0x50;

#[allow(dead_code)] // each build uses one architecture's; tests use all
const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
#[allow(dead_code)] // each build uses one architecture's; tests use all
const AUDIT_ARCH_I386: u32 = 0x4000_0003;
#[allow(dead_code)] // each build uses one architecture's; tests use all
const AUDIT_ARCH_AARCH64: u32 = 0xC000_00B7;
#[allow(dead_code)] // each build uses one architecture's; tests use all
const AUDIT_ARCH_ARM: u32 = 0x4000_0028;
#[allow(dead_code)] // each build uses one architecture's; tests use all
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// When a rule refuses its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    /// Always.
    Always,
    /// The first argument equals this.
    Arg0Is(u32),
    /// The first argument has any of these bits.
    Arg0HasAny(u32),
    /// The first argument (a socket family) equals `.0` and the type in
    /// the second equals `.1`.
    FamilyAndType(u32, u32),
}

/// How confined commands may use Unix sockets on the file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnixRule {
    /// They may not make any (`socket(AF_UNIX)` fails; datagram pairs too).
    Denied,
    /// Stream and seqpacket sockets, with every `connect` checked by the
    /// supervisor behind the filter's listener.
    Gated,
}

/// One ruled call: number, condition, what the filter returns.
type Rule = (u32, When, u32);

/// The return value refusing a call with `errno`.
const fn errno(errno: u32) -> u32 {
    SECCOMP_RET_ERRNO | errno
}

/// One architecture's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ArchRules {
    arch: u32,
    rules: Vec<Rule>,
}

/// Numbers of one ABI's calls the filter knows.
#[allow(dead_code)] // each build uses one architecture's; tests use all
struct Numbers {
    socket: &'static [u32],
    socketpair: u32,
    connect: u32,
    socketcall: Option<u32>,
    unshare: u32,
    clone: u32,
    /// setns, mount, umount(2), pivot_root and the new mount API.
    forbidden: &'static [u32],
}

/// The new mount API (same numbers on every ABI): open_tree, move_mount,
/// fsopen, fsconfig, fsmount, fspick, mount_setattr.
#[allow(dead_code)] // each build uses one architecture's; tests use all
const NEW_MOUNT_API: [u32; 7] = [428, 429, 430, 431, 432, 433, 442];
const CLONE3: u32 = 435;
/// io_uring_setup, io_uring_enter, io_uring_register (same on every ABI).
const IO_URING: [u32; 3] = [425, 426, 427];

#[allow(dead_code)] // each build uses one architecture's; tests use all
const X86_64: Numbers = Numbers {
    socket: &[41],
    socketpair: 53,
    connect: 42,
    socketcall: None,
    unshare: 272,
    clone: 56,
    forbidden: &[308, 165, 166, 155],
};
#[allow(dead_code)] // each build uses one architecture's; tests use all
const I386: Numbers = Numbers {
    socket: &[359],
    socketpair: 360,
    connect: 362,
    socketcall: Some(102),
    unshare: 310,
    clone: 120,
    forbidden: &[346, 21, 22, 52, 217],
};
#[allow(dead_code)] // each build uses one architecture's; tests use all
const AARCH64: Numbers = Numbers {
    socket: &[198],
    socketpair: 199,
    connect: 203,
    socketcall: None,
    unshare: 97,
    clone: 220,
    forbidden: &[268, 40, 39, 41],
};
#[allow(dead_code)] // each build uses one architecture's; tests use all
const ARM: Numbers = Numbers {
    socket: &[281],
    socketpair: 288,
    connect: 283,
    socketcall: None,
    unshare: 337,
    clone: 120,
    forbidden: &[375, 21, 52, 218],
};

/// The rules of one ABI; `bit` is or-ed into every number (x32).
#[allow(dead_code)] // each build uses one architecture's; tests use all
fn abi_rules(n: &Numbers, bit: u32, unix: UnixRule, out: &mut Vec<Rule>) {
    let refuse = errno(EACCES);
    match unix {
        UnixRule::Denied => {
            for &nr in n.socket {
                out.push((nr | bit, When::Arg0Is(AF_UNIX), refuse));
            }
        }
        UnixRule::Gated => {
            for &nr in n.socket {
                out.push((nr | bit, When::FamilyAndType(AF_UNIX, SOCK_DGRAM), refuse));
            }
            out.push((n.connect | bit, When::Always, SECCOMP_RET_USER_NOTIF));
        }
    }
    out.push((
        n.socketpair | bit,
        When::FamilyAndType(AF_UNIX, SOCK_DGRAM),
        refuse,
    ));
    if let Some(nr) = n.socketcall {
        out.push((nr | bit, When::Arg0Is(SYS_SOCKET), refuse));
        out.push((nr | bit, When::Arg0Is(SYS_SOCKETPAIR), refuse));
        if unix == UnixRule::Gated {
            out.push((nr | bit, When::Arg0Is(SYS_CONNECT), refuse));
        }
    }
    out.push((n.unshare | bit, When::Arg0HasAny(UNSHARE_NS), errno(EPERM)));
    out.push((n.clone | bit, When::Arg0HasAny(CLONE_NS), errno(EPERM)));
    out.push((CLONE3 | bit, When::Always, errno(ENOSYS)));
    for &nr in &IO_URING {
        out.push((nr | bit, When::Always, errno(ENOSYS)));
    }
    for &nr in n.forbidden.iter().chain(NEW_MOUNT_API.iter()) {
        out.push((nr | bit, When::Always, errno(EPERM)));
    }
}

/// The rules of the architecture this crate is built for, `None` where
/// dsh has none (the caller then cannot confine).
fn rules(unix: UnixRule) -> Option<Vec<ArchRules>> {
    #[cfg(all(target_arch = "x86_64", target_endian = "little"))]
    {
        let mut native = Vec::new();
        abi_rules(&X86_64, 0, unix, &mut native);
        abi_rules(&X86_64, X32_SYSCALL_BIT, unix, &mut native);
        let mut compat = Vec::new();
        abi_rules(&I386, 0, unix, &mut compat);
        Some(vec![
            ArchRules {
                arch: AUDIT_ARCH_X86_64,
                rules: native,
            },
            ArchRules {
                arch: AUDIT_ARCH_I386,
                rules: compat,
            },
        ])
    }
    #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
    {
        let mut native = Vec::new();
        abi_rules(&AARCH64, 0, unix, &mut native);
        let mut compat = Vec::new();
        abi_rules(&ARM, 0, unix, &mut compat);
        Some(vec![
            ArchRules {
                arch: AUDIT_ARCH_AARCH64,
                rules: native,
            },
            ArchRules {
                arch: AUDIT_ARCH_ARM,
                rules: compat,
            },
        ])
    }
    #[cfg(not(any(
        all(target_arch = "x86_64", target_endian = "little"),
        all(target_arch = "aarch64", target_endian = "little")
    )))]
    {
        let _ = unix;
        None
    }
}

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// Assembles the program for `arches`: per architecture, a binary search
/// over the ruled call numbers (a handful of comparisons per call, also
/// for the kernel's per-number action cache, which runs the program once
/// for every number when the filter is loaded), then each number's rules
/// in their order; a call no rule refuses is allowed, a call of another
/// architecture kills the process.
///
/// # Errors
/// One number's rules too long for a BPF jump (never with the rules
/// above).
fn assemble(arches: &[ArchRules]) -> Result<Vec<libc::sock_filter>, String> {
    let mut prog = vec![stmt(BPF_LD_W_ABS, OFF_ARCH)];
    for ArchRules { arch, rules } in arches {
        let mut groups: Vec<(u32, Vec<(When, u32)>)> = Vec::new();
        for &(nr, when, ret) in rules {
            match groups.iter_mut().find(|(n, _)| *n == nr) {
                Some((_, group)) => group.push((when, ret)),
                None => groups.push((nr, vec![(when, ret)])),
            }
        }
        groups.sort_by_key(|(nr, _)| *nr);
        let mut block = vec![stmt(BPF_LD_W_ABS, OFF_NR)];
        block.extend(search(&groups)?);
        // Not this architecture: jump over its block.
        prog.push(jump(BPF_JMP_JEQ_K, *arch, 1, 0));
        prog.push(stmt(BPF_JMP_JA, block.len() as u32));
        prog.extend(block);
    }
    prog.push(stmt(BPF_RET_K, SECCOMP_RET_KILL_PROCESS));
    Ok(prog)
}

/// Groups searched linearly at the leaves of [`search`].
const LEAF_GROUPS: usize = 3;

/// Code choosing among `groups` (sorted by number) with the call number
/// in the accumulator; every path ends in a return.
fn search(groups: &[(u32, Vec<(When, u32)>)]) -> Result<Vec<libc::sock_filter>, String> {
    if groups.len() <= LEAF_GROUPS {
        let mut code = Vec::new();
        for (nr, rules) in groups {
            let body = group_body(rules);
            let skip = u8::try_from(body.len())
                .map_err(|_| format!("seccomp rules of call {nr} are too long"))?;
            code.push(jump(BPF_JMP_JEQ_K, *nr, 0, skip));
            code.extend(body);
        }
        code.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW));
        return Ok(code);
    }
    let mid = groups.len() / 2;
    let below = search(&groups[..mid])?;
    let above = search(&groups[mid..])?;
    // number >= the middle one: over the lower half.
    let mut code = vec![
        jump(BPF_JMP_JGE_K, groups[mid].0, 0, 1),
        stmt(BPF_JMP_JA, below.len() as u32),
    ];
    code.extend(below);
    code.extend(above);
    Ok(code)
}

/// One number's rules in order (the accumulator is then free), then
/// allow.
fn group_body(rules: &[(When, u32)]) -> Vec<libc::sock_filter> {
    let mut body = Vec::new();
    for &(when, ret) in rules {
        let verdict = stmt(BPF_RET_K, ret);
        match when {
            When::Always => body.push(verdict),
            When::Arg0Is(v) => {
                body.push(stmt(BPF_LD_W_ABS, OFF_ARG0_LO));
                body.push(jump(BPF_JMP_JEQ_K, v, 0, 1));
                body.push(verdict);
            }
            When::Arg0HasAny(mask) => {
                body.push(stmt(BPF_LD_W_ABS, OFF_ARG0_LO));
                body.push(jump(BPF_JMP_JSET_K, mask, 0, 1));
                body.push(verdict);
            }
            When::FamilyAndType(family, ty) => {
                body.push(stmt(BPF_LD_W_ABS, OFF_ARG0_LO));
                body.push(jump(BPF_JMP_JEQ_K, family, 0, 4));
                body.push(stmt(BPF_LD_W_ABS, OFF_ARG1_LO));
                body.push(stmt(BPF_ALU_AND_K, SOCK_TYPE_MASK));
                body.push(jump(BPF_JMP_JEQ_K, ty, 0, 1));
                body.push(verdict);
            }
        }
    }
    body.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW));
    body
}

/// The filter program for this machine's architecture with `unix`'s
/// rules, ready for [`install`].
///
/// # Errors
/// Why it cannot be enforced: no rules for this architecture, or a kernel
/// without seccomp filters that return an errno or kill the process (or,
/// gated, notify a listener).
pub(crate) fn program(unix: UnixRule) -> Result<Arc<Vec<libc::sock_filter>>, String> {
    let arches = rules(unix)
        .ok_or_else(|| format!("dsh has no seccomp filter for {}", std::env::consts::ARCH))?;
    available(unix == UnixRule::Gated)?;
    Ok(Arc::new(assemble(&arches)?))
}

/// Whether the kernel supports seccomp filters with the actions this one
/// returns (user notifications when `notify`).
///
/// # Errors
/// What is missing, in words.
#[allow(unsafe_code)]
pub(crate) fn available(notify: bool) -> Result<(), String> {
    let actions = [
        SECCOMP_RET_ERRNO,
        SECCOMP_RET_KILL_PROCESS,
        SECCOMP_RET_USER_NOTIF,
    ];
    for &action in &actions[..if notify { 3 } else { 2 }] {
        // SAFETY: SECCOMP_GET_ACTION_AVAIL reads one u32 from the pointer,
        // which points at a live local.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_GET_ACTION_AVAIL,
                0,
                &action as *const u32,
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::ENOSYS) | Some(libc::EINVAL) => {
                    "this kernel has no seccomp filter support".to_string()
                }
                Some(libc::EOPNOTSUPP) => {
                    format!("this kernel's seccomp lacks action {action:#x}")
                }
                _ => format!("seccomp probe failed: {e}"),
            });
        }
    }
    Ok(())
}

/// Loads `prog` into the calling process (which has `no_new_privs` set).
/// With `listener`, returns the descriptor of the filter's notification
/// listener (close-on-exec); else `None`. Async-signal-safe: one system
/// call, no allocation.
///
/// # Errors
/// The OS error of `seccomp(SECCOMP_SET_MODE_FILTER)` (`EBUSY` when
/// `listener` and a filter with a listener is already in force).
#[allow(unsafe_code)]
pub(crate) fn install(
    prog: &[libc::sock_filter],
    listener: bool,
) -> std::io::Result<Option<std::os::fd::RawFd>> {
    let Ok(len) = u16::try_from(prog.len()) else {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    };
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr().cast_mut(),
    };
    let load = |flags: libc::c_ulong| {
        // SAFETY: `fprog` points at `prog`, alive for the call; the kernel
        // copies the program and never writes through the pointer.
        unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flags,
                &fprog as *const libc::sock_fprog,
            )
        }
    };
    let r = if listener {
        // Killable waits (Linux 5.19+): once the supervisor has the call,
        // a signal the command handles does not cut it in two; older
        // kernels refuse the flag and get the plain listener.
        let r = load(libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | WAIT_KILLABLE_RECV);
        if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
            load(libc::SECCOMP_FILTER_FLAG_NEW_LISTENER)
        } else {
            r
        }
    } else {
        load(0)
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(listener.then_some(r as std::os::fd::RawFd))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the classic-BPF subset this module emits over one call.
    fn eval(prog: &[libc::sock_filter], arch: u32, nr: u32, arg0: u32) -> u32 {
        eval2(prog, arch, nr, arg0, 1)
    }

    /// [`eval`] with a second argument.
    fn eval2(prog: &[libc::sock_filter], arch: u32, nr: u32, arg0: u32, arg1: u32) -> u32 {
        let mut a = 0u32;
        let mut pc = 0usize;
        loop {
            let i = prog[pc];
            pc += 1;
            match i.code {
                BPF_LD_W_ABS => {
                    a = match i.k {
                        OFF_NR => nr,
                        OFF_ARCH => arch,
                        OFF_ARG0_LO => arg0,
                        OFF_ARG1_LO => arg1,
                        k => panic!("unexpected load offset {k}"),
                    }
                }
                BPF_JMP_JEQ_K => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
                BPF_JMP_JSET_K => pc += usize::from(if a & i.k != 0 { i.jt } else { i.jf }),
                BPF_JMP_JGE_K => pc += usize::from(if a >= i.k { i.jt } else { i.jf }),
                BPF_JMP_JA => pc += i.k as usize,
                BPF_ALU_AND_K => a &= i.k,
                BPF_RET_K => return i.k,
                c => panic!("unexpected opcode {c:#x}"),
            }
        }
    }

    const DENY_UNIX: u32 = SECCOMP_RET_ERRNO | EACCES;
    const DENY: u32 = SECCOMP_RET_ERRNO | EPERM;
    const NO_SYS: u32 = SECCOMP_RET_ERRNO | ENOSYS;
    const ALLOW: u32 = SECCOMP_RET_ALLOW;
    const NOTIFY: u32 = SECCOMP_RET_USER_NOTIF;
    const SOCK_STREAM: u32 = 1;
    const SOCK_SEQPACKET: u32 = 5;
    /// `SOCK_NONBLOCK | SOCK_CLOEXEC`, flags or-ed into a type.
    const TYPE_FLAGS: u32 = 0o4000 | 0o2000000;
    const SIGCHLD: u32 = 17;
    const CLONE_NEWUSER: u32 = 0x1000_0000;
    const CLONE_NEWNS: u32 = 0x0002_0000;
    const CLONE_THREAD_FLAGS: u32 = 0x003d_0f00;

    fn x86(unix: UnixRule) -> Vec<libc::sock_filter> {
        let mut native = Vec::new();
        abi_rules(&X86_64, 0, unix, &mut native);
        abi_rules(&X86_64, X32_SYSCALL_BIT, unix, &mut native);
        let mut compat = Vec::new();
        abi_rules(&I386, 0, unix, &mut compat);
        assemble(&[
            ArchRules {
                arch: AUDIT_ARCH_X86_64,
                rules: native,
            },
            ArchRules {
                arch: AUDIT_ARCH_I386,
                rules: compat,
            },
        ])
        .unwrap()
    }

    #[test]
    fn x86_64_unix_rules_cover_every_abi() {
        let prog = x86(UnixRule::Denied);
        let x = AUDIT_ARCH_X86_64;
        assert_eq!(eval(&prog, x, 41, AF_UNIX), DENY_UNIX);
        assert_eq!(eval(&prog, x, 41 | X32_SYSCALL_BIT, AF_UNIX), DENY_UNIX);
        assert_eq!(eval(&prog, x, 41, 2), ALLOW, "AF_INET");
        assert_eq!(eval(&prog, x, 41, 10), ALLOW, "AF_INET6");
        assert_eq!(eval(&prog, x, 41, 16), ALLOW, "AF_NETLINK");
        assert_eq!(eval2(&prog, x, 53, AF_UNIX, SOCK_STREAM), ALLOW);
        assert_eq!(eval2(&prog, x, 53, AF_UNIX, SOCK_SEQPACKET), ALLOW);
        assert_eq!(eval2(&prog, x, 53, AF_UNIX, SOCK_DGRAM), DENY_UNIX);
        assert_eq!(
            eval2(&prog, x, 53, AF_UNIX, SOCK_DGRAM | TYPE_FLAGS),
            DENY_UNIX,
            "flags do not hide the type"
        );
        assert_eq!(eval2(&prog, x, 53, 2, SOCK_DGRAM), ALLOW, "not AF_UNIX");
        assert_eq!(eval(&prog, x, 42, AF_UNIX), ALLOW, "connect");
        assert_eq!(eval(&prog, x, 0, AF_UNIX), ALLOW, "read");
        let i = AUDIT_ARCH_I386;
        assert_eq!(eval(&prog, i, 359, AF_UNIX), DENY_UNIX);
        assert_eq!(eval(&prog, i, 359, 2), ALLOW);
        assert_eq!(eval(&prog, i, 102, SYS_SOCKET), DENY_UNIX, "socketcall");
        assert_eq!(eval(&prog, i, 102, SYS_SOCKETPAIR), DENY_UNIX);
        assert_eq!(eval(&prog, i, 102, SYS_CONNECT), ALLOW);
        assert_eq!(eval2(&prog, i, 360, AF_UNIX, SOCK_DGRAM), DENY_UNIX);
        assert_eq!(eval(&prog, i, 41, AF_UNIX), ALLOW, "not socket");
        assert_eq!(
            eval(&prog, AUDIT_ARCH_ARM, 281, AF_UNIX),
            SECCOMP_RET_KILL_PROCESS,
            "an architecture without rules"
        );
    }

    #[test]
    fn gated_rules_notify_every_connect_and_refuse_datagram_sockets() {
        let prog = x86(UnixRule::Gated);
        let x = AUDIT_ARCH_X86_64;
        for bit in [0, X32_SYSCALL_BIT] {
            assert_eq!(eval2(&prog, x, 41 | bit, AF_UNIX, SOCK_STREAM), ALLOW);
            assert_eq!(
                eval2(&prog, x, 41 | bit, AF_UNIX, SOCK_STREAM | TYPE_FLAGS),
                ALLOW
            );
            assert_eq!(eval2(&prog, x, 41 | bit, AF_UNIX, SOCK_SEQPACKET), ALLOW);
            assert_eq!(eval2(&prog, x, 41 | bit, AF_UNIX, SOCK_DGRAM), DENY_UNIX);
            assert_eq!(eval2(&prog, x, 41 | bit, 2, SOCK_DGRAM), ALLOW, "UDP");
            assert_eq!(eval2(&prog, x, 53 | bit, AF_UNIX, SOCK_DGRAM), DENY_UNIX);
            for fd in [0, 3, 1000] {
                assert_eq!(eval(&prog, x, 42 | bit, fd), NOTIFY, "connect");
            }
        }
        let i = AUDIT_ARCH_I386;
        assert_eq!(eval(&prog, i, 362, 3), NOTIFY, "connect");
        assert_eq!(eval(&prog, i, 102, SYS_CONNECT), DENY_UNIX, "unseen");
        assert_eq!(eval(&prog, i, 102, SYS_SOCKET), DENY_UNIX);
        assert_eq!(eval(&prog, i, 102, 9), ALLOW, "SYS_SEND");
        assert_eq!(eval2(&prog, i, 359, AF_UNIX, SOCK_STREAM), ALLOW);
        assert_eq!(eval2(&prog, i, 359, AF_UNIX, SOCK_DGRAM), DENY_UNIX);
    }

    /// What `rules` decide for one call, read in order as a list: the
    /// first rule of the call's number whose condition holds.
    fn reference(rules: &[Rule], nr: u32, arg0: u32, arg1: u32) -> u32 {
        for &(n, when, ret) in rules {
            if n != nr {
                continue;
            }
            let holds = match when {
                When::Always => true,
                When::Arg0Is(v) => arg0 == v,
                When::Arg0HasAny(m) => arg0 & m != 0,
                When::FamilyAndType(f, t) => arg0 == f && arg1 & SOCK_TYPE_MASK == t,
            };
            if holds {
                return ret;
            }
        }
        ALLOW
    }

    #[test]
    fn the_search_decides_every_call_as_the_rule_list_reads() {
        for unix in [UnixRule::Denied, UnixRule::Gated] {
            let prog = x86(unix);
            let mut native = Vec::new();
            abi_rules(&X86_64, 0, unix, &mut native);
            abi_rules(&X86_64, X32_SYSCALL_BIT, unix, &mut native);
            let mut compat = Vec::new();
            abi_rules(&I386, 0, unix, &mut compat);
            let args = [
                0,
                1,
                2,
                8,
                3,
                AF_UNIX,
                SOCK_DGRAM,
                0x80,
                0x1000_0000,
                u32::MAX,
            ];
            for (arch, rules, bits) in [
                (AUDIT_ARCH_X86_64, &native, [0, X32_SYSCALL_BIT]),
                (AUDIT_ARCH_I386, &compat, [0, 0]),
            ] {
                for bit in bits {
                    for nr in 0..600u32 {
                        for &a0 in &args {
                            for &a1 in &args {
                                assert_eq!(
                                    eval2(&prog, arch, nr | bit, a0, a1),
                                    reference(rules, nr | bit, a0, a1),
                                    "{unix:?} arch {arch:#x} nr {} args {a0:#x} {a1:#x}",
                                    nr | bit
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn io_uring_is_refused_on_every_abi() {
        for unix in [UnixRule::Denied, UnixRule::Gated] {
            let prog = x86(unix);
            for (arch, bit) in [
                (AUDIT_ARCH_X86_64, 0),
                (AUDIT_ARCH_X86_64, X32_SYSCALL_BIT),
                (AUDIT_ARCH_I386, 0),
            ] {
                for nr in IO_URING {
                    assert_eq!(eval(&prog, arch, nr | bit, 0), NO_SYS, "{nr}");
                }
            }
        }
    }

    #[test]
    fn x86_64_escape_rules_refuse_namespaces_and_mounts_only() {
        for unix in [UnixRule::Denied, UnixRule::Gated] {
            let prog = x86(unix);
            for (arch, bit, n) in [
                (AUDIT_ARCH_X86_64, 0, &X86_64),
                (AUDIT_ARCH_X86_64, X32_SYSCALL_BIT, &X86_64),
                (AUDIT_ARCH_I386, 0, &I386),
            ] {
                let u = n.unshare | bit;
                assert_eq!(eval(&prog, arch, u, CLONE_NEWUSER), DENY);
                assert_eq!(eval(&prog, arch, u, CLONE_NEWNS | CLONE_NEWUSER), DENY);
                assert_eq!(eval(&prog, arch, u, 0x80), DENY, "CLONE_NEWTIME");
                assert_eq!(
                    eval(&prog, arch, u, 0x200),
                    ALLOW,
                    "CLONE_FS is not a namespace"
                );
                let c = n.clone | bit;
                assert_eq!(eval(&prog, arch, c, SIGCHLD), ALLOW, "fork");
                assert_eq!(eval(&prog, arch, c, CLONE_THREAD_FLAGS), ALLOW, "a thread");
                assert_eq!(eval(&prog, arch, c, CLONE_NEWUSER | SIGCHLD), DENY);
                assert_eq!(eval(&prog, arch, CLONE3 | bit, 0), NO_SYS);
                for &nr in n.forbidden.iter().chain(NEW_MOUNT_API.iter()) {
                    assert_eq!(eval(&prog, arch, nr | bit, 0), DENY, "{nr}");
                }
                assert_eq!(eval(&prog, arch, 1 | bit, 0), ALLOW, "write or exit");
            }
        }
    }

    #[test]
    fn aarch64_rules_cover_both_abis() {
        let mut native = Vec::new();
        abi_rules(&AARCH64, 0, UnixRule::Gated, &mut native);
        let mut compat = Vec::new();
        abi_rules(&ARM, 0, UnixRule::Gated, &mut compat);
        let prog = assemble(&[
            ArchRules {
                arch: AUDIT_ARCH_AARCH64,
                rules: native,
            },
            ArchRules {
                arch: AUDIT_ARCH_ARM,
                rules: compat,
            },
        ])
        .unwrap();
        let a = AUDIT_ARCH_AARCH64;
        assert_eq!(eval2(&prog, a, 198, AF_UNIX, SOCK_DGRAM), DENY_UNIX);
        assert_eq!(eval2(&prog, a, 198, AF_UNIX, SOCK_STREAM), ALLOW);
        assert_eq!(eval2(&prog, a, 199, AF_UNIX, SOCK_DGRAM), DENY_UNIX);
        assert_eq!(eval2(&prog, a, 199, AF_UNIX, SOCK_STREAM), ALLOW);
        assert_eq!(eval(&prog, a, 203, 3), NOTIFY, "connect");
        assert_eq!(eval(&prog, a, 425, 0), NO_SYS, "io_uring_setup");
        assert_eq!(eval(&prog, a, 97, CLONE_NEWUSER), DENY, "unshare");
        assert_eq!(eval(&prog, a, 220, SIGCHLD), ALLOW, "fork");
        assert_eq!(eval(&prog, a, 40, 0), DENY, "mount");
        assert_eq!(
            eval2(&prog, AUDIT_ARCH_ARM, 281, AF_UNIX, SOCK_DGRAM),
            DENY_UNIX
        );
        assert_eq!(eval(&prog, AUDIT_ARCH_ARM, 281, 2), ALLOW);
        assert_eq!(eval(&prog, AUDIT_ARCH_ARM, 283, 3), NOTIFY, "connect");
        assert_eq!(eval(&prog, AUDIT_ARCH_ARM, 337, CLONE_NEWUSER), DENY);
        assert_eq!(
            eval(&prog, AUDIT_ARCH_X86_64, 41, AF_UNIX),
            SECCOMP_RET_KILL_PROCESS
        );
    }

    #[test]
    fn this_machine_has_a_program_and_the_kernel_takes_it() {
        for unix in [UnixRule::Denied, UnixRule::Gated] {
            let prog = program(unix).expect("seccomp on the test machine");
            let fields = |p: &[libc::sock_filter]| -> Vec<(u16, u8, u8, u32)> {
                p.iter().map(|i| (i.code, i.jt, i.jf, i.k)).collect()
            };
            let expected = assemble(&rules(unix).unwrap()).unwrap();
            assert_eq!(fields(&prog), fields(&expected));
            assert!(prog.len() < 400);
        }
    }
}
