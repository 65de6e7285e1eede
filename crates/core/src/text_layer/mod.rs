//! Reading a page through the PDF's own text layer, no model: words are grouped into lines, lines into
//! blocks, blocks put in reading order (columns respected), and headings found from font size.
//!
//! The result is written in the model's own grounding format
//! (`<|ref|>label<|/ref|><|det|>[[x1, y1, x2, y2]]<|/det|>\nmarkdown\n\n`, boxes in 0..999), so it flows
//! through the same parser, events, cache and exports as DeepSeek-OCR-2's output and the reader cannot
//! tell the two apart.

mod blocks;
mod headings;
mod lines;
mod reading_order;
mod tables;

use deepread_pdf::{PageSize, PageText, Rect};

pub use blocks::TextBlock;
pub use tables::{Cell, Table};

/// One block of a page read through its text layer.
#[derive(Debug, Clone)]
pub enum PageBlock {
    Text(TextBlock),
    Table(Table),
}

impl PageBlock {
    pub fn bbox(&self) -> &Rect {
        match self {
            PageBlock::Text(block) => &block.bbox,
            PageBlock::Table(table) => &table.bbox,
        }
    }
}

/// The page's text layer as grounding-format text, in reading order. Empty when the page has no text
/// (a scan): the caller then knows this page needs the model.
pub fn read_page(text: &PageText, page: PageSize) -> String {
    let (tables, words) = tables::find_tables(&text.words, &text.rules, page);
    let lines = lines::group_into_lines_between(&words, &text.rules);
    let blocks = blocks::group_into_blocks(lines)
        .into_iter()
        .map(PageBlock::Text)
        .chain(tables.into_iter().map(PageBlock::Table))
        .collect();
    let ordered = reading_order::order_blocks(blocks);
    let labelled = headings::label_blocks(ordered);
    labelled
        .iter()
        .map(|(label, block)| grounding_block(label, block, page))
        .collect()
}

fn grounding_block(label: &str, block: &PageBlock, page: PageSize) -> String {
    let [x1, y1, x2, y2] = normalised_box(block.bbox(), page);
    let markdown = match block {
        PageBlock::Table(table) => table.markdown(),
        PageBlock::Text(text) => match label {
            "title" => format!("# {}", text.text()),
            "sub_title" => format!("## {}", text.text()),
            _ => text.markdown(),
        },
    };
    format!("<|ref|>{label}<|/ref|><|det|>[[{x1}, {y1}, {x2}, {y2}]]<|/det|>\n{markdown}\n\n")
}

/// Page points to the model's 0..999 grid (the reference maps back with `v / 999 * size`).
fn normalised_box(bbox: &Rect, page: PageSize) -> [u16; 4] {
    let scale = |v: f32, size: f32| ((v / size.max(1.0)) * 999.0).round().clamp(0.0, 999.0) as u16;
    [
        scale(bbox.left, page.width_pt),
        scale(bbox.top, page.height_pt),
        scale(bbox.right, page.width_pt),
        scale(bbox.bottom, page.height_pt),
    ]
}

#[cfg(test)]
pub(crate) mod test_words {
    use deepread_pdf::{Rect, Word};

    /// A word of `size`-point text whose box starts at (x, y), with a width of 0.5 em per character.
    pub fn word(text: &str, x: f32, y: f32, size: f32) -> Word {
        let width = text.chars().count() as f32 * size * 0.5;
        Word {
            text: text.to_owned(),
            bbox: Rect {
                left: x,
                top: y,
                right: x + width,
                bottom: y + size,
            },
            font_size: size,
            bold: false,
        }
    }

    /// A line of words starting at (x, y), spaced as typeset text is.
    pub fn line(text: &str, x: f32, y: f32, size: f32) -> Vec<Word> {
        let mut cursor = x;
        text.split_whitespace()
            .map(|t| {
                let w = word(t, cursor, y, size);
                cursor = w.bbox.right + size * 0.3;
                w
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::test_words::line;
    use super::*;

    const LETTER: PageSize = PageSize {
        width_pt: 612.0,
        height_pt: 792.0,
    };

    #[test]
    fn boxes_are_on_the_0_to_999_grid_of_the_page() {
        let bbox = Rect {
            left: 0.0,
            top: 396.0,
            right: 612.0,
            bottom: 792.0,
        };
        assert_eq!(normalised_box(&bbox, LETTER), [0, 500, 999, 999]);
    }

    #[test]
    fn a_page_without_text_reads_as_nothing() {
        assert_eq!(read_page(&PageText::default(), LETTER), "");
    }

    #[test]
    fn heading_and_paragraph_come_out_as_grounding_blocks() {
        let mut words = line("Results", 72.0, 72.0, 18.0);
        words.extend(line("The model reads every page of the", 72.0, 110.0, 10.0));
        words.extend(line("document in order.", 72.0, 122.0, 10.0));
        let text = read_page(
            &PageText {
                words,
                rules: Vec::new(),
            },
            LETTER,
        );
        let blocks: Vec<&str> = text.split("<|ref|>").filter(|b| !b.is_empty()).collect();
        assert_eq!(blocks.len(), 2, "{text}");
        assert!(blocks[0].starts_with("title<|/ref|><|det|>[["), "{text}");
        assert!(blocks[0].ends_with("<|/det|>\n# Results\n\n"), "{text}");
        assert!(blocks[1].starts_with("text<|/ref|>"), "{text}");
        assert!(blocks[1].ends_with("\nThe model reads every page of the document in order.\n\n"));
    }
}
