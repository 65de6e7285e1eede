//! Tables on a page, each read as one block of cells: from its ruling lines where it has them (`grid`),
//! from the alignment of its words where it has none (`aligned`). A cell's words are never a heading or a
//! paragraph of their own.

mod aligned;
mod columns;
mod grid;
mod render;
mod rows;

use deepread_pdf::{PageSize, Rect, Rule, Word};

use super::lines::{group_into_lines, reads_right_to_left, Line};
use grid::{ruled_grids, Area, Grid};

/// Fewer cells with text than this are boxes around labels (a language badge), not a table.
const MIN_FILLED_CELLS: usize = 3;
/// Cells holding more words than this on average are text boxes laid out with rules, not a table.
const MAX_MEAN_CELL_WORDS: usize = 30;

#[derive(Debug, Clone)]
pub struct Table {
    pub bbox: Rect,
    pub rows: usize,
    pub cols: usize,
    /// Row-major; spanning cells appear once, at their top-left.
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub row: usize,
    pub col: usize,
    pub row_span: usize,
    pub col_span: usize,
    pub text: String,
}

impl Table {
    /// The table in the model's own form: Markdown when no cell spans, HTML when one does.
    pub fn markdown(&self) -> String {
        render::table_markup(self)
    }
}

/// The page's tables, and the words that are not in any.
pub fn find_tables(words: &[Word], rules: &[Rule], page: PageSize) -> (Vec<Table>, Vec<Word>) {
    let mut rest: Vec<Word> = words.to_vec();
    let mut tables = Vec::new();
    for grid in ruled_grids(rules, page) {
        let (inside, outside): (Vec<Word>, Vec<Word>) =
            rest.into_iter().partition(|w| centre_in(w, &grid.bbox));
        rest = outside;
        match fill_grid(&grid, &inside) {
            Some(table) => tables.push(table),
            None => rest.extend(inside),
        }
    }
    let (aligned, rest) = aligned::aligned_tables(rest, rules);
    tables.extend(aligned);
    (tables, rest)
}

fn centre_in(word: &Word, area: &Rect) -> bool {
    let (x, y) = (
        (word.bbox.left + word.bbox.right) / 2.0,
        (word.bbox.top + word.bbox.bottom) / 2.0,
    );
    (area.left..=area.right).contains(&x) && (area.top..=area.bottom).contains(&y)
}

/// The grid's cells with their words, or None when what the rules draw does not read as a table: fewer
/// than two rows or columns with text, or cells full of running text.
fn fill_grid(grid: &Grid, words: &[Word]) -> Option<Table> {
    let cells: Vec<(Area, Vec<Word>)> = grid
        .areas
        .iter()
        .map(|area| {
            let inside = words.iter().filter(|w| centre_in(w, &area.bbox)).cloned();
            (area.clone(), inside.collect())
        })
        .collect();
    let cells = split_unruled_spans(grid, cells);
    let filled: Vec<&(Area, Vec<Word>)> = cells.iter().filter(|(_, w)| !w.is_empty()).collect();
    let word_count: usize = filled.iter().map(|(_, w)| w.len()).sum();
    let rows_with_text = distinct(filled.iter().map(|(a, _)| a.row));
    let cols_with_text = distinct(filled.iter().map(|(a, _)| a.col));
    if rows_with_text < 2
        || cols_with_text < 2
        || filled.len() < MIN_FILLED_CELLS
        || word_count > MAX_MEAN_CELL_WORDS * filled.len()
    {
        return None;
    }
    let right_to_left = reads_right_to_left(words);
    let cells = cells
        .into_iter()
        .map(|(area, words)| Cell {
            row: area.row,
            col: if right_to_left {
                grid.cols - area.col - area.col_span
            } else {
                area.col
            },
            row_span: area.row_span,
            col_span: area.col_span,
            text: cell_text(&words),
        })
        .collect();
    Some(Table::new(grid.bbox, grid.rows, grid.cols, cells))
}

