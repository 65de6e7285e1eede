//! Reading page images end to end: preprocessing, the prompt, generation, and the generated ids
//! turned back into text as it streams. What the CLI and the reading pipeline call.

use std::path::Path;

use candle_core::{DType, Device};
use image::RgbImage;

use crate::engine::{Engine, Flow, GenerateEvent, PageInput, PageOutput, PageStats};
use crate::error::{EngineError, Result};
use crate::generate::GenerateOptions;
use crate::model::PageImage;
use crate::preprocess::{preprocess, PreprocessConfig};
use crate::prompt::{build_prompt_ids, TextStreamer, Tokenizer};

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
        let tokenizer =
            Tokenizer::from_model_dir(dir).map_err(|e| EngineError::Input(e.to_string()))?;
        Ok(Ocr {
            engine: Engine::load(dir, device, dtype)?,
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
            image: Some(PageImage::from(&prepared)),
        })
    }

    /// Generates every page, streaming each page's text through `on_event`; the callback may stop
    /// a page.
    pub fn read<F: FnMut(TextEvent) -> Flow>(
        &self,
        pages: &[PageInput],
        options: &GenerateOptions,
        mut on_event: F,
    ) -> Result<Vec<PageOutput>> {
        let mut streams: Vec<Stream<'_>> =
            pages.iter().map(|_| Stream::new(&self.tokenizer)).collect();
        self.engine.generate(pages, options, |event| match event {
            GenerateEvent::Token { page, token_id } => {
                let Some(stream) = streams.get_mut(page) else {
                    return Flow::StopPage;
                };
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
                if let Some(text) = streams.get_mut(page).and_then(Stream::finish) {
                    let tokens = streams.get_mut(page).map_or(0, Stream::take_tokens);
                    on_event(TextEvent::Text { page, text, tokens });
                }
                on_event(TextEvent::Finished { page, stats })
            }
        })
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
