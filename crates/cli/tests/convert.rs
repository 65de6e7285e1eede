//! `deepread convert` end to end: the real binary on real PDFs, a real cache file, real exit statuses.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{fixture, pdfium, stderr};

/// The binary with a cache of its own, so tests never share or touch the user's cache.
fn deepread(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deepread"))
        .args(args)
        .arg("--cache")
        .arg(cache)
        .env("DEEPREAD_PDFIUM", pdfium())
        .env("DEEPREAD_MODEL", "/nonexistent/model")
        .output()
        .expect("deepread runs")
}

/// `markdown` holds 90 % or more of the words of `text` (alphabetic, of `min_len` letters or more), read by
/// something other than us (`whose`).
fn assert_holds_most_words(markdown: &str, text: &str, min_len: usize, whose: &str) {
    let words: Vec<&str> = text
        .split_whitespace()
        .filter(|w| w.chars().all(char::is_alphabetic) && w.chars().count() >= min_len)
        .collect();
    let found = words.iter().filter(|w| markdown.contains(**w)).count();
    assert!(
        found * 10 >= words.len() * 9,
        "only {found} of {} words of {whose} found",
        words.len()
    );
}

const PAPER: &str = "pdfs/born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf";
const SLIDES: &str = "pdfs/slides/zerox__0013_slides.pdf";

#[test]
fn text_engine_writes_markdown_and_json_and_the_second_run_reads_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite3");
    let out = dir.path().join("out");
    let pdf = fixture(PAPER);
    let args = [
        "convert",
        pdf.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--engine",
        "text",
        "--json",
    ];

    let first = deepread(&cache, &args);
    assert!(first.status.success(), "{}", stderr(&first));
    let markdown = std::fs::read_to_string(out.join("docling__2305.03393v1-pg9.md")).unwrap();
    // Words of the page's published ground truth (docling), not of our own output.
    let truth = std::fs::read_to_string(fixture(
        "pdfs/born_digital_papers_math_tables/groundtruth/docling__2305.03393v1-pg9.md",
    ))
    .unwrap();
    assert_holds_most_words(&markdown, &truth, 4, "the ground truth");

    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("docling__2305.03393v1-pg9.json")).unwrap(),
    )
    .unwrap();
    assert!(
        json.to_string().contains("\"label\""),
        "the sidecar lists blocks"
    );

    let second = deepread(&cache, &[&args[..], &["--overwrite"]].concat());
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("all 1 page(s) from the cache"),
        "{}",
        stderr(&second)
    );
    let again = std::fs::read_to_string(out.join("docling__2305.03393v1-pg9.md")).unwrap();
    assert_eq!(
        again, markdown,
        "the cached reading exports the same Markdown"
    );
}

#[test]
fn documents_that_cannot_be_opened_exit_3_and_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite3");
    let out = dir.path().join("out");
    let cases = [
        (
            fixture("pdfs/malformed/pdfjs__bug1020226_truncated.pdf"),
            "damaged",
        ),
        (
            fixture("pdfs/encrypted/pypdf__crazyones-encrypted-256.pdf"),
            "password",
        ),
        (dir.path().join("missing.pdf"), "missing.pdf"),
    ];
    for (file, words) in cases {
        let run = deepread(
            &cache,
            &[
                "convert",
                file.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
                "--engine",
                "text",
            ],
        );
        assert_eq!(
            run.status.code(),
            Some(3),
            "{}: {}",
            file.display(),
            stderr(&run)
        );
        let message = stderr(&run).to_lowercase();
        assert!(
            message.contains(&words.to_lowercase()),
            "{}: {message}",
            file.display()
        );
        assert!(
            message.contains(&file.file_name().unwrap().to_string_lossy().to_lowercase()),
            "{message}"
        );
    }
}

/// The entry `name` of the zip archive (DOCX, EPUB) at `path`, as text.
fn zip_entry(path: &Path, name: &str) -> String {
    let file = std::fs::File::open(path).unwrap();
    let mut archive = zip::ZipArchive::new(file).unwrap();
    std::io::read_to_string(archive.by_name(name).unwrap()).unwrap()
}

