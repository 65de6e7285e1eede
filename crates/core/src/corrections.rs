//! A person's corrections laid over a reading: a corrected block shows the person's Markdown, in the block
//! list and in the page's Markdown every export writes, as long as the reading still has the text they
//! corrected. Where a later reading wrote something else there, the correction is not applied but reported,
//! with the new text, for the person to keep or drop.

use std::ops::Range;

use crate::events::{Block, BoxNorm};
use crate::export::PageExport;
use crate::markdown::as_in_page;

/// Blocks a person added (a region read again and kept) have ids from here up: past any reading's blocks, so
/// that they never take a reading block's place.
pub const ADDED_FROM: u32 = 1_000_000;

/// One block as a person corrected it, or added it.
#[derive(Debug, Clone, PartialEq)]
pub struct Correction {
    /// 0-based page index.
    pub page: usize,
    /// The block's place on its page when it was corrected; from [`ADDED_FROM`] up, a block added.
    pub block_id: u32,
    pub boxes: Vec<BoxNorm>,
    /// The block's Markdown as the reading had it then; empty for a block added.
    pub original: String,
    /// The person's Markdown.
    pub markdown: String,
    /// The label of a block added ("text" when not known); `None` for a correction of a reading's block.
    pub label: Option<String>,
}

impl Correction {
    /// Whether this is a block the person added rather than a correction of one the reading has.
    pub fn is_added(&self) -> bool {
        self.block_id >= ADDED_FROM
    }
}

/// What became of one correction.
#[derive(Debug, Clone, PartialEq)]
pub enum Laid {
    /// Shown in place of block `block` of the reading.
    Applied { block: u32 },
    /// The reading has other text where the corrected block was: `block` is the block now there (the one its
    /// boxes overlap most), if any.
    Differs { block: Option<u32>, now: String },
    /// A block the person added, shown as block `block` after the reading's own.
    Added { block: u32 },
}

/// Lays the corrections of `page` over it (those of other pages are left out), and says what became of each,
/// in order.
pub fn correct_page(page: &mut PageExport, corrections: &[Correction]) -> Vec<Laid> {
    let spans = block_spans(&page.markdown, &page.blocks);
    let mut splices: Vec<(Range<usize>, String)> = Vec::new();
    let mut laid = Vec::new();
    let reading_blocks = page.blocks.len();
    for correction in corrections.iter().filter(|c| c.page == page.index) {
        if correction.is_added() {
            let at = insertion_point(&page.blocks[..reading_blocks], &spans, &correction.boxes)
                .unwrap_or(page.markdown.len());
            splices.push((at..at, added_text(&correction.markdown, at, &page.markdown)));
            page.blocks.push(added_block(correction));
            laid.push(Laid::Added {
                block: correction.block_id,
            });
            continue;
        }
        match corrected_block(&page.blocks[..reading_blocks], correction) {
            Some(index) => {
                if let Some(span) = spans[index].clone() {
                    splices.push((span, as_in_page(correction.markdown.trim())));
                }
                page.blocks[index].markdown = correction.markdown.clone();
                laid.push(Laid::Applied {
                    block: page.blocks[index].id,
                });
            }
            None => {
                let now = most_overlapping(&page.blocks, &correction.boxes);
                laid.push(Laid::Differs {
                    block: now.map(|b| b.id),
                    now: now.map(|b| b.markdown.clone()).unwrap_or_default(),
                });
            }
        }
    }
    // From the end, so that earlier spans stay where they are; at one place, the block replaced before the
    // block added in front of it.
    splices.sort_by_key(|(span, _)| std::cmp::Reverse((span.start, span.end)));
    for (span, text) in splices {
        page.markdown.replace_range(span, &text);
    }
    laid
}

/// Lays the corrections over every page of a reading; what became of each, with its page index.
pub fn correct_pages(pages: &mut [PageExport], corrections: &[Correction]) -> Vec<(usize, Laid)> {
    pages
        .iter_mut()
        .flat_map(|page| {
            let index = page.index;
            correct_page(page, corrections)
                .into_iter()
                .map(move |laid| (index, laid))
        })
        .collect()
}

/// A block the person added, as the page lists it.
fn added_block(correction: &Correction) -> Block {
    Block {
        id: correction.block_id,
        label: correction
            .label
            .clone()
            .unwrap_or_else(|| "text".to_owned()),
        boxes: correction.boxes.clone(),
        markdown: correction.markdown.clone(),
        warning: None,
    }
}

/// Where in the page's Markdown a block added at `boxes` reads: before the first block found in the Markdown
/// that starts lower on the page (`None`: after them all).
fn insertion_point(
    blocks: &[Block],
    spans: &[Option<Range<usize>>],
    boxes: &[BoxNorm],
) -> Option<usize> {
    let top = boxes.iter().map(|b| b.y1).min()?;
    blocks
        .iter()
        .zip(spans)
        .filter(|(block, _)| {
            block
                .boxes
                .iter()
                .map(|b| b.y1)
                .min()
                .is_some_and(|y| y > top)
        })
        .find_map(|(_, span)| span.as_ref().map(|span| span.start))
}

