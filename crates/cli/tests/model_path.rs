//! The model path end to end on the CPU: `deepread synthesize` writes a tiny DeepSeek-OCR-2 with the real
//! tokenizer and vocabulary and random weights, and `deepread convert --model` reads a real PDF with it through
//! the same loading, rendering, preprocessing, generation, loop sentinel, cache and export as the real model.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{fixture, pdfium, stderr};

/// One US-letter page of a born-digital paper.
const PAPER: &str = "pdfs/born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf";
const STEM: &str = "docling__2305.03393v1-pg9";
/// The engine's debug line for each page it runs vision and prefill on: seen only when the model reads.
const MODEL_RAN: &str = "page joined";

/// `deepread synthesize --config tiny` into `dir/model`.
fn synthesize_tiny(dir: &Path) -> PathBuf {
    let model = dir.join("model");
    let run = Command::new(env!("CARGO_BIN_EXE_deepread"))
        .args([
            "synthesize",
            "--config",
            "tiny",
            "--seed",
            "1",
            "--tokenizer",
        ])
        .arg(fixture("tokenizer"))
        .arg("--out")
        .arg(&model)
        .output()
        .expect("deepread runs");
    assert!(run.status.success(), "{}", stderr(&run));
    model
}

/// `deepread convert PAPER` with the model in `model`, a cache file of the test's own, and the engine's debug log.
fn convert(dir: &Path, model: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deepread"))
        .arg("convert")
        .arg(fixture(PAPER))
        .arg("-o")
        .arg(dir.join("out"))
        .arg("--json")
        // The second run writes over the first's files.
        .arg("--overwrite")
        .arg("--model")
        .arg(model)
        .arg("--cache")
        .arg(dir.join("cache.sqlite3"))
        .env("DEEPREAD_PDFIUM", pdfium())
        .env("RUST_LOG", "deepread_engine::scheduler=debug")
        .output()
        .expect("deepread runs")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_tiny_model_reads_a_real_pdf_and_a_second_run_answers_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let model = synthesize_tiny(dir.path());

    let first = convert(dir.path(), &model);
    let log = stderr(&first);
    // Random weights never write the end token in time: the loop sentinel stops the page, and the
    // exit status says a page looped (--help: 6, what was read is written).
    assert_eq!(first.status.code(), Some(6), "{log}");
    assert_eq!(
        log.matches(MODEL_RAN).count(),
        1,
        "the model read the page once: {log}"
    );
    assert!(log.contains("page 1 looped"), "{log}");
    assert!(
        log.contains(&format!("DeepSeek-OCR-2 from {} on ", model.display())),
        "convert says which model reads, and on what: {log}"
    );

    let markdown = read(&dir.path().join(format!("out/{STEM}.md")));
    assert!(
        !markdown.trim().is_empty(),
        "what came before the loop is kept"
    );
    let json: serde_json::Value =
        serde_json::from_str(&read(&dir.path().join(format!("out/{STEM}.json")))).unwrap();
    let page = &json["pages"][0];
    assert_eq!(page["status"], "looped", "{page}");
    assert_eq!(page["read_by"]["recognizer"], "DeepSeek-OCR-2", "{page}");
    assert!(
        page["read_by"]["generated_tokens"].as_u64().unwrap() > 0,
        "{page}"
    );
    // Spec §3: a letter page at 144 dpi (1224×1584) is cut into 2×3 tiles, 6·144 + 256 + 1 image tokens; with
    // BOS and the layout prompt's 9 ids (fixtures/tokenizer README).
    assert_eq!(
        page["read_by"]["prompt_tokens"],
        1 + 6 * 144 + 256 + 1 + 9,
        "{page}"
    );

    let second = convert(dir.path(), &model);
    let log = stderr(&second);
    assert_eq!(
        second.status.code(),
        Some(6),
        "the output still holds a looped page: {log}"
    );
    assert!(
        log.contains("all 1 page(s) from the cache, nothing read again"),
        "{log}"
    );
    assert!(
        !log.contains(MODEL_RAN),
        "the model did not run again: {log}"
    );
    let again: serde_json::Value =
        serde_json::from_str(&read(&dir.path().join(format!("out/{STEM}.json")))).unwrap();
    assert_eq!(again["pages"][0], *page, "the cached page is the page read");
    assert_eq!(read(&dir.path().join(format!("out/{STEM}.md"))), markdown);
}

