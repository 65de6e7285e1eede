//! Readings started from the window: the pipeline on a thread of its own, its events sent to the
//! webview over the command's channel, stoppable by document.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use deepread_core::corrections::Correction;
use deepread_core::export::{FinishedPages, PageExport};
use deepread_core::pipeline::{read_document, Cache, CancelToken, ReadOptions};
use deepread_core::recognizer::{
    engine_placement, locate_model, DeepSeekOcr2, ModelError, ReadingMode, Recognizer,
    ReplayRecognizer, Resolution, TextLayerRecognizer, WeightFormat,
};
use deepread_core::PageEvent;
use deepread_pdf::Document;
use deepread_store::Store;
use serde::{Deserialize, Serialize};
use tauri::ipc::Channel;

use crate::coalesce;
use crate::corrections::{for_window, WindowEvent};
use crate::engine_settings::{EngineKind, Settings};
use crate::remote_engine;

/// Recorded output plays at about 1,000 tokens a second, a fast GPU's pace for one page, unless
/// `DEEPREAD_REPLAY_PAUSE_MS` sets the pause per token, fractions allowed (a slower demo, a test that
/// watches a page being read, one that streams at a GPU's pace).
const REPLAY_PAUSE: std::time::Duration = std::time::Duration::from_millis(1);

pub struct Readings {
    cache: Option<Arc<Cache>>,
    /// Runs the cache's queries.
    runtime: Option<tokio::runtime::Runtime>,
    notices: Vec<String>,
    /// Which engine reads: the settings panel's choice, read when a reading starts.
    engine: Settings,
    /// The model once loaded, or why it could not be; `None` until first asked for, and again after a download.
    /// The model as last loaded, with the weight format it was loaded in.
    model: Mutex<Option<(WeightFormat, Loaded)>>,
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

/// What the window asks to read: the mode of the top bar, and for a re-read or a retry, which pages
/// and whether the cache may answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadRequest {
    #[serde(default)]
    pub mode: ReadingMode,
    #[serde(default)]
    pub resolution: Resolution,
    /// 0-based pages in the order to read them; empty: every page.
    #[serde(default)]
    pub pages: Vec<usize>,
    #[serde(default = "cache_answers")]
    pub use_cache: bool,
}

fn cache_answers() -> bool {
    true
}

impl Default for ReadRequest {
    fn default() -> Self {
        ReadRequest {
            mode: ReadingMode::default(),
            resolution: Resolution::default(),
            pages: Vec::new(),
            use_cache: true,
        }
    }
}

/// A document read before, for the library pane's recent list.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentDocument {
    path: String,
    title: Option<String>,
    page_count: u32,
    last_opened_ms: i64,
    /// Whether the file is still where it was read.
    available: bool,
}

/// Who reads and on what, for the top bar.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineStatus {
    /// "DeepSeek-OCR-2", "text layer", "recorded output", "deepseek-ai/DeepSeek-OCR-2 (remote)".
    pub(crate) recognizer: String,
    /// Where the model runs or would run: "NVIDIA GeForce RTX 3090, bf16", "CPU, f32", "server at
    /// https://…/v1"; `None` for recorded output.
    pub(crate) device: Option<String>,
    /// The device's memory and compute capability beside the build's, for the tooltip.
    pub(crate) device_detail: Option<String>,
    /// Bytes in use on the model's GPU; `None` off CUDA or without a model.
    pub(crate) memory_bytes: Option<u64>,
    /// Whether the reading mode and resolution change what is read (they do for the model, here or on
    /// a server).
    pub(crate) reading_modes: bool,
    /// Why there is no model, or why a GPU that is there is not used.
    pub(crate) notice: Option<String>,
    /// No weights were found anywhere: the window offers to download them.
    pub(crate) model_missing: bool,
}

/// The model, or why it cannot read.
type Loaded = Result<Arc<DeepSeekOcr2>, NoModel>;

/// Why the model cannot read, and whether that is because there are no weights at all.
#[derive(Debug, Clone)]
struct NoModel {
    why: String,
    missing: bool,
}

