//! What the namespace layer needs to start a command without copying
//! dsh's memory again: the program, arguments and environment ready for
//! `execve` ([`Exec`]), and stacks for the init and the command process
//! ([`Stacks`]), all made in the parent before the fork.
//!
//! Under the layer the process `spawn` forked (the keeper) starts the init
//! with `clone(CLONE_VM)` and the command with `clone(CLONE_VM |
//! CLONE_VFORK)`: both run in the keeper's memory on a stack of their own
//! instead of in a copy of it, which is what made the layer cost a copy of
//! dsh's page tables per process. The command therefore cannot return
//! into the standard library's exec path (its frames are on the keeper's
//! stack); it executes the program itself with what [`Exec`] prepared.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// A NULL-terminated array of pointers into strings owned next to it.
#[derive(Debug)]
struct Pointers(Vec<*const libc::c_char>);

// SAFETY: the pointers point into `CString`s owned by the same `Exec`,
// never written after construction; sharing them between threads (the
// closure that carries them must be Send + Sync) only reads them.
#[allow(unsafe_code)]
unsafe impl Send for Pointers {}
// SAFETY: as above.
#[allow(unsafe_code)]
unsafe impl Sync for Pointers {}

/// The program, arguments and environment of one command, ready for
/// `execve` after the fork (no allocation there).
#[derive(Debug)]
pub(crate) struct Exec {
    path: CString,
    _strings: Vec<CString>,
    argv: Pointers,
    envp: Pointers,
}

impl Exec {
    /// What `cmd` would execute: its program (searched in the `PATH` the
    /// command gets, else dsh's), its arguments, and exactly the
    /// environment variables it sets (the caller clears the inherited
    /// environment).
    ///
    /// # Errors
    /// `ENOENT` (`NotFound`) when the program is not found in `PATH`;
    /// `InvalidInput`
    /// for a NUL byte in any string.
    pub(crate) fn of(cmd: &std::process::Command) -> io::Result<Self> {
        let env: Vec<(OsString, OsString)> = cmd
            .get_envs()
            .filter_map(|(k, v)| v.map(|v| (k.to_os_string(), v.to_os_string())))
            .collect();
        let path_var = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_else(|| OsString::from("/usr/bin:/bin"));
        let program = resolve(cmd.get_program(), &path_var)?;
        let c = |s: &OsStr| {
            CString::new(s.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
        };
        let mut argv_strings = vec![c(cmd.get_program())?];
        for arg in cmd.get_args() {
            argv_strings.push(c(arg)?);
        }
        let mut env_strings = Vec::with_capacity(env.len());
        for (k, v) in env {
            let mut pair = k.into_vec();
            pair.push(b'=');
            pair.extend(v.into_vec());
            env_strings.push(
                CString::new(pair).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?,
            );
        }
        let pointers = |strings: &[CString]| {
            let mut p: Vec<*const libc::c_char> = strings.iter().map(|s| s.as_ptr()).collect();
            p.push(std::ptr::null());
            Pointers(p)
        };
        let argv = pointers(&argv_strings);
        let envp = pointers(&env_strings);
        let mut strings = argv_strings;
        strings.extend(env_strings);
        Ok(Self {
            path: c(program.as_os_str())?,
            _strings: strings,
            argv,
            envp,
        })
    }

    /// Executes the program; returns only on failure, with the errno.
    /// Async-signal-safe.
    #[allow(unsafe_code)]
    pub(crate) fn execute(&self) -> i32 {
        // SAFETY: the path and both arrays are NUL-terminated and live as
        // long as `self`.
        unsafe {
            libc::execve(
                self.path.as_ptr(),
                self.argv.0.as_ptr(),
                self.envp.0.as_ptr(),
            );
        }
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::ENOEXEC)
    }
}

/// `program` as `execvp` would find it: as given when it contains a `/`,
/// else the first executable file of that name in `path_var`.
fn resolve(program: &OsStr, path_var: &OsStr) -> io::Result<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Ok(PathBuf::from(program));
    }
    std::env::split_paths(path_var)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
}

fn is_executable(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access reads the NUL-terminated path.
    #[allow(unsafe_code)]
    let ok = unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0;
    ok && path.is_file()
}

