//! The documents the user has opened: what the library's "recent" list shows.

use std::path::PathBuf;

use crate::error::StoreError;
use crate::records::{now_ms, DocumentRecord};
use crate::Store;

#[derive(sqlx::FromRow)]
struct DocumentRow {
    hash: String,
    path: String,
    title: Option<String>,
    page_count: i64,
    first_opened_at_ms: i64,
    last_opened_at_ms: i64,
}

impl DocumentRow {
    fn into_record(self) -> Result<DocumentRecord, StoreError> {
        let page_count = u32::try_from(self.page_count).map_err(|_| StoreError::DamagedRow {
            row: format!("document {}", self.hash),
            column: "page count",
            detail: format!("{} is not a page count", self.page_count),
        })?;
        Ok(DocumentRecord {
            hash: self.hash,
            path: PathBuf::from(self.path),
            title: self.title,
            page_count,
            first_opened_at_ms: self.first_opened_at_ms,
            last_opened_at_ms: self.last_opened_at_ms,
        })
    }
}

const SELECT_DOCUMENT: &str = "SELECT hash, path, title, page_count, first_opened_at_ms, \
                               last_opened_at_ms FROM documents";

impl Store {
    /// Remembers a document, or updates where it is and what it is called. The first-opened time of a
    /// document already known is kept.
    pub async fn upsert_document(&self, document: &DocumentRecord) -> Result<(), StoreError> {
        let path = document
            .path
            .to_str()
            .ok_or_else(|| StoreError::PathNotUtf8(document.path.clone()))?;
        sqlx::query(
            "INSERT INTO documents \
               (hash, path, title, page_count, first_opened_at_ms, last_opened_at_ms) \
             VALUES (?, ?, ?, ?, ?, ?) \
             ON CONFLICT (hash) DO UPDATE SET \
               path = excluded.path, \
               title = excluded.title, \
               page_count = excluded.page_count, \
               first_opened_at_ms = min(first_opened_at_ms, excluded.first_opened_at_ms), \
               last_opened_at_ms = excluded.last_opened_at_ms",
        )
        .bind(&document.hash)
        .bind(path)
        .bind(&document.title)
        .bind(i64::from(document.page_count))
        .bind(document.first_opened_at_ms)
        .bind(document.last_opened_at_ms)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Marks a document as opened now, moving it to the top of the recent list.
    pub async fn touch_document(&self, hash: &str) -> Result<(), StoreError> {
        let result = sqlx::query("UPDATE documents SET last_opened_at_ms = ? WHERE hash = ?")
            .bind(now_ms())
            .bind(hash)
            .execute(&self.pool)
            .await?;
        if result.rows_affected() == 0 {
            return Err(StoreError::UnknownDocument {
                hash: hash.to_string(),
            });
        }
        Ok(())
    }

    /// The most recently opened documents, newest first.
    pub async fn recent_documents(&self, limit: u32) -> Result<Vec<DocumentRecord>, StoreError> {
        let rows: Vec<DocumentRow> = sqlx::query_as(&format!(
            "{SELECT_DOCUMENT} ORDER BY last_opened_at_ms DESC, hash LIMIT ?"
        ))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(DocumentRow::into_record).collect()
    }

    pub async fn document(&self, hash: &str) -> Result<Option<DocumentRecord>, StoreError> {
        let row: Option<DocumentRow> = sqlx::query_as(&format!("{SELECT_DOCUMENT} WHERE hash = ?"))
            .bind(hash)
            .fetch_optional(&self.pool)
            .await?;
        row.map(DocumentRow::into_record).transpose()
    }

    /// Forgets a document and every page result of it. Returns whether it was known.
    pub async fn forget_document(&self, hash: &str) -> Result<bool, StoreError> {
        // Page results go with it through the foreign key's ON DELETE CASCADE.
        let result = sqlx::query("DELETE FROM documents WHERE hash = ?")
            .bind(hash)
            .execute(&self.pool)
            .await?;
        Ok(result.rows_affected() > 0)
    }
}