#[test]
fn a_folder_is_written_in_every_format_chosen_and_nothing_is_overwritten_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite3");
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    std::fs::copy(fixture(PAPER), inputs.join("paper.pdf")).unwrap();
    std::fs::copy(fixture(SLIDES), inputs.join("slides.pdf")).unwrap();
    std::fs::write(inputs.join("notes.txt"), "not a document").unwrap();
    let out = dir.path().join("out");
    let args = [
        "convert",
        inputs.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--engine",
        "text",
        "--to",
        "md,html,docx,epub,xlsx",
        "--name",
        "{name}-text",
    ];
    let first = deepread(&cache, &args);
    assert!(first.status.success(), "{}", stderr(&first));
    // A workbook for the tables read, or a word that there were none to write.
    let workbook = out.join("slides-text/slides-text.xlsx");
    let told =
        stderr(&first).contains("slides.pdf: no tables were read, so nothing was written as xlsx");
    assert!(workbook.is_file() != told, "{}", stderr(&first));
    for name in ["paper-text", "slides-text"] {
        for ext in ["md", "html", "docx", "epub"] {
            let file = out.join(name).join(format!("{name}.{ext}"));
            assert!(file.is_file(), "{} is missing", file.display());
        }
    }
    assert!(!out.join("notes-text").exists(), "only documents are read");
    // A word of the paper's published ground truth (docling), in the Word file's body.
    let body = zip_entry(&out.join("paper-text/paper-text.docx"), "word/document.xml");
    assert!(
        body.contains("TableFormer"),
        "the DOCX body lacks the paper's words"
    );
    let mimetype = zip_entry(&out.join("slides-text/slides-text.epub"), "mimetype");
    assert_eq!(mimetype, "application/epub+zip");

    let written = std::fs::metadata(out.join("paper-text/paper-text.docx")).unwrap();
    let again = deepread(&cache, &args);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    let said = stderr(&again);
    assert!(
        said.contains("already there") && said.contains("--overwrite"),
        "{said}"
    );
    assert!(!said.contains("from the cache"), "nothing is read: {said}");
    let kept = std::fs::metadata(out.join("paper-text/paper-text.docx")).unwrap();
    assert_eq!(kept.modified().unwrap(), written.modified().unwrap());

    let replaced = deepread(&cache, &[&args[..], &["--overwrite"]].concat());
    assert!(replaced.status.success(), "{}", stderr(&replaced));
}

/// Keeps `correction` in the cache file at `cache`, as the window does when a person edits a block.
fn correct_in_cache(cache: &Path, correction: deepread_store::Correction) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = deepread_store::Store::open(cache).await.unwrap();
        store.save_correction(&correction).await.unwrap();
        store.close().await;
    });
}

