//! DeepSeek-OCR-2, in process: pages rendered at the reference's 144 dpi, read several at a time by
//! `deepread-engine`, their text streamed to the pipeline as it is generated.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use deepread_engine::prompt::PromptPreset;
use deepread_engine::{
    default_device, EngineError, Flow, GenerateOptions, Ocr, PageOutput, TextEvent,
};
use deepread_pdf::RenderSize;
use sha2::{Digest, Sha256};

use super::{Control, PageInput, PageNeeds, PageSink, ReadStats, Recognizer};

/// The official PDF script renders pages at zoom 2 of 72 dpi.
pub const RENDER_DPI: f32 = 144.0;
/// Bytes sampled from each end of a weights file for the fingerprint (hashing 6.8 GB at every start
/// would take seconds; the header names every tensor's shape and offset, the samples its data).
const FINGERPRINT_SAMPLE: u64 = 1 << 20;

/// Which of the official prompts to read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadingMode {
    /// "Document with layout": Markdown with grounding boxes.
    Layout,
    /// "Plain text": Markdown only.
    Plain,
}

/// Where model weights are looked for when no folder is named: `DEEPREAD_MODEL`, else
/// `models/DeepSeek-OCR-2` (models/README.md).
pub fn default_model_dir() -> PathBuf {
    std::env::var_os("DEEPREAD_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("models/DeepSeek-OCR-2"))
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
    #[error("no DeepSeek-OCR-2 weights in {0}: put the model's files there (see models/README.md), or read born-digital PDFs through their text layer")]
    Missing(PathBuf),
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
    ocr: Ocr,
    mode: ReadingMode,
    options: GenerateOptions,
    in_flight: usize,
    fingerprint: String,
}

impl DeepSeekOcr2 {
    /// Loads the model in `dir` on the best device there is.
    pub fn load(dir: &Path, mode: ReadingMode, in_flight: usize) -> Result<Self, ModelError> {
        if !dir.join("config.json").is_file() {
            return Err(ModelError::Missing(dir.to_path_buf()));
        }
        let (device, dtype) = default_device();
        tracing::info!(dir = %dir.display(), ?device, ?dtype, "loading DeepSeek-OCR-2");
        let ocr = Ocr::load(dir, &device, dtype).map_err(|source| ModelError::Load {
            dir: dir.to_path_buf(),
            source,
        })?;
        let options = GenerateOptions::default();
        let fingerprint = fingerprint(dir, mode, &options)?;
        Ok(DeepSeekOcr2 {
            ocr,
            mode,
            options,
            in_flight: in_flight.max(1),
            fingerprint,
        })
    }

    /// Reads one batch; on an out-of-memory error, reads it again with fewer pages at a time.
    fn read_batch(&self, batch: &[PageInput], sink: &mut dyn PageSink) {
        let prepared: Vec<_> = batch
            .iter()
            .map(|page| {
                let image = page
                    .image
                    .as_ref()
                    .ok_or_else(|| "the page was not rendered".to_owned())?;
                self.ocr
                    .prepare(image, self.mode.preset().text())
                    .map_err(|e| e.to_string())
            })
            .collect();
        let mut ready = Vec::new();
        let mut pages = Vec::new();
        for (page, input) in batch.iter().zip(prepared) {
            sink.started(page.page);
            match input {
                Ok(input) => {
                    ready.push(input);
                    pages.push(page.page);
                }
                Err(error) => sink.finished(page.page, Err(error)),
            }
        }
        if let Err(error) = self.generate(&ready, &pages, sink) {
            let message = error.to_string();
            if is_out_of_memory(&message) && batch.len() > 1 {
                tracing::warn!(
                    pages = batch.len(),
                    "out of GPU memory; reading fewer pages at a time"
                );
                let (first, second) = batch.split_at(batch.len() / 2);
                self.read_batch(first, sink);
                self.read_batch(second, sink);
            } else {
                for page in pages {
                    sink.finished(page, Err(message.clone()));
                }
            }
        }
    }

    fn generate(
        &self,
        inputs: &[deepread_engine::PageInput],
        pages: &[usize],
        sink: &mut dyn PageSink,
    ) -> Result<Vec<PageOutput>, EngineError> {
        self.ocr.read(inputs, &self.options, |event| match event {
            TextEvent::Text { page, text, tokens } => {
                match sink.delta(pages[page], &text, tokens) {
                    Control::Continue => Flow::Continue,
                    Control::StopPage => Flow::StopPage,
                }
            }
            TextEvent::Finished { page, stats } => {
                sink.finished(pages[page], Ok(read_stats(&stats)));
                Flow::Continue
            }
        })
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
        PageNeeds {
            image: Some(RenderSize::Dpi(RENDER_DPI)),
            text_layer: false,
        }
    }

    fn read(&self, pages: &mut dyn Iterator<Item = PageInput>, sink: &mut dyn PageSink) {
        loop {
            if sink.cancelled() {
                break;
            }
            let batch: Vec<PageInput> = (&mut *pages).take(self.in_flight).collect();
            if batch.is_empty() {
                break;
            }
            self.read_batch(&batch, sink);
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

fn is_out_of_memory(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("out of memory") || message.contains("out_of_memory")
}

/// Names the model files and every setting that changes the output.
fn fingerprint(
    dir: &Path,
    mode: ReadingMode,
    options: &GenerateOptions,
) -> Result<String, ModelError> {
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
    hasher.update(mode.preset().text().as_bytes());
    hasher.update(format!("{options:?}").as_bytes());
    let digest = hex::encode(hasher.finalize());
    Ok(format!("deepseek-ocr-2/{}", &digest[..16]))
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
