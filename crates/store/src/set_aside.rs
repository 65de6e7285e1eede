//! Moving an unusable cache file out of the way, so a fresh one can start and the old one can still be
//! inspected or sent with a bug report. The cache is never wiped silently.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::StoreError;

/// A cache file that was moved aside when the store opened, so the app can tell the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetAside {
    /// Where the old file now lives (its `-wal`/`-shm` files, if any, sit beside it with those suffixes).
    pub path: PathBuf,
    pub reason: SetAsideReason,
}

/// Why a cache file could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SetAsideReason {
    /// Not a database, or SQLite's own check found damage.
    Corrupt { detail: String },
    /// Written by a newer DeepRead: its schema version is one this build does not know.
    Newer { found: i64, known: i64 },
    /// A database, but not a DeepRead cache (it has tables and no migration history).
    Foreign,
}

impl SetAsideReason {
    /// The word that goes into the set-aside file's name.
    fn tag(&self) -> &'static str {
        match self {
            SetAsideReason::Corrupt { .. } => "corrupt",
            SetAsideReason::Newer { .. } => "newer",
            SetAsideReason::Foreign => "foreign",
        }
    }
}

impl fmt::Display for SetAsideReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetAsideReason::Corrupt { detail } => write!(f, "the file is damaged: {detail}"),
            SetAsideReason::Newer { found, known } => write!(
                f,
                "it was written by a newer DeepRead (schema version {found}, this one knows up to {known})"
            ),
            SetAsideReason::Foreign => write!(f, "it is a database, but not a DeepRead cache"),
        }
    }
}

impl fmt::Display for SetAside {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the cache was set aside as {} because {}; a new one was started",
            self.path.display(),
            self.reason
        )
    }
}

/// SQLite's companion files. A journal or WAL left beside a fresh database would be replayed into it,
/// so they move with the main file, and before it.
const SIDECARS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// Renames `path` (and its companion files) to `<name>.<reason>-<unix seconds>` in the same folder.
pub(crate) fn move_aside(path: &Path, reason: SetAsideReason) -> Result<SetAside, StoreError> {
    let destination = free_destination(path, reason.tag());
    for suffix in SIDECARS {
        let sidecar = with_suffix(path, suffix);
        if sidecar.exists() {
            rename(&sidecar, &with_suffix(&destination, suffix), &reason)?;
        }
    }
    rename(path, &destination, &reason)?;
    tracing::warn!(
        from = %path.display(),
        to = %destination.display(),
        %reason,
        "cache set aside; starting a new one"
    );
    Ok(SetAside {
        path: destination,
        reason,
    })
}

fn rename(from: &Path, to: &Path, reason: &SetAsideReason) -> Result<(), StoreError> {
    std::fs::rename(from, to).map_err(|source| StoreError::SetAsideFailed {
        from: from.to_path_buf(),
        to: to.to_path_buf(),
        reason: reason.to_string(),
        source,
    })
}

/// A name no file has yet, so an earlier set-aside file is never overwritten.
fn free_destination(path: &Path, tag: &str) -> PathBuf {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0);
    let base = with_suffix(path, &format!(".{tag}-{seconds}"));
    let mut candidate = base.clone();
    let mut attempt = 1;
    while candidate.exists() {
        candidate = with_suffix(&base, &format!(".{attempt}"));
        attempt += 1;
    }
    candidate
}

pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}
