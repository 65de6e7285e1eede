//! One progress bar per document: pages done of total, tokens per second, time left, cache hits.

use std::time::Instant;

use deepread_core::PageEvent;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct DocumentProgress {
    bar: ProgressBar,
    started: Instant,
    tokens: usize,
    from_cache: usize,
}

impl DocumentProgress {
    pub fn new(name: &str, pages: usize) -> Self {
        let bar = ProgressBar::with_draw_target(Some(pages as u64), ProgressDrawTarget::stderr());
        let style =
            ProgressStyle::with_template("{prefix:.bold} [{bar:30}] {pos}/{len} pages {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(name.to_owned());
        DocumentProgress {
            bar,
            started: Instant::now(),
            tokens: 0,
            from_cache: 0,
        }
    }

    pub fn observe(&mut self, event: &PageEvent) {
        match event {
            PageEvent::FromCache { .. } => self.from_cache += 1,
            PageEvent::Done { stats, .. } | PageEvent::Looped { stats, .. } => {
                self.tokens += stats.generated_tokens;
                self.bar.inc(1);
            }
            PageEvent::Failed { .. } => self.bar.inc(1),
            PageEvent::FewerPagesAtOnce { pages_at_once } => {
                let pages = match pages_at_once {
                    1 => "1 page".to_owned(),
                    n => format!("{n} pages"),
                };
                self.bar.println(format!(
                    "GPU memory is short: {pages} at a time from now on"
                ));
                return;
            }
            _ => return,
        }
        self.bar.set_message(self.status());
    }

    fn status(&self) -> String {
        let seconds = self.started.elapsed().as_secs_f64();
        let rate = if seconds > 0.0 {
            self.tokens as f64 / seconds
        } else {
            0.0
        };
        let done = self.bar.position() as f64;
        let left = self.bar.length().unwrap_or(0) as f64 - done;
        let eta = if done > 0.0 {
            seconds / done * left
        } else {
            0.0
        };
        format!(
            "· {rate:.0} tok/s · ETA {eta:.0}s · {} from cache",
            self.from_cache
        )
    }

    /// Leaves the finished bar on screen with its final figures; where there is no terminal to draw it
    /// on (a script, a log), says them in one line instead.
    pub fn finish(self) {
        if self.bar.is_hidden() {
            eprintln!("{} {}", self.bar.prefix(), self.summary());
        }
        let message = self.status();
        self.bar.finish_with_message(message);
    }

    /// Pages read, tokens and the time the reading took, for a log.
    fn summary(&self) -> String {
        let seconds = self.started.elapsed().as_secs_f64();
        format!(
            "read {} of {} pages, {} tokens, in {seconds:.2} s ({:.0} tokens/s, {} from cache)",
            self.bar.position(),
            self.bar.length().unwrap_or(0),
            self.tokens,
            self.tokens as f64 / seconds.max(1e-9),
            self.from_cache
        )
    }
}