/// The added block's Markdown as it goes in at byte `at` of the page's: a paragraph of its own.
fn added_text(markdown: &str, at: usize, page: &str) -> String {
    let text = as_in_page(markdown.trim());
    if at >= page.len() {
        let gap = if page.is_empty() || page.ends_with("\n\n") {
            ""
        } else if page.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        };
        format!("{gap}{text}\n")
    } else {
        format!("{text}\n\n")
    }
}

/// The block the correction was made to: the one at its place if it still has the corrected text, else the
/// one with that text whose boxes overlap the corrected block's most (and at all).
fn corrected_block(blocks: &[Block], correction: &Correction) -> Option<usize> {
    let same_text = |block: &Block| block.markdown.trim() == correction.original.trim();
    if let Some(at) = blocks
        .iter()
        .position(|b| b.id == correction.block_id && same_text(b))
    {
        return Some(at);
    }
    // Renumbered by a change elsewhere on the page: the same text where the corrected block was (the same
    // words elsewhere on the page are another block).
    blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| same_text(b))
        .map(|(at, b)| (at, overlap(&b.boxes, &correction.boxes)))
        .filter(|(_, area)| *area > 0)
        .max_by_key(|(_, area)| *area)
        .map(|(at, _)| at)
}

/// The block whose boxes overlap `boxes` most (and at all).
pub fn most_overlapping<'b>(blocks: &'b [Block], boxes: &[BoxNorm]) -> Option<&'b Block> {
    blocks
        .iter()
        .map(|b| (b, overlap(&b.boxes, boxes)))
        .filter(|(_, area)| *area > 0)
        .max_by_key(|(_, area)| *area)
        .map(|(b, _)| b)
}

/// The area two lists of boxes share, in normalised units squared.
fn overlap(a: &[BoxNorm], b: &[BoxNorm]) -> u32 {
    a.iter()
        .flat_map(|p| b.iter().map(move |q| (p, q)))
        .map(|(p, q)| {
            let w = p.x2.min(q.x2).saturating_sub(p.x1.max(q.x1));
            let h = p.y2.min(q.y2).saturating_sub(p.y1.max(q.y1));
            u32::from(w) * u32::from(h)
        })
        .sum()
}

