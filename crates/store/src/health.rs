//! Deciding, before the cache is used, whether an existing file can be: damaged files and files from a
//! newer DeepRead are set aside instead of being opened, migrated over, or wiped.

use std::path::Path;
use std::time::Duration;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection, SqliteConnection};

use crate::error::StoreError;
use crate::schema::{is_known_version, schema_version};
use crate::set_aside::SetAsideReason;

/// SQLite's primary result codes that mean the file itself is bad.
const SQLITE_CORRUPT: i32 = 11;
const SQLITE_NOTADB: i32 = 26;

/// How many lines of `quick_check` output go into the report.
const REPORTED_PROBLEMS: usize = 3;

pub(crate) enum Verdict {
    Usable,
    Unusable(SetAsideReason),
}

/// Checks an existing cache file. A missing or empty file is usable (SQLite starts it afresh); errors
/// that do not say the file is bad (permissions, a full disk, a lock held past the timeout) are returned
/// as errors, never taken as a reason to set the file aside.
pub(crate) async fn inspect(path: &Path, busy_timeout: Duration) -> Result<Verdict, StoreError> {
    if !path.exists() {
        return Ok(Verdict::Usable);
    }
    // No journal-mode change here: that would write to a file we may be about to set aside.
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(false)
        .read_only(true)
        .busy_timeout(busy_timeout);
    let outcome = match options.connect().await {
        Ok(mut conn) => {
            let verdict = examine(&mut conn).await;
            if let Err(error) = conn.close().await {
                tracing::debug!(%error, "closing the inspection connection failed");
            }
            verdict
        }
        Err(error) => Err(error),
    };
    match outcome {
        Ok(verdict) => Ok(verdict),
        Err(error) => match damage_detail(&error) {
            Some(detail) => Ok(Verdict::Unusable(SetAsideReason::Corrupt { detail })),
            None => Err(StoreError::Open {
                path: path.to_path_buf(),
                source: error,
            }),
        },
    }
}

async fn examine(conn: &mut SqliteConnection) -> Result<Verdict, sqlx::Error> {
    let problems: Vec<String> = sqlx::query_scalar("PRAGMA quick_check")
        .fetch_all(&mut *conn)
        .await?;
    if problems.iter().any(|line| line != "ok") {
        let detail = problems
            .iter()
            .take(REPORTED_PROBLEMS)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ");
        return Ok(Verdict::Unusable(SetAsideReason::Corrupt { detail }));
    }
    let known = schema_version();
    let marker: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut *conn)
        .await?;
    if marker > known {
        return Ok(Verdict::Unusable(SetAsideReason::Newer {
            found: marker,
            known,
        }));
    }
    if !has_table(conn, "_sqlx_migrations").await? {
        return Ok(if has_any_table(conn).await? {
            Verdict::Unusable(SetAsideReason::Foreign)
        } else {
            Verdict::Usable
        });
    }
    let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations")
        .fetch_all(&mut *conn)
        .await?;
    match applied.into_iter().filter(|v| !is_known_version(*v)).max() {
        Some(found) => Ok(Verdict::Unusable(SetAsideReason::Newer { found, known })),
        None => Ok(Verdict::Usable),
    }
}

async fn has_table(conn: &mut SqliteConnection, name: &str) -> Result<bool, sqlx::Error> {
    let count: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?")
            .bind(name)
            .fetch_one(&mut *conn)
            .await?;
    Ok(count > 0)
}

async fn has_any_table(conn: &mut SqliteConnection) -> Result<bool, sqlx::Error> {
    let count: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(count > 0)
}

/// SQLite's message when the error says the file is not a sound database.
fn damage_detail(error: &sqlx::Error) -> Option<String> {
    let sqlx::Error::Database(db_error) = error else {
        return None;
    };
    let extended: i32 = db_error.code()?.parse().ok()?;
    let primary = extended & 0xff;
    (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB).then(|| db_error.message().to_string())
}
