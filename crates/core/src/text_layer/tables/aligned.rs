//! Tables without a grid of rules: rows of short runs of text whose gaps line up down the rows. Either
//! between two or more rules of the same width (a booktabs table: top, middle and bottom rules), where
//! every line is a row, or anywhere as a run of three or more such rows.

use deepread_pdf::{Rect, Rule, Word};

use super::super::lines::{group_into_lines_between, is_bullet, reads_right_to_left, Line};
use super::columns::{columns_of, drop_lone_columns, row_cells, within_column};
use super::rows::{join_wrapped_rows, loose_runs, rows_between_rules, rows_of, Row};
use super::{cell_text, Cell, Table};

/// Rows of a table without rules: at least this many in a run.
const MIN_LOOSE_ROWS: usize = 3;
/// Runs of text in a table are short: most have at most this many words (body text in two columns has
/// many more).
const SHORT_RUN_WORDS: usize = 4;
const SHORT_RUN_SHARE: f32 = 0.75;
/// Rules of one table share their ends to within this (points).
const SAME_EXTENT_PT: f32 = 4.0;
/// How much of a row must have text in two or more columns, for a run of rows to be a table.
const MULTI_CELL_SHARE: f32 = 0.6;

/// The tables found, and the words left outside them.
pub fn aligned_tables(words: Vec<Word>, rules: &[Rule]) -> (Vec<Table>, Vec<Word>) {
    let mut lines = group_into_lines_between(&words, rules);
    let mut tables = Vec::new();
    for chain in same_width_rules(rules) {
        let mut first = 0;
        while first + 1 < chain.len() {
            // The tallest stretch of the chain that reads as a table: a page's header and footer rules
            // share a width too, and must not swallow a table between them.
            let found = (first + 1..chain.len()).rev().find_map(|last| {
                let region = between(chain[first], chain[last]);
                let inside = lines.iter().filter(|l| line_within(l, &region)).cloned();
                let separators: Vec<f32> = chain[first..=last].iter().map(|r| r.at).collect();
                table_of(&rows_of(inside.collect()), &RULED, &separators)
                    .map(|table| (last, region, table))
            });
            match found {
                Some((last, region, table)) => {
                    lines.retain(|l| !line_within(l, &region));
                    tables.push(table);
                    first = last;
                }
                None => first += 1,
            }
        }
    }
    let mut rest = Vec::new();
    for run in loose_runs(rows_of(lines)) {
        let (found, left_out) = tables_in_run(run);
        tables.extend(found);
        rest.extend(left_out);
    }
    (tables, rest)
}

/// The tables in a run of rows, and the words not in them. Text beside a table (a column of prose level
/// with it, as on a two-page spread or in a two-column paper) makes rows of its own with the table's; it
/// is set aside first, and what is left is split into runs again.
fn tables_in_run(rows: Vec<Row>) -> (Vec<Table>, Vec<Word>) {
    let (rows, beside) = set_aside_prose(rows);
    let mut rest: Vec<Word> = beside.into_iter().flat_map(|l| l.words).collect();
    let mut tables = Vec::new();
    for mut run in loose_runs(rows) {
        let stray = stray_edge_lines(&mut run);
        rest.extend(stray.into_iter().flat_map(|l| l.words));
        match table_of(&run, &LOOSE, &[]) {
            Some(table) => tables.push(table),
            None => rest.extend(run.into_iter().flat_map(|r| r.lines).flat_map(|l| l.words)),
        }
    }
    (tables, rest)
}

/// The rows without the columns of prose at their sides, and those columns' lines.
fn set_aside_prose(mut rows: Vec<Row>) -> (Vec<Row>, Vec<Line>) {
    let mut set_aside: Vec<Line> = Vec::new();
    loop {
        let columns = columns_of(&rows);
        let prose = [0, columns.len().saturating_sub(1)]
            .into_iter()
            .find(|&c| columns.len() >= 2 && column_is_prose(&rows, columns[c]));
        let Some(c) = prose else { break };
        let column = columns[c];
        for row in &mut rows {
            let (beside, kept): (Vec<Line>, Vec<Line>) =
                row.lines.drain(..).partition(|l| within_column(l, column));
            set_aside.extend(beside);
            *row = Row::of(kept);
        }
        rows.retain(|r| !r.lines.is_empty());
    }
    (rows, set_aside)
}

