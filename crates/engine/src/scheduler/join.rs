//! A page joining the slots, in pieces short enough to run between two decode steps: each view of its image
//! through the vision tower, then its prompt through the LM a chunk at a time, then its first token.

use std::time::Instant;

use candle_core::Tensor;

use super::active::ActivePage;
use super::PREFILL_CHUNK;
use crate::engine::{Engine, PageInput, PageStats};
use crate::error::{EngineError, Result};
use crate::generate::GenerateOptions;
use crate::lm::SequenceCache;
use crate::model::{Model, PageImage};

/// Decode-cache room reserved beyond the prompt when a page joins; caches grow by fixed steps past it.
pub(super) const INITIAL_DECODE_ROOM: usize = 512;

/// Cache positions a page needs when it joins.
pub(super) fn initial_positions(input: &PageInput, opts: &GenerateOptions) -> usize {
    input.prompt_ids.len() + opts.max_new_tokens.min(INITIAL_DECODE_ROOM)
}

pub(super) struct Joining {
    index: usize,
    cache: SequenceCache,
    stage: Stage,
    stats: PageStats,
}

enum Stage {
    /// Views done so far, tiles first, then the global view.
    Vision {
        input: PageInput,
        views: Vec<Tensor>,
    },
    /// The sequence to prefill and how much of it is in the cache.
    Prefill {
        prompt: Vec<u32>,
        embeds: Tensor,
        sequence: Tensor,
        done: usize,
        /// A page set aside and taken up again: it already has its tokens.
        resumed: Option<ActivePage>,
    },
}

/// What a joining page becomes when memory is short: it waits as it was before it began joining.
pub(super) enum Waiting {
    New(usize, PageInput),
    SetAside(ActivePage),
}

impl Joining {
    /// A new page, its prompt checked before any GPU work.
    pub(super) fn start(
        engine: &Engine,
        index: usize,
        input: PageInput,
        cache: SequenceCache,
    ) -> Result<Self> {
        check_prompt(engine.model(), &input)?;
        let stats = PageStats::empty(input.prompt_ids.len());
        Ok(Joining {
            index,
            cache,
            stage: Stage::Vision {
                input,
                views: Vec::new(),
            },
            stats,
        })
    }

    /// A page set aside for memory: its prompt and every token but the last go through the LM again.
    pub(super) fn resume(engine: &Engine, page: ActivePage, cache: SequenceCache) -> Result<Self> {
        let (prompt, embeds) = (page.prompt().to_vec(), page.embeds().clone());
        Ok(Joining {
            index: page.index(),
            cache,
            stats: PageStats::empty(prompt.len()),
            stage: Stage::Prefill {
                prompt,
                sequence: resumed_sequence(engine, &page)?,
                embeds,
                done: 0,
                resumed: Some(page),
            },
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

    /// Back to waiting, its work so far dropped and its cache freed.
    pub(super) fn into_waiting(self) -> Waiting {
        match self.stage {
            Stage::Vision { input, .. } => Waiting::New(self.index, input),
            Stage::Prefill {
                resumed: Some(page),
                ..
            } => Waiting::SetAside(page),
            Stage::Prefill { prompt, embeds, .. } => {
                // Not yet decoding: it waits as a page set aside with no tokens, its embeddings kept.
                let stats = PageStats::empty(prompt.len());
                let mut page = ActivePage::new(self.index, prompt, embeds, self.cache, stats);
                drop(page.take_cache());
                Waiting::SetAside(page)
            }
        }
    }

    /// Runs the next piece; returns the page once it has its first token (or, taken up again, its cache).
    pub(super) fn advance(
        &mut self,
        engine: &Engine,
        opts: &GenerateOptions,
    ) -> Result<Option<ActivePage>> {
        let t0 = Instant::now();
        let model = engine.model();
        match &mut self.stage {
            Stage::Vision { input, views } => {
                let piece = match &input.image {
                    Some(image) => view_piece(model, image, views)?,
                    None => "no image",
                };
                let done = input
                    .image
                    .as_ref()
                    .is_none_or(|image| views.len() == Model::view_count(image));
                // Waits for the work, so that the stats split the page's time where it is spent.
                model.device().synchronize()?;
                self.stats.vision_ms += ms_since(t0);
                tracing::debug!(page = self.index, piece, ms = ms_since(t0), "vision piece");
                if done {
                    self.stage = self.prefill_stage(model)?;
                }
                Ok(None)
            }
            Stage::Prefill { sequence, done, .. } => {
                let len = sequence.dim(0)?;
                let take = PREFILL_CHUNK.min(len - *done);
                let part = sequence.narrow(0, *done, take)?.unsqueeze(0)?;
                let hidden = model.text().forward_hidden_with(
                    &part,
                    &mut [&mut self.cache],
                    engine.fused(),
                )?;
                *done += take;
                if *done < len {
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
        }
    }

    /// Every view is through the vision tower: the prompt's embeddings, to prefill.
    fn prefill_stage(&mut self, model: &Model) -> Result<Stage> {
        let Stage::Vision { input, views } = &mut self.stage else {
            return Err(EngineError::Input("a page left vision twice".into()));
        };
        let image = match views.is_empty() {
            true => None,
            false => Some(model.vision().assemble(views)?),
        };
        let embeds = model.input_embeddings(&input.prompt_ids, image.as_ref())?;
        Ok(Stage::Prefill {
            prompt: std::mem::take(&mut input.prompt_ids),
            sequence: embeds.clone(),
            embeds,
            done: 0,
            resumed: None,
        })
    }

    /// The last chunk is in: the page takes its slot, with its first token when it has none yet.
    fn finish_prefill(
        &mut self,
        engine: &Engine,
        last_hidden: &Tensor,
        opts: &GenerateOptions,
        t0: Instant,
    ) -> Result<ActivePage> {
        let Stage::Prefill {
            prompt,
            embeds,
            resumed,
            ..
        } = &mut self.stage
        else {
            return Err(EngineError::Input(
                "a page prefilled before its vision".into(),
            ));
        };
        let cache = std::mem::replace(&mut self.cache, SequenceCache::new(0, 0));
        let mut page = match resumed.take() {
            Some(mut page) => {
                page.put_cache(cache);
                page
            }
            None => ActivePage::new(
                self.index,
                std::mem::take(prompt),
                embeds.clone(),
                cache,
                self.stats.clone(),
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

/// The next view through the vision tower. Says which it was.
fn view_piece(model: &Model, image: &PageImage, views: &mut Vec<Tensor>) -> Result<&'static str> {
    let global = views.len() == image.num_tiles;
    views.push(model.view_embeddings(image, views.len())?);
    Ok(if global { "global view" } else { "tile" })
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

fn check_prompt(model: &Model, input: &PageInput) -> Result<()> {
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
