//! A page's own text layer, as words with boxes in displayed page space.
//!
//! PDFium gives characters in reading order, with generated spaces and line breaks where it infers
//! them. We split words on any whitespace and also where two neighbouring glyphs are far apart or
//! not on the same line (table cells often have no space character between them).

use pdfium_render::prelude::{PdfFontWeight, PdfPageText, PdfPageTextChar};
use serde::Serialize;

use crate::geometry::{DisplayTransform, Rect};
use crate::rules::Rule;

/// What a page's text layer gives to read it by: its words, and the rules drawn among them (tables,
/// form fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PageText {
    pub words: Vec<Word>,
    pub rules: Vec<Rule>,
}

/// One word of a page's text layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Word {
    pub text: String,
    /// In PDF points, origin at the top-left of the displayed page, y down.
    pub bbox: Rect,
    /// The largest font size among its glyphs, in points.
    pub font_size: f32,
    /// Most of its glyphs use a font of weight 600 or more.
    pub bold: bool,
}

/// A gap wider than this fraction of the font size between two glyphs ends a word. A normal
/// inter-word space is about a quarter to a third of an em; kerning and letter spacing stay well
/// below this.
const WORD_GAP_EM: f32 = 0.2;

/// Two glyphs are on the same line when their boxes overlap across the line by at least this much
/// of the smaller one.
const SAME_LINE_OVERLAP: f32 = 0.5;

/// What PDFium's text page gives for a hyphen at the end of a line (its `FPDFTEXT_CHAR_HYPHEN`).
const PDFIUM_LINE_END_HYPHEN: char = '\u{2}';

/// One visible character, already in displayed space.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Glyph {
    pub text: char,
    pub bbox: Rect,
    pub font_size: f32,
    pub bold: bool,
    /// The line runs top-to-bottom or bottom-to-top on the displayed page.
    pub vertical: bool,
    /// Its index in PDFium's character stream.
    pub index: usize,
}

/// What PDFium's character stream holds at one position.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    Glyph(Glyph),
    /// Whitespace, generated or real: always ends a word.
    Break,
}

pub(crate) fn read_words(text: &PdfPageText, transform: &DisplayTransform) -> Vec<Word> {
    let chars = text.chars();
    let pieces: Vec<Piece> = chars
        .iter()
        .filter_map(|c| read_piece(&c, transform))
        .collect();
    let mut words = group_indexed_words(&pieces);
    // The font's name is costly to ask PDFium for, so it is asked once a word, not once a glyph.
    for (word, first) in &mut words {
        if !word.bold {
            word.bold = chars
                .get(*first)
                .is_ok_and(|c| bold_font_name(&c.font_name()));
        }
    }
    words.into_iter().map(|(word, _)| word).collect()
}

/// `None` for characters that carry nothing to read (control codes, PDFium's internal markers).
fn read_piece(c: &PdfPageTextChar, transform: &DisplayTransform) -> Option<Piece> {
    let ch = match c.unicode_char()? {
        // PDFium's mark for a hyphen that breaks a word at the end of a line: kept as one, so that the
        // layout can join the word again.
        PDFIUM_LINE_END_HYPHEN => '-',
        ch => ch,
    };
    if ch.is_whitespace() {
        return Some(Piece::Break);
    }
    if ch.is_control() || matches!(ch, '\u{FFFE}' | '\u{FFFF}') {
        return None;
    }
    let bounds = c.loose_bounds().ok()?;
    let bbox = transform.pdf_rect(&bounds);
    let display_angle = c.angle_degrees().unwrap_or(0.0) + transform.rotation_degrees();
    Some(Piece::Glyph(Glyph {
        text: ch,
        bbox,
        font_size: c.scaled_font_size().value,
        bold: bold_weight(c.font_weight()),
        vertical: runs_vertically(display_angle),
        index: c.index(),
    }))
}

/// Bold by the font's weight. Many embedded Type 1 fonts report none: their name says it instead
/// ("NimbusRomNo9L-Medi", "Arial-BoldMT", "SourceSansPro-Semibold"), see [`bold_font_name`].
fn bold_weight(weight: Option<PdfFontWeight>) -> bool {
    match weight {
        Some(PdfFontWeight::Weight600)
        | Some(PdfFontWeight::Weight700Bold)
        | Some(PdfFontWeight::Weight800)
        | Some(PdfFontWeight::Weight900) => true,
        Some(PdfFontWeight::Custom(w)) => w >= 600,
        _ => false,
    }
}

