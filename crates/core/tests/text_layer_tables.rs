//! Tables read through the text layer, held cell by cell against the published ground truth: docling's
//! JSON for the same PDFs gives each table as a grid of cell texts (a spanning cell repeated in every
//! row and column it covers).

mod common;

use common::fixtures_dir;
use deepread_core::export::page_tables;
use deepread_core::text_layer::read_page;
use deepread_pdf::Document;

/// A table's rows as their cells' texts, spanning cells repeated over what they span, as the ground
/// truth writes them.
type Grid = Vec<Vec<String>>;

fn ground_truth_tables(relative: &str) -> Vec<Grid> {
    let path = fixtures_dir().join("pdfs").join(relative);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    json["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|table| {
            table["data"]["grid"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| {
                    let cells = row.as_array().unwrap();
                    cells
                        .iter()
                        .map(|c| c["text"].as_str().unwrap().to_owned())
                        .collect()
                })
                .collect()
        })
        .collect()
}

/// The tables of the page as the text layer writes them (Markdown or HTML), read back by the exports'
/// table reader (spans laid out as HTML lays them), as grids.
fn our_tables(relative: &str) -> (Vec<Grid>, String) {
    let path = fixtures_dir().join("pdfs").join(relative);
    let document = Document::open(&path, None).unwrap();
    let page = read_page(
        &document.text_layer(0).unwrap(),
        document.page_size(0).unwrap(),
    );
    let tables = page
        .split("<|ref|>")
        .filter_map(|block| block.strip_prefix("table<|/ref|>"))
        .flat_map(|block| page_tables(0, block.split_once("<|/det|>\n").unwrap().1))
        .map(|table| {
            table
                .grid()
                .iter()
                .map(|row| {
                    let texts = row
                        .iter()
                        .map(|place| place.map(|(cell, _)| cell.text.clone()));
                    texts.map(Option::unwrap_or_default).collect()
                })
                .collect()
        })
        .collect();
    (tables, page)
}

/// A row as a reader compares it: its non-empty cells in order, one for each run of a spanning cell,
/// each cell as the set of its words (a repeated glyph is one).
fn row_key(row: &[String]) -> Vec<Vec<String>> {
    let mut key: Vec<Vec<String>> = Vec::new();
    for cell in row.iter().filter(|c| !c.trim().is_empty()) {
        let mut words: Vec<String> = cell.split_whitespace().map(str::to_owned).collect();
        words.sort();
        words.dedup();
        if key.last() != Some(&words) {
            key.push(words);
        }
    }
    key
}

fn assert_every_row_found(relative_pdf: &str, relative_json: &str) {
    let truth = ground_truth_tables(relative_json);
    let (ours, page) = our_tables(relative_pdf);
    assert_eq!(ours.len(), truth.len(), "tables on the page:\n{page}");
    for (theirs, mine) in truth.iter().zip(&ours) {
        let our_rows: Vec<_> = mine.iter().map(|r| row_key(r)).collect();
        for row in theirs {
            assert!(
                our_rows.contains(&row_key(row)),
                "ground-truth row {row:?} is not a row of ours:\n{mine:#?}"
            );
        }
    }
}

#[test]
fn a_ruled_table_with_spanning_headers_has_the_ground_truths_cells_in_its_rows() {
    assert_every_row_found(
        "born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf",
        "born_digital_papers_math_tables/groundtruth/docling__2305.03393v1-pg9.json",
    );
}

#[test]
fn a_table_without_rules_beside_a_column_of_prose_has_the_ground_truths_cells_in_its_rows() {
    assert_every_row_found(
        "multi_column_layout/docling__table_mislabeled_as_picture.pdf",
        "multi_column_layout/groundtruth/docling__table_mislabeled_as_picture.json",
    );
}

#[test]
fn a_tables_caption_stays_a_paragraph_and_its_cells_are_no_headings() {
    let (_, page) = our_tables("born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf");
    let caption = page
        .split("<|ref|>")
        .find(|b| b.contains("Table 1. HPO performed"))
        .unwrap_or_else(|| panic!("the caption is one block:\n{page}"));
    assert!(caption.starts_with("text<|/ref|>"), "{caption}");
    assert!(!caption.contains("\n1. "), "not an ordered list: {caption}");
    // Cells found nowhere else on the page.
    for cell in ["enc-layers", "0.965", "5.39"] {
        let outside_table = page
            .split("<|ref|>")
            .filter(|b| !b.starts_with("table<|/ref|>"))
            .any(|b| b.contains(cell));
        assert!(!outside_table, "{cell} is read outside the table:\n{page}");
    }
}
