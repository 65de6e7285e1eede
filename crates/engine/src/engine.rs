//! A loaded model ready to read pages, and what reading reports: tokens as they are chosen, per-page figures.
//! How pages share the GPU is `crate::scheduler`'s concern.

use std::sync::Arc;

use crate::error::{EngineError, Result};
use crate::generate::GenerateOptions;
use crate::lm::{FusedDecoder, Sums};
use crate::model::{Model, PageImage};
use crate::scheduler::Schedule;

/// One page to read: its prompt token ids (BOS, `<image>` run, prompt text) and its preprocessed image.
#[derive(Debug, Clone, PartialEq)]
pub struct PageInput {
    pub prompt_ids: Vec<u32>,
    /// `None` for a text-only prompt (no `<image>` tokens allowed then).
    pub image: Option<PageImage>,
}

/// Why a page stopped generating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// The EOS token was generated (it is the page's last token).
    Eos,
    /// `max_new_tokens` were generated without EOS (a runaway page in the reference's terms).
    MaxNewTokens,
    /// The sequence reached `max_position_embeddings`.
    ContextFull,
    /// The n-gram ban removed every token of the vocabulary.
    AllBanned,
    /// The caller asked to stop the page (it loops, or the user stopped it).
    Stopped,
}

/// The caller's answer to each generated token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Generate no more for this page; the others go on.
    StopPage,
}

/// Per-page measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct PageStats {
    pub prompt_tokens: usize,
    pub generated_tokens: usize,
    /// SAM + encoder + projector for this page's views.
    pub vision_ms: f64,
    /// Embedding merge and the LM pass over the prompt, including the first token's choice.
    pub prefill_ms: f64,
    /// Wall time of the batched decode steps this page took part in.
    pub decode_ms: f64,
    pub finish: FinishReason,
}

/// What [`Engine::generate`] and [`Engine::read_pages`] report while they run.
#[derive(Debug, Clone, PartialEq)]
pub enum GenerateEvent {
    /// Page `page` (its index in the order the pages came) generated `token_id`.
    Token { page: usize, token_id: u32 },
    /// Page `page` is done; no more tokens will come for it.
    Finished { page: usize, stats: PageStats },
    /// Page `page` could not be read (its input is unusable, or it does not fit the GPU even alone); the
    /// other pages go on.
    Failed { page: usize, error: String },
    /// GPU memory ran short: from now on at most `slots` pages decode together. Reported once per reading;
    /// no page is lost (one set aside goes on later from where it was).
    FewerSlots { slots: usize },
}

/// A page's result.
#[derive(Debug, Clone, PartialEq)]
pub struct PageOutput {
    /// The generated ids, EOS included when the page ended on it.
    pub tokens: Vec<u32>,
    pub stats: PageStats,
}

/// How decode steps run. All produce the same tokens up to the order of f32 sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodePath {
    /// The fused GPU kernels where the device has them (CUDA, f32 or bf16), else the reference path, each
    /// step summed however is fastest for its batch size: a page's tokens may differ (at near-ties) with the
    /// pages beside it.
    Fused,
    /// The default: the fused kernels, each output summed in the same order whatever the batch size, so a
    /// page's tokens do not depend on the pages beside it; up to a fifth slower a step than
    /// [`DecodePath::Fused`] in bf16 and 43 % at one int8 page, faster at 16 int8 pages (docs/benchmarks.md).
    FusedBatchInvariant,
    /// Stock candle ops, one at a time, as the reference implementation computes: the baseline for checks.
    Reference,
}

impl DecodePath {
    /// How the path's fused step sums; None for the reference path.
    fn sums(self) -> Option<Sums> {
        match self {
            DecodePath::Fused => Some(Sums::Fastest),
            DecodePath::FusedBatchInvariant => Some(Sums::BatchInvariant),
            DecodePath::Reference => None,
        }
    }
}

/// A loaded model ready to read pages.
#[derive(Debug, Clone)]
pub struct Engine {
    model: Model,
    fused: Option<Arc<FusedDecoder>>,
}

impl Engine {
    /// An engine on the fused decode path where the model's device supports it, batch-invariant (a page reads
    /// the same alone or among others; see [`DecodePath::FusedBatchInvariant`]).
    pub fn new(model: Model) -> Result<Self> {
        let (text, device, dtype) = (model.text(), model.device(), model.dtype());
        let fused = FusedDecoder::new(text, device, dtype, Sums::BatchInvariant)?.map(Arc::new);
        Ok(Self { model, fused })
    }

    /// The same engine on `path` (a fused decoder already built that sums as asked is kept, not built again).
    pub fn with_decode_path(mut self, path: DecodePath) -> Result<Self> {
        let Some(sums) = path.sums() else {
            self.fused = None;
            return Ok(self);
        };
        if self.fused.as_ref().is_none_or(|f| f.sums() != sums) {
            let (text, device, dtype) =
                (self.model.text(), self.model.device(), self.model.dtype());
            self.fused = FusedDecoder::new(text, device, dtype, sums)?.map(Arc::new);
        }
        Ok(self)
    }

    /// The path decode steps take.
    pub fn decode_path(&self) -> DecodePath {
        match self.fused.as_ref().map(|f| f.sums()) {
            Some(Sums::Fastest) => DecodePath::Fused,
            Some(Sums::BatchInvariant) => DecodePath::FusedBatchInvariant,
            None => DecodePath::Reference,
        }
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The fused decoder, where decode steps run on it.
    pub(crate) fn fused(&self) -> Option<&FusedDecoder> {
        self.fused.as_deref()
    }

    /// Greedy-decode every page as one group: every page joins, then they decode together until the last
    /// ends (the batch the benchmarks time). `on_event` receives each token as soon as it is chosen (and may
    /// stop that page) and a `Finished` event per page. Returns the pages' outputs in input order; a page
    /// that cannot be read fails the call. [`Engine::read_pages`] reads a stream of pages with continuous
    /// batching instead.
    pub fn generate<F: FnMut(GenerateEvent) -> Flow>(
        &self,
        pages: &[PageInput],
        opts: &GenerateOptions,
        mut on_event: F,
    ) -> Result<Vec<PageOutput>> {
        let mut outputs: Vec<PageOutput> = pages
            .iter()
            .map(|page| PageOutput {
                tokens: Vec::new(),
                stats: PageStats::empty(page.prompt_ids.len()),
            })
            .collect();
        let mut failure = None;
        let schedule = Schedule::grouped(pages.len().max(1));
        self.read_pages(&mut pages.iter().cloned(), &schedule, opts, &mut |event| {
            match &event {
                GenerateEvent::Token { page, token_id } => outputs[*page].tokens.push(*token_id),
                GenerateEvent::Finished { page, stats } => outputs[*page].stats = stats.clone(),
                GenerateEvent::Failed { error, .. } => {
                    failure.get_or_insert_with(|| error.clone());
                }
                GenerateEvent::FewerSlots { .. } => {}
            }
            on_event(event)
        })?;
        match failure {
            Some(error) => Err(EngineError::Input(error)),
            None => Ok(outputs),
        }
    }
}

impl PageStats {
    /// A page that has not generated yet.
    pub(crate) fn empty(prompt_tokens: usize) -> Self {
        PageStats {
            prompt_tokens,
            generated_tokens: 0,
            vision_ms: 0.0,
            prefill_ms: 0.0,
            decode_ms: 0.0,
            finish: FinishReason::MaxNewTokens,
        }
    }
}
