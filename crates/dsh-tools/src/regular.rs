//! Only regular files are opened.
//!
//! Shared by every reader of files from an untrusted repository (the file
//! and search tools, the composition crate's instruction files, skills,
//! config and trust hashes), so they all open them the same way.
//!
//! Opening a FIFO for reading blocks until a writer appears (for ever, in
//! practice), and a device may block or act on open. So a path is looked
//! at first (`stat`, which never blocks) and refused unless it is a regular
//! file (or a symlink to one); the open that follows is non-blocking and
//! re-checks the opened descriptor (`fstat`), so a file swapped for a FIFO
//! in between cannot block either. `O_NONBLOCK` is cleared once the
//! descriptor is known to be a regular file.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::{fcntl, FcntlArg, OFlag};

/// What a path is when it is not a regular file, carried inside the
/// `io::Error` of [`check`] and [`open`] (the file tools map it to
/// `FS_IS_DIRECTORY` or `FS_NOT_A_FILE`). Its `Display` reads "not a regular
/// file: a fifo (named pipe)".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotAFile(pub &'static str);

impl std::fmt::Display for NotAFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a regular file: a {}", self.0)
    }
}

impl std::error::Error for NotAFile {}

/// The name of a file type that is not a regular file (`None` for one).
pub fn special_kind(t: FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some(DIRECTORY)
    } else if t.is_fifo() {
        Some("fifo (named pipe)")
    } else if t.is_socket() {
        Some("socket")
    } else if t.is_char_device() {
        Some("character device")
    } else if t.is_block_device() {
        Some("block device")
    } else if t.is_symlink() {
        Some("symbolic link")
    } else {
        Some("special file")
    }
}

/// [`special_kind`]'s name of a directory.
pub const DIRECTORY: &str = "directory";

/// `Ok` for the metadata of a regular file.
///
/// # Errors
/// An `io::Error` carrying [`NotAFile`].
pub fn check(meta: &Metadata) -> std::io::Result<()> {
    match special_kind(meta.file_type()) {
        None => Ok(()),
        Some(kind) => Err(std::io::Error::other(NotAFile(kind))),
    }
}

/// Opens the regular file at `path` for reading, without ever blocking in
/// `open()` (see the module docs). Returns the file and its metadata (from
/// the descriptor).
///
/// # Errors
/// The I/O error; [`NotAFile`] (inside the `io::Error`) for anything but a
/// regular file.
pub fn open(path: &Path) -> std::io::Result<(File, Metadata)> {
    check(&std::fs::metadata(path)?)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)?;
    let meta = file.metadata()?;
    check(&meta)?;
    let flags = fcntl(&file, FcntlArg::F_GETFL).map_err(std::io::Error::from)?;
    let flags = OFlag::from_bits_truncate(flags) & !OFlag::O_NONBLOCK;
    fcntl(&file, FcntlArg::F_SETFL(flags)).map_err(std::io::Error::from)?;
    Ok((file, meta))
}

/// The whole contents of the regular file at `path`, and its metadata
/// ([`open`], then read to the end).
///
/// # Errors
/// As [`open`], or the read error.
pub fn read_all(path: &Path) -> std::io::Result<(Metadata, Vec<u8>)> {
    let (mut file, meta) = open(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok((meta, bytes))
}

/// The text of the regular file at `path` ([`read_all`]), like
/// `std::fs::read_to_string` but never blocking on a fifo or device.
///
/// # Errors
/// As [`read_all`]; `InvalidData` when the file is not UTF-8.
pub fn read_to_string(path: &Path) -> std::io::Result<String> {
    let (_, bytes) = read_all(path)?;
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Reads `file` to its end in 64 KiB pieces, handing each to `each` (for
/// hashing a file of any size in bounded memory); an interrupted read is
/// retried.
///
/// # Errors
/// The first read error.
pub fn for_each_chunk(file: &mut impl Read, mut each: impl FnMut(&[u8])) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => each(buf.get(..n).unwrap_or_default()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The [`NotAFile`] an `io::Error` carries, if any.
pub fn not_a_file(e: &std::io::Error) -> Option<NotAFile> {
    e.get_ref()
        .and_then(|r| r.downcast_ref::<NotAFile>())
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking_and_a_file_opens_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("ff");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let e = open(&fifo).unwrap_err();
        assert_eq!(not_a_file(&e), Some(NotAFile("fifo (named pipe)")));
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let (f, meta) = open(&file).unwrap();
        assert!(meta.is_file());
        let flags = OFlag::from_bits_truncate(fcntl(&f, FcntlArg::F_GETFL).unwrap());
        assert!(!flags.contains(OFlag::O_NONBLOCK), "{flags:?}");
        let e = open(dir.path()).unwrap_err();
        assert_eq!(not_a_file(&e), Some(NotAFile(DIRECTORY)));
    }
}