#[test]
fn damaged_weights_exit_4_naming_the_file_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let model = synthesize_tiny(dir.path());
    let weights = model.join("model.safetensors");
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &bytes[..bytes.len() / 2]).unwrap();

    let run = convert(dir.path(), &model);
    let log = stderr(&run);
    assert_eq!(run.status.code(), Some(4), "{log}");
    assert!(log.contains(&weights.display().to_string()), "{log}");
    assert!(log.contains("damaged"), "{log}");
    assert!(
        !dir.path().join("out").exists(),
        "no output for a model that did not load"
    );
}

#[test]
fn synthesize_names_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_deepread"))
        .args(["synthesize", "--config", "tiny", "--tokenizer"])
        .arg(dir.path())
        .arg("--out")
        .arg(dir.path().join("model"))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("no tokenizer.json"),
        "{}",
        stderr(&run)
    );

    let run = Command::new(env!("CARGO_BIN_EXE_deepread"))
        .args(["synthesize", "--config", "small", "--tokenizer"])
        .arg(fixture("tokenizer"))
        .arg("--out")
        .arg(dir.path().join("model"))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("`tiny`, `full` or a config.json"),
        "{}",
        stderr(&run)
    );
}

/// The number after `key` in `text` ("… 12 positions, logits 2.5e-2 relative …").
fn figure_before(text: &str, key: &str) -> f64 {
    let end = text
        .find(key)
        .unwrap_or_else(|| panic!("no {key:?} in {text}"));
    let start = text[..end].trim_end().rfind(' ').map_or(0, |i| i + 1);
    text[start..end]
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn int8_weights_are_checked_against_bf16_on_a_real_page_then_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = synthesize_tiny(dir.path());
    let check = Command::new(env!("CARGO_BIN_EXE_deepread"))
        .args(["models", "check-quant"])
        .arg(fixture(PAPER))
        .args(["--tokens", "12", "--model"])
        .arg(&model)
        .env("DEEPREAD_PDFIUM", pdfium())
        .output()
        .expect("deepread runs");
    assert!(check.status.success(), "{}", stderr(&check));
    let out = String::from_utf8_lossy(&check.stdout).into_owned();
    let total = out
        .lines()
        .find(|l| l.starts_with("all pages: "))
        .unwrap_or_else(|| panic!("no total line: {out}"));
    assert!(out.contains(&format!("{STEM}.pdf p.1: ")), "{out}");
    let positions = figure_before(total, "positions");
    assert!((1.0..=12.0).contains(&positions), "{total}");
    // Q8_0 moves logits by about what bf16 rounding does (a few percent on random weights); a broken layout
    // or a lost scale by order 1.
    let relative = figure_before(total, "relative");
    assert!(relative > 0.0 && relative < 0.1, "{total}");
    assert!(
        model.join("deepread-int8.gguf").is_file(),
        "the int8 weights are cached beside the model"
    );

    let read = Command::new(env!("CARGO_BIN_EXE_deepread"))
        .arg("convert")
        .arg(fixture(PAPER))
        .arg("-o")
        .arg(dir.path().join("int8"))
        .args(["--weights", "int8", "--model"])
        .arg(&model)
        .arg("--cache")
        .arg(dir.path().join("int8.sqlite3"))
        .env("DEEPREAD_PDFIUM", pdfium())
        .output()
        .expect("deepread runs");
    // As in bf16, random weights loop until the sentinel stops the page (exit 6), and what was read is written.
    assert_eq!(read.status.code(), Some(6), "{}", stderr(&read));
    assert!(dir.path().join(format!("int8/{STEM}.md")).is_file());
}
