//! The private spill directory of one executor and its spill files.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Spill files created by this process so far; part of every file name.
static SPILL_COUNTER: AtomicU64 = AtomicU64::new(1);

/// How many random names are tried before giving up on creating something.
const CREATE_ATTEMPTS: usize = 8;

/// Which stream a spill file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamKind {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl StreamKind {
    /// `"stdout"` or `"stderr"`, as used in file names and logs.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StreamKind::Stdout => "stdout",
            StreamKind::Stderr => "stderr",
        }
    }
}

/// A lazily created private directory (`<parent>/dsh-bash-<random>`, mode
/// 0700) holding the spill files of one executor.
#[derive(Debug)]
pub(crate) struct SpillDir {
    parent: PathBuf,
    dir: Mutex<Option<PathBuf>>,
}

impl SpillDir {
    /// A spill directory to be created under `parent` on first use.
    pub(crate) fn new(parent: PathBuf) -> Self {
        Self {
            parent,
            dir: Mutex::new(None),
        }
    }

    /// The directory, if it has been created.
    pub(crate) fn path(&self) -> Option<PathBuf> {
        self.lock().clone()
    }

    /// Creates a new spill file for `kind`: exclusively (an existing path,
    /// including a planted symlink, is never opened) and with mode 0600.
    pub(crate) fn create_file(&self, kind: StreamKind) -> io::Result<(PathBuf, File)> {
        let dir = self.ensure_dir()?;
        let pid = std::process::id();
        let mut last_err = None;
        for _ in 0..CREATE_ATTEMPTS {
            let n = SPILL_COUNTER.fetch_add(1, Ordering::Relaxed);
            let name = format!("dsh-bash-{pid}-{n}-{}-{}.log", random_hex(6), kind.as_str());
            let path = dir.join(name);
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(file) => return Ok((path, file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_err = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last_err.unwrap_or_else(|| io::Error::other("no spill file name available")))
    }

    /// Removes the directory and every spill file in it. Idempotent; a later
    /// spill creates a fresh directory.
    pub(crate) fn remove(&self) {
        let Some(dir) = self.lock().take() else {
            return;
        };
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            // NotFound: someone else already cleaned the temp dir; nothing to do.
            if e.kind() != io::ErrorKind::NotFound {
                tracing::warn!(dir = %dir.display(), "cannot remove bash spill directory: {e}");
            }
        }
    }

    fn ensure_dir(&self) -> io::Result<PathBuf> {
        let mut guard = self.lock();
        if let Some(dir) = guard.as_ref() {
            return Ok(dir.clone());
        }
        let dir = create_private_dir(&self.parent)?;
        *guard = Some(dir.clone());
        Ok(dir)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<PathBuf>> {
        // Poisoning only means a panic elsewhere; the Option is always valid.
        self.dir.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// mkdtemp-style: `<parent>/dsh-bash-<12 hex>` with mode 0700, never reusing
/// an existing path.
fn create_private_dir(parent: &Path) -> io::Result<PathBuf> {
    let mut last_err = None;
    for _ in 0..CREATE_ATTEMPTS {
        let dir = parent.join(format!("dsh-bash-{}", random_hex(6)));
        match DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no spill directory name available")))
}

/// `bytes` random bytes as lowercase hex. Falls back to a clock-and-counter
/// mix if the OS RNG fails: names only need to be unpredictable enough to
/// avoid collisions, since every create is exclusive.
fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if getrandom::fill(&mut buf).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let mix = nanos ^ u128::from(SPILL_COUNTER.load(Ordering::Relaxed)) << 64;
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (mix >> ((i % 16) * 8)) as u8;
        }
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn creates_private_dir_and_exclusive_files() {
        let parent = tempfile::tempdir().expect("tempdir");
        let spill = SpillDir::new(parent.path().to_path_buf());
        assert!(spill.path().is_none(), "created lazily");
        let (path, _f) = spill.create_file(StreamKind::Stdout).expect("spill file");
        let dir = spill.path().expect("dir exists after first file");
        assert_eq!(path.parent(), Some(dir.as_path()));
        let mode = std::fs::metadata(&dir)
            .expect("dir meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        let mode = std::fs::metadata(&path)
            .expect("file meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 name");
        let parts: Vec<&str> = name.split('-').collect();
        assert_eq!(parts[0..2], ["dsh", "bash"]);
        assert_eq!(parts[2], std::process::id().to_string());
        assert!(parts[3].parse::<u64>().is_ok());
        assert_eq!(parts[4].len(), 12);
        assert!(parts[4]
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(parts[5], "stdout.log");
        spill.remove();
        assert!(!dir.exists());
        spill.remove();
    }
}
