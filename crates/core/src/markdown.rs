//! A page's final Markdown, made the way the reference scripts make `result.mmd` from the raw output
//! (deepseek-ai/DeepSeek-OCR-2, `run_dpsk_ocr2_image.py`, `run_dpsk_ocr2_pdf.py`, and the HF `infer`):
//!
//! 1. a trailing end-of-sentence token is dropped and the output is stripped of surrounding
//!    whitespace (HF `infer`: `outputs.strip()`, Python's definition of whitespace);
//! 2. each `<|ref|>image<|/ref|><|det|>…<|/det|>` becomes `![](FIGURE)\n`, where the reference
//!    writes `images/{n}.jpg` (PDF: `images/{page}_{n}.jpg`); here the link is a template;
//! 3. every other tag group is deleted and nothing else: the newline after `<|/det|>` and the blank
//!    lines between blocks stay, so the Markdown usually starts with a newline, as `result.mmd` does;
//! 4. `\coloneqq` becomes `:=` and `\eqqcolon` becomes `=:`;
//! 5. the PDF script also collapses blank lines (`\n\n\n\n` and `\n\n\n` to `\n\n`, once per tag
//!    group, which in effect leaves no run longer than two): [`MarkdownOptions::collapse_blank_lines`].
//!
//! Where the reference's regex cannot see a tag group (an unclosed `<|det|>`, a stray closing tag)
//! it leaves the tags in its text; here they go too, since tags are never Markdown. An `image`
//! block whose boxes could not be read gets no link: there is nothing to crop.

use crate::grounding::{Parser, SegmentKind, Tag};

/// Label of the blocks that become figure links.
const IMAGE_LABEL: &str = "image";

/// How to write a page's Markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkdownOptions {
    /// The page, 0-based, for the figure links.
    pub page: usize,
    /// Target of each figure link: `{page}` and `{n}` (the figure's 0-based number on the page) are
    /// replaced.
    pub figure_template: String,
    /// Leave no run of more than two newlines (the reference PDF script's behaviour).
    pub collapse_blank_lines: bool,
}

impl MarkdownOptions {
    /// The reference PDF script's output, with PNG figures: `images/{page}_{n}.png`.
    pub fn for_page(page: usize) -> Self {
        MarkdownOptions {
            page,
            figure_template: "images/{page}_{n}.png".to_owned(),
            collapse_blank_lines: true,
        }
    }

    fn figure_link(&self, n: usize) -> String {
        let target = self
            .figure_template
            .replace("{page}", &self.page.to_string())
            .replace("{n}", &n.to_string());
        format!("![]({target})\n")
    }
}

/// The final Markdown of a parsed page (call after [`Parser::finish`]).
pub fn page_markdown(parser: &Parser, options: &MarkdownOptions) -> String {
    let raw = parser.raw();
    let Some(visible) = visible_range(parser) else {
        return String::new();
    };
    let mut out = String::with_capacity(raw.len());
    let mut figures = 0;
    for segment in parser.segments() {
        let start = segment.range.start.max(visible.start);
        let end = segment.range.end.min(visible.end);
        if start >= end {
            continue;
        }
        match segment.kind {
            SegmentKind::Content | SegmentKind::Separator => out.push_str(&raw[start..end]),
            SegmentKind::Tag(Tag::DetEnd) => {
                let block = segment
                    .block
                    .and_then(|id| parser.blocks().get(id as usize));
                if block.is_some_and(|b| b.label == IMAGE_LABEL && !b.boxes.is_empty()) {
                    out.push_str(&options.figure_link(figures));
                    figures += 1;
                }
            }
            SegmentKind::Tag(_) | SegmentKind::Label | SegmentKind::Boxes => {}
        }
    }
    let out = replace_colon_equals(&out);
    if options.collapse_blank_lines {
        collapse_blank_lines(&out)
    } else {
        out
    }
}

fn replace_colon_equals(text: &str) -> String {
    text.replace("\\coloneqq", ":=").replace("\\eqqcolon", "=:")
}

/// A block's content as [`page_markdown`] writes it into the page (with blank lines collapsed): how the
/// block is found in its page's Markdown.
pub(crate) fn as_in_page(block_markdown: &str) -> String {
    collapse_blank_lines(&replace_colon_equals(block_markdown))
}

