//! Sanitized HTML as XHTML. EPUB content documents are XML and are validated against the HTML
//! schema, so the HTML [`super::super::markdown_to_safe_html`] makes is parsed with html5ever's
//! tokenizer into a small tree, brought within what the schema allows, and written back as XML:
//! void elements closed, only XML's own entities, no character XML forbids.
//!
//! The input has already been through the sanitizer's HTML parser, so its tags are balanced; the
//! tree built here still closes whatever is left open and ignores stray end tags, so the output is
//! well-formed whatever comes in.

use std::cell::RefCell;
use std::collections::HashSet;

use ammonia::Url;
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::TokenizerResult;

/// One node of a content document's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Node {
    Element(Element),
    Text(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Element {
    /// A lowercase ASCII HTML element name.
    pub name: String,
    /// Unique names, values as text (escaped when written).
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Node>,
}

impl Element {
    pub fn new(name: &str, attrs: &[(&str, &str)], children: Vec<Node>) -> Element {
        Element {
            name: name.to_owned(),
            attrs: attrs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), xml_text(v)))
                .collect(),
            children,
        }
    }

    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Elements with no content and no end tag in HTML; written `<name/>`.
const VOID_ELEMENTS: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

/// Elements that may only hold phrasing content: a block inside one is a schema error.
const PHRASING_ONLY: &[&str] = &[
    "b", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "i", "p", "pre", "s", "span",
    "strong", "sub", "sup", "u",
];

/// Elements that run on within a line of text: no word break around them.
const INLINE: &[&str] = &[
    "a", "b", "code", "del", "em", "i", "s", "span", "strong", "sub", "sup", "u",
];

/// Schemes a link may keep, as in the sanitizer.
const LINK_SCHEMES: &[&str] = &["http", "https", "mailto"];

/// The body nodes of `html`, conforming to EPUB's XHTML: images only where `figures` (the links
/// of the figures the book embeds) has their source, so no image points outside the book.
pub(super) fn html_to_body(html: &str, figures: &HashSet<String>) -> Vec<Node> {
    conform_nodes(parse_html(html), None, figures)
}

/// `html` tokenized by html5ever (which decodes every character reference) into a tree.
fn parse_html(html: &str) -> Vec<Node> {
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    let tokenizer = Tokenizer::new(TreeOfTokens::default(), TokenizerOpts::default());
    // Our sink never asks to pause for a script, so one feed consumes everything.
    while let TokenizerResult::Script(_) = tokenizer.feed(&input) {}
    tokenizer.end();
    tokenizer.sink.tree.into_inner().finish()
}

/// Builds the tree from tokens; the tokenizer's sink interface takes `&self`.
#[derive(Default)]
struct TreeOfTokens {
    tree: RefCell<OpenTree>,
}

