//! Tables on a page, each read as one block of cells: from its ruling lines where it has them (`grid`),
//! from the alignment of its words where it has none (`aligned`). A cell's words are never a heading or a
//! paragraph of their own.

mod aligned;
mod grid;
mod render;

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