#[test]
fn a_correction_kept_in_the_cache_is_in_every_export_and_the_reading_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite3");
    let out = dir.path().join("out");
    let pdf = fixture(PAPER);
    let args = [
        "convert",
        pdf.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--engine",
        "text",
        "--to",
        "md,json,docx",
    ];
    let first = deepread(&cache, &args);
    assert!(first.status.success(), "{}", stderr(&first));
    let sidecar = |out: &Path| -> serde_json::Value {
        let text = std::fs::read_to_string(out.join("docling__2305.03393v1-pg9.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let read = sidecar(&out);
    // A paragraph of the page, not its page number.
    let blocks = read["pages"][0]["blocks"].as_array().unwrap();
    let at = blocks
        .iter()
        .position(|b| b["markdown"].as_str().unwrap().len() > 40)
        .unwrap();
    let block = &blocks[at];
    let original = block["markdown"].as_str().unwrap().to_owned();
    let hash = read["document"]["sha256"].as_str().unwrap().to_owned();
    correct_in_cache(
        &cache,
        deepread_store::Correction {
            document_hash: hash,
            page_index: 0,
            block_id: block["block_id"].as_u64().unwrap() as u32,
            boxes: block["boxes"].clone(),
            original: original.clone(),
            markdown: "Corrected by a person.".into(),
            label: None,
            edited_at_ms: 1,
        },
    );

    let again = deepread(&cache, &[&args[..], &["--overwrite"]].concat());
    assert!(again.status.success(), "{}", stderr(&again));
    let corrected = sidecar(&out);
    assert_eq!(
        corrected["pages"][0]["blocks"][at]["markdown"],
        "Corrected by a person."
    );
    let markdown = std::fs::read_to_string(out.join("docling__2305.03393v1-pg9.md")).unwrap();
    assert!(markdown.contains("Corrected by a person.") && !markdown.contains(original.trim()));
    let body = zip_entry(
        &out.join("docling__2305.03393v1-pg9.docx"),
        "word/document.xml",
    );
    assert!(body.contains("Corrected by a person."));
    // The reading itself is kept beside the correction: dropped, the page exports as it was read, from the cache.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = deepread_store::Store::open(&cache).await.unwrap();
        let block_id = block["block_id"].as_u64().unwrap() as u32;
        let hash = read["document"]["sha256"].as_str().unwrap();
        assert!(store.forget_correction(hash, 0, block_id).await.unwrap());
        store.close().await;
    });
    let undone = deepread(&cache, &[&args[..], &["--overwrite"]].concat());
    assert!(
        stderr(&undone).contains("from the cache"),
        "{}",
        stderr(&undone)
    );
    assert_eq!(
        sidecar(&out)["pages"][0]["blocks"][at]["markdown"],
        original.as_str()
    );
}

const ENCRYPTED: &str = "pdfs/encrypted/pypdf__crazyones-encrypted-256.pdf";

/// `convert --engine text` of `files` into `out`, with `password_file` and the environment's password.
fn convert_encrypted(
    cache: &Path,
    files: &[&Path],
    out: &Path,
    password_file: Option<&Path>,
    env_password: Option<&str>,
) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_deepread"));
    command.arg("convert").args(files).arg("-o").arg(out);
    command.args(["--engine", "text", "--cache"]).arg(cache);
    if let Some(file) = password_file {
        command.arg("--password-file").arg(file);
    }
    command
        .env("DEEPREAD_PDFIUM", pdfium())
        .env_remove("DEEPREAD_PDF_PASSWORD");
    if let Some(password) = env_password {
        command.env("DEEPREAD_PDF_PASSWORD", password);
    }
    command.output().expect("deepread runs")
}

#[test]
fn encrypted_pdfs_open_with_a_password_from_a_file_or_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite3");
    let encrypted = fixture(ENCRYPTED);
    let plain = fixture(PAPER);
    let (right, wrong) = (dir.path().join("right"), dir.path().join("wrong"));
    // The fixture's user password (shared/fixtures/index.json), with the newline `echo` leaves.
    std::fs::write(&right, "password\n").unwrap();
    std::fs::write(&wrong, "Password\n").unwrap();

    let none = convert_encrypted(&cache, &[&encrypted], &dir.path().join("a"), None, None);
    assert_eq!(none.status.code(), Some(3), "{}", stderr(&none));
    assert!(
        stderr(&none).contains("--password-file"),
        "says how: {}",
        stderr(&none)
    );

    let refused = convert_encrypted(
        &cache,
        &[&encrypted],
        &dir.path().join("b"),
        Some(&wrong),
        None,
    );
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("not correct"),
        "{}",
        stderr(&refused)
    );

    // One password for the files given: the document without encryption opens as always beside it.
    let out = dir.path().join("c");
    let opened = convert_encrypted(&cache, &[&encrypted, &plain], &out, Some(&right), None);
    assert!(opened.status.success(), "{}", stderr(&opened));
    let markdown = std::fs::read_to_string(
        out.join("pypdf__crazyones-encrypted-256/pypdf__crazyones-encrypted-256.md"),
    )
    .unwrap();
    assert!(out
        .join("docling__2305.03393v1-pg9/docling__2305.03393v1-pg9.md")
        .exists());
    // Poppler's own reading of the decrypted page is the oracle for its words.
    let poppler = Command::new("pdftotext")
        .args(["-upw", "password"])
        .arg(&encrypted)
        .arg("-")
        .output()
        .expect("pdftotext (poppler-utils, installed by scripts/install-system-deps.sh)");
    let words: Vec<String> = String::from_utf8_lossy(&poppler.stdout)
        .split_whitespace()
        .filter(|w| w.len() > 3 && w.chars().all(char::is_alphabetic))
        .map(str::to_owned)
        .collect();
    assert!(words.len() > 20, "poppler read the page: {words:?}");
    let found = words
        .iter()
        .filter(|w| markdown.contains(w.as_str()))
        .count();
    assert!(
        found * 10 >= words.len() * 9,
        "{found} of {} words: {markdown}",
        words.len()
    );

    let from_env = convert_encrypted(
        &cache,
        &[&encrypted],
        &dir.path().join("d"),
        None,
        Some("password"),
    );
    assert!(from_env.status.success(), "{}", stderr(&from_env));
}

