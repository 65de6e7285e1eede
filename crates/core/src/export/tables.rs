//! The tables of a reading, for the CSV and XLSX exports (and any other export that wants them as
//! data rather than as HTML).
//!
//! The model writes tables as HTML (`<table><tr><td colspan="2">…`); the text layer writes Markdown
//! pipe tables. Both are found the same way: the page's Markdown is rendered to HTML as the HTML
//! export renders it (math kept verbatim), then parsed with scraper (html5ever, the parser ammonia
//! uses), which repairs broken markup the way a browser would. Scripts, styles and the like are
//! no text of the page and are skipped with their content.
//!
//! Model tables are untrusted: spans and the laid-out grid are bounded, so a hostile table costs
//! at most a few megabytes.

use pulldown_cmark::{html::push_html, Options, Parser};
use scraper::{ElementRef, Html, Node};

use super::math::protect_math;
use super::DocumentExport;

/// The largest `rowspan` or `colspan` honoured, as browsers clamp `colspan`.
pub const MAX_SPAN: usize = 1000;

/// The widest grid laid out (Excel's column limit); cells starting further right are dropped.
pub const MAX_COLUMNS: usize = 16_384;

/// The most positions in one table's grid (16 MB of grid); rows past it are dropped.
pub const MAX_GRID_CELLS: usize = 1_000_000;

/// One table of a page: the model writes HTML tables (`<table><tr><td colspan="2">…`), the text
/// layer Markdown pipe tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// 0-based page index, as [`super::PageExport::index`].
    pub page: usize,
    /// The table's rows in source order (`thead`, `tbody`, `tfoot` as written), each with its
    /// cells as written: a cell spanning several rows appears only in its first row.
    pub rows: Vec<Vec<Cell>>,
}

/// One cell as written in the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// The cell's text content, whitespace (and line breaks) collapsed to single spaces; LaTeX is
    /// kept as written.
    pub text: String,
    /// A `th` cell (in a pipe table, the header row).
    pub header: bool,
    /// At least 1 (a missing, zero or unreadable span is 1), at most [`MAX_SPAN`].
    pub row_span: usize,
    pub col_span: usize,
}

/// Where a cell lands in the grid.
#[derive(Debug, Clone, Copy)]
struct Placement<'t> {
    cell: &'t Cell,
    row: usize,
    column: usize,
    rows: usize,
    columns: usize,
}

/// The table laid out: every cell's place, and the grid's size.
struct Layout<'t> {
    placements: Vec<Placement<'t>>,
    height: usize,
    width: usize,
    /// Cells, rows or span parts were dropped to stay within the bounds.
    truncated: bool,
}

impl Table {
    /// Rows × columns with spans laid out: each position holds the cell that covers it and
    /// whether it is that cell's top-left. Positions no cell covers (a short row) are `None`.
    /// Where badly formed spans overlap, the cell written first keeps the position.
    pub fn grid(&self) -> Vec<Vec<Option<(&Cell, bool)>>> {
        let layout = self.layout();
        let mut grid = vec![vec![None; layout.width]; layout.height];
        for p in &layout.placements {
            for (r, row) in grid.iter_mut().enumerate().skip(p.row).take(p.rows) {
                for (c, slot) in row.iter_mut().enumerate().skip(p.column).take(p.columns) {
                    if slot.is_none() {
                        *slot = Some((p.cell, r == p.row && c == p.column));
                    }
                }
            }
        }
        grid
    }

    /// The width of [`Table::grid`].
    pub fn columns(&self) -> usize {
        self.layout().width
    }