/// A long run of text in the first or last row, in columns whose other runs are short, is the end or
/// start of a paragraph beside or around the table, not a cell.
fn stray_edge_lines(rows: &mut Vec<Row>) -> Vec<Line> {
    if rows.len() < 3 {
        return Vec::new();
    }
    let columns = columns_of(rows);
    let overlaps = |b: &Rect, (left, right): (f32, f32)| b.right > left && b.left < right;
    let last = rows.len() - 1;
    // The inner rows' runs: where they are and whether they are long.
    let inner: Vec<(Rect, bool)> = rows[1..last]
        .iter()
        .flat_map(|r| &r.lines)
        .map(|l| (l.bbox, l.words.len() > SHORT_RUN_WORDS))
        .collect();
    let is_stray = |l: &Line| {
        l.words.len() > SHORT_RUN_WORDS
            && columns.iter().filter(|c| overlaps(&l.bbox, **c)).all(|c| {
                let beside: Vec<bool> = inner
                    .iter()
                    .filter(|(b, _)| overlaps(b, *c))
                    .map(|(_, long)| *long)
                    .collect();
                2 * beside.iter().filter(|long| **long).count() < beside.len()
            })
    };
    let mut stray = Vec::new();
    for edge in [0, last] {
        let (out, kept): (Vec<Line>, Vec<Line>) =
            rows[edge].lines.drain(..).partition(|l| is_stray(l));
        stray.extend(out);
        rows[edge] = Row::of(kept);
    }
    rows.retain(|r| !r.lines.is_empty());
    stray
}

/// Most of the column's runs are long: prose, not cells.
fn column_is_prose(rows: &[Row], column: (f32, f32)) -> bool {
    let lines: Vec<&Line> = rows
        .iter()
        .flat_map(|r| &r.lines)
        .filter(|l| within_column(l, column))
        .collect();
    let long = lines
        .iter()
        .filter(|l| l.words.len() > SHORT_RUN_WORDS)
        .count();
    lines.len() >= 2 && 2 * long >= lines.len()
}

/// How table-like rows must look to be read as one.
struct Evidence {
    min_rows: usize,
    /// Share of runs of text that are short.
    short_share: f32,
    /// Share of rows with text in two columns or more.
    multi_cell_share: f32,
    /// Share of cells that may start like a list item: lists side by side (a slide's text boxes) align
    /// as a table does.
    max_list_share: f32,
}

/// Between rules, the rules say there is a table: the text need only not be running prose.
const RULED: Evidence = Evidence {
    min_rows: 2,
    short_share: 0.5,
    multi_cell_share: 0.4,
    max_list_share: 1.0,
};
const LOOSE: Evidence = Evidence {
    min_rows: MIN_LOOSE_ROWS,
    short_share: SHORT_RUN_SHARE,
    multi_cell_share: MULTI_CELL_SHARE,
    max_list_share: 0.4,
};

/// "• item", "3. item", "b) item".
fn starts_list_item(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("");
    let enumerator = first
        .strip_suffix(['.', ')'])
        .is_some_and(|n| !n.is_empty() && n.len() <= 3 && n.chars().all(|c| c.is_alphanumeric()));
    is_bullet(first) || (enumerator && text.len() > first.len())
}

fn line_within(line: &Line, region: &Rect) -> bool {
    let middle = (line.bbox.top + line.bbox.bottom) / 2.0;
    middle > region.top
        && middle < region.bottom
        && line.bbox.left >= region.left - SAME_EXTENT_PT
        && line.bbox.right <= region.right + SAME_EXTENT_PT
}

