//! Counts of pages served, shared by the request side and the read loop, reported by `/health`: how many
//! wait, how many are read and decoded at once (evidence that clients share the engine), and how pages ended.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

#[derive(Default)]
pub(super) struct Stats {
    /// Accepted and not yet taken by the read loop.
    pub(super) waiting: AtomicUsize,
    /// Taken by the read loop and not finished.
    reading: AtomicUsize,
    most_reading: AtomicUsize,
    /// Writing text: the page has its first token, so it holds a decode slot.
    decoding: AtomicUsize,
    most_decoding: AtomicUsize,
    done: AtomicUsize,
    stopped: AtomicUsize,
    failed: AtomicUsize,
    pub(super) rejected: AtomicUsize,
}

/// The counts at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PagesServed {
    pub waiting: usize,
    /// In the engine: seen, joining or decoding.
    pub reading: usize,
    /// The most pages the engine held at the same time since the server started.
    pub most_reading: usize,
    pub decoding: usize,
    /// The most pages that decoded at the same time since the server started.
    pub most_decoding: usize,
    /// Pages read to their end or to their `max_tokens`.
    pub done: usize,
    /// Pages stopped because their client went away (or the server shut down), read or still queued.
    pub stopped: usize,
    pub failed: usize,
    /// Requests turned away with 429 because the queue was full.
    pub rejected: usize,
}

impl Stats {
    pub(super) fn started(&self) {
        let now = self.reading.fetch_add(1, Ordering::Relaxed) + 1;
        self.most_reading.fetch_max(now, Ordering::Relaxed);
    }

    pub(super) fn first_text(&self) {
        let now = self.decoding.fetch_add(1, Ordering::Relaxed) + 1;
        self.most_decoding.fetch_max(now, Ordering::Relaxed);
    }

    /// A page the read loop took has ended, `decoded` if it wrote text.
    pub(super) fn ended(&self, decoded: bool) {
        self.reading.fetch_sub(1, Ordering::Relaxed);
        if decoded {
            self.decoding.fetch_sub(1, Ordering::Relaxed);
        }
    }

    pub(super) fn done(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn stopped(&self) {
        self.stopped.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn failed(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> PagesServed {
        let count = |n: &AtomicUsize| n.load(Ordering::Relaxed);
        PagesServed {
            waiting: count(&self.waiting),
            reading: count(&self.reading),
            most_reading: count(&self.most_reading),
            decoding: count(&self.decoding),
            most_decoding: count(&self.most_decoding),
            done: count(&self.done),
            stopped: count(&self.stopped),
            failed: count(&self.failed),
            rejected: count(&self.rejected),
        }
    }
}
