//! `deepread bench` end to end on the tiny fixture model: one row per batch size, and bad arguments refused.

use std::path::Path;
use std::process::{Command, Output};

mod common;

fn bench(args: &[&str]) -> Output {
    let tiny = Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/fixtures/tiny_native");
    Command::new(env!("CARGO_BIN_EXE_deepread"))
        .arg("bench")
        .arg("--model")
        .arg(tiny)
        .args(args)
        .output()
        .expect("deepread runs")
}

#[test]
fn bench_prints_a_row_per_batch_size() {
    let run = bench(&["--pages", "1,2", "--tokens", "4", "--crops", "2"]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| {
            l.split(|c: char| c.is_whitespace() || c == '(' || c == ')')
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|cols| cols.first().is_some_and(|c| c.parse::<usize>().is_ok()))
        .collect();
    assert_eq!(rows.iter().map(|r| r[0]).collect::<Vec<_>>(), ["1", "2"]);
    for row in &rows {
        // pages, vision+prefill, vision, prefill, decode ms/step, tokens/s, memory
        let tokens_per_s: f64 = row[5].parse().unwrap();
        assert!(tokens_per_s > 0.0, "{stdout}");
        assert_eq!(row[6], "n/a", "no GPU memory figure on the CPU");
    }
    assert!(stdout.contains("2 tiles + global view"), "{stdout}");
}

#[test]
fn bench_refuses_a_single_token_and_a_missing_model() {
    let run = bench(&["--tokens", "1"]);
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("--tokens must be at least 2"));
    let missing = Command::new(env!("CARGO_BIN_EXE_deepread"))
        .args(["bench", "--model", "/nonexistent/model"])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("config.json missing"));
}

/// The rows of `bench --document`'s table, split on spaces: mix, reading, pages, slots, tokens, seconds, pages/s,
/// tokens/s, first token ms, longest stall ms, widest step, GPU GB, set aside, failed.
fn document_rows(stdout: &str) -> Vec<Vec<&str>> {
    stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|cols| cols.len() == 14 && cols[2].parse::<usize>().is_ok())
        .collect()
}

#[test]
fn a_document_is_read_grouped_and_continuous_with_every_page_to_its_length() {
    let run = bench(&[
        "--document",
        "--document-pages",
        "6",
        "--mix",
        "captured",
        "--grouped-pages",
        "3",
        "--slots",
        "2",
        "--crops",
        "1",
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // The captured mix is the reported output lengths of the fixtures' captures, in their order.
    let validation = common::fixture("tokenizer/tokenizer_validation.json");
    let pages: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(validation).unwrap()).unwrap();
    let reported: Vec<usize> = pages
        .iter()
        .map(|p| p["reported_output_text_tokens"].as_u64().unwrap() as usize)
        .collect();
    let rows = document_rows(&stdout);
    let readings: Vec<(&str, &str)> = rows.iter().map(|r| (r[0], r[1])).collect();
    assert_eq!(
        readings,
        [
            ("captured", "grouped"),
            ("captured", "continuous"),
            ("captured", "capped")
        ],
        "{stdout}"
    );
    // On the CPU: 4 slots sized, capped at 2 by --slots; the grouped reading read 4 at a time.
    let expected_slots = ["4", "4", "2"];
    for ((row, pages), slots) in rows.iter().zip([3usize, 6, 6]).zip(expected_slots) {
        assert_eq!(row[2], pages.to_string(), "{stdout}");
        assert_eq!(row[3], slots, "{stdout}");
        // Every page generated exactly its length.
        let tokens: usize = reported[..pages].iter().sum();
        assert_eq!(row[4], tokens.to_string(), "{stdout}");
        // The grouped reading decodes its group of 3 together. Continuous pages decode together only when the
        // vision thread keeps ahead, which it does not on the CPU for pages this short (the engine's scheduler
        // tests read long pages to show it).
        let widest: usize = row[10].parse().unwrap();
        let least = if row[1] == "grouped" { 3 } else { 1 };
        assert!(
            widest >= least && widest <= slots.parse().unwrap(),
            "{stdout}"
        );
        assert_eq!(row[11], "n/a", "no GPU memory figure on the CPU");
        assert_eq!(row[13], "0", "no page failed: {stdout}");
    }
    assert!(
        stdout.contains("captured mix: 6 pages"),
        "the mix's summary: {stdout}"
    );
}

fn bench_prepare(pdf: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deepread"))
        .env("DEEPREAD_PDFIUM", common::pdfium())
        .arg("bench")
        .arg("--prepare")
        .arg(pdf)
        .args(args)
        .output()
        .expect("deepread runs")
}

#[test]
fn preparing_pages_is_timed_per_thread_count_on_a_real_pdf() {
    let pdf = common::fixture("pdfs/scanned_image_only/pypdf__Seige_of_Vicksburg_Sample_OCR.pdf");
    let run = bench_prepare(&pdf, &["--prepare-pages", "4", "--prepare-threads", "1,2"]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", common::stderr(&run));
    // threads, pages, seconds, pages/s, render ms/page, views ms/page
    let rows: Vec<Vec<f64>> = stdout
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .map(|c| c.parse::<f64>().ok())
                .collect::<Option<Vec<_>>>()
        })
        .filter(|cols| cols.len() == 6)
        .collect();
    assert_eq!(
        rows.iter().map(|r| (r[0], r[1])).collect::<Vec<_>>(),
        [(1.0, 4.0), (2.0, 4.0)],
        "{stdout}"
    );
    for row in &rows {
        assert!(row[2] > 0.0 && row[3] > 0.0, "{stdout}");
        // A real render and real views: neither can take no time at 144 dpi.
        assert!(row[4] > 0.0 && row[5] > 0.0, "{stdout}");
    }
    assert!(stdout.contains("(6 pages, 4 prepared per row"), "{stdout}");
}

#[test]
fn preparing_a_broken_pdf_says_why() {
    let pdf = common::fixture("pdfs/malformed/pdfjs__bug1020226_truncated.pdf");
    let run = bench_prepare(&pdf, &["--prepare-pages", "2"]);
    assert!(!run.status.success());
    let stderr = common::stderr(&run);
    assert!(stderr.contains("the file is damaged"), "{stderr}");
}
