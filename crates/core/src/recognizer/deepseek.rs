//! DeepSeek-OCR-2, in process: pages rendered at the reference's 144 dpi, read several at a time by
//! `deepread-engine`, their text streamed to the pipeline as it is generated.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use deepread_engine::device::{place, Placement};
use deepread_engine::preprocess::{preprocess_global_only, PreprocessConfig};
use deepread_engine::prompt::{build_prompt_ids, PromptPreset, Tokenizer};
use deepread_engine::quant::WeightFormat;
use deepread_engine::{
    EngineError, Flow, GenerateOptions, Ocr, PageImage, PageSource, Pull, Schedule, TextEvent,
};
use deepread_pdf::RenderSize;
use image::RgbImage;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Control, Fed, PageFeed, PageInput, PageNeeds, PageSink, ReadStats, Recognizer};

/// The official PDF script renders pages at zoom 2 of 72 dpi.
pub const RENDER_DPI: f32 = 144.0;
/// How DeepSeek-OCR-2 sees a page: a PDF page rendered at [`RENDER_DPI`], an image file at its own pixels (the
/// official image script gives the model the file as Pillow decodes it).
pub const MODEL_RENDER: RenderSize = RenderSize::Native {
    pdf_dpi: RENDER_DPI,
};
/// What DeepSeek-OCR-2 reads of a page, in process or on a server.
pub(crate) const MODEL_PAGE: PageNeeds = PageNeeds {
    image: Some(MODEL_RENDER),
    text_layer: false,
};
/// Bytes sampled from each end of a weights file for the fingerprint (hashing 6.8 GB at every start
/// would take seconds; the header names every tensor's shape and offset, the samples its data).
const FINGERPRINT_SAMPLE: u64 = 1 << 20;

/// Which of the official prompts to read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReadingMode {
    /// "Document with layout": Markdown with grounding boxes.
    #[default]
    Layout,
    /// "Plain text": Markdown only.
    Plain,
}

/// How much of the page the model sees. DeepSeek-OCR-2 has learned queries for 1024 px and 768 px
/// views only, so the v1 model's tiny (512), small (640) and large (1280) views do not exist here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Resolution {
    /// The whole page at 1024 px plus 2..=6 tiles of 768 px: the official default.
    #[default]
    BaseWithTiles,
    /// The whole page at 1024 px alone: 257 image tokens, quicker, for large print.
    BaseOnly,
}

/// The model folder to read with: `explicit` (the CLI's `--model`), else `DEEPREAD_MODEL`, the Hugging Face
/// cache, the platform data folder (deepread-models says why each place did not count).
pub fn locate_model(explicit: Option<&Path>) -> Result<PathBuf, ModelError> {
    deepread_models::locate(explicit)
        .map(|located| located.dir)
        .map_err(|not_found| ModelError::Missing(Box::new(not_found)))
}

/// Where the model reads in this process, found once: the GPU when the build and the card allow, else the
/// CPU with the reason why not. The app's engine status shows it before any model is loaded.
pub fn engine_placement() -> &'static Placement {
    static PLACEMENT: OnceLock<Placement> = OnceLock::new();
    PLACEMENT.get_or_init(place)
}

impl ReadingMode {
    /// The official prompt for this mode.
    pub fn preset(self) -> PromptPreset {
        match self {
            ReadingMode::Layout => PromptPreset::Layout,
            ReadingMode::Plain => PromptPreset::Plain,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("no DeepSeek-OCR-2 weights to read with (download them with `deepread models download` or the window's Download button; born-digital PDFs are read through their text layer): {0}")]
    Missing(Box<deepread_models::NotFound>),
    #[error("no DeepSeek-OCR-2 weights in {0}: it needs config.json, tokenizer.json and the *.safetensors files")]
    NotAModel(PathBuf),
    #[error("the model in {dir} could not be loaded: {source}")]
    Load {
        dir: PathBuf,
        #[source]
        source: EngineError,
    },
    #[error("could not read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub struct DeepSeekOcr2 {
    /// Shared by every reading setting: the weights are loaded once.
    ocr: Arc<Ocr>,
    /// One reading on the model at a time, whatever its setting: two would each size their slots from the
    /// same free memory and capture CUDA graphs at once. A second reading (another document, a region read
    /// again) waits for the first.
    turn: Arc<Mutex<()>>,
    /// The model files hashed: the start of every setting's fingerprint.
    files: Sha256,
    mode: ReadingMode,
    resolution: Resolution,
    options: GenerateOptions,
    /// How pages share the GPU: continuous batching in as many slots as its memory holds.
    schedule: Schedule,
    fingerprint: String,
}

impl DeepSeekOcr2 {
    /// Loads the model in `dir` on the best device there is. `slots`: at most this many pages decoding
    /// together (`None`: as many as the device's memory holds).
    pub fn load(dir: &Path, mode: ReadingMode, slots: Option<usize>) -> Result<Self, ModelError> {
        Self::load_as(dir, mode, slots, WeightFormat::Dense)
    }

