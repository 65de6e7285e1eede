//! `OUT/<stem>.xlsx`: every table of the document in one workbook, one worksheet per table, named
//! `p{P} t{N}` (1-based page, 1-based table within the page).
//!
//! Spans become merged cells, header cells are bold, and cells that read as numbers are written
//! as numbers, with a format that shows them as written (grouping, decimals, percent, currency,
//! parentheses); anything else, leading zeros included, stays text.

use std::path::Path;

use rust_xlsxwriter::{Format, Workbook, Worksheet, XlsxError};

use super::atomic::{ensure_dir, write_atomically};
use super::tables::{document_tables, numbers_within_pages, Cell, Table};
use super::{output_file, pages_in_order, DocumentExport, ExportError, ExportSummary};

/// Excel's limits: characters in a sheet name, and UTF-16 code units in a cell.
const MAX_SHEET_NAME_CHARS: usize = 31;
const MAX_CELL_UTF16: usize = 32_767;

/// Excel keeps 15 significant digits; longer digit strings (account numbers, IDs) stay text so
/// they are not silently rounded.
const MAX_SIGNIFICANT_DIGITS: usize = 15;

/// Currency symbols read before a number.
const CURRENCY_SYMBOLS: &[char] = &[
    '$', '€', '£', '¥', '₹', '₩', '₽', '₺', '₪', '₫', '₴', '₦', '฿',
];

/// Writes `OUT/<stem>.xlsx`, creating `OUT` if needed. A document without tables writes no
/// workbook (the summary lists no files): an empty workbook is of no use.
pub fn write_xlsx(
    export: &DocumentExport<'_>,
    out_dir: &Path,
    stem: &str,
) -> Result<ExportSummary, ExportError> {
    let path = output_file(out_dir, stem, "xlsx")?;
    pages_in_order(export)?;
    let tables = document_tables(export);
    if tables.is_empty() {
        tracing::info!(path = %path.display(), "no tables: no workbook written");
        return Ok(ExportSummary::default());
    }
    let bytes = workbook_bytes(&tables).map_err(|source| ExportError::Workbook { source })?;
    ensure_dir(out_dir)?;
    write_atomically(&path, &bytes)?;
    tracing::info!(path = %path.display(), tables = tables.len(), "wrote XLSX tables");
    Ok(ExportSummary {
        files: vec![path],
        figures: 0,
    })
}

fn workbook_bytes(tables: &[Table]) -> Result<Vec<u8>, XlsxError> {
    let mut workbook = Workbook::new();
    for (i, (table, n)) in tables.iter().zip(numbers_within_pages(tables)).enumerate() {
        let sheet = workbook.add_worksheet();
        sheet.set_name(sheet_name(table.page, n, i))?;
        write_table(sheet, table)?;
        sheet.autofit();
    }
    workbook.save_to_buffer()
}

/// `p{P} t{N}`; should that ever pass Excel's 31 characters, `t{k}` with `k` the sheet's 1-based
/// place in the workbook, which is always short and unique.
fn sheet_name(page: usize, n: usize, index: usize) -> String {
    let name = format!("p{} t{n}", page + 1);
    if name.chars().count() <= MAX_SHEET_NAME_CHARS {
        name
    } else {
        format!("t{}", index + 1)
    }
}

fn write_table(sheet: &mut Worksheet, table: &Table) -> Result<(), XlsxError> {
    let grid = table.grid();
    for (row, positions) in grid.iter().enumerate() {
        for (column, position) in positions.iter().enumerate() {
            let Some((cell, true)) = position else {
                continue;
            };
            let (first_row, first_col) = excel_position(row, column)?;
            let value = CellValue::of(cell);
            let format = value.format(cell.header);
            let (rows, columns) = merged_extent(&grid, row, column);
            if rows > 1 || columns > 1 {
                let (last_row, last_col) = excel_position(row + rows - 1, column + columns - 1)?;
                sheet.merge_range(first_row, first_col, last_row, last_col, "", &format)?;
            }
            match value {
                CellValue::Number { value, .. } => {
                    sheet.write_number_with_format(first_row, first_col, value, &format)?
                }
                CellValue::Text(text) => {
                    sheet.write_string_with_format(first_row, first_col, text, &format)?
                }
            };
        }
    }
    Ok(())
}

