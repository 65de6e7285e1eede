//! What the read loop reports, routed to the request each page came from. The sink is where a page is
//! stopped: at its `max_tokens`, when its client has gone, or when the server shuts down.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use deepread_core::recognizer::{Control, PageSink, ReadStats};
use tokio::sync::mpsc::UnboundedSender;

use super::stats::Stats;
use super::{Finish, FinishReason, PageEvent, Route};

/// Told to a client whose page was stopped by the shutdown.
const SHUT_DOWN: &str = "the server shut down before the page was finished";

/// The pages the read loop has taken, by page number.
#[derive(Default)]
pub(super) struct Routes(HashMap<usize, OpenPage>);

impl Routes {
    pub(super) fn open(&mut self, page: usize, route: Route) {
        self.0.insert(
            page,
            OpenPage {
                events: route.events,
                max_tokens: route.max_tokens,
                generated: 0,
                decoding: false,
                stop: None,
            },
        );
    }
}

struct OpenPage {
    events: UnboundedSender<PageEvent>,
    max_tokens: usize,
    /// Tokens of the text sent so far.
    generated: usize,
    decoding: bool,
    stop: Option<Stop>,
}

/// Why the sink stopped a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    MaxTokens,
    ClientGone,
    ShutDown,
}

pub(super) struct RouteSink {
    routes: Rc<RefCell<Routes>>,
    stats: Arc<Stats>,
    closing: Arc<AtomicBool>,
}

impl RouteSink {
    pub(super) fn new(
        routes: Rc<RefCell<Routes>>,
        stats: Arc<Stats>,
        closing: Arc<AtomicBool>,
    ) -> Self {
        RouteSink {
            routes,
            stats,
            closing,
        }
    }

    /// Sends `text` on, unless the page is to stop: the stop is decided on the text's tokens, which the
    /// engine counts per whole character (a token ending inside one waits for the next).
    fn pass_on(&self, page: &mut OpenPage, text: &str, tokens: usize) -> Option<Stop> {
        if self.closing.load(Ordering::Relaxed) {
            return Some(Stop::ShutDown);
        }
        page.generated += tokens;
        if page.events.send(PageEvent::Text(text.to_owned())).is_err() {
            return Some(Stop::ClientGone);
        }
        (page.generated >= page.max_tokens).then_some(Stop::MaxTokens)
    }
}

impl PageSink for RouteSink {
    fn started(&mut self, _page: usize) {
        self.stats.started();
    }

    fn delta(&mut self, page: usize, text: &str, tokens: usize) -> Control {
        let mut routes = self.routes.borrow_mut();
        let Some(open) = routes.0.get_mut(&page) else {
            return Control::StopPage;
        };
        if !open.decoding {
            open.decoding = true;
            self.stats.first_text();
        }
        match self.pass_on(open, text, tokens) {
            None => Control::Continue,
            Some(stop) => {
                open.stop = Some(stop);
                Control::StopPage
            }
        }
    }

    fn finished(&mut self, page: usize, outcome: Result<ReadStats, String>) {
        let Some(open) = self.routes.borrow_mut().0.remove(&page) else {
            return;
        };
        self.stats.ended(open.decoding);
        match (open.stop, outcome) {
            (Some(Stop::ClientGone), _) => {
                tracing::info!(
                    page,
                    generated = open.generated,
                    "stopped: the client went away"
                );
                self.stats.stopped();
            }
            (Some(Stop::ShutDown), _) => {
                self.stats.stopped();
                let _ = open.events.send(PageEvent::Failed(SHUT_DOWN.to_owned()));
            }
            (stop, Ok(read)) => {
                let reason = match stop == Some(Stop::MaxTokens)
                    || read.generated_tokens >= open.max_tokens
                {
                    true => FinishReason::Length,
                    false => FinishReason::Stop,
                };
                tracing::debug!(page, ?reason, tokens = read.generated_tokens, "page read");
                self.stats.done();
                let _ = open.events.send(PageEvent::Finished(Finish {
                    reason,
                    prompt_tokens: read.prompt_tokens,
                    completion_tokens: read.generated_tokens,
                }));
            }
            (_, Err(error)) => {
                tracing::warn!(page, %error, "the page could not be read");
                self.stats.failed();
                let _ = open.events.send(PageEvent::Failed(error));
            }
        }
    }

    fn fewer_pages_at_once(&mut self, pages: usize) {
        tracing::warn!(
            pages,
            "GPU memory ran short: fewer pages are read at once from now on"
        );
    }

    /// Once the server shuts down the read loop takes no new page and ends.
    fn cancelled(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }
}
