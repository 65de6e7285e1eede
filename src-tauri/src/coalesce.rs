//! A reading's events on their way to the webview, merged per frame. A fast GPU writes thousands of
//! tokens a second and each token is a `Delta` and a `BlockText`: sent one by one, every one of them
//! is an IPC message the webview's main thread must parse before it can paint. Text events that arrive
//! within one frame are merged into one per page (raw text) and per block (Markdown); every other event
//! keeps its place, so the window sees the same stream, only in fewer, larger pieces.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use deepread_core::PageEvent;

/// How long text may wait to be merged: one frame at 60 Hz.
pub const FRAME: Duration = Duration::from_millis(16);

/// Events of one frame, in order, with text merged into the earlier text of its page or block.
#[derive(Debug, Default)]
pub struct Batch {
    events: Vec<PageEvent>,
}

impl Batch {
    /// Adds `event`, merged into an earlier text event of the same page or block when no event that
    /// is not text came between them.
    pub fn push(&mut self, event: PageEvent) {
        if let Some(earlier) = self.mergeable(&event) {
            merge(earlier, event);
        } else {
            self.events.push(event);
        }
    }

    pub fn into_events(self) -> Vec<PageEvent> {
        self.events
    }

    fn mergeable(&mut self, event: &PageEvent) -> Option<&mut PageEvent> {
        self.events
            .iter_mut()
            .rev()
            .take_while(|e| is_text(e))
            .find(|e| same_stream(e, event))
    }
}

fn is_text(event: &PageEvent) -> bool {
    matches!(event, PageEvent::Delta { .. } | PageEvent::BlockText { .. })
}

/// Whether two text events continue the same text: a page's raw output, or one block's Markdown.
fn same_stream(a: &PageEvent, b: &PageEvent) -> bool {
    match (a, b) {
        (PageEvent::Delta { page: p, .. }, PageEvent::Delta { page: q, .. }) => p == q,
        (
            PageEvent::BlockText {
                page: p,
                block_id: i,
                ..
            },
            PageEvent::BlockText {
                page: q,
                block_id: j,
                ..
            },
        ) => p == q && i == j,
        _ => false,
    }
}

fn merge(into: &mut PageEvent, event: PageEvent) {
    match (into, event) {
        (
            PageEvent::Delta { text, tokens, .. },
            PageEvent::Delta {
                text: more,
                tokens: more_tokens,
                ..
            },
        ) => {
            text.push_str(&more);
            *tokens += more_tokens;
        }
        (PageEvent::BlockText { delta, .. }, PageEvent::BlockText { delta: more, .. }) => {
            delta.push_str(&more);
        }
        _ => unreachable!("only events of the same stream are merged"),
    }
}

/// Forwards `events` to `deliver` a frame's worth at a time, until the sender is gone (true) or
/// `deliver` says the window is (returns false; then so does this). An event waits at most a frame.
pub fn forward(events: Receiver<PageEvent>, mut deliver: impl FnMut(PageEvent) -> bool) -> bool {
    while let Ok(first) = events.recv() {
        let mut batch = Batch::default();
        batch.push(first);
        let due = Instant::now() + FRAME;
        let sender_left = loop {
            match events.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Ok(event) => batch.push(event),
                Err(RecvTimeoutError::Timeout) => break false,
                Err(RecvTimeoutError::Disconnected) => break true,
            }
        };
        if !batch.into_events().into_iter().all(&mut deliver) {
            return false;
        }
        if sender_left {
            break;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(page: usize, text: &str) -> PageEvent {
        PageEvent::Delta {
            page,
            text: text.into(),
            tokens: 1,
        }
    }

    fn block_text(page: usize, block_id: u32, delta: &str) -> PageEvent {
        PageEvent::BlockText {
            page,
            block_id,
            delta: delta.into(),
        }
    }

    fn batch(events: Vec<PageEvent>) -> Vec<PageEvent> {
        let mut batch = Batch::default();
        events.into_iter().for_each(|e| batch.push(e));
        batch.into_events()
    }

    #[test]
    fn a_frame_of_tokens_becomes_one_delta_and_one_block_text() {
        let merged = batch(vec![
            delta(0, "He"),
            block_text(0, 1, "He"),
            delta(0, "llo"),
            block_text(0, 1, "llo"),
        ]);
        assert_eq!(
            merged,
            vec![
                PageEvent::Delta {
                    page: 0,
                    text: "Hello".into(),
                    tokens: 2
                },
                block_text(0, 1, "Hello"),
            ]
        );
    }

    #[test]
    fn text_never_crosses_an_event_that_is_not_text() {
        let closed = PageEvent::BlockClosed {
            page: 0,
            block_id: 1,
        };
        let merged = batch(vec![
            block_text(0, 1, "a"),
            closed.clone(),
            block_text(0, 1, "b"),
        ]);
        assert_eq!(
            merged,
            vec![block_text(0, 1, "a"), closed, block_text(0, 1, "b")]
        );
    }

    #[test]
    fn pages_and_blocks_keep_their_own_text() {
        let merged = batch(vec![
            delta(0, "a"),
            delta(1, "x"),
            block_text(0, 1, "a"),
            block_text(0, 2, "b"),
            delta(0, "c"),
        ]);
        assert_eq!(
            merged,
            vec![
                PageEvent::Delta {
                    page: 0,
                    text: "ac".into(),
                    tokens: 2
                },
                delta(1, "x"),
                block_text(0, 1, "a"),
                block_text(0, 2, "b"),
            ]
        );
    }

    #[test]
    fn forwarding_delivers_everything_in_order_and_stops_when_the_window_is_gone() {
        let (send, receive) = std::sync::mpsc::channel();
        for i in 0..100 {
            send.send(delta(0, &i.to_string())).unwrap();
        }
        send.send(PageEvent::Started { page: 1 }).unwrap();
        drop(send);
        let mut delivered = Vec::new();
        assert!(forward(receive, |e| {
            delivered.push(e);
            true
        }));
        let all: String = (0..100).map(|i| i.to_string()).collect();
        assert_eq!(
            delivered,
            vec![
                PageEvent::Delta {
                    page: 0,
                    text: all,
                    tokens: 100
                },
                PageEvent::Started { page: 1 }
            ]
        );

        let (send, receive) = std::sync::mpsc::channel();
        send.send(PageEvent::Started { page: 0 }).unwrap();
        send.send(PageEvent::Started { page: 1 }).unwrap();
        let mut calls = 0;
        let open = forward(receive, |_| {
            calls += 1;
            false
        });
        assert!(!open);
        assert_eq!(calls, 1, "nothing more is sent once the window is gone");
    }

    #[test]
    fn a_slow_stream_is_not_held_back_past_a_frame() {
        let (send, receive) = std::sync::mpsc::channel();
        let writer = std::thread::spawn(move || {
            send.send(delta(0, "a")).unwrap();
            std::thread::sleep(FRAME * 4);
            send.send(delta(0, "b")).unwrap();
        });
        let mut delivered = Vec::new();
        forward(receive, |e| {
            delivered.push(e);
            true
        });
        writer.join().unwrap();
        assert_eq!(delivered, vec![delta(0, "a"), delta(0, "b")]);
    }
}