fn bold_font_name(name: &str) -> bool {
    // The style follows the family, after a hyphen or comma ("Times-Bold", "Arial,Bold"); TeX's own
    // fonts say it in the family ("CMBX10", "SFBX1000": bold extended), after any subset tag.
    let style = name
        .rsplit(['-', ','])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let named = ["bold", "medi", "black", "heavy", "semibold", "demi"]
        .iter()
        .any(|mark| style.contains(mark))
        && name.len() > style.len();
    let family = name.rsplit('+').next().unwrap_or(name);
    let tex = ["CMBX", "SFBX", "CMSSBX", "SFSX", "CMB10", "LMROMAN10-BOLD"]
        .iter()
        .any(|prefix| family.to_ascii_uppercase().starts_with(prefix));
    named || tex
}

/// Text at 90° or 270° (within 30°) on the displayed page runs vertically.
fn runs_vertically(degrees: f32) -> bool {
    let folded = degrees.rem_euclid(180.0);
    (60.0..=120.0).contains(&folded)
}

#[cfg(test)]
pub(crate) fn group_words(pieces: &[Piece]) -> Vec<Word> {
    group_indexed_words(pieces)
        .into_iter()
        .map(|(word, _)| word)
        .collect()
}

/// Words, each with the index of its first glyph.
fn group_indexed_words(pieces: &[Piece]) -> Vec<(Word, usize)> {
    let mut words = Vec::new();
    let mut current: Vec<&Glyph> = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Break => flush(&mut current, &mut words),
            Piece::Glyph(glyph) => {
                if let Some(previous) = current.last() {
                    if !continues_word(previous, glyph) {
                        flush(&mut current, &mut words);
                    }
                }
                current.push(glyph);
            }
        }
    }
    flush(&mut current, &mut words);
    words
}

fn flush(glyphs: &mut Vec<&Glyph>, words: &mut Vec<(Word, usize)>) {
    if let Some(word) = make_word(glyphs) {
        words.push((word, glyphs[0].index));
    }
    glyphs.clear();
}

fn make_word(glyphs: &[&Glyph]) -> Option<Word> {
    let first = glyphs.first()?;
    let bbox = glyphs
        .iter()
        .filter(|g| has_extent(&g.bbox))
        .fold(None, |acc: Option<Rect>, g| {
            Some(acc.map_or(g.bbox, |r| r.union(&g.bbox)))
        })
        .unwrap_or(first.bbox);
    let bold_count = glyphs.iter().filter(|g| g.bold).count();
    let reported_size = glyphs.iter().map(|g| g.font_size).fold(0.0, f32::max);
    Some(Word {
        text: glyphs.iter().map(|g| g.text).collect(),
        bbox,
        // Some producers' fonts give PDFium no size (a zero text matrix scale): the glyphs' loose box,
        // which spans the font's ascent to descent, is about one em.
        font_size: if reported_size > 0.5 {
            reported_size
        } else if first.vertical {
            bbox.width()
        } else {
            bbox.height()
        },
        bold: bold_count * 2 > glyphs.len(),
    })
}

/// PDFium reports an empty box for some glyphs (zero-width marks); they must not stretch the word.
fn has_extent(r: &Rect) -> bool {
    r.width() > 0.0 || r.height() > 0.0
}

/// Whether `next` belongs to the same word as `previous`: same direction, same line, and close.
fn continues_word(previous: &Glyph, next: &Glyph) -> bool {
    if previous.vertical != next.vertical {
        return false;
    }
    if !has_extent(&previous.bbox) || !has_extent(&next.bbox) {
        return true;
    }
    let (a, b) = (&previous.bbox, &next.bbox);
    // Along the line and across it, in displayed space.
    let (along_gap, across_overlap, across_extent) = if next.vertical {
        (
            gap(a.top, a.bottom, b.top, b.bottom),
            overlap(a.left, a.right, b.left, b.right),
            a.width().min(b.width()),
        )
    } else {
        (
            gap(a.left, a.right, b.left, b.right),
            overlap(a.top, a.bottom, b.top, b.bottom),
            a.height().min(b.height()),
        )
    };
    let same_line = across_overlap >= SAME_LINE_OVERLAP * across_extent;
    let em = word_em(previous, next, across_extent);
    same_line && along_gap <= WORD_GAP_EM * em
}

