//! One page's Markdown as Word paragraphs and tables, walked event by event with pulldown-cmark:
//! headings, paragraphs, emphasis, lists, code, figures, the model's HTML tables and `<center>`
//! captions, and its LaTeX.

use docx_rs::{AlignmentType, BreakType, Paragraph, Run};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::numbering::{ListId, ListNumbering};
use super::pictures::Pictures;
use super::table::word_table;
use super::text::{html_text, is_line_break_tag, runs, text_run, RunStyle};
use crate::export::math::{protect_math, Piece, ProtectedMath};
use crate::export::tables::page_tables;

/// A top-level part of the document body.
pub(super) enum Part {
    Paragraph(Box<Paragraph>),
    Table(Box<docx_rs::Table>),
}

/// The parts of page `page`, whose Markdown is `markdown`. Its figure links take their pictures
/// from `pictures`; its lists are numbered in `lists`, which the whole document shares.
pub(super) fn page_parts(
    page: usize,
    markdown: &str,
    pictures: &mut Pictures,
    lists: &mut ListNumbering,
) -> Vec<Part> {
    // `\(` and `\[` are Markdown escapes, and `_` or `*` in a formula emphasis: math is taken out
    // before parsing and put back in the runs.
    let math = protect_math(markdown);
    let mut walker = Walker {
        page,
        math: &math,
        pictures,
        lists,
        parts: Vec::new(),
        paragraph: None,
        pending: String::new(),
        style: Counts::default(),
        list_stack: Vec::new(),
        heading: None,
        image: None,
        html: None,
        code_block: false,
        code_line_ends: 0,
        in_pipe_table: false,
    };
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    for (event, source) in Parser::new_ext(&math.text, options).into_offset_iter() {
        walker.event(event, &math.text[source]);
    }
    walker.close_paragraph();
    walker.parts
}

/// How many emphasis, strong and strikethrough spans are open (they nest).
#[derive(Debug, Default)]
struct Counts {
    italic: usize,
    bold: usize,
    strike: usize,
}

/// A list being walked: where its numbers come from, and whether its current item has had its
/// number (the item's first paragraph gets it, further ones are indented).
struct OpenList {
    id: ListId,
    item_numbered: bool,
}

struct Walker<'p> {
    page: usize,
    math: &'p ProtectedMath,
    pictures: &'p mut Pictures,
    lists: &'p mut ListNumbering,
    parts: Vec<Part>,
    /// The paragraph runs are being added to.
    paragraph: Option<Paragraph>,
    /// Text not yet made into runs: consecutive text events share a run, and a math placeholder
    /// is never cut between two events.
    pending: String,
    style: Counts,
    list_stack: Vec<OpenList>,
    heading: Option<usize>,
    /// Inside `![alt](link)`: the link and the alt text so far.
    image: Option<(String, String)>,
    /// Inside an HTML block: its text so far.
    html: Option<String>,
    code_block: bool,
    /// Line ends of the code block not yet written.
    code_line_ends: usize,
    /// Inside a pipe table (the text layer writes them), already written from its source.
    in_pipe_table: bool,
}

