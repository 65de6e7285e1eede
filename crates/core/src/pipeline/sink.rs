//! Turns what a recognizer writes into page events: each page's output goes through the grounding
//! parser and the loop sentinel as it arrives, and a finished page is cached before it is announced.

use std::collections::HashMap;

use super::cache::{Cache, FinishedAs, FinishedPage};
use crate::events::{Block, PageEvent, PageStats};
use crate::markdown::MarkdownOptions;
use crate::reading::{PageOutcome, PageReader};
use crate::recognizer::{Control, PageSink, ReadStats};
use crate::sentinel::{SentinelConfig, Verdict};

use super::{CancelToken, ReadingSummary};

/// Who the pages belong to and who read them: the cache key and the stats' label.
pub struct ReadingContext<'a> {
    pub document_hash: &'a str,
    pub fingerprint: &'a str,
    pub recognizer: &'a str,
    pub sentinel: SentinelConfig,
}

pub struct EventSink<'a> {
    context: ReadingContext<'a>,
    cache: Option<&'a Cache>,
    cancel: &'a CancelToken,
    on_event: &'a mut dyn FnMut(PageEvent),
    readers: HashMap<usize, PageReader>,
    pub summary: ReadingSummary,
}

impl<'a> EventSink<'a> {
    pub fn new(
        context: ReadingContext<'a>,
        cache: Option<&'a Cache>,
        cancel: &'a CancelToken,
        on_event: &'a mut dyn FnMut(PageEvent),
    ) -> Self {
        EventSink {
            context,
            cache,
            cancel,
            on_event,
            readers: HashMap::new(),
            summary: ReadingSummary::default(),
        }
    }

    pub fn emit(&mut self, event: PageEvent) {
        (self.on_event)(event);
    }

    /// A page that never reached the recognizer (it could not be rendered).
    pub fn fail_unread(&mut self, page: usize, error: String) {
        self.fail(page, "", error);
    }

    fn fail(&mut self, page: usize, raw: &str, error: String) {
        self.summary.failed += 1;
        let stats = self.stats(&ReadStats::default());
        self.save(page, raw, "", &[], &stats, FinishedAs::Failed(&error));
        self.emit(PageEvent::Failed { page, error });
    }

    fn stats(&self, read: &ReadStats) -> PageStats {
        let seconds = read.decode_ms as f64 / 1000.0;
        PageStats {
            prompt_tokens: read.prompt_tokens,
            generated_tokens: read.generated_tokens,
            vision_ms: read.vision_ms,
            prefill_ms: read.prefill_ms,
            decode_ms: read.decode_ms,
            tokens_per_s: if seconds > 0.0 {
                read.generated_tokens as f64 / seconds
            } else {
                0.0
            },
            recognizer: self.context.recognizer.to_owned(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn save(
        &mut self,
        page: usize,
        raw: &str,
        markdown: &str,
        blocks: &[Block],
        stats: &PageStats,
        outcome: FinishedAs<'_>,
    ) {
        let Some(cache) = self.cache else { return };
        let finished = FinishedPage {
            document_hash: self.context.document_hash,
            page,
            fingerprint: self.context.fingerprint,
            recognizer: self.context.recognizer,
            raw_output: raw,
            markdown,
            blocks,
            stats,
            outcome,
        };
        if let Err(error) = cache.save(&finished) {
            // The reading itself is fine; only the next opening will have to read it again.
            tracing::warn!(page, %error, "could not cache a finished page");
            self.summary.cache_errors += 1;
        }
    }

    fn finish_page(&mut self, page: usize, reader: PageReader, read: &ReadStats) {
        let raw = reader.parser().raw().to_owned();
        let stats = self.stats(read);
        match reader.finish(&MarkdownOptions::for_page(page)) {
            PageOutcome::Complete {
                markdown, blocks, ..
            } => {
                self.summary.done += 1;
                self.save(page, &raw, &markdown, &blocks, &stats, FinishedAs::Done);
                self.emit(PageEvent::Done {
                    page,
                    markdown,
                    blocks,
                    stats,
                });
            }
            PageOutcome::Looped {
                markdown,
                blocks,
                reason,
                ..
            } => {
                self.summary.looped += 1;
                self.save(
                    page,
                    &raw,
                    &markdown,
                    &blocks,
                    &stats,
                    FinishedAs::Looped(&reason),
                );
                self.emit(PageEvent::Looped {
                    page,
                    markdown,
                    blocks,
                    reason,
                    stats,
                });
            }
        }
    }
}

impl PageSink for EventSink<'_> {
    fn started(&mut self, page: usize) {
        self.readers
            .insert(page, PageReader::new(self.context.sentinel.clone()));
        self.emit(PageEvent::Started { page });
    }

    fn delta(&mut self, page: usize, text: &str, tokens: usize) -> Control {
        if self.cancel.is_page_cancelled(page) {
            return Control::StopPage;
        }
        let Some(reader) = self.readers.get_mut(&page) else {
            tracing::warn!(page, "text for a page that was not started");
            return Control::StopPage;
        };
        let step = reader.push(text, tokens);
        self.emit(PageEvent::Delta {
            page,
            text: text.to_owned(),
            tokens,
        });
        for event in step.events {
            self.emit(event.into_page_event(page));
        }
        match step.verdict {
            Verdict::Continue => Control::Continue,
            Verdict::Looped { .. } => Control::StopPage,
        }
    }

    fn finished(&mut self, page: usize, outcome: Result<ReadStats, String>) {
        let Some(reader) = self.readers.remove(&page) else {
            tracing::warn!(page, "a page finished that was not started");
            return;
        };
        match outcome {
            // Stopped by the user: nothing is cached, so the next reading does the page again.
            _ if self.cancel.is_page_cancelled(page) => {
                self.summary.stopped += 1;
                self.emit(PageEvent::Failed {
                    page,
                    error: "stopped".to_owned(),
                });
            }
            Ok(read) => self.finish_page(page, reader, &read),
            Err(error) => self.fail(page, reader.parser().raw(), error),
        }
    }

    /// Said once a reading, however often memory runs short again.
    fn fewer_pages_at_once(&mut self, pages: usize) {
        tracing::warn!(pages, "GPU memory is short: fewer pages read at a time");
        let first = self.summary.pages_at_once.is_none();
        self.summary.pages_at_once =
            Some(self.summary.pages_at_once.map_or(pages, |p| p.min(pages)));
        if first {
            self.emit(PageEvent::FewerPagesAtOnce {
                pages_at_once: pages,
            });
        }
    }

    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}
