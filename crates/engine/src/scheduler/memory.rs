//! The pages' key/value caches against the GPU's memory: how many slots a device holds, a budget the caches
//! stay inside (a page waits, or one is set aside, rather than the device running out), and finished pages'
//! caches handed to the next pages instead of being freed and allocated again.

use candle_core::DType;

use super::{CPU_SLOTS, MAX_SLOTS};
use crate::config::TextConfig;
use crate::device::{memory_free, release_unused_memory};
use crate::error::EngineError;
use crate::lm::SequenceCache;
use crate::model::Model;

/// Cache positions slots are sized for: a page of 6 tiles (1,131 prompt tokens) that writes 2,000 tokens.
/// Longer pages still fit: the budget, not the slot count, bounds what the caches hold.
pub const TYPICAL_PAGE_POSITIONS: usize = 1_131 + 2_000;
/// Device memory kept out of the budget for everything that is not a cache: a view's vision activations, a
/// prompt chunk's, the decode graphs' buffers, cuBLAS' workspace.
const WORKING_MEMORY: u64 = 5 << 29;
/// A finished page's cache is kept for the next page up to this many positions; a longer one (a page that
/// looped) is freed rather than held for pages that will rarely need it.
const POOLED_POSITIONS: usize = 2 * TYPICAL_PAGE_POSITIONS;

/// Bytes of one page's caches holding `positions`, keys and values of every layer.
pub fn page_cache_bytes(text: &TextConfig, dtype: DType, positions: usize) -> u64 {
    let per_position = 2 * text.num_layers * text.num_kv_heads * text.head_dim();
    (per_position * dtype.size_in_bytes() * positions) as u64
}

/// Slots and the caches' budget for `model`'s device: from the memory free now, on a GPU; on the CPU, a few
/// slots and no budget.
pub(super) fn size_slots(model: &Model) -> (usize, Option<u64>) {
    // What an earlier reading freed is still held for reuse; the driver's free count should include it.
    release_unused_memory(model.device());
    let Some(free) = memory_free(model.device()) else {
        return (CPU_SLOTS, None);
    };
    let budget = free.saturating_sub(WORKING_MEMORY);
    let page = page_cache_bytes(&model.config().text, model.dtype(), TYPICAL_PAGE_POSITIONS);
    let slots = (budget / page.max(1)).clamp(1, MAX_SLOTS as u64) as usize;
    tracing::info!(
        slots,
        free_gb = free as f64 / 1e9,
        cache_budget_gb = budget as f64 / 1e9,
        "decode slots sized from free GPU memory"
    );
    (slots, Some(budget))
}

/// Whether `error` is the device running out of memory (CUDA's own error, through candle).
pub(super) fn is_out_of_memory(error: &EngineError) -> bool {
    let message = error.to_string().to_ascii_lowercase();
    message.contains("out of memory") || message.contains("out_of_memory")
}

/// Caches not in use, and the budget every cache stays inside.
pub(super) struct Caches {
    pool: Vec<SequenceCache>,
    budget: Option<u64>,
    /// Bytes of one cache position.
    position_bytes: u64,
    num_layers: usize,
}

impl Caches {
    pub(super) fn new(model: &Model, budget: Option<u64>) -> Self {
        let text = &model.config().text;
        Caches {
            pool: Vec::new(),
            budget,
            position_bytes: page_cache_bytes(text, model.dtype(), 1),
            num_layers: text.num_layers,
        }
    }

    /// Bytes `positions` cache positions take.
    pub(super) fn bytes(&self, positions: usize) -> u64 {
        self.position_bytes * positions as u64
    }

    /// A cache with room for `positions`, while `in_use` bytes are held by the pages' caches: a pooled one that
    /// is large enough, else a new one if it fits the budget. A page `alone` always gets one (the device has
    /// the last word).
    pub(super) fn take(
        &mut self,
        positions: usize,
        in_use: u64,
        alone: bool,
    ) -> Option<SequenceCache> {
        let fitting = self
            .pool
            .iter()
            .enumerate()
            .filter(|(_, c)| c.capacity() >= positions)
            .min_by_key(|(_, c)| c.capacity())
            .map(|(i, _)| i);
        if let Some(i) = fitting {
            return Some(self.pool.swap_remove(i));
        }
        while !self.fits(in_use + self.bytes(positions)) && !self.pool.is_empty() {
            self.drop_largest();
        }
        (alone || self.fits(in_use + self.bytes(positions)))
            .then(|| SequenceCache::new(self.num_layers, positions))
    }

    /// A finished page's cache, kept for the next page unless it grew long.
    pub(super) fn give_back(&mut self, cache: Option<SequenceCache>) {
        let Some(mut cache) = cache else {
            return;
        };
        if cache.capacity() <= POOLED_POSITIONS && self.pool.len() < MAX_SLOTS {
            cache.clear();
            self.pool.push(cache);
        }
    }

    /// Whether the caches in use (`in_use` bytes) can grow by `growth` positions, once the pool is let go.
    pub(super) fn growth_fits(&mut self, in_use: u64, growth: usize) -> bool {
        let needed = in_use + self.bytes(growth);
        while !self.fits(needed) && !self.pool.is_empty() {
            self.drop_largest();
        }
        self.fits(needed)
    }

    /// Frees every pooled cache, and hands what the device's allocator holds unused back to the driver.
    pub(super) fn release_pool(&mut self, model: &Model) {
        self.pool.clear();
        release_unused_memory(model.device());
    }

    /// The device ran out with `in_use` bytes held: the caches stay below that from now on.
    pub(super) fn tighten(&mut self, in_use: u64) {
        let budget = self.budget.map_or(in_use, |b| b.min(in_use));
        tracing::warn!(
            cache_budget_gb = budget as f64 / 1e9,
            "out of GPU memory; the caches' budget shrinks"
        );
        self.budget = Some(budget);
    }

    fn fits(&self, bytes: u64) -> bool {
        self.budget
            .is_none_or(|budget| bytes + self.pooled() <= budget)
    }

    fn pooled(&self) -> u64 {
        self.pool.iter().map(|c| self.bytes(c.capacity())).sum()
    }

    fn drop_largest(&mut self) {
        if let Some(i) = (0..self.pool.len()).max_by_key(|&i| self.pool[i].capacity()) {
            self.pool.swap_remove(i);
        }
    }
}
