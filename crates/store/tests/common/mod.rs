//! Records the tests write, built so a reader can tell a complete page from anything else.

#![allow(dead_code)] // each test binary uses its own part of this module

use std::path::{Path, PathBuf};

use deepread_store::{DocumentRecord, PageResult, PageStatus};
use serde_json::json;
use sqlx::{Connection, SqliteConnection};

pub const HASH: &str = "5f2b9c0e1d8a4b7c";
pub const FINGERPRINT: &str = "deepseek-ocr2/gundam/bf16";

pub fn cache_path(dir: &Path) -> PathBuf {
    dir.join("nested").join("cache.sqlite3")
}

pub fn document(hash: &str, opened_at_ms: i64) -> DocumentRecord {
    DocumentRecord {
        hash: hash.to_string(),
        path: PathBuf::from(format!("/home/reader/papers/{hash}.pdf")),
        title: Some(format!("Paper {hash}")),
        page_count: 12,
        first_opened_at_ms: opened_at_ms,
        last_opened_at_ms: opened_at_ms,
    }
}

/// A page whose every field is derived from its index, repeated to `size` bytes of Markdown, so a page
/// missing any part, or carrying another page's part, fails `assert_complete`.
pub fn page(hash: &str, index: u32, fingerprint: &str, size: usize) -> PageResult {
    PageResult {
        document_hash: hash.to_string(),
        page_index: index,
        fingerprint: fingerprint.to_string(),
        recognizer: "DeepSeek-OCR-2".to_string(),
        status: PageStatus::Done,
        raw_output: format!(
            "<|ref|>text<|/ref|><|det|>[[1,2,3,4]]<|/det|>\n{}",
            body(index, size)
        ),
        blocks: json!([{ "id": index, "label": "text", "boxes": [[1, 2, 3, 4]] }]),
        markdown: body(index, size),
        stats: json!({ "page": index, "tokens": index * 10 }),
        error: None,
        created_at_ms: 1_700_000_000_000 + i64::from(index),
    }
}

fn body(index: u32, size: usize) -> String {
    let line = format!("Line of page {index}.\n");
    line.repeat(size / line.len() + 1)
}

/// Fails, naming the fields that differ (pages are too long to print whole), unless `found` is exactly
/// the page `page` makes for its index.
pub fn assert_complete(found: &PageResult, size: usize) {
    let expected = page(
        &found.document_hash,
        found.page_index,
        &found.fingerprint,
        size,
    );
    if found == &expected {
        return;
    }
    let mut differing = Vec::new();
    if found.raw_output != expected.raw_output {
        differing.push(format!(
            "raw output ({} of {} bytes)",
            found.raw_output.len(),
            expected.raw_output.len()
        ));
    }
    if found.markdown != expected.markdown {
        differing.push(format!(
            "markdown ({} of {} bytes)",
            found.markdown.len(),
            expected.markdown.len()
        ));
    }
    if found.blocks != expected.blocks || found.stats != expected.stats {
        differing.push(format!(
            "blocks or stats ({} / {})",
            found.blocks, found.stats
        ));
    }
    if differing.is_empty() {
        differing.push("status, recognizer, error or time".to_string());
    }
    panic!(
        "page {} is not whole: {}",
        found.page_index,
        differing.join(", ")
    );
}

/// A connection of our own, beside the store, for what the store does not expose.
pub async fn raw_connection(path: &Path) -> SqliteConnection {
    SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap()
}

pub async fn integrity_check(path: &Path) -> Vec<String> {
    let mut conn = raw_connection(path).await;
    let lines = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    lines
}

/// SQLite's companion file of `path` with `suffix` ("-wal", "-shm").
pub fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}
