//! Pages prepared ahead of the recognizer on a worker thread: rendered and/or their text layer read,
//! so the GPU never waits for PDFium.

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

use deepread_pdf::Document;

use crate::recognizer::{PageInput, PageNeeds};

/// A page that could not be prepared, with the reason a person can read.
pub type PrepareFailure = (usize, String);

pub struct PreparedPages {
    receiver: Receiver<Result<PageInput, PrepareFailure>>,
    worker: Option<JoinHandle<()>>,
}

impl PreparedPages {
    /// Starts preparing `pages` in order, keeping at most `ahead` pages ready.
    pub fn start(
        document: Arc<Document>,
        pages: Vec<usize>,
        needs: PageNeeds,
        ahead: usize,
    ) -> Self {
        let (sender, receiver) = sync_channel(ahead.max(1));
        let worker = std::thread::Builder::new()
            .name("deepread-prepare".into())
            .spawn(move || {
                for page in pages {
                    // The receiver is gone when the reading stopped: stop preparing too.
                    if sender.send(prepare_page(&document, page, needs)).is_err() {
                        break;
                    }
                }
            })
            .ok();
        PreparedPages { receiver, worker }
    }

    /// The next prepared page, or the next failure; `None` when all pages were handed out.
    pub fn next(&self) -> Option<Result<PageInput, PrepareFailure>> {
        self.receiver.recv().ok()
    }
}

impl Drop for PreparedPages {
    fn drop(&mut self) {
        // Unblock the worker (its sends now fail) before waiting for it.
        let (_, empty) = sync_channel(0);
        drop(std::mem::replace(&mut self.receiver, empty));
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

fn prepare_page(
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
    let words = if needs.text_layer {
        document.text_layer(page).map_err(fail)?
    } else {
        Vec::new()
    };
    Ok(PageInput {
        page,
        size,
        image,
        words,
    })
}
