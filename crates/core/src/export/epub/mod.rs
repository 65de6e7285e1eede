//! `OUT/<stem>.epub`: the reading as an EPUB 3 book, for e-readers. Each page's Markdown goes
//! through [`markdown_to_safe_html`] (sanitized, math kept as LaTeX text) and is written as
//! XHTML; the figures are cropped as [`super::write_figures`] crops them and travel inside the
//! book, so the file stands alone.

mod book;
mod chapters;
mod xhtml;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use book::{Book, BookInfo};
use chapters::{page_break, split_chapters, PAGE_NOTE_CLASS};
use xhtml::{html_to_body, xml_text, Element, Node};

use super::atomic::{ensure_dir, write_atomically};
use super::figures::{crop_figure, encode_png, page_figures, render_for_figures};
use super::html::{markdown_to_safe_html, page_note};
use super::language::document_language;
use super::{output_file, pages_in_order, DocumentExport, ExportError, ExportSummary, PageExport};

/// How the book is cut into chapters (content documents, one table-of-contents entry each). As the app's
/// Export dialog sends it: `"document"` or `{"heading": N}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EpubChapters {
    /// One chapter, named after the document.
    Document,
    /// A new chapter at each heading of level `N` or less (`Heading(1)`: at each `#` heading).
    /// Headings nested in other elements (a list, a table) do not start one. Text before the
    /// first such heading is a chapter named after the document.
    Heading(u8),
}

/// Writes `OUT/<stem>.epub`, creating `OUT` if needed. Nothing else is written: the figures are
/// inside the book.
pub fn write_epub(
    export: &DocumentExport<'_>,
    out_dir: &Path,
    stem: &str,
    chapters: EpubChapters,
) -> Result<ExportSummary, ExportError> {
    let path = output_file(out_dir, stem, "epub")?;
    let pages = pages_in_order(export)?;
    let title = book_title(&export.title, stem);
    let identifier = document_identifier(export.document.content_hash());
    let mut book = Book::new(&BookInfo {
        title: &title,
        // The reading does not say its language: it is told from the text ("und" where it cannot be).
        language: document_language(export),
        identifier,
    })?;
    let figures = add_figures(&mut book, export, &pages)?;
    let mut body = Vec::new();
    for &(index, page) in &pages {
        body.extend(page_body(index, page, &figures));
    }
    let chapters = split_chapters(body, chapters, &title);
    for chapter in &chapters {
        book.add_chapter(chapter)?;
    }
    let bytes = book.finish()?;
    ensure_dir(out_dir)?;
    write_atomically(&path, &bytes)?;
    tracing::info!(
        path = %path.display(),
        chapters = chapters.len(),
        figures = figures.len(),
        bytes = bytes.len(),
        "wrote EPUB export"
    );
    Ok(ExportSummary {
        files: vec![path],
        figures: figures.len(),
    })
}

/// The title as the package and the navigation show it: never empty (the file's name then).
fn book_title(title: &str, stem: &str) -> String {
    let title = xml_text(title).trim().to_owned();
    if title.is_empty() {
        xml_text(stem)
    } else {
        title
    }
}

/// A UUID made from the document's SHA-256, so every export of one document is the same
/// publication to a reading system.
fn document_identifier(sha256_hex: &str) -> Option<uuid::Uuid> {
    let digest = hex::decode(sha256_hex).ok()?;
    let bytes: [u8; 16] = digest.get(..16)?.try_into().ok()?;
    Some(uuid::Builder::from_custom_bytes(bytes).into_uuid())
}

/// Crops every figure of the reading into the book, a page rendered at a time so only one page
/// image is held; returns their links.
fn add_figures(
    book: &mut Book,
    export: &DocumentExport<'_>,
    pages: &[(usize, Option<&PageExport>)],
) -> Result<HashSet<String>, ExportError> {
    let mut links = HashSet::new();
    for page in pages.iter().filter_map(|(_, page)| *page) {
        let figures = page_figures(page);
        if figures.is_empty() {
            continue;
        }
        let image = render_for_figures(export.document, page.index)?;
        for figure in figures {
            let link = figure.link();
            let crop = crop_figure(&image, &figure.block.boxes);
            book.add_figure(&link, &encode_png(&crop, &PathBuf::from(&link))?)?;
            tracing::debug!(figure = %link, width = crop.width(), height = crop.height(), "embedded figure");
            links.insert(link);
        }
    }
    Ok(links)
}

