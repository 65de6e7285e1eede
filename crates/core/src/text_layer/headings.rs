//! Headings from type size: the body size is the size most of the page's characters are set in; short
//! blocks set clearly larger are headings, the largest of them titles.

use super::blocks::TextBlock;
use super::PageBlock;

/// A heading is set at least this much larger than the body text.
const HEADING_RATIO: f32 = 1.15;
/// Titles are set much larger still.
const TITLE_RATIO: f32 = 1.6;
/// Headings are short: longer blocks in large type are pull quotes or slides' body text.
const MAX_HEADING_CHARS: usize = 160;

pub fn label_blocks(blocks: Vec<PageBlock>) -> Vec<(&'static str, PageBlock)> {
    let body = body_size(blocks.iter().filter_map(|b| match b {
        PageBlock::Text(text) => Some(text),
        PageBlock::Table(_) => None,
    }));
    blocks
        .into_iter()
        .map(|b| match &b {
            PageBlock::Text(text) => (label(text, body), b),
            PageBlock::Table(_) => ("table", b),
        })
        .collect()
}

fn label(block: &TextBlock, body: f32) -> &'static str {
    let short = block.char_count() <= MAX_HEADING_CHARS && block.lines.len() <= 3;
    if !short || body <= 0.0 {
        "text"
    } else if block.font_size >= TITLE_RATIO * body {
        "title"
    } else if block.font_size >= HEADING_RATIO * body || (block.bold() && block.lines.len() == 1) {
        "sub_title"
    } else {
        "text"
    }
}

/// The type size (to the half point) carrying the most characters.
fn body_size<'a>(blocks: impl Iterator<Item = &'a TextBlock>) -> f32 {
    let mut weights: Vec<(i32, usize)> = Vec::new();
    for block in blocks {
        let key = (block.font_size * 2.0).round() as i32;
        match weights.iter_mut().find(|(k, _)| *k == key) {
            Some((_, count)) => *count += block.char_count(),
            None => weights.push((key, block.char_count())),
        }
    }
    weights
        .iter()
        .max_by_key(|(_, count)| *count)
        .map_or(0.0, |(key, _)| *key as f32 / 2.0)
}

#[cfg(test)]
mod tests {
    use super::super::blocks::group_into_blocks;
    use super::super::lines::group_into_lines;
    use super::super::test_words::line;
    use super::*;

    #[test]
    fn sizes_relative_to_the_body_decide_title_sub_title_and_text() {
        let mut words = line("Big Title", 72.0, 50.0, 24.0);
        words.extend(line("1 Introduction", 72.0, 100.0, 12.5));
        words.extend(line(
            "Body text that is long enough to outweigh the rest",
            72.0,
            130.0,
            10.0,
        ));
        words.extend(line(
            "and carries on for a second line of body text here",
            72.0,
            142.0,
            10.0,
        ));
        let blocks = group_into_blocks(group_into_lines(&words));
        let labelled = label_blocks(blocks.into_iter().map(PageBlock::Text).collect());
        let labels: Vec<&str> = labelled.iter().map(|(l, _)| *l).collect();
        assert_eq!(labels, ["title", "sub_title", "text"]);
    }
}