    /// [`Self::load`] with the language model's weights in `weights` (int8: quantized at the first load and
    /// cached beside the checkpoint). Pages read in int8 are cached apart from those read in bf16.
    pub fn load_as(
        dir: &Path,
        mode: ReadingMode,
        slots: Option<usize>,
        weights: WeightFormat,
    ) -> Result<Self, ModelError> {
        if !dir.join("config.json").is_file() {
            return Err(ModelError::NotAModel(dir.to_path_buf()));
        }
        let placement = engine_placement();
        tracing::info!(dir = %dir.display(), device = %placement.describe(), ?weights, "loading DeepSeek-OCR-2");
        let ocr =
            Ocr::load_as(dir, &placement.device, placement.dtype, weights).map_err(|source| {
                ModelError::Load {
                    dir: dir.to_path_buf(),
                    source,
                }
            })?;
        let mut files = hash_model_files(dir)?;
        // bf16 adds nothing, so pages cached before int8 existed stay valid.
        if weights == WeightFormat::Int8 {
            files.update(b"weights int8");
        }
        let options = GenerateOptions::default();
        let fingerprint = fingerprint(&files, mode, Resolution::default(), &options);
        let schedule = Schedule::for_engine(ocr.engine());
        let schedule = match slots {
            Some(slots) => schedule.with_slots(slots),
            None => schedule,
        };
        Ok(DeepSeekOcr2 {
            ocr: Arc::new(ocr),
            turn: Arc::default(),
            files,
            mode,
            resolution: Resolution::default(),
            options,
            schedule,
            fingerprint,
        })
    }

    /// The same loaded model reading with another prompt or resolution; nothing is loaded again,
    /// and the cache keeps each setting's pages apart.
    pub fn with_reading(&self, mode: ReadingMode, resolution: Resolution) -> Self {
        DeepSeekOcr2 {
            ocr: Arc::clone(&self.ocr),
            turn: Arc::clone(&self.turn),
            files: self.files.clone(),
            mode,
            resolution,
            options: self.options.clone(),
            schedule: self.schedule.clone(),
            fingerprint: fingerprint(&self.files, mode, resolution, &self.options),
        }
    }

    pub fn mode(&self) -> ReadingMode {
        self.mode
    }

    pub fn resolution(&self) -> Resolution {
        self.resolution
    }

    /// Bytes in use on the model's device (the whole GPU, as nvidia-smi counts it); `None` off CUDA,
    /// where there is no device memory apart from the process's own.
    pub fn device_memory_used(&self) -> Option<u64> {
        deepread_engine::device::memory_used(self.ocr.engine().model().device())
    }

    /// One page as the engine takes it, at this reading's resolution.
    fn model_input(&self, image: &RgbImage) -> Result<deepread_engine::PageInput, String> {
        let prompt = self.mode.preset().text();
        match self.resolution {
            Resolution::BaseWithTiles => self.ocr.prepare(image, prompt),
            Resolution::BaseOnly => return base_only_input(self.ocr.tokenizer(), image, prompt),
        }
        .map_err(|e| e.to_string())
    }
}

impl Recognizer for DeepSeekOcr2 {
    fn name(&self) -> &str {
        "DeepSeek-OCR-2"
    }

    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    fn needs(&self) -> PageNeeds {
        MODEL_PAGE
    }

