//! Only regular files are opened (the file tools' rule, in `dsh-tool-fs`,
//! kept here too): opening a FIFO for reading blocks until a writer
//! appears, and a device may block or act on open. The walk already skips
//! everything but regular files by their directory entry; the open itself
//! is non-blocking and checks the opened descriptor (`fstat`), so an entry
//! swapped for a FIFO after the walk saw it cannot block the search.

use std::fs::{File, FileType, OpenOptions};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::{fcntl, FcntlArg, OFlag};

/// The name of a file type that is neither a regular file nor a directory
/// (`None` for those).
pub(crate) fn special_kind(t: FileType) -> Option<&'static str> {
    if t.is_file() || t.is_dir() {
        None
    } else if t.is_fifo() {
        Some("fifo (named pipe)")
    } else if t.is_socket() {
        Some("socket")
    } else if t.is_char_device() {
        Some("character device")
    } else if t.is_block_device() {
        Some("block device")
    } else {
        Some("special file")
    }
}

/// Opens `path` for reading if it is a regular file (following symlinks),
/// never blocking in `open()`; `None` for anything else.
///
/// # Errors
/// The I/O error of opening a regular file.
pub(crate) fn open(path: &Path) -> std::io::Result<Option<File>> {
    if !std::fs::metadata(path)?.is_file() {
        return Ok(None);
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Ok(None);
    }
    let flags = fcntl(&file, FcntlArg::F_GETFL).map_err(std::io::Error::from)?;
    let flags = OFlag::from_bits_truncate(flags) & !OFlag::O_NONBLOCK;
    fcntl(&file, FcntlArg::F_SETFL(flags)).map_err(std::io::Error::from)?;
    Ok(Some(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_not_opened_and_a_file_opens_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("ff");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(open(&fifo).unwrap().is_none());
        let kind = special_kind(std::fs::metadata(&fifo).unwrap().file_type());
        assert_eq!(kind, Some("fifo (named pipe)"));
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let f = open(&file).unwrap().unwrap();
        let flags = OFlag::from_bits_truncate(fcntl(&f, FcntlArg::F_GETFL).unwrap());
        assert!(!flags.contains(OFlag::O_NONBLOCK), "{flags:?}");
    }
}
