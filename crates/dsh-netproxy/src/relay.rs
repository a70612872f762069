//! The relay: once a tunnel or a forwarded request is set up, bytes go
//! both ways between the client and the upstream until both directions
//! have ended.
//!
//! On Linux each direction moves its bytes with splice(2) through a pipe
//! of its own: from the socket into the pipe, then from the pipe into the
//! other socket, so they never pass through user space (the copy into and
//! out of a buffer was most of the proxy's cost on a bulk download).
//! Elsewhere, or when splice is unavailable (no pipe descriptor to spare,
//! SIGPIPE not ignored, a kernel or filter refusing the call, TCP urgent
//! data that splice cannot pass), a direction copies through a buffer
//! instead; both ways behave alike.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// Once one side has finished sending, how long the other direction may
/// stay idle before the connection is closed.
const HALF_CLOSED_IDLE: Duration = Duration::from_secs(60);
/// Copy buffer per direction (the portable path).
const RELAY_BUFFER: usize = 64 * 1024;

/// Copies both ways until both directions have ended, either side fails,
/// or — once one side has finished sending — the other direction has been
/// idle for [`HALF_CLOSED_IDLE`]. A direction that reaches end of stream
/// shuts down the writing side of the other socket (a half-close), and the
/// other direction goes on.
pub(crate) async fn relay(client: TcpStream, upstream: TcpStream) {
    relay_with(client, upstream, true).await;
}

/// [`relay`], splicing only if `may_splice` (the tests run both paths).
async fn relay_with(client: TcpStream, upstream: TcpStream, may_splice: bool) {
    let (client_read, client_write) = client.into_split();
    let (upstream_read, upstream_write) = upstream.into_split();
    let half_closed = AtomicBool::new(false);
    let result = tokio::try_join!(
        pump(client_read, upstream_write, &half_closed, may_splice),
        pump(upstream_read, client_write, &half_closed, may_splice),
    );
    if let Err(e) = result {
        tracing::debug!(error = %e, "network proxy relay ended");
    }
}

/// One direction: move bytes until end of stream (then shut the writer
/// down and mark the connection half-closed), an error, or the
/// half-closed idle timeout.
#[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    half_closed: &AtomicBool,
    may_splice: bool,
) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if let Some(pipe) = may_splice.then(splice::Pipe::new).flatten() {
        match splice::pump(&from, &mut to, pipe, half_closed).await? {
            Some(Ended::Idle) => return Ok(()),
            Some(Ended::Eof) => return finish(to, half_closed).await,
            // Refused, with nothing left in the pipe: copying takes over.
            None => {}
        }
    }
    match copy(&mut from, &mut to, half_closed).await? {
        Ended::Eof => finish(to, half_closed).await,
        Ended::Idle => Ok(()),
    }
}

/// How a direction stopped moving bytes without an error.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// The reader reached end of stream.
    Eof,
    /// The other direction had ended and this one stayed idle for
    /// [`HALF_CLOSED_IDLE`].
    Idle,
}

/// End of stream on one direction: mark the connection half-closed and
/// pass the end on to the other side.
async fn finish(mut to: OwnedWriteHalf, half_closed: &AtomicBool) -> io::Result<()> {
    half_closed.store(true, Ordering::Relaxed);
    // The peer may already be gone; nothing is left to tell it.
    let _ = to.shutdown().await;
    Ok(())
}

/// The portable direction: read into a buffer, write it all out.
async fn copy(
    from: &mut OwnedReadHalf,
    to: &mut OwnedWriteHalf,
    half_closed: &AtomicBool,
) -> io::Result<Ended> {
    let mut buf = vec![0u8; RELAY_BUFFER];
    loop {
        // Reading a TcpStream is cancel-safe: a timed-out read loses nothing.
        let n = match timeout(HALF_CLOSED_IDLE, from.read(&mut buf)).await {
            Ok(read) => read?,
            Err(_) if half_closed.load(Ordering::Relaxed) => return Ok(Ended::Idle),
            Err(_) => continue,
        };
        if n == 0 {
            return Ok(Ended::Eof);
        }
        to.write_all(&buf[..n]).await?;
    }
}

#[cfg(target_os = "linux")]
mod splice {
    //! Zero-copy relaying with splice(2) through a pipe.

    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::OnceLock;

    use tokio::io::{AsyncWriteExt, Interest};
    use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
    use tokio::time::timeout;

    use super::{Ended, HALF_CLOSED_IDLE};

