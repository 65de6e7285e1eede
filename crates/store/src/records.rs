//! The typed records the cache keeps. The store defines them itself (it sits below `core`), so blocks and
//! stats travel as JSON values that `core` produces and reads back with serde.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A document the user has opened, keyed by the hash of its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentRecord {
    pub hash: String,
    /// Where the document was last seen; the hash, not the path, identifies it.
    pub path: PathBuf,
    pub title: Option<String>,
    pub page_count: u32,
    /// Milliseconds since the Unix epoch.
    pub first_opened_at_ms: i64,
    /// Milliseconds since the Unix epoch.
    pub last_opened_at_ms: i64,
}

/// How a page's reading ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PageStatus {
    Done,
    Failed,
    /// The model repeated itself and was stopped early; the retry offers another mode.
    Looped,
}

impl PageStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PageStatus::Done => "done",
            PageStatus::Failed => "failed",
            PageStatus::Looped => "looped",
        }
    }

    pub fn parse(text: &str) -> Option<PageStatus> {
        match text {
            "done" => Some(PageStatus::Done),
            "failed" => Some(PageStatus::Failed),
            "looped" => Some(PageStatus::Looped),
            _ => None,
        }
    }
}

/// One finished reading of one page by one recognizer configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageResult {
    pub document_hash: String,
    pub page_index: u32,
    /// Identifies the recognizer and every setting that changes its output.
    pub fingerprint: String,
    /// The recognizer's name, for display ("DeepSeek-OCR-2", "text layer", ...).
    pub recognizer: String,
    pub status: PageStatus,
    /// The model's output exactly as generated, grounding tags included.
    pub raw_output: String,
    pub blocks: serde_json::Value,
    pub markdown: String,
    pub stats: serde_json::Value,
    pub error: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at_ms: i64,
}

/// Milliseconds since the Unix epoch, the unit of every timestamp in the cache.
pub fn now_ms() -> i64 {
    // A clock set before 1970 is not worth failing a save over: it reads as the epoch.
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
