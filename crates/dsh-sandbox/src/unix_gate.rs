//! The Unix socket gate: how `[sandbox] allow_unix_sockets` reaches the
//! listed sockets and nothing else.
//!
//! A seccomp filter cannot read the path a `connect` names, and Landlock
//! has no right for connecting to a socket on kernels before its
//! `RESOLVE_UNIX` access. So under a list the command's filter sends
//! every `connect` to a *supervisor* as a user notification
//! (`SECCOMP_RET_USER_NOTIF`), and the namespace's init, which lives as
//! long as any process of the command, answers it ([`serve_one`]):
//! - it takes a copy of the command's socket (`pidfd_getfd`: the same
//!   open socket, not a new one) and of the address (`process_vm_readv`);
//!   from then on nothing the command does to its memory or descriptor
//!   table changes what is checked or what is connected;
//! - a Unix socket's path is opened (`O_PATH`) from the command's working
//!   directory or root, and the opened inode must be one of the listed
//!   sockets (compared by device and inode, so symbolic links, `..` and
//!   bind mounts lead nowhere else); the init then connects the command's
//!   socket through `/proc/self/fd/<pinned>`, so the inode checked is the
//!   inode connected to. Abstract addresses are connected only when the
//!   command has a network namespace of its own (abstract names are per
//!   network namespace, so all there are the command's); on the host's
//!   network they are refused (on the command's behalf they would escape
//!   Landlock's scoping);
//! - any other socket (TCP, UDP, netlink…) is connected on the command's
//!   behalf with the copied address, in the socket's own network
//!   namespace; where Landlock's TCP rules close the network, a TCP
//!   connect is refused as Landlock would refuse it (`EACCES`);
//! - the result (0 or the error) is the command's `connect` result.
//!
//! Datagram Unix sockets are refused by the filter itself (their `sendto`
//! could name any path). Connects are answered one at a time: a blocking
//! connect to a slow TCP peer delays the command's other connects.
//!
//! Everything here runs in the init after the fork: raw system calls on
//! data built before it, no allocation.

#[cfg(test)]
use std::ffi::CStr;
use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// The largest notification structure the gate receives (the kernel
/// tells its sizes; a future kernel's larger one still fits up to this).
const NOTIF_BUFFER: usize = 512;

/// What the init needs to answer connects, built before the fork.
#[derive(Debug)]
pub(crate) struct Gate {
    /// The listed socket paths.
    listed: Vec<CString>,
    /// Refuse TCP connects (Landlock's TCP rules close the network).
    refuse_tcp: bool,
    /// The command has a network namespace of its own, so every abstract
    /// name in it is the command's.
    private_netns: bool,
}

impl Gate {
    /// The gate for these listed sockets.
    ///
    /// # Errors
    /// Why the kernel cannot run it: no `SECCOMP_GET_NOTIF_SIZES` (user
    /// notifications need Linux 5.0, `pidfd_getfd` 5.6), structures larger
    /// than the gate's buffer, or a path with a NUL byte.
    pub(crate) fn new(
        listed: &[PathBuf],
        refuse_tcp: bool,
        private_netns: bool,
    ) -> Result<Self, String> {
        let mut sizes = libc::seccomp_notif_sizes {
            seccomp_notif: 0,
            seccomp_notif_resp: 0,
            seccomp_data: 0,
        };
        // SAFETY: SECCOMP_GET_NOTIF_SIZES writes the three sizes into the
        // live local.
        #[allow(unsafe_code)]
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_GET_NOTIF_SIZES,
                0,
                &mut sizes as *mut libc::seccomp_notif_sizes,
            )
        };
        if r != 0 {
            return Err(format!(
                "this kernel has no seccomp user notifications ({})",
                io::Error::last_os_error()
            ));
        }
        let notif_size = usize::from(sizes.seccomp_notif);
        let resp_size = usize::from(sizes.seccomp_notif_resp);
        if notif_size > NOTIF_BUFFER || resp_size > NOTIF_BUFFER {
            return Err(format!(
                "this kernel's seccomp notifications ({notif_size} bytes) are larger than dsh knows"
            ));
        }
        let listed = listed
            .iter()
            .map(|p| {
                CString::new(p.as_os_str().as_bytes())
                    .map_err(|_| format!("{} contains a NUL byte", p.display()))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            listed,
            refuse_tcp,
            private_netns,
        })
    }
}