    /// Bytes asked of one splice from a socket: more than a pipe holds, so
    /// one call fills what the pipe can take.
    const SPLICE_CHUNK: usize = 1 << 20;
    /// A pipe starts at the default size (64 KiB with 4 KiB pages); once
    /// one splice fills that much, the direction is a bulk transfer and
    /// its pipe grows to this: a quarter of the splices, and a fifth less
    /// of the proxy's CPU, on a 10 MB download. Only then, because every
    /// pipe's size counts against the user's pipe quota
    /// (`fs.pipe-user-pages-soft`), which the sandboxed commands' own
    /// pipes share. A refusal keeps the size it has.
    const BULK_PIPE: libc::c_int = 256 * 1024;
    /// The bytes one splice must move for the pipe to grow.
    const BULK_SPLICE: usize = 64 * 1024;
    /// Pipes open for relaying in this process at most (one per
    /// direction, two descriptors each); beyond it directions copy
    /// instead, so relaying never takes the descriptors that accepting and
    /// connecting need (128 here), nor more than a quarter of the default
    /// pipe quota (64 bulk pipes of 256 KiB).
    const MAX_PIPES: usize = 64;

    /// Pipes open now, against [`MAX_PIPES`].
    pub(super) static PIPES: AtomicUsize = AtomicUsize::new(0);

    /// One direction's pipe, and its place under [`MAX_PIPES`].
    pub(super) struct Pipe {
        read: OwnedFd,
        write: OwnedFd,
        /// Whether growing to [`BULK_PIPE`] has been tried.
        grown: bool,
    }

