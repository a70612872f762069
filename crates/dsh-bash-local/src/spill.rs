//! The private spill directory of one executor and its spill files.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
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

/// Where one executor's spill files go: a lazily created private directory
/// (`<parent>/dsh-bash-<random>`, mode 0700) removed at disposal, or, after
/// [`SpillDir::keep_in`], a caller-chosen directory whose files are kept.
#[derive(Debug)]
pub(crate) struct SpillDir {
    parent: PathBuf,
    state: Mutex<SpillState>,
}

#[derive(Debug, Default)]
struct SpillState {
    /// The private temp directory, once created.
    temp: Option<PathBuf>,
    /// The directory new files go to after `keep_in`.
    kept: Option<PathBuf>,
    /// `kept` has been created (or checked) and made private.
    kept_ready: bool,
}

impl SpillDir {
    /// A spill directory to be created under `parent` on first use.
    pub(crate) fn new(parent: PathBuf) -> Self {
        Self {
            parent,
            state: Mutex::new(SpillState::default()),
        }
    }

    /// The directory new spill files go to, if it has been created.
    pub(crate) fn path(&self) -> Option<PathBuf> {
        let state = self.lock();
        match &state.kept {
            Some(kept) => state.kept_ready.then(|| kept.clone()),
            None => state.temp.clone(),
        }
    }

    /// From now on new spill files are created directly in `dir` (created
    /// on the next spill with mode 0700, parents included) and never removed
    /// by [`SpillDir::remove`]. Files already spilled stay where they are.
    pub(crate) fn keep_in(&self, dir: PathBuf) {
        let mut state = self.lock();
        state.kept = Some(dir);
        state.kept_ready = false;
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

    /// The private temp directory, created (mode 0700, random name) on the
    /// first call.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub(crate) fn dir(&self) -> io::Result<PathBuf> {
        self.ensure_dir()
    }

    /// Removes the private temp directory and every spill file in it.
    /// Idempotent; a later spill creates a fresh directory. A directory given
    /// to [`SpillDir::keep_in`] is never touched.
    pub(crate) fn remove(&self) {
        let Some(dir) = self.lock().temp.take() else {
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
        let mut state = self.lock();
        if let Some(kept) = state.kept.clone() {
            if !state.kept_ready {
                prepare_kept_dir(&kept)?;
                state.kept_ready = true;
            }
            return Ok(kept);
        }
        if let Some(dir) = state.temp.as_ref() {
            return Ok(dir.clone());
        }
        let dir = create_private_dir(&self.parent)?;
        state.temp = Some(dir.clone());
        Ok(dir)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SpillState> {
        // Poisoning only means a panic elsewhere; the state is always valid.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Creates `dir` and its missing parents with mode 0700; an existing `dir`
/// must be a real directory (not a symlink) and is made private (0700) if it
/// is not.
fn prepare_kept_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
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

    #[test]
    fn kept_directory_is_created_private_and_never_removed() {
        let parent = tempfile::tempdir().expect("tempdir");
        let spill = SpillDir::new(parent.path().to_path_buf());
        let (early, _f) = spill.create_file(StreamKind::Stdout).expect("temp spill");
        let kept = parent.path().join("a/b/spill");
        spill.keep_in(kept.clone());
        assert!(spill.path().is_none(), "created lazily");
        let (path, _f) = spill.create_file(StreamKind::Stderr).expect("kept spill");
        assert_eq!(path.parent(), Some(kept.as_path()));
        assert_eq!(spill.path(), Some(kept.clone()));
        for dir in [
            parent.path().join("a"),
            parent.path().join("a/b"),
            kept.clone(),
        ] {
            let mode = std::fs::metadata(&dir).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", dir.display());
        }
        spill.remove();
        assert!(path.exists(), "kept files survive remove");
        assert!(!early.exists(), "the temp directory is still removed");
    }

    #[test]
    fn an_existing_kept_directory_is_made_private_and_a_symlink_refused() {
        let parent = tempfile::tempdir().expect("tempdir");
        let open = parent.path().join("open");
        std::fs::create_dir(&open).expect("mkdir");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let spill = SpillDir::new(parent.path().to_path_buf());
        spill.keep_in(open.clone());
        spill.create_file(StreamKind::Stdout).expect("spill");
        let mode = std::fs::metadata(&open).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);

        let link = parent.path().join("link");
        std::os::unix::fs::symlink(&open, &link).expect("symlink");
        spill.keep_in(link);
        assert!(spill.create_file(StreamKind::Stdout).is_err());
    }
}
