//! A reading: a document's pages taken from the cache where they were read before, the rest prepared
//! on a worker thread and read by a recognizer, every step reported as [`PageEvent`]s and every
//! finished page cached before it is announced.

mod cache;
mod cancel;
mod prepare;
pub(crate) use prepare::prepare_page;
mod sink;

use std::sync::Arc;

use deepread_pdf::Document;
use deepread_store::{now_ms, DocumentRecord};

use crate::events::PageEvent;
use crate::recognizer::Recognizer;
use crate::sentinel::SentinelConfig;

pub use cache::{Cache, CachedPage};
pub use cancel::CancelToken;

use prepare::PreparedPages;
use sink::{EventSink, ReadingContext};

/// Pages prepared ahead of the recognizer: enough for a GPU whose pages leave several a second.
const PREPARE_AHEAD: usize = 8;

/// What to read and how.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// 0-based pages, in the order to read them; empty means every page.
    pub pages: Vec<usize>,
    /// Take pages read before from the cache (off: read everything again).
    pub use_cache: bool,
    pub sentinel: SentinelConfig,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            pages: Vec::new(),
            use_cache: true,
            sentinel: SentinelConfig::default(),
        }
    }
}

/// How a reading went, page by page counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadingSummary {
    pub done: usize,
    pub from_cache: usize,
    pub looped: usize,
    pub failed: usize,
    pub stopped: usize,
    /// Finished pages that could not be written to the cache.
    pub cache_errors: usize,
    /// Set when GPU memory ran short: the fewest pages read together since.
    pub pages_at_once: Option<usize>,
}

/// Reads `document` with `recognizer`, reporting through `on_event`. Blocks until every page is
/// done, failed or stopped; run it on a thread of its own.
pub fn read_document(
    document: &Arc<Document>,
    recognizer: &dyn Recognizer,
    cache: Option<&Cache>,
    options: &ReadOptions,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(PageEvent),
) -> ReadingSummary {
    let hash = document.content_hash().to_owned();
    if let Some(cache) = cache {
        remember(cache, document);
    }
    let pages = pages_to_read(document, options);
    for &page in &pages {
        on_event(PageEvent::Queued { page });
    }
    let context = ReadingContext {
        document_hash: &hash,
        fingerprint: recognizer.fingerprint(),
        recognizer: recognizer.name(),
        sentinel: if recognizer.may_loop() {
            options.sentinel.clone()
        } else {
            SentinelConfig::never()
        },
    };
    let mut sink = EventSink::new(context, cache, cancel, on_event);
    let to_read = match cache.filter(|_| options.use_cache) {
        Some(cache) => answer_from_cache(cache, &hash, recognizer.fingerprint(), pages, &mut sink),
        None => pages,
    };
    if !to_read.is_empty() && !cancel.is_cancelled() {
        let failures = std::thread::scope(|scope| {
            let mut prepared = PreparedPages::start(
                scope,
                Arc::clone(document),
                to_read,
                recognizer,
                PREPARE_AHEAD,
            );
            recognizer.read(&mut prepared, &mut sink);
            std::mem::take(&mut prepared.failures)
        });
        for (page, error) in failures {
            sink.fail_unread(page, error);
        }
    }
    sink.summary
}

fn pages_to_read(document: &Document, options: &ReadOptions) -> Vec<usize> {
    if options.pages.is_empty() {
        (0..document.page_count()).collect()
    } else {
        options
            .pages
            .iter()
            .copied()
            .filter(|&p| p < document.page_count())
            .collect()
    }
}

fn remember(cache: &Cache, document: &Document) {
    let now = now_ms();
    let record = DocumentRecord {
        hash: document.content_hash().to_owned(),
        path: document.path().map(ToOwned::to_owned).unwrap_or_default(),
        title: document.title(),
        page_count: document.page_count() as u32,
        first_opened_at_ms: now,
        last_opened_at_ms: now,
    };
    if let Err(error) = cache.remember_document(&record) {
        tracing::warn!(%error, "could not record the document in the cache");
    }
}

/// Announces the pages the cache already has and returns those left to read.
fn answer_from_cache(
    cache: &Cache,
    hash: &str,
    fingerprint: &str,
    pages: Vec<usize>,
    sink: &mut EventSink<'_>,
) -> Vec<usize> {
    let mut to_read = Vec::new();
    for page in pages {
        match cache.lookup(hash, page, fingerprint) {
            Ok(Some(cached)) => {
                sink.summary.from_cache += 1;
                sink.emit(PageEvent::FromCache { page });
                sink.emit(cached_event(page, cached));
            }
            Ok(None) => to_read.push(page),
            Err(error) => {
                tracing::warn!(page, %error, "cache lookup failed; reading the page again");
                to_read.push(page);
            }
        }
    }
    to_read
}

fn cached_event(page: usize, cached: CachedPage) -> PageEvent {
    match cached.looped {
        Some(reason) => PageEvent::Looped {
            page,
            markdown: cached.markdown,
            blocks: cached.blocks,
            reason,
            stats: cached.stats,
        },
        None => PageEvent::Done {
            page,
            markdown: cached.markdown,
            blocks: cached.blocks,
            stats: cached.stats,
        },
    }
}
