//! Pages in their slots: one batched decode step for all of them, and what each page reports after it.

use std::time::Instant;

use candle_core::Tensor;

use crate::engine::{Engine, FinishReason, Flow, GenerateEvent, PageStats};
use crate::error::{EngineError, Result};
use crate::generate::{greedy_pick, GenerateOptions};
use crate::lm::SequenceCache;

/// A page that has its first token and decodes in a slot.
pub(super) struct ActivePage {
    index: usize,
    prompt: Vec<u32>,
    /// The prompt's embeddings, kept (a few MB on the GPU) so that a page set aside for memory is taken up
    /// again by a prefill over them and its tokens, without its image.
    embeds: Tensor,
    /// `None` only while the page is set aside.
    cache: Option<SequenceCache>,
    tokens: Vec<u32>,
    /// Tokens already sent to the callback.
    reported: usize,
    stats: PageStats,
    finish: Option<FinishReason>,
}

impl ActivePage {
    pub(super) fn new(
        index: usize,
        prompt: Vec<u32>,
        embeds: Tensor,
        cache: SequenceCache,
        stats: PageStats,
    ) -> Self {
        ActivePage {
            index,
            prompt,
            embeds,
            cache: Some(cache),
            tokens: Vec::new(),
            reported: 0,
            stats,
            finish: None,
        }
    }

    pub(super) fn index(&self) -> usize {
        self.index
    }

    pub(super) fn generated(&self) -> usize {
        self.tokens.len()
    }

    pub(super) fn prompt(&self) -> &[u32] {
        &self.prompt
    }

    pub(super) fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    pub(super) fn embeds(&self) -> &Tensor {
        &self.embeds
    }

    pub(super) fn stats_mut(&mut self) -> &mut PageStats {
        &mut self.stats
    }

    pub(super) fn cache(&self) -> Option<&SequenceCache> {
        self.cache.as_ref()
    }

    pub(super) fn take_cache(&mut self) -> Option<SequenceCache> {
        self.cache.take()
    }

    pub(super) fn put_cache(&mut self, cache: SequenceCache) {
        self.cache = Some(cache);
    }

    /// Positions the page's cache holds once it is taken up again: the prompt and every token but the last,
    /// which the next decode step feeds.
    pub(super) fn positions(&self) -> usize {
        self.prompt.len() + self.tokens.len().saturating_sub(1)
    }

    pub(super) fn is_finished(&self) -> bool {
        self.finish.is_some()
    }

    /// The greedy choice on `logits` under the n-gram ban; the page ends when every token is banned.
    pub(super) fn choose(&mut self, logits: &[f32], opts: &GenerateOptions) {
        if opts.max_new_tokens == 0 {
            self.finish = Some(FinishReason::MaxNewTokens);
            return;
        }
        let banned = opts.no_repeat_ngram.banned(&self.prompt, &self.tokens);
        self.push(greedy_pick(logits, &banned));
    }

    fn push(&mut self, token: Option<u32>) {
        match token {
            Some(token) => self.tokens.push(token),
            None => self.finish = Some(FinishReason::AllBanned),
        }
    }

    /// Emits the page's newest token and decides whether the page ends on it.
    pub(super) fn report_new(
        &mut self,
        eos: u32,
        opts: &GenerateOptions,
        on_event: &mut dyn FnMut(GenerateEvent) -> Flow,
    ) {
        if self.tokens.len() <= self.reported {
            return;
        }
        let token_id = self.tokens[self.tokens.len() - 1];
        self.reported = self.tokens.len();
        let flow = on_event(GenerateEvent::Token {
            page: self.index,
            token_id,
        });
        if self.finish.is_some() {
            return;
        }
        if flow == Flow::StopPage {
            self.finish = Some(FinishReason::Stopped);
        } else if token_id == eos {
            self.finish = Some(FinishReason::Eos);
        } else if self.tokens.len() >= opts.max_new_tokens {
            self.finish = Some(FinishReason::MaxNewTokens);
        }
    }

    /// Reports the page's end and hands back its cache for the next page.
    pub(super) fn finish(
        mut self,
        on_event: &mut dyn FnMut(GenerateEvent) -> Flow,
    ) -> Option<SequenceCache> {
        self.stats.generated_tokens = self.tokens.len();
        self.stats.finish = self.finish.unwrap_or(FinishReason::MaxNewTokens);
        on_event(GenerateEvent::Finished {
            page: self.index,
            stats: self.stats,
        });
        self.cache
    }
}

/// One token for every page in `pages`, in one batched LM pass; returns how many pages took part.
pub(super) fn decode_step(
    engine: &Engine,
    pages: &mut [ActivePage],
    opts: &GenerateOptions,
) -> Result<usize> {
    let t0 = Instant::now();
    let max_pos = engine.model().config().text.max_position_embeddings;
    for page in pages.iter_mut() {
        if page.cache.as_ref().is_some_and(|c| c.len() >= max_pos) {
            page.finish = Some(FinishReason::ContextFull);
        }
    }
    let mut rows: Vec<&mut ActivePage> = pages.iter_mut().filter(|p| !p.is_finished()).collect();
    if rows.is_empty() {
        return Ok(0);
    }
    // Each page feeds back its last token; it is in the vocabulary since the LM produced it.
    let last: Vec<u32> = rows
        .iter()
        .map(|p| p.tokens.last().copied().unwrap_or(0))
        .collect();
    let bans: Vec<Vec<u32>> = rows
        .iter()
        .map(|p| opts.no_repeat_ngram.banned(&p.prompt, &p.tokens))
        .collect();
    let mut caches = rows
        .iter_mut()
        .map(|p| {
            p.cache
                .as_mut()
                .ok_or_else(|| EngineError::Input("a page decoding without its cache".into()))
        })
        .collect::<Result<Vec<_>>>()?;
    let fused = match engine.fused() {
        Some(fused) => fused.step(engine.model().text(), &last, &mut caches, &bans)?,
        None => None,
    };
    let chosen = match fused {
        Some(chosen) => chosen,
        None => reference_step(engine, &mut caches, &last, &bans)?,
    };
    let elapsed = t0.elapsed().as_secs_f64() * 1e3;
    let count = rows.len();
    for (page, token) in rows.iter_mut().zip(chosen) {
        page.push(token);
        page.stats.decode_ms += elapsed;
    }
    Ok(count)
}

/// The decode step on stock ops: logits to the host, the greedy choice there.
fn reference_step(
    engine: &Engine,
    caches: &mut [&mut SequenceCache],
    last: &[u32],
    bans: &[Vec<u32>],
) -> Result<Vec<Option<u32>>> {
    let text = engine.model().text();
    let x = text.embed(last)?.unsqueeze(1)?;
    let hidden = text.forward_hidden(&x, caches)?;
    let logits: Vec<Vec<f32>> = text.logits(&hidden.squeeze(1)?)?.to_vec2::<f32>()?;
    Ok(logits
        .iter()
        .zip(bans)
        .map(|(row, banned)| greedy_pick(row, banned))
        .collect())
}