/// Where each block's text is in the page's Markdown, found in block order (a block whose text is not found
/// whole, or is empty, has none).
fn block_spans(page_markdown: &str, blocks: &[Block]) -> Vec<Option<Range<usize>>> {
    let mut from = 0;
    blocks
        .iter()
        .map(|block| {
            let text = as_in_page(block.markdown.trim());
            if text.is_empty() {
                return None;
            }
            let start = from + page_markdown[from..].find(&text)?;
            from = start + text.len();
            Some(start..from)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::PageStatus;
    use crate::markdown::{markdown_from_raw, MarkdownOptions};
    use crate::Parser;

    const RAW: &str = "<|ref|>title<|/ref|><|det|>[[80, 40, 920, 90]]<|/det|>\n# Pump manual\n\n\
        <|ref|>text<|/ref|><|det|>[[80, 100, 920, 200]]<|/det|>\nThe pump delivers 12 l/mim.\n\n\
        <|ref|>image<|/ref|><|det|>[[80, 220, 500, 600]]<|/det|>\n\n\
        <|ref|>text<|/ref|><|det|>[[80, 620, 920, 700]]<|/det|>\nThe pump delivers 12 l/mim.\n";

    fn page(raw: &str) -> PageExport {
        let mut parser = Parser::new();
        parser.push(raw);
        parser.finish();
        PageExport {
            index: 2,
            status: PageStatus::Read,
            blocks: parser.blocks().to_vec(),
            markdown: markdown_from_raw(raw, &MarkdownOptions::for_page(2)),
            stats: None,
        }
    }

    fn fix(block_id: u32, boxes: [u16; 4], original: &str, markdown: &str) -> Correction {
        Correction {
            page: 2,
            block_id,
            boxes: vec![BoxNorm {
                x1: boxes[0],
                y1: boxes[1],
                x2: boxes[2],
                y2: boxes[3],
            }],
            original: original.into(),
            markdown: markdown.into(),
            label: None,
        }
    }

    #[test]
    fn a_corrected_block_shows_in_the_blocks_and_in_the_page_markdown_where_it_was() {
        let mut page = page(RAW);
        let before = page.markdown.clone();
        let laid = correct_page(
            &mut page,
            &[fix(
                3,
                [80, 620, 920, 700],
                "The pump delivers 12 l/mim.",
                "The pump delivers 12 l/min.",
            )],
        );
        assert_eq!(laid, vec![Laid::Applied { block: 3 }]);
        assert_eq!(page.blocks[3].markdown, "The pump delivers 12 l/min.");
        assert_eq!(
            page.blocks[1].markdown.trim(),
            "The pump delivers 12 l/mim."
        );
        // Only the last of the two equal paragraphs changes; the figure link and the rest stay.
        let first = before.find("l/mim.").unwrap();
        let last = before.rfind("l/mim.").unwrap();
        let mut want = before.clone();
        want.replace_range(last..last + "l/mim.".len(), "l/min.");
        assert!(first < last);
        assert_eq!(page.markdown, want);
        assert!(page.markdown.contains("![](images/2_0.png)"));
    }

    #[test]
    fn a_reading_that_moved_the_text_keeps_the_correction_and_one_that_changed_it_reports_it() {
        // Read again: a new block came first, so the corrected paragraph is block 2 now.
        let moved = RAW.replacen(
            "<|ref|>title",
            "<|ref|>text<|/ref|><|det|>[[80, 5, 920, 30]]<|/det|>\nDraft\n\n<|ref|>title",
            1,
        );
        let correction = fix(
            1,
            [80, 100, 920, 200],
            "The pump delivers 12 l/mim.",
            "12 l/min.",
        );
        let mut page_moved = page(&moved);
        assert_eq!(
            correct_page(&mut page_moved, std::slice::from_ref(&correction)),
            vec![Laid::Applied { block: 2 }],
            "the block with that text whose box is where the corrected one was"
        );
        assert!(
            page_moved.markdown.contains("12 l/min.") && page_moved.markdown.contains("l/mim.")
        );

        let changed = RAW.replacen("12 l/mim.", "12 litres a minute.", 1);
        let mut page_changed = page(&changed);
        let before = page_changed.clone();
        assert_eq!(
            correct_page(&mut page_changed, &[correction]),
            vec![Laid::Differs {
                block: Some(1),
                now: "The pump delivers 12 litres a minute.".into()
            }]
        );
        assert_eq!(
            page_changed, before,
            "nothing is laid over a different reading"
        );
    }

    fn added(block_id: u32, boxes: [u16; 4], markdown: &str) -> Correction {
        Correction {
            label: Some("table".into()),
            ..fix(block_id, boxes, "", markdown)
        }
    }

    #[test]
    fn an_added_block_reads_where_its_box_is_and_is_listed_after_the_readings_blocks() {
        let mut page = page(RAW);
        let before = page.markdown.clone();
        // Between the figure (top 220) and the last paragraph (top 620), and one below everything.
        let laid = correct_page(
            &mut page,
            &[
                added(ADDED_FROM, [80, 605, 920, 615], "| a | b |"),
                added(ADDED_FROM + 1, [80, 900, 920, 950], "Footnote."),
            ],
        );
        assert_eq!(
            laid,
            vec![
                Laid::Added { block: ADDED_FROM },
                Laid::Added {
                    block: ADDED_FROM + 1
                }
            ]
        );
        let ids: Vec<u32> = page.blocks.iter().map(|b| b.id).collect();
        assert_eq!(ids, vec![0, 1, 2, 3, ADDED_FROM, ADDED_FROM + 1]);
        assert_eq!(page.blocks[4].label, "table");
        let last = before.rfind("The pump delivers").unwrap();
        let mut want = before.clone();
        want.insert_str(last, "| a | b |\n\n");
        want.push_str(if want.ends_with('\n') {
            "\nFootnote.\n"
        } else {
            "\n\nFootnote.\n"
        });
        assert_eq!(page.markdown, want);
    }

    #[test]
    fn an_added_block_beside_a_corrected_one_at_the_same_place_keeps_both() {
        let mut page = page(RAW);
        // Added just above the first paragraph, which is corrected too.
        correct_page(
            &mut page,
            &[
                added(ADDED_FROM, [80, 95, 920, 99], "Inserted."),
                fix(
                    1,
                    [80, 100, 920, 200],
                    "The pump delivers 12 l/mim.",
                    "12 l/min.",
                ),
            ],
        );
        let inserted = page.markdown.find("Inserted.\n\n12 l/min.");
        assert!(inserted.is_some(), "{}", page.markdown);
        assert!(!page.markdown.contains("l/mim.\n\n<|"), "{}", page.markdown);
    }

    #[test]
    fn corrections_of_other_pages_are_left_out() {
        let mut page = page(RAW);
        let before = page.clone();
        let mut other = fix(0, [80, 40, 920, 90], "# Pump manual", "# Pump");
        other.page = 5;
        assert!(correct_page(&mut page, &[other]).is_empty());
        assert_eq!(page, before);
    }
}
