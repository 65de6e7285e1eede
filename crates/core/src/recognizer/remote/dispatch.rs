//! Many pages in flight: each on a worker thread of its own holding one HTTP request, their text sent
//! over a channel to the reading thread, which alone speaks to the sink. A page the sink stops ends at
//! once for the pipeline; its worker drops the connection at its next read and frees its place then,
//! so no more requests than allowed are ever open.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use image::RgbImage;

use super::client::Client;
use super::stream::Usage;
use crate::recognizer::{Control, Fed, PageFeed, PageInput, PageSink, ReadStats};

/// How long the reading thread waits for a worker before it looks again for a stop or a new page.
const POLL: Duration = Duration::from_millis(50);

/// What a worker says about its page.
enum Report {
    Text {
        page: usize,
        text: String,
    },
    /// `Ok(None)`: stopped; `Err`: the page's failure, in words.
    Ended {
        page: usize,
        outcome: Result<Option<Usage>, String>,
    },
}

/// A page whose worker is alive.
struct Flight {
    stop: Arc<AtomicBool>,
    started: Instant,
    first_text: Option<Instant>,
    /// Deltas given to the sink.
    deltas: usize,
    /// Stopped and finished in the sink; the worker is only closing its connection.
    told: bool,
}

impl Flight {
    /// The page's figures; the server's own token counts where it gave them.
    fn stats(&self, usage: Usage) -> ReadStats {
        let now = Instant::now();
        let first = self.first_text.unwrap_or(now);
        ReadStats {
            prompt_tokens: usage.prompt_tokens.unwrap_or(0),
            generated_tokens: usage.completion_tokens.unwrap_or(self.deltas),
            vision_ms: 0,
            // Until the first text: upload, queue, vision and prefill on the server.
            prefill_ms: (first - self.started).as_millis() as u64,
            decode_ms: (now - first).as_millis() as u64,
        }
    }
}

struct Reading<'a> {
    client: &'a Arc<Client>,
    concurrency: usize,
    sink: &'a mut dyn PageSink,
    sender: Sender<Report>,
    flights: HashMap<usize, Flight>,
    ended: bool,
}

/// Reads every page of `pages` with at most `concurrency` requests open.
pub fn read(
    client: &Arc<Client>,
    concurrency: usize,
    pages: &mut dyn PageFeed,
    sink: &mut dyn PageSink,
) {
    let (sender, receiver) = channel();
    let mut reading = Reading {
        client,
        concurrency,
        sink,
        sender,
        flights: HashMap::new(),
        ended: false,
    };
    reading.run(pages, &receiver);
}

impl Reading<'_> {
    fn run(&mut self, pages: &mut dyn PageFeed, receiver: &Receiver<Report>) {
        loop {
            if self.sink.cancelled() {
                self.stop_all();
            }
            let waiting = self.take_pages(pages);
            if self.ended && self.flights.values().all(|f| f.told) {
                // Workers still closing their connections finish on their own.
                return;
            }
            let wait = if waiting { POLL / 5 } else { POLL };
            match receiver.recv_timeout(wait) {
                Ok(report) => self.hear(report),
                Err(RecvTimeoutError::Timeout) => {}
                // The reading holds a sender itself, so this cannot happen; end rather than spin.
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// Starts pages while there is room; whether a page is being prepared that could start soon.
    fn take_pages(&mut self, pages: &mut dyn PageFeed) -> bool {
        while !self.ended && self.flights.len() < self.concurrency {
            match pages.pull(self.flights.is_empty()) {
                Fed::Page(page) => self.start(page),
                Fed::NotReady => return true,
                Fed::End => self.ended = true,
            }
        }
        false
    }

    fn start(&mut self, page: PageInput) {
        let number = page.page;
        self.sink.started(number);
        let Some(image) = page.image else {
            let error = "the page was not rendered".to_owned();
            self.sink.finished(number, Err(error));
            return;
        };
        let stop = Arc::new(AtomicBool::new(false));
        let worker = Worker {
            client: Arc::clone(self.client),
            page: number,
            stop: Arc::clone(&stop),
            sender: self.sender.clone(),
        };
        let spawned = std::thread::Builder::new()
            .name(format!("deepread-remote-{number}"))
            .spawn(move || worker.read(image));
        match spawned {
            Ok(_) => {
                let flight = Flight {
                    stop,
                    started: Instant::now(),
                    first_text: None,
                    deltas: 0,
                    told: false,
                };
                self.flights.insert(number, flight);
            }
            Err(error) => {
                let error = format!("could not start a thread for the page: {error}");
                self.sink.finished(number, Err(error));
            }
        }
    }

    fn hear(&mut self, report: Report) {
        match report {
            Report::Text { page, text } => self.text(page, &text),
            Report::Ended { page, outcome } => self.ended_page(page, outcome),
        }
    }

    fn text(&mut self, page: usize, text: &str) {
        let Some(flight) = self.flights.get_mut(&page).filter(|f| !f.told) else {
            return;
        };
        flight.first_text.get_or_insert_with(Instant::now);
        flight.deltas += 1;
        if self.sink.delta(page, text, 1) == Control::StopPage {
            self.stop(page);
        }
    }

    /// A stopped page ends now with what it wrote, as the in-process engine ends one: the sink tells a
    /// loop from a stop by the user.
    fn stop(&mut self, page: usize) {
        let Some(flight) = self.flights.get_mut(&page).filter(|f| !f.told) else {
            return;
        };
        flight.stop.store(true, Ordering::Relaxed);
        flight.told = true;
        let stats = flight.stats(Usage::default());
        self.sink.finished(page, Ok(stats));
    }

    fn stop_all(&mut self) {
        self.ended = true;
        let open: Vec<usize> = self.flights.keys().copied().collect();
        for page in open {
            self.stop(page);
        }
    }

    fn ended_page(&mut self, page: usize, outcome: Result<Option<Usage>, String>) {
        let Some(flight) = self.flights.remove(&page).filter(|f| !f.told) else {
            return;
        };
        let outcome = match outcome {
            Ok(usage) => Ok(flight.stats(usage.unwrap_or_default())),
            Err(error) => {
                tracing::info!(page, %error, "a page failed on the remote server");
                Err(error)
            }
        };
        self.sink.finished(page, outcome);
    }
}

/// One page's thread: its request, and what it tells the reading.
struct Worker {
    client: Arc<Client>,
    page: usize,
    stop: Arc<AtomicBool>,
    sender: Sender<Report>,
}

impl Worker {
    fn read(self, image: RgbImage) {
        let page = self.page;
        let mut on_text = |text: String| self.sender.send(Report::Text { page, text }).is_ok();
        // A worker that panicked would leave its page open and the reading waiting forever.
        let read = catch_unwind(AssertUnwindSafe(|| {
            self.client.read_page(image, &self.stop, &mut on_text)
        }));
        let outcome = match read {
            Ok(Ok(usage)) => Ok(usage),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!(
                "reading the page on {} failed unexpectedly",
                self.client.endpoint()
            )),
        };
        // The reading may be over (stopped); then nobody listens.
        let _ = self.sender.send(Report::Ended { page, outcome });
    }
}
