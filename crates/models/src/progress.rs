//! Where a download stands: bytes done of total, the file being fetched, a smoothed rate and the time
//! left. Computed here so the command line and the desktop app show the same figures.

use std::time::{Duration, Instant};

/// One report to the caller's progress callback.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Bytes on disk so far, over every file of the download (a resumed file counts what it had).
    pub done: u64,
    /// Bytes of every file of the download.
    pub total: u64,
    /// The file being fetched (its path in the repository).
    pub file: String,
    pub file_done: u64,
    pub file_total: u64,
    /// Bytes per second received in this run, smoothed over the last few seconds.
    pub rate: f64,
    /// Time left at that rate; `None` until there is a rate.
    pub eta: Option<Duration>,
}

/// How often the callback hears of plain progress; starts and ends of files are always told.
const REPORT_EVERY: Duration = Duration::from_millis(100);

/// A transfer rate smoothed exponentially, so a stalled second neither zeroes it nor a burst doubles it.
#[derive(Debug, Clone)]
pub struct RateMeter {
    half_life: Duration,
    rate: Option<f64>,
    last: Option<(Instant, u64)>,
}

/// Samples closer together than this are merged: rates over a few milliseconds are noise.
const MIN_SAMPLE: Duration = Duration::from_millis(100);

impl Default for RateMeter {
    fn default() -> Self {
        RateMeter::new(Duration::from_secs(3))
    }
}

impl RateMeter {
    /// A meter whose figure halves its memory of older samples every `half_life`.
    pub fn new(half_life: Duration) -> Self {
        RateMeter {
            half_life,
            rate: None,
            last: None,
        }
    }

    /// Notes that `received` bytes in all have arrived by `now`.
    pub fn record(&mut self, now: Instant, received: u64) {
        let Some((then, before)) = self.last else {
            self.last = Some((now, received));
            return;
        };
        let elapsed = now.saturating_duration_since(then);
        if elapsed < MIN_SAMPLE {
            return;
        }
        let sample = received.saturating_sub(before) as f64 / elapsed.as_secs_f64();
        let weight = 1.0 - 0.5f64.powf(elapsed.as_secs_f64() / self.half_life.as_secs_f64());
        self.rate = Some(match self.rate {
            Some(rate) => rate + weight * (sample - rate),
            None => sample,
        });
        self.last = Some((now, received));
    }

    /// Bytes per second; 0 until two samples are far enough apart.
    pub fn rate(&self) -> f64 {
        self.rate.unwrap_or(0.0)
    }

    /// How long `remaining` bytes take at the current rate.
    pub fn eta(&self, remaining: u64) -> Option<Duration> {
        let rate = self.rate.filter(|rate| *rate > 0.0)?;
        Some(Duration::from_secs_f64(remaining as f64 / rate))
    }
}

/// Keeps the running totals of one download and tells the callback.
pub(crate) struct Reporter<'a> {
    callback: &'a mut dyn FnMut(&Progress),
    meter: RateMeter,
    last_report: Option<Instant>,
    received: u64,
    state: Progress,
}

impl<'a> Reporter<'a> {
    pub fn new(callback: &'a mut dyn FnMut(&Progress), done: u64, total: u64) -> Self {
        Reporter {
            callback,
            meter: RateMeter::default(),
            last_report: None,
            received: 0,
            state: Progress {
                done,
                total,
                file: String::new(),
                file_done: 0,
                file_total: 0,
                rate: 0.0,
                eta: None,
            },
        }
    }

    /// Tells where the download starts (the bytes already on disk), before any file.
    pub fn begin(&mut self) {
        self.report(true);
    }

    /// A file begins, with `already` bytes of it on disk (counted in `done` from the start).
    pub fn start_file(&mut self, file: &str, already: u64, size: u64) {
        self.state.file = file.to_owned();
        self.state.file_done = already;
        self.state.file_total = size;
        self.report(true);
    }

    pub fn advance(&mut self, bytes: u64) {
        self.state.done += bytes;
        self.state.file_done += bytes;
        self.received += bytes;
        self.report(false);
    }

    /// The current file starts over from its first byte.
    pub fn restart_file(&mut self) {
        self.state.done -= self.state.file_done.min(self.state.done);
        self.state.file_done = 0;
        self.report(true);
    }

    pub fn finish_file(&mut self) {
        self.report(true);
    }

    fn report(&mut self, always: bool) {
        let now = Instant::now();
        self.meter.record(now, self.received);
        let due = self
            .last_report
            .is_none_or(|last| now.duration_since(last) >= REPORT_EVERY);
        if !(always || due) {
            return;
        }
        self.last_report = Some(now);
        self.state.rate = self.meter.rate();
        self.state.eta = self
            .meter
            .eta(self.state.total.saturating_sub(self.state.done));
        (self.callback)(&self.state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_rate_is_measured_and_eta_follows() {
        let start = Instant::now();
        let mut meter = RateMeter::default();
        for second in 0..=10u64 {
            meter.record(start + Duration::from_secs(second), second * 1_000_000);
        }
        assert!((meter.rate() - 1e6).abs() < 1.0, "{}", meter.rate());
        assert_eq!(meter.eta(5_000_000), Some(Duration::from_secs(5)));
    }

    #[test]
    fn a_stall_lowers_the_rate_without_zeroing_it() {
        let start = Instant::now();
        let mut meter = RateMeter::default();
        for second in 0..=10u64 {
            meter.record(start + Duration::from_secs(second), second * 1_000_000);
        }
        meter.record(start + Duration::from_secs(11), 10_000_000);
        let rate = meter.rate();
        assert!(rate > 0.5e6 && rate < 1e6, "{rate}");
    }

    #[test]
    fn no_rate_and_no_eta_before_two_samples() {
        let mut meter = RateMeter::default();
        assert_eq!(meter.eta(1), None);
        meter.record(Instant::now(), 10);
        assert_eq!(meter.rate(), 0.0);
        assert_eq!(meter.eta(1), None);
    }
}
