//! `OUT/<stem>.docx`: the reading as a Word document. Each page of the document starts a new
//! Word page; its Markdown becomes Word headings (styles Word lists in its navigation pane),
//! paragraphs with bold and italic runs, real bulleted and numbered lists, and real tables (spans
//! kept), with the page's figures embedded as pictures. Pages not read to their end carry the
//! same note as in the HTML export.
//!
//! Math stays LaTeX text, in a math font; converting it to Office Math (OMML) is still to do.

mod markdown;
mod numbering;
mod omml;
mod pictures;
mod table;
mod text;

use std::io::Cursor;
use std::path::Path;

use docx_rs::{BreakType, Docx, PageMargin, Paragraph, Run, RunFonts, Style, StyleType};

use self::markdown::{page_parts, plain_paragraph, Part};
use self::numbering::ListNumbering;
use self::pictures::{number_drawings, Pictures};
use super::atomic::{ensure_dir, write_atomically};
use super::html::page_note;
use super::{output_file, pages_in_order, DocumentExport, ExportError, ExportSummary, PageExport};

/// Paragraph style ids: `Heading1` … `Heading6`, the ids Word itself gives its heading styles.
const HEADING_STYLE: &str = "Heading";
const TITLE_STYLE: &str = "Title";
const NOTE_STYLE: &str = "PageNote";

/// Font sizes of the heading levels, in half-points.
const HEADING_SIZES: [usize; 6] = [32, 28, 26, 24, 22, 22];

/// An A4 page with one-inch margins, in twips (1/20 point).
const PAGE_WIDTH_TWIPS: u32 = 11_906;
const PAGE_HEIGHT_TWIPS: u32 = 16_838;
const MARGIN_TWIPS: u32 = 1_440;
/// The text area: figures are shrunk to fit it and tables are as wide as it.
const TEXT_WIDTH_TWIPS: u32 = PAGE_WIDTH_TWIPS - 2 * MARGIN_TWIPS;
const TEXT_HEIGHT_TWIPS: u32 = PAGE_HEIGHT_TWIPS - 2 * MARGIN_TWIPS;

/// Writes `OUT/<stem>.docx`, creating `OUT` if needed. Figures are cropped from the document's
/// pages as for the Markdown export and embedded; nothing is written to `OUT/images/`.
pub fn write_docx(
    export: &DocumentExport<'_>,
    out_dir: &Path,
    stem: &str,
) -> Result<ExportSummary, ExportError> {
    let path = output_file(out_dir, stem, "docx")?;
    let pages: Vec<_> = pages_in_order(export)?
        .into_iter()
        .map(|(_, page)| page)
        .collect();
    let bytes = docx_bytes(&export.title, &pages, |page| {
        Pictures::of_page(export.document, page)
    })?;
    ensure_dir(out_dir)?;
    write_atomically(&path, &bytes)?;
    tracing::info!(path = %path.display(), bytes = bytes.len(), "wrote DOCX export");
    Ok(ExportSummary {
        files: vec![path],
        figures: 0,
    })
}

/// The `.docx` file of `pages` (one entry per page of the document, `None` where not read), each
/// page's figures from `pictures_of`.
fn docx_bytes(
    title: &str,
    pages: &[Option<&PageExport>],
    mut pictures_of: impl FnMut(&PageExport) -> Result<Pictures, ExportError>,
) -> Result<Vec<u8>, ExportError> {
    let mut docx = with_styles(page_setup(Docx::new()));
    if !title.trim().is_empty() {
        docx = docx.add_paragraph(plain_paragraph(title, TITLE_STYLE));
    }
    let mut lists = ListNumbering::default();
    for (index, page) in pages.iter().enumerate() {
        if index > 0 {
            docx = docx.add_paragraph(page_break());
        }
        if let Some(note) = page_note(page.map(|p| &p.status)) {
            docx = docx.add_paragraph(plain_paragraph(&note, NOTE_STYLE));
        }
        let Some(page) = page else { continue };
        let mut pictures = pictures_of(page)?;
        for part in page_parts(page.index, &page.markdown, &mut pictures, &mut lists) {
            docx = match part {
                Part::Paragraph(paragraph) => docx.add_paragraph(*paragraph),
                Part::Table(table) => docx.add_table(*table),
            };
        }
    }
    pack(lists.define(docx))
}