/// Horizontal rules of one width, top to bottom: the top, middle and bottom rules of booktabs tables.
fn same_width_rules(rules: &[Rule]) -> Vec<Vec<&Rule>> {
    let mut across: Vec<&Rule> = rules.iter().filter(|r| r.horizontal).collect();
    across.sort_by(|a, b| a.at.total_cmp(&b.at));
    let mut chains: Vec<Vec<&Rule>> = Vec::new();
    for rule in across {
        let same = |chain: &&mut Vec<&Rule>| {
            (chain[0].from - rule.from).abs() <= SAME_EXTENT_PT
                && (chain[0].to - rule.to).abs() <= SAME_EXTENT_PT
        };
        match chains.iter_mut().find(same) {
            Some(chain) => chain.push(rule),
            None => chains.push(vec![rule]),
        }
    }
    chains.retain(|chain| chain.len() >= 2);
    chains
}

fn between(top: &Rule, bottom: &Rule) -> Rect {
    Rect {
        left: top.from,
        top: top.at,
        right: top.to,
        bottom: bottom.at,
    }
}

/// The rows as a table, if their runs of text fall into two or more columns and they look like a table's
/// as `evidence` asks: short runs, rows with text in two columns or more.
fn table_of(rows: &[Row], evidence: &Evidence, separators: &[f32]) -> Option<Table> {
    let lines: Vec<&Line> = rows.iter().flat_map(|r| &r.lines).collect();
    if rows.len() < evidence.min_rows.max(2) || lines.is_empty() {
        return None;
    }
    let short = lines
        .iter()
        .filter(|l| l.words.len() <= SHORT_RUN_WORDS)
        .count();
    if (short as f32) < evidence.short_share * lines.len() as f32 {
        return None;
    }
    let columns = drop_lone_columns(rows, columns_of(rows));
    if columns.len() < 2 {
        return None;
    }
    let rows = &match rows_between_rules(rows, separators) {
        Some(ruled) => ruled,
        None => join_wrapped_rows(rows),
    };
    if rows.len() < evidence.min_rows.max(2) {
        return None;
    }
    let right_to_left =
        reads_right_to_left(rows.iter().flat_map(|r| &r.lines).flat_map(|l| &l.words));
    let cols = columns.len();
    let mut cells = Vec::new();
    let mut multi_cell_rows = 0;
    for (index, row) in rows.iter().enumerate() {
        let row_cells = row_cells(row, &columns);
        multi_cell_rows += usize::from(row_cells.len() >= 2);
        for (col, col_span, words) in row_cells {
            cells.push(Cell {
                row: index,
                col: if right_to_left {
                    cols - col - col_span
                } else {
                    col
                },
                row_span: 1,
                col_span,
                text: cell_text(&words),
            });
        }
    }
    if (multi_cell_rows as f32) < evidence.multi_cell_share * rows.len() as f32 {
        return None;
    }
    let list_items = cells.iter().filter(|c| starts_list_item(&c.text)).count();
    if list_items as f32 > evidence.max_list_share * cells.len() as f32 {
        return None;
    }
    let bbox = rows.iter().map(|r| r.bbox).reduce(|a, b| a.union(&b))?;
    Some(Table::new(bbox, rows.len(), cols, cells))
}

#[cfg(test)]
mod tests {
    use super::super::super::test_words::line;
    use super::*;

    fn rule(at: f32, from: f32, to: f32) -> Rule {
        Rule {
            horizontal: true,
            at,
            from,
            to,
        }
    }

    /// Rows of cells, each cell's text starting at its column's x.
    fn rows(cells: &[&[&str]], xs: &[f32], top: f32, pitch: f32) -> Vec<Word> {
        let mut words = Vec::new();
        for (r, row) in cells.iter().enumerate() {
            for (text, x) in row.iter().zip(xs) {
                words.extend(line(text, *x, top + r as f32 * pitch, 9.0));
            }
        }
        words
    }

