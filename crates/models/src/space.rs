//! Free disk space, checked before a download starts so a 6.8 GB model does not fail at 90 %.

use std::io;
use std::path::Path;

use crate::error::DownloadError;

/// Bytes this user may still write on the filesystem holding `path`.
pub fn available_space(path: &Path) -> io::Result<u64> {
    fs4::available_space(path)
}

/// Fails with both figures when `needed` bytes will not fit in `dir`. A filesystem that cannot tell
/// is let through: the writes themselves still stop cleanly on a full disk.
pub(crate) fn ensure_space(
    dir: &Path,
    needed: u64,
    probe: fn(&Path) -> io::Result<u64>,
) -> Result<(), DownloadError> {
    match probe(dir) {
        Ok(available) if available < needed => Err(DownloadError::DiskSpace {
            dir: dir.to_path_buf(),
            needed,
            available,
        }),
        Ok(available) => {
            tracing::debug!(needed, available, dir = %dir.display(), "disk space checked");
            Ok(())
        }
        Err(error) => {
            tracing::warn!(%error, dir = %dir.display(), "cannot tell the free disk space");
            Ok(())
        }
    }
}