/// Page `index`'s part of the body: where it begins, what a reader should know about it (see
/// `html::page_note`), then its content.
fn page_body(index: usize, page: Option<&PageExport>, figures: &HashSet<String>) -> Vec<Node> {
    let mut nodes = vec![page_break(index + 1), Node::Text("\n".to_owned())];
    if let Some(note) = page_note(page.map(|p| &p.status)) {
        let text = Node::Text(format!("Page {}: {}", index + 1, xml_text(&note)));
        nodes.push(Node::Element(Element::new(
            "p",
            &[("class", PAGE_NOTE_CLASS)],
            vec![text],
        )));
        nodes.push(Node::Text("\n".to_owned()));
    }
    if let Some(page) = page {
        nodes.extend(html_to_body(
            &markdown_to_safe_html(&page.markdown),
            figures,
        ));
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::epub::chapters::chapter_document;
    use crate::export::PageStatus;

    /// A page as the model might write it at its worst, through the whole path to a chapter.
    fn hostile_chapter() -> String {
        let markdown = "Intro\n\n# Title\u{1}\n\n<script>alert(1)</script>\n\nA&nbsp;B &copy; &#1; \u{0}\u{8}\u{b}\u{c}\u{1b}\u{7f}\u{fffe} ]]>\n\n\
                        <div><b>bold <i>italic <table><tr><td colspan=\"9x\">cell\n\n\
                        <center>Caption</center> <img src=\"images/0_0.png\"> <img src=\"/etc/passwd\" alt=\"gone\">\n\n\
                        <li>stray item</li> <br> <hr> \\(a < b \\& c\\) [x](notes.html \"t\") <p attr=\"\u{7}\">";
        let page = PageExport {
            index: 0,
            status: PageStatus::Looped {
                reason: "repeated <\u{2}token>".into(),
            },
            blocks: Vec::new(),
            markdown: markdown.into(),
            stats: None,
        };
        let figures = HashSet::from(["images/0_0.png".to_owned()]);
        let body = page_body(0, Some(&page), &figures);
        let chapters = split_chapters(body, EpubChapters::Heading(1), "Doc & <more>");
        assert_eq!(chapters.len(), 2, "text before the heading is a chapter");
        chapters
            .iter()
            .map(|chapter| chapter_document(chapter, "stylesheet.css"))
            .collect()
    }

    #[test]
    fn a_hostile_page_still_gives_well_formed_xhtml() {
        let xhtml = hostile_chapter();
        for document in xhtml.split("<?xml").skip(1) {
            let document = format!("<?xml{document}");
            let parsed = roxmltree::Document::parse_with_options(
                &document,
                roxmltree::ParsingOptions {
                    allow_dtd: true,
                    ..Default::default()
                },
            )
            .unwrap_or_else(|e| panic!("{e}:\n{document}"));
            let root = parsed.root_element();
            assert_eq!(
                root.tag_name().namespace(),
                Some("http://www.w3.org/1999/xhtml")
            );
            for node in parsed.descendants().filter(|n| n.is_element()) {
                assert!(
                    !["script", "center", "li"].contains(&node.tag_name().name()),
                    "{document}"
                );
                let has_valid_span = node
                    .attribute("colspan")
                    .is_none_or(|v| v.parse::<u32>().is_ok());
                assert!(has_valid_span, "{document}");
            }
        }
        assert!(!xhtml.contains("alert(1)") && !xhtml.contains("&nbsp;") && !xhtml.contains("]]>"));
        assert!(xhtml.contains("A\u{a0}B \u{a9}"), "{xhtml}");
        assert!(xhtml.contains("<b>bold <i>italic "), "{xhtml}");
        assert!(
            xhtml.contains("<img src=\"images/0_0.png\" alt=\"\"/>"),
            "{xhtml}"
        );
        assert!(!xhtml.contains("/etc/passwd") && xhtml.contains("gone"));
        assert!(
            xhtml.contains("\\(a &lt; b \\&amp; c\\)"),
            "math stays text: {xhtml}"
        );
        let forbidden = |c: char| c.is_control() && c != '\n' && c != '\t';
        assert!(!xhtml.contains(forbidden) && !xhtml.contains('\u{fffe}'));
        assert!(xhtml.contains("<title>Doc &amp; &lt;more&gt;</title>"));
        assert!(xhtml.contains("<title>Title</title>"));
    }

    #[test]
    fn an_unread_page_says_so() {
        let nodes = page_body(4, None, &HashSet::new());
        assert_eq!(xhtml::plain_text(&nodes), "Page 5: This page was not read.");
    }

    #[test]
    fn the_identifier_follows_the_document() {
        let hash = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let id = document_identifier(hash).unwrap();
        assert_eq!(id, document_identifier(hash).unwrap());
        assert_ne!(Some(id), document_identifier(&hash.replace("00", "01")));
        assert_eq!(document_identifier("not hex"), None);
    }

    #[test]
    fn export_errors_still_cross_threads() {
        // The CLI and the app hand export errors to anyhow and across threads.
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<ExportError>();
    }

    #[test]
    fn an_empty_title_falls_back_on_the_file_name() {
        assert_eq!(book_title(" \u{1} ", "report"), "report");
        assert_eq!(book_title("Manual\u{7}", "report"), "Manual");
    }
}
