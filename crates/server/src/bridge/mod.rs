//! From HTTP requests to ONE long-running [`Recognizer::read`] on a thread of its own: requests put their
//! prepared pages on a queue ([`Reader::submit`]), the read loop pulls them through a [`PageFeed`] that
//! blocks on that queue when the engine is idle, and a [`PageSink`] sends each page's text and end to the
//! channel of the request it came from. Pages of every client share the engine's decode steps.
//!
//! [`Recognizer::read`]: deepread_core::recognizer::Recognizer::read
//! [`PageFeed`]: deepread_core::recognizer::PageFeed
//! [`PageSink`]: deepread_core::recognizer::PageSink

mod feed;
mod sink;
mod stats;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use deepread_core::recognizer::{DeepSeekOcr2, PageInput, Recognizer};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use feed::QueueFeed;
use sink::{RouteSink, Routes};
use stats::Stats;

pub use stats::PagesServed;

/// What the read loop tells a request about its page.
#[derive(Debug, Clone, PartialEq)]
pub enum PageEvent {
    /// New text, as the engine decoded it (special tokens kept, as the in-process reader writes them).
    Text(String),
    Finished(Finish),
    /// The engine could not read the page, or the server stopped before it was done.
    Failed(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finish {
    pub reason: FinishReason,
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// The model ended the page (or could not go on).
    Stop,
    /// The page reached the request's `max_tokens`.
    Length,
}

/// A place in the queue, held from the moment a request is accepted until the read loop takes its page (or
/// the request is dropped): requests still being prepared count, so that a burst cannot pile up decoded
/// images in memory.
pub struct Ticket {
    stats: Arc<Stats>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.stats.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The queue holds `queue` pages already.
#[derive(Debug)]
pub struct QueueFull;

/// The reading thread has stopped (the server is shutting down).
#[derive(Debug)]
pub struct ReaderClosed;

/// A prepared page on its way to the read loop, with where its text goes.
struct QueuedPage {
    input: PageInput,
    route: Route,
    _ticket: Ticket,
}

/// Where one page's events go, and when to stop it.
struct Route {
    events: UnboundedSender<PageEvent>,
    max_tokens: usize,
}

/// The reading thread and the queue in front of it.
pub struct Reader {
    queue: Mutex<Option<Sender<QueuedPage>>>,
    capacity: usize,
    next_page: AtomicUsize,
    closing: Arc<AtomicBool>,
    stats: Arc<Stats>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Reader {
    /// Starts the read loop of `model` on a thread of its own, in front of a queue of `capacity` pages.
    pub fn start(model: DeepSeekOcr2, capacity: usize) -> std::io::Result<Reader> {
        let (sender, receiver) = channel::<QueuedPage>();
        let stats = Arc::new(Stats::default());
        let closing = Arc::new(AtomicBool::new(false));
        let (thread_stats, thread_closing) = (Arc::clone(&stats), Arc::clone(&closing));
        let thread = std::thread::Builder::new()
            .name("deepread-serve-read".into())
            .spawn(move || {
                let routes = Rc::new(RefCell::new(Routes::default()));
                let mut feed =
                    QueueFeed::new(receiver, Rc::clone(&routes), Arc::clone(&thread_stats));
                let mut sink = RouteSink::new(routes, thread_stats, thread_closing);
                tracing::info!("the read loop is waiting for pages");
                model.read(&mut feed, &mut sink);
                tracing::info!("the read loop ended");
            })?;
        Ok(Reader {
            queue: Mutex::new(Some(sender)),
            capacity,
            next_page: AtomicUsize::new(0),
            closing,
            stats,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// A place in the queue, or [`QueueFull`].
    pub fn admit(&self) -> Result<Ticket, QueueFull> {
        let admitted =
            self.stats
                .waiting
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |waiting| {
                    (waiting < self.capacity).then_some(waiting + 1)
                });
        match admitted {
            Ok(_) => Ok(Ticket {
                stats: Arc::clone(&self.stats),
            }),
            Err(_) => {
                self.stats.rejected.fetch_add(1, Ordering::Relaxed);
                Err(QueueFull)
            }
        }
    }

    /// Queues a prepared page, to be stopped after `max_tokens`; its events come on the channel returned.
    pub fn submit(
        &self,
        ticket: Ticket,
        mut input: PageInput,
        max_tokens: usize,
    ) -> Result<UnboundedReceiver<PageEvent>, ReaderClosed> {
        let (events, receiver) = unbounded_channel();
        input.page = self.next_page.fetch_add(1, Ordering::Relaxed);
        let page = QueuedPage {
            input,
            route: Route { events, max_tokens },
            _ticket: ticket,
        };
        let queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        match queue.as_ref().is_some_and(|queue| queue.send(page).is_ok()) {
            true => Ok(receiver),
            false => Err(ReaderClosed),
        }
    }

    /// Takes no new page and stops the pages being read at their next token; pages still queued are
    /// dropped (their requests see their channel close).
    pub fn close(&self) {
        self.closing.store(true, Ordering::Relaxed);
        // Without a sender, the read loop waiting for a page wakes up to the end of the queue.
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// Waits for the reading thread to end (after [`Self::close`]).
    pub fn join(&self) {
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(Err(_)) = thread.map(JoinHandle::join) {
            tracing::error!("the reading thread panicked");
        }
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    pub fn pages(&self) -> PagesServed {
        self.stats.snapshot()
    }
}