impl Table {
    /// Cells sorted row-major (after right-to-left tables are mirrored), rows and columns with no text
    /// dropped.
    fn new(bbox: Rect, rows: usize, cols: usize, mut cells: Vec<Cell>) -> Table {
        cells.sort_by_key(|c| (c.row, c.col));
        let mut table = Table {
            bbox,
            rows,
            cols,
            cells,
        };
        table.drop_empty_lines();
        table
    }

    /// Spacer rows and columns (no cell with text starts or runs in them) are not the reader's.
    fn drop_empty_lines(&mut self) {
        let used = |index: usize, start: fn(&Cell) -> usize, span: fn(&Cell) -> usize| {
            self.cells
                .iter()
                .any(|c| !c.text.is_empty() && start(c) <= index && index < start(c) + span(c))
        };
        let keep_rows: Vec<bool> = (0..self.rows)
            .map(|r| used(r, |c| c.row, |c| c.row_span))
            .collect();
        let keep_cols: Vec<bool> = (0..self.cols)
            .map(|c| used(c, |c| c.col, |c| c.col_span))
            .collect();
        let remap = |keep: &[bool]| -> Vec<usize> {
            keep.iter()
                .scan(0, |next, &k| {
                    let at = *next;
                    *next += usize::from(k);
                    Some(at)
                })
                .collect()
        };
        let (row_at, col_at) = (remap(&keep_rows), remap(&keep_cols));
        let kept = |keep: &[bool], from: usize, span: usize| {
            keep[from..from + span].iter().filter(|k| **k).count()
        };
        self.cells.retain_mut(|cell| {
            let row_span = kept(&keep_rows, cell.row, cell.row_span);
            let col_span = kept(&keep_cols, cell.col, cell.col_span);
            if row_span == 0 || col_span == 0 {
                return false;
            }
            let first_row = (cell.row..).find(|r| keep_rows[*r]).unwrap_or(cell.row);
            let first_col = (cell.col..).find(|c| keep_cols[*c]).unwrap_or(cell.col);
            cell.row = row_at[first_row];
            cell.col = col_at[first_col];
            cell.row_span = row_span;
            cell.col_span = col_span;
            true
        });
        self.rows = keep_rows.iter().filter(|k| **k).count();
        self.cols = keep_cols.iter().filter(|k| **k).count();
    }
}

/// A cell spanning columns whose lines fall into separate groups of them is a row of cells with no rules
/// drawn between them (a table shaded in bands, its white rows unruled): it is split, each group of lines
/// a cell over the columns it reaches. A header over its columns is one group, and stays whole.
fn split_unruled_spans(grid: &Grid, cells: Vec<(Area, Vec<Word>)>) -> Vec<(Area, Vec<Word>)> {
    let mut out = Vec::with_capacity(cells.len());
    for (area, words) in cells {
        let groups = column_groups(grid, &area, &words);
        if area.col_span == 1 || groups.len() < 2 {
            out.push((area, words));
            continue;
        }
        let mut col = area.col;
        for (first, last, words) in groups {
            // Columns no line reaches stay as empty cells of their own.
            for empty in col..first {
                out.push((sub_area(grid, &area, empty, empty), Vec::new()));
            }
            out.push((sub_area(grid, &area, first, last), words));
            col = last + 1;
        }
        for empty in col..area.col + area.col_span {
            out.push((sub_area(grid, &area, empty, empty), Vec::new()));
        }
    }
    out
}

