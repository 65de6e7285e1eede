//! Exporting the tables of real readings as CSV and XLSX, read back with the csv crate and
//! calamine, and checked cell by cell against the recorded model output itself: each recording's
//! `<table>`s are read here with plain string splitting, independently of the export's parser.
//!
//! The Vastera manual (xiongpu1_agent) has no table on any of its 25 recorded pages, so it is the
//! document without tables; the tables come from the other recordings that have their source
//! page: the docling paper page (a header with rowspans and colspans, numbers) and three exercise
//! sheets (thukiy_R-G-: negative numbers, fractions, decimal commas, line breaks in cells).
//!
//! Needs PDFium: set DEEPREAD_PDFIUM to libpdfium.so (or run `make deps`).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use calamine::{open_workbook, Data, Dimensions, Reader, Xlsx};
use common::{grounding_dir, manual_dir, raw_of_stdout_capture, read, read_page};
use deepread_core::export::{write_csv, write_xlsx, DocumentExport, PageExport, PageStatus};
use deepread_pdf::Document;

/// A recorded page with tables: its source document and the model's raw output for it.
struct Recording {
    pdf: PathBuf,
    raw: String,
}

fn exercise(name: &str) -> Recording {
    let dir = grounding_dir()
        .join("with_source/thukiy_R-G-/exercises")
        .join(name);
    Recording {
        pdf: dir.join("input_page.pdf"),
        raw: read(&dir.join("output.md")),
    }
}

fn docling_page() -> Recording {
    let dir = grounding_dir().join("with_source/docling_md_deepseek");
    Recording {
        pdf: dir.join("2305.03393v1-pg9.pdf"),
        raw: read(&dir.join("deepseek_example.output.md")),
    }
}

/// Two tables of a discrete distribution: negative numbers and fractions.
fn distributions_page() -> Recording {
    exercise("Uebungsblatt_CDS_Mathe1_Sto_6_Loesungen_p001")
}

/// Six tables: `<br/>` in cells and decimal commas.
fn joint_distributions_page() -> Recording {
    exercise("Uebungsblatt_CDS_Mathe3_Sto_5_Loesungen_p003")
}

/// A true/false grid of sentences and ○/● marks.
fn true_false_page() -> Recording {
    exercise("Uebungsblatt-CDS-Mathe1_Ana10_Loesungen_p001")
}

fn open(pdf: &Path) -> Document {
    assert!(pdf.is_file(), "missing fixture {}", pdf.display());
    Document::open(pdf, None).unwrap()
}

fn files_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

// ---- The recording's own tables, read by string splitting ----

/// A `<td>`/`<th>` as the recording writes it.
#[derive(Debug)]
struct RecordedCell {
    text: String,
    header: bool,
    rows: usize,
    columns: usize,
}

type RecordedTable = Vec<Vec<RecordedCell>>;

fn recorded_tables(raw: &str) -> Vec<RecordedTable> {
    raw.split("<table>")
        .skip(1)
        .map(|rest| {
            let table = &rest[..rest.find("</table>").expect("closed table")];
            table.split("<tr>").skip(1).map(recorded_row).collect()
        })
        .collect()
}

fn recorded_row(row: &str) -> Vec<RecordedCell> {
    let mut cells = Vec::new();
    let mut rest = row;
    while let Some(start) = [rest.find("<td"), rest.find("<th")]
        .into_iter()
        .flatten()
        .min()
    {
        let header = rest[start..].starts_with("<th");
        let after = &rest[start + 3..];
        let open_end = after.find('>').unwrap();
        let attributes = &after[..open_end];
        let content = &after[open_end + 1..];
        let close = if header { "</th>" } else { "</td>" };
        let end = content.find(close).expect("closed cell");
        cells.push(RecordedCell {
            text: plain_text(&content[..end]),
            header,
            rows: span_attribute(attributes, "rowspan"),
            columns: span_attribute(attributes, "colspan"),
        });
        rest = &content[end + close.len()..];
    }
    cells
}

fn span_attribute(attributes: &str, name: &str) -> usize {
    attributes
        .split_once(&format!("{name}=\""))
        .map_or(1, |(_, value)| {
            value[..value.find('"').unwrap()].parse().unwrap()
        })
}

