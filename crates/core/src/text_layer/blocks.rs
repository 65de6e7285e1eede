//! Lines into blocks (paragraphs, headings): lines stacked closely, sharing horizontal extent and
//! type size.

use deepread_pdf::Rect;

use super::lines::Line;

/// Largest blank space between two lines of one paragraph, in line heights.
const MAX_LINE_GAP: f32 = 0.8;
/// Type size may vary this much inside a block (inline maths, small caps).
const MAX_SIZE_RATIO: f32 = 1.2;

#[derive(Debug, Clone)]
pub struct TextBlock {
    pub lines: Vec<Line>,
    pub bbox: Rect,
    pub font_size: f32,
}

impl TextBlock {
    fn start(line: Line) -> Self {
        TextBlock {
            bbox: line.bbox,
            font_size: line.font_size,
            lines: vec![line],
        }
    }

    fn continues_with(&self, line: &Line) -> bool {
        let Some(last) = self.lines.last() else {
            return false;
        };
        let height = last.bbox.height().max(line.bbox.height()).max(1.0);
        let gap = line.bbox.top - last.bbox.bottom;
        let ratio =
            last.font_size.max(line.font_size) / last.font_size.min(line.font_size).max(0.1);
        !line.is_list_item()
            && gap <= MAX_LINE_GAP * height
            && gap >= -0.5 * height
            && ratio <= MAX_SIZE_RATIO
            && horizontal_overlap(&self.bbox, &line.bbox) > 0.0
            && last.bold() == line.bold()
    }

    fn push(&mut self, line: Line) {
        self.bbox = self.bbox.union(&line.bbox);
        self.lines.push(line);
    }

    /// Characters of text, the weight of this block's type size when finding the body size.
    pub fn char_count(&self) -> usize {
        self.lines
            .iter()
            .flat_map(|l| &l.words)
            .map(|w| w.text.chars().count())
            .sum()
    }

    pub fn bold(&self) -> bool {
        self.lines.iter().all(Line::bold)
    }

    /// The block as Markdown: its text, a list item's bullet written as Markdown's.
    pub fn markdown(&self) -> String {
        let text = self.text();
        match self.lines.first() {
            Some(first) if first.is_list_item() => {
                let rest = text
                    .trim_start_matches(|c: char| !c.is_whitespace())
                    .trim_start();
                format!("- {rest}")
            }
            _ => text,
        }
    }

    /// The block's text as one paragraph: lines joined by spaces, words hyphenated across a line
    /// break joined again.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for line in &self.lines {
            let line_text = line.text();
            if text.ends_with('-') && starts_lowercase(&line_text) {
                text.pop();
            } else if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&line_text);
        }
        text
    }
}

fn starts_lowercase(text: &str) -> bool {
    text.chars().next().is_some_and(char::is_lowercase)
}

fn horizontal_overlap(a: &Rect, b: &Rect) -> f32 {
    a.right.min(b.right) - a.left.max(b.left)
}

pub fn group_into_blocks(mut lines: Vec<Line>) -> Vec<TextBlock> {
    lines.sort_by(|a, b| a.bbox.top.total_cmp(&b.bbox.top));
    let mut blocks: Vec<TextBlock> = Vec::new();
    for line in lines {
        // The nearest block above that this line continues; blocks in other columns do not overlap
        // it horizontally, so they are passed over.
        let target = blocks.iter_mut().rev().find(|b| b.continues_with(&line));
        match target {
            Some(block) => block.push(line),
            None => blocks.push(TextBlock::start(line)),
        }
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::super::lines::group_into_lines;
    use super::super::test_words::line;
    use super::*;

    fn blocks_of(words: Vec<deepread_pdf::Word>) -> Vec<String> {
        group_into_blocks(group_into_lines(&words))
            .iter()
            .map(TextBlock::text)
            .collect()
    }

    #[test]
    fn close_lines_form_a_paragraph_and_hyphenation_is_undone() {
        let mut words = line("A paragraph that is hyphen-", 72.0, 100.0, 10.0);
        words.extend(line("ated across lines.", 72.0, 112.0, 10.0));
        assert_eq!(
            blocks_of(words),
            ["A paragraph that is hyphenated across lines."]
        );
    }

    #[test]
    fn a_blank_line_starts_a_new_paragraph() {
        let mut words = line("First paragraph.", 72.0, 100.0, 10.0);
        words.extend(line("Second paragraph.", 72.0, 130.0, 10.0));
        assert_eq!(blocks_of(words), ["First paragraph.", "Second paragraph."]);
    }

    #[test]
    fn a_change_of_type_size_starts_a_new_block() {
        let mut words = line("Introduction", 72.0, 100.0, 14.0);
        words.extend(line("Body text follows.", 72.0, 116.0, 10.0));
        assert_eq!(blocks_of(words), ["Introduction", "Body text follows."]);
    }

    #[test]
    fn each_list_item_is_a_block_written_as_markdown() {
        let mut words = vec![super::super::test_words::word("•", 72.0, 100.0, 10.0)];
        words.extend(line("apples and", 90.0, 100.0, 10.0));
        words.extend(line("pears", 90.0, 112.0, 10.0));
        words.push(super::super::test_words::word("•", 72.0, 124.0, 10.0));
        words.extend(line("plums", 90.0, 124.0, 10.0));
        let blocks = group_into_blocks(group_into_lines(&words));
        let markdown: Vec<String> = blocks.iter().map(TextBlock::markdown).collect();
        assert_eq!(markdown, ["- apples and pears", "- plums"]);
    }

    #[test]
    fn columns_are_separate_blocks() {
        let mut words = line("left one", 72.0, 100.0, 10.0);
        words.extend(line("right one", 320.0, 100.0, 10.0));
        words.extend(line("left two", 72.0, 112.0, 10.0));
        words.extend(line("right two", 320.0, 112.0, 10.0));
        assert_eq!(
            blocks_of(words),
            ["left one left two", "right one right two"]
        );
    }
}