fn pack(docx: Docx) -> Result<Vec<u8>, ExportError> {
    let mut parts = docx.build();
    parts.document = number_drawings(std::mem::take(&mut parts.document));
    parts.document = omml::office_math(std::mem::take(&mut parts.document));
    let mut bytes = Cursor::new(Vec::new());
    parts.pack(&mut bytes).map_err(|source| ExportError::Docx {
        source: source.into(),
    })?;
    Ok(bytes.into_inner())
}

fn page_setup(docx: Docx) -> Docx {
    let margin = MARGIN_TWIPS as i32;
    docx.page_size(PAGE_WIDTH_TWIPS, PAGE_HEIGHT_TWIPS)
        .page_margin(
            PageMargin::new()
                .top(margin)
                .bottom(margin)
                .left(margin)
                .right(margin),
        )
        .default_size(22)
        .default_fonts(
            RunFonts::new()
                .ascii("Calibri")
                .hi_ansi("Calibri")
                .cs("Calibri"),
        )
}

/// The paragraph styles the body uses, defined in the document so Word recognises them.
fn with_styles(docx: Docx) -> Docx {
    let title = paragraph_style(TITLE_STYLE, "Title").size(40).bold();
    let note = paragraph_style(NOTE_STYLE, "Page Note")
        .italic()
        .color("6B6B6B");
    (1..=HEADING_SIZES.len())
        .fold(docx.add_style(title), |docx, level| {
            docx.add_style(heading_style(level))
        })
        .add_style(note)
}

/// Heading `level` (1 to 6), named as Word's own "heading N" so Word treats it as its heading
/// style, with the outline level its navigation pane lists headings by.
fn heading_style(level: usize) -> Style {
    paragraph_style(
        &format!("{HEADING_STYLE}{level}"),
        &format!("heading {level}"),
    )
    .outline_lvl(level - 1)
    .size(HEADING_SIZES[level - 1])
    .bold()
}

fn paragraph_style(id: &str, name: &str) -> Style {
    Style::new(id, StyleType::Paragraph)
        .name(name)
        .based_on("Normal")
        .next("Normal")
        .q_format(true)
}