/// The area's lines grouped by the columns they reach, groups that share a column joined: (first column,
/// last column, words), left to right.
fn column_groups(grid: &Grid, area: &Area, words: &[Word]) -> Vec<(usize, usize, Vec<Word>)> {
    let mut groups: Vec<(usize, usize, Vec<Word>)> = Vec::new();
    for line in group_into_lines(words) {
        let reached: Vec<usize> = (area.col..area.col + area.col_span)
            .filter(|&c| line.bbox.right.min(grid.xs[c + 1]) - line.bbox.left.max(grid.xs[c]) > 1.0)
            .collect();
        let (Some(&first), Some(&last)) = (reached.first(), reached.last()) else {
            continue;
        };
        groups.push((first, last, line.words));
    }
    groups.sort_by_key(|g| g.0);
    let mut joined: Vec<(usize, usize, Vec<Word>)> = Vec::new();
    for (first, last, words) in groups {
        match joined.last_mut() {
            Some(group) if first <= group.1 => {
                group.1 = group.1.max(last);
                group.2.extend(words);
            }
            _ => joined.push((first, last, words)),
        }
    }
    joined
}

fn sub_area(grid: &Grid, area: &Area, first: usize, last: usize) -> Area {
    Area {
        col: first,
        col_span: last + 1 - first,
        bbox: Rect {
            left: grid.xs[first],
            right: grid.xs[last + 1],
            ..area.bbox
        },
        ..area.clone()
    }
}

fn distinct(values: impl Iterator<Item = usize>) -> usize {
    let mut seen: Vec<usize> = values.collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

/// A cell's words as lines, top to bottom, joined by spaces.
pub(crate) fn cell_text(words: &[Word]) -> String {
    let mut lines = group_into_lines(words);
    lines.sort_by(|a, b| {
        a.bbox
            .top
            .total_cmp(&b.bbox.top)
            .then(a.bbox.left.total_cmp(&b.bbox.left))
    });
    let texts: Vec<String> = lines.iter().map(Line::text).collect();
    texts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::super::test_words::line;
    use super::*;

    const PAGE: PageSize = PageSize {
        width_pt: 612.0,
        height_pt: 792.0,
    };

    fn rule(horizontal: bool, at: f32, from: f32, to: f32) -> Rule {
        Rule {
            horizontal,
            at,
            from,
            to,
        }
    }

    fn row_texts(table: &Table, row: usize) -> Vec<(usize, usize, String)> {
        table
            .cells
            .iter()
            .filter(|c| c.row == row && !c.text.is_empty())
            .map(|c| (c.col, c.col_span, c.text.clone()))
            .collect()
    }

    #[test]
    fn a_band_shaded_row_between_unruled_ones_keeps_its_cells_and_a_header_its_span() {
        // A framed table of three columns; only the shaded middle row has its cells' edges drawn. The top
        // row is a header over the last two columns, the bottom row three values with no rules between.
        let mut rules = vec![
            rule(true, 100.0, 50.0, 350.0),
            rule(true, 120.0, 50.0, 350.0),
            rule(true, 140.0, 50.0, 350.0),
            rule(true, 160.0, 50.0, 350.0),
        ];
        // The frame's sides run the whole height; the shaded row's cell edges only its own.
        rules.push(rule(false, 50.0, 100.0, 160.0));
        rules.push(rule(false, 350.0, 100.0, 160.0));
        for x in [150.0, 250.0] {
            rules.push(rule(false, x, 120.0, 140.0));
        }
        let mut words = line("Region", 60.0, 104.0, 9.0);
        words.extend(line("Outlay", 225.0, 104.0, 9.0));
        for (y, texts) in [
            (124.0, ["Goa", "1,200", "3,400"]),
            (144.0, ["Assam", "2,241", "107"]),
        ] {
            for (x, text) in [60.0, 160.0, 260.0].into_iter().zip(texts) {
                words.extend(line(text, x, y, 9.0));
            }
        }
        let (tables, rest) = find_tables(&words, &rules, PAGE);
        assert!(rest.is_empty(), "{rest:?}");
        let table = &tables[0];
        assert_eq!(
            row_texts(table, 2),
            [
                (0, 1, "Assam".to_owned()),
                (1, 1, "2,241".to_owned()),
                (2, 1, "107".to_owned())
            ]
        );
        assert!(
            row_texts(table, 0).contains(&(1, 2, "Outlay".to_owned())),
            "{table:?}"
        );
    }
}
