//! The seccomp filter of confined commands, built in the parent
//! ([`program`]) and loaded in the child ([`install`], which allocates
//! nothing). Two rule sets:
//! - **Unix sockets** (when the policy denies them): `socket(AF_UNIX, …)`
//!   fails with `EACCES`; `socketpair(AF_UNIX, …)` stays allowed.
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
//!   i386 ABI, including `socketcall(SYS_SOCKET, …)`, whose family the
//!   filter cannot see (every such call of a 32-bit program is refused);
//! - aarch64, and the 32-bit Arm ABI;
//! - any other architecture value kills the process.

use std::sync::Arc;

/// `AF_UNIX`.
const AF_UNIX: u32 = 1;
/// `SYS_SOCKET`, the first argument of `socketcall(2)` that creates one.
const SYS_SOCKET: u32 = 1;
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

/// Offsets in `struct seccomp_data`: `nr`, `arch`, and the low 32 bits of
/// `args[0]` (little-endian; the arguments checked are `int`s or flags in
/// the low half).
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARG0_LO: u32 = 16;

/// `BPF_LD | BPF_W | BPF_ABS` (0x00 | 0x00 | 0x20).
const BPF_LD_W_ABS: u16 = 0x20;
/// `BPF_JMP | BPF_JEQ | BPF_K`.
const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
/// `BPF_JMP | BPF_JSET | BPF_K`.
const BPF_JMP_JSET_K: u16 = 0x05 | 0x40;
/// `BPF_RET | BPF_K`.
const BPF_RET_K: u16 = 0x06;

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
}

/// One refused call: number, condition, errno.
type Rule = (u32, When, u32);

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

#[allow(dead_code)] // each build uses one architecture's; tests use all
const X86_64: Numbers = Numbers {
    socket: &[41],
    socketcall: None,
    unshare: 272,
    clone: 56,
    forbidden: &[308, 165, 166, 155],
};
#[allow(dead_code)] // each build uses one architecture's; tests use all
const I386: Numbers = Numbers {
    socket: &[359],
    socketcall: Some(102),
    unshare: 310,
    clone: 120,
    forbidden: &[346, 21, 22, 52, 217],
};
#[allow(dead_code)] // each build uses one architecture's; tests use all
const AARCH64: Numbers = Numbers {
    socket: &[198],
    socketcall: None,
    unshare: 97,
    clone: 220,
    forbidden: &[268, 40, 39, 41],
};
#[allow(dead_code)] // each build uses one architecture's; tests use all
const ARM: Numbers = Numbers {
    socket: &[281],
    socketcall: None,
    unshare: 337,
    clone: 120,
    forbidden: &[375, 21, 52, 218],
};

/// The rules of one ABI; `bit` is or-ed into every number (x32).
#[allow(dead_code)] // each build uses one architecture's; tests use all
fn abi_rules(n: &Numbers, bit: u32, deny_unix: bool, out: &mut Vec<Rule>) {
    if deny_unix {
        for &nr in n.socket {
            out.push((nr | bit, When::Arg0Is(AF_UNIX), EACCES));
        }
        if let Some(nr) = n.socketcall {
            out.push((nr | bit, When::Arg0Is(SYS_SOCKET), EACCES));
        }
    }
    out.push((n.unshare | bit, When::Arg0HasAny(UNSHARE_NS), EPERM));
    out.push((n.clone | bit, When::Arg0HasAny(CLONE_NS), EPERM));
    out.push((CLONE3 | bit, When::Always, ENOSYS));
    for &nr in n.forbidden.iter().chain(NEW_MOUNT_API.iter()) {
        out.push((nr | bit, When::Always, EPERM));
    }
}