#[test]
fn missing_model_weights_exit_4_and_point_to_the_text_layer() {
    let dir = tempfile::tempdir().unwrap();
    let pdf = fixture(PAPER);
    let run = deepread(
        &dir.path().join("cache.sqlite3"),
        &[
            "convert",
            pdf.to_str().unwrap(),
            "-o",
            dir.path().to_str().unwrap(),
        ],
    );
    assert_eq!(run.status.code(), Some(4), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("/nonexistent/model"),
        "{}",
        stderr(&run)
    );
    assert!(stderr(&run).contains("text layer"), "{}", stderr(&run));
}

#[test]
fn a_bad_page_list_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let pdf = fixture(PAPER);
    let run = deepread(
        &dir.path().join("cache.sqlite3"),
        &[
            "convert",
            pdf.to_str().unwrap(),
            "-o",
            dir.path().to_str().unwrap(),
            "--engine",
            "text",
            "--pages",
            "3-1",
        ],
    );
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).contains("backwards"));
}

#[test]
fn an_unwritable_output_exits_8() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, b"not a folder").unwrap();
    let pdf = fixture(PAPER);
    let out = blocker.join("out");
    let run = deepread(
        &dir.path().join("cache.sqlite3"),
        &[
            "convert",
            pdf.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--engine",
            "text",
        ],
    );
    assert_eq!(run.status.code(), Some(8), "{}", stderr(&run));
}

#[test]
fn a_corrupt_cache_is_set_aside_with_a_message_and_the_reading_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite3");
    std::fs::write(
        &cache,
        b"this is not a database, it is a sentence that is long enough",
    )
    .unwrap();
    let pdf = fixture(PAPER);
    let run = deepread(
        &cache,
        &[
            "convert",
            pdf.to_str().unwrap(),
            "-o",
            dir.path().join("out").to_str().unwrap(),
            "--engine",
            "text",
        ],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("cache.sqlite3.corrupt"),
        "{}",
        stderr(&run)
    );
    let kept = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains(".corrupt-"));
    assert!(kept, "the damaged file is kept beside the new one");
}

#[test]
fn ocr_without_model_weights_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    let pdf = fixture(PAPER);
    let run = Command::new(env!("CARGO_BIN_EXE_deepread"))
        .args([
            "ocr",
            pdf.to_str().unwrap(),
            "--model",
            dir.path().to_str().unwrap(),
        ])
        .env("DEEPREAD_PDFIUM", pdfium())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(4), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("no DeepSeek-OCR-2 weights"),
        "{}",
        stderr(&run)
    );
}

