//! The book's body cut into chapters, each its own XHTML content document.

use super::xhtml::{escape_xml, plain_text, write_nodes, Element, Node};
use super::EpubChapters;

/// The `epub:type` of the empty element that marks where a page of the document begins.
const PAGE_BREAK: &str = "pagebreak";

/// The class of a page's note (see `html::page_note`).
pub(super) const PAGE_NOTE_CLASS: &str = "page-note";

/// One content document and its entry in the table of contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Chapter {
    pub title: String,
    /// Depth in the table of contents: the heading's level, 1 for the document itself.
    pub level: u8,
    pub body: Vec<Node>,
}

/// Marks where page `number` (1-based) begins, for reading systems that show print pages.
pub(super) fn page_break(number: usize) -> Node {
    let number = number.to_string();
    Node::Element(Element::new(
        "span",
        &[
            ("epub:type", PAGE_BREAK),
            ("id", &format!("page-{number}")),
            ("title", &number),
        ],
        Vec::new(),
    ))
}

/// The body cut as asked. With headings, each top-level heading of a level up to the limit
/// starts a chapter named after it; what comes before the first one is a chapter named after
/// the document, so no text is ever lost.
pub(super) fn split_chapters(body: Vec<Node>, split: EpubChapters, title: &str) -> Vec<Chapter> {
    let max_level = match split {
        EpubChapters::Document => 0,
        EpubChapters::Heading(level) => level,
    };
    let mut done = Vec::new();
    let mut current = Chapter {
        title: title.to_owned(),
        level: 1,
        body: Vec::new(),
    };
    let mut page = 0;
    for node in body {
        page = page_number(&node).unwrap_or(page);
        if let Some((level, heading)) = chapter_heading(&node, max_level) {
            let next = Chapter {
                title: if heading.is_empty() {
                    format!("Page {page}")
                } else {
                    heading
                },
                level,
                body: take_page_starts(&mut current.body),
            };
            done.push(std::mem::replace(&mut current, next));
        }
        current.body.push(node);
    }
    done.push(current);
    drop_empty_opening(&mut done);
    done
}

/// The heading's level and text, when it starts a chapter.
fn chapter_heading(node: &Node, max_level: u8) -> Option<(u8, String)> {
    let Node::Element(element) = node else {
        return None;
    };
    let level = match element.name.as_bytes() {
        [b'h', digit @ b'1'..=b'6'] => digit - b'0',
        _ => return None,
    };
    (level <= max_level).then(|| (level, plain_text(&element.children)))
}

/// The page start markers and notes (and whitespace) at the end of a chapter, removed from it:
/// a page that opens with a heading begins in that heading's chapter.
fn take_page_starts(body: &mut Vec<Node>) -> Vec<Node> {
    let keep = body
        .iter()
        .rposition(|node| !is_page_start(node) && !is_blank(node))
        .map_or(0, |last| last + 1);
    body.split_off(keep)
}

/// The chapter before the first heading goes when it holds nothing to read; its markers (all it
/// can hold then) move to the next one.
fn drop_empty_opening(chapters: &mut Vec<Chapter>) {
    let [opening, next, ..] = chapters.as_mut_slice() else {
        return;
    };
    let empty = opening
        .body
        .iter()
        .all(|node| is_blank(node) || page_number(node).is_some());
    if empty {
        next.body.splice(0..0, std::mem::take(&mut opening.body));
        chapters.remove(0);
    }
}

fn page_number(node: &Node) -> Option<usize> {
    match node {
        Node::Element(e) if e.attr("epub:type") == Some(PAGE_BREAK) => {
            e.attr("title")?.parse().ok()
        }
        _ => None,
    }
}

fn is_page_start(node: &Node) -> bool {
    let is_note = matches!(node, Node::Element(e) if e.attr("class") == Some(PAGE_NOTE_CLASS));
    is_note || page_number(node).is_some()
}

fn is_blank(node: &Node) -> bool {
    matches!(node, Node::Text(text) if text.trim().is_empty())
}

/// The chapter as a complete XHTML content document, its figures linked relative to it.
pub(super) fn chapter_document(chapter: &Chapter, stylesheet: &str) -> String {
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n\
         <html xmlns=\"http://www.w3.org/1999/xhtml\" xmlns:epub=\"http://www.idpf.org/2007/ops\">\n\
         <head>\n<meta charset=\"utf-8\"/>\n<title>{}</title>\n\
         <link rel=\"stylesheet\" type=\"text/css\" href=\"{stylesheet}\"/>\n</head>\n<body>\n",
        escape_xml(&chapter.title)
    );
    write_nodes(&chapter.body, &mut out);
    out.push_str("\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::epub::xhtml::html_to_body;
    use std::collections::HashSet;

    fn body(pages: &[&str]) -> Vec<Node> {
        let mut nodes = Vec::new();
        for (i, html) in pages.iter().enumerate() {
            nodes.push(page_break(i + 1));
            nodes.extend(html_to_body(html, &HashSet::new()));
        }
        nodes
    }

    fn outline(chapters: &[Chapter]) -> Vec<(String, u8, String)> {
        chapters
            .iter()
            .map(|c| (c.title.clone(), c.level, plain_text(&c.body)))
            .collect()
    }

    #[test]
    fn text_before_the_first_heading_is_a_chapter_named_after_the_document() {
        let nodes = body(&[
            "<p>Intro</p><h2>Sub</h2><p>a</p>",
            "<h1>One</h1><p>b</p><h3>Deep</h3>",
        ]);
        let chapters = split_chapters(nodes, EpubChapters::Heading(2), "Manual");
        assert_eq!(
            outline(&chapters),
            [
                ("Manual".into(), 1, "Intro".into()),
                ("Sub".into(), 2, "Sub a".into()),
                ("One".into(), 1, "One b Deep".into()),
            ]
        );
        // Page 2 opens with its heading, so it begins in that heading's chapter.
        assert_eq!(page_number(&chapters[2].body[0]), Some(2));
    }

    #[test]
    fn a_document_that_opens_with_a_heading_has_no_empty_first_chapter() {
        let chapters = split_chapters(
            body(&["<h1>Title</h1><p>x</p>"]),
            EpubChapters::Heading(1),
            "Doc",
        );
        assert_eq!(outline(&chapters), [("Title".into(), 1, "Title x".into())]);
        assert_eq!(page_number(&chapters[0].body[0]), Some(1));
    }

    #[test]
    fn one_chapter_holds_everything_when_not_split() {
        let nodes = body(&["<h1>A</h1>", "<h1>B</h1>"]);
        for split in [EpubChapters::Document, EpubChapters::Heading(0)] {
            let chapters = split_chapters(nodes.clone(), split, "Doc");
            assert_eq!(outline(&chapters), [("Doc".into(), 1, "A B".into())]);
        }
    }

    #[test]
    fn an_empty_heading_is_named_after_its_page() {
        let chapters = split_chapters(
            body(&["<p>x</p>", "<h1> </h1>"]),
            EpubChapters::Heading(1),
            "Doc",
        );
        assert_eq!(chapters[1].title, "Page 2");
    }
}