impl Walker<'_> {
    /// Handles one event; `source` is the Markdown it was parsed from.
    fn event(&mut self, event: Event<'_>, source: &str) {
        if self.in_pipe_table {
            self.in_pipe_table = !matches!(event, Event::End(TagEnd::Table));
            return;
        }
        match event {
            Event::Start(Tag::Table(_)) => {
                self.in_pipe_table = true;
                self.tables(source);
            }
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                self.flush();
                let style = RunStyle {
                    code: true,
                    ..self.run_style()
                };
                self.push_runs(runs(&code, self.math, style));
            }
            Event::Html(html) => match &mut self.html {
                Some(block) => block.push_str(&html),
                None => self.inline_html(&html),
            },
            Event::InlineHtml(html) => self.inline_html(&html),
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.line_break(),
            Event::Rule => self.close_paragraph(),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.open_paragraph(),
            Tag::Heading { level, .. } => {
                self.heading = Some(level as usize);
                self.open_paragraph();
            }
            Tag::List(first) => {
                self.close_paragraph();
                let depth = self.list_stack.len();
                let id = match first {
                    Some(start) => self.lists.numbered(depth, start),
                    None => self.lists.bulleted(depth),
                };
                self.list_stack.push(OpenList {
                    id,
                    item_numbered: false,
                });
            }
            Tag::Item => {
                self.close_paragraph();
                if let Some(list) = self.list_stack.last_mut() {
                    list.item_numbered = false;
                }
            }
            Tag::Emphasis => self.restyle(|s| s.italic += 1),
            Tag::Strong => self.restyle(|s| s.bold += 1),
            Tag::Strikethrough => self.restyle(|s| s.strike += 1),
            Tag::Image { dest_url, .. } => {
                self.flush();
                self.image = Some((dest_url.into_string(), String::new()));
            }
            Tag::CodeBlock(_) => {
                self.open_paragraph();
                self.code_block = true;
                self.code_line_ends = 0;
            }
            Tag::HtmlBlock => {
                self.close_paragraph();
                self.html = Some(String::new());
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::Item => self.close_paragraph(),
            TagEnd::Heading(_) => {
                self.close_paragraph();
                self.heading = None;
            }
            TagEnd::List(_) => {
                self.close_paragraph();
                self.list_stack.pop();
            }
            TagEnd::Emphasis => self.restyle(|s| s.italic = s.italic.saturating_sub(1)),
            TagEnd::Strong => self.restyle(|s| s.bold = s.bold.saturating_sub(1)),
            TagEnd::Strikethrough => self.restyle(|s| s.strike = s.strike.saturating_sub(1)),
            TagEnd::Image => self.figure(),
            TagEnd::CodeBlock => {
                self.close_paragraph();
                self.code_block = false;
            }
            TagEnd::HtmlBlock => {
                if let Some(html) = self.html.take() {
                    self.html_block(&html);
                }
            }
            _ => {}
        }
    }

    fn text(&mut self, text: &str) {
        if let Some((_, alt)) = &mut self.image {
            alt.push_str(text);
        } else if self.code_block {
            self.code_lines(text);
        } else {
            self.pending.push_str(text);
        }
    }

    /// Code keeps its lines: each line end is a line break in the one paragraph, written once
    /// more code follows (the block's last line end is not).
    fn code_lines(&mut self, text: &str) {
        let style = RunStyle {
            code: true,
            ..RunStyle::default()
        };
        for (n, line) in text.split('\n').enumerate() {
            if n > 0 {
                self.code_line_ends += 1;
            }
            if line.is_empty() {
                continue;
            }
            for _ in 0..std::mem::take(&mut self.code_line_ends) {
                self.line_break();
            }
            self.push_runs(runs(line, self.math, style));
        }
    }

    /// Ends the current run before a style change, so the text before it keeps its style.
    fn restyle(&mut self, change: impl FnOnce(&mut Counts)) {
        self.flush();
        change(&mut self.style);
    }

    fn run_style(&self) -> RunStyle {
        RunStyle {
            bold: self.style.bold > 0,
            italic: self.style.italic > 0,
            strike: self.style.strike > 0,
            code: false,
        }
    }

    /// Makes the pending text into runs: its plain parts in the current style, its math spans in
    /// the math font.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.pending);
        self.push_runs(runs(&text, self.math, self.run_style()));
    }

    fn push_runs(&mut self, new_runs: Vec<Run>) {
        let paragraph = match self.paragraph.take() {
            Some(paragraph) => paragraph,
            None => self.new_paragraph(),
        };
        self.paragraph = Some(new_runs.into_iter().fold(paragraph, Paragraph::add_run));
    }

    fn line_break(&mut self) {
        self.flush();
        self.push_runs(vec![Run::new().add_break(BreakType::TextWrapping)]);
    }

    fn open_paragraph(&mut self) {
        self.close_paragraph();
        self.paragraph = Some(self.new_paragraph());
    }

    /// A paragraph for where the walk is: a heading, a list item (numbered if it is the item's
    /// first paragraph), or body text.
    fn new_paragraph(&mut self) -> Paragraph {
        let paragraph = Paragraph::new();
        if let Some(level) = self.heading {
            return paragraph.style(&format!("{}{level}", super::HEADING_STYLE));
        }
        match self.list_stack.last_mut() {
            Some(list) if !list.item_numbered => {
                list.item_numbered = true;
                list.id.item(paragraph)
            }
            Some(list) => list.id.continuation(paragraph),
            None => paragraph,
        }
    }

    /// Ends the paragraph being written; an empty one (an item holding only a nested list) is
    /// dropped.
    fn close_paragraph(&mut self) {
        self.flush();
        if let Some(paragraph) = self.paragraph.take() {
            if !paragraph.children().is_empty() {
                self.parts.push(Part::Paragraph(Box::new(paragraph)));
            }
        }
    }

    /// `![alt](images/{page}_{n}.png)`: the figure's picture; a link to no figure of the page
    /// keeps its alt text.
    fn figure(&mut self) {
        let Some((link, alt)) = self.image.take() else {
            return;
        };
        match self.pictures.take_run(&link) {
            Some(run) => self.push_runs(vec![run]),
            None => {
                tracing::debug!(page = self.page, %link, "figure link without a figure");
                self.pending.push_str(&alt);
            }
        }
    }

    /// Inline HTML: a `<br>` is a line break; other tags (`<center>`, `<sup>`, …) are dropped
    /// and their text flows on.
    fn inline_html(&mut self, html: &str) {
        if is_line_break_tag(html) {
            self.line_break();
        }
    }

    /// An HTML block: its tables as Word tables, the text around them as paragraphs (centred if
    /// the block is a `<center>`).
    fn html_block(&mut self, html: &str) {
        let pieces = table_pieces(html);
        if !pieces.iter().any(|(_, is_table)| *is_table) {
            let centred = html.to_ascii_lowercase().contains("<center");
            self.html_paragraphs(html, centred);
            return;
        }
        for (piece, is_table) in pieces {
            match is_table {
                true => self.tables(piece),
                false => self.html_paragraphs(piece, false),
            }
        }
    }

    /// The tables of a piece of the page's Markdown (an HTML block, a pipe table), read by the
    /// export's table reader, as Word tables.
    fn tables(&mut self, markdown: &str) {
        self.close_paragraph();
        for table in page_tables(self.page, &self.with_math_restored(markdown)) {
            self.parts.push(Part::Table(Box::new(word_table(&table))));
        }
    }

    /// The Markdown with its math spans as written again, for the table reader, which protects
    /// math itself.
    fn with_math_restored(&self, html: &str) -> String {
        self.math
            .pieces(html)
            .into_iter()
            .map(|piece| match piece {
                Piece::Text(text) | Piece::Math(text) => text,
            })
            .collect()
    }

    /// Paragraphs of the text of `html`, tags stripped while its math is still protected, so a
    /// `<` in a formula is not read as a tag.
    fn html_paragraphs(&mut self, html: &str, centred: bool) {
        let text = html_text(html);
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            let mut paragraph = runs(line, self.math, RunStyle::default())
                .into_iter()
                .fold(Paragraph::new(), Paragraph::add_run);
            if centred {
                paragraph = paragraph.align(AlignmentType::Center);
            }
            self.parts.push(Part::Paragraph(Box::new(paragraph)));
        }
    }
}