/// A document page ends where the next one starts on a new Word page.
fn page_break() -> Paragraph {
    Paragraph::new().add_run(Run::new().add_break(BreakType::Page))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io::Read;

    use super::*;
    use crate::export::PageStatus;

    const W: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";

    fn page(index: usize, markdown: &str, status: PageStatus) -> PageExport {
        PageExport {
            index,
            status,
            blocks: Vec::new(),
            markdown: markdown.to_owned(),
            stats: None,
        }
    }

    /// The archive's parts, by name, of the document of `pages`, without figures.
    fn parts(title: &str, pages: &[Option<&PageExport>]) -> BTreeMap<String, String> {
        let bytes = docx_bytes(title, pages, |_| Ok(Pictures::default())).unwrap();
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        (0..archive.len())
            .map(|i| {
                let mut file = archive.by_index(i).unwrap();
                let mut text = String::new();
                file.read_to_string(&mut text).unwrap();
                (file.name().to_owned(), text)
            })
            .collect()
    }

    fn document_xml(markdown: &str) -> String {
        let page = page(0, markdown, PageStatus::Read);
        parts("", &[Some(&page)])
            .remove("word/document.xml")
            .unwrap()
    }

    /// `(w:name, attribute val)` of every element under `w:body` named one of `names`.
    fn elements(xml: &str, names: &[&str]) -> Vec<(String, String)> {
        let document = roxmltree::Document::parse(xml).unwrap();
        document
            .descendants()
            .filter(|n| n.tag_name().namespace() == Some(W) && names.contains(&n.tag_name().name()))
            .map(|n| {
                let val = n.attribute((W, "val")).or(n.text()).unwrap_or_default();
                (n.tag_name().name().to_owned(), val.to_owned())
            })
            .collect()
    }

    #[test]
    fn control_characters_in_model_text_do_not_break_the_xml() {
        // The checker itself refuses them, so a pass means none was written.
        assert!(roxmltree::Document::parse("<a>\u{1}</a>").is_err());
        let bad = "\u{0}\u{1}\u{8}\u{B}\u{C}\u{1B}\u{7F}\u{FFFE}\u{FFFF}";
        let markdown = format!(
            "# Head{bad}ing\n\nText{bad} *it{bad}* `co{bad}de` \\(a{bad}b\\)\n\n\
             - item{bad}\n\n<center>cap{bad}tion</center>\n\n\
             <table><tr><td>ce{bad}ll</td></tr></table>\n\n![alt{bad}](images/0_9.png)\n"
        );
        let read = page(0, &markdown, PageStatus::Read);
        let looped = page(
            1,
            "x",
            PageStatus::Looped {
                reason: format!("re{bad}peat"),
            },
        );
        let failed = page(
            2,
            "",
            PageStatus::Failed {
                error: format!("GPU{bad} lost"),
            },
        );
        let parts = parts(
            &format!("Ti{bad}tle"),
            &[Some(&read), Some(&looped), Some(&failed), None],
        );
        for (name, xml) in parts.iter().filter(|(name, _)| name.ends_with(".xml")) {
            if let Err(error) = roxmltree::Document::parse(xml) {
                panic!("{name} is not XML: {error}");
            }
        }
        // Vertical tab and form feed are white space to the HTML and table readers: ignore spaces.
        let texts: String = elements(&parts["word/document.xml"], &["t"])
            .into_iter()
            .flat_map(|(_, text)| text.chars().filter(|c| *c != ' ').collect::<Vec<_>>())
            .collect();
        for kept in [
            "Title", "Heading", "Text", "it", "code", "item", "caption", "cell", "alt",
        ] {
            assert!(texts.contains(kept), "{kept} in {texts:?}");
        }
        assert!(
            texts.contains("(repeat)") && texts.contains("GPUlost"),
            "{texts:?}"
        );
    }

    #[test]
    fn lists_are_word_lists_and_each_numbered_list_starts_at_its_number() {
        let page = page(
            0,
            "1. one\n2. two\n   - nested\n\nText.\n\n3. three\n4. four\n",
            PageStatus::Read,
        );
        let parts = parts("", &[Some(&page)]);
        let numbering: Vec<(String, String)> =
            elements(&parts["word/document.xml"], &["numId", "ilvl"]);
        // one, two: list A level 0; nested: bullets level 1; three, four: list B level 0.
        let ids: Vec<&str> = numbering
            .iter()
            .filter(|(name, _)| name == "numId")
            .map(|(_, v)| v.as_str())
            .collect();
        let levels: Vec<&str> = numbering
            .iter()
            .filter(|(name, _)| name == "ilvl")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(levels, ["0", "0", "1", "0", "0"]);
        assert_eq!(ids[0], ids[1]);
        assert_ne!(ids[2], ids[0]);
        assert_eq!(ids[3], ids[4]);
        assert_ne!(ids[3], ids[0], "the second list has a numbering of its own");

        // Its numbering restarts at 3, and the formats are real numbers and bullets.
        let definitions = roxmltree::Document::parse(&parts["word/numbering.xml"]).unwrap();
        let second = definitions
            .descendants()
            .find(|n| n.tag_name().name() == "num" && n.attribute((W, "numId")) == Some(ids[3]))
            .unwrap();
        let start = second
            .descendants()
            .find(|n| n.tag_name().name() == "startOverride")
            .and_then(|n| n.attribute((W, "val")));
        assert_eq!(start, Some("3"));
        let formats: Vec<(String, String)> = elements(&parts["word/numbering.xml"], &["numFmt"]);
        assert!(formats.iter().any(|(_, v)| v == "bullet"));
        assert!(formats.iter().any(|(_, v)| v == "decimal"));
    }

    #[test]
    fn text_between_two_tables_of_one_html_block_is_kept_in_its_place() {
        let xml = document_xml(
            "<table><tr><td>a</td></tr></table>\nBetween them.\n\
             <table><tr><td>b<table><tr><td>inner</td></tr></table></td></tr></table>\nAfter.",
        );
        let texts: Vec<String> = elements(&xml, &["t"]).into_iter().map(|t| t.1).collect();
        assert_eq!(texts, ["a", "Between them.", "b inner", "After."]);
        let document = roxmltree::Document::parse(&xml).unwrap();
        let tables = document
            .descendants()
            .filter(|n| n.tag_name().name() == "tbl")
            .count();
        assert_eq!(tables, 2, "the inner table is part of its cell");
    }

    #[test]
    fn pipe_tables_of_the_text_layer_are_word_tables() {
        let xml = document_xml("Before.\n\n| Item | Price |\n|---|---:|\n| Pump | 12 |\n\nAfter.");
        let document = roxmltree::Document::parse(&xml).unwrap();
        let cells: Vec<String> = document
            .descendants()
            .filter(|n| n.tag_name().name() == "tc")
            .map(|tc| {
                tc.descendants()
                    .filter(|n| n.tag_name().name() == "t")
                    .filter_map(|n| n.text())
                    .collect()
            })
            .collect();
        assert_eq!(cells, ["Item", "Price", "Pump", "12"]);
        let texts: Vec<(String, String)> = elements(&xml, &["t"]);
        assert_eq!(texts.first().map(|t| t.1.as_str()), Some("Before."));
        assert_eq!(texts.last().map(|t| t.1.as_str()), Some("After."));
        assert!(!xml.contains('|'), "no pipe is left as text");
    }

    #[test]
    fn code_blocks_keep_their_lines() {
        let xml = document_xml("```\nfn a() {\n\n    b()\n}\n```\n");
        let document = roxmltree::Document::parse(&xml).unwrap();
        let paragraph = document
            .descendants()
            .find(|n| n.tag_name().name() == "p")
            .unwrap();
        let lines: Vec<String> = paragraph
            .descendants()
            .filter(|n| matches!(n.tag_name().name(), "t" | "br"))
            .map(|n| n.text().unwrap_or("\n").to_owned())
            .collect();
        assert_eq!(lines.concat(), "fn a() {\n\n    b()\n}");
    }

    #[test]
    fn emphasis_headings_and_math_become_styled_runs_and_office_math() {
        let xml = document_xml("## Sec *tion*\n\nA **bold** and *it* \\(x_1 * y_2\\) end.");
        let document = roxmltree::Document::parse(&xml).unwrap();
        let runs: Vec<(String, bool, bool, Option<&str>)> = document
            .descendants()
            .filter(|n| n.tag_name().name() == "r")
            .map(|r| {
                let has = |name| r.descendants().any(|n| n.tag_name().name() == name);
                let font = r
                    .descendants()
                    .find(|n| n.tag_name().name() == "rFonts")
                    .and_then(|n| n.attribute((W, "ascii")));
                let text = r
                    .descendants()
                    .filter(|n| n.tag_name().name() == "t")
                    .filter_map(|n| n.text())
                    .collect();
                (text, has("b"), has("i"), font)
            })
            .collect();
        let find = |text: &str| {
            runs.iter()
                .find(|r| r.0 == text)
                .unwrap_or_else(|| panic!("{text}: {runs:?}"))
        };
        assert!(find("bold").1, "bold");
        assert!(find("it").2, "italic");
        assert!(!find("A ").1 && !find("A ").2, "plain");
        // The formula is Office Math, its subscripts as such, and no run holds its LaTeX.
        let formulas: Vec<_> = document
            .descendants()
            .filter(|n| n.tag_name().name() == "oMath")
            .collect();
        assert_eq!(formulas.len(), 1);
        let named = |name: &str| {
            formulas[0]
                .descendants()
                .filter(|n| n.tag_name().name() == name)
                .collect::<Vec<_>>()
        };
        assert_eq!(named("sSub").len(), 2);
        let formula: String = named("t").iter().filter_map(|n| n.text()).collect();
        assert_eq!(formula, "x1*y2");
        assert!(!xml.contains("\\("), "{xml}");
        let styles = elements(&xml, &["pStyle"]);
        assert_eq!(styles, [("pStyle".to_owned(), "Heading2".to_owned())]);
    }
}
