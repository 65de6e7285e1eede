//! The DOCX export of real readings, opened independently of the code that wrote it: the archive
//! with `zip`, `word/document.xml` with `roxmltree`, and checked against the recorded DeepSeek-OCR
//! outputs themselves (xiongpu1_agent's Vastera manual, and docling's page with a spanned table).
//!
//! Needs PDFium: set DEEPREAD_PDFIUM to libpdfium.so (or run `make deps`).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use common::{grounding_dir, manual_capture, manual_dir, read, read_page};
use deepread_core::export::{write_docx, DocumentExport, PageExport, PageStatus, FIGURE_DPI};
use deepread_pdf::Document;
use roxmltree::Node;

const W: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
const R: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const A: &str = "http://schemas.openxmlformats.org/drawingml/2006/main";
const WP: &str = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing";
const M: &str = "http://schemas.openxmlformats.org/officeDocument/2006/math";
const EMU_PER_TWIP: f64 = 635.0;

/// The manual's page that is exported as failed (1-based), and the one left unread.
const FAILED_PAGE: usize = 4;
const UNREAD_PAGE: usize = 6;
const FAILURE: &str = "GPU out of memory";

/// The files of a `.docx` archive by name.
fn unzip(path: &Path) -> BTreeMap<String, Vec<u8>> {
    let file = std::fs::File::open(path).unwrap();
    let mut archive = zip::ZipArchive::new(file).unwrap();
    (0..archive.len())
        .map(|i| {
            let mut entry = archive.by_index(i).unwrap();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            (entry.name().to_owned(), bytes)
        })
        .collect()
}

fn text_of(files: &BTreeMap<String, Vec<u8>>, name: &str) -> String {
    String::from_utf8(files[name].clone()).unwrap()
}

fn is(node: &Node, ns: &str, name: &str) -> bool {
    node.is_element() && node.tag_name().namespace() == Some(ns) && node.tag_name().name() == name
}

fn w_attr<'a>(node: &Node<'a, '_>, name: &str) -> Option<&'a str> {
    node.attribute((W, name))
}

/// The first descendant `w:name` of `node`.
fn find<'a, 'i>(node: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    node.descendants().find(|n| is(n, W, name))
}

/// The text of a paragraph or cell: its `w:t`s joined.
fn text(node: Node) -> String {
    node.descendants()
        .filter(|n| is(n, W, "t"))
        .filter_map(|n| n.text())
        .collect()
}

fn style(paragraph: Node) -> Option<String> {
    find(paragraph, "pStyle")
        .and_then(|s| w_attr(&s, "val"))
        .map(str::to_owned)
}

fn has_page_break(node: Node) -> bool {
    node.descendants()
        .any(|n| is(&n, W, "br") && w_attr(&n, "type") == Some("page"))
}

/// The body's paragraphs and tables, cut into document pages at the page breaks.
fn body_pages<'a, 'i>(document: &'a roxmltree::Document<'i>) -> Vec<Vec<Node<'a, 'i>>> {
    let body = find(document.root_element(), "body").unwrap();
    let mut pages = vec![Vec::new()];
    for child in body.children().filter(|n| n.is_element()) {
        if has_page_break(child) {
            pages.push(Vec::new());
        } else {
            pages.last_mut().unwrap().push(child);
        }
    }
    pages
}

/// `(level, text)` of the recording's Markdown headings: its lines that start with `#`.
fn recorded_headings(raw: &str) -> Vec<(usize, String)> {
    raw.lines()
        .filter(|line| line.starts_with('#'))
        .map(|line| {
            let level = line.len() - line.trim_start_matches('#').len();
            (level, line.trim_start_matches('#').trim().to_owned())
        })
        .collect()
}

/// `(level, text)` of the Heading-styled paragraphs among `nodes`.
fn docx_headings(nodes: &[Node]) -> Vec<(usize, String)> {
    nodes
        .iter()
        .filter_map(|n| {
            let level = style(*n)?.strip_prefix("Heading")?.parse().ok()?;
            Some((level, text(*n).trim().to_owned()))
        })
        .collect()
}

