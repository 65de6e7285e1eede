//! The incremental parser: its public face and the bookkeeping of blocks, segments and events.
//! The reading of each syntactic state lives in `states.rs`.

use tracing::warn;

use super::segment::{push_segment, Segment, SegmentKind};
use crate::events::{Block, BoxNorm, PageEvent};

/// Label of text that no tag labels (text before the first tag, or "Free OCR." output).
pub(crate) const UNLABELLED: &str = "text";

/// What happened to the page's blocks as text arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockEvent {
    /// The block's label and boxes are known; its Markdown follows in `Text` events.
    Opened {
        block_id: u32,
        label: String,
        boxes: Vec<BoxNorm>,
        warning: Option<String>,
    },
    /// Markdown appended to the block.
    Text { block_id: u32, delta: String },
    /// The block is complete.
    Closed { block_id: u32 },
}

impl BlockEvent {
    /// The same event addressed to a page, for the UI and the CLI.
    pub fn into_page_event(self, page: usize) -> PageEvent {
        match self {
            BlockEvent::Opened {
                block_id,
                label,
                boxes,
                warning,
            } => PageEvent::BlockOpened {
                page,
                block_id,
                label,
                boxes,
                warning,
            },
            BlockEvent::Text { block_id, delta } => PageEvent::BlockText {
                page,
                block_id,
                delta,
            },
            BlockEvent::Closed { block_id } => PageEvent::BlockClosed { page, block_id },
        }
    }
}

/// Where the parser is in the block syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Block content, or text outside any block.
    Content,
    /// After `<|ref|>`: reading the label.
    Label,
    /// After `<|/ref|>`: expecting `<|det|>`.
    AfterLabel,
    /// After `<|det|>`: reading the box list.
    Boxes,
    /// After `<|/det|>`: the one newline that follows belongs to no block.
    AfterBoxes,
}

/// A block whose tags are being read; it opens when its box list closes.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    pub raw_start: usize,
    pub label: Option<String>,
    pub warnings: Vec<String>,
}

/// Reads the model's grounding output incrementally.
///
/// Feed text with [`push`](Parser::push) as it is generated, then call [`finish`](Parser::finish).
/// The blocks, their Markdown and the events do not depend on how the text was cut into deltas.
///
/// Content is kept exactly, except for these separators, which belong to no block: the single
/// newline right after `<|/det|>`, the newlines at the end of a block (before the next `<|ref|>`,
/// `<|det|>`, end-of-sentence, or the end of output), and whitespace before the first block.
#[derive(Debug)]
pub struct Parser {
    pub(crate) raw: String,
    /// `raw[..pos]` is classified into segments.
    pub(crate) pos: usize,
    /// While reading content: `raw[pos..scan_from]` is known to hold only held-back newlines.
    pub(crate) scan_from: usize,
    pub(crate) state: State,
    pub(crate) pending: Option<Pending>,
    blocks: Vec<Block>,
    block_starts: Vec<usize>,
    segments: Vec<Segment>,
    /// The block receiving content, and how much of its Markdown was already reported.
    open: Option<(u32, usize)>,
    events: Vec<BlockEvent>,
    finished: bool,
}

impl Default for Parser {
    fn default() -> Self {
        Self::new()
    }
}

impl Parser {
    pub fn new() -> Self {
        Parser {
            raw: String::new(),
            pos: 0,
            scan_from: 0,
            state: State::Content,
            pending: None,
            blocks: Vec::new(),
            block_starts: Vec::new(),
            segments: Vec::new(),
            open: None,
            events: Vec::new(),
            finished: false,
        }
    }

    /// Reads a piece of generated text; returns what it changed. Text that may still turn out to
    /// be a tag or a block separator is held back until the next call or [`finish`](Parser::finish).
    pub fn push(&mut self, delta: &str) -> Vec<BlockEvent> {
        if self.finished {
            warn!(
                len = delta.len(),
                "text pushed after the output finished; ignored"
            );
            return Vec::new();
        }
        self.raw.push_str(delta);
        self.advance(true);
        self.flush_text();
        std::mem::take(&mut self.events)
    }

    /// Ends the output: whatever was held back is classified and the last block closes.
    pub fn finish(&mut self) -> Vec<BlockEvent> {
        if !self.finished {
            self.advance(false);
            self.close_open_block();
            self.finished = true;
        }
        std::mem::take(&mut self.events)
    }