#[test]
fn a_document_that_repeats_a_paragraph_is_not_taken_for_a_looping_model() {
    let dir = tempfile::tempdir().unwrap();
    let pdf = fixture("pdfs/born_digital_papers_math_tables/docling__code_and_formula.pdf");
    let out = dir.path().join("out");
    let run = deepread(
        &dir.path().join("cache.sqlite3"),
        &[
            "convert",
            pdf.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--engine",
            "text",
        ],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let markdown = std::fs::read_to_string(out.join("docling__code_and_formula.md")).unwrap();
    // The last sentence of page 2 in the published ground truth, after the paragraph's fourth repeat.
    assert!(
        markdown.contains("tincidunt ut laoreet dolore magna aliquam erat volutpat"),
        "{markdown}"
    );
}

/// A model folder made from the engine's tiny test model, with one thing wrong.
fn damaged_model(dir: &Path, damage: impl FnOnce(&Path)) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/fixtures/tiny_native");
    let model = dir.join("model");
    std::fs::create_dir_all(&model).unwrap();
    for file in ["config.json", "model.safetensors"] {
        std::fs::copy(source.join(file), model.join(file)).unwrap();
    }
    // A model folder has a tokenizer; without one it is not taken for a model at all.
    std::fs::copy(
        fixture("tokenizer/tokenizer.json"),
        model.join("tokenizer.json"),
    )
    .unwrap();
    damage(&model);
    model
}

#[test]
fn damaged_weights_exit_4_and_say_which_file_and_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let truncated = damaged_model(&dir.path().join("a"), |m| {
        let weights = m.join("model.safetensors");
        let bytes = std::fs::read(&weights).unwrap();
        std::fs::write(&weights, &bytes[..bytes.len() / 2]).unwrap();
    });
    let bad_config = damaged_model(&dir.path().join("b"), |m| {
        std::fs::write(m.join("config.json"), b"{").unwrap()
    });
    for (model, words) in [
        (truncated, "model.safetensors"),
        (bad_config, "config.json"),
    ] {
        let run = Command::new(env!("CARGO_BIN_EXE_deepread"))
            .args(["models", "verify", "--model", model.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(run.status.code(), Some(4), "{}", stderr(&run));
        assert!(stderr(&run).contains(words), "{}", stderr(&run));
    }
}

#[test]
fn a_page_in_the_name_writes_each_page_as_its_own_files_numbered_to_sort() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite3");
    let out = dir.path().join("out");
    let pdf = fixture("pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
    let args = [
        "convert",
        pdf.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--engine",
        "text",
        "--to",
        "md,json",
        "--pages",
        "1-2,10",
        "--name",
        "{name}-p{page}",
    ];
    let first = deepread(&cache, &args);
    assert!(first.status.success(), "{}", stderr(&first));
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    // 14 pages: two digits, so that the files sort in page order.
    let stems = [
        "pdfjs__tracemonkey-p01",
        "pdfjs__tracemonkey-p02",
        "pdfjs__tracemonkey-p10",
    ];
    let want: Vec<String> = stems
        .iter()
        .flat_map(|s| [format!("{s}.json"), format!("{s}.md")])
        .chain(["images".to_owned()])
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(names, want);

    // Each file is its page alone: page 10's words, as poppler reads that page, and one page section.
    let page_10 = std::fs::read_to_string(out.join("pdfjs__tracemonkey-p10.md")).unwrap();
    assert_eq!(page_10.matches("<--- Page Split --->").count(), 1);
    let poppler = Command::new("pdftotext")
        .args(["-f", "10", "-l", "10"])
        .arg(&pdf)
        .arg("-")
        .output()
        .unwrap();
    let poppler = String::from_utf8_lossy(&poppler.stdout);
    assert_holds_most_words(&page_10, &poppler, 5, "poppler's page 10");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("pdfjs__tracemonkey-p02.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["pages"].as_array().unwrap().len(), 1);
    assert_eq!(json["pages"][0]["page"], 1);

    // Converting again asks before replacing any page's files.
    let again = deepread(&cache, &args);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("already there"),
        "{}",
        stderr(&again)
    );
}