/// A buffer for the kernel's notification structures.
#[repr(C, align(8))]
struct Buffer([u8; NOTIF_BUFFER]);

/// The internal answer of a connect the gate refuses (the command gets
/// `EACCES`, and the address is reported on the denials pipe).
const REFUSED: i32 = -1;

/// Receives one notification from `listener` and answers it; a refused
/// Unix address is written to `denials` (see [`write_denial`]; -1: not
/// reported). Returns quietly when there was none (the command died
/// meanwhile). Async-signal-safe.
#[allow(unsafe_code)]
pub(crate) fn serve_one(gate: &Gate, listener: RawFd, denials: RawFd) {
    let mut buf = Buffer([0; NOTIF_BUFFER]);
    // SAFETY (whole function): raw system calls on locals that outlive
    // them; the buffers are larger than the sizes the kernel reported and
    // aligned for the structures read from them.
    unsafe {
        if libc::ioctl(
            listener,
            libc::SECCOMP_IOCTL_NOTIF_RECV as _,
            buf.0.as_mut_ptr(),
        ) != 0
        {
            return;
        }
        let notif: libc::seccomp_notif = std::ptr::read(buf.0.as_ptr().cast());
        let result = decide(gate, listener, &notif, denials);
        let mut out = Buffer([0; NOTIF_BUFFER]);
        let resp = libc::seccomp_notif_resp {
            id: notif.id,
            val: 0,
            error: match result {
                Ok(()) => 0,
                Err(errno) => -errno,
            },
            flags: 0,
        };
        std::ptr::write(out.0.as_mut_ptr().cast(), resp);
        // ENOENT: the command was interrupted or died; nothing to answer.
        libc::ioctl(
            listener,
            libc::SECCOMP_IOCTL_NOTIF_SEND as _,
            out.0.as_mut_ptr(),
        );
    }
}

/// Whether notification `id` is still pending (its caller alive, the
/// call not interrupted): guards the pid it names against reuse.
#[allow(unsafe_code)]
fn still_pending(listener: RawFd, id: u64) -> bool {
    // SAFETY: the ioctl reads one u64 from a live local.
    unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _, &id) == 0 }
}

/// Answers one `connect(fd, addr, len)`: `Ok` when made on the caller's
/// behalf, else the errno the caller gets.
#[allow(unsafe_code)]
fn decide(
    gate: &Gate,
    listener: RawFd,
    notif: &libc::seccomp_notif,
    denials: RawFd,
) -> Result<(), i32> {
    let pid = notif.pid as libc::pid_t;
    let fd = notif.data.args[0] as i32;
    let addr_at = notif.data.args[1];
    let len = notif.data.args[2] as u32 as usize;
    // What the kernel's connect says of a longer address.
    if len > std::mem::size_of::<libc::sockaddr_storage>() {
        return Err(libc::EINVAL);
    }
    // SAFETY: raw system calls with arguments checked above; descriptors
    // obtained here are closed before returning.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as RawFd;
        if pidfd < 0 {
            return Err(libc::ESRCH);
        }
        if !still_pending(listener, notif.id) {
            libc::close(pidfd);
            return Err(libc::ESRCH);
        }
        let sock = libc::syscall(libc::SYS_pidfd_getfd, pidfd, fd, 0) as RawFd;
        let e = last_errno();
        libc::close(pidfd);
        if sock < 0 {
            return Err(if e == libc::EBADF { libc::EBADF } else { e });
        }
        let result = decide_for(gate, listener, notif, pid, sock, addr_at, len, denials);
        libc::close(sock);
        result
    }
}