/// Rows and columns of the rectangle, from the top-left position `(row, column)`, that its cell
/// alone covers. Where malformed spans overlap, a cell keeps only positions it owns, so merged
/// ranges never overlap (Excel refuses that).
fn merged_extent(grid: &[Vec<Option<(&Cell, bool)>>], row: usize, column: usize) -> (usize, usize) {
    let owner = grid[row][column].map(|(cell, _)| cell);
    let owned = |r: usize, c: usize| {
        grid.get(r)
            .and_then(|positions| positions.get(c).copied().flatten())
            .is_some_and(|(cell, top_left)| {
                !top_left && owner.is_some_and(|o| std::ptr::eq(o, cell))
            })
    };
    let columns = 1 + (column + 1..).take_while(|&c| owned(row, c)).count();
    let rows = 1
        + (row + 1..)
            .take_while(|&r| (column..column + columns).all(|c| owned(r, c)))
            .count();
    (rows, columns)
}

fn excel_position(row: usize, column: usize) -> Result<(u32, u16), XlsxError> {
    match (u32::try_from(row), u16::try_from(column)) {
        (Ok(row), Ok(column)) => Ok((row, column)),
        _ => Err(XlsxError::RowColumnLimitError),
    }
}

/// What a cell is written as.
#[derive(Debug, Clone, PartialEq)]
enum CellValue<'c> {
    /// A number, and the number format that shows it as the table wrote it (`None`: General).
    Number { value: f64, format: Option<String> },
    /// Text, cut to what a cell holds.
    Text(&'c str),
}

impl<'c> CellValue<'c> {
    fn of(cell: &'c Cell) -> CellValue<'c> {
        match parse_number(&cell.text) {
            Some((value, format)) => CellValue::Number { value, format },
            None => CellValue::Text(truncate_utf16(&cell.text, MAX_CELL_UTF16)),
        }
    }

    fn format(&self, header: bool) -> Format {
        let mut format = Format::new();
        if header {
            format = format.set_bold();
        }
        if let CellValue::Number {
            format: Some(number_format),
            ..
        } = self
        {
            format = format.set_num_format(number_format);
        }
        format
    }
}

/// The longest start of `text` of at most `max` UTF-16 code units, as Excel counts a cell's length.
fn truncate_utf16(text: &str, max: usize) -> &str {
    let mut units = 0;
    for (end, c) in text.char_indices() {
        units += c.len_utf16();
        if units > max {
            return &text[..end];
        }
    }
    text
}

/// A cell's text read as a number: `1234.5`, `1,234.5`, `-3`, `+3`, `−3` (the minus sign), `$5`,
/// `-€5`, `12.5%` (0.125), `(42)` (−42). Returns the value and a number format that shows it as
/// written, where General would not. Anything else (`007`, `1/4`, `0,15`, `1e5`, `.5`) is `None`.
pub(super) fn parse_number(text: &str) -> Option<(f64, Option<String>)> {
    let text = text.trim();
    let (in_parentheses, text) = match text.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        Some(inner) => (true, inner.trim()),
        None => (false, text),
    };
    let (percent, text) = match text.strip_suffix('%') {
        Some(rest) => (true, rest.trim_end()),
        None => (false, text),
    };
    let (negative, currency, digits) = sign_and_currency(text)?;
    if (in_parentheses && negative.is_some()) || (percent && currency.is_some()) {
        return None;
    }
    let number = DecimalText::parse(digits)?;
    let mut value: f64 = number.plain().parse().ok()?;
    if negative == Some(true) || in_parentheses {
        value = -value;
    }
    if percent {
        value /= 100.0;
    }
    let format = number_format(&number, percent, currency, in_parentheses);
    value.is_finite().then_some((value, format))
}