impl Readings {
    /// Opens the cache (`DEEPREAD_CACHE`, else the platform data folder) and reads the engine settings.
    /// A cache that cannot be opened is reported, and reading goes on without one; so are settings
    /// that cannot be used, and the defaults are read with.
    pub fn new() -> Self {
        let (engine, settings_notice) = Settings::load();
        let mut notices = Vec::from_iter(settings_notice);
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
            runtime,
            notices,
            engine,
            model: Mutex::new(None),
            running: Mutex::new(HashMap::new()),
            finished: Arc::default(),
        }
    }

    /// The corrections kept for a document. Blocks the calling thread on the cache: call it off the window's
    /// thread and outside any async runtime.
    pub fn corrections(&self, hash: &str) -> Result<Vec<Correction>, String> {
        let Some(cache) = &self.cache else {
            return Ok(Vec::new());
        };
        cache
            .corrections(hash)
            .map_err(|e| format!("The corrections could not be read from the cache: {e}"))
    }

    /// The cache, unless it could not be opened. Its calls block: make them off the window's thread and outside
    /// any async runtime.
    pub fn cache(&self) -> Option<&Cache> {
        self.cache.as_deref()
    }

    /// The documents opened most recently, newest first, as the cache remembers them.
    pub fn recent_documents(&self, limit: u32) -> Result<Vec<RecentDocument>, String> {
        let (Some(cache), Some(runtime)) = (&self.cache, &self.runtime) else {
            return Ok(Vec::new());
        };
        let records = runtime
            .block_on(cache.store().recent_documents(limit))
            .map_err(|e| format!("The recent documents could not be read: {e}"))?;
        Ok(records
            .into_iter()
            .map(|record| RecentDocument {
                available: record.path.is_file(),
                path: record.path.display().to_string(),
                title: record.title,
                page_count: record.page_count,
                last_opened_ms: record.last_opened_at_ms,
            })
            .collect())
    }

    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The engine settings, which the settings panel reads and saves.
    pub fn engine_settings(&self) -> &Settings {
        &self.engine
    }

    /// Starts reading `document` as `request` says (stopping an earlier reading of it); events go
    /// to `channel`.
    pub fn start(
        &self,
        document: Arc<Document>,
        request: ReadRequest,
        channel: Channel<WindowEvent>,
    ) -> ReadingStarted {
        let (recognizer, notice) = self.recognizer(request.mode, request.resolution);
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
                let (events, merged) = std::sync::mpsc::channel();
                let window_gone = cancel.clone();
                let corrections = kept_corrections(cache.as_deref(), &id);
                std::thread::spawn(move || {
                    let deliver = |event| {
                        for_window(event, &corrections)
                            .into_iter()
                            .all(|event| channel.send(event).is_ok())
                    };
                    if !coalesce::forward(merged, deliver) {
                        // The window is gone: nobody is waiting for the rest.
                        window_gone.cancel();
                    }
                });
                let mut send = |event: PageEvent| {
                    lock(&finished)
                        .entry(id.clone())
                        .or_default()
                        .observe(&event);
                    if events.send(event).is_err() {
                        cancel.cancel();
                    }
                };
                let options = ReadOptions {
                    pages: request.pages,
                    use_cache: request.use_cache,
                    ..ReadOptions::default()
                };
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

    /// Page `page` of document `id` as it last finished in this window, as read (no corrections laid over).
    pub fn finished_page(&self, id: &str, page: usize) -> Option<PageExport> {
        lock(&self.finished).get(id)?.page(page).cloned()
    }

    fn lock_running(&self) -> MutexGuard<'_, HashMap<String, CancelToken>> {
        lock(&self.running)
    }

    /// Who reads, and on what device; loads the model the first time it reads.
    pub fn engine_status(&self) -> EngineStatus {
        if let Some(replay) = replay_dir() {
            return EngineStatus {
                recognizer: ReplayRecognizer::new(&replay, replay_pause())
                    .name()
                    .to_owned(),
                device: None,
                device_detail: None,
                memory_bytes: None,
                reading_modes: false,
                notice: None,
                model_missing: false,
            };
        }
        let chosen = self.engine.current();
        if chosen.engine == EngineKind::Remote {
            return remote_engine::status(&chosen);
        }
        let placement = engine_placement();
        let gpu_problem = placement.problem.as_ref().map(ToString::to_string);
        let (recognizer, memory_bytes, reading_modes, notice, model_missing) = match self.model() {
            Ok(model) => (
                model.name().to_owned(),
                model.device_memory_used(),
                true,
                gpu_problem,
                false,
            ),
            Err(no_model) => {
                let notice = [Some(text_layer_notice(&no_model.why)), gpu_problem];
                let notice = notice.into_iter().flatten().collect::<Vec<_>>().join(" ");
                let recognizer = TextLayerRecognizer::new().name().to_owned();
                (recognizer, None, false, Some(notice), no_model.missing)
            }
        };
        // The model reads (reading modes apply) with the weights the settings chose.
        let device = match chosen.weights {
            WeightFormat::Int8 if reading_modes => format!("{}, int8 weights", placement.name()),
            _ => placement.name(),
        };
        EngineStatus {
            recognizer,
            device: Some(device),
            device_detail: Some(placement.describe()),
            memory_bytes,
            reading_modes,
            notice,
            model_missing,
        }
    }

    /// Who reads: recorded output when `DEEPREAD_REPLAY` names a folder of it (demos and the desktop
    /// tests), else the server of the engine settings when they choose one, else the model with the
    /// chosen mode, else the text layer with a word on why.
    pub(crate) fn recognizer(
        &self,
        mode: ReadingMode,
        resolution: Resolution,
    ) -> (Arc<dyn Recognizer>, Option<String>) {
        if let Some(dir) = replay_dir() {
            let mut replay = ReplayRecognizer::new(&dir, replay_pause());
            if let Some(pages) = replay_pages_at_once() {
                replay = replay.short_of_memory(pages);
            }
            return (Arc::new(replay), None);
        }
        let chosen = self.engine.current();
        if chosen.engine == EngineKind::Remote {
            return remote_engine::recognizer(&chosen, mode);
        }
        match self.model() {
            Ok(model) => (Arc::new(model.with_reading(mode, resolution)), None),
            Err(no_model) => (
                Arc::new(TextLayerRecognizer::new()),
                Some(reading_notice(&no_model)),
            ),
        }
    }

    /// The model, found and loaded on first use; why not, when it cannot be. A change of the weights
    /// setting loads it again (the old weights let go first: both might not fit the GPU).
    fn model(&self) -> Result<Arc<DeepSeekOcr2>, NoModel> {
        let weights = self.engine.current().weights;
        let mut model = lock(&self.model);
        if model.as_ref().is_some_and(|(loaded, _)| *loaded != weights) {
            *model = None;
        }
        model
            .get_or_insert_with(|| (weights, load_model(weights)))
            .1
            .clone()
    }

    /// Looks for the model again on next use: after a download put one on disk.
    pub fn forget_model(&self) {
        let mut model = lock(&self.model);
        if model.as_ref().is_some_and(|(_, loaded)| loaded.is_err()) {
            *model = None;
        }
    }
}

