//! A table written as DeepSeek-OCR-2 writes one: a Markdown table when every cell is one row by one
//! column, an HTML table when a cell spans (Markdown cannot say that).

use super::{Cell, Table};
use crate::export::escape_html;

pub fn table_markup(table: &Table) -> String {
    if table
        .cells
        .iter()
        .all(|c| c.row_span == 1 && c.col_span == 1)
    {
        markdown_table(table)
    } else {
        html_table(table)
    }
}

/// The first row is the header, as Markdown requires one; a row missing a cell gets an empty one.
fn markdown_table(table: &Table) -> String {
    let mut out = String::new();
    for row in 0..table.rows {
        let texts: Vec<String> = (0..table.cols)
            .map(|col| {
                table
                    .cells
                    .iter()
                    .find(|c| c.row == row && c.col == col)
                    .map_or(String::new(), |c| escape_markdown_cell(&c.text))
            })
            .collect();
        out.push_str(&format!("| {} |\n", texts.join(" | ")));
        if row == 0 {
            out.push_str(&format!("|{}\n", " --- |".repeat(table.cols)));
        }
    }
    out.trim_end().to_owned()
}

fn escape_markdown_cell(text: &str) -> String {
    text.replace('\\', "\\\\").replace('|', "\\|")
}

fn html_table(table: &Table) -> String {
    let mut out = String::from("<table>");
    for row in 0..table.rows {
        out.push_str("<tr>");
        for cell in table.cells.iter().filter(|c| c.row == row) {
            out.push_str(&html_cell(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

fn html_cell(cell: &Cell) -> String {
    let mut attributes = String::new();
    if cell.row_span > 1 {
        attributes.push_str(&format!(" rowspan=\"{}\"", cell.row_span));
    }
    if cell.col_span > 1 {
        attributes.push_str(&format!(" colspan=\"{}\"", cell.col_span));
    }
    format!("<td{attributes}>{}</td>", escape_html(&cell.text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepread_pdf::Rect;

    fn cell(row: usize, col: usize, row_span: usize, col_span: usize, text: &str) -> Cell {
        Cell {
            row,
            col,
            row_span,
            col_span,
            text: text.to_owned(),
        }
    }

    fn table(rows: usize, cols: usize, cells: Vec<Cell>) -> Table {
        Table {
            bbox: Rect {
                left: 0.0,
                top: 0.0,
                right: 1.0,
                bottom: 1.0,
            },
            rows,
            cols,
            cells,
        }
    }

    #[test]
    fn a_plain_table_is_markdown_with_its_first_row_as_header() {
        let t = table(
            2,
            2,
            vec![
                cell(0, 0, 1, 1, "Name"),
                cell(0, 1, 1, 1, "a|b"),
                cell(1, 1, 1, 1, "2"),
            ],
        );
        assert_eq!(
            table_markup(&t),
            "| Name | a\\|b |\n| --- | --- |\n|  | 2 |"
        );
    }

    #[test]
    fn a_spanning_cell_makes_it_html() {
        let t = table(
            2,
            2,
            vec![
                cell(0, 0, 1, 2, "TEDs & mAP"),
                cell(1, 0, 1, 1, "0.9"),
                cell(1, 1, 1, 1, "<1"),
            ],
        );
        assert_eq!(
            table_markup(&t),
            "<table><tr><td colspan=\"2\">TEDs &amp; mAP</td></tr><tr><td>0.9</td><td>&lt;1</td></tr></table>"
        );
    }
}
