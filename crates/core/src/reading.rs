//! One page's output as it is generated: the parser and the loop sentinel fed together, and the
//! page's outcome at the end (complete, or cut where the loop began).

use crate::events::Block;
use crate::grounding::{BlockEvent, Parser, SegmentKind};
use crate::markdown::{page_markdown, MarkdownOptions};
use crate::sentinel::{LoopReason, LoopSentinel, SentinelConfig, Verdict};

/// What one piece of output changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub events: Vec<BlockEvent>,
    /// `Looped` means: stop generating this page and call [`PageReader::finish`].
    pub verdict: Verdict,
}

/// How a page ended.
#[derive(Debug, Clone, PartialEq)]
pub enum PageOutcome {
    Complete {
        markdown: String,
        blocks: Vec<Block>,
        /// Whether the model wrote its end-of-sentence token (false: the output was cut short).
        saw_end_of_sentence: bool,
    },
    /// The page looped: Markdown and blocks hold only what came before the loop.
    Looped {
        markdown: String,
        blocks: Vec<Block>,
        reason: LoopReason,
        /// Bytes of the raw output kept.
        kept_bytes: usize,
    },
}

/// Reads one page's output: feed every delta to [`push`](PageReader::push), then
/// [`finish`](PageReader::finish).
#[derive(Debug)]
pub struct PageReader {
    parser: Parser,
    sentinel: LoopSentinel,
}

impl PageReader {
    pub fn new(config: SentinelConfig) -> Self {
        PageReader {
            parser: Parser::new(),
            sentinel: LoopSentinel::new(config),
        }
    }

    /// Reads a delta that took `tokens` tokens to generate (0 when unknown).
    pub fn push(&mut self, delta: &str, tokens: usize) -> Step {
        let events = self.parser.push(delta);
        let mut verdict = self.sentinel.push(delta, tokens);
        for event in &events {
            if let BlockEvent::Closed { block_id } = event {
                verdict = self.note_closed(*block_id);
            }
        }
        Step { events, verdict }
    }

    fn note_closed(&mut self, block_id: u32) -> Verdict {
        let block = self.parser.blocks().get(block_id as usize);
        let start = self.parser.block_start(block_id);
        match (block, start) {
            (Some(block), Some(start)) => self.sentinel.block_closed(block, start),
            _ => self.sentinel.verdict().clone(),
        }
    }

    /// The parser, for the blocks and raw text so far.
    pub fn parser(&self) -> &Parser {
        &self.parser
    }

    /// Ends the page. A looped page is parsed again from the kept part of its output, so its
    /// blocks and Markdown are exactly those of a model that stopped where the loop began.
    pub fn finish(mut self, options: &MarkdownOptions) -> PageOutcome {
        self.parser.finish();
        match self.sentinel.verdict().clone() {
            Verdict::Continue => PageOutcome::Complete {
                markdown: page_markdown(&self.parser, options),
                saw_end_of_sentence: self.parser.saw_end_of_sentence(),
                blocks: self.parser.blocks().to_vec(),
            },
            Verdict::Looped { reason, keep_until } => {
                let cut = cut_outside_tags(&self.parser, keep_until);
                let mut kept = Parser::new();
                kept.push(&self.parser.raw()[..cut]);
                kept.finish();
                PageOutcome::Looped {
                    markdown: page_markdown(&kept, options),
                    blocks: kept.blocks().to_vec(),
                    reason,
                    kept_bytes: cut,
                }
            }
        }
    }
}

/// Moves a cut that falls among a block's tags back to where the block begins, so that the kept
/// output never ends in half a tag.
fn cut_outside_tags(parser: &Parser, cut: usize) -> usize {
    let raw = parser.raw();
    let cut = cut.min(raw.len());
    let inside = parser
        .segments()
        .iter()
        .find(|s| s.range.start < cut && cut < s.range.end);
    let Some(segment) = inside else {
        return cut;
    };
    match segment.kind {
        SegmentKind::Tag(_) | SegmentKind::Label | SegmentKind::Boxes => segment
            .block
            .and_then(|id| parser.block_start(id))
            .unwrap_or(segment.range.start)
            .min(cut),
        SegmentKind::Content | SegmentKind::Separator => {
            // Never split a character.
            (0..=cut)
                .rev()
                .find(|i| raw.is_char_boundary(*i))
                .unwrap_or(0)
        }
    }
}