/// The final Markdown of a complete raw output.
pub fn markdown_from_raw(raw: &str, options: &MarkdownOptions) -> String {
    let mut parser = Parser::new();
    parser.push(raw);
    parser.finish();
    page_markdown(&parser, options)
}

/// Python's `str.isspace`, which the reference's `strip()` uses: Unicode whitespace plus the
/// four information separators U+001C..U+001F.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The byte range of the raw output left after dropping end-of-sentence tokens and stripping
/// whitespace from both ends; `None` when nothing is left.
fn visible_range(parser: &Parser) -> Option<std::ops::Range<usize>> {
    let raw = parser.raw();
    let kept = || {
        parser
            .segments()
            .iter()
            .filter(|s| s.kind != SegmentKind::Tag(Tag::EndOfSentence))
    };
    let start = kept().find_map(|s| {
        raw[s.range.clone()]
            .char_indices()
            .find(|(_, c)| !is_python_space(*c))
            .map(|(i, _)| s.range.start + i)
    })?;
    let end = kept().rev().find_map(|s| {
        raw[s.range.clone()]
            .char_indices()
            .rev()
            .find(|(_, c)| !is_python_space(*c))
            .map(|(i, c)| s.range.start + i + c.len_utf8())
    })?;
    Some(start..end)
}

/// Every run of three or more newlines becomes exactly two.
fn collapse_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut newlines = 0;
    for c in text.chars() {
        if c == '\n' {
            newlines += 1;
            if newlines <= 2 {
                out.push(c);
            }
        } else {
            newlines = 0;
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hf_style(page: usize) -> MarkdownOptions {
        MarkdownOptions {
            page,
            figure_template: "images/{n}.jpg".into(),
            collapse_blank_lines: false,
        }
    }

    #[test]
    fn tags_go_content_and_separators_stay_as_in_the_reference() {
        // The reference deletes only the tag string: the newline after <|/det|> remains, and the
        // figure link brings its own newline.
        let raw = "<|ref|>title<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|>\n# T \n\n\
                   <|ref|>image<|/ref|><|det|>[[0, 0, 999, 999]]<|/det|>\n\n\
                   <|ref|>text<|/ref|><|det|>[[5, 6, 7, 8]]<|/det|>\nBody\n\n<｜end▁of▁sentence｜>";
        assert_eq!(
            markdown_from_raw(raw, &hf_style(0)),
            "\n# T \n\n![](images/0.jpg)\n\n\n\nBody"
        );
        assert_eq!(
            markdown_from_raw(raw, &MarkdownOptions::for_page(7)),
            "\n# T \n\n![](images/7_0.png)\n\nBody"
        );
    }

    #[test]
    fn figures_are_numbered_per_page_and_unreadable_ones_get_no_link() {
        let raw = "<|ref|>image<|/ref|><|det|>[[0, 0, 9, 9]]<|/det|>\n\
                   <|ref|>image<|/ref|><|det|>[[0, raw 0, 9, 9]]<|/det|>\n\
                   <|ref|>image<|/ref|><|det|>[[1, 1, 9, 9]]<|/det|>";
        assert_eq!(
            markdown_from_raw(raw, &hf_style(0)),
            "![](images/0.jpg)\n\n\n![](images/1.jpg)\n"
        );
    }

    #[test]
    fn colon_equals_macros_are_replaced() {
        let raw = "<|ref|>equation<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|>\n\\[a \\coloneqq b \\eqqcolon c\\]";
        assert_eq!(markdown_from_raw(raw, &hf_style(0)), "\n\\[a := b =: c\\]");
    }

    #[test]
    fn plain_text_output_is_only_stripped() {
        assert_eq!(
            markdown_from_raw("  Free text\n\n\n\nmore \u{1f}\n", &hf_style(0)),
            "Free text\n\n\n\nmore"
        );
        assert_eq!(markdown_from_raw(" \n\t", &hf_style(0)), "");
    }

    #[test]
    fn collapsing_leaves_at_most_two_newlines() {
        assert_eq!(
            collapse_blank_lines("a\n\n\n\n\n\nb\nc\n\nd"),
            "a\n\nb\nc\n\nd"
        );
    }
}