    fn prepare(&self, page: &mut PageInput) -> Result<(), String> {
        let image = page
            .image
            .as_ref()
            .ok_or_else(|| "the page was not rendered".to_owned())?;
        page.model_input = Some(self.model_input(image)?);
        Ok(())
    }

    /// Every page through the engine's continuous batching. Should the device fail, the pages in flight
    /// fail with its error and the rest are read on.
    fn read(&self, pages: &mut dyn PageFeed, sink: &mut dyn PageSink) {
        let _turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        let sink = RefCell::new(sink);
        let book = RefCell::new(Book::default());
        while !book.borrow().ended {
            book.borrow_mut().numbers.clear();
            let mut feed = ModelFeed {
                pages: &mut *pages,
                sink: &sink,
                book: &book,
            };
            if let Err(error) = self.read_feed(&mut feed, &sink, &book) {
                let message = error.to_string();
                tracing::error!(error = %message, "the model failed; the pages in flight fail with it");
                for page in std::mem::take(&mut book.borrow_mut().open) {
                    sink.borrow_mut().finished(page, Err(message.clone()));
                }
            }
        }
    }
}

impl DeepSeekOcr2 {
    fn read_feed(
        &self,
        feed: &mut ModelFeed<'_, '_>,
        sink: &RefCell<&mut dyn PageSink>,
        book: &RefCell<Book>,
    ) -> Result<(), EngineError> {
        let page_of = |index: usize| book.borrow().numbers.get(index).copied();
        let end = |page: usize| book.borrow_mut().open.remove(&page);
        let report = self
            .ocr
            .read_pages(feed, &self.schedule, &self.options, &mut |event| {
                let mut sink = sink.borrow_mut();
                match event {
                    TextEvent::Text { page, text, tokens } => match page_of(page) {
                        Some(page) => match sink.delta(page, &text, tokens) {
                            Control::Continue => Flow::Continue,
                            Control::StopPage => Flow::StopPage,
                        },
                        None => Flow::StopPage,
                    },
                    TextEvent::Finished { page, stats } => {
                        if let Some(page) = page_of(page).filter(|&p| end(p)) {
                            sink.finished(page, Ok(read_stats(&stats)));
                        }
                        Flow::Continue
                    }
                    TextEvent::Failed { page, error } => {
                        if let Some(page) = page_of(page).filter(|&p| end(p)) {
                            sink.finished(page, Err(error));
                        }
                        Flow::Continue
                    }
                    TextEvent::FewerSlots { slots } => {
                        sink.fewer_pages_at_once(slots);
                        Flow::Continue
                    }
                }
            })?;
        tracing::info!(?report, "reading scheduled");
        Ok(())
    }
}

/// Which pipeline page each engine page is (the engine numbers pages in the order it takes them), which
/// pages are in flight, and whether the pipeline has no more.
#[derive(Default)]
struct Book {
    numbers: Vec<usize>,
    open: BTreeSet<usize>,
    ended: bool,
}

/// The pipeline's pages as the engine takes them: each page is started in the sink as it is taken, a page
/// without a model input fails at once, and no page is taken once the reading is cancelled.
struct ModelFeed<'a, 's> {
    pages: &'a mut dyn PageFeed,
    sink: &'a RefCell<&'s mut dyn PageSink>,
    book: &'a RefCell<Book>,
}

impl PageSource for ModelFeed<'_, '_> {
    fn pull(&mut self, wait: bool) -> Pull {
        loop {
            if self.sink.borrow().cancelled() {
                self.book.borrow_mut().ended = true;
                return Pull::End;
            }
            match self.pages.pull(wait) {
                Fed::Page(page) => {
                    self.sink.borrow_mut().started(page.page);
                    let Some(input) = page.model_input else {
                        let error = "the page was not prepared for the model".to_owned();
                        self.sink.borrow_mut().finished(page.page, Err(error));
                        continue;
                    };
                    let mut book = self.book.borrow_mut();
                    book.numbers.push(page.page);
                    book.open.insert(page.page);
                    return Pull::Page(input);
                }
                Fed::NotReady => return Pull::NotReady,
                Fed::End => {
                    self.book.borrow_mut().ended = true;
                    return Pull::End;
                }
            }
        }
    }
}

fn read_stats(stats: &deepread_engine::PageStats) -> ReadStats {
    ReadStats {
        prompt_tokens: stats.prompt_tokens,
        generated_tokens: stats.generated_tokens,
        vision_ms: stats.vision_ms as u64,
        prefill_ms: stats.prefill_ms as u64,
        decode_ms: stats.decode_ms as u64,
    }
}

/// A page prepared with the global 1024 px view only: the official preprocessing with its tiles left
/// out, so the global view stays pixel-exact.
pub fn base_only_input(
    tokenizer: &Tokenizer,
    image: &RgbImage,
    prompt: &str,
) -> Result<deepread_engine::PageInput, String> {
    let prepared =
        preprocess_global_only(image, &PreprocessConfig::default()).map_err(|e| e.to_string())?;
    let prompt_ids =
        build_prompt_ids(tokenizer, prompt, prepared.image_tokens).map_err(|e| e.to_string())?;
    Ok(deepread_engine::PageInput {
        prompt_ids,
        image: Some(PageImage::from(prepared)),
    })
}

/// Names the model files and every setting that changes the output.
fn fingerprint(
    files: &Sha256,
    mode: ReadingMode,
    resolution: Resolution,
    options: &GenerateOptions,
) -> String {
    let mut hasher = files.clone();
    hasher.update(mode.preset().text().as_bytes());
    // The default adds nothing, so pages cached before resolutions could be chosen stay valid.
    if resolution != Resolution::BaseWithTiles {
        hasher.update(format!("resolution {resolution:?}").as_bytes());
    }
    hasher.update(format!("{options:?}").as_bytes());
    let digest = hex::encode(hasher.finalize());
    format!("deepseek-ocr-2/{}", &digest[..16])
}

/// The model files, hashed in name order (sampled: see `FINGERPRINT_SAMPLE`).
fn hash_model_files(dir: &Path) -> Result<Sha256, ModelError> {
    let mut hasher = Sha256::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| ModelError::Io {
            path: dir.to_path_buf(),
            source,
        })?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| is_model_file(p))
        .collect();
    files.sort();
    for file in &files {
        hash_model_file(&mut hasher, file)?;
    }
    Ok(hasher)
}

