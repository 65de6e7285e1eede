//! The queue as the read loop pulls it: a page whose client has gone is dropped here, never read.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;

use deepread_core::recognizer::{Fed, PageFeed};

use super::sink::Routes;
use super::stats::Stats;
use super::QueuedPage;

pub(super) struct QueueFeed {
    queue: Receiver<QueuedPage>,
    routes: Rc<RefCell<Routes>>,
    stats: Arc<Stats>,
}

impl QueueFeed {
    pub(super) fn new(
        queue: Receiver<QueuedPage>,
        routes: Rc<RefCell<Routes>>,
        stats: Arc<Stats>,
    ) -> Self {
        QueueFeed {
            queue,
            routes,
            stats,
        }
    }
}

impl PageFeed for QueueFeed {
    /// Blocks on the queue only when the engine asks to wait (it has nothing else to do); the queue ends
    /// when the server closes it.
    fn pull(&mut self, wait: bool) -> Fed {
        loop {
            let next = match wait {
                true => self.queue.recv().map_err(|_| TryRecvError::Disconnected),
                false => self.queue.try_recv(),
            };
            let page = match next {
                Ok(page) => page,
                Err(TryRecvError::Empty) => return Fed::NotReady,
                Err(TryRecvError::Disconnected) => return Fed::End,
            };
            // The ticket goes with `page` here: the page no longer waits.
            let QueuedPage { input, route, .. } = page;
            if route.events.is_closed() {
                tracing::debug!(
                    page = input.page,
                    "the client went away before its page was read"
                );
                self.stats.stopped();
                continue;
            }
            self.routes.borrow_mut().open(input.page, route);
            return Fed::Page(input);
        }
    }
}
