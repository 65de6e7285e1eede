//! The values people typed or chose in a PDF form (AcroForm widgets), as words of the page's text layer.
//!
//! A filled field draws its value from the widget's appearance, not from the page's content, so PDFium's
//! page text never has it: a filled form read through the text layer alone comes out as labels without
//! values. Each value becomes words laid across its widget's box, where the rendered page shows it.

use pdfium_render::prelude::{PdfFormField, PdfPage, PdfPageAnnotation, PdfPageAnnotationCommon};

use crate::geometry::{DisplayTransform, Rect};
use crate::text::Word;

/// Field text is never larger than this (points), so that a tall box does not read as a heading.
const MAX_VALUE_FONT_PT: f32 = 11.0;
/// The share of a one-line box's height its text takes.
const TEXT_HEIGHT_SHARE: f32 = 0.7;
/// A glyph's width, in ems, where the widget's font is not known: about a Helvetica average, so that a
/// value's words sit as close as printed words and are not spread across a wide box.
const GLYPH_WIDTH_EM: f32 = 0.55;

/// The page's filled-in field values, each as words in its widget's box in displayed space, in a font no
/// larger than `body_pt` (the page's own text size: field text is body text, never a heading).
pub(crate) fn read_field_values(
    page: &PdfPage,
    transform: &DisplayTransform,
    body_pt: f32,
) -> Vec<Word> {
    page.annotations()
        .iter()
        .filter_map(|annotation| {
            let PdfPageAnnotation::Widget(widget) = &annotation else {
                return None;
            };
            if widget.is_hidden() {
                return None;
            }
            let value = field_value(widget.form_field()?)?;
            let bounds = widget.bounds().ok()?;
            let bbox = transform.pdf_rect(&bounds);
            Some(lay_out_value(&value, bbox, body_pt))
        })
        .flatten()
        .collect()
}

/// What a field shows as text: its text or its choice; None when empty. Ticks are left out: a form's
/// checkbox value and the state its widget draws can disagree (the fixtures' tax form has two boxes
/// PDFium calls checked that render empty), and a tick the page does not show is worse than none.
fn field_value(field: &PdfFormField) -> Option<String> {
    let value = match field {
        PdfFormField::Text(text) => text.value(),
        PdfFormField::ComboBox(combo) => combo.value(),
        PdfFormField::ListBox(list) => list.value(),
        _ => None,
    }?;
    (!value.trim().is_empty()).then_some(value)
}

/// A value's words in `bbox`, left-aligned: one line centred in it as a one-line field shows it, several
/// stacked from its top. The widget's font is not known here, only its box: the text takes most of a line's
/// height up to `max_font_pt`, and its glyphs a Helvetica-like width. Lines are no taller than the text
/// needs, so a tall box does not reach into the lines of the labels beside it.
pub(crate) fn lay_out_value(value: &str, bbox: Rect, max_font_pt: f32) -> Vec<Word> {
    let lines: Vec<&str> = value
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    let cap = max_font_pt.clamp(1.0, MAX_VALUE_FONT_PT);
    let line_height = (bbox.height() / lines.len().max(1) as f32).min(cap / TEXT_HEIGHT_SHARE);
    let font_size = (line_height * TEXT_HEIGHT_SHARE).max(1.0);
    let first_top = match lines.len() {
        1 => bbox.top + (bbox.height() - line_height) / 2.0,
        _ => bbox.top,
    };
    lines
        .iter()
        .enumerate()
        .flat_map(|(row, line)| {
            let top = first_top + row as f32 * line_height;
            let line_box = Rect {
                top,
                bottom: top + line_height,
                ..bbox
            };
            lay_out_line(line, line_box, font_size)
        })
        .collect()
}

