//! The reading pipeline on a real PDF, with the real text-layer recognizer and a real cache file:
//! the order of events, cache hits, stopping, retrying.

mod common;

use std::path::Path;
use std::sync::Arc;

use deepread_core::pipeline::{read_document, Cache, CancelToken, ReadOptions};
use deepread_core::recognizer::{PageFeed, PageNeeds, PageSink, Recognizer, TextLayerRecognizer};
use deepread_core::PageEvent;
use deepread_pdf::{bind_pdfium, Document};
use deepread_store::Store;

const KOREAN_4_PAGES: &str = "pdfs/non_english/docling__normal_4pages_korean.pdf";

fn document(relative: &str) -> Arc<Document> {
    let pdfium = std::env::var_os("DEEPREAD_PDFIUM")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps/pdfium/libpdfium.so")
        });
    bind_pdfium(Some(&pdfium)).unwrap();
    Arc::new(Document::open(&common::fixtures_dir().join(relative), None).unwrap())
}

struct Setup {
    _dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    cache: Cache,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = runtime
        .block_on(Store::open(&dir.path().join("cache.sqlite3")))
        .unwrap();
    let cache = Cache::new(store, runtime.handle().clone());
    Setup {
        _dir: dir,
        runtime,
        cache,
    }
}

fn read(
    doc: &Arc<Document>,
    cache: &Cache,
    options: &ReadOptions,
    cancel: &CancelToken,
) -> Vec<PageEvent> {
    read_by(&TextLayerRecognizer::new(), doc, cache, options, cancel)
}

/// Every event of a reading by `recognizer`.
fn read_by(
    recognizer: &dyn Recognizer,
    doc: &Arc<Document>,
    cache: &Cache,
    options: &ReadOptions,
    cancel: &CancelToken,
) -> Vec<PageEvent> {
    let mut events = Vec::new();
    read_document(doc, recognizer, Some(cache), options, cancel, &mut |e| {
        events.push(e)
    });
    events
}

fn kinds(events: &[PageEvent], page: usize) -> Vec<&'static str> {
    events
        .iter()
        .filter(|e| e.page() == Some(page))
        .map(|e| match e {
            PageEvent::Queued { .. } => "queued",
            PageEvent::Started { .. } => "started",
            PageEvent::Delta { .. } => "delta",
            PageEvent::BlockOpened { .. } => "opened",
            PageEvent::BlockText { .. } => "text",
            PageEvent::BlockClosed { .. } => "closed",
            PageEvent::Done { .. } => "done",
            PageEvent::Failed { .. } => "failed",
            PageEvent::Looped { .. } => "looped",
            PageEvent::FromCache { .. } => "cache",
            PageEvent::FewerPagesAtOnce { .. } => "fewer pages at once",
        })
        .collect()
}

