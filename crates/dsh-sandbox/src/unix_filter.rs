//! The seccomp filter that keeps confined commands off Unix sockets on the
//! file system: `socket(AF_UNIX, …)` fails with `EACCES`, every other
//! system call (`socketpair(AF_UNIX, …)` included) is allowed.
//!
//! The BPF program is built in the parent ([`program`]) and only loaded in
//! the child ([`install`]), which allocates nothing. The filter checks the
//! architecture of every call, so another ABI of the same kernel cannot
//! slip past the rule:
//! - x86_64: `socket` (41) in the native ABI and in the x32 ABI (number
//!   with bit 30 set); in the i386 ABI `socket` (359) and `socketcall`
//!   (102) with `SYS_SOCKET`, whose family the filter cannot see, so every
//!   `socketcall(SYS_SOCKET, …)` of a 32-bit program is refused;
//! - aarch64: `socket` (198), and `socket` (281) in the 32-bit Arm ABI;
//! - any other architecture value kills the process.

use std::sync::Arc;

/// `AF_UNIX`.
const AF_UNIX: u32 = 1;
/// `SYS_SOCKET`, the first argument of `socketcall(2)` that creates one.
const SYS_SOCKET: u32 = 1;
/// `EACCES`: what `socket(AF_UNIX, …)` fails with ("Permission denied").
const EACCES: u32 = 13;

const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;

/// Offsets in `struct seccomp_data`: `nr`, `arch`, and the low 32 bits of
/// `args[0]` (little-endian; `socket`'s family is an `int`, the kernel
/// ignores the high half).
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARG0_LO: u32 = 16;

/// `BPF_LD | BPF_W | BPF_ABS` (0x00 | 0x00 | 0x20).
const BPF_LD_W_ABS: u16 = 0x20;
/// `BPF_JMP | BPF_JEQ | BPF_K`.
const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
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

/// One architecture's calls to refuse: `(syscall number, first argument)`.
type ArchRules = (u32, &'static [(u32, u32)]);

/// The rules of the architecture this crate is built for, `None` where
/// dsh has none (the caller then cannot confine).
fn rules() -> Option<&'static [ArchRules]> {
    #[cfg(all(target_arch = "x86_64", target_endian = "little"))]
    {
        const R: &[ArchRules] = &[
            (
                AUDIT_ARCH_X86_64,
                &[(41, AF_UNIX), (41 | X32_SYSCALL_BIT, AF_UNIX)],
            ),
            (AUDIT_ARCH_I386, &[(359, AF_UNIX), (102, SYS_SOCKET)]),
        ];
        Some(R)
    }
    #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
    {
        const R: &[ArchRules] = &[
            (AUDIT_ARCH_AARCH64, &[(198, AF_UNIX)]),
            (AUDIT_ARCH_ARM, &[(281, AF_UNIX)]),
        ];
        Some(R)
    }
    #[cfg(not(any(
        all(target_arch = "x86_64", target_endian = "little"),
        all(target_arch = "aarch64", target_endian = "little")
    )))]
    {
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

fn jeq(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: BPF_JMP_JEQ_K,
        jt,
        jf,
        k,
    }
}

/// Assembles the program for `arches`.
fn assemble(arches: &[ArchRules]) -> Vec<libc::sock_filter> {
    let mut prog = vec![stmt(BPF_LD_W_ABS, OFF_ARCH)];
    for (arch, calls) in arches {
        // Per call: 5 instructions; then the closing allow.
        let mut block = vec![stmt(BPF_LD_W_ABS, OFF_NR)];
        for &(nr, arg0) in *calls {
            block.push(jeq(nr, 0, 4));
            block.push(stmt(BPF_LD_W_ABS, OFF_ARG0_LO));
            block.push(jeq(arg0, 0, 1));
            block.push(stmt(BPF_RET_K, SECCOMP_RET_ERRNO | EACCES));
            block.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW));
        }
        block.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW));
        // Blocks are a handful of instructions: the skip always fits.
        let skip = u8::try_from(block.len()).unwrap_or(u8::MAX);
        prog.push(jeq(*arch, 0, skip));
        prog.extend(block);
    }
    prog.push(stmt(BPF_RET_K, SECCOMP_RET_KILL_PROCESS));
    prog
}

