//! Several pages in one call: vision and prefill per page, then one batched decode step for every page still
//! generating, each page on its own cache. Tokens are reported as they are chosen.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use candle_core::{DType, Device};

use crate::error::{EngineError, Result};
use crate::generate::{greedy_pick, GenerateOptions};
use crate::lm::{FusedDecoder, SequenceCache};
use crate::model::{Model, PageImage};

/// Decode-cache room reserved up front beyond the prompt; caches grow by fixed steps past it.
const INITIAL_DECODE_ROOM: usize = 512;

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

/// What [`Engine::generate`] reports while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum GenerateEvent {
    /// Page `page` (index into the input slice) generated `token_id`.
    Token { page: usize, token_id: u32 },
    /// Page `page` is done; no more tokens will come for it.
    Finished { page: usize, stats: PageStats },
}

/// A page's result.
#[derive(Debug, Clone, PartialEq)]
pub struct PageOutput {
    /// The generated ids, EOS included when the page ended on it.
    pub tokens: Vec<u32>,
    pub stats: PageStats,
}

/// How decode steps run. Both produce the same tokens up to the order of f32 sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodePath {
    /// The fused GPU kernels where the device has them (CUDA, f32 or bf16), else the reference path.
    Fused,
    /// Stock candle ops, one at a time, as the reference implementation computes: the baseline for checks.
    Reference,
}

/// A loaded model ready to read pages.
#[derive(Debug, Clone)]
pub struct Engine {
    model: Model,
    fused: Option<Arc<FusedDecoder>>,
}

struct PageState<'a> {
    prompt: &'a [u32],
    cache: SequenceCache,
    tokens: Vec<u32>,
    /// Tokens already sent to the callback.
    reported: usize,
    vision_ms: f64,
    prefill_ms: f64,
    decode_ms: f64,
    finish: Option<FinishReason>,
}

impl Engine {
    /// An engine on the fused decode path where the model's device supports it.
    pub fn new(model: Model) -> Result<Self> {
        let fused = FusedDecoder::new(model.text(), model.device(), model.dtype())?.map(Arc::new);
        Ok(Self { model, fused })
    }

    /// [`Model::load`] wrapped in an engine.
    pub fn load(dir: &Path, device: &Device, dtype: DType) -> Result<Self> {
        Self::new(Model::load(dir, device, dtype)?)
    }

    /// The same engine on `path` (a fused decoder already built is kept, not built again).
    pub fn with_decode_path(mut self, path: DecodePath) -> Result<Self> {
        self.fused = match path {
            DecodePath::Reference => None,
            DecodePath::Fused if self.fused.is_some() => self.fused,
            DecodePath::Fused => {
                FusedDecoder::new(self.model.text(), self.model.device(), self.model.dtype())?
                    .map(Arc::new)
            }
        };
        Ok(self)
    }

    /// The path decode steps take.
    pub fn decode_path(&self) -> DecodePath {
        if self.fused.is_some() {
            DecodePath::Fused
        } else {
            DecodePath::Reference
        }
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Greedy-decode every page. `on_event` receives each token as soon as it is chosen (and may stop that
    /// page) and a `Finished` event per page. Returns the pages' outputs in input order.
    pub fn generate<F: FnMut(GenerateEvent) -> Flow>(
        &self,
        pages: &[PageInput],
        opts: &GenerateOptions,
        mut on_event: F,
    ) -> Result<Vec<PageOutput>> {
        let eos = opts
            .eos_token_id
            .unwrap_or(self.model.config().text.eos_token_id);
        let mut states = Vec::with_capacity(pages.len());
        for (index, page) in pages.iter().enumerate() {
            let mut state = self.start_page(page, opts)?;
            if opts.max_new_tokens == 0 {
                state.finish = Some(FinishReason::MaxNewTokens);
            }
            self.report_new(index, &mut state, eos, opts, &mut on_event);
            states.push(state);
        }
        while states.iter().any(|s| s.finish.is_none()) {
            let was_active: Vec<bool> = states.iter().map(|s| s.finish.is_none()).collect();
            self.decode_step(&mut states, opts)?;
            for (index, state) in states.iter_mut().enumerate() {
                if was_active[index] {
                    self.report_new(index, state, eos, opts, &mut on_event);
                }
            }
        }
        Ok(states
            .into_iter()
            .map(|s| {
                let stats = stats_of(&s);
                PageOutput {
                    tokens: s.tokens,
                    stats,
                }
            })
            .collect())
    }

    /// Vision, merge and prefill of one page; chooses its first token.
    fn start_page<'a>(&self, page: &'a PageInput, opts: &GenerateOptions) -> Result<PageState<'a>> {
        if page.prompt_ids.is_empty() {
            return Err(EngineError::Input("an empty prompt".into()));
        }
        let t0 = Instant::now();
        let image = page
            .image
            .as_ref()
            .map(|img| self.model.image_features(img))
            .transpose()?;
        // Waits for the vision work, so that the stats split the page's time where it is spent.
        self.model.device().synchronize()?;
        let vision_ms = ms_since(t0);
        let t1 = Instant::now();
        let embeds = self
            .model
            .input_embeddings(&page.prompt_ids, image.as_ref())?;
        let room = opts.max_new_tokens.min(INITIAL_DECODE_ROOM);
        let (hidden, cache) = self.model.prefill_with(
            &embeds,
            page.prompt_ids.len() + room,
            self.fused.as_deref(),
        )?;
        let last = hidden.narrow(0, hidden.dim(0)? - 1, 1)?;
        let logits = self
            .model
            .text()
            .logits(&last)?
            .squeeze(0)?
            .to_vec1::<f32>()?;
        let mut state = PageState {
            prompt: &page.prompt_ids,
            cache,
            tokens: Vec::new(),
            reported: 0,
            vision_ms,
            prefill_ms: 0.0,
            decode_ms: 0.0,
            finish: None,
        };
        if opts.max_new_tokens > 0 {
            choose(&mut state, &logits, opts);
        }
        state.prefill_ms = ms_since(t1);
        tracing::debug!(
            prompt = page.prompt_ids.len(),
            vision_ms,
            prefill_ms = state.prefill_ms,
            "page prefilled"
        );
        Ok(state)
    }

