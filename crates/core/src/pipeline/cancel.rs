//! Stopping a reading, whole or one page at a time, from another thread (the UI's Stop button).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<CancelState>,
}

#[derive(Default)]
struct CancelState {
    job: AtomicBool,
    pages: Mutex<HashSet<usize>>,
}

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops the whole reading: pages in flight end, no new page starts.
    pub fn cancel(&self) {
        self.inner.job.store(true, Ordering::Relaxed);
    }

    pub fn cancel_page(&self, page: usize) {
        let mut pages = self
            .inner
            .pages
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        pages.insert(page);
    }

    pub fn is_cancelled(&self) -> bool {
        self.inner.job.load(Ordering::Relaxed)
    }

    pub fn is_page_cancelled(&self, page: usize) -> bool {
        self.is_cancelled() || {
            let pages = self
                .inner
                .pages
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            pages.contains(&page)
        }
    }
}