/// `html` cut into its outermost tables (true) and the text between them (false), in order, so that
/// no text between two tables is lost. A table left open runs to the end.
fn table_pieces(html: &str) -> Vec<(&str, bool)> {
    // ASCII lowercasing keeps every byte offset, so positions in `lower` are positions in `html`.
    let lower = html.to_ascii_lowercase();
    let mut pieces = Vec::new();
    let mut at = 0;
    while let Some(start) = lower[at..].find("<table").map(|i| at + i) {
        let end = table_end(&lower, start);
        pieces.push((&html[at..start], false));
        pieces.push((&html[start..end], true));
        at = end;
    }
    pieces.push((&html[at..], false));
    pieces.retain(|(piece, is_table)| *is_table || !piece.trim().is_empty());
    if pieces.is_empty() {
        pieces.push((html, false));
    }
    pieces
}

/// Where the table opened at `start` of `lower` ends: after its own `</table>`, nested tables counted.
fn table_end(lower: &str, start: usize) -> usize {
    let mut depth = 0usize;
    let mut at = start;
    loop {
        let open = lower[at..].find("<table").map(|i| at + i);
        let close = lower[at..].find("</table>").map(|i| at + i);
        match (open, close) {
            (Some(o), Some(c)) if o < c => {
                depth += 1;
                at = o + "<table".len();
            }
            (_, Some(c)) => {
                depth = depth.saturating_sub(1);
                at = c + "</table>".len();
                if depth == 0 {
                    return at;
                }
            }
            (_, None) => return lower.len(),
        }
    }
}

/// Plain text of `text` in the document's default style, for notes and titles.
pub(super) fn plain_paragraph(text: &str, style: &str) -> Paragraph {
    Paragraph::new()
        .style(style)
        .add_run(text_run(text, RunStyle::default()))
}
