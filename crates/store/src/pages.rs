//! Page results: one row per (document, page, recognizer fingerprint).

use crate::error::StoreError;
use crate::records::{PageResult, PageStatus};
use crate::Store;

#[derive(sqlx::FromRow)]
struct PageRow {
    document_hash: String,
    page_index: i64,
    fingerprint: String,
    recognizer: String,
    status: String,
    raw_output: String,
    blocks_json: String,
    markdown: String,
    stats_json: String,
    error: Option<String>,
    created_at_ms: i64,
}

impl PageRow {
    fn into_result(self) -> Result<PageResult, StoreError> {
        let row = format!(
            "page {} of document {}",
            self.page_index, self.document_hash
        );
        let damaged = |column: &'static str, detail: String| StoreError::DamagedRow {
            row: row.clone(),
            column,
            detail,
        };
        let page_index = u32::try_from(self.page_index)
            .map_err(|_| damaged("page index", format!("{} is negative", self.page_index)))?;
        let status = PageStatus::parse(&self.status)
            .ok_or_else(|| damaged("status", format!("unknown status {:?}", self.status)))?;
        let blocks = serde_json::from_str(&self.blocks_json)
            .map_err(|error| damaged("blocks", error.to_string()))?;
        let stats = serde_json::from_str(&self.stats_json)
            .map_err(|error| damaged("stats", error.to_string()))?;
        Ok(PageResult {
            document_hash: self.document_hash,
            page_index,
            fingerprint: self.fingerprint,
            recognizer: self.recognizer,
            status,
            raw_output: self.raw_output,
            blocks,
            markdown: self.markdown,
            stats,
            error: self.error,
            created_at_ms: self.created_at_ms,
        })
    }
}

const SELECT_PAGE: &str = "SELECT document_hash, page_index, fingerprint, recognizer, status, \
                           raw_output, blocks_json, markdown, stats_json, error, created_at_ms \
                           FROM page_results";

impl Store {
    /// Stores a finished page, replacing an earlier result under the same key.
    ///
    /// The whole row is one statement, and a statement is one SQLite transaction: a reader, or the
    /// next start after a crash, sees the page complete or not at all.
    pub async fn save_page(&self, page: &PageResult) -> Result<(), StoreError> {
        let outcome = sqlx::query(
            "INSERT INTO page_results \
               (document_hash, page_index, fingerprint, recognizer, status, raw_output, \
                blocks_json, markdown, stats_json, error, created_at_ms) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (document_hash, fingerprint, page_index) DO UPDATE SET \
               recognizer = excluded.recognizer, \
               status = excluded.status, \
               raw_output = excluded.raw_output, \
               blocks_json = excluded.blocks_json, \
               markdown = excluded.markdown, \
               stats_json = excluded.stats_json, \
               error = excluded.error, \
               created_at_ms = excluded.created_at_ms",
        )
        .bind(&page.document_hash)
        .bind(i64::from(page.page_index))
        .bind(&page.fingerprint)
        .bind(&page.recognizer)
        .bind(page.status.as_str())
        .bind(&page.raw_output)
        .bind(page.blocks.to_string())
        .bind(&page.markdown)
        .bind(page.stats.to_string())
        .bind(&page.error)
        .bind(page.created_at_ms)
        .execute(&self.pool)
        .await;
        outcome
            .map(|_| ())
            .map_err(|error| StoreError::of_write(error, &page.document_hash))
    }

    /// The cached result of one page read by the recognizer configuration `fingerprint`.
    pub async fn page(
        &self,
        hash: &str,
        page_index: u32,
        fingerprint: &str,
    ) -> Result<Option<PageResult>, StoreError> {
        let row: Option<PageRow> = sqlx::query_as(&format!(
            "{SELECT_PAGE} WHERE document_hash = ? AND fingerprint = ? AND page_index = ?"
        ))
        .bind(hash)
        .bind(fingerprint)
        .bind(i64::from(page_index))
        .fetch_optional(&self.pool)
        .await?;
        row.map(PageRow::into_result).transpose()
    }

    /// Every cached page of a document for one recognizer configuration, in page order.
    pub async fn pages(
        &self,
        hash: &str,
        fingerprint: &str,
    ) -> Result<Vec<PageResult>, StoreError> {
        let rows: Vec<PageRow> = sqlx::query_as(&format!(
            "{SELECT_PAGE} WHERE document_hash = ? AND fingerprint = ? ORDER BY page_index"
        ))
        .bind(hash)
        .bind(fingerprint)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(PageRow::into_result).collect()
    }

    /// Drops one page's result so the next reading does the work again (retry, re-read). Returns
    /// whether there was one.
    pub async fn forget_page(
        &self,
        hash: &str,
        page_index: u32,
        fingerprint: &str,
    ) -> Result<bool, StoreError> {
        let result = sqlx::query(
            "DELETE FROM page_results \
             WHERE document_hash = ? AND fingerprint = ? AND page_index = ?",
        )
        .bind(hash)
        .bind(fingerprint)
        .bind(i64::from(page_index))
        .execute(&self.pool)
        .await?;
        Ok(result.rows_affected() > 0)
    }
}
