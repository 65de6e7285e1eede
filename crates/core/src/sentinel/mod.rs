//! The loop sentinel: notices when the model is stuck repeating itself, early, so the page can be
//! stopped and marked "looped" instead of spending the whole token budget.
//!
//! It reads text, not token ids, so it works for every recognizer and for replayed output.

mod block_repeats;
mod novelty;

use serde::{Deserialize, Serialize};

use crate::events::{Block, BoxNorm};
use block_repeats::BlockRepeats;
use novelty::Novelty;

/// Why a page was stopped as a loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum LoopReason {
    /// Almost nothing in the last `window` characters was new.
    RepeatedText { window: usize, novelty: f32 },
    /// The same box came `count` times.
    RepeatedBox { bbox: BoxNorm, count: usize },
    /// The same block text came `count` times in a row.
    RepeatedBlockText { count: usize },
    /// The token budget was nearly spent without the end-of-sentence token.
    BudgetSpent { tokens: usize, budget: usize },
}

impl std::fmt::Display for LoopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoopReason::RepeatedText { window, novelty } => write!(
                f,
                "the same text again and again ({:.0}% new in the last {window} characters)",
                novelty * 100.0
            ),
            LoopReason::RepeatedBox { bbox, count } => write!(
                f,
                "the same box [{}, {}, {}, {}] {count} times",
                bbox.x1, bbox.y1, bbox.x2, bbox.y2
            ),
            LoopReason::RepeatedBlockText { count } => {
                write!(f, "the same block text {count} times in a row")
            }
            LoopReason::BudgetSpent { tokens, budget } => write!(
                f,
                "{tokens} of {budget} tokens spent without reaching the end"
            ),
        }
    }
}

/// What the sentinel says after each piece of output.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Continue,
    /// Stop: the output loops. Keep `raw[..keep_until]` (byte offset into the raw output): the
    /// text before the loop plus at most one instance of what repeats.
    Looped {
        reason: LoopReason,
        keep_until: usize,
    },
}

/// Thresholds, tuned on the real captures in the fixtures (tests/sentinel_fixtures.rs): the pages
/// that loop drop below 5% new spans, while no clean page goes below 25%.
#[derive(Debug, Clone, PartialEq)]
pub struct SentinelConfig {
    /// Length in characters of the spans compared.
    pub gram: usize,
    /// How many recent spans the novelty is measured over.
    pub window: usize,
    /// How far back, in characters, an earlier span makes a span not new.
    pub history: usize,
    /// Below this share of new spans in the window, the text loops.
    pub min_novelty: f32,
    /// A box may come this many times; once more is a loop.
    pub max_same_box: usize,
    /// A block text may come this many times in a row; once more is a loop.
    pub max_same_text_run: usize,
    /// The generation's token budget (max new tokens), if known.
    pub token_budget: Option<usize>,
    /// Tokens left in the budget when the page counts as having spent it.
    pub budget_headroom: usize,
}

impl SentinelConfig {
    /// A sentinel that never fires: for recognizers that copy text rather than generate it (a
    /// document may well repeat a paragraph).
    pub fn never() -> Self {
        SentinelConfig {
            min_novelty: 0.0,
            max_same_box: usize::MAX,
            max_same_text_run: usize::MAX,
            token_budget: None,
            ..SentinelConfig::default()
        }
    }
}

impl Default for SentinelConfig {
    fn default() -> Self {
        SentinelConfig {
            gram: 16,
            window: 1024,
            history: 4096,
            min_novelty: 0.10,
            max_same_box: 3,
            max_same_text_run: 3,
            // The reference generates at most 8192 new tokens.
            token_budget: Some(8192),
            budget_headroom: 16,
        }
    }
}

/// Watches one page's output. Once it says `Looped`, it keeps saying so.
#[derive(Debug)]
pub struct LoopSentinel {
    config: SentinelConfig,
    novelty: Novelty,
    blocks: BlockRepeats,
    tokens: usize,
    raw_len: usize,
    verdict: Verdict,
}

impl LoopSentinel {
    pub fn new(config: SentinelConfig) -> Self {
        LoopSentinel {
            novelty: Novelty::new(config.gram, config.window, config.history),
            blocks: BlockRepeats::default(),
            tokens: 0,
            raw_len: 0,
            verdict: Verdict::Continue,
            config,
        }
    }

    /// Reads the next piece of raw output, which took `tokens` tokens to generate (pass 0 when
    /// unknown: the budget check then never fires).
    pub fn push(&mut self, delta: &str, tokens: usize) -> Verdict {
        if self.verdict != Verdict::Continue {
            return self.verdict.clone();
        }
        self.raw_len += delta.len();
        self.tokens += tokens;
        self.novelty.push(delta);
        if let Some(novelty) = self.novelty.recent_novelty() {
            if novelty < self.config.min_novelty {
                let reason = LoopReason::RepeatedText {
                    window: self.config.window,
                    novelty,
                };
                let keep_until = self.novelty.repetition_start(2 * self.config.gram);
                return self.stop(reason, keep_until);
            }
        }
        if let Some(budget) = self.config.token_budget {
            if self.tokens + self.config.budget_headroom >= budget {
                let reason = LoopReason::BudgetSpent {
                    tokens: self.tokens,
                    budget,
                };
                return self.stop(reason, self.raw_len);
            }
        }
        Verdict::Continue
    }

    /// Notes a block that just closed and began at byte `raw_start` of the raw output.
    pub fn block_closed(&mut self, block: &Block, raw_start: usize) -> Verdict {
        if self.verdict != Verdict::Continue {
            return self.verdict.clone();
        }
        let repeated = self.blocks.observe(
            block,
            raw_start,
            self.config.max_same_box,
            self.config.max_same_text_run,
        );
        match repeated {
            Some((reason, keep_until)) => self.stop(reason, keep_until),
            None => Verdict::Continue,
        }
    }

    /// The current verdict.
    pub fn verdict(&self) -> &Verdict {
        &self.verdict
    }

    fn stop(&mut self, reason: LoopReason, keep_until: usize) -> Verdict {
        tracing::debug!(%reason, keep_until, "loop sentinel fired");
        self.verdict = Verdict::Looped { reason, keep_until };
        self.verdict.clone()
    }
}