/// The rules of the architecture this crate is built for, `None` where
/// dsh has none (the caller then cannot confine).
fn rules(deny_unix: bool) -> Option<Vec<ArchRules>> {
    #[cfg(all(target_arch = "x86_64", target_endian = "little"))]
    {
        let mut native = Vec::new();
        abi_rules(&X86_64, 0, deny_unix, &mut native);
        abi_rules(&X86_64, X32_SYSCALL_BIT, deny_unix, &mut native);
        let mut compat = Vec::new();
        abi_rules(&I386, 0, deny_unix, &mut compat);
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
        abi_rules(&AARCH64, 0, deny_unix, &mut native);
        let mut compat = Vec::new();
        abi_rules(&ARM, 0, deny_unix, &mut compat);
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
        let _ = deny_unix;
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

/// Assembles the program for `arches`.
///
/// # Errors
/// An architecture block too long for a BPF jump (never with the rules
/// above).
fn assemble(arches: &[ArchRules]) -> Result<Vec<libc::sock_filter>, String> {
    let mut prog = vec![stmt(BPF_LD_W_ABS, OFF_ARCH)];
    for ArchRules { arch, rules } in arches {
        let mut block = Vec::new();
        for &(nr, when, errno) in rules {
            let deny = stmt(BPF_RET_K, SECCOMP_RET_ERRNO | errno);
            block.push(stmt(BPF_LD_W_ABS, OFF_NR));
            match when {
                When::Always => {
                    block.push(jump(BPF_JMP_JEQ_K, nr, 0, 1));
                    block.push(deny);
                }
                When::Arg0Is(v) => {
                    block.push(jump(BPF_JMP_JEQ_K, nr, 0, 3));
                    block.push(stmt(BPF_LD_W_ABS, OFF_ARG0_LO));
                    block.push(jump(BPF_JMP_JEQ_K, v, 0, 1));
                    block.push(deny);
                }
                When::Arg0HasAny(mask) => {
                    block.push(jump(BPF_JMP_JEQ_K, nr, 0, 3));
                    block.push(stmt(BPF_LD_W_ABS, OFF_ARG0_LO));
                    block.push(jump(BPF_JMP_JSET_K, mask, 0, 1));
                    block.push(deny);
                }
            }
        }
        block.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW));
        let skip = u8::try_from(block.len())
            .map_err(|_| format!("seccomp block of {} instructions is too long", block.len()))?;
        prog.push(jump(BPF_JMP_JEQ_K, *arch, 0, skip));
        prog.extend(block);
    }
    prog.push(stmt(BPF_RET_K, SECCOMP_RET_KILL_PROCESS));
    Ok(prog)
}

/// The filter program for this machine's architecture, with the Unix
/// socket rules when `deny_unix`, ready for [`install`].
///
/// # Errors
/// Why it cannot be enforced: no rules for this architecture, or a kernel
/// without seccomp filters that return an errno or kill the process.
pub(crate) fn program(deny_unix: bool) -> Result<Arc<Vec<libc::sock_filter>>, String> {
    let arches = rules(deny_unix)
        .ok_or_else(|| format!("dsh has no seccomp filter for {}", std::env::consts::ARCH))?;
    available()?;
    Ok(Arc::new(assemble(&arches)?))
}

