//! A person's corrections of blocks, one row per (document, page, block), kept apart from the readings so that
//! reading a page again never loses them.

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::Store;

/// One block as a person corrected it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Correction {
    pub document_hash: String,
    pub page_index: u32,
    /// The block's place on its page when it was corrected.
    pub block_id: u32,
    /// The block's boxes, as `core` writes them: how a later reading's block is found again.
    pub boxes: serde_json::Value,
    /// The block's Markdown as the reading had it when the person corrected it.
    pub original: String,
    /// The person's Markdown.
    pub markdown: String,
    /// The label of a block the person added; `None` for a correction of the reading's own block.
    pub label: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub edited_at_ms: i64,
}

#[derive(sqlx::FromRow)]
struct CorrectionRow {
    document_hash: String,
    page_index: i64,
    block_id: i64,
    boxes_json: String,
    original: String,
    markdown: String,
    label: Option<String>,
    edited_at_ms: i64,
}

impl CorrectionRow {
    fn into_correction(self) -> Result<Correction, StoreError> {
        let row = format!(
            "correction of block {} on page {} of document {}",
            self.block_id, self.page_index, self.document_hash
        );
        let damaged = |column: &'static str, detail: String| StoreError::DamagedRow {
            row: row.clone(),
            column,
            detail,
        };
        let index = |column: &'static str, value: i64| {
            u32::try_from(value).map_err(|_| damaged(column, format!("{value} is out of range")))
        };
        Ok(Correction {
            page_index: index("page index", self.page_index)?,
            block_id: index("block id", self.block_id)?,
            boxes: serde_json::from_str(&self.boxes_json)
                .map_err(|error| damaged("boxes", error.to_string()))?,
            document_hash: self.document_hash,
            original: self.original,
            markdown: self.markdown,
            label: self.label,
            edited_at_ms: self.edited_at_ms,
        })
    }
}

impl Store {
    /// Keeps a correction, in place of an earlier one of the same block. One statement: it is there whole or
    /// not at all, whatever stops the process.
    pub async fn save_correction(&self, correction: &Correction) -> Result<(), StoreError> {
        let outcome = sqlx::query(
            "INSERT INTO corrections \
               (document_hash, page_index, block_id, boxes_json, original, markdown, label, edited_at_ms) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (document_hash, page_index, block_id) DO UPDATE SET \
               boxes_json = excluded.boxes_json, \
               original = excluded.original, \
               markdown = excluded.markdown, \
               label = excluded.label, \
               edited_at_ms = excluded.edited_at_ms",
        )
        .bind(&correction.document_hash)
        .bind(i64::from(correction.page_index))
        .bind(i64::from(correction.block_id))
        .bind(correction.boxes.to_string())
        .bind(&correction.original)
        .bind(&correction.markdown)
        .bind(&correction.label)
        .bind(correction.edited_at_ms)
        .execute(&self.pool)
        .await;
        outcome
            .map(|_| ())
            .map_err(|error| StoreError::of_write(error, &correction.document_hash))
    }

    /// Every correction of a document, by page and block.
    pub async fn corrections(&self, hash: &str) -> Result<Vec<Correction>, StoreError> {
        let rows: Vec<CorrectionRow> = sqlx::query_as(
            "SELECT document_hash, page_index, block_id, boxes_json, original, markdown, label, edited_at_ms \
             FROM corrections WHERE document_hash = ? ORDER BY page_index, block_id",
        )
        .bind(hash)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(CorrectionRow::into_correction)
            .collect()
    }

    /// Drops the correction of one block (the person went back to the reading's text). Returns whether there
    /// was one.
    pub async fn forget_correction(
        &self,
        hash: &str,
        page_index: u32,
        block_id: u32,
    ) -> Result<bool, StoreError> {
        let result = sqlx::query(
            "DELETE FROM corrections WHERE document_hash = ? AND page_index = ? AND block_id = ?",
        )
        .bind(hash)
        .bind(i64::from(page_index))
        .bind(i64::from(block_id))
        .execute(&self.pool)
        .await?;
        Ok(result.rows_affected() > 0)
    }
}
