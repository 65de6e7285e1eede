//! A page joining the slots once its vision is done: its prompt through the LM a chunk at a time, short enough
//! to run between two decode steps, then its first token.

use std::time::Instant;

use candle_core::Tensor;

use super::active::ActivePage;
use super::vision::SeenPage;
use super::PREFILL_CHUNK;
use crate::engine::{Engine, PageInput, PageStats};
use crate::error::{EngineError, Result};
use crate::generate::GenerateOptions;
use crate::lm::SequenceCache;
use crate::model::Model;

/// Decode-cache room reserved beyond the prompt when a page joins; caches grow by fixed steps past it.
pub(super) const INITIAL_DECODE_ROOM: usize = 512;

/// Cache positions a page of `prompt_tokens` needs when it joins.
pub(super) fn initial_positions(prompt_tokens: usize, opts: &GenerateOptions) -> usize {
    prompt_tokens + opts.max_new_tokens.min(INITIAL_DECODE_ROOM)
}

/// The sequence a joining page prefills and how much of it is in its cache.
pub(super) struct Joining {
    index: usize,
    cache: SequenceCache,
    prompt: Vec<u32>,
    /// The prompt's embeddings, which the page keeps.
    embeds: Tensor,
    /// The prompt's embeddings, then for a page taken up again its tokens but the last.
    sequence: Tensor,
    done: usize,
    /// A page set aside and taken up again: it already has its tokens.
    resumed: Option<ActivePage>,
    stats: PageStats,
}

impl Joining {
    /// A new page, seen: its image's embeddings in their prompt places.
    pub(super) fn start(engine: &Engine, page: SeenPage, cache: SequenceCache) -> Result<Self> {
        let embeds = engine
            .model()
            .input_embeddings(&page.prompt_ids, page.image.as_ref())?;
        let mut stats = PageStats::empty(page.prompt_ids.len());
        stats.vision_ms = page.vision_ms;
        Ok(Joining {
            index: page.index,
            cache,
            prompt: page.prompt_ids,
            sequence: embeds.clone(),
            embeds,
            done: 0,
            resumed: None,
            stats,
        })
    }

    /// A page set aside for memory: its prompt and every token but the last go through the LM again.
    pub(super) fn resume(engine: &Engine, page: ActivePage, cache: SequenceCache) -> Result<Self> {
        Ok(Joining {
            index: page.index(),
            cache,
            prompt: page.prompt().to_vec(),
            embeds: page.embeds().clone(),
            sequence: resumed_sequence(engine, &page)?,
            done: 0,
            stats: PageStats::empty(page.prompt().len()),
            resumed: Some(page),
        })
    }

    pub(super) fn index(&self) -> usize {
        self.index
    }

    pub(super) fn cache(&self) -> &SequenceCache {
        &self.cache
    }

    pub(super) fn into_cache(self) -> SequenceCache {
        self.cache
    }

    /// Back to waiting for memory as a page set aside, its cache freed: a new page keeps its embeddings and
    /// has no tokens yet.
    pub(super) fn into_set_aside(self) -> ActivePage {
        if let Some(page) = self.resumed {
            return page;
        }
        let mut page =
            ActivePage::new(self.index, self.prompt, self.embeds, self.cache, self.stats);
        drop(page.take_cache());
        page
    }

    /// Prefills the next chunk; returns the page once it has its first token (or, taken up again, its cache).
    pub(super) fn advance(
        &mut self,
        engine: &Engine,
        opts: &GenerateOptions,
    ) -> Result<Option<ActivePage>> {
        let t0 = Instant::now();
        let model = engine.model();
        let len = self.sequence.dim(0)?;
        let take = PREFILL_CHUNK.min(len - self.done);
        let part = self.sequence.narrow(0, self.done, take)?.unsqueeze(0)?;
        let hidden =
            model
                .text()
                .forward_hidden_with(&part, &mut [&mut self.cache], engine.fused())?;
        self.done += take;
        if self.done < len {
            model.device().synchronize()?;
            self.stats.prefill_ms += ms_since(t0);
            tracing::debug!(
                page = self.index,
                positions = take,
                ms = ms_since(t0),
                "prefill piece"
            );
            return Ok(None);
        }
        let last = hidden.squeeze(0)?.narrow(0, take - 1, 1)?;
        self.finish_prefill(engine, &last, opts, t0).map(Some)
    }

    /// The last chunk is in: the page takes its slot, with its first token when it has none yet.
    fn finish_prefill(
        &mut self,
        engine: &Engine,
        last_hidden: &Tensor,
        opts: &GenerateOptions,
        t0: Instant,
    ) -> Result<ActivePage> {
        let cache = std::mem::replace(&mut self.cache, SequenceCache::new(0, 0));
        let mut page = match self.resumed.take() {
            Some(mut page) => {
                page.put_cache(cache);
                page
            }
            // Its prefill time is added below, once, with the last piece's.
            None => ActivePage::new(
                self.index,
                std::mem::take(&mut self.prompt),
                self.embeds.clone(),
                cache,
                PageStats {
                    prefill_ms: 0.0,
                    ..self.stats.clone()
                },
            ),
        };
        if page.generated() == 0 {
            let logits = engine.model().text().logits(last_hidden)?;
            page.choose(&logits.squeeze(0)?.to_vec1::<f32>()?, opts);
        } else {
            engine.model().device().synchronize()?;
        }
        page.stats_mut().prefill_ms += self.stats.prefill_ms + ms_since(t0);
        tracing::debug!(
            page = self.index,
            vision_ms = self.stats.vision_ms,
            prefill_ms = page.stats_mut().prefill_ms,
            ms = ms_since(t0),
            "page joined after its last prefill piece"
        );
        Ok(page)
    }
}

/// The sequence a page set aside prefills again: its prompt's embeddings, then its tokens but the last.
fn resumed_sequence(engine: &Engine, page: &ActivePage) -> Result<Tensor> {
    let tokens = page.tokens();
    if tokens.len() < 2 {
        return Ok(page.embeds().clone());
    }
    let fed = engine.model().text().embed(&tokens[..tokens.len() - 1])?;
    Ok(Tensor::cat(
        &[page.embeds(), &fed.to_dtype(page.embeds().dtype())?],
        0,
    )?)
}

/// A page's prompt against its image and the model, before any GPU work.
pub(super) fn check_prompt(model: &Model, input: &PageInput) -> Result<()> {
    if input.prompt_ids.is_empty() {
        return Err(EngineError::Input("an empty prompt".into()));
    }
    let image_tokens = input
        .image
        .as_ref()
        .map_or(0, |image| image.image_tokens(model.config()));
    let placeholders = input
        .prompt_ids
        .iter()
        .filter(|&&id| id == model.config().image_token_id)
        .count();
    if placeholders != image_tokens {
        return Err(EngineError::Input(format!(
            "the prompt has {placeholders} <image> tokens but the image gives {image_tokens} embeddings"
        )));
    }
    let max = model.config().text.max_position_embeddings;
    if input.prompt_ids.len() >= max {
        return Err(EngineError::Input(format!(
            "a prompt of {} tokens leaves no room in the model's {max} positions",
            input.prompt_ids.len()
        )));
    }
    Ok(())
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
