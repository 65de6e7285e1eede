//! Pages prepared ahead of the recognizer on worker threads: rendered and/or their text layer read (PDFium
//! takes one call at a time), then the recognizer's own CPU work on them (the model's resizing and tiling,
//! which runs in parallel), so the GPU never waits for the CPU.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, TryRecvError};
use std::sync::Arc;
use std::thread::Scope;

use deepread_pdf::{Document, PageText};

use crate::recognizer::{Fed, PageFeed, PageInput, PageNeeds, Recognizer};

/// A page that could not be prepared, with the reason a person can read.
pub type PrepareFailure = (usize, String);

/// Threads preparing pages: enough to keep a GPU reading several pages a second fed on a 4-core machine,
/// few enough to leave the reading thread a core.
const MAX_WORKERS: usize = 4;

pub struct PreparedPages {
    receiver: Receiver<Result<PageInput, PrepareFailure>>,
    /// Pages that failed to prepare, reported once the recognizer is done with the sink.
    pub failures: Vec<PrepareFailure>,
}

impl PreparedPages {
    /// Starts preparing `pages` in order on threads of `scope`, keeping about `ahead` pages ready. The
    /// threads stop once this is dropped.
    pub fn start<'scope>(
        scope: &'scope Scope<'scope, '_>,
        document: Arc<Document>,
        pages: Vec<usize>,
        recognizer: &'scope dyn Recognizer,
        ahead: usize,
    ) -> Self {
        let (sender, receiver) = sync_channel(ahead.max(1));
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get().saturating_sub(1))
            .clamp(1, MAX_WORKERS)
            .min(pages.len().max(1));
        let pages = Arc::new(pages);
        let next = Arc::new(AtomicUsize::new(0));
        let needs = recognizer.needs();
        for _ in 0..workers {
            let (sender, document, pages, next) = (
                sender.clone(),
                Arc::clone(&document),
                Arc::clone(&pages),
                Arc::clone(&next),
            );
            let work = move || {
                while let Some(&page) = pages.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let prepared = prepare_page(&document, page, needs).and_then(|mut input| {
                        recognizer.prepare(&mut input).map_err(|e| (page, e))?;
                        Ok(input)
                    });
                    // The receiver is gone when the reading stopped: stop preparing too.
                    if sender.send(prepared).is_err() {
                        break;
                    }
                }
            };
            if let Err(error) = std::thread::Builder::new()
                .name("deepread-prepare".into())
                .spawn_scoped(scope, work)
            {
                tracing::warn!(%error, "could not start a page-preparing thread");
            }
        }
        PreparedPages {
            receiver,
            failures: Vec::new(),
        }
    }
}

impl PageFeed for PreparedPages {
    fn pull(&mut self, wait: bool) -> Fed {
        loop {
            let next = match wait {
                true => self.receiver.recv().map_err(|_| TryRecvError::Disconnected),
                false => self.receiver.try_recv(),
            };
            match next {
                Ok(Ok(input)) => return Fed::Page(input),
                Ok(Err(failure)) => self.failures.push(failure),
                Err(TryRecvError::Empty) => return Fed::NotReady,
                Err(TryRecvError::Disconnected) => return Fed::End,
            }
        }
    }
}

pub(crate) fn prepare_page(
    document: &Document,
    page: usize,
    needs: PageNeeds,
) -> Result<PageInput, PrepareFailure> {
    let fail = |e: deepread_pdf::PdfError| (page, e.to_string());
    let size = document.page_size(page).map_err(fail)?;
    let image = match needs.image {
        Some(render) => Some(document.render_page(page, render).map_err(fail)?),
        None => None,
    };
    let text = if needs.text_layer {
        document.text_layer(page).map_err(fail)?
    } else {
        PageText::default()
    };
    Ok(PageInput {
        page,
        size,
        image,
        text,
        model_input: None,
    })
}
