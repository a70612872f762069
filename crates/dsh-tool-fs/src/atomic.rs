//! Atomic replacement of a file's contents.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The setuid and setgid bits, dropped when contents are replaced.
const SET_ID_BITS: u32 = 0o6000;

/// Writes `bytes` to `path` atomically: a private temporary file in the
/// same directory (random name, exclusive create), fsync, the permission
/// bits of the file it replaces without its setuid and setgid bits (as
/// `cp` and git drop them: new contents must not run with the old
/// privileges; 0644 for a new file), then rename over
/// it and fsync the directory. A symlink is written through: its target is
/// replaced, the link stays. On any error the original file is untouched
/// and the temporary file is removed.
///
/// # Errors
/// The I/O error, with the path it concerns.
pub(crate) fn write_atomic(
    path: &Path,
    bytes: &[u8],
    recheck: &dyn Fn(&Path) -> std::io::Result<()>,
) -> Result<(), (PathBuf, std::io::Error)> {
    // Write through symlinks (to the final target).
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).map_err(|e| (path.to_path_buf(), e))?
        }
        _ => path.to_path_buf(),
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(&target)
            .map(|m| m.permissions().mode() & 0o7777 & !SET_ID_BITS)
            .unwrap_or(0o644)
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".dsh-write-")
        .tempfile_in(&dir)
        .map_err(|e| (dir.clone(), e))?;
    let err = |e| (target.clone(), e);
    tmp.write_all(bytes).map_err(err)?;
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(err)?;
    }
    tmp.as_file().sync_all().map_err(err)?;
    // The fence again, just before publishing: the directory may have been
    // swapped for a link since the call was checked. Dropping `tmp` removes
    // the temporary file.
    recheck(&target).map_err(err)?;
    tmp.persist(&target)
        .map_err(|e| (target.clone(), e.error))?;
    if let Ok(d) = std::fs::File::open(&dir) {
        // Durability of the rename; a failure here loses nothing now.
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_recheck_publishes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t");
        std::fs::write(&target, "old").unwrap();
        let seen = std::sync::Mutex::new(None);
        let (path, e) = write_atomic(&target, b"new", &|p| {
            *seen.lock().unwrap() = Some(p.to_path_buf());
            Err(std::io::Error::other("fenced"))
        })
        .unwrap_err();
        assert_eq!(path, target);
        assert_eq!(e.to_string(), "fenced");
        assert_eq!(seen.lock().unwrap().as_deref(), Some(target.as_path()));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["t"], "the temporary file was removed");
    }

    #[test]
    fn a_failed_replace_leaves_the_target_and_no_temporary_file() {
        // Renaming a file over a non-empty directory fails, even for root.
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("inside"), "kept").unwrap();
        let (path, _) = write_atomic(&target, b"new", &|_| Ok(())).unwrap_err();
        assert_eq!(path, target);
        assert_eq!(
            std::fs::read_to_string(target.join("inside")).unwrap(),
            "kept"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["t"], "the temporary file was removed");
    }
}