/// The corrections of document `hash` a reading lays over its pages; none, said in the log, when the cache
/// cannot give them (the reading itself goes on).
fn kept_corrections(cache: Option<&Cache>, hash: &str) -> Vec<Correction> {
    let Some(cache) = cache else {
        return Vec::new();
    };
    cache.corrections(hash).unwrap_or_else(|error| {
        tracing::warn!(%error, "the corrections could not be read; the reading shows the model's text");
        Vec::new()
    })
}

fn load_model(weights: WeightFormat) -> Loaded {
    let no_model = |error: ModelError| NoModel {
        missing: matches!(error, ModelError::Missing(_)),
        why: format!("{error}."),
    };
    let dir = locate_model(None).map_err(no_model)?;
    DeepSeekOcr2::load_as(&dir, ReadingMode::Layout, None, weights)
        .map(Arc::new)
        .map_err(no_model)
}

fn replay_dir() -> Option<PathBuf> {
    std::env::var_os("DEEPREAD_REPLAY").map(PathBuf::from)
}

fn replay_pause() -> std::time::Duration {
    std::env::var("DEEPREAD_REPLAY_PAUSE_MS")
        .ok()
        .and_then(|ms| ms.parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map_or(REPLAY_PAUSE, |ms| {
            std::time::Duration::from_secs_f64(ms / 1e3)
        })
}

/// `DEEPREAD_REPLAY_PAGES_AT_ONCE`: recorded output plays as if GPU memory allowed only that many pages at
/// a time, so the window's notice can be shown and tested without such a card.
fn replay_pages_at_once() -> Option<usize> {
    std::env::var("DEEPREAD_REPLAY_PAGES_AT_ONCE")
        .ok()
        .and_then(|pages| pages.parse::<usize>().ok())
        .filter(|&pages| pages > 0)
}

/// The status bar's word on reading without the model: short when there are simply no weights yet (the
/// panel offers them; the engine status' tooltip lists every place looked).
fn reading_notice(no_model: &NoModel) -> String {
    if no_model.missing {
        "DeepSeek-OCR-2 is not on this computer yet: reading the PDF's own text layer.".to_owned()
    } else {
        text_layer_notice(&no_model.why)
    }
}

pub(crate) fn text_layer_notice(why: &str) -> String {
    format!("{why} Reading the PDF's own text layer instead.")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_from_the_window_names_mode_resolution_and_pages() {
        let request: ReadRequest = serde_json::from_str(
            r#"{"mode":"plain","resolution":"baseOnly","pages":[4,5],"useCache":false}"#,
        )
        .unwrap();
        assert_eq!(request.mode, ReadingMode::Plain);
        assert_eq!(request.resolution, Resolution::BaseOnly);
        assert_eq!(request.pages, vec![4, 5]);
        assert!(!request.use_cache);

        // Left out: the default mode, every page, the cache answering.
        let request: ReadRequest = serde_json::from_str("{}").unwrap();
        assert_eq!(
            (request.mode, request.resolution),
            (ReadingMode::Layout, Resolution::BaseWithTiles)
        );
        assert!(request.pages.is_empty() && request.use_cache);
    }

    #[test]
    fn a_request_with_an_unknown_mode_or_field_is_refused_with_its_name() {
        let error = serde_json::from_str::<ReadRequest>(r#"{"resolution":"large"}"#).unwrap_err();
        assert!(error.to_string().contains("large"), "{error}");
        let error = serde_json::from_str::<ReadRequest>(r#"{"page":1}"#).unwrap_err();
        assert!(error.to_string().contains("page"), "{error}");
    }
}
