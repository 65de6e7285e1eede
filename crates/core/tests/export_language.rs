//! The language an EPUB and an HTML export declare, told from real recorded readings: an English manual, a
//! German sheet of exercises, a Chinese medical report; and "und" where there is too little text to tell.

mod common;

use common::{grounding_dir, json_field, manual_capture, manual_dir, read, read_page};
use deepread_core::export::{write_html, DocumentExport, PageExport};
use deepread_pdf::Document;

/// The `lang` the HTML export of `pages` of `document` declares.
fn html_language(document: &Document, pages: Vec<PageExport>) -> String {
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document,
        title: "Reading".into(),
        pages,
    };
    write_html(&export, out.path(), "reading").unwrap();
    let html = read(&out.path().join("reading.html"));
    let start = html.find("<html lang=\"").expect("a declared language") + "<html lang=\"".len();
    html[start..].split('"').next().unwrap().to_owned()
}

#[test]
fn each_recorded_reading_declares_its_own_language() {
    let manual = Document::open(&manual_dir().join("source.pdf"), None).unwrap();
    let english = (1..=5)
        .map(|n| read_page(n - 1, &manual_capture(n)))
        .collect();
    assert_eq!(html_language(&manual, english), "en");

    let exercises = grounding_dir()
        .join("with_source/thukiy_R-G-/exercises/Uebungsblatt-CDS-Mathe1_Ana6_Loesungen_p001");
    let sheet = Document::open(&exercises.join("input_page.pdf"), None).unwrap();
    let german = vec![read_page(0, &read(&exercises.join("output.md")))];
    assert_eq!(html_language(&sheet, german), "de");

    let report = Document::open(
        &common::fixtures_dir().join("pdfs/non_english/cloudman6__chinese_medical_report.pdf"),
        None,
    )
    .unwrap();
    let raw = json_field(
        &grounding_dir().join("output_only/cloudman6_webui/sample2.json"),
        "raw_text",
    );
    assert_eq!(html_language(&report, vec![read_page(0, &raw)]), "zh");
}

#[test]
fn too_little_text_to_tell_is_undetermined() {
    let manual = Document::open(&manual_dir().join("source.pdf"), None).unwrap();
    assert_eq!(html_language(&manual, Vec::new()), "und");
    let cover = "<|ref|>title<|/ref|><|det|>[[60, 163, 597, 265]]<|/det|>\n# OK\n";
    assert_eq!(html_language(&manual, vec![read_page(0, cover)]), "und");
}