    fn texts(table: &Table) -> Vec<Vec<String>> {
        (0..table.rows)
            .map(|r| {
                table
                    .cells
                    .iter()
                    .filter(|c| c.row == r)
                    .map(|c| c.text.clone())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn aligned_short_cells_without_rules_are_a_table_read_row_by_row() {
        let words = rows(
            &[
                &["Model", "Params", "Accuracy"],
                &["Gemma 2", "2B", "12.6%"],
                &["Phi 3.5 mini", "3.8B", "26.0%"],
                &["Llama 3.1", "8B", "23.3%"],
            ],
            &[72.0, 200.0, 300.0],
            100.0,
            14.0,
        );
        let (tables, rest) = aligned_tables(words, &[]);
        assert!(rest.is_empty(), "{rest:?}");
        assert_eq!(
            texts(&tables[0]),
            [
                ["Model", "Params", "Accuracy"],
                ["Gemma 2", "2B", "12.6%"],
                ["Phi 3.5 mini", "3.8B", "26.0%"],
                ["Llama 3.1", "8B", "23.3%"],
            ]
        );
    }

    #[test]
    fn two_columns_of_prose_are_no_table() {
        let mut words = Vec::new();
        for i in 0..6 {
            let y = 100.0 + i as f32 * 12.0;
            words.extend(line(
                "the left column carries on with its running text",
                72.0,
                y,
                9.0,
            ));
            words.extend(line(
                "and so does the right column with its own prose",
                320.0,
                y,
                9.0,
            ));
        }
        let (tables, rest) = aligned_tables(words.clone(), &[]);
        assert!(tables.is_empty());
        assert_eq!(rest.len(), words.len());
    }

    #[test]
    fn lists_side_by_side_are_no_table() {
        let words = rows(
            &[
                &["• apples", "1. first"],
                &["• pears", "2. second"],
                &["• plums", "3. third"],
            ],
            &[72.0, 300.0],
            100.0,
            14.0,
        );
        assert!(aligned_tables(words, &[]).0.is_empty());
    }

    #[test]
    fn between_booktabs_rules_two_rows_and_a_spanning_header_are_a_table() {
        // A header cell over the last two columns, then two rows; top, middle and bottom rules.
        let mut words = line("Method", 72.0, 102.0, 9.0);
        words.extend(line("Scores", 240.0, 102.0, 9.0));
        words.extend(rows(
            &[
                &["", "simple", "complex"],
                &["OTSL", "0.965", "0.934"],
                &["HTML", "0.969", "0.927"],
            ],
            &[72.0, 200.0, 280.0],
            114.0,
            13.0,
        ));
        let rules = [
            rule(100.0, 70.0, 330.0),
            rule(125.0, 70.0, 330.0),
            rule(155.0, 70.0, 330.0),
        ];
        let (tables, rest) = aligned_tables(words, &rules);
        assert!(rest.is_empty(), "{rest:?}");
        let table = &tables[0];
        assert_eq!((table.rows, table.cols), (4, 3));
        let header = table.cells.iter().find(|c| c.text == "Scores").unwrap();
        assert_eq!((header.row, header.col, header.col_span), (0, 1, 2));
        assert_eq!(texts(table)[2], ["OTSL", "0.965", "0.934"]);
    }

    #[test]
    fn a_cells_second_line_set_closer_than_the_rows_joins_its_row() {
        let mut words = rows(
            &[&["Name", "State funded"], &["", "legal aid"]],
            &[72.0, 200.0],
            100.0,
            9.5,
        );
        words.extend(rows(
            &[&["Children", "yes"], &["Women", "no"], &["Migrants", "yes"]],
            &[72.0, 200.0],
            122.0,
            18.0,
        ));
        let (tables, _) = aligned_tables(words, &[]);
        assert_eq!(texts(&tables[0])[0], ["Name", "State funded legal aid"]);
        assert_eq!(tables[0].rows, 4);
    }
}