/// The filter program for this machine's architecture, ready for
/// [`install`].
///
/// # Errors
/// Why it cannot be enforced: no rules for this architecture, or a kernel
/// without seccomp filters that return an errno or kill the process.
pub(crate) fn program() -> Result<Arc<Vec<libc::sock_filter>>, String> {
    let arches = rules().ok_or_else(|| {
        format!(
            "dsh has no seccomp filter for Unix sockets on {}",
            std::env::consts::ARCH
        )
    })?;
    available()?;
    Ok(Arc::new(assemble(arches)))
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
                BPF_RET_K => return i.k,
                c => panic!("unexpected opcode {c:#x}"),
            }
        }
    }

    const DENY: u32 = SECCOMP_RET_ERRNO | EACCES;

    #[test]
    fn x86_64_rules_cover_every_abi() {
        let prog = assemble(&[
            (
                AUDIT_ARCH_X86_64,
                &[(41, AF_UNIX), (41 | X32_SYSCALL_BIT, AF_UNIX)],
            ),
            (AUDIT_ARCH_I386, &[(359, AF_UNIX), (102, SYS_SOCKET)]),
        ]);
        let x = AUDIT_ARCH_X86_64;
        assert_eq!(eval(&prog, x, 41, AF_UNIX), DENY);
        assert_eq!(eval(&prog, x, 41 | X32_SYSCALL_BIT, AF_UNIX), DENY);
        assert_eq!(eval(&prog, x, 41, 2), SECCOMP_RET_ALLOW, "AF_INET");
        assert_eq!(eval(&prog, x, 41, 10), SECCOMP_RET_ALLOW, "AF_INET6");
        assert_eq!(eval(&prog, x, 41, 16), SECCOMP_RET_ALLOW, "AF_NETLINK");
        assert_eq!(eval(&prog, x, 53, AF_UNIX), SECCOMP_RET_ALLOW, "socketpair");
        assert_eq!(eval(&prog, x, 42, AF_UNIX), SECCOMP_RET_ALLOW, "connect");
        assert_eq!(eval(&prog, x, 0, AF_UNIX), SECCOMP_RET_ALLOW, "read");
        let i = AUDIT_ARCH_I386;
        assert_eq!(eval(&prog, i, 359, AF_UNIX), DENY);
        assert_eq!(eval(&prog, i, 359, 2), SECCOMP_RET_ALLOW);
        assert_eq!(eval(&prog, i, 102, SYS_SOCKET), DENY, "socketcall");
        assert_eq!(eval(&prog, i, 102, 8), SECCOMP_RET_ALLOW, "socketpair");
        assert_eq!(eval(&prog, i, 41, AF_UNIX), SECCOMP_RET_ALLOW, "not socket");
        assert_eq!(
            eval(&prog, AUDIT_ARCH_ARM, 281, AF_UNIX),
            SECCOMP_RET_KILL_PROCESS,
            "an architecture without rules"
        );
    }

    #[test]
    fn aarch64_rules_cover_both_abis() {
        let prog = assemble(&[
            (AUDIT_ARCH_AARCH64, &[(198, AF_UNIX)]),
            (AUDIT_ARCH_ARM, &[(281, AF_UNIX)]),
        ]);
        assert_eq!(eval(&prog, AUDIT_ARCH_AARCH64, 198, AF_UNIX), DENY);
        assert_eq!(
            eval(&prog, AUDIT_ARCH_AARCH64, 199, AF_UNIX),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(eval(&prog, AUDIT_ARCH_ARM, 281, AF_UNIX), DENY);
        assert_eq!(eval(&prog, AUDIT_ARCH_ARM, 281, 2), SECCOMP_RET_ALLOW);
        assert_eq!(
            eval(&prog, AUDIT_ARCH_X86_64, 41, AF_UNIX),
            SECCOMP_RET_KILL_PROCESS
        );
    }

    #[test]
    fn this_machine_has_a_program_and_the_kernel_takes_it() {
        let prog = program().expect("seccomp on the test machine");
        let fields = |p: &[libc::sock_filter]| -> Vec<(u16, u8, u8, u32)> {
            p.iter().map(|i| (i.code, i.jt, i.jf, i.k)).collect()
        };
        assert_eq!(fields(&prog), fields(&assemble(rules().unwrap())));
        assert!(prog.len() < 64);
    }
}
