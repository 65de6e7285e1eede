//! Reading a region of a page again: the text layer under the rectangle, held against poppler's own word
//! boxes; what a model is given (the crop of the page as rendered) and what becomes of a looping model.

mod common;

use std::process::Command;
use std::sync::Mutex;

use common::fixtures_dir;
use deepread_core::events::BoxNorm;
use deepread_core::recognizer::{
    each_page, PageFeed, PageNeeds, PageSink, ReadStats, Recognizer, TextLayerRecognizer,
};
use deepread_core::region::{read_region, RegionError};
use deepread_pdf::{Document, RenderSize};

fn tracemonkey() -> Document {
    let path = fixtures_dir().join("pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
    Document::open(&path, None).unwrap()
}

fn region(x1: u16, y1: u16, x2: u16, y2: u16) -> BoxNorm {
    BoxNorm { x1, y1, x2, y2 }
}

/// The words of page 1 of tracemonkey whose middle lies in `region`, by poppler's `pdftotext -bbox`: another
/// PDF library's reading of the same text layer.
fn poppler_words_in(region: BoxNorm) -> Vec<String> {
    let path = fixtures_dir().join("pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
    let out = Command::new("pdftotext")
        .args(["-f", "1", "-l", "1", "-bbox"])
        .arg(&path)
        .arg("-")
        .output()
        .expect("pdftotext (poppler-utils) runs");
    let html = String::from_utf8(out.stdout).unwrap();
    let (width, height) = (612.0, 792.0);
    let attr = |tag: &str, name: &str| -> f32 {
        let start = tag.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        tag[start..].split('"').next().unwrap().parse().unwrap()
    };
    let inside = |v: f32, lo: u16, hi: u16, side: f32| {
        (f32::from(lo) / 999.0 * side..=f32::from(hi) / 999.0 * side).contains(&v)
    };
    html.split("<word ")
        .skip(1)
        .filter_map(|rest| {
            let (tag, after) = rest.split_once('>')?;
            let word = after.split("</word>").next()?;
            let x = (attr(tag, "xMin") + attr(tag, "xMax")) / 2.0;
            let y = (attr(tag, "yMin") + attr(tag, "yMax")) / 2.0;
            (inside(x, region.x1, region.x2, width) && inside(y, region.y1, region.y2, height))
                .then(|| word.replace("&amp;", "&"))
        })
        .fold(Vec::new(), join_hyphenated)
}

/// Poppler keeps a word broken across lines as two ("com-", "pile"); a reader joins it again.
fn join_hyphenated(mut words: Vec<String>, word: String) -> Vec<String> {
    let continues = word.starts_with(|c: char| c.is_lowercase());
    match words.last_mut() {
        Some(last) if continues && last.len() > 1 && last.ends_with('-') => {
            last.pop();
            last.push_str(&word);
        }
        _ => words.push(word),
    }
    words
}

/// The share of `words` found among `among`.
fn share_found(words: &[String], among: &[String]) -> f64 {
    let found = words.iter().filter(|w| among.contains(w)).count();
    found as f64 / words.len().max(1) as f64
}

fn words_of(markdown: &str) -> Vec<String> {
    markdown
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| "#*_`".contains(c)).to_owned())
        .filter(|w| !w.is_empty() && w != "-")
        .collect()
}

#[test]
fn the_text_layer_reads_the_words_under_the_rectangle_and_none_outside() {
    // The left column's first paragraphs under the abstract's heading; the title stays outside.
    let area = region(80, 360, 490, 700);
    let read = read_region(&tracemonkey(), 0, area, &TextLayerRecognizer::new()).unwrap();
    let ours = words_of(&read.markdown);
    let poppler = poppler_words_in(area);
    assert!(
        poppler.len() > 150,
        "the region holds a few paragraphs: {poppler:?}"
    );
    let (recall, precision) = (share_found(&poppler, &ours), share_found(&ours, &poppler));
    assert!(
        recall > 0.95 && precision > 0.95,
        "poppler's words found {recall:.3}, ours in poppler's {precision:.3}\nours: {}\n\npoppler: {}",
        ours.join(" "),
        poppler.join(" ")
    );
    assert!(
        !read.markdown.contains("Specialization"),
        "the title is outside the region"
    );
    assert!(!read.looped);
}