/// The font size to measure gaps against; the box height when PDFium reports no usable size.
fn word_em(previous: &Glyph, next: &Glyph, across_extent: f32) -> f32 {
    let size = previous.font_size.max(next.font_size);
    if size > 0.5 {
        size
    } else {
        across_extent
    }
}

/// The empty space between two intervals (0 when they touch or overlap), either order, so
/// right-to-left scripts measure the same as left-to-right ones.
fn gap(a0: f32, a1: f32, b0: f32, b1: f32) -> f32 {
    (b0 - a1).max(a0 - b1).max(0.0)
}

fn overlap(a0: f32, a1: f32, b0: f32, b1: f32) -> f32 {
    (a1.min(b1) - a0.max(b0)).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glyph(text: char, left: f32, top: f32, width: f32) -> Piece {
        Piece::Glyph(Glyph {
            text,
            bbox: Rect {
                left,
                top,
                right: left + width,
                bottom: top + 10.0,
            },
            font_size: 10.0,
            bold: false,
            vertical: false,
            index: 0,
        })
    }

    fn texts(words: &[Word]) -> Vec<&str> {
        words.iter().map(|w| w.text.as_str()).collect()
    }

    #[test]
    fn whitespace_splits_words_and_boxes_cover_their_glyphs() {
        let pieces = [
            glyph('a', 0.0, 0.0, 5.0),
            glyph('b', 5.0, 0.0, 5.0),
            Piece::Break,
            glyph('c', 13.0, 0.0, 5.0),
        ];
        let words = group_words(&pieces);
        assert_eq!(texts(&words), ["ab", "c"]);
        assert_eq!(
            words[0].bbox,
            Rect {
                left: 0.0,
                top: 0.0,
                right: 10.0,
                bottom: 10.0
            }
        );
    }

    #[test]
    fn a_wide_gap_without_a_space_splits_words() {
        // 3 pt apart at 10 pt is 0.3 em: wider than a word gap.
        let pieces = [glyph('a', 0.0, 0.0, 5.0), glyph('b', 8.0, 0.0, 5.0)];
        assert_eq!(texts(&group_words(&pieces)), ["a", "b"]);
    }

    #[test]
    fn a_new_line_without_a_space_splits_words() {
        let pieces = [glyph('a', 0.0, 0.0, 5.0), glyph('b', 5.0, 12.0, 5.0)];
        assert_eq!(texts(&group_words(&pieces)), ["a", "b"]);
    }

    #[test]
    fn right_to_left_glyphs_join_when_adjacent() {
        let pieces = [glyph('b', 10.0, 0.0, 5.0), glyph('a', 5.0, 0.0, 5.0)];
        assert_eq!(texts(&group_words(&pieces)), ["ba"]);
    }

    #[test]
    fn vertical_text_joins_along_the_column() {
        let column = |text, top| {
            Piece::Glyph(Glyph {
                text,
                bbox: Rect {
                    left: 0.0,
                    top,
                    right: 10.0,
                    bottom: top + 5.0,
                },
                font_size: 10.0,
                bold: true,
                vertical: true,
                index: 0,
            })
        };
        let words = group_words(&[column('a', 0.0), column('b', 5.0), column('c', 20.0)]);
        assert_eq!(texts(&words), ["ab", "c"]);
        assert!(words[0].bold);
    }

    #[test]
    fn bold_is_read_from_the_style_in_a_font_name() {
        assert!(bold_font_name("NimbusRomNo9L-Medi"));
        assert!(bold_font_name("ABCDEF+Arial-BoldMT"));
        assert!(bold_font_name("Arial,BoldItalic"));
        assert!(bold_font_name("SourceSansPro-Semibold"));
        assert!(!bold_font_name("NimbusRomNo9L-Regu"));
        assert!(!bold_font_name("Boldini"), "a family that only sounds bold");
        assert!(bold_font_name("AAAAAD+SFBX1000"));
        assert!(bold_font_name("CMBX12"));
        assert!(!bold_font_name("CMR10"));
        assert!(!bold_font_name("AAAAAC+SFRM1000"));
    }

    #[test]
    fn vertical_means_near_90_or_270_degrees() {
        assert!(runs_vertically(90.0));
        assert!(runs_vertically(-90.0));
        assert!(runs_vertically(270.0 + 360.0));
        assert!(!runs_vertically(0.0));
        assert!(!runs_vertically(180.0));
        assert!(!runs_vertically(-10.0));
    }
}