/// Every heading style used is defined as Word's own "heading N", with the outline level Word's
/// navigation pane lists it by.
fn assert_heading_styles_defined(styles_xml: &str, levels: impl Iterator<Item = usize>) {
    let styles = roxmltree::Document::parse(styles_xml).unwrap();
    for level in levels {
        let id = format!("Heading{level}");
        let style = styles
            .descendants()
            .find(|n| is(n, W, "style") && w_attr(n, "styleId") == Some(id.as_str()))
            .unwrap_or_else(|| panic!("style {id} is not defined"));
        let name = find(style, "name").and_then(|n| w_attr(&n, "val"));
        assert_eq!(name, Some(format!("heading {level}").as_str()));
        let outline = find(style, "outlineLvl").and_then(|n| w_attr(&n, "val"));
        assert_eq!(outline, Some((level - 1).to_string().as_str()));
    }
}

/// The text area's width in EMU, from the document's own section properties.
fn text_width_emu(document: &roxmltree::Document) -> f64 {
    let section = find(document.root_element(), "sectPr").unwrap();
    let twips = |node: &str, attr: &str| -> f64 {
        w_attr(&find(section, node).unwrap(), attr)
            .unwrap()
            .parse()
            .unwrap()
    };
    (twips("pgSz", "w") - twips("pgMar", "left") - twips("pgMar", "right")) * EMU_PER_TWIP
}

/// Relationship id → target, from `word/_rels/document.xml.rels`.
fn relationships(rels_xml: &str) -> BTreeMap<String, String> {
    let rels = roxmltree::Document::parse(rels_xml).unwrap();
    rels.descendants()
        .filter(|n| n.tag_name().name() == "Relationship")
        .map(|n| {
            let attr = |name| n.attribute(name).unwrap().to_owned();
            (attr("Id"), attr("Target"))
        })
        .collect()
}

/// A picture of the body: the image file it embeds and its extent in EMU.
struct Picture {
    media: String,
    extent: (f64, f64),
}

fn pictures(nodes: &[Node], rels: &BTreeMap<String, String>) -> Vec<Picture> {
    nodes
        .iter()
        .flat_map(|n| n.descendants())
        .filter(|n| is(n, WP, "inline") || is(n, WP, "anchor"))
        .map(|drawing| {
            let blip = drawing.descendants().find(|n| is(n, A, "blip")).unwrap();
            let target = &rels[blip.attribute((R, "embed")).unwrap()];
            let extent = drawing.children().find(|n| is(n, WP, "extent")).unwrap();
            let emu = |name| extent.attribute(name).unwrap().parse::<f64>().unwrap();
            Picture {
                media: format!("word/{}", target.trim_start_matches('/')),
                extent: (emu("cx"), emu("cy")),
            }
        })
        .collect()
}

fn manual_export_pages(document: &Document) -> Vec<PageExport> {
    (1..=document.page_count())
        .filter(|number| *number != UNREAD_PAGE)
        .map(|number| match number {
            FAILED_PAGE => PageExport {
                index: number - 1,
                status: PageStatus::Failed {
                    error: FAILURE.into(),
                },
                blocks: Vec::new(),
                markdown: String::new(),
                stats: None,
            },
            _ => read_page(number - 1, &manual_capture(number)),
        })
        .collect()
}