impl TokenSink for TreeOfTokens {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut tree = self.tree.borrow_mut();
        match token {
            Token::TagToken(tag) if tag.kind == TagKind::StartTag => tree.start(&tag),
            Token::TagToken(tag) => tree.end(&tag.name),
            Token::CharacterTokens(text) => tree.text(&text),
            // Comments, doctypes, NUL characters and parse errors carry nothing to keep.
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

/// The finished nodes and the elements still open, innermost last.
#[derive(Default)]
struct OpenTree {
    root: Vec<Node>,
    open: Vec<Element>,
}

impl OpenTree {
    fn children(&mut self) -> &mut Vec<Node> {
        match self.open.last_mut() {
            Some(element) => &mut element.children,
            None => &mut self.root,
        }
    }

    fn start(&mut self, tag: &Tag) {
        let name = str::to_ascii_lowercase(&tag.name);
        // Nothing the sanitizer lets through has another name; an odd one is dropped, its
        // content kept, rather than written as a name XML cannot hold.
        if !is_plain_name(&name) {
            return;
        }
        let mut element = Element {
            name,
            attrs: Vec::new(),
            children: Vec::new(),
        };
        for attr in &tag.attrs {
            let key = str::to_ascii_lowercase(&attr.name.local);
            if is_plain_name(&key) && element.attr(&key).is_none() {
                element.attrs.push((key, xml_text(&attr.value)));
            }
        }
        if VOID_ELEMENTS.contains(&element.name.as_str()) {
            self.children().push(Node::Element(element));
        } else {
            self.open.push(element);
        }
    }

    /// Closes the innermost open element of that name, and any left open inside it.
    fn end(&mut self, name: &str) {
        let name = name.to_ascii_lowercase();
        if let Some(depth) = self.open.iter().rposition(|e| e.name == name) {
            while self.open.len() > depth {
                self.close_innermost();
            }
        }
    }

    fn close_innermost(&mut self) {
        if let Some(element) = self.open.pop() {
            self.children().push(Node::Element(element));
        }
    }

    fn text(&mut self, text: &str) {
        let text = xml_text(text);
        if text.is_empty() {
            return;
        }
        let children = self.children();
        match children.last_mut() {
            Some(Node::Text(previous)) => previous.push_str(&text),
            _ => children.push(Node::Text(text)),
        }
    }

    fn finish(mut self) -> Vec<Node> {
        while !self.open.is_empty() {
            self.close_innermost();
        }
        self.root
    }
}

/// `[a-z][a-z0-9]*`: every HTML element and attribute name the sanitizer allows.
fn is_plain_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

fn conform_nodes(nodes: Vec<Node>, parent: Option<&str>, figures: &HashSet<String>) -> Vec<Node> {
    let mut out = Vec::with_capacity(nodes.len());
    for node in nodes {
        match node {
            Node::Text(text) => out.push(Node::Text(text)),
            Node::Element(element) if element.name == "img" => {
                out.extend(conform_image(element, figures));
            }
            Node::Element(element) => {
                out.push(Node::Element(conform_element(element, parent, figures)))
            }
        }
    }
    out
}

/// Renames what the schema rejects where it stands, keeps only valid attribute values.
fn conform_element(
    mut element: Element,
    parent: Option<&str>,
    figures: &HashSet<String>,
) -> Element {
    let mut class = None;
    element.name = match (element.name.as_str(), parent) {
        // `center` is obsolete in HTML 5; the model writes it around captions.
        ("center", Some(p)) if PHRASING_ONLY.contains(&p) => {
            class = Some("center");
            "span".to_owned()
        }
        ("center", _) => {
            class = Some("center");
            "div".to_owned()
        }
        ("li", p) if !matches!(p, Some("ul" | "ol")) => "div".to_owned(),
        ("dt" | "dd", p) if p != Some("dl") => "div".to_owned(),
        _ => element.name,
    };
    element.attrs = conform_attributes(&element.name, element.attrs);
    if let Some(class) = class {
        element.attrs.push(("class".to_owned(), class.to_owned()));
    }
    element.children = conform_nodes(element.children, Some(&element.name), figures);
    element
}

/// An image whose source is one of the book's figures, with the `alt` the schema requires; any
/// other image becomes its alternative text, since its file is not in the book.
fn conform_image(element: Element, figures: &HashSet<String>) -> Option<Node> {
    let alt = element.attr("alt").unwrap_or_default().to_owned();
    match element.attr("src") {
        Some(src) if figures.contains(src) => {
            let mut attrs = conform_attributes("img", element.attrs);
            if !attrs.iter().any(|(k, _)| k == "alt") {
                attrs.push(("alt".to_owned(), String::new()));
            }
            Some(Node::Element(Element {
                name: element.name,
                attrs,
                children: Vec::new(),
            }))
        }
        _ if alt.trim().is_empty() => None,
        _ => Some(Node::Text(alt)),
    }
}

fn conform_attributes(element: &str, attrs: Vec<(String, String)>) -> Vec<(String, String)> {
    attrs
        .into_iter()
        .filter_map(|(key, value)| {
            let value = conform_attribute(element, &key, &value)?;
            Some((key, value))
        })
        .collect()
}

/// The attribute's value where the schema accepts it on this element; `None` drops it.
fn conform_attribute(element: &str, key: &str, value: &str) -> Option<String> {
    let kept = match (element, key) {
        (_, "title") => Some(value.to_owned()),
        ("a", "href") => link_target(value),
        ("img", "src" | "alt") => Some(value.to_owned()),
        ("img", "width" | "height") => whole_number(value, 0, u32::MAX),
        ("td" | "th", "colspan") | ("col" | "colgroup", "span") => whole_number(value, 1, 1000),
        ("td" | "th", "rowspan") => whole_number(value, 0, 65534),
        ("ol", "start") => value.trim().parse::<i64>().ok().map(|n| n.to_string()),
        // `rel` among them: its link types mean nothing to a reading system, and not every
        // validator knows them.
        _ => None,
    };
    if kept.is_none() {
        tracing::debug!(
            element,
            attribute = key,
            value,
            "attribute dropped from EPUB XHTML"
        );
    }
    kept
}

/// A web or mail link, as a valid URL (the href must parse as one); anything else (relative
/// paths, which would point outside the book) is dropped.
fn link_target(href: &str) -> Option<String> {
    let url = Url::parse(href.trim()).ok()?;
    LINK_SCHEMES
        .contains(&url.scheme())
        .then(|| url.as_str().to_owned())
}

fn whole_number(value: &str, min: u32, max: u32) -> Option<String> {
    let n: u32 = value.trim().parse().ok()?;
    (min..=max).contains(&n).then(|| n.to_string())
}

/// `text` without the characters XML 1.0 forbids or discourages: control characters other than
/// tab and line feed, and U+FFFE/U+FFFF.
pub(super) fn xml_text(text: &str) -> String {
    text.chars()
        .filter(|&c| {
            (!c.is_control() || c == '\t' || c == '\n') && c != '\u{FFFE}' && c != '\u{FFFF}'
        })
        .collect()
}

/// The text of the nodes, runs of whitespace made one space, trimmed: a heading as a title.
pub(super) fn plain_text(nodes: &[Node]) -> String {
    let mut raw = String::new();
    collect_text(nodes, &mut raw);
    raw.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn collect_text(nodes: &[Node], out: &mut String) {
    for node in nodes {
        match node {
            Node::Text(text) => out.push_str(text),
            Node::Element(element) => {
                collect_text(&element.children, out);
                // Block boundaries and line breaks separate words; inline markup does not.
                if !INLINE.contains(&element.name.as_str()) {
                    out.push(' ');
                }
            }
        }
    }
}

/// Writes the nodes as XML.
pub(super) fn write_nodes(nodes: &[Node], out: &mut String) {
    for node in nodes {
        match node {
            Node::Text(text) => escape_into(text, false, out),
            Node::Element(element) => write_element(element, out),
        }
    }
}

fn write_element(element: &Element, out: &mut String) {
    out.push('<');
    out.push_str(&element.name);
    for (key, value) in &element.attrs {
        out.push(' ');
        out.push_str(key);
        out.push_str("=\"");
        escape_into(value, true, out);
        out.push('"');
    }
    if element.children.is_empty() && VOID_ELEMENTS.contains(&element.name.as_str()) {
        out.push_str("/>");
        return;
    }
    out.push('>');
    write_nodes(&element.children, out);
    out.push_str("</");
    out.push_str(&element.name);
    out.push('>');
}

/// Escapes with XML's predefined entities only (`>` too, so `]]>` never appears in text).
pub(super) fn escape_into(text: &str, in_attribute: bool, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if in_attribute => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
}

pub(super) fn escape_xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_into(text, true, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xhtml(html: &str, figures: &[&str]) -> String {
        let figures = figures.iter().map(|f| (*f).to_owned()).collect();
        let mut out = String::new();
        write_nodes(&html_to_body(html, &figures), &mut out);
        out
    }

    #[test]
    fn void_elements_are_closed_and_entities_decoded() {
        assert_eq!(
            xhtml("<p>a&nbsp;b<br>c &amp; d &lt;</p><hr>", &[]),
            "<p>a\u{a0}b<br/>c &amp; d &lt;</p><hr/>"
        );
    }

    #[test]
    fn unclosed_and_stray_tags_give_a_balanced_tree() {
        assert_eq!(
            xhtml("<div><b>x<i>y</div></u>z", &[]),
            "<div><b>x<i>y</i></b></div>z"
        );
    }

    #[test]
    fn only_embedded_figures_stay_images() {
        assert_eq!(
            xhtml(
                "<img src=\"images/0_0.png\"><img src=\"other.png\" alt=\"chart\"><img src=x>",
                &["images/0_0.png"]
            ),
            "<img src=\"images/0_0.png\" alt=\"\"/>chart"
        );
    }

    #[test]
    fn what_the_schema_rejects_is_rewritten() {
        assert_eq!(
            xhtml(
                "<center>Cap</center><p><span><center>c</center></span></p><li>loose</li>",
                &[]
            ),
            "<div class=\"center\">Cap</div><p><span><span class=\"center\">c</span></span></p>\
             <div>loose</div>"
        );
        assert_eq!(
            xhtml(
                "<td colspan=\"x\" rowspan=\"2\">a</td><a href=\"notes.html\" rel=\"noopener\">n</a>\
                 <a href=\"https://example.org/a b\">w</a>",
                &[]
            ),
            "<td rowspan=\"2\">a</td><a>n</a><a href=\"https://example.org/a%20b\">w</a>"
        );
    }

    #[test]
    fn characters_xml_forbids_are_removed() {
        assert_eq!(
            xml_text("a\u{0}b\u{1}\u{8}c\td\ne\u{7f}\u{9f}\u{fffe}f"),
            "abc\td\nef"
        );
        assert_eq!(escape_xml("]]> \"q\""), "]]&gt; &quot;q&quot;");
    }

    #[test]
    fn headings_read_as_one_line_of_text() {
        let nodes = html_to_body(
            "<h2> Vinter<b>köld</b> Power<br>Safety\n</h2>",
            &HashSet::new(),
        );
        assert_eq!(plain_text(&nodes), "Vinterköld Power Safety");
    }
}