    /// One token for every unfinished page, in one batched LM pass.
    fn decode_step(&self, states: &mut [PageState<'_>], opts: &GenerateOptions) -> Result<()> {
        let t0 = Instant::now();
        let max_pos = self.model.config().text.max_position_embeddings;
        for s in states.iter_mut().filter(|s| s.finish.is_none()) {
            if s.cache.len() >= max_pos {
                s.finish = Some(FinishReason::ContextFull);
            }
        }
        let mut active: Vec<&mut PageState<'_>> =
            states.iter_mut().filter(|s| s.finish.is_none()).collect();
        if active.is_empty() {
            return Ok(());
        }
        // Each active page feeds back its last token; it is in the vocabulary since the LM produced it.
        let last: Vec<u32> = active
            .iter()
            .map(|s| s.tokens.last().copied().unwrap_or(0))
            .collect();
        let bans: Vec<Vec<u32>> = active
            .iter()
            .map(|s| opts.no_repeat_ngram.banned(s.prompt, &s.tokens))
            .collect();
        let fused = match &self.fused {
            Some(fused) => {
                let mut caches: Vec<&mut SequenceCache> =
                    active.iter_mut().map(|s| &mut s.cache).collect();
                fused.step(self.model.text(), &last, &mut caches, &bans)?
            }
            None => None,
        };
        let chosen = match fused {
            Some(chosen) => chosen,
            None => self.reference_step(&mut active, &last, &bans)?,
        };
        let elapsed = ms_since(t0);
        for (state, token) in active.iter_mut().zip(chosen) {
            match token {
                Some(token) => state.tokens.push(token),
                None => state.finish = Some(FinishReason::AllBanned),
            }
            state.decode_ms += elapsed;
        }
        Ok(())
    }

    /// The decode step on stock ops: logits to the host, the greedy choice there.
    fn reference_step(
        &self,
        active: &mut [&mut PageState<'_>],
        last: &[u32],
        bans: &[Vec<u32>],
    ) -> Result<Vec<Option<u32>>> {
        let x = self.model.text().embed(last)?.unsqueeze(1)?;
        let hidden = {
            let mut caches: Vec<&mut SequenceCache> =
                active.iter_mut().map(|s| &mut s.cache).collect();
            self.model.text().forward_hidden(&x, &mut caches)?
        };
        let logits: Vec<Vec<f32>> = self
            .model
            .text()
            .logits(&hidden.squeeze(1)?)?
            .to_vec2::<f32>()?;
        Ok(logits
            .iter()
            .zip(bans)
            .map(|(row, banned)| greedy_pick(row, banned))
            .collect())
    }

    /// Emit the page's newest token and, when it stopped, its `Finished` event.
    fn report_new<F: FnMut(GenerateEvent) -> Flow>(
        &self,
        page: usize,
        state: &mut PageState<'_>,
        eos: u32,
        opts: &GenerateOptions,
        on_event: &mut F,
    ) {
        if state.tokens.len() > state.reported {
            let token_id = state.tokens[state.tokens.len() - 1];
            state.reported = state.tokens.len();
            let flow = on_event(GenerateEvent::Token { page, token_id });
            if state.finish.is_none() && flow == Flow::StopPage {
                state.finish = Some(FinishReason::Stopped);
            }
            if state.finish.is_none() {
                if token_id == eos {
                    state.finish = Some(FinishReason::Eos);
                } else if state.tokens.len() >= opts.max_new_tokens {
                    state.finish = Some(FinishReason::MaxNewTokens);
                }
            }
        }
        if state.finish.is_some() {
            on_event(GenerateEvent::Finished {
                page,
                stats: stats_of(state),
            });
        }
    }
}

/// Greedy choice under the n-gram ban; appends the token or marks the page finished.
fn choose(state: &mut PageState<'_>, logits: &[f32], opts: &GenerateOptions) {
    let banned = opts.no_repeat_ngram.banned(state.prompt, &state.tokens);
    match greedy_pick(logits, &banned) {
        Some(token) => state.tokens.push(token),
        None => state.finish = Some(FinishReason::AllBanned),
    }
}

fn stats_of(s: &PageState<'_>) -> PageStats {
    PageStats {
        prompt_tokens: s.prompt.len(),
        generated_tokens: s.tokens.len(),
        vision_ms: s.vision_ms,
        prefill_ms: s.prefill_ms,
        decode_ms: s.decode_ms,
        finish: s.finish.unwrap_or(FinishReason::MaxNewTokens),
    }
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