/// One line's words from the box's left edge, glyphs `GLYPH_WIDTH_EM` wide or narrower where the line
/// would not fit.
fn lay_out_line(line: &str, bbox: Rect, font_size: f32) -> Vec<Word> {
    let chars = line.chars().count().max(1) as f32;
    let per_char = (bbox.width() / chars).min(GLYPH_WIDTH_EM * font_size);
    let mut words = Vec::new();
    let mut column = 0usize;
    for piece in line.split(' ') {
        let len = piece.chars().count();
        if !piece.trim().is_empty() {
            let left = bbox.left + column as f32 * per_char;
            words.push(Word {
                text: piece.trim().to_owned(),
                bbox: Rect {
                    left,
                    right: left + len as f32 * per_char,
                    ..bbox
                },
                font_size,
                bold: false,
            });
        }
        column += len + 1;
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field() -> Rect {
        Rect {
            left: 100.0,
            top: 200.0,
            right: 300.0,
            bottom: 260.0,
        }
    }

    #[test]
    fn a_one_line_value_sits_in_the_middle_of_its_box_word_by_word() {
        let words = lay_out_value("Jane  Q. Doe", field(), 10.0);
        let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(texts, ["Jane", "Q.", "Doe"]);
        for pair in words.windows(2) {
            assert!(
                pair[0].bbox.right < pair[1].bbox.left,
                "left to right, apart"
            );
        }
        let first = words[0].bbox;
        assert_eq!(first.left, 100.0, "left-aligned");
        let em = words[0].font_size;
        assert!(
            words[2].bbox.left - words[1].bbox.right <= em,
            "words a space apart, not spread over the box"
        );
        let middle = (first.top + first.bottom) / 2.0;
        assert!((middle - 230.0).abs() < 1e-3, "centred: {first:?}");
        assert!(
            first.height() < 60.0 && em <= 10.0,
            "never above the page's text size"
        );
    }

    #[test]
    fn lines_of_a_multi_line_value_stack_from_the_top() {
        let words = lay_out_value("first line\n\nsecond", field(), 10.0);
        let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(texts, ["first", "line", "second"]);
        assert_eq!(words[0].bbox.top, 200.0);
        assert!(
            words[2].bbox.top >= words[0].bbox.bottom - 1e-3,
            "one line under the other"
        );
        assert!(lay_out_value("  \n ", field(), 10.0).is_empty());
    }

    const TAX_FORM: &str = "pdfs/forms_invoices/pdfjs__160F-2019_french_tax_form.pdf";

    /// `DEEPREAD_FIXTURES`, else `<workspace>/../shared/fixtures`.
    fn fixture(relative: &str) -> std::path::PathBuf {
        let dir = std::env::var_os("DEEPREAD_FIXTURES").map_or_else(
            || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"),
            std::path::PathBuf::from,
        );
        dir.join(relative)
    }

    /// A real fillable form (Luxembourg's tax certificate 160, shared/fixtures) with its first visible text
    /// fields filled in through PDFium: the saved bytes, and each value with its widget's displayed box.
    fn filled_form(values: &[&str]) -> (Vec<u8>, Vec<(String, Rect)>) {
        let bytes = std::fs::read(fixture(TAX_FORM)).unwrap();
        let pdfium = crate::pdfium::pdfium().expect("PDFium (DEEPREAD_PDFIUM)");
        let _lock = crate::pdfium::pdfium_lock();
        let document = pdfium.load_pdf_from_byte_vec(bytes, None).unwrap();
        let mut filled = Vec::new();
        {
            let page = document.pages().get(0).unwrap();
            let transform = crate::pdf_doc::display_transform(&page, 0).unwrap();
            let mut values = values.iter();
            for annotation in page.annotations().iter() {
                let mut annotation = annotation;
                if annotation.is_hidden() {
                    continue;
                }
                let bounds = annotation.bounds().unwrap();
                let displayed = transform.pdf_rect(&bounds);
                if let Some(PdfFormField::Text(text)) = annotation.as_form_field_mut() {
                    if let Some(value) = values.next() {
                        text.set_value(value).unwrap();
                        filled.push((value.to_string(), displayed));
                    }
                }
            }
        }
        assert_eq!(filled.len(), values.len(), "the form has the fields filled");
        (document.save_to_bytes().unwrap(), filled)
    }

    #[test]
    fn a_real_forms_filled_in_values_are_read_where_their_widgets_are() {
        let values = ["Quintessa Marlowe", "4471 Larkspur Avenue", "Tenby"];
        let (bytes, filled) = filled_form(&values);
        let document = crate::pdf_doc::PdfDoc::open(bytes, None).unwrap();
        let words = document.text_layer(0).unwrap().words;
        for (value, widget) in &filled {
            for part in value.split_whitespace() {
                let word = words
                    .iter()
                    .find(|w| {
                        w.text == part && widget.contains(w.bbox.left + 0.1, w.bbox.top + 0.1)
                    })
                    .unwrap_or_else(|| panic!("{part:?} of {value:?} within {widget:?}"));
                assert!(
                    word.bbox.right <= widget.right + 1e-3,
                    "{word:?} in {widget:?}"
                );
            }
        }
        // The form's printed labels are still there beside the values.
        assert!(
            words.iter().any(|w| w.text == "Certificat"),
            "labels read too"
        );
    }

    #[test]
    fn a_form_nobody_filled_in_adds_nothing_to_the_text_layer() {
        let bytes = std::fs::read(fixture(TAX_FORM)).unwrap();
        let document = crate::pdf_doc::PdfDoc::open(bytes, None).unwrap();
        let words: Vec<String> = document
            .text_layer(0)
            .unwrap()
            .words
            .into_iter()
            .map(|w| w.text)
            .collect();
        assert!(words.contains(&"Certificat".to_string()));
        // Its one hidden field holds "-1", which the page never shows.
        assert!(!words.contains(&"-1".to_string()), "{words:?}");
    }
}