#[test]
fn manual_has_the_recordings_headings_figures_and_pages() {
    let document = Document::open(&manual_dir().join("source.pdf"), None).unwrap();
    assert_eq!(document.page_count(), 25);
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "Vastera manual".into(),
        pages: manual_export_pages(&document),
    };
    let out = tempfile::tempdir().unwrap();
    let summary = write_docx(&export, out.path(), "manual").unwrap();
    let path = out.path().join("manual.docx");
    assert_eq!(summary.files, std::slice::from_ref(&path));

    let files = unzip(&path);
    let xml = text_of(&files, "word/document.xml");
    let body = roxmltree::Document::parse(&xml).unwrap();
    let pages = body_pages(&body);
    assert_eq!(
        pages.len(),
        document.page_count(),
        "one page break between pages"
    );
    let rels = relationships(&text_of(&files, "word/_rels/document.xml.rels"));
    let max_width = text_width_emu(&body);

    let mut all_headings = Vec::new();
    let mut figures = 0;
    for (index, nodes) in pages.iter().enumerate() {
        let number = index + 1;
        let page_text: Vec<String> = nodes.iter().map(|n| text(*n)).collect();
        if number == FAILED_PAGE || number == UNREAD_PAGE {
            assert!(docx_headings(nodes).is_empty(), "page {number}");
            let note = if number == FAILED_PAGE {
                FAILURE
            } else {
                "not read"
            };
            assert!(
                page_text.iter().any(|t| t.contains(note)),
                "page {number} has no note: {page_text:?}"
            );
            continue;
        }
        let raw = manual_capture(number);
        let headings = docx_headings(nodes);
        assert_eq!(headings, recorded_headings(&raw), "page {number}");
        all_headings.extend(headings);

        // Every figure the model marked is a picture, in order, showing the crop of its box.
        let page = read_page(index, &raw);
        let boxes: Vec<_> = page
            .blocks
            .iter()
            .filter(|b| b.label == "image")
            .map(|b| b.boxes[0])
            .collect();
        assert_eq!(boxes.len(), raw.matches("<|ref|>image<|/ref|>").count());
        let page_pictures = pictures(nodes, &rels);
        assert_eq!(page_pictures.len(), boxes.len(), "page {number}");
        let size = document.page_size(index).unwrap();
        let scale = f64::from(FIGURE_DPI) / 72.0;
        let (page_w, page_h) = (
            (f64::from(size.width_pt) * scale).round(),
            (f64::from(size.height_pt) * scale).round(),
        );
        for (b, picture) in boxes.iter().zip(&page_pictures) {
            let png = files
                .get(&picture.media)
                .unwrap_or_else(|| panic!("{} is not in the archive", picture.media));
            let (w, h) = image::load_from_memory(png)
                .unwrap()
                .into_rgb8()
                .dimensions();
            let want_w = f64::from(b.x2 - b.x1) / 999.0 * page_w;
            let want_h = f64::from(b.y2 - b.y1) / 999.0 * page_h;
            assert!(
                (f64::from(w) - want_w).abs() <= 1.0 && (f64::from(h) - want_h).abs() <= 1.0,
                "page {number}: {w}x{h}, box is {want_w:.1}x{want_h:.1}"
            );
            let (cx, cy) = picture.extent;
            assert!(
                cx <= max_width + 1.0,
                "wider than the page: {cx} > {max_width}"
            );
            let aspect = f64::from(w) / f64::from(h);
            assert!(
                (cx / cy - aspect).abs() / aspect < 0.01,
                "{cx}x{cy} vs {w}x{h}"
            );
        }
        figures += boxes.len();
    }
    assert!(figures >= 40, "the manual has many figures: {figures}");
    // Drawing ids are unique, as Word wants them.
    let drawing_ids: BTreeSet<&str> = body
        .descendants()
        .filter(|n| is(n, WP, "docPr"))
        .map(|n| n.attribute("id").unwrap())
        .collect();
    assert_eq!(drawing_ids.len(), figures);
    let media = files
        .keys()
        .filter(|n| n.starts_with("word/media/") && !n.ends_with('/'))
        .count();
    assert_eq!(media, figures, "one image file per figure");
    assert!(all_headings.len() >= 60, "{}", all_headings.len());
    assert_heading_styles_defined(
        &text_of(&files, "word/styles.xml"),
        all_headings.iter().map(|(level, _)| *level),
    );
    assert!(
        !out.path().join("images").exists(),
        "figures are embedded, not written beside the document"
    );
}

/// A cell of the recording's HTML table, split from the raw text, or of the Word table.
#[derive(Debug, PartialEq)]
struct TableCell {
    text: String,
    colspan: usize,
    rowspan: usize,
}

/// The rows of the recording's first HTML table, each with its cells as written.
fn raw_rows(raw: &str) -> Vec<Vec<TableCell>> {
    let table = &raw[raw.find("<table>").unwrap()..raw.find("</table>").unwrap()];
    table
        .split("<tr>")
        .skip(1)
        .map(|row| {
            row.split("</td>")
                .flat_map(|part| part.split("</th>"))
                .filter_map(|part| {
                    let start = part.find("<td").into_iter().chain(part.find("<th")).min()?;
                    let open_end = start + part[start..].find('>').unwrap();
                    let attributes = &part[start..open_end];
                    let span = |name: &str| {
                        attributes
                            .split(&format!("{name}=\""))
                            .nth(1)
                            .map_or(1, |v| v[..v.find('"').unwrap()].parse().unwrap())
                    };
                    Some(TableCell {
                        text: part[open_end + 1..].trim().to_owned(),
                        colspan: span("colspan"),
                        rowspan: span("rowspan"),
                    })
                })
                .collect()
        })
        .collect()
}