    /// Places cells as HTML does: each row's cells go left to right into the columns not taken
    /// by a cell spanning down from a row above. Works row by row and stops once the grid would
    /// exceed [`MAX_GRID_CELLS`], so the work is bounded by the grid size, not the spans.
    fn layout(&self) -> Layout<'_> {
        // The row up to which (exclusive) each column is taken by a cell from an earlier row.
        let mut taken_until: Vec<usize> = Vec::new();
        let mut placements = Vec::new();
        let mut width = 0;
        let mut height = 0;
        let mut truncated = false;
        for (r, cells) in self.rows.iter().enumerate() {
            if (r + 1) * width.max(1) > MAX_GRID_CELLS {
                truncated = true;
                break;
            }
            height = r + 1;
            let mut column = 0;
            for cell in cells {
                while taken_until.get(column).is_some_and(|&until| until > r) {
                    column += 1;
                }
                if column >= MAX_COLUMNS {
                    truncated = true;
                    break;
                }
                let rows = cell.row_span.clamp(1, MAX_SPAN);
                let columns = cell.col_span.clamp(1, MAX_SPAN).min(MAX_COLUMNS - column);
                truncated |= columns < cell.col_span || rows < cell.row_span;
                let end = column + columns;
                if taken_until.len() < end {
                    taken_until.resize(end, 0);
                }
                for until in &mut taken_until[column..end] {
                    *until = (*until).max(r + rows);
                }
                placements.push(Placement {
                    cell,
                    row: r,
                    column,
                    rows,
                    columns,
                });
                width = width.max(end);
                column = end;
            }
        }
        // Spans reaching past the last row end with the table, as in HTML.
        let height = height.min(MAX_GRID_CELLS / width.max(1));
        for p in &mut placements {
            p.rows = p.rows.min(height.saturating_sub(p.row));
        }
        placements.retain(|p| p.rows > 0);
        Layout {
            placements,
            height,
            width,
            truncated,
        }
    }
}

/// The tables of one page's Markdown, in order (HTML tables and GFM pipe tables). Tables without
/// a single cell are left out; a table inside a cell of another is part of that cell's text.
pub fn page_tables(page: usize, markdown: &str) -> Vec<Table> {
    if !might_hold_a_table(markdown) {
        return Vec::new();
    }
    let html = Html::parse_fragment(&markdown_html(markdown));
    let tables: Vec<Table> = outermost_tables(html.root_element())
        .into_iter()
        .map(|element| read_table(page, element))
        .filter(|table| table.rows.iter().any(|row| !row.is_empty()))
        .collect();
    for (n, table) in tables.iter().enumerate() {
        if table.layout().truncated {
            tracing::warn!(
                page,
                table = n,
                "a table is larger than the export allows; its excess rows, columns or spans were dropped"
            );
        }
    }
    tables
}

/// Every table of the document, page by page.
pub fn document_tables(export: &DocumentExport<'_>) -> Vec<Table> {
    let mut pages: Vec<_> = export.pages.iter().collect();
    pages.sort_by_key(|page| page.index);
    pages
        .iter()
        .flat_map(|page| page_tables(page.index, &page.markdown))
        .collect()
}

/// Each table's 1-based number within its page, for file and sheet names.
pub(super) fn numbers_within_pages(tables: &[Table]) -> Vec<usize> {
    let mut numbers = Vec::with_capacity(tables.len());
    let mut previous: Option<(usize, usize)> = None;
    for table in tables {
        let n = match previous {
            Some((page, n)) if page == table.page => n + 1,
            _ => 1,
        };
        previous = Some((table.page, n));
        numbers.push(n);
    }
    numbers
}

/// A page with neither an HTML table nor a pipe has no table; most pages, so skip parsing them.
fn might_hold_a_table(markdown: &str) -> bool {
    markdown.contains('|') || markdown.to_ascii_lowercase().contains("<table")
}

/// The page's Markdown as HTML, rendered as the HTML export renders it: pipe tables become
/// `<table>`s, HTML tables pass through, math is kept as written.
fn markdown_html(markdown: &str) -> String {
    let protected = protect_math(markdown);
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    push_html(
        &mut html,
        Parser::new_ext(&protected.text, Options::ENABLE_TABLES),
    );
    protected.restore(&html)
}

/// Elements whose content is not text of the page: the HTML export drops them with their content
/// too (see `sanitize.rs`).
const DROPPED_WITH_CONTENT: &[&str] = &[
    "script", "style", "iframe", "frame", "frameset", "noframes", "object", "embed", "applet",
    "svg", "math", "noscript", "noembed", "template", "textarea", "select", "title", "xmp",
];

fn is_dropped(element: ElementRef<'_>) -> bool {
    DROPPED_WITH_CONTENT.contains(&element.value().name())
}

fn child_elements<'a>(element: ElementRef<'a>) -> impl Iterator<Item = ElementRef<'a>> {
    element.children().filter_map(ElementRef::wrap)
}

