//! Reading page images end to end: preprocessing, the prompt, generation, and the generated ids
//! turned back into text as it streams. What the CLI and the reading pipeline call.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device};
use image::RgbImage;

use crate::engine::{Engine, Flow, GenerateEvent, PageInput, PageOutput, PageStats};
use crate::error::{EngineError, Result};
use crate::generate::GenerateOptions;
use crate::model::{Model, PageImage};
use crate::preprocess::{preprocess, PreprocessConfig};
use crate::prompt::{build_prompt_ids, TextStreamer, Tokenizer};
use crate::quant::WeightFormat;
use crate::scheduler::{PageSource, Schedule, ScheduleReport};

/// What [`Ocr::read`] reports while pages are generated.
#[derive(Debug, Clone, PartialEq)]
pub enum TextEvent {
    /// New text of page `page` (index into the input slice), UTF-8 whole, special tags kept as text;
    /// `tokens` generated ids produced it.
    Text {
        page: usize,
        text: String,
        tokens: usize,
    },
    Finished {
        page: usize,
        stats: PageStats,
    },
    /// The page could not be read; the others go on.
    Failed {
        page: usize,
        error: String,
    },
    /// GPU memory ran short: at most `slots` pages decode together from now on (once per reading).
    FewerSlots {
        slots: usize,
    },
}

/// A model with its tokenizer and preprocessing.
pub struct Ocr {
    engine: Engine,
    tokenizer: Tokenizer,
    preprocess: PreprocessConfig,
}

impl Ocr {
    /// Loads `dir` (config.json, tokenizer.json, safetensors).
    pub fn load(dir: &Path, device: &Device, dtype: DType) -> Result<Self> {
        Self::load_as(dir, device, dtype, WeightFormat::Dense)
    }

    /// [`Ocr::load`] with the language model's weights in `format` ([`Model::load_as`]).
    pub fn load_as(
        dir: &Path,
        device: &Device,
        dtype: DType,
        format: WeightFormat,
    ) -> Result<Self> {
        let tokenizer =
            Tokenizer::from_model_dir(dir).map_err(|e| EngineError::Input(e.to_string()))?;
        Ok(Ocr {
            engine: Engine::new(Model::load_as(dir, device, dtype, format)?)?,
            tokenizer,
            preprocess: PreprocessConfig::default(),
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// One page image and its prompt (which holds one `<image>`), ready for [`Ocr::read`].
    pub fn prepare(&self, image: &RgbImage, prompt: &str) -> Result<PageInput> {
        let prepared =
            preprocess(image, &self.preprocess).map_err(|e| EngineError::Input(e.to_string()))?;
        let prompt_ids = build_prompt_ids(&self.tokenizer, prompt, prepared.image_tokens)
            .map_err(|e| EngineError::Input(e.to_string()))?;
        Ok(PageInput {
            prompt_ids,
            image: Some(PageImage::from(prepared)),
        })
    }

    /// Generates every page of `pages` as one group, streaming each page's text through `on_event`; the
    /// callback may stop a page. Returns the pages' outputs in input order.
    pub fn read<F: FnMut(TextEvent) -> Flow>(
        &self,
        pages: &[PageInput],
        options: &GenerateOptions,
        mut on_event: F,
    ) -> Result<Vec<PageOutput>> {
        let mut texts = TextEvents::new(&self.tokenizer);
        self.engine
            .generate(pages, options, |event| texts.handle(event, &mut on_event))
    }

    /// Reads the pages of `source` under `schedule` (continuous batching: [`Schedule::for_engine`]),
    /// streaming each page's text through `on_event` as it is generated; the callback may stop a page.
    /// Pages are numbered in the order the source gives them.
    pub fn read_pages(
        &self,
        source: &mut dyn PageSource,
        schedule: &Schedule,
        options: &GenerateOptions,
        on_event: &mut dyn FnMut(TextEvent) -> Flow,
    ) -> Result<ScheduleReport> {
        let mut texts = TextEvents::new(&self.tokenizer);
        self.engine
            .read_pages(source, schedule, options, &mut |event| {
                texts.handle(event, on_event)
            })
    }
}

/// Generated ids turned into text events, page by page.
struct TextEvents<'a> {
    tokenizer: &'a Tokenizer,
    streams: HashMap<usize, Stream<'a>>,
}

impl<'a> TextEvents<'a> {
    fn new(tokenizer: &'a Tokenizer) -> Self {
        TextEvents {
            tokenizer,
            streams: HashMap::new(),
        }
    }

    fn handle(
        &mut self,
        event: GenerateEvent,
        on_event: &mut dyn FnMut(TextEvent) -> Flow,
    ) -> Flow {
        match event {
            GenerateEvent::Token { page, token_id } => {
                let stream = self
                    .streams
                    .entry(page)
                    .or_insert_with(|| Stream::new(self.tokenizer));
                match stream.push(token_id) {
                    Some(text) => on_event(TextEvent::Text {
                        page,
                        text,
                        tokens: stream.take_tokens(),
                    }),
                    None => Flow::Continue,
                }
            }
            GenerateEvent::Finished { page, stats } => {
                if let Some(mut stream) = self.streams.remove(&page) {
                    if let Some(text) = stream.finish() {
                        let tokens = stream.take_tokens();
                        on_event(TextEvent::Text { page, text, tokens });
                    }
                }
                on_event(TextEvent::Finished { page, stats })
            }
            GenerateEvent::Failed { page, error } => {
                self.streams.remove(&page);
                on_event(TextEvent::Failed { page, error })
            }
            GenerateEvent::FewerSlots { slots } => on_event(TextEvent::FewerSlots { slots }),
        }
    }
}

/// One page's ids becoming text; counts the ids behind text not yet reported.
struct Stream<'a> {
    streamer: TextStreamer<'a>,
    pending_tokens: usize,
}

impl<'a> Stream<'a> {
    fn new(tokenizer: &'a Tokenizer) -> Self {
        Stream {
            streamer: TextStreamer::new(tokenizer),
            pending_tokens: 0,
        }
    }

    fn push(&mut self, id: u32) -> Option<String> {
        self.pending_tokens += 1;
        // A token that cannot be decoded yields no text; the next whole character carries it.
        let text = self.streamer.push(id).ok()?;
        (!text.is_empty()).then_some(text)
    }

    fn finish(&mut self) -> Option<String> {
        let text = self.streamer.finish().ok()?;
        (!text.is_empty()).then_some(text)
    }

    fn take_tokens(&mut self) -> usize {
        std::mem::take(&mut self.pending_tokens)
    }
}