/// A leading sign and currency symbol, in either order: whether the sign is a minus (`None`: no
/// sign), the symbol, and the rest.
fn sign_and_currency(text: &str) -> Option<(Option<bool>, Option<char>, &str)> {
    let mut negative = None;
    let mut currency = None;
    let mut rest = text;
    for _ in 0..2 {
        let Some(first) = rest.chars().next() else {
            break;
        };
        if negative.is_none() && matches!(first, '+' | '-' | '\u{2212}') {
            negative = Some(first != '+');
        } else if currency.is_none() && CURRENCY_SYMBOLS.contains(&first) {
            currency = Some(first);
        } else {
            break;
        }
        rest = &rest[first.len_utf8()..];
    }
    Some((negative, currency, rest))
}

/// Digits with optional thousands separators and decimals: `0`, `1234`, `1,234,567`, `12.50`.
struct DecimalText<'t> {
    whole: &'t str,
    decimals: &'t str,
    grouped: bool,
}

impl<'t> DecimalText<'t> {
    fn parse(text: &'t str) -> Option<DecimalText<'t>> {
        let (whole, decimals) = match text.split_once('.') {
            Some((whole, decimals)) => (whole, Some(decimals)),
            None => (text, None),
        };
        let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if decimals.is_some_and(|d| !all_digits(d)) {
            return None;
        }
        let grouped = whole.contains(',');
        let well_formed = if grouped {
            let mut groups = whole.split(',');
            let first = groups.next().unwrap_or_default();
            all_digits(first)
                && first.len() <= 3
                && !first.starts_with('0')
                && groups.all(|g| g.len() == 3 && all_digits(g))
        } else {
            // A leading zero is an identifier (`007`), except `0` itself (`0`, `0.5`).
            all_digits(whole) && (whole == "0" || !whole.starts_with('0'))
        };
        let number = DecimalText {
            whole,
            decimals: decimals.unwrap_or_default(),
            grouped,
        };
        (well_formed && number.significant_digits() <= MAX_SIGNIFICANT_DIGITS).then_some(number)
    }

    fn significant_digits(&self) -> usize {
        let digits: String = self
            .whole
            .chars()
            .chain(self.decimals.chars())
            .filter(char::is_ascii_digit)
            .collect();
        digits.trim_start_matches('0').len()
    }

    /// As Rust parses it: no separators.
    fn plain(&self) -> String {
        let whole = self.whole.replace(',', "");
        if self.decimals.is_empty() {
            whole
        } else {
            format!("{whole}.{}", self.decimals)
        }
    }
}

/// The Excel number format showing the number as written, or `None` where General already does.
fn number_format(
    number: &DecimalText<'_>,
    percent: bool,
    currency: Option<char>,
    in_parentheses: bool,
) -> Option<String> {
    // General drops trailing zeros (`2.50` shows as 2.5).
    let trailing_zero = number.decimals.ends_with('0');
    if !(number.grouped || percent || currency.is_some() || in_parentheses || trailing_zero) {
        return None;
    }
    let mut format = String::from(if number.grouped { "#,##0" } else { "0" });
    if !number.decimals.is_empty() {
        format.push('.');
        format.push_str(&"0".repeat(number.decimals.len()));
    }
    if percent {
        format.push('%');
    }
    if let Some(symbol) = currency {
        format = format!("\"{symbol}\"{format}");
    }
    if in_parentheses {
        format = format!("{format};({format})");
    }
    Some(format)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(text: &str) -> Option<f64> {
        parse_number(text).map(|(value, _)| value)
    }

    fn format(text: &str) -> Option<String> {
        parse_number(text).and_then(|(_, format)| format)
    }

    #[test]
    fn numbers_as_tables_write_them_are_read() {
        assert_eq!(number("0.965"), Some(0.965));
        assert_eq!(number("  42 "), Some(42.0));
        assert_eq!(number("0"), Some(0.0));
        assert_eq!(number("-2"), Some(-2.0));
        assert_eq!(number("+3.5"), Some(3.5));
        assert_eq!(number("\u{2212}7"), Some(-7.0));
        assert_eq!(number("1,234.5"), Some(1234.5));
        assert_eq!(number("1,234,567"), Some(1_234_567.0));
        assert_eq!(number("$1,200.00"), Some(1200.0));
        assert_eq!(number("-€5"), Some(-5.0));
        assert_eq!(number("€-5"), Some(-5.0));
        assert_eq!(number("12.5%"), Some(0.125));
        assert_eq!(number("-3 %"), Some(-0.03));
        assert_eq!(number("(42)"), Some(-42.0));
        assert_eq!(number("($1,000)"), Some(-1000.0));
    }

    #[test]
    fn anything_else_stays_text() {
        for text in [
            "",
            "007",
            "00.5",
            "1/4",
            "0,15",
            "1,23",
            "12,3456",
            ",123",
            "1e5",
            ".5",
            "5.",
            "1.2.3",
            "2 -1",
            "abc",
            "$",
            "-",
            "(-5)",
            "$5%",
            "12%%",
            "1 234",
            "NaN",
            "inf",
            "0x1F",
            "12345678901234567",
        ] {
            assert_eq!(parse_number(text), None, "{text:?}");
        }
    }

    #[test]
    fn formats_show_the_number_as_written() {
        assert_eq!(format("0.965"), None);
        assert_eq!(format("2.50"), Some("0.00".into()));
        assert_eq!(format("1,234.5"), Some("#,##0.0".into()));
        assert_eq!(format("12.5%"), Some("0.0%".into()));
        assert_eq!(format("12%"), Some("0%".into()));
        assert_eq!(format("$1,200.00"), Some("\"$\"#,##0.00".into()));
        assert_eq!(format("(42)"), Some("0;(0)".into()));
    }

    #[test]
    fn sheet_names_fit_excel() {
        assert_eq!(sheet_name(0, 1, 0), "p1 t1");
        assert_eq!(sheet_name(11, 3, 7), "p12 t3");
        let long = sheet_name(usize::MAX - 1, usize::MAX, 41);
        assert_eq!(long, "t42");
    }

    #[test]
    fn overlapping_spans_merge_only_what_each_cell_owns() {
        // "a" spans down into row 2, where "d" spans across it: "d" keeps only its own position.
        let table = &crate::export::tables::page_tables(
            0,
            "<table><tr><td>x</td><td rowspan=\"2\">a</td></tr>\
             <tr><td colspan=\"2\">d</td></tr></table>",
        )[0];
        let grid = table.grid();
        assert_eq!(merged_extent(&grid, 0, 1), (2, 1));
        assert_eq!(merged_extent(&grid, 1, 0), (1, 1));
        assert_eq!(merged_extent(&grid, 0, 0), (1, 1));
    }

    #[test]
    fn long_text_is_cut_to_what_a_cell_holds() {
        let text = "é".repeat(MAX_CELL_UTF16 + 5);
        assert_eq!(
            truncate_utf16(&text, MAX_CELL_UTF16).chars().count(),
            MAX_CELL_UTF16
        );
        // Characters outside the BMP count twice, and are never cut in half.
        let emoji = "😀".repeat(MAX_CELL_UTF16);
        assert_eq!(
            truncate_utf16(&emoji, MAX_CELL_UTF16).chars().count(),
            MAX_CELL_UTF16 / 2
        );
        assert_eq!(truncate_utf16("short", MAX_CELL_UTF16), "short");

        // The workbook accepts the longest cell text.
        let cell = Cell {
            text: emoji,
            header: false,
            row_span: 1,
            col_span: 1,
        };
        let table = Table {
            page: 0,
            rows: vec![vec![cell]],
        };
        assert!(workbook_bytes(&[table]).is_ok());
    }
}
