//! Where every byte of the model's output went: the parser tiles the raw text with segments.

use std::ops::Range;

use super::tags::Tag;

/// What a stretch of the raw output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentKind {
    /// A special string: `<|ref|>`, `<|/ref|>`, `<|det|>`, `<|/det|>`, or the end-of-sentence token.
    Tag(Tag),
    /// The label between `<|ref|>` and `<|/ref|>`.
    Label,
    /// The box list after `<|det|>` (well formed or not).
    Boxes,
    /// Newlines that belong to no block: the one after `<|/det|>`, those that end a block, and
    /// whitespace before the first block.
    Separator,
    /// Part of a block's Markdown.
    Content,
}

/// A stretch of the raw output and the block it belongs to (`None` before the first block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub kind: SegmentKind,
    pub range: Range<usize>,
    pub block: Option<u32>,
}

/// Appends a segment, merging it into the previous one when it continues it, so a block's
/// content streamed in many deltas stays one segment.
pub(crate) fn push_segment(
    segments: &mut Vec<Segment>,
    kind: SegmentKind,
    range: Range<usize>,
    block: Option<u32>,
) {
    if range.is_empty() {
        return;
    }
    if let Some(last) = segments.last_mut() {
        let mergeable = !matches!(kind, SegmentKind::Tag(_));
        if mergeable && last.kind == kind && last.block == block && last.range.end == range.start {
            last.range.end = range.end;
            return;
        }
    }
    segments.push(Segment { kind, range, block });
}
