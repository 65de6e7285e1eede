//! The pipeline's view of the store: cached pages in and finished pages out, called from the
//! reading thread (the store is async; the reading runs on its own thread).

use deepread_store::{DocumentRecord, PageResult, PageStatus, Store, StoreError};
use tokio::runtime::Handle;

use crate::corrections::Correction;
use crate::events::{Block, BoxNorm, PageStats};
use crate::sentinel::LoopReason;

pub struct Cache {
    store: Store,
    runtime: Handle,
}

/// A page read before with the same recognizer and settings.
pub struct CachedPage {
    pub markdown: String,
    pub blocks: Vec<Block>,
    pub stats: PageStats,
    /// Set when the page was stopped in a loop.
    pub looped: Option<LoopReason>,
}

/// A page just read, as it goes into the cache.
pub struct FinishedPage<'a> {
    pub document_hash: &'a str,
    pub page: usize,
    pub fingerprint: &'a str,
    pub recognizer: &'a str,
    pub raw_output: &'a str,
    pub markdown: &'a str,
    pub blocks: &'a [Block],
    pub stats: &'a PageStats,
    pub outcome: FinishedAs<'a>,
}

pub enum FinishedAs<'a> {
    Done,
    Looped(&'a LoopReason),
    Failed(&'a str),
}

impl Cache {
    /// `runtime` runs the store's queries; call the cache from outside that runtime's threads.
    pub fn new(store: Store, runtime: Handle) -> Self {
        Cache { store, runtime }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The store back, to close it.
    pub fn into_store(self) -> Store {
        self.store
    }

    pub fn remember_document(&self, record: &DocumentRecord) -> Result<(), StoreError> {
        self.runtime.block_on(self.store.upsert_document(record))
    }

    /// The cached reading of a page, if it finished (done or looped) with these settings. Failed
    /// readings are not answers: they are read again.
    pub fn lookup(
        &self,
        hash: &str,
        page: usize,
        fingerprint: &str,
    ) -> Result<Option<CachedPage>, StoreError> {
        let found = self
            .runtime
            .block_on(self.store.page(hash, page as u32, fingerprint))?;
        Ok(found.and_then(cached_page))
    }

    pub fn save(&self, page: &FinishedPage<'_>) -> Result<(), StoreError> {
        let (status, error) = match page.outcome {
            FinishedAs::Done => (PageStatus::Done, None),
            FinishedAs::Looped(reason) => (PageStatus::Looped, serde_json::to_string(reason).ok()),
            FinishedAs::Failed(error) => (PageStatus::Failed, Some(error.to_owned())),
        };
        let result = PageResult {
            document_hash: page.document_hash.to_owned(),
            page_index: page.page as u32,
            fingerprint: page.fingerprint.to_owned(),
            recognizer: page.recognizer.to_owned(),
            status,
            raw_output: page.raw_output.to_owned(),
            blocks: serde_json::to_value(page.blocks).unwrap_or_default(),
            markdown: page.markdown.to_owned(),
            stats: serde_json::to_value(page.stats).unwrap_or_default(),
            error,
            created_at_ms: deepread_store::now_ms(),
        };
        self.runtime.block_on(self.store.save_page(&result))
    }

    /// The corrections a person made to the document's blocks. A correction whose boxes cannot be read
    /// still counts: it is found again by its place and text.
    pub fn corrections(&self, hash: &str) -> Result<Vec<Correction>, StoreError> {
        let kept = self.runtime.block_on(self.store.corrections(hash))?;
        Ok(kept
            .into_iter()
            .map(|c| Correction {
                page: c.page_index as usize,
                block_id: c.block_id,
                boxes: serde_json::from_value::<Vec<BoxNorm>>(c.boxes).unwrap_or_default(),
                original: c.original,
                markdown: c.markdown,
                label: c.label,
            })
            .collect())
    }

    /// Keeps a person's correction of a block of document `hash`, in place of an earlier one of that block.
    pub fn save_correction(&self, hash: &str, correction: &Correction) -> Result<(), StoreError> {
        let kept = deepread_store::Correction {
            document_hash: hash.to_owned(),
            page_index: correction.page as u32,
            block_id: correction.block_id,
            boxes: serde_json::to_value(&correction.boxes).unwrap_or_default(),
            original: correction.original.clone(),
            markdown: correction.markdown.clone(),
            label: correction.label.clone(),
            edited_at_ms: deepread_store::now_ms(),
        };
        self.runtime.block_on(self.store.save_correction(&kept))
    }

    /// Drops the correction kept for a block; whether there was one.
    pub fn forget_correction(
        &self,
        hash: &str,
        page: usize,
        block_id: u32,
    ) -> Result<bool, StoreError> {
        self.runtime
            .block_on(self.store.forget_correction(hash, page as u32, block_id))
    }

    /// Forgets a page's reading so the next reading does it again (retry).
    pub fn forget(&self, hash: &str, page: usize, fingerprint: &str) -> Result<bool, StoreError> {
        self.runtime
            .block_on(self.store.forget_page(hash, page as u32, fingerprint))
    }
}

fn cached_page(result: PageResult) -> Option<CachedPage> {
    let looped = match result.status {
        PageStatus::Done => None,
        PageStatus::Looped => Some(
            result
                .error
                .as_deref()
                .and_then(|e| serde_json::from_str(e).ok())?,
        ),
        PageStatus::Failed => return None,
    };
    // A row written by another version that no longer parses is read again, not trusted.
    let blocks = serde_json::from_value(result.blocks).ok()?;
    let stats = serde_json::from_value(result.stats).ok()?;
    Some(CachedPage {
        markdown: result.markdown,
        blocks,
        stats,
        looped,
    })
}