/// Two stacks, for the init and the command process, each below a guard
/// page, in one private mapping. Unmapped when dropped (after the spawn:
/// the child's copies are its own).
#[derive(Debug)]
pub(crate) struct Stacks {
    base: usize,
    len: usize,
}

/// Size of one stack.
const STACK: usize = 256 * 1024;
/// Size of a guard page (the largest page size this runs on is fine too:
/// only the protection matters).
const GUARD: usize = 64 * 1024;

impl Stacks {
    /// Maps the stacks.
    ///
    /// # Errors
    /// The OS error of `mmap` or `mprotect`.
    #[allow(unsafe_code)]
    pub(crate) fn new() -> io::Result<Self> {
        let len = 2 * (GUARD + STACK);
        // SAFETY: a fresh anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stacks = Self {
            base: base as usize,
            len,
        };
        for guard in [0, GUARD + STACK] {
            // SAFETY: inside the mapping made above.
            let r = unsafe {
                libc::mprotect(
                    (stacks.base + guard) as *mut libc::c_void,
                    GUARD,
                    libc::PROT_NONE,
                )
            };
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(stacks)
    }

    /// The top (highest address, 16-byte aligned) of the init's stack.
    pub(crate) fn init_top(&self) -> *mut libc::c_void {
        (self.base + GUARD + STACK) as *mut libc::c_void
    }

    /// The top of the command process's stack.
    pub(crate) fn command_top(&self) -> *mut libc::c_void {
        (self.base + self.len) as *mut libc::c_void
    }
}

impl Drop for Stacks {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn programs_are_found_as_execvp_finds_them() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "data").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths(["/nonexistent", dir.path().to_str().unwrap()]).unwrap();
        assert_eq!(resolve(OsStr::new("tool"), &path).unwrap(), tool);
        let err = resolve(OsStr::new("plain"), &path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "not executable");
        assert_eq!(
            resolve(OsStr::new("./x/y"), &path).unwrap(),
            PathBuf::from("./x/y"),
            "a path is taken as given"
        );
    }

    #[test]
    fn the_exec_carries_exactly_the_set_environment() {
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c")
            .arg("true")
            .env_clear()
            .env("A", "1")
            .env("PATH", "/usr/bin:/bin")
            .env_remove("B");
        let exec = Exec::of(&cmd).unwrap();
        let strings: Vec<&[u8]> = exec._strings.iter().map(|s| s.as_bytes()).collect();
        assert_eq!(strings[..3], [&b"sh"[..], b"-c", b"true"]);
        let mut env = strings[3..].to_vec();
        env.sort();
        assert_eq!(env, [&b"A=1"[..], b"PATH=/usr/bin:/bin"]);
        assert_eq!(exec.argv.0.len(), 4, "three arguments and the NULL");
        assert!(exec.argv.0[3].is_null() && exec.envp.0[2].is_null());
        assert!(exec.path.as_bytes().ends_with(b"/sh"));
        let mut missing = std::process::Command::new("dsh-no-such-program");
        missing.env_clear().env("PATH", "/nonexistent");
        assert_eq!(
            Exec::of(&missing).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn stacks_are_separate_and_guarded() {
        let s = Stacks::new().unwrap();
        let (init, command) = (s.init_top() as usize, s.command_top() as usize);
        assert_eq!(command - init, GUARD + STACK);
        assert_eq!(init % 16, 0);
        // The top bytes of both stacks are writable.
        // SAFETY: inside the mapping, below each top.
        #[allow(unsafe_code)]
        unsafe {
            *((init - 8) as *mut u64) = 1;
            *((command - 8) as *mut u64) = 2;
        }
        // Below each stack, a guard the kernel maps with no access.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let no_access: Vec<(usize, usize)> = maps
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some("---p"))
            .filter_map(|l| {
                let (a, b) = l.split_whitespace().next()?.split_once('-')?;
                Some((
                    usize::from_str_radix(a, 16).ok()?,
                    usize::from_str_radix(b, 16).ok()?,
                ))
            })
            .collect();
        for stack_bottom in [init - STACK, command - STACK] {
            let guard = stack_bottom - GUARD;
            assert!(
                no_access
                    .iter()
                    .any(|&(a, b)| a <= guard && stack_bottom <= b),
                "no guard below the stack at {stack_bottom:#x}: {maps}"
            );
        }
    }
}