    impl Pipe {
        /// A fresh non-blocking pipe, or `None` when splicing is not to be
        /// used: SIGPIPE is not ignored (a splice into a socket the peer
        /// closed raises it, and there is no MSG_NOSIGNAL for splice),
        /// [`MAX_PIPES`] are open, or pipe2(2) fails.
        #[allow(unsafe_code)] // FFI calls, each with its SAFETY note
        pub(super) fn new() -> Option<Pipe> {
            if !sigpipe_ignored() {
                return None;
            }
            PIPES
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < MAX_PIPES).then_some(n + 1)
                })
                .ok()?;
            let mut fds: [libc::c_int; 2] = [-1, -1];
            // SAFETY: pipe2 writes two descriptors into the array it is
            // given, which has room for exactly two.
            let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
            if rc != 0 {
                PIPES.fetch_sub(1, Ordering::AcqRel);
                return None;
            }
            // SAFETY: pipe2 succeeded, so both are open descriptors that
            // nothing else owns; each OwnedFd closes its own once.
            let (read, write) =
                unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            Some(Pipe {
                read,
                write,
                grown: false,
            })
        }

        /// Grows the pipe to [`BULK_PIPE`] unless it is that large already
        /// (once; a refusal only keeps it as it is).
        #[allow(unsafe_code)] // FFI calls, each with its SAFETY note
        fn grow(&mut self) {
            if self.grown {
                return;
            }
            self.grown = true;
            let fd = self.write.as_raw_fd();
            // SAFETY: fcntl on a pipe descriptor this Pipe owns;
            // F_GETPIPE_SZ takes no argument and touches no memory.
            let size = unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) };
            if (0..BULK_PIPE).contains(&size) {
                // SAFETY: as above; F_SETPIPE_SZ takes an int. Growing
                // never loses what the pipe holds; failing (the quota)
                // leaves it as it was.
                let _ = unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, BULK_PIPE) };
            }
        }
    }

    impl Drop for Pipe {
        fn drop(&mut self) {
            PIPES.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Whether SIGPIPE is ignored (as the Rust runtime sets it up for
    /// every Rust binary); asked once.
    #[allow(unsafe_code)] // FFI calls, each with its SAFETY note
    fn sigpipe_ignored() -> bool {
        static IGNORED: OnceLock<bool> = OnceLock::new();
        *IGNORED.get_or_init(|| {
            // SAFETY: an all-zero sigaction is a valid value of the C
            // struct (no handler, empty mask, no flags).
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: a null new action only reads the current one into
            // `old`, which is valid for writes.
            let rc = unsafe { libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) };
            rc == 0 && old.sa_sigaction == libc::SIG_IGN
        })
    }

    /// One direction through `pipe`: splice what `from` has into the
    /// (empty) pipe, then all of it on into `to`; again until end of
    /// stream, an error, or the half-closed idle timeout.
    /// `None` when splice is refused here, with whatever was in the pipe
    /// already written to `to`, so copying can go on where it stopped.
    pub(super) async fn pump(
        from: &OwnedReadHalf,
        to: &mut OwnedWriteHalf,
        mut pipe: Pipe,
        half_closed: &AtomicBool,
    ) -> io::Result<Option<Ended>> {
        let source = from.as_ref();
        let source_fd = source.as_raw_fd();
        let sink_fd = to.as_ref().as_raw_fd();
        loop {
            // The pipe is empty here, so EAGAIN means the socket has
            // nothing to read: async_io then waits for readiness.
            // Waiting is cancel-safe: a timed-out wait has moved nothing.
            let read = source.async_io(Interest::READABLE, || {
                splice_in(source_fd, pipe.write.as_raw_fd())
            });
            let n = match timeout(HALF_CLOSED_IDLE, read).await {
                Ok(Ok(n)) => n,
                Ok(Err(e)) if unsupported(&e) => return Ok(None),
                Ok(Err(e)) => return Err(e),
                Err(_) if half_closed.load(Ordering::Relaxed) => return Ok(Some(Ended::Idle)),
                Err(_) => continue,
            };
            if n == 0 {
                return Ok(Some(Ended::Eof));
            }
            if n >= BULK_SPLICE {
                pipe.grow();
            }
            let mut left = n;
            while left > 0 {
                let sink = to.as_ref();
                let wrote = sink
                    .async_io(Interest::WRITABLE, || {
                        splice(pipe.read.as_raw_fd(), sink_fd, left)
                    })
                    .await;
                match wrote {
                    Ok(0) => {
                        return Err(io::Error::new(
                            io::ErrorKind::WriteZero,
                            "splice into the socket moved nothing",
                        ))
                    }
                    Ok(m) => left = left.saturating_sub(m),
                    Err(e) if unsupported(&e) => {
                        drain(&pipe, left, to).await?;
                        return Ok(None);
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }

    /// Writes the `left` bytes still in `pipe` to `to` by reading them out
    /// (when splicing into the socket is refused).
    #[allow(unsafe_code)] // FFI calls, each with its SAFETY note
    async fn drain(pipe: &Pipe, mut left: usize, to: &mut OwnedWriteHalf) -> io::Result<()> {
        let mut buf = vec![0u8; left.min(super::RELAY_BUFFER)];
        while left > 0 {
            let want = left.min(buf.len());
            // SAFETY: `buf` is valid for writes of `want` ≤ `buf.len()`
            // bytes, and the pipe's read end is an open descriptor.
            let got = unsafe {
                libc::read(
                    pipe.read.as_raw_fd(),
                    buf.as_mut_ptr().cast::<libc::c_void>(),
                    want,
                )
            };
            // The bytes are in the pipe already, so a read never blocks.
            let got = match usize::try_from(got) {
                Ok(0) => break,
                Ok(got) => got.min(want),
                Err(_) => return Err(io::Error::last_os_error()),
            };
            to.write_all(&buf[..got]).await?;
            left -= got;
        }
        Ok(())
    }

    /// One non-blocking splice(2) of up to `len` bytes from `from` to `to`
    /// (retried when a signal interrupts it).
    #[allow(unsafe_code)] // FFI calls, each with its SAFETY note
    fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
        loop {
            // SAFETY: splice with null offsets reads and writes no memory
            // of this process; both descriptors stay open for the call
            // (owned by the caller's sockets and pipe).
            let n = unsafe {
                libc::splice(
                    from,
                    std::ptr::null_mut(),
                    to,
                    std::ptr::null_mut(),
                    len,
                    libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
                )
            };
            match usize::try_from(n) {
                Ok(n) => return Ok(n),
                Err(_) => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// One splice from the socket `from` into the empty pipe `to`.
    ///
    /// Splice stops at TCP urgent data (which recv skips, being out of
    /// band) and then reports "nothing to read", or "end of stream" once
    /// the peer's FIN is in: waiting would stall the direction for good,
    /// and ending it would drop the bytes after the urgent one. So when
    /// the socket still has bytes to read, either is reported as refused
    /// (`EOPNOTSUPP`) and copying takes over.
    fn splice_in(from: RawFd, to: RawFd) -> io::Result<usize> {
        let mut tries = 0;
        loop {
            match splice(from, to, SPLICE_CHUNK) {
                // After the FIN no more bytes can arrive: no race here.
                Ok(0) if has_bytes(from) => {
                    return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && has_bytes(from) => {
                    // Bytes may just have arrived: one more try tells
                    // that apart from bytes splice will not take.
                    tries += 1;
                    if tries > 1 {
                        return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
                    }
                }
                spliced => return spliced,
            }
        }
    }

    /// Whether a read from the socket would return bytes now (a
    /// non-blocking peek of one byte).
    #[allow(unsafe_code)] // FFI call with its SAFETY note
    fn has_bytes(fd: RawFd) -> bool {
        let mut byte = 0u8;
        // SAFETY: recv writes at most one byte, into `byte`, which is valid
        // for writes of one byte; MSG_PEEK leaves the byte in the socket.
        let n = unsafe {
            libc::recv(
                fd,
                (&mut byte as *mut u8).cast::<libc::c_void>(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        n > 0
    }

    /// Errors that mean "splice cannot be used here" (a kernel without it,
    /// a descriptor that does not support it, a seccomp filter refusing
    /// it, urgent data in the way) rather than "the connection failed". A real failure of the
    /// connection reported this way fails again in the copy that takes
    /// over, so it is not lost.
    fn unsupported(e: &io::Error) -> bool {
        matches!(
            e.raw_os_error(),
            Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP | libc::EPERM)
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::net::{Ipv4Addr, SocketAddr};

    use tokio::net::TcpListener;
    use tokio::task::JoinHandle;
    use tokio::time::Instant;

    use super::*;

    /// `n` deterministic bytes that do not repeat with any short period
    /// (xorshift), so a dropped, doubled or moved chunk changes them.
    fn pattern(seed: u32, n: usize) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 24) as u8
            })
            .collect()
    }

    /// A connected pair of loopback sockets.
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let (near, far) = tokio::join!(TcpStream::connect(addr), listener.accept());
        (near.unwrap(), far.unwrap().0)
    }

    /// A relay between two fresh pairs: the client's outer end, the
    /// upstream's outer end, and the relay's task.
    async fn relayed(may_splice: bool) -> (TcpStream, TcpStream, JoinHandle<()>) {
        let (client, client_inner) = pair().await;
        let (upstream_inner, upstream) = pair().await;
        let task = tokio::spawn(relay_with(client_inner, upstream_inner, may_splice));
        (client, upstream, task)
    }

    /// The upstream of the bulk test: echoes what it reads as it reads it;
    /// after the client's end of stream, sends `trailer` and closes.
    /// Returns everything it read.
    async fn echo_then_trailer(upstream: TcpStream, trailer: Vec<u8>) -> Vec<u8> {
        let (mut read, mut write) = upstream.into_split();
        let mut seen = Vec::new();
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            let n = read.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            write.write_all(&buf[..n]).await.unwrap();
        }
        write.write_all(&trailer).await.unwrap();
        write.shutdown().await.unwrap();
        seen
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn both_paths_relay_megabytes_both_ways_across_a_half_close() {
        for may_splice in [true, false] {
            let (client, upstream, relay) = relayed(may_splice).await;
            let sent = pattern(7, 5 << 20);
            let trailer = pattern(11, 3 << 20);
            let far = tokio::spawn(echo_then_trailer(upstream, trailer.clone()));
            let (mut read, mut write) = client.into_split();
            // One byte there and back first: the relay is running both
            // ways, and neither direction has ended.
            write.write_all(&sent[..1]).await.unwrap();
            let mut got = vec![0u8; 1];
            read.read_exact(&mut got).await.unwrap();
            // Both directions hold a pipe (other tests' relays only add to
            // the count).
            #[cfg(target_os = "linux")]
            if may_splice {
                let pipes = splice::PIPES.load(Ordering::Acquire);
                assert!(pipes >= 2, "the relay splices: {pipes} pipes open");
            }
            let body = sent.clone();
            let writer = tokio::spawn(async move {
                write.write_all(&body[1..]).await.unwrap();
                // The half-close: the echo and the trailer still come back.
                write.shutdown().await.unwrap();
                write
            });
            let read_all = timeout(Duration::from_secs(60), read.read_to_end(&mut got));
            read_all.await.expect("the relay finished").unwrap();
            let _write = writer.await.unwrap();
            let seen = far.await.unwrap();
            assert!(
                seen == sent,
                "upstream got {} bytes, not what was sent (splice {may_splice})",
                seen.len()
            );
            assert_eq!(got.len(), sent.len() + trailer.len(), "splice {may_splice}");
            assert!(
                got[..sent.len()] == sent[..],
                "echo differs (splice {may_splice})"
            );
            assert!(
                got[sent.len()..] == trailer[..],
                "trailer differs (splice {may_splice})"
            );
            timeout(Duration::from_secs(10), relay)
                .await
                .expect("the relay ends once both directions have")
                .unwrap();
        }
    }

    /// Sends `bytes` as TCP urgent data (MSG_OOB).
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)] // FFI call with its SAFETY note
    fn send_urgent(s: &TcpStream, bytes: &[u8]) {
        use std::os::fd::AsRawFd;
        // SAFETY: send reads `bytes.len()` bytes from a live slice.
        let n = unsafe {
            libc::send(
                s.as_raw_fd(),
                bytes.as_ptr().cast::<libc::c_void>(),
                bytes.len(),
                libc::MSG_OOB,
            )
        };
        assert_eq!(n, bytes.len() as isize, "{}", io::Error::last_os_error());
    }

    /// Reads exactly `n` bytes, failing the test if they do not come.
    #[cfg(target_os = "linux")]
    async fn read_n(s: &mut TcpStream, n: usize, what: &str) -> Vec<u8> {
        let mut got = vec![0u8; n];
        timeout(Duration::from_secs(20), s.read_exact(&mut got))
            .await
            .unwrap_or_else(|_| panic!("the relay stalled {what}"))
            .unwrap();
        got
    }

    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn urgent_data_is_skipped_and_neither_stalls_nor_ends_the_relay() {
        // As a read(2) relay always did, the urgent byte is left out (it is
        // out of band); everything around it arrives, in order.
        for may_splice in [true, false] {
            let what = |w: &str| format!("{w} (splice {may_splice})");
            // Urgent data with nothing after it yet, then more bytes.
            let (mut client, mut upstream, relay) = relayed(may_splice).await;
            client.write_all(b"before").await.unwrap();
            let got = read_n(&mut upstream, 6, &what("before")).await;
            assert_eq!(got, b"before");
            send_urgent(&client, b"!");
            client.write_all(b"after").await.unwrap();
            let got = read_n(&mut upstream, 5, &what("at urgent data")).await;
            assert_eq!(got, b"after", "{}", what(""));
            drop((client, upstream));
            relay.await.unwrap();

            // Bytes, urgent data, bytes and the end, all in at once.
            let (mut client, mut upstream, relay) = relayed(may_splice).await;
            client.write_all(b"first").await.unwrap();
            send_urgent(&client, b"?");
            client.write_all(b"last").await.unwrap();
            client.shutdown().await.unwrap();
            let mut got = Vec::new();
            timeout(Duration::from_secs(20), upstream.read_to_end(&mut got))
                .await
                .unwrap_or_else(|_| panic!("the relay stalled {}", what("at the end")))
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&got), "firstlast", "{}", what(""));
            drop((client, upstream));
            relay.await.unwrap();
        }
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn after_a_half_close_an_idle_direction_ends_the_relay() {
        for may_splice in [true, false] {
            let (mut client, mut upstream, relay) = relayed(may_splice).await;
            client.write_all(b"request").await.unwrap();
            client.shutdown().await.unwrap();
            let mut got = Vec::new();
            upstream.read_to_end(&mut got).await.unwrap();
            assert_eq!(got, b"request");
            // The upstream stays open and silent: the idle direction's
            // timeout ends the relay. (The clock is paused and jumps to the
            // next timer whenever the runtime is idle, so the wait is
            // virtual; it is at most one idle period, exactly one unless
            // the kernel was slow to deliver the bytes above.)
            let start = Instant::now();
            timeout(3 * HALF_CLOSED_IDLE, relay)
                .await
                .expect("after a half-close an idle relay ends")
                .unwrap();
            let idle = start.elapsed();
            assert!(
                idle > Duration::ZERO && idle <= HALF_CLOSED_IDLE,
                "ended after {idle:?} (splice {may_splice})"
            );
            // The client sees the end.
            let mut rest = Vec::new();
            client.read_to_end(&mut rest).await.unwrap();
            assert!(rest.is_empty());
        }
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn without_a_half_close_idleness_never_ends_the_relay() {
        for may_splice in [true, false] {
            let (mut client, mut upstream, mut relay) = relayed(may_splice).await;
            let waited = timeout(5 * HALF_CLOSED_IDLE, &mut relay).await;
            assert!(
                waited.is_err(),
                "the relay ended while both sides were open (splice {may_splice})"
            );
            client.write_all(b"still here").await.unwrap();
            let mut buf = [0u8; 10];
            upstream.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"still here");
            drop((client, upstream));
            relay.await.unwrap();
        }
    }
}
