//! `OUT/<stem>.tables/page{P}-table{N}.csv`: every table of the document as an RFC 4180 CSV file
//! (CRLF line ends, fields quoted where needed), one file per table.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::atomic::{ensure_dir, remove_stale, write_atomically};
use super::tables::{document_tables, numbers_within_pages, Table};
use super::xlsx::parse_number;
use super::{output_file, pages_in_order, DocumentExport, ExportError, ExportSummary};

/// Writes one CSV per table to `OUT/<stem>.tables/`, named by 1-based page and 1-based table
/// within the page. A spanned cell's text is in its top-left position; the positions it also
/// covers are empty. A document without tables writes nothing (the summary lists no files).
/// CSV files a previous export left there that this one no longer has are removed.
pub fn write_csv(
    export: &DocumentExport<'_>,
    out_dir: &Path,
    stem: &str,
) -> Result<ExportSummary, ExportError> {
    let dir = tables_dir(out_dir, stem)?;
    pages_in_order(export)?;
    let tables = document_tables(export);
    let mut summary = ExportSummary::default();
    let mut written = HashSet::new();
    if !tables.is_empty() {
        ensure_dir(&dir)?;
    }
    for (table, n) in tables.iter().zip(numbers_within_pages(&tables)) {
        let name = csv_file_name(table.page, n);
        let path = dir.join(&name);
        write_atomically(&path, &table_csv(table, &path)?)?;
        written.insert(name);
        summary.files.push(path);
    }
    remove_stale(&dir, &written, is_table_file_name);
    if tables.is_empty() {
        tracing::info!(dir = %dir.display(), "no tables to export as CSV");
    } else {
        tracing::info!(dir = %dir.display(), tables = tables.len(), "wrote CSV tables");
    }
    Ok(summary)
}

/// `OUT/<stem>.tables`, refusing stems that are not a plain file name.
pub(super) fn tables_dir(out_dir: &Path, stem: &str) -> Result<PathBuf, ExportError> {
    output_file(out_dir, stem, "tables")
}

/// `page{P}-table{N}.csv`, P the 1-based page.
fn csv_file_name(page: usize, n: usize) -> String {
    format!("page{}-table{n}.csv", page + 1)
}

/// The table's grid as CSV: every record as wide as the grid.
fn table_csv(table: &Table, path: &Path) -> Result<Vec<u8>, ExportError> {
    let error = |source: csv::Error| ExportError::Write {
        path: path.to_path_buf(),
        source: source.into(),
    };
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    for row in table.grid() {
        let record: Vec<Cow<'_, str>> = row
            .iter()
            .map(|position| match position {
                Some((cell, true)) => inert_in_spreadsheets(&cell.text),
                _ => Cow::Borrowed(""),
            })
            .collect();
        writer
            .write_record(record.iter().map(|field| field.as_bytes()))
            .map_err(error)?;
    }
    writer.into_inner().map_err(|e| ExportError::Write {
        path: path.to_path_buf(),
        source: e.into_error(),
    })
}

/// The first characters by which a spreadsheet opening a CSV takes a field for a formula.
const FORMULA_STARTS: &[char] = &['=', '+', '-', '@', '\t', '\r'];

/// A cell a spreadsheet would run as a formula (`=HYPERLINK(…)` in a hostile page's table) is kept as
/// text with a leading apostrophe, as OWASP advises for CSV files; numbers such as `-12.5` stay as they are.
fn inert_in_spreadsheets(text: &str) -> Cow<'_, str> {
    let formula = text.starts_with(FORMULA_STARTS) && parse_number(text).is_none();
    match formula {
        true => Cow::Owned(format!("'{text}")),
        false => Cow::Borrowed(text),
    }
}

/// `page{digits}-table{digits}.csv`.
fn is_table_file_name(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    name.strip_prefix("page")
        .and_then(|rest| rest.strip_suffix(".csv"))
        .and_then(|rest| rest.split_once("-table"))
        .is_some_and(|(page, n)| digits(page) && digits(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::tables::page_tables;

    #[test]
    fn spanned_text_is_in_the_top_left_and_fields_are_quoted_per_rfc_4180() {
        let table = page_tables(
            0,
            "<table><tr><th colspan=\"2\">Name, \"full\"</th></tr>\
             <tr><td rowspan=\"2\">a</td><td>line</td></tr><tr><td>z</td></tr></table>",
        )
        .remove(0);
        let csv = table_csv(&table, Path::new("t.csv")).unwrap();
        assert_eq!(
            String::from_utf8(csv).unwrap(),
            "\"Name, \"\"full\"\"\",\r\na,line\r\n,z\r\n"
        );
    }

    #[test]
    fn cells_a_spreadsheet_would_run_are_kept_as_text() {
        let table = page_tables(
            0,
            "<table><tr><td>=HYPERLINK(\"http://x\")</td><td>@SUM(A1)</td><td>-12.5</td>\
             <td>+3</td><td>- item</td><td>a=b</td></tr></table>",
        )
        .remove(0);
        let csv = table_csv(&table, Path::new("t.csv")).unwrap();
        assert_eq!(
            String::from_utf8(csv).unwrap(),
            "\"'=HYPERLINK(\"\"http://x\"\")\",'@SUM(A1),-12.5,+3,'- item,a=b\r\n"
        );
    }

    #[test]
    fn table_file_names_are_recognised_exactly() {
        assert_eq!(csv_file_name(0, 1), "page1-table1.csv");
        assert!(is_table_file_name("page12-table3.csv"));
        assert!(!is_table_file_name("page-table3.csv"));
        assert!(!is_table_file_name("page1-table3.csv.bak"));
        assert!(!is_table_file_name("notes.csv"));
    }
}