fn is_model_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "config.json" || name == "tokenizer.json" || name.ends_with(".safetensors")
}

fn hash_model_file(hasher: &mut Sha256, path: &Path) -> Result<(), ModelError> {
    let io = |source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    hasher.update(
        path.file_name()
            .map(|n| n.as_encoded_bytes())
            .unwrap_or_default(),
    );
    hasher.update(len.to_le_bytes());
    let mut sample = Vec::new();
    file.by_ref()
        .take(FINGERPRINT_SAMPLE)
        .read_to_end(&mut sample)
        .map_err(io)?;
    if len > 2 * FINGERPRINT_SAMPLE {
        file.seek(SeekFrom::End(-(FINGERPRINT_SAMPLE as i64)))
            .map_err(io)?;
        file.read_to_end(&mut sample).map_err(io)?;
    } else {
        file.read_to_end(&mut sample).map_err(io)?;
    }
    hasher.update(&sample);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepread_engine::preprocess::preprocess;

    fn engine_fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../engine/tests/fixtures")
            .join(name)
    }

    fn shared_fixtures() -> PathBuf {
        std::env::var_os("DEEPREAD_FIXTURES")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures")
            })
    }

    fn tokenizer() -> Tokenizer {
        Tokenizer::from_file(&shared_fixtures().join("tokenizer/tokenizer.json")).unwrap()
    }

    /// The model is given an image file's own pixels, as the reference gives it what Pillow decodes: the
    /// Pillow oracle's hash of each losslessly stored image file equals that of the page the model is given.
    #[test]
    fn an_image_file_reaches_the_model_at_its_own_pixels() {
        let oracle = engine_fixture("preprocess/expectations.json");
        let oracle: serde_json::Value =
            serde_json::from_slice(&std::fs::read(oracle).unwrap()).unwrap();
        let mut checked = 0;
        for case in oracle["cases"].as_array().unwrap() {
            let (Some(file), None) = (
                case["source"]["file"].as_str(),
                case["source"]["lossy_source"].as_bool(),
            ) else {
                continue;
            };
            let bytes = std::fs::read(shared_fixtures().join(file)).unwrap();
            let doc = deepread_pdf::Document::from_bytes(bytes.clone(), None).unwrap();
            let page = doc.render_page(0, MODEL_PAGE.image.unwrap()).unwrap();
            let name = case["name"].as_str().unwrap();
            assert_eq!(
                (u64::from(page.width()), u64::from(page.height())),
                (
                    case["width"].as_u64().unwrap(),
                    case["height"].as_u64().unwrap()
                ),
                "{name}"
            );
            // Pillow's RGB drops alpha; we show translucent pixels on white as a viewer does, so only
            // opaque files can match it byte for byte.
            let opaque = image::load_from_memory(&bytes)
                .unwrap()
                .to_rgba8()
                .pixels()
                .all(|px| px[3] == 255);
            if opaque {
                assert_eq!(
                    hex::encode(Sha256::digest(page.as_raw())),
                    case["source_rgb_sha256"].as_str().unwrap(),
                    "{name}"
                );
                checked += 1;
            }
        }
        assert!(
            checked >= 2,
            "{checked} opaque lossless image files in the oracle"
        );
    }

    #[test]
    fn every_reading_setting_has_a_fingerprint_of_its_own_and_the_default_keeps_the_old_one() {
        let files = hash_model_files(&engine_fixture("tiny_native")).unwrap();
        let options = GenerateOptions::default();
        let settings = [
            (ReadingMode::Layout, Resolution::BaseWithTiles),
            (ReadingMode::Layout, Resolution::BaseOnly),
            (ReadingMode::Plain, Resolution::BaseWithTiles),
            (ReadingMode::Plain, Resolution::BaseOnly),
        ];
        let prints: std::collections::HashSet<String> = settings
            .iter()
            .map(|&(mode, resolution)| fingerprint(&files, mode, resolution, &options))
            .collect();
        assert_eq!(prints.len(), settings.len());

        // Before resolutions existed: the files, the prompt, the options. Pages cached then are
        // still found.
        let mut before = files.clone();
        before.update(ReadingMode::Layout.preset().text().as_bytes());
        before.update(format!("{options:?}").as_bytes());
        let before = format!("deepseek-ocr-2/{}", &hex::encode(before.finalize())[..16]);
        assert_eq!(
            fingerprint(
                &files,
                ReadingMode::Layout,
                Resolution::BaseWithTiles,
                &options
            ),
            before
        );
    }

    #[test]
    fn base_only_reads_the_global_view_alone() {
        // An A4 page at 144 dpi: the official crop mode cuts it into 2×3 tiles (spec §3's table).
        let page = RgbImage::from_pixel(1190, 1684, image::Rgb([250, 250, 250]));
        let tokenizer = tokenizer();
        let prompt = ReadingMode::Plain.preset().text();
        let input = base_only_input(&tokenizer, &page, prompt).unwrap();
        let image = input.image.as_ref().unwrap();
        assert_eq!(image.num_tiles, 0);
        assert!(image.tiles.is_empty());
        assert_eq!(image.base_size, 1024);
        assert_eq!(image.global.len(), 3 * 1024 * 1024);
        let placeholders = input.prompt_ids.iter().filter(|&&id| id == 128_815).count();
        assert_eq!(
            placeholders,
            256 + 1,
            "the global view's tokens and the separator"
        );

        let tiled = preprocess(&page, &PreprocessConfig::default()).unwrap();
        assert_eq!(tiled.tile_count(), 6);
        assert_eq!(
            image.global, tiled.global,
            "the same global view as with tiles"
        );
    }

    #[test]
    fn locating_models_skips_the_int8_file_the_engine_writes() {
        assert_eq!(
            deepread_models::INT8_CACHE,
            deepread_engine::quant::INT8_CACHE
        );
    }

    #[test]
    fn reading_settings_arrive_from_the_window_as_camel_case_names() {
        let mode: ReadingMode = serde_json::from_str("\"plain\"").unwrap();
        let resolution: Resolution = serde_json::from_str("\"baseOnly\"").unwrap();
        assert_eq!(
            (mode, resolution),
            (ReadingMode::Plain, Resolution::BaseOnly)
        );
        assert!(serde_json::from_str::<Resolution>("\"tiny\"").is_err());
    }
}