#[test]
fn every_page_is_queued_started_streamed_and_done_in_order() {
    let setup = setup();
    let doc = document(KOREAN_4_PAGES);
    let events = read(
        &doc,
        &setup.cache,
        &ReadOptions::default(),
        &CancelToken::new(),
    );
    for page in 0..doc.page_count() {
        let kinds = kinds(&events, page);
        assert_eq!(kinds.first(), Some(&"queued"), "page {page}: {kinds:?}");
        assert_eq!(kinds.get(1), Some(&"started"), "page {page}: {kinds:?}");
        assert_eq!(kinds.last(), Some(&"done"), "page {page}: {kinds:?}");
        assert!(
            kinds.contains(&"opened") && kinds.contains(&"text"),
            "page {page}: {kinds:?}"
        );
    }
    // The streamed blocks add up to the final ones.
    let done = events.iter().find_map(|e| match e {
        PageEvent::Done {
            page: 0, blocks, ..
        } => Some(blocks.clone()),
        _ => None,
    });
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            PageEvent::BlockText { page: 0, delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    let final_text: String = done.unwrap().iter().map(|b| b.markdown.as_str()).collect();
    assert_eq!(streamed, final_text);
}

#[test]
fn a_second_reading_comes_from_the_cache_and_matches_the_first() {
    let setup = setup();
    let doc = document(KOREAN_4_PAGES);
    let first = read(
        &doc,
        &setup.cache,
        &ReadOptions::default(),
        &CancelToken::new(),
    );
    let second = read(
        &doc,
        &setup.cache,
        &ReadOptions::default(),
        &CancelToken::new(),
    );
    for page in 0..doc.page_count() {
        assert_eq!(
            kinds(&second, page),
            ["queued", "cache", "done"],
            "page {page}"
        );
    }
    let markdown = |events: &[PageEvent]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                PageEvent::Done { markdown, .. } => Some(markdown.clone()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(markdown(&first), markdown(&second));
    let stored = setup
        .runtime
        .block_on(
            setup
                .cache
                .store()
                .pages(doc.content_hash(), TextLayerRecognizer::new().fingerprint()),
        )
        .unwrap();
    assert_eq!(stored.len(), doc.page_count());
}

#[test]
fn a_stopped_reading_caches_nothing_unfinished_and_the_next_reading_does_the_rest() {
    let setup = setup();
    let doc = document(KOREAN_4_PAGES);
    let cancel = CancelToken::new();
    let recognizer = TextLayerRecognizer::new();
    let mut events = Vec::new();
    read_document(
        &doc,
        &recognizer,
        Some(&setup.cache),
        &ReadOptions::default(),
        &cancel,
        &mut |e| {
            // Stop the whole reading while page 1 is being written.
            if matches!(e, PageEvent::BlockOpened { page: 1, .. }) {
                cancel.cancel();
            }
            events.push(e);
        },
    );
    assert_eq!(kinds(&events, 0).last(), Some(&"done"));
    assert!(matches!(
        events.iter().rev().find(|e| e.page() == Some(1)),
        Some(PageEvent::Failed { .. })
    ));
    assert!(
        !kinds(&events, 2).contains(&"started"),
        "no page starts after the stop"
    );

    let resumed = read(
        &doc,
        &setup.cache,
        &ReadOptions::default(),
        &CancelToken::new(),
    );
    assert_eq!(kinds(&resumed, 0), ["queued", "cache", "done"]);
    for page in 1..doc.page_count() {
        assert_eq!(kinds(&resumed, page).last(), Some(&"done"), "page {page}");
        assert!(
            !kinds(&resumed, page).contains(&"cache"),
            "page {page} was not finished before"
        );
    }
}

#[test]
fn a_retried_page_is_read_again_and_only_that_page() {
    let setup = setup();
    let doc = document(KOREAN_4_PAGES);
    read(
        &doc,
        &setup.cache,
        &ReadOptions::default(),
        &CancelToken::new(),
    );
    let fingerprint = TextLayerRecognizer::new().fingerprint().to_owned();
    assert!(setup
        .cache
        .forget(doc.content_hash(), 2, &fingerprint)
        .unwrap());
    let again = read(
        &doc,
        &setup.cache,
        &ReadOptions::default(),
        &CancelToken::new(),
    );
    assert_eq!(kinds(&again, 2).get(1), Some(&"started"));
    for page in [0, 1, 3] {
        assert_eq!(
            kinds(&again, page),
            ["queued", "cache", "done"],
            "page {page}"
        );
    }
}

#[test]
fn chosen_pages_only_are_read() {
    let setup = setup();
    let doc = document(KOREAN_4_PAGES);
    let options = ReadOptions {
        pages: vec![3, 1],
        ..ReadOptions::default()
    };
    let events = read(&doc, &setup.cache, &options, &CancelToken::new());
    let read_pages: Vec<usize> = events
        .iter()
        .filter(|e| matches!(e, PageEvent::Done { .. }))
        .filter_map(PageEvent::page)
        .collect();
    assert_eq!(read_pages, [3, 1]);
}

#[test]
fn streamed_deltas_carry_the_tokens_the_page_stats_count() {
    let setup = setup();
    let doc = document(KOREAN_4_PAGES);
    let recorded = tempfile::tempdir().unwrap();
    // Recorded output with more than one delta's worth of text: each delta is one token.
    let text =
        "<|ref|>title<|/ref|><|det|>[[10, 10, 990, 80]]<|/det|>\n# A heading\n\nSome words.\n";
    std::fs::write(recorded.path().join("page001.md"), text).unwrap();
    let replay = deepread_core::recognizer::ReplayRecognizer::new(
        recorded.path(),
        std::time::Duration::ZERO,
    );
    let options = ReadOptions {
        pages: vec![0],
        ..ReadOptions::default()
    };
    let events = read_by(&replay, &doc, &setup.cache, &options, &CancelToken::new());
    let streamed: usize = events
        .iter()
        .filter_map(|e| match e {
            PageEvent::Delta { tokens, .. } => Some(*tokens),
            _ => None,
        })
        .sum();
    let counted = events.iter().find_map(|e| match e {
        PageEvent::Done { stats, .. } => Some(stats.generated_tokens),
        _ => None,
    });
    assert_eq!(counted, Some(text.chars().count().div_ceil(4)));
    assert_eq!(Some(streamed), counted);
}

/// The text layer, with GPU memory running short twice while it reads, as the engine says it.
struct ShortOfMemory(TextLayerRecognizer);

impl Recognizer for ShortOfMemory {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn fingerprint(&self) -> &str {
        self.0.fingerprint()
    }
    fn needs(&self) -> PageNeeds {
        self.0.needs()
    }
    fn read(&self, pages: &mut dyn PageFeed, sink: &mut dyn PageSink) {
        sink.fewer_pages_at_once(12);
        self.0.read(pages, sink);
        sink.fewer_pages_at_once(5);
    }
}

#[test]
fn fewer_pages_at_once_is_said_once_a_reading_and_loses_no_page() {
    let setup = setup();
    let doc = document(KOREAN_4_PAGES);
    let recognizer = ShortOfMemory(TextLayerRecognizer::new());
    let events = read_by(
        &recognizer,
        &doc,
        &setup.cache,
        &ReadOptions::default(),
        &CancelToken::new(),
    );
    let said: Vec<&PageEvent> = events.iter().filter(|e| e.page().is_none()).collect();
    assert_eq!(
        said,
        [&PageEvent::FewerPagesAtOnce { pages_at_once: 12 }],
        "once, with the pages read together from then on"
    );
    for page in 0..doc.page_count() {
        assert_eq!(kinds(&events, page).last(), Some(&"done"), "page {page}");
    }
}