/// A cell's markup as text: line breaks read as spaces, tags removed, whitespace collapsed.
fn plain_text(html: &str) -> String {
    let mut text = String::new();
    for (i, piece) in html.replace("<br/>", " ").split('<').enumerate() {
        // Every piece after the first starts inside a tag.
        let piece = if i == 0 {
            piece
        } else {
            piece.split_once('>').map_or("", |(_, rest)| rest)
        };
        text.push_str(piece);
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[derive(Debug, Clone, Copy)]
enum Slot<'t> {
    Empty,
    TopLeft(&'t RecordedCell),
    Covered,
}

/// The recorded table laid out: each cell in the first free column of its row, covering its
/// spans (rowspans stop at the last row).
fn recorded_grid(table: &RecordedTable) -> Vec<Vec<Slot<'_>>> {
    let mut grid: Vec<Vec<Slot>> = vec![Vec::new(); table.len()];
    for (r, row) in table.iter().enumerate() {
        let mut c = 0;
        for cell in row {
            while grid[r].get(c).is_some_and(|s| !matches!(s, Slot::Empty)) {
                c += 1;
            }
            let last_row = (r + cell.rows).min(table.len());
            for (rr, covered) in grid.iter_mut().enumerate().take(last_row).skip(r) {
                if covered.len() < c + cell.columns {
                    covered.resize(c + cell.columns, Slot::Empty);
                }
                for (cc, slot) in covered.iter_mut().enumerate().skip(c).take(cell.columns) {
                    *slot = if (rr, cc) == (r, c) {
                        Slot::TopLeft(cell)
                    } else {
                        Slot::Covered
                    };
                }
            }
            c += cell.columns;
        }
    }
    let width = grid.iter().map(Vec::len).max().unwrap_or(0);
    for row in &mut grid {
        row.resize(width, Slot::Empty);
    }
    grid
}

fn recorded_merges(grid: &[Vec<Slot<'_>>]) -> BTreeSet<Dimensions> {
    let mut merges = BTreeSet::new();
    for (r, row) in grid.iter().enumerate() {
        for (c, slot) in row.iter().enumerate() {
            if let Slot::TopLeft(cell) = slot {
                let last_row = (r + cell.rows).min(grid.len()) - 1;
                if cell.rows > 1 || cell.columns > 1 {
                    merges.insert(Dimensions::new(
                        (r as u32, c as u32),
                        (last_row as u32, (c + cell.columns - 1) as u32),
                    ));
                }
            }
        }
    }
    merges
}

/// A plain decimal as the recordings write numbers: an optional minus, digits without a leading
/// zero (except `0` itself), optional decimals.
fn recorded_number(text: &str) -> Option<f64> {
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    let (whole, decimals) = unsigned.split_once('.').unwrap_or((unsigned, "0"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let plain = digits(whole) && digits(decimals) && (whole == "0" || !whole.starts_with('0'));
    plain.then(|| text.parse().unwrap())
}

// ---- Reading the exports back ----

fn read_csv(path: &Path) -> Vec<Vec<String>> {
    let bytes = std::fs::read(path).unwrap();
    // RFC 4180: every record ends with CRLF.
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.ends_with("\r\n"), "{}", path.display());
    assert_eq!(
        text.matches('\n').count(),
        text.matches("\r\n").count(),
        "{}: a record ends without CR",
        path.display()
    );
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(bytes.as_slice())
        .records()
        .map(|record| record.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

/// What the exports were checked against, to make sure the fixtures exercise each feature.
#[derive(Debug, Default)]
struct Seen {
    tables: usize,
    numbers: usize,
    texts: usize,
    headers: usize,
    merges: usize,
}

/// Exports `recording` as CSV and XLSX and checks every cell of every table against the
/// recording's own `<td>`s.
fn export_and_check(recording: &Recording, page_index: usize) -> Seen {
    let document = open(&recording.pdf);
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "tables".into(),
        pages: vec![read_page(page_index, &recording.raw)],
    };
    let csv_summary = write_csv(&export, out.path(), "doc").unwrap();
    let xlsx_summary = write_xlsx(&export, out.path(), "doc").unwrap();

    let recorded = recorded_tables(&recording.raw);
    assert!(!recorded.is_empty());
    let page = page_index + 1;
    let csv_names: Vec<String> = (1..=recorded.len())
        .map(|n| format!("page{page}-table{n}.csv"))
        .collect();
    let tables_dir = out.path().join("doc.tables");
    assert_eq!(
        files_in(&tables_dir),
        csv_names.iter().cloned().collect::<BTreeSet<_>>()
    );
    let csv_paths: Vec<PathBuf> = csv_names.iter().map(|n| tables_dir.join(n)).collect();
    assert_eq!(csv_summary.files, csv_paths);
    let xlsx_path = out.path().join("doc.xlsx");
    assert_eq!(xlsx_summary.files, vec![xlsx_path.clone()]);
    // The exports and nothing else: no temporary file left behind.
    assert_eq!(
        files_in(out.path()),
        BTreeSet::from(["doc.tables".to_owned(), "doc.xlsx".to_owned()])
    );

    let mut workbook: Xlsx<_> = open_workbook(&xlsx_path).unwrap();
    let sheet_names: Vec<String> = (1..=recorded.len())
        .map(|n| format!("p{page} t{n}"))
        .collect();
    assert_eq!(workbook.sheet_names(), sheet_names);

    let mut seen = Seen {
        tables: recorded.len(),
        ..Seen::default()
    };
    for ((table, csv_path), sheet) in recorded.iter().zip(&csv_paths).zip(&sheet_names) {
        let grid = recorded_grid(table);
        let expected_csv: Vec<Vec<String>> = grid
            .iter()
            .map(|row| {
                row.iter()
                    .map(|slot| match slot {
                        Slot::TopLeft(cell) => cell.text.clone(),
                        _ => String::new(),
                    })
                    .collect()
            })
            .collect();
        assert_eq!(read_csv(csv_path), expected_csv, "{}", csv_path.display());

        let values = workbook.worksheet_range(sheet).unwrap();
        let styles = workbook.worksheet_style(sheet).unwrap();
        if let Some((last_row, last_col)) = values.end() {
            assert!(
                (last_row as usize) < grid.len() && (last_col as usize) < grid[0].len(),
                "{sheet}: a value outside the table"
            );
        }
        for (r, row) in grid.iter().enumerate() {
            for (c, slot) in row.iter().enumerate() {
                let position = (r as u32, c as u32);
                let got = values.get_value(position).cloned().unwrap_or(Data::Empty);
                let want = match slot {
                    Slot::TopLeft(cell) if cell.text.is_empty() => Data::Empty,
                    Slot::TopLeft(cell) => match recorded_number(&cell.text) {
                        Some(number) => {
                            seen.numbers += 1;
                            Data::Float(number)
                        }
                        None => {
                            seen.texts += 1;
                            Data::String(cell.text.clone())
                        }
                    },
                    Slot::Covered | Slot::Empty => Data::Empty,
                };
                assert_eq!(got, want, "{sheet} at {position:?}");
                if let Slot::TopLeft(cell) = slot {
                    let bold = styles
                        .get(position)
                        .and_then(|style| style.font.as_ref())
                        .is_some_and(|font| font.is_bold());
                    assert_eq!(bold, cell.header, "{sheet} at {position:?}: bold");
                    seen.headers += usize::from(cell.header);
                }
            }
        }
        let merges: BTreeSet<Dimensions> = workbook
            .merge_cells_by_sheet_name(sheet)
            .unwrap()
            .into_iter()
            .collect();
        let expected_merges = recorded_merges(&grid);
        seen.merges += expected_merges.len();
        assert_eq!(merges, expected_merges, "{sheet}: merged ranges");
    }
    seen
}

#[test]
fn a_table_with_spans_keeps_its_cells_numbers_headers_and_merges() {
    let seen = export_and_check(&docling_page(), 0);
    assert_eq!(seen.tables, 1);
    // The header's five rowspans and one colspan, and the body's eight rowspans; nine `th`s; in
    // each pair of body rows 7 + 5 numbers and two `OTSL`/`HTML`.
    assert_eq!(seen.merges, 14, "{seen:?}");
    assert_eq!(seen.headers, 9, "{seen:?}");
    assert_eq!((seen.numbers, seen.texts), (48, 9 + 8), "{seen:?}");
}

#[test]
fn several_tables_on_a_page_are_numbered_in_order() {
    let seen = export_and_check(&joint_distributions_page(), 0);
    assert_eq!(seen.tables, 6);
    let seen = export_and_check(&distributions_page(), 0);
    assert_eq!(seen.tables, 2);
    // `-2`, `1`, …: numbers; `xi`, `f(xi)`, `1/4`, …: text.
    assert_eq!((seen.numbers, seen.texts), (4 + 3, 6 + 5), "{seen:?}");
}

#[test]
fn a_table_of_sentences_stays_text() {
    let seen = export_and_check(&true_false_page(), 0);
    assert_eq!((seen.tables, seen.numbers, seen.merges), (1, 0, 0));
    assert_eq!(seen.texts, 18);
}

#[test]
fn broken_markup_is_read_as_a_browser_reads_it() {
    // Sixteen Gauss elimination steps, several with a `<td>` opened inside another, stray
    // `</td>`s, cells outside any `<tr>` and text between cells.
    let recording = exercise("Uebungsblatt_CDS_Mathe1_LA4_Loesungen_p015");
    assert_eq!(recording.raw.matches("<table>").count(), 16);
    let document = open(&recording.pdf);
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "tables".into(),
        pages: vec![read_page(0, &recording.raw)],
    };
    assert_eq!(
        write_csv(&export, out.path(), "doc").unwrap().files.len(),
        16
    );
    write_xlsx(&export, out.path(), "doc").unwrap();
    let workbook: Xlsx<_> = open_workbook(out.path().join("doc.xlsx")).unwrap();
    assert_eq!(workbook.sheet_names().len(), 16);

    let table = |n: usize| read_csv(&out.path().join(format!("doc.tables/page1-table{n}.csv")));
    // `<td>0<td>1</td></td>`: a `<td>` start tag ends the open cell; the stray `</td>` is ignored.
    // The table's widest row (its second) has six cells.
    assert_eq!(table(3)[0], ["1", "2 -1", "0", "0", "1", ""]);
    // `</tr><td></td>…</table>`: cells outside a row get a row of their own.
    let fifth = table(5);
    assert_eq!(fifth.len(), 6);
    assert_eq!(fifth[5], ["", "", "", "", ""]);
    // `<td>0<td>0</td>1</td>`: text between cells is moved out of the table (foster parenting).
    assert_eq!(table(10)[0], ["1", "2 -1", "0", "0"]);
}

#[test]
fn tables_are_named_by_their_page_in_the_document() {
    // Read as the third page of a document: the files and sheets say page 3.
    let recording = distributions_page();
    let document = open(&manual_dir().join("source.pdf"));
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "tables".into(),
        pages: vec![read_page(2, &recording.raw)],
    };
    write_csv(&export, out.path(), "doc").unwrap();
    write_xlsx(&export, out.path(), "doc").unwrap();
    assert_eq!(
        files_in(&out.path().join("doc.tables")),
        BTreeSet::from(["page3-table1.csv".into(), "page3-table2.csv".into()])
    );
    let workbook: Xlsx<_> = open_workbook(out.path().join("doc.xlsx")).unwrap();
    assert_eq!(workbook.sheet_names(), ["p3 t1", "p3 t2"]);
}

#[test]
fn a_document_without_tables_writes_no_files() {
    let document = open(&manual_dir().join("source.pdf"));
    let pages: Vec<PageExport> = (1..=document.page_count())
        .map(|number| {
            let capture = read(&manual_dir().join(format!("page{number:03}.stdout.md")));
            let raw = raw_of_stdout_capture(&capture);
            assert!(!raw.contains("<table"), "page {number} has a table");
            read_page(number - 1, &raw)
        })
        .collect();
    assert_eq!(pages.len(), 25);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("exports");
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "Vastera manual".into(),
        pages,
    };
    let csv = write_csv(&export, &target, "manual").unwrap();
    let xlsx = write_xlsx(&export, &target, "manual").unwrap();
    assert!(csv.files.is_empty() && xlsx.files.is_empty());
    assert!(!target.exists(), "nothing is written, not even the folder");
}

#[test]
fn re_export_removes_tables_that_are_gone_and_keeps_other_files() {
    let out = tempfile::tempdir().unwrap();
    let export_page = |recording: &Recording| {
        let document = open(&recording.pdf);
        let export = DocumentExport {
            section: None,
            document: &document,
            title: "tables".into(),
            pages: vec![read_page(0, &recording.raw)],
        };
        write_csv(&export, out.path(), "doc").unwrap()
    };
    assert_eq!(export_page(&joint_distributions_page()).files.len(), 6);
    let dir = out.path().join("doc.tables");
    std::fs::write(dir.join("notes.csv"), "mine").unwrap();
    assert_eq!(export_page(&distributions_page()).files.len(), 2);
    assert_eq!(
        files_in(&dir),
        BTreeSet::from([
            "notes.csv".into(),
            "page1-table1.csv".into(),
            "page1-table2.csv".into()
        ])
    );
}

#[test]
fn numbers_as_written_come_back_as_numbers_with_their_format() {
    // A pipe table, as the text layer writes one, in the manual's fourth page.
    let markdown = "| Item | Amount | Share | Code |\n|---|---:|---:|---|\n\
                    | Pump | 1,234.5 | 12.5% | 007 |\n\
                    | Refund | (42) | -3% | $5 |\n";
    let document = open(&manual_dir().join("source.pdf"));
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "numbers".into(),
        pages: vec![PageExport {
            index: 3,
            status: PageStatus::Read,
            blocks: Vec::new(),
            markdown: markdown.into(),
            stats: None,
        }],
    };
    write_xlsx(&export, out.path(), "numbers").unwrap();
    let mut workbook: Xlsx<_> = open_workbook(out.path().join("numbers.xlsx")).unwrap();
    assert_eq!(workbook.sheet_names(), ["p4 t1"]);
    let values = workbook.worksheet_range("p4 t1").unwrap();
    let styles = workbook.worksheet_style("p4 t1").unwrap();
    let value = |r: u32, c: u32| values.get_value((r, c)).cloned();
    let format = |r: u32, c: u32| {
        styles
            .get((r, c))
            .and_then(|s| s.number_format.as_ref())
            .map(|f| f.format_code.clone())
    };
    assert_eq!(value(0, 1), Some(Data::String("Amount".into())));
    assert_eq!(value(1, 1), Some(Data::Float(1234.5)));
    assert_eq!(value(1, 2), Some(Data::Float(0.125)));
    assert_eq!(value(1, 3), Some(Data::String("007".into())));
    assert_eq!(value(2, 1), Some(Data::Float(-42.0)));
    assert_eq!(value(2, 2), Some(Data::Float(-0.03)));
    assert_eq!(value(2, 3), Some(Data::Float(5.0)));
    assert!(
        format(1, 1).is_some_and(|f| f.contains("#,##0")),
        "{:?}",
        format(1, 1)
    );
    assert!(
        format(1, 2).is_some_and(|f| f.ends_with('%')),
        "{:?}",
        format(1, 2)
    );
    assert!(
        format(2, 1).is_some_and(|f| f.contains('(')),
        "{:?}",
        format(2, 1)
    );
    assert!(
        format(2, 3).is_some_and(|f| f.contains('$')),
        "{:?}",
        format(2, 3)
    );
}

#[test]
fn pages_outside_the_document_are_refused() {
    let document = open(&docling_page().pdf);
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "tables".into(),
        pages: vec![read_page(4, &docling_page().raw)],
    };
    assert!(write_csv(&export, out.path(), "doc").is_err());
    assert!(write_xlsx(&export, out.path(), "doc").is_err());
    assert!(write_csv(&export, out.path(), "../escape").is_err());
    assert!(files_in(out.path()).is_empty());
}