/// [`decide`] once the socket is in hand.
#[allow(unsafe_code)]
#[allow(clippy::too_many_arguments)]
unsafe fn decide_for(
    gate: &Gate,
    listener: RawFd,
    notif: &libc::seccomp_notif,
    pid: libc::pid_t,
    sock: RawFd,
    addr_at: u64,
    len: usize,
    denials: RawFd,
) -> Result<(), i32> {
    let domain = sock_option(sock, libc::SO_DOMAIN)?;
    let mut addr: libc::sockaddr_storage = std::mem::zeroed();
    if len > 0 {
        let local = libc::iovec {
            iov_base: (&mut addr as *mut libc::sockaddr_storage).cast(),
            iov_len: len,
        };
        let remote = libc::iovec {
            iov_base: addr_at as usize as *mut libc::c_void,
            iov_len: len,
        };
        if libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) != len as isize {
            return Err(libc::EFAULT);
        }
    }
    if !still_pending(listener, notif.id) {
        return Err(libc::ESRCH);
    }
    let bytes = std::slice::from_raw_parts((&addr as *const libc::sockaddr_storage).cast(), len);
    if domain == libc::AF_UNIX {
        return match connect_unix(gate, pid, sock, bytes) {
            Err(REFUSED) => {
                write_denial(denials, bytes);
                Err(libc::EACCES)
            }
            other => other,
        };
    }
    let family = i32::from(addr.ss_family);
    if gate.refuse_tcp
        && (domain == libc::AF_INET || domain == libc::AF_INET6)
        && (family == libc::AF_INET || family == libc::AF_INET6)
        && sock_option(sock, libc::SO_TYPE)? == libc::SOCK_STREAM
    {
        return Err(libc::EACCES);
    }
    connect(sock, bytes)
}

/// Where a Unix address leads.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum UnixTarget<'a> {
    /// Not a path (no name, another family): the kernel's own answer is
    /// safe to give.
    Unnamed,
    /// An abstract name (first byte NUL).
    Abstract,
    /// A path (the bytes before the first NUL).
    Path(&'a [u8]),
}

/// Reads a `sockaddr_un` of `len` bytes the way the kernel does.
pub(crate) fn unix_target(addr: &[u8]) -> UnixTarget<'_> {
    if addr.len() <= 2 || u16::from_ne_bytes([addr[0], addr[1]]) != libc::AF_UNIX as u16 {
        return UnixTarget::Unnamed;
    }
    let path = &addr[2..];
    if path[0] == 0 {
        return UnixTarget::Abstract;
    }
    let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
    UnixTarget::Path(&path[..end])
}

