//! Repetition at the level of blocks: the same box again and again, or the same text in block
//! after block. Real pages never repeat a box and rarely repeat a block's text back to back
//! (twice at most in the fixtures: e.g. two `## WARNING:` headings).

use std::collections::HashMap;

use super::LoopReason;
use crate::events::{Block, BoxNorm};

#[derive(Debug, Default)]
pub(crate) struct BlockRepeats {
    /// For each box: how often it came, and where its second block began.
    boxes: HashMap<BoxNorm, (usize, Option<usize>)>,
    /// The text of the current run of identical blocks, its length, and where its second block began.
    run_text: String,
    run_len: usize,
    run_second_start: Option<usize>,
}

impl BlockRepeats {
    /// Notes a finished block that began at `raw_start`; returns the loop, and where to cut,
    /// once a box has come more than `max_same_box` times or a text more than `max_text_run`
    /// times in a row. The cut keeps the first instance.
    pub(crate) fn observe(
        &mut self,
        block: &Block,
        raw_start: usize,
        max_same_box: usize,
        max_text_run: usize,
    ) -> Option<(LoopReason, usize)> {
        self.same_box(block, raw_start, max_same_box)
            .or_else(|| self.same_text(block, raw_start, max_text_run))
    }

    fn same_box(
        &mut self,
        block: &Block,
        raw_start: usize,
        max_same_box: usize,
    ) -> Option<(LoopReason, usize)> {
        for b in &block.boxes {
            let (count, second_start) = self.boxes.entry(*b).or_insert((0, None));
            *count += 1;
            if *count == 2 {
                *second_start = Some(raw_start);
            }
            if *count > max_same_box {
                let reason = LoopReason::RepeatedBox {
                    bbox: *b,
                    count: *count,
                };
                return Some((reason, second_start.unwrap_or(raw_start)));
            }
        }
        None
    }

    fn same_text(
        &mut self,
        block: &Block,
        raw_start: usize,
        max_text_run: usize,
    ) -> Option<(LoopReason, usize)> {
        let text = block.markdown.trim();
        if text.is_empty() {
            // Figures have no text; a run of them says nothing.
            self.run_len = 0;
            return None;
        }
        if self.run_len > 0 && self.run_text == text {
            self.run_len += 1;
            if self.run_len == 2 {
                self.run_second_start = Some(raw_start);
            }
        } else {
            text.clone_into(&mut self.run_text);
            self.run_len = 1;
            self.run_second_start = None;
        }
        (self.run_len > max_text_run).then(|| {
            let reason = LoopReason::RepeatedBlockText {
                count: self.run_len,
            };
            (reason, self.run_second_start.unwrap_or(raw_start))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(id: u32, boxes: Vec<BoxNorm>, markdown: &str) -> Block {
        Block {
            id,
            label: "text".into(),
            boxes,
            markdown: markdown.into(),
            warning: None,
        }
    }

    const B: BoxNorm = BoxNorm {
        x1: 1,
        y1: 2,
        x2: 3,
        y2: 4,
    };

    #[test]
    fn a_box_repeated_past_the_limit_cuts_at_its_second_block() {
        let mut r = BlockRepeats::default();
        assert!(r.observe(&block(0, vec![B], "a"), 0, 3, 3).is_none());
        assert!(r.observe(&block(1, vec![B], "b"), 10, 3, 3).is_none());
        assert!(r.observe(&block(2, vec![B], "c"), 20, 3, 3).is_none());
        let (reason, cut) = r.observe(&block(3, vec![B], "d"), 30, 3, 3).unwrap();
        assert_eq!(reason, LoopReason::RepeatedBox { bbox: B, count: 4 });
        assert_eq!(cut, 10);
    }

    #[test]
    fn the_same_text_back_to_back_is_a_loop_but_not_when_interrupted() {
        let mut r = BlockRepeats::default();
        for (i, text) in ["x", "x", "y", "x", "x", "x"].iter().enumerate() {
            assert!(r
                .observe(&block(i as u32, vec![], text), i * 10, 3, 3)
                .is_none());
        }
        let (reason, cut) = r.observe(&block(6, vec![], "x\n"), 60, 3, 3).unwrap();
        assert_eq!(reason, LoopReason::RepeatedBlockText { count: 4 });
        assert_eq!(cut, 40);
    }

    #[test]
    fn empty_blocks_never_make_a_run() {
        let mut r = BlockRepeats::default();
        for i in 0..10 {
            assert!(r.observe(&block(i, vec![], ""), 0, 3, 3).is_none());
        }
    }
}
