//! DeepRead's cache: one SQLite file that remembers the documents a user opened, every page a recognizer
//! finished, so a document read once opens instantly, and the corrections a person made to its blocks.
//!
//! The store knows nothing of the other DeepRead crates: it keeps records it defines itself, with blocks
//! and stats as JSON values.

mod corrections;
mod documents;
mod error;
mod health;
mod open;
mod pages;
mod records;
mod schema;
mod set_aside;

pub use corrections::Correction;
pub use error::StoreError;
pub use open::default_path;
pub use records::{now_ms, DocumentRecord, PageResult, PageStatus};
pub use schema::schema_version;
pub use set_aside::{SetAside, SetAsideReason};

use std::path::{Path, PathBuf};

use sqlx::SqlitePool;

/// An open cache. Cheap to clone; every clone shares one connection pool, so closing one closes all.
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
    path: PathBuf,
    set_aside: Option<SetAside>,
}

impl Store {
    /// The cache file this store reads and writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The unusable file that was moved aside when this store opened, if any: tell the user.
    pub fn set_aside(&self) -> Option<&SetAside> {
        self.set_aside.as_ref()
    }

    /// Folds the write-ahead log back into the main file and closes every connection.
    pub async fn close(self) {
        // The pool may finish closing its last connection after `close` returns, so the checkpoint
        // that SQLite does on close cannot be relied on; this one is done before we return.
        let checkpoint = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&self.pool)
            .await;
        if let Err(error) = checkpoint {
            tracing::debug!(%error, "checkpoint before closing the cache failed; SQLite retries it on the next open");
        }
        self.pool.close().await;
    }
}
