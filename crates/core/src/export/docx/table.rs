//! The model's HTML tables as Word tables: `colspan` becomes `gridSpan`, `rowspan` a vertical
//! merge (`vMerge`), so the table keeps its shape in Word.

use docx_rs::{Paragraph, TableCell, TableRow, VMergeType, WidthType};

use super::text::{runs, RunStyle};
use super::TEXT_WIDTH_TWIPS;
use crate::export::math::protect_math;
use crate::export::tables::{Cell, Table};

type Grid<'t> = Vec<Vec<Option<(&'t Cell, bool)>>>;

/// `table` as a Word table as wide as the text area, its columns of equal width.
pub(super) fn word_table(table: &Table) -> docx_rs::Table {
    let grid = table.grid();
    let columns = table.columns().max(1);
    let column_width = (TEXT_WIDTH_TWIPS as usize / columns).max(1);
    let rows = (0..grid.len())
        .map(|r| TableRow::new(row_cells(&grid, r, column_width)))
        .collect();
    docx_rs::Table::new(rows)
        .set_grid(vec![column_width; columns])
        .width(column_width * columns, WidthType::Dxa)
}

/// The Word cells of grid row `r`: one per cell starting or continuing in it, spanning as many
/// grid columns as the cell covers; an empty one where no cell covers a position.
fn row_cells(grid: &Grid<'_>, r: usize, column_width: usize) -> Vec<TableCell> {
    let row = &grid[r];
    let mut cells = Vec::new();
    let mut c = 0;
    while c < row.len() {
        let Some((cell, top_left)) = row[c] else {
            cells.push(TableCell::new().add_paragraph(Paragraph::new()));
            c += 1;
            continue;
        };
        let span = row[c..]
            .iter()
            .take_while(|pos| covered_by(**pos, cell))
            .count();
        let mut word_cell = if covered_by(above(grid, r, c), cell) {
            TableCell::new()
                .add_paragraph(Paragraph::new())
                .vertical_merge(VMergeType::Continue)
        } else {
            let word_cell = TableCell::new().add_paragraph(cell_paragraph(cell, top_left));
            if covered_by(below(grid, r, c), cell) {
                word_cell.vertical_merge(VMergeType::Restart)
            } else {
                word_cell
            }
        };
        if span > 1 {
            word_cell = word_cell.grid_span(span);
        }
        cells.push(word_cell.width(column_width * span, WidthType::Dxa));
        c += span;
    }
    cells
}

/// The cell's text, bold in a header cell. Only where the cell starts: a position that a
/// malformed span took over from another cell stays empty rather than repeat the text.
fn cell_paragraph(cell: &Cell, top_left: bool) -> Paragraph {
    if !top_left {
        return Paragraph::new();
    }
    let math = protect_math(&cell.text);
    let style = RunStyle {
        bold: cell.header,
        ..RunStyle::default()
    };
    runs(&math.text, &math, style)
        .into_iter()
        .fold(Paragraph::new(), Paragraph::add_run)
}

fn covered_by(position: Option<(&Cell, bool)>, cell: &Cell) -> bool {
    position.is_some_and(|(other, _)| std::ptr::eq(other, cell))
}

fn above<'t>(grid: &Grid<'t>, r: usize, c: usize) -> Option<(&'t Cell, bool)> {
    let previous = r.checked_sub(1)?;
    grid[previous].get(c).copied().flatten()
}

fn below<'t>(grid: &Grid<'t>, r: usize, c: usize) -> Option<(&'t Cell, bool)> {
    grid.get(r + 1)?.get(c).copied().flatten()
}