#[test]
fn a_slip_of_the_pointer_and_an_empty_margin_are_refused_with_their_reason() {
    let document = tracemonkey();
    let text = TextLayerRecognizer::new();
    let slip = read_region(&document, 0, region(100, 100, 104, 300), &text).unwrap_err();
    assert!(matches!(slip, RegionError::TooSmall), "{slip}");
    // The left margin, beside the body text.
    let margin = read_region(&document, 0, region(0, 300, 60, 700), &text).unwrap_err();
    assert!(matches!(margin, RegionError::Nothing), "{margin}");
    assert_eq!(margin.to_string(), "nothing was read in the region");
}

/// A stand-in for the model: takes the page rendered at 144 dpi, notes the image it was given, and writes
/// `output` in as many pieces as it has lines.
struct Writes {
    output: String,
    given: Mutex<Vec<(u32, u32)>>,
}

impl Recognizer for Writes {
    fn name(&self) -> &str {
        "writes"
    }
    fn fingerprint(&self) -> &str {
        "writes"
    }
    fn needs(&self) -> PageNeeds {
        PageNeeds {
            image: Some(RenderSize::Dpi(144.0)),
            text_layer: false,
        }
    }
    fn read(&self, pages: &mut dyn PageFeed, sink: &mut dyn PageSink) {
        for page in each_page(pages) {
            let image = page.image.as_ref().expect("the crop of the page");
            self.given.lock().unwrap().push(image.dimensions());
            sink.started(page.page);
            for line in self.output.split_inclusive('\n') {
                if sink.delta(page.page, line, 1) != deepread_core::recognizer::Control::Continue {
                    break;
                }
            }
            sink.finished(page.page, Ok(ReadStats::default()));
        }
    }
}

#[test]
fn a_model_is_given_the_crop_of_the_page_and_its_blocks_come_back_as_markdown() {
    let model = Writes {
        output: "<|ref|>sub_title<|/ref|><|det|>[[10, 20, 990, 200]]<|/det|>\n## Abstract\n\n\
                 <|ref|>text<|/ref|><|det|>[[10, 220, 990, 980]]<|/det|>\nDynamic languages such as JavaScript.\n"
            .into(),
        given: Mutex::default(),
    };
    let read = read_region(&tracemonkey(), 0, region(80, 330, 490, 560), &model).unwrap();
    // Letter at 144 dpi is 1224 × 1584 pixels; the region is 410 × 230 thousandths of it, mapped as the
    // reference maps a box onto an image (`int(v / 999 * side)`).
    let px = |v: f64, side: f64| (v / 999.0 * side) as u32;
    let want = (
        px(490.0, 1224.0) - px(80.0, 1224.0),
        px(560.0, 1584.0) - px(330.0, 1584.0),
    );
    assert_eq!(*model.given.lock().unwrap(), vec![want]);
    assert_eq!(
        read.markdown,
        "## Abstract\n\nDynamic languages such as JavaScript."
    );
    assert_eq!(read.label, "sub_title");
}

#[test]
fn a_model_looping_on_the_region_is_stopped_and_what_came_before_is_kept() {
    let model = Writes {
        output: format!(
            "<|ref|>text<|/ref|><|det|>[[10, 10, 990, 990]]<|/det|>\nThe first line.\n{}",
            "the same words again and again, ".repeat(2_000)
        ),
        given: Mutex::default(),
    };
    let read = read_region(&tracemonkey(), 0, region(80, 330, 490, 560), &model).unwrap();
    assert!(read.looped);
    assert!(read.markdown.starts_with("The first line."));
    assert!(
        read.markdown.len() < 10_000,
        "cut where the loop began: {} bytes",
        read.markdown.len()
    );
}