/// Tables not inside another table, in document order. Iterative, so deeply nested hostile
/// markup cannot exhaust the stack.
fn outermost_tables(root: ElementRef<'_>) -> Vec<ElementRef<'_>> {
    let mut tables = Vec::new();
    let mut stack = vec![root];
    while let Some(element) = stack.pop() {
        if element.value().name() == "table" {
            tables.push(element);
        } else if !is_dropped(element) {
            let children: Vec<_> = child_elements(element).collect();
            stack.extend(children.into_iter().rev());
        }
    }
    tables
}

/// The rows of the table itself (not of a table nested in a cell), in source order.
fn read_table(page: usize, table: ElementRef<'_>) -> Table {
    let mut rows = Vec::new();
    for child in child_elements(table) {
        match child.value().name() {
            "tr" => rows.push(read_row(child)),
            "thead" | "tbody" | "tfoot" => rows.extend(
                child_elements(child)
                    .filter(|row| row.value().name() == "tr")
                    .map(read_row),
            ),
            _ => {}
        }
    }
    Table { page, rows }
}

fn read_row(row: ElementRef<'_>) -> Vec<Cell> {
    child_elements(row)
        .filter_map(|cell| {
            let name = cell.value().name();
            matches!(name, "td" | "th").then(|| Cell {
                text: text_content(cell),
                header: name == "th",
                row_span: span(cell.value().attr("rowspan")),
                col_span: span(cell.value().attr("colspan")),
            })
        })
        .collect()
}

/// A `rowspan`/`colspan` as HTML reads it (leading digits), from 1 to [`MAX_SPAN`]: missing,
/// unreadable or zero is 1.
fn span(value: Option<&str>) -> usize {
    let Some(value) = value.map(str::trim) else {
        return 1;
    };
    let digits = value.len() - value.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    // More digits than fit are certainly above the bound.
    value[..digits]
        .parse::<usize>()
        .unwrap_or(if digits > 0 { MAX_SPAN } else { 1 })
        .clamp(1, MAX_SPAN)
}

/// The text under `element`, with line breaks and element boundaries read as spaces, then every
/// run of whitespace collapsed to one space.
fn text_content(element: ElementRef<'_>) -> String {
    let mut text = String::new();
    let mut stack = vec![*element];
    while let Some(node) = stack.pop() {
        match node.value() {
            Node::Text(contents) => text.push_str(contents),
            Node::Element(_) if ElementRef::wrap(node).is_some_and(|e| !is_dropped(e)) => {
                text.push(' ');
                let children: Vec<_> = node.children().collect();
                stack.extend(children.into_iter().rev());
            }
            _ => {}
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only_table(markdown: &str) -> Table {
        let mut tables = page_tables(3, markdown);
        assert_eq!(tables.len(), 1, "{markdown}");
        tables.remove(0)
    }

    /// The grid as text, with `<` for a position covered by a span and `.` for an empty one.
    fn grid_text(table: &Table) -> Vec<Vec<String>> {
        table
            .grid()
            .iter()
            .map(|row| {
                row.iter()
                    .map(|pos| match pos {
                        Some((cell, true)) => cell.text.clone(),
                        Some((_, false)) => "<".to_owned(),
                        None => ".".to_owned(),
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn spans_are_laid_out_as_html_does() {
        // Row 2's cells flow around the rowspan of "a"; "d" spans two columns.
        let table = only_table(
            "<table><tr><td rowspan=\"2\">a</td><td>b</td><td>c</td></tr>\
             <tr><td>x</td><td>y</td></tr>\
             <tr><td colspan=\"2\">d</td><td>e</td></tr></table>",
        );
        assert_eq!(table.columns(), 3);
        assert_eq!(
            grid_text(&table),
            [["a", "b", "c"], ["<", "x", "y"], ["d", "<", "e"]]
        );
        let grid = table.grid();
        let spanned = grid[1][0].unwrap().0;
        assert_eq!((spanned.text.as_str(), spanned.row_span), ("a", 2));
        assert_eq!(table.page, 3);
    }

    #[test]
    fn th_cells_are_headers() {
        let table = only_table(
            "<table><thead><tr><th colspan=\"2\">Size</th></tr></thead>\
             <tbody><tr><td>1</td><td>2</td></tr></tbody></table>",
        );
        let headers: Vec<Vec<bool>> = table
            .rows
            .iter()
            .map(|row| row.iter().map(|c| c.header).collect())
            .collect();
        assert_eq!(headers, [vec![true], vec![false, false]]);
        assert_eq!(grid_text(&table), [["Size", "<"], ["1", "2"]]);
    }

    #[test]
    fn markup_inside_cells_is_reduced_to_its_text() {
        let table = only_table(
            "<table><tr><td><b>Bold</b> and <i>it</i>alic<br/>next   line</td>\
             <td>a &amp; b <span>\\(x^2 + y_1\\)</span></td>\
             <td>kept<script>alert(1)</script><style>p{}</style></td></tr></table>",
        );
        let texts: Vec<&str> = table.rows[0].iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            ["Bold and italic next line", "a & b \\(x^2 + y_1\\)", "kept"]
        );
    }

    #[test]
    fn pipe_tables_are_read_with_their_header_row() {
        let table = only_table(
            "| Item | Price |\n|:-----|------:|\n| **Pump** | $1,200 |\n| Math \\(a_1 * b_2\\) | 3 \\| 4 |\n",
        );
        let rows: Vec<Vec<(&str, bool)>> = table
            .rows
            .iter()
            .map(|row| row.iter().map(|c| (c.text.as_str(), c.header)).collect())
            .collect();
        assert_eq!(
            rows,
            [
                vec![("Item", true), ("Price", true)],
                vec![("Pump", false), ("$1,200", false)],
                vec![("Math \\(a_1 * b_2\\)", false), ("3 | 4", false)],
            ]
        );
    }

    #[test]
    fn tables_are_found_among_other_text_in_order() {
        let markdown = "# Results\n\nSome text before.\n\n\
                        <table><tr><td>html</td></tr></table>\n\n\
                        Between, with a pipe | that is no table.\n\n\
                        | md |\n|----|\n| 1 |\n\n\
                        ```\n<table><tr><td>in code</td></tr></table>\n```\n\n\
                        Text <table><tr><td>inline</td></tr></table> after.";
        let tables = page_tables(0, markdown);
        let first_cells: Vec<&str> = tables.iter().map(|t| t.rows[0][0].text.as_str()).collect();
        assert_eq!(first_cells, ["html", "md", "inline"]);
        assert!(page_tables(0, "No table here, only text.").is_empty());
        assert!(page_tables(0, "<table></table>").is_empty());
    }

    #[test]
    fn hostile_spans_are_bounded() {
        let huge = "<table><tr><td rowspan=\"99999999999999999999999\" \
                    colspan=\"4000000000\">x</td><td>y</td></tr><tr><td>z</td></tr></table>";
        let table = only_table(huge);
        assert_eq!(table.rows[0][0].row_span, MAX_SPAN);
        assert_eq!(table.rows[0][0].col_span, MAX_SPAN);
        // Only the table's two rows exist; the span stops with the table.
        let grid = table.grid();
        assert_eq!((grid.len(), table.columns()), (2, MAX_SPAN + 1));
        assert_eq!(
            grid[1][MAX_SPAN].map(|(c, top)| (c.text.as_str(), top)),
            Some(("z", true))
        );

        // Built directly, spans past the bounds are clamped, and a tall table of wide rows is
        // cut at MAX_GRID_CELLS instead of allocating rows × columns.
        let wide = Cell {
            text: "w".into(),
            header: false,
            row_span: usize::MAX,
            col_span: usize::MAX,
        };
        let table = Table {
            page: 0,
            rows: vec![vec![wide.clone(), wide]; 5_000],
        };
        let grid = table.grid();
        assert_eq!(table.columns(), MAX_COLUMNS);
        assert!(
            grid.len() * MAX_COLUMNS <= MAX_GRID_CELLS,
            "{} rows",
            grid.len()
        );
        assert!(!grid.is_empty());
    }

    #[test]
    fn unreadable_and_zero_spans_are_one() {
        let table = only_table(
            "<table><tr><td colspan=\"0\">a</td><td colspan=\"two\">b</td>\
             <td rowspan=\" 2x\">c</td></tr></table>",
        );
        let spans: Vec<(usize, usize)> = table.rows[0]
            .iter()
            .map(|c| (c.row_span, c.col_span))
            .collect();
        assert_eq!(spans, [(1, 1), (1, 1), (2, 1)]);
        // The rowspan of 2 ends with the table's single row.
        assert_eq!(grid_text(&table), [["a", "b", "c"]]);
    }

    #[test]
    fn short_rows_leave_empty_positions() {
        let table = only_table("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>");
        assert_eq!(grid_text(&table), [["a", "b"], ["c", "."]]);
    }

    #[test]
    fn tables_are_numbered_within_their_page() {
        let table = |page| Table {
            page,
            rows: Vec::new(),
        };
        let tables = [table(0), table(0), table(2), table(5), table(5), table(5)];
        assert_eq!(numbers_within_pages(&tables), [1, 2, 1, 1, 2, 3]);
    }
}