    /// The blocks so far (the last one may still be growing until [`finish`](Parser::finish)).
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// All the text pushed so far.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// How the classified part of the raw text divides into tags, labels, boxes, separators and
    /// content; after [`finish`](Parser::finish) the segments tile the whole raw text.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Byte offset in the raw text where a block begins (its `<|ref|>`, or its first character).
    pub fn block_start(&self, block_id: u32) -> Option<usize> {
        self.block_starts.get(block_id as usize).copied()
    }

    /// Whether the end-of-sentence token was seen: the model stopped by itself.
    pub fn saw_end_of_sentence(&self) -> bool {
        self.segments
            .iter()
            .any(|s| s.kind == SegmentKind::Tag(super::tags::Tag::EndOfSentence))
    }

    fn advance(&mut self, more_may_come: bool) {
        while self.step(more_may_come) {}
    }

    /// The id the pending block will get when it opens: blocks open in order, one at a time.
    pub(crate) fn pending_id(&self) -> u32 {
        self.blocks.len() as u32
    }

    pub(crate) fn open_id(&self) -> Option<u32> {
        self.open.map(|(id, _)| id)
    }

    pub(crate) fn mark(&mut self, kind: SegmentKind, end: usize, block: Option<u32>) {
        push_segment(&mut self.segments, kind, self.pos..end, block);
        self.pos = end;
    }

    /// Classifies `raw[pos..end]` as content of the open block, opening an unlabelled block at
    /// the first non-whitespace character when none is open.
    pub(crate) fn content_until(&mut self, end: usize) {
        if self.open.is_none() {
            let text = &self.raw[self.pos..end];
            let lead = text.len() - text.trim_start().len();
            if lead == text.len() {
                self.mark(SegmentKind::Separator, end, None);
                return;
            }
            self.mark(SegmentKind::Separator, self.pos + lead, None);
            let start = self.pos;
            self.open_block(start, UNLABELLED.to_owned(), Vec::new(), Vec::new());
        }
        if let Some((id, _)) = self.open {
            let start = self.pos;
            if let Some(block) = self.blocks.get_mut(id as usize) {
                block.markdown.push_str(&self.raw[start..end]);
            }
            self.mark(SegmentKind::Content, end, Some(id));
        }
    }

    /// Content up to `end`, except its trailing newlines, which end the block.
    pub(crate) fn content_then_separator(&mut self, end: usize) {
        let body_end = self.pos + self.raw[self.pos..end].trim_end_matches('\n').len();
        self.content_until(body_end);
        let block = self.open_id();
        self.mark(SegmentKind::Separator, end, block);
    }

    pub(crate) fn open_block(
        &mut self,
        raw_start: usize,
        label: String,
        boxes: Vec<BoxNorm>,
        warnings: Vec<String>,
    ) {
        self.close_open_block();
        let id = self.pending_id();
        let warning = (!warnings.is_empty()).then(|| warnings.join("; "));
        self.events.push(BlockEvent::Opened {
            block_id: id,
            label: label.clone(),
            boxes: boxes.clone(),
            warning: warning.clone(),
        });
        self.blocks.push(Block {
            id,
            label,
            boxes,
            markdown: String::new(),
            warning,
        });
        self.block_starts.push(raw_start);
        self.open = Some((id, 0));
    }

    /// Opens the pending block with what its tags said.
    pub(crate) fn open_pending(&mut self, boxes: Vec<BoxNorm>, warning: Option<String>) {
        let pending = self.pending.take().unwrap_or_default();
        let label = pending.label.unwrap_or_else(|| UNLABELLED.to_owned());
        let mut warnings = pending.warnings;
        warnings.extend(warning);
        self.open_block(pending.raw_start, label, boxes, warnings);
    }

    pub(crate) fn warn_open_block(&mut self, warning: String) {
        let Some((id, _)) = self.open else { return };
        if let Some(block) = self.blocks.get_mut(id as usize) {
            block.warning = Some(match block.warning.take() {
                Some(previous) => format!("{previous}; {warning}"),
                None => warning,
            });
        }
    }

    pub(crate) fn close_open_block(&mut self) {
        self.flush_text();
        if let Some((id, _)) = self.open.take() {
            self.events.push(BlockEvent::Closed { block_id: id });
        }
    }

    /// Reports the open block's Markdown added since the last report, as one event.
    fn flush_text(&mut self) {
        let Some((id, reported)) = self.open else {
            return;
        };
        let Some(block) = self.blocks.get(id as usize) else {
            return;
        };
        if block.markdown.len() > reported {
            let delta = block.markdown[reported..].to_owned();
            self.open = Some((id, block.markdown.len()));
            self.events.push(BlockEvent::Text {
                block_id: id,
                delta,
            });
        }
    }
}
