//! Writing a file so that its final name only ever holds a complete file.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use tempfile::NamedTempFile;

use super::ExportError;

/// Writes `bytes` to a temporary file in the target's folder, flushes it to disk, then renames it
/// over `path`. A rename within one folder is atomic, so readers see the old file or the new one,
/// never half of either; a killed export leaves at most a hidden `.deepread-*` temporary file.
pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ExportError> {
    let write_error = |source| ExportError::Write {
        path: path.to_path_buf(),
        source,
    };
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(".deepread-").suffix(".part");
    // Temporary files are private (0600) by default; an export is an ordinary file, with the
    // permissions the user's umask gives any new file.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut temp = builder.tempfile_in(folder).map_err(write_error)?;
    write_and_sync(&mut temp, bytes).map_err(write_error)?;
    temp.persist(path).map_err(|e| write_error(e.error))?;
    Ok(())
}

fn write_and_sync(temp: &mut NamedTempFile, bytes: &[u8]) -> std::io::Result<()> {
    temp.write_all(bytes)?;
    temp.as_file().sync_all()
}

/// Creates `path` and its parents when missing.
pub(super) fn ensure_dir(path: &Path) -> Result<(), ExportError> {
    std::fs::create_dir_all(path).map_err(|source| ExportError::CreateDir {
        path: path.to_path_buf(),
        source,
    })
}

/// Deletes the files of `dir` that an earlier export wrote (`ours` knows their names) and this one did
/// not (`keep`); anything else a user put in the folder stays. A folder that is not there holds nothing
/// to remove. What cannot be listed or removed is only logged: the export itself is complete.
pub(super) fn remove_stale(dir: &Path, keep: &HashSet<String>, ours: impl Fn(&str) -> bool) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return,
        Err(error) => {
            tracing::warn!(dir = %dir.display(), %error, "cannot list the folder to remove stale files");
            return;
        }
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !ours(&name) || keep.contains(&name) {
            continue;
        }
        match std::fs::remove_file(entry.path()) {
            Ok(()) => tracing::debug!(file = %name, "removed a file of a previous export"),
            Err(error) => tracing::warn!(file = %name, %error, "cannot remove a stale file"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("doc.md");
        write_atomically(&path, b"first, longer version").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec!["doc.md"]);
    }

    #[cfg(unix)]
    #[test]
    fn exports_get_the_permissions_of_an_ordinary_new_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ordinary = dir.path().join("ordinary.txt");
        std::fs::write(&ordinary, b"x").unwrap();
        let exported = dir.path().join("doc.md");
        write_atomically(&exported, b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&exported), mode(&ordinary));
    }

    #[test]
    fn a_missing_folder_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("doc.md");
        let error = write_atomically(&path, b"x").unwrap_err();
        assert!(error.to_string().contains("doc.md"), "{error}");
    }
}