/// Whether the kernel supports seccomp filters with the actions this one
/// returns.
///
/// # Errors
/// What is missing, in words.
#[allow(unsafe_code)]
pub(crate) fn available() -> Result<(), String> {
    for action in [SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS] {
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
/// Async-signal-safe: one system call, no allocation.
///
/// # Errors
/// The OS error of `prctl(PR_SET_SECCOMP)`.
#[allow(unsafe_code)]
pub(crate) fn install(prog: &[libc::sock_filter]) -> std::io::Result<()> {
    let Ok(len) = u16::try_from(prog.len()) else {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    };
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr().cast_mut(),
    };
    // SAFETY: `fprog` points at `prog`, alive for the call; the kernel
    // copies the program and never writes through the pointer.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &fprog as *const libc::sock_fprog,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the classic-BPF subset this module emits over one call.
    fn eval(prog: &[libc::sock_filter], arch: u32, nr: u32, arg0: u32) -> u32 {
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
                        k => panic!("unexpected load offset {k}"),
                    }
                }
                BPF_JMP_JEQ_K => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
                BPF_JMP_JSET_K => pc += usize::from(if a & i.k != 0 { i.jt } else { i.jf }),
                BPF_RET_K => return i.k,
                c => panic!("unexpected opcode {c:#x}"),
            }
        }
    }

    const DENY_UNIX: u32 = SECCOMP_RET_ERRNO | EACCES;
    const DENY: u32 = SECCOMP_RET_ERRNO | EPERM;
    const NO_SYS: u32 = SECCOMP_RET_ERRNO | ENOSYS;
    const ALLOW: u32 = SECCOMP_RET_ALLOW;
    const SIGCHLD: u32 = 17;
    const CLONE_NEWUSER: u32 = 0x1000_0000;
    const CLONE_NEWNS: u32 = 0x0002_0000;
    const CLONE_THREAD_FLAGS: u32 = 0x003d_0f00;

    fn x86(deny_unix: bool) -> Vec<libc::sock_filter> {
        let mut native = Vec::new();
        abi_rules(&X86_64, 0, deny_unix, &mut native);
        abi_rules(&X86_64, X32_SYSCALL_BIT, deny_unix, &mut native);
        let mut compat = Vec::new();
        abi_rules(&I386, 0, deny_unix, &mut compat);
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
        let prog = x86(true);
        let x = AUDIT_ARCH_X86_64;
        assert_eq!(eval(&prog, x, 41, AF_UNIX), DENY_UNIX);
        assert_eq!(eval(&prog, x, 41 | X32_SYSCALL_BIT, AF_UNIX), DENY_UNIX);
        assert_eq!(eval(&prog, x, 41, 2), ALLOW, "AF_INET");
        assert_eq!(eval(&prog, x, 41, 10), ALLOW, "AF_INET6");
        assert_eq!(eval(&prog, x, 41, 16), ALLOW, "AF_NETLINK");
        assert_eq!(eval(&prog, x, 53, AF_UNIX), ALLOW, "socketpair");
        assert_eq!(eval(&prog, x, 42, AF_UNIX), ALLOW, "connect");
        assert_eq!(eval(&prog, x, 0, AF_UNIX), ALLOW, "read");
        let i = AUDIT_ARCH_I386;
        assert_eq!(eval(&prog, i, 359, AF_UNIX), DENY_UNIX);
        assert_eq!(eval(&prog, i, 359, 2), ALLOW);
        assert_eq!(eval(&prog, i, 102, SYS_SOCKET), DENY_UNIX, "socketcall");
        assert_eq!(eval(&prog, i, 102, 8), ALLOW, "socketpair");
        assert_eq!(eval(&prog, i, 41, AF_UNIX), ALLOW, "not socket");
        assert_eq!(
            eval(&prog, AUDIT_ARCH_ARM, 281, AF_UNIX),
            SECCOMP_RET_KILL_PROCESS,
            "an architecture without rules"
        );
        let open = x86(false);
        assert_eq!(eval(&open, x, 41, AF_UNIX), ALLOW, "no unix rules asked");
        assert_eq!(eval(&open, i, 102, SYS_SOCKET), ALLOW);
    }

    #[test]
    fn x86_64_escape_rules_refuse_namespaces_and_mounts_only() {
        for deny_unix in [true, false] {
            let prog = x86(deny_unix);
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
        abi_rules(&AARCH64, 0, true, &mut native);
        let mut compat = Vec::new();
        abi_rules(&ARM, 0, true, &mut compat);
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
        assert_eq!(eval(&prog, a, 198, AF_UNIX), DENY_UNIX);
        assert_eq!(eval(&prog, a, 199, AF_UNIX), ALLOW);
        assert_eq!(eval(&prog, a, 97, CLONE_NEWUSER), DENY, "unshare");
        assert_eq!(eval(&prog, a, 220, SIGCHLD), ALLOW, "fork");
        assert_eq!(eval(&prog, a, 40, 0), DENY, "mount");
        assert_eq!(eval(&prog, AUDIT_ARCH_ARM, 281, AF_UNIX), DENY_UNIX);
        assert_eq!(eval(&prog, AUDIT_ARCH_ARM, 281, 2), ALLOW);
        assert_eq!(eval(&prog, AUDIT_ARCH_ARM, 337, CLONE_NEWUSER), DENY);
        assert_eq!(
            eval(&prog, AUDIT_ARCH_X86_64, 41, AF_UNIX),
            SECCOMP_RET_KILL_PROCESS
        );
    }

    #[test]
    fn this_machine_has_a_program_and_the_kernel_takes_it() {
        for deny_unix in [true, false] {
            let prog = program(deny_unix).expect("seccomp on the test machine");
            let fields = |p: &[libc::sock_filter]| -> Vec<(u16, u8, u8, u32)> {
                p.iter().map(|i| (i.code, i.jt, i.jf, i.k)).collect()
            };
            let expected = assemble(&rules(deny_unix).unwrap()).unwrap();
            assert_eq!(fields(&prog), fields(&expected));
            assert!(prog.len() < 400);
        }
    }
}
