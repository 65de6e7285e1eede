//! The text layer against poppler's `pdftotext`: the same words, at the same places.

mod common;

use std::collections::HashMap;

use common::{fixture, init_pdfium, poppler};
use deepread_pdf::{Document, Word};

/// Share of pdftotext's words that must also be among ours, and share of its word boxes whose
/// centre must fall inside one of our boxes for the same word. The engines split words slightly
/// differently (ligatures, hyphens, super/subscripts in math), hence not 100%.
const MIN_SHARE: f64 = 0.9;

struct PopplerWord {
    text: String,
    centre: (f32, f32),
}

fn pdftotext_raw_words(path: &str) -> Vec<String> {
    poppler("pdftotext", &["-raw", "-f", "1", "-l", "1", path, "-"])
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Parses `pdftotext -bbox` (XHTML with one `<word xMin= yMin= xMax= yMax=>` per word, points,
/// top-left origin of the displayed page).
fn pdftotext_bbox_words(path: &str) -> Vec<PopplerWord> {
    let html = poppler("pdftotext", &["-bbox", "-f", "1", "-l", "1", path, "-"]);
    html.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line.strip_prefix("<word ")?;
            let (attrs, text) = rest.split_once('>')?;
            let text = text.strip_suffix("</word>")?;
            let num = |key: &str| -> f32 {
                let start = attrs.find(&format!("{key}=\"")).unwrap() + key.len() + 2;
                let end = start + attrs[start..].find('"').unwrap();
                attrs[start..end].parse().unwrap()
            };
            Some(PopplerWord {
                text: unescape(text),
                centre: (
                    (num("xMin") + num("xMax")) / 2.0,
                    (num("yMin") + num("yMax")) / 2.0,
                ),
            })
        })
        .collect()
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn our_words(relative: &str) -> Vec<Word> {
    init_pdfium();
    let doc = Document::open(&fixture(relative), None).unwrap();
    doc.text_layer(0).unwrap().words
}

/// Share of `theirs` found in `ours`, counting repeated words as often as they occur.
fn share_of_words_found(ours: &[Word], theirs: &[String]) -> f64 {
    let mut available: HashMap<&str, usize> = HashMap::new();
    for w in ours {
        *available.entry(w.text.as_str()).or_default() += 1;
    }
    let found = theirs
        .iter()
        .filter(|w| match available.get_mut(w.as_str()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
        .count();
    found as f64 / theirs.len() as f64
}

fn share_of_boxes_matched(ours: &[Word], theirs: &[PopplerWord]) -> f64 {
    let matched = theirs
        .iter()
        .filter(|p| {
            ours.iter()
                .any(|w| w.text == p.text && w.bbox.contains(p.centre.0, p.centre.1))
        })
        .count();
    matched as f64 / theirs.len() as f64
}

fn check_page(relative: &str) {
    let path = fixture(relative);
    let path = path.to_str().unwrap();
    let ours = our_words(relative);
    let raw = pdftotext_raw_words(path);
    assert!(raw.len() > 100, "{relative}: expected a text page");
    let words = share_of_words_found(&ours, &raw);
    let boxed = pdftotext_bbox_words(path);
    let boxes = share_of_boxes_matched(&ours, &boxed);
    eprintln!(
        "{relative}: {} words ours, {} pdftotext; words found {words:.3}, boxes matched {boxes:.3}",
        ours.len(),
        raw.len()
    );
    assert!(words >= MIN_SHARE, "{relative}: words found {words:.3}");
    assert!(boxes >= MIN_SHARE, "{relative}: boxes matched {boxes:.3}");
}

#[test]
fn born_digital_paper_page_has_poppler_words_and_boxes() {
    check_page("pdfs/born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf");
}

#[test]
fn two_column_paper_page_has_poppler_words_and_boxes() {
    check_page("pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
}

#[test]
fn rotated_page_boxes_are_in_displayed_orientation() {
    check_page("pdfs/rotated/olmocr__edgar-rotated90.pdf");
}

#[test]
fn scanned_page_without_ocr_has_no_words() {
    // pdftotext finds no text on it either.
    let relative = "pdfs/scanned_image_only/docling__ocr_test.pdf";
    let text = poppler(
        "pdftotext",
        &[
            "-f",
            "1",
            "-l",
            "1",
            fixture(relative).to_str().unwrap(),
            "-",
        ],
    );
    assert!(text.trim().is_empty());
    assert!(our_words(relative).is_empty());
}

#[test]
fn words_serialize_for_other_crates() {
    let words = our_words("pdfs/born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf");
    let json = serde_json::to_value(&words[0]).unwrap();
    for key in ["text", "bbox", "font_size", "bold"] {
        assert!(json.get(key).is_some(), "{json}");
    }
    for key in ["left", "top", "right", "bottom"] {
        assert!(json["bbox"].get(key).is_some(), "{json}");
    }
}

#[test]
fn a_word_hyphenated_at_the_end_of_a_line_keeps_its_hyphen_as_poppler_reads_it() {
    // PDFium marks such a hyphen with a control code of its own; it must come back as the hyphen the
    // page shows, or the layout cannot join the word again.
    let relative = "pdfs/born_digital_papers_math_tables/docling__code_and_formula.pdf";
    let theirs: Vec<String> = pdftotext_raw_words(fixture(relative).to_str().unwrap())
        .into_iter()
        .filter(|w| w.len() > 1 && w.ends_with('-'))
        .collect();
    assert!(
        theirs.len() >= 2,
        "the page breaks words across lines: {theirs:?}"
    );
    let ours = our_words(relative);
    for word in &theirs {
        assert!(
            ours.iter().any(|w| &w.text == word),
            "{word} as poppler reads it"
        );
    }
}
