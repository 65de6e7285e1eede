//! The first-run model download, started from the window: DeepSeek-OCR-2 fetched into the Hugging Face cache
//! on a thread of its own, its progress sent over the command's channel, stoppable with Cancel.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use deepread_models::{download, DownloadError, DownloadOptions, Env, Progress};
use serde::Serialize;
use tauri::ipc::Channel;

/// How often the window hears of progress: often enough for a smooth bar, rarely enough for the IPC.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// What the window is told about a download.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum DownloadEvent {
    #[serde(rename_all = "camelCase")]
    Progress {
        done: u64,
        total: u64,
        file: String,
        /// Bytes per second, smoothed.
        rate: f64,
        /// Seconds left at that rate; `None` until there is a rate.
        eta_seconds: Option<u64>,
    },
    /// The model is on disk in `dir`.
    Finished {
        dir: String,
    },
    Failed {
        message: String,
    },
    /// Stopped by the person; what was fetched is kept for the next try.
    Cancelled,
}

/// The download in progress, if any (its cancel flag): one at a time.
#[derive(Default)]
pub struct ModelDownload {
    running: Arc<Mutex<Option<Arc<AtomicBool>>>>,
}

impl ModelDownload {
    /// Starts downloading to the Hugging Face cache the environment names; `on_finished` runs once every file
    /// is there and checked, before the window hears of it. Refused while a download runs.
    pub fn start(
        &self,
        channel: Channel<DownloadEvent>,
        on_finished: impl FnOnce() + Send + 'static,
    ) -> Result<(), String> {
        let options = DownloadOptions::from_env(&Env::from_process()).map_err(|e| e.to_string())?;
        let cancel = {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            if running.is_some() {
                return Err("DeepSeek-OCR-2 is being downloaded already.".into());
            }
            running.insert(Arc::new(AtomicBool::new(false))).clone()
        };
        let running = Arc::clone(&self.running);
        let spawned = std::thread::Builder::new()
            .name("deepread-model-download".into())
            .spawn(move || {
                let event = fetch(&options, &cancel, &channel);
                if let DownloadEvent::Finished { .. } = &event {
                    on_finished();
                }
                *running.lock().unwrap_or_else(PoisonError::into_inner) = None;
                let _ = channel.send(event);
            });
        if let Err(error) = spawned {
            *self.running.lock().unwrap_or_else(PoisonError::into_inner) = None;
            return Err(format!("The download could not start: {error}"));
        }
        Ok(())
    }

    /// Stops the download in progress, if any; it ends with [`DownloadEvent::Cancelled`].
    pub fn cancel(&self) {
        if let Some(cancel) = &*self.running.lock().unwrap_or_else(PoisonError::into_inner) {
            cancel.store(true, Ordering::Relaxed);
        }
    }
}

/// Runs the download, forwarding progress at most every [`PROGRESS_EVERY`]; returns the closing event.
fn fetch(
    options: &DownloadOptions,
    cancel: &AtomicBool,
    channel: &Channel<DownloadEvent>,
) -> DownloadEvent {
    let mut last_sent: Option<Instant> = None;
    let outcome = download(options, cancel, |progress: &Progress| {
        let due = last_sent.is_none_or(|at| at.elapsed() >= PROGRESS_EVERY);
        if due || progress.done == progress.total {
            last_sent = Some(Instant::now());
            if channel.send(progress_event(progress)).is_err() {
                // The window is gone: nobody watches this download any more.
                cancel.store(true, Ordering::Relaxed);
            }
        }
    });
    match outcome {
        Ok(dir) => DownloadEvent::Finished {
            dir: dir.display().to_string(),
        },
        Err(DownloadError::Cancelled) => DownloadEvent::Cancelled,
        Err(error) => DownloadEvent::Failed {
            message: error.to_string(),
        },
    }
}

fn progress_event(progress: &Progress) -> DownloadEvent {
    DownloadEvent::Progress {
        done: progress.done,
        total: progress.total,
        file: progress.file.clone(),
        rate: progress.rate,
        eta_seconds: progress.eta.map(|eta| eta.as_secs()),
    }
}
