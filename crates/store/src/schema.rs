//! The cache's schema: the embedded migrations and the version marker the code checks on open.

use std::path::Path;

use sqlx::migrate::Migrator;
use sqlx::{Acquire, Connection, SqlitePool};

use crate::error::StoreError;

pub(crate) static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// The newest schema this build knows: the highest migration version. It is also written to SQLite's
/// `user_version`, so a newer cache is recognised even if a later release stops using sqlx's table.
pub fn schema_version() -> i64 {
    MIGRATOR
        .iter()
        .map(|migration| migration.version)
        .max()
        .unwrap_or(0)
}

pub(crate) fn is_known_version(version: i64) -> bool {
    MIGRATOR
        .iter()
        .any(|migration| migration.version == version)
}

/// Applies missing migrations and stamps the version marker.
///
/// Everything happens inside one `BEGIN IMMEDIATE` transaction (sqlx nests each migration in a
/// savepoint), so two processes opening a new cache at once take turns instead of both creating tables.
pub(crate) async fn migrate(pool: &SqlitePool, path: &Path) -> Result<(), StoreError> {
    let open_error = |source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    };
    let mut conn = pool.acquire().await.map_err(open_error)?;
    let mut tx = conn
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(open_error)?;
    let tx_conn = tx.acquire().await.map_err(open_error)?;
    MIGRATOR
        .run(&mut *tx_conn)
        .await
        .map_err(|source| StoreError::Migrate {
            path: path.to_path_buf(),
            source,
        })?;
    let marker: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut *tx)
        .await
        .map_err(open_error)?;
    let known = schema_version();
    if marker < known {
        // PRAGMA takes no bound parameters; the value is our own integer.
        sqlx::query(&format!("PRAGMA user_version = {known}"))
            .execute(&mut *tx)
            .await
            .map_err(open_error)?;
    }
    tx.commit().await.map_err(open_error)?;
    Ok(())
}
