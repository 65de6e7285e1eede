//! Readings started from the window: the pipeline on a thread of its own, its events sent to the
//! webview over the command's channel, stoppable by document.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use deepread_core::export::FinishedPages;
use deepread_core::pipeline::{read_document, Cache, CancelToken, ReadOptions};
use deepread_core::recognizer::{
    default_model_dir, DeepSeekOcr2, ReadingMode, Recognizer, ReplayRecognizer, TextLayerRecognizer,
};
use deepread_core::PageEvent;
use deepread_pdf::Document;
use deepread_store::Store;
use serde::Serialize;
use tauri::ipc::Channel;

/// Pages the model reads at once.
const PAGES_IN_FLIGHT: usize = 4;
/// Recorded output plays at about 1,000 tokens a second: a fast GPU's pace for one page.
const REPLAY_PAUSE: std::time::Duration = std::time::Duration::from_millis(1);

pub struct Readings {
    cache: Option<Arc<Cache>>,
    /// Kept alive for the cache's queries.
    _runtime: Option<tokio::runtime::Runtime>,
    notices: Vec<String>,
    model_dir: PathBuf,
    model: OnceLock<Result<Arc<DeepSeekOcr2>, String>>,
    running: Mutex<HashMap<String, CancelToken>>,
    /// Every finished page of every document read in this window, by document: what Export writes.
    finished: Arc<Mutex<HashMap<String, FinishedPages>>>,
}

/// Which recognizer reads, and anything the person should know about that choice.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadingStarted {
    recognizer: String,
    notice: Option<String>,
}

impl Readings {
    /// Opens the cache (`DEEPREAD_CACHE`, else the platform data folder) and notes where the model
    /// is looked for. A cache that cannot be opened
    /// is reported, and reading goes on without one.
    pub fn new() -> Self {
        let model_dir = default_model_dir();
        let mut notices = Vec::new();
        let (cache, runtime) = match open_cache() {
            Ok((cache, runtime, set_aside)) => {
                notices.extend(set_aside);
                (Some(Arc::new(cache)), Some(runtime))
            }
            Err(error) => {
                notices.push(format!("Results will not be kept: {error}"));
                (None, None)
            }
        };
        Readings {
            cache,
            _runtime: runtime,
            notices,
            model_dir,
            model: OnceLock::new(),
            running: Mutex::new(HashMap::new()),
            finished: Arc::default(),
        }
    }

    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// Starts reading `document` (stopping an earlier reading of it); events go to `channel`.
    pub fn start(&self, document: Arc<Document>, channel: Channel<PageEvent>) -> ReadingStarted {
        let (recognizer, notice) = self.recognizer();
        let cancel = CancelToken::new();
        let id = document.content_hash().to_owned();
        if let Some(earlier) = self.lock_running().insert(id.clone(), cancel.clone()) {
            earlier.cancel();
        }
        let started = ReadingStarted {
            recognizer: recognizer.name().to_owned(),
            notice,
        };
        let cache = self.cache.clone();
        let finished = Arc::clone(&self.finished);
        let spawned = std::thread::Builder::new()
            .name("deepread-reading".into())
            .spawn(move || {
                let mut send = |event: PageEvent| {
                    lock(&finished)
                        .entry(id.clone())
                        .or_default()
                        .observe(&event);
                    if channel.send(event).is_err() {
                        // The window is gone: nobody is waiting for the rest.
                        cancel.cancel();
                    }
                };
                let options = ReadOptions::default();
                read_document(
                    &document,
                    recognizer.as_ref(),
                    cache.as_deref(),
                    &options,
                    &cancel,
                    &mut send,
                );
            });
        if let Err(error) = spawned {
            tracing::error!(%error, "could not start a reading thread");
        }
        started
    }

    pub fn stop(&self, id: &str) {
        if let Some(cancel) = self.lock_running().remove(id) {
            cancel.cancel();
        }
    }

    /// The pages of document `id` finished so far, in any reading of this window.
    pub fn finished(&self, id: &str) -> FinishedPages {
        lock(&self.finished).get(id).cloned().unwrap_or_default()
    }

    fn lock_running(&self) -> MutexGuard<'_, HashMap<String, CancelToken>> {
        lock(&self.running)
    }

    /// Who reads: recorded output when `DEEPREAD_REPLAY` names a folder of it (demos and the desktop
    /// tests), else the model, else the text layer with a word on why.
    fn recognizer(&self) -> (Arc<dyn Recognizer>, Option<String>) {
        if let Some(dir) = std::env::var_os("DEEPREAD_REPLAY") {
            let replay = ReplayRecognizer::new(&PathBuf::from(dir), REPLAY_PAUSE);
            return (Arc::new(replay), None);
        }
        match self.model() {
            Ok(model) => (model, None),
            Err(why) => (
                Arc::new(TextLayerRecognizer::new()),
                Some(format!("{why} Reading the PDF's own text layer instead.")),
            ),
        }
    }

    /// The model, loaded on first use; why not, when it cannot be.
    fn model(&self) -> Result<Arc<DeepSeekOcr2>, String> {
        self.model
            .get_or_init(|| {
                DeepSeekOcr2::load(&self.model_dir, ReadingMode::Layout, PAGES_IN_FLIGHT)
                    .map(Arc::new)
                    .map_err(|e| format!("{e}."))
            })
            .clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

type OpenedCache = (Cache, tokio::runtime::Runtime, Option<String>);

fn open_cache() -> Result<OpenedCache, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let store = match std::env::var_os("DEEPREAD_CACHE") {
        Some(path) => runtime.block_on(Store::open(&PathBuf::from(path))),
        None => runtime.block_on(Store::open_default()),
    }
    .map_err(|e| e.to_string())?;
    let set_aside = store.set_aside().map(ToString::to_string);
    let cache = Cache::new(store, runtime.handle().clone());
    Ok((cache, runtime, set_aside))
}