/// Connects the Unix socket `sock` of process `pid` to `addr` if it names
/// a listed socket.
#[allow(unsafe_code)]
unsafe fn connect_unix(gate: &Gate, pid: libc::pid_t, sock: RawFd, addr: &[u8]) -> Result<(), i32> {
    let path = match unix_target(addr) {
        UnixTarget::Unnamed => return connect(sock, addr),
        UnixTarget::Abstract if gate.private_netns => return connect(sock, addr),
        UnixTarget::Abstract => return Err(REFUSED),
        UnixTarget::Path(p) => p,
    };
    // The path as a C string (sun_path is at most 108 bytes).
    let mut cpath = [0u8; 112];
    if path.len() >= cpath.len() {
        return Err(libc::EINVAL);
    }
    cpath[..path.len()].copy_from_slice(path);
    // The caller must see the file system as the init does (same mount
    // namespace; a command that changed its root gets nothing).
    let mut proc_path = ProcPath::new(pid);
    let mut root: libc::stat = std::mem::zeroed();
    let mut ours: libc::stat = std::mem::zeroed();
    if libc::stat(proc_path.with(b"root"), &mut root) != 0
        || libc::stat(c"/".as_ptr(), &mut ours) != 0
        || (root.st_dev, root.st_ino) != (ours.st_dev, ours.st_ino)
    {
        return Err(REFUSED);
    }
    let base = if path[0] == b'/' {
        libc::AT_FDCWD
    } else {
        let cwd = libc::open(
            proc_path.with(b"cwd"),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if cwd < 0 {
            return Err(libc::EACCES);
        }
        cwd
    };
    let pin = libc::openat(base, cpath.as_ptr().cast(), libc::O_PATH | libc::O_CLOEXEC);
    let e = last_errno();
    if base >= 0 {
        libc::close(base);
    }
    if pin < 0 {
        return Err(e);
    }
    let result = connect_pinned(gate, sock, pin);
    libc::close(pin);
    result
}

/// Connects `sock` to the socket inode `pin` if it is a listed one.
#[allow(unsafe_code)]
unsafe fn connect_pinned(gate: &Gate, sock: RawFd, pin: RawFd) -> Result<(), i32> {
    let mut target: libc::stat = std::mem::zeroed();
    if libc::fstat(pin, &mut target) != 0 {
        return Err(last_errno());
    }
    if target.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(libc::ECONNREFUSED);
    }
    let listed = gate.listed.iter().any(|p| {
        let mut st: libc::stat = std::mem::zeroed();
        libc::stat(p.as_ptr(), &mut st) == 0
            && (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino)
    });
    if !listed {
        return Err(REFUSED);
    }
    // "/proc/self/fd/<pin>": the init is PID 1 of the /proc it mounted.
    let mut sun: libc::sockaddr_un = std::mem::zeroed();
    sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let mut at = 0;
    for &b in b"/proc/self/fd/"
        .iter()
        .chain(Digits::of(pin as u32).as_bytes())
    {
        sun.sun_path[at] = b as libc::c_char;
        at += 1;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + at + 1;
    let bytes = std::slice::from_raw_parts((&sun as *const libc::sockaddr_un).cast(), len);
    connect(sock, bytes)
}

/// Reports a refused Unix address on `denials` as one record: a length
/// byte, then the path (an abstract name with `@` for its leading NUL).
/// Never blocks (the pipe is non-blocking; a full pipe loses the record).
#[allow(unsafe_code)]
fn write_denial(denials: RawFd, addr: &[u8]) {
    let name = match unix_target(addr) {
        UnixTarget::Path(p) => p,
        UnixTarget::Abstract => &addr[2..],
        UnixTarget::Unnamed => return,
    };
    if denials < 0 {
        return;
    }
    let mut record = [0u8; 1 + 110];
    let n = name.len().min(record.len() - 1);
    record[0] = n as u8;
    record[1..=n].copy_from_slice(&name[..n]);
    if record[1] == 0 {
        record[1] = b'@';
    }
    // SAFETY: writes from a live local of the stated length.
    unsafe {
        libc::write(denials, record.as_ptr().cast(), n + 1);
    }
}

/// Reads the records [`write_denial`] wrote: the refused paths, in order.
pub(crate) fn read_denials(bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let Some((&n, tail)) = rest.split_first() {
        let n = usize::from(n).min(tail.len());
        out.push(String::from_utf8_lossy(&tail[..n]).into_owned());
        rest = &tail[n..];
    }
    out
}

/// `connect(sock, addr)`: `Ok` or the errno.
#[allow(unsafe_code)]
fn connect(sock: RawFd, addr: &[u8]) -> Result<(), i32> {
    // SAFETY: the address is a live local slice of its stated length.
    let r = unsafe { libc::connect(sock, addr.as_ptr().cast(), addr.len() as libc::socklen_t) };
    if r == 0 {
        Ok(())
    } else {
        Err(last_errno())
    }
}

/// An `int` socket option of `sock`.
#[allow(unsafe_code)]
fn sock_option(sock: RawFd, option: libc::c_int) -> Result<libc::c_int, i32> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into the live local.
    let r = unsafe {
        libc::getsockopt(
            sock,
            libc::SOL_SOCKET,
            option,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(last_errno());
    }
    Ok(value)
}

/// `/proc/<pid>/<entry>` built without allocating.
struct ProcPath {
    buf: [u8; 48],
    /// Length of `/proc/<pid>/`.
    prefix: usize,
}

impl ProcPath {
    fn new(pid: libc::pid_t) -> Self {
        let mut buf = [0u8; 48];
        let mut at = 0;
        for &b in b"/proc/"
            .iter()
            .chain(Digits::of(pid as u32).as_bytes())
            .chain(b"/")
        {
            buf[at] = b;
            at += 1;
        }
        Self { buf, prefix: at }
    }

    /// The path of `entry` (a short name), NUL-terminated.
    fn with(&mut self, entry: &[u8]) -> *const libc::c_char {
        let end = self.prefix + entry.len();
        self.buf[self.prefix..end].copy_from_slice(entry);
        self.buf[end] = 0;
        self.buf.as_ptr().cast()
    }
}

/// The decimal digits of a number, without allocating.
struct Digits {
    buf: [u8; 10],
    start: usize,
}

impl Digits {
    fn of(mut n: u32) -> Self {
        let mut buf = [0u8; 10];
        let mut start = buf.len();
        loop {
            start -= 1;
            buf[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Self { buf, start }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

#[cfg(test)]
impl Gate {
    fn listed(&self) -> Vec<&CStr> {
        self.listed.iter().map(|c| c.as_c_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, unsafe_code)]
    use super::*;

    fn sun(path: &[u8]) -> Vec<u8> {
        let mut a = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        a.extend_from_slice(path);
        a
    }

    #[test]
    fn addresses_are_read_as_the_kernel_reads_them() {
        assert_eq!(
            unix_target(&sun(b"/run/x.sock")),
            UnixTarget::Path(b"/run/x.sock")
        );
        assert_eq!(
            unix_target(&sun(b"rel.sock\0trailing")),
            UnixTarget::Path(b"rel.sock"),
            "the path ends at its first NUL"
        );
        assert_eq!(unix_target(&sun(b"\0abstract")), UnixTarget::Abstract);
        assert_eq!(unix_target(&sun(b"")), UnixTarget::Unnamed, "no name");
        assert_eq!(unix_target(&[]), UnixTarget::Unnamed);
        let mut inet = sun(b"/run/x.sock");
        inet[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        assert_eq!(unix_target(&inet), UnixTarget::Unnamed, "another family");
    }

    #[test]
    fn refused_addresses_are_reported_as_records() {
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        write_denial(fds[1], &sun(b"/run/docker.sock"));
        write_denial(fds[1], &sun(b"\0x11-display"));
        write_denial(fds[1], &sun(b""));
        write_denial(fds[1], &sun(b"rel/a.sock\0junk"));
        unsafe { libc::close(fds[1]) };
        let mut bytes = Vec::new();
        let mut file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fds[0]) };
        std::io::Read::read_to_end(&mut file, &mut bytes).unwrap();
        assert_eq!(
            read_denials(&bytes),
            ["/run/docker.sock", "@x11-display", "rel/a.sock"]
        );
        assert_eq!(
            read_denials(&[200, b'a']),
            ["a"],
            "a cut record is read as far as it goes"
        );
    }

    #[test]
    fn numbers_and_proc_paths_are_spelled_without_allocating() {
        assert_eq!(Digits::of(0).as_bytes(), b"0");
        assert_eq!(Digits::of(4_294_967_295).as_bytes(), b"4294967295");
        let mut p = ProcPath::new(12345);
        p.with(b"root");
        assert_eq!(CStr::from_bytes_until_nul(&p.buf), Ok(c"/proc/12345/root"));
        p.with(b"cwd");
        assert_eq!(CStr::from_bytes_until_nul(&p.buf), Ok(c"/proc/12345/cwd"));
    }

    #[test]
    fn a_gate_is_built_where_the_kernel_has_user_notifications() {
        let gate = Gate::new(&[PathBuf::from("/run/a.sock")], false, false).unwrap();
        assert_eq!(gate.listed(), [c"/run/a.sock"]);
        let err = Gate::new(&[PathBuf::from("/bad\0path")], false, false).unwrap_err();
        assert!(err.contains("NUL"), "{err}");
    }
}
