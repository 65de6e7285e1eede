//! Opening the cache: where it lives, how SQLite is set up, and what happens to a file we cannot use.

use std::path::{Path, PathBuf};
use std::time::Duration;

use directories::ProjectDirs;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

use crate::error::StoreError;
use crate::health::{inspect, Verdict};
use crate::schema::migrate;
use crate::set_aside::move_aside;
use crate::Store;

const FILE_NAME: &str = "cache.sqlite3";

/// How long a connection waits for another process's write to finish before giving up. Writes are one
/// page at a time, so real waits are milliseconds; the margin covers a slow disk.
const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

/// One writer at a time is all SQLite allows; a few connections let reads go on beside it.
const MAX_CONNECTIONS: u32 = 4;

/// The cache's place in the platform data folder, e.g. `~/.local/share/deepread/cache.sqlite3`.
pub fn default_path() -> Result<PathBuf, StoreError> {
    let dirs = ProjectDirs::from("app", "DeepRead", "DeepRead").ok_or(StoreError::NoDataDir)?;
    Ok(dirs.data_dir().join(FILE_NAME))
}

impl Store {
    /// Opens the cache in the platform data folder.
    pub async fn open_default() -> Result<Store, StoreError> {
        Store::open(&default_path()?).await
    }

    /// Opens (creating if needed) the cache at `path`. A file that is damaged, from a newer DeepRead,
    /// or not a DeepRead cache is moved aside and a fresh cache started; [`Store::set_aside`] says so.
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        create_parent(path)?;
        let set_aside = match inspect(path, BUSY_TIMEOUT).await? {
            Verdict::Usable => None,
            Verdict::Unusable(reason) => Some(move_aside(path, reason)?),
        };
        let pool = connect(path).await?;
        migrate(&pool, path).await?;
        tracing::debug!(path = %path.display(), "cache open");
        Ok(Store {
            pool,
            path: path.to_path_buf(),
            set_aside,
        })
    }
}

fn create_parent(path: &Path) -> Result<(), StoreError> {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::CreateDir {
                path: parent.to_path_buf(),
                source,
            })
        }
        _ => Ok(()),
    }
}

async fn connect(path: &Path) -> Result<SqlitePool, StoreError> {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        // WAL lets readers (the GUI, a CLI run) go on while one process writes.
        .journal_mode(SqliteJournalMode::Wal)
        // Under WAL, NORMAL never corrupts the file; a power cut may only lose the last commits, and a
        // lost page is read again. FULL would add an fsync to every saved page.
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(BUSY_TIMEOUT)
        .foreign_keys(true);
    SqlitePoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .connect_with(options)
        .await
        .map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })
}