fn grid_span(tc: Node) -> usize {
    find(tc, "gridSpan").map_or(1, |g| w_attr(&g, "val").unwrap().parse().unwrap())
}

/// `restart`, `continue` (also written as a bare `<w:vMerge/>`), or `None`.
fn vertical_merge<'a>(tc: Node<'a, '_>) -> Option<&'a str> {
    find(tc, "vMerge").map(|m| w_attr(&m, "val").unwrap_or("continue"))
}

/// The Word table's cells row by row, as written in the recording: a `vMerge` continuation is no
/// cell of its own but adds a row to the span of the cell above it.
fn word_rows(table: Node) -> Vec<Vec<TableCell>> {
    // Per row, (grid column, tc) of each cell.
    let grid: Vec<Vec<(usize, Node)>> = table
        .children()
        .filter(|n| is(n, W, "tr"))
        .map(|tr| {
            let mut column = 0;
            tr.children()
                .filter(|n| is(n, W, "tc"))
                .map(|tc| {
                    let at = column;
                    column += grid_span(tc);
                    (at, tc)
                })
                .collect()
        })
        .collect();
    let continues = |r: usize, column: usize| {
        grid.get(r).is_some_and(|row| {
            row.iter()
                .any(|(c, tc)| *c == column && vertical_merge(*tc) == Some("continue"))
        })
    };
    grid.iter()
        .enumerate()
        .map(|(r, row)| {
            row.iter()
                .filter(|(_, tc)| vertical_merge(*tc) != Some("continue"))
                .map(|(column, tc)| TableCell {
                    text: text(*tc),
                    colspan: grid_span(*tc),
                    rowspan: 1
                        + (r + 1..)
                            .take_while(|below| continues(*below, *column))
                            .count(),
                })
                .collect()
        })
        .collect()
}

#[test]
fn a_recorded_table_keeps_its_cells_and_spans_and_math_is_kept() {
    let source = grounding_dir().join("with_source/docling_md_deepseek");
    let document = Document::open(&source.join("2305.03393v1-pg9.pdf"), None).unwrap();
    let raw = read(&source.join("deepseek_example.output.md"));
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "Optimized Table Tokenization".into(),
        pages: vec![read_page(0, &raw)],
    };
    let out = tempfile::tempdir().unwrap();
    write_docx(&export, out.path(), "paper").unwrap();
    let files = unzip(&out.path().join("paper.docx"));
    let xml = text_of(&files, "word/document.xml");
    let body = roxmltree::Document::parse(&xml).unwrap();

    let tables: Vec<Node> = body.descendants().filter(|n| is(n, W, "tbl")).collect();
    assert_eq!(tables.len(), raw.matches("<table>").count());
    let expected = raw_rows(&raw);
    let cells = || expected.iter().flatten();
    assert!(cells().any(|c| c.colspan > 1) && cells().any(|c| c.rowspan > 1));
    assert_eq!(word_rows(tables[0]), expected);

    // Every row covers the whole grid, as wide as the recording's first row.
    let columns = find(tables[0], "tblGrid")
        .unwrap()
        .children()
        .filter(|n| is(n, W, "gridCol"))
        .count();
    assert_eq!(
        columns,
        expected[0].iter().map(|c| c.colspan).sum::<usize>()
    );
    for row in tables[0].children().filter(|n| is(n, W, "tr")) {
        let width: usize = row
            .children()
            .filter(|n| is(n, W, "tc"))
            .map(grid_span)
            .sum();
        assert_eq!(width, columns);
    }

    // The recording's inline LaTeX, `\(2x\)`, is Office Math in its paragraph, and no text run holds it.
    let formulas: Vec<Node> = body.descendants().filter(|n| is(n, M, "oMath")).collect();
    assert_eq!(formulas.len(), raw.matches("\\(").count());
    let math_text: String = formulas[0]
        .descendants()
        .filter(|n| is(n, M, "t"))
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(math_text, "2x");
    assert!(
        is(&formulas[0].parent().unwrap(), W, "p"),
        "inline, in its paragraph"
    );
    assert!(!xml.contains("\\(2x"), "the LaTeX is not left as text");

    let headings = docx_headings(&body_pages(&body)[0]);
    assert_eq!(headings, recorded_headings(&raw));
}
