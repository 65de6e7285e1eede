//! The Word and Excel exports opened by a real office suite: LibreOffice, headless, converts each file to PDF
//! without an error, and the PDF it prints, read back with PDFium, holds the words of the recorded model output
//! the file was made from (headings, table cells, the numbers of a table, formulas typeset as Office Math).
//!
//! Needs PDFium (DEEPREAD_PDFIUM) and LibreOffice's `soffice` (Debian's libreoffice-writer-nogui,
//! libreoffice-calc-nogui and libreoffice-math-nogui, which scripts/install-system-deps.sh installs).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{grounding_dir, manual_capture, manual_dir, read, read_page};
use deepread_core::export::{write_docx, write_xlsx, DocumentExport, PageExport};
use deepread_pdf::Document;

/// `file` converted to PDF by LibreOffice in `dir`, with a profile of its own so that tests running at once
/// do not share one LibreOffice instance.
fn printed_by_libreoffice(file: &Path, dir: &Path) -> Document {
    let profile = dir.join("libreoffice-profile");
    let out = dir.join("printed");
    let run = Command::new("soffice")
        .arg(format!(
            "-env:UserInstallation=file://{}",
            profile.display()
        ))
        .args([
            "--headless",
            "--norestore",
            "--convert-to",
            "pdf",
            "--outdir",
        ])
        .arg(&out)
        .arg(file)
        .output()
        .expect(
            "LibreOffice's soffice runs (Debian: libreoffice-writer-nogui libreoffice-calc-nogui, \
             installed by scripts/install-system-deps.sh)",
        );
    let said = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "soffice failed: {said}");
    let stem = file.file_stem().unwrap().to_string_lossy();
    let pdf = out.join(format!("{stem}.pdf"));
    assert!(pdf.is_file(), "LibreOffice printed nothing: {said}");
    Document::open(&pdf, None).unwrap()
}

/// Every word of the PDF, in order, joined by spaces.
fn text_of(pdf: &Document) -> String {
    (0..pdf.page_count())
        .flat_map(|page| pdf.text_layer(page).unwrap().words)
        .map(|word| word.text)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The text of `markdown`'s headings (`# …` lines), as the recording writes them.
fn headings(raw: &str) -> Vec<String> {
    raw.lines()
        .filter_map(|line| line.trim_start().strip_prefix('#'))
        .map(|rest| rest.trim_start_matches('#').trim().to_owned())
        .filter(|text| text.chars().any(char::is_alphanumeric))
        .collect()
}

/// Whether `phrase` is in `text`, letters and digits only: a printed table wraps a word too long for its
/// column ("Langua ge"), and PDFium drops the hyphen where a line breaks ("enc- layers").
fn holds_words(text: &str, phrase: &str) -> bool {
    let squashed = |s: &str| -> String { s.chars().filter(|c| c.is_alphanumeric()).collect() };
    squashed(text).contains(&squashed(phrase))
}

#[test]
fn libreoffice_prints_the_word_export_of_the_manual_with_every_heading_and_a_page_per_page() {
    let dir = tempfile::tempdir().unwrap();
    let document = Document::open(&manual_dir().join("source.pdf"), None).unwrap();
    let captures: Vec<String> = (1..=document.page_count()).map(manual_capture).collect();
    let pages: Vec<PageExport> = captures
        .iter()
        .enumerate()
        .map(|(index, raw)| read_page(index, raw))
        .collect();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "Vastera manual".into(),
        pages,
    };
    let docx = write_docx(&export, dir.path(), "manual").unwrap().files[0].clone();
    let printed = printed_by_libreoffice(&docx, dir.path());
    assert!(
        printed.page_count() >= document.page_count(),
        "each page of the manual starts a page: {} printed for {}",
        printed.page_count(),
        document.page_count()
    );
    let text = text_of(&printed);
    let wanted: Vec<String> = captures.iter().flat_map(|raw| headings(raw)).collect();
    assert!(
        wanted.len() >= 20,
        "the recordings have {} headings",
        wanted.len()
    );
    let missing: Vec<&String> = wanted.iter().filter(|h| !holds_words(&text, h)).collect();
    assert!(missing.is_empty(), "headings not printed: {missing:?}");
}

/// The docling paper page and its recorded reading, whose table has spanned header cells and numbers.
fn docling_page() -> (Document, String) {
    let dir = grounding_dir().join("with_source/docling_md_deepseek");
    let document = Document::open(&dir.join("2305.03393v1-pg9.pdf"), None).unwrap();
    (document, read(&dir.join("deepseek_example.output.md")))
}

/// The texts of the recording's table cells, split from the raw output here.
fn recorded_cells(raw: &str) -> Vec<String> {
    raw.split("<t")
        .skip(1)
        .filter(|piece| piece.starts_with('d') || piece.starts_with('h'))
        .filter_map(|piece| piece.split_once('>').map(|(_, rest)| rest))
        .filter_map(|rest| rest.split("</t").next())
        .map(|cell| cell.trim().to_owned())
        .filter(|cell| !cell.is_empty())
        .collect()
}

#[test]
fn libreoffice_prints_the_table_of_a_page_from_word_and_from_excel_with_every_cell() {
    let dir = tempfile::tempdir().unwrap();
    let (document, raw) = docling_page();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "docling page 9".into(),
        pages: vec![read_page(0, &raw)],
    };
    let cells = recorded_cells(&raw);
    assert!(
        cells.len() >= 40,
        "the recording's table has {} cells",
        cells.len()
    );
    let written: Vec<PathBuf> = [
        write_docx(&export, dir.path(), "page").unwrap(),
        write_xlsx(&export, dir.path(), "page").unwrap(),
    ]
    .into_iter()
    .flat_map(|summary| summary.files)
    .collect();
    assert_eq!(written.len(), 2, "{written:?}");
    for file in written {
        let text = text_of(&printed_by_libreoffice(&file, dir.path()));
        let missing: Vec<&String> = cells.iter().filter(|c| !holds_words(&text, c)).collect();
        assert!(
            missing.is_empty(),
            "{}: cells not printed: {missing:?}",
            file.display()
        );
    }
}

#[test]
fn libreoffice_typesets_the_formulas_of_a_page_of_exercises_from_word() {
    let dir = tempfile::tempdir().unwrap();
    let source = grounding_dir()
        .join("with_source/thukiy_R-G-/exercises/Uebungsblatt-CDS-Mathe1_Ana6_Loesungen_p001");
    let document = Document::open(&source.join("input_page.pdf"), None).unwrap();
    let raw = read(&source.join("output.md"));
    assert!(raw.contains("\\frac{1}{x - 2}") && raw.contains("\\Delta"));
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "Übungsblatt Ana 6".into(),
        pages: vec![read_page(0, &raw)],
    };
    let docx = write_docx(&export, dir.path(), "exercises").unwrap().files[0].clone();
    let text = text_of(&printed_by_libreoffice(&docx, dir.path()));
    // Office Math, typeset: Greek where the LaTeX named it, and no LaTeX command left as text.
    assert!(text.contains('Δ'), "{text}");
    for command in ["\\frac", "\\Delta", "\\text", "\\qquad", "\\("] {
        assert!(!text.contains(command), "{command} printed as text: {text}");
    }
    assert!(holds_words(&text, "Funktionsgraphen verschieben"), "{text}");
}
