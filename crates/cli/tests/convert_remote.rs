//! `deepread convert --engine remote` end to end: the real binary against a real HTTP server on
//! 127.0.0.1 (the fake OpenAI-compatible server of crates/core/tests), a real PDF, a real cache file.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

mod common;
#[path = "../../core/tests/support/mod.rs"]
mod support;

use common::{fixture, pdfium, stderr};
use deepread_pdf::{bind_pdfium, Document, RenderSize};
use support::{pieces, FakeServer, Reply};

const PAPER: &str = "pdfs/born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf";
const MODEL: &str = "deepseek-ai/DeepSeek-OCR-2";
const PAGE_TEXT: &str = "<|ref|>title<|/ref|><|det|>[[80, 60, 920, 110]]<|/det|>\n# Optimized Table Tokenization\n\n<|ref|>text<|/ref|><|det|>[[80, 130, 920, 300]]<|/det|>\nRead on a server, streamed back.\n\n";

/// `deepread convert` with a cache of its own and `DEEPREAD_API_KEY` as given.
fn convert(cache: &Path, args: &[&str], api_key: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_deepread"));
    command
        .arg("convert")
        .args(args)
        .arg("--cache")
        .arg(cache)
        .env("DEEPREAD_PDFIUM", pdfium())
        .env("DEEPREAD_MODEL", "/nonexistent/model")
        .env_remove("DEEPREAD_API_KEY");
    if let Some(key) = api_key {
        command.env("DEEPREAD_API_KEY", key);
    }
    command.output().expect("deepread runs")
}

/// The paper's page as the pipeline renders it for the model: what the server must be sent.
fn rendered_page() -> image::RgbImage {
    bind_pdfium(Some(&pdfium())).unwrap();
    let doc = Document::open(&fixture(PAPER), None).unwrap();
    doc.render_page(0, RenderSize::Dpi(144.0)).unwrap()
}

#[test]
fn a_pdf_is_read_on_the_server_and_its_markdown_written() {
    let server = FakeServer::start(vec![rendered_page()], |_| {
        Reply::text(&pieces(PAGE_TEXT, 4), Duration::from_millis(2))
    });
    let dir = tempfile::tempdir().unwrap();
    let (cache, out) = (dir.path().join("cache.sqlite3"), dir.path().join("out"));
    let pdf = fixture(PAPER);
    let args = [
        pdf.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--engine",
        "remote",
        "--endpoint",
        &server.url,
        "--model",
        MODEL,
        "--concurrency",
        "2",
    ];
    let run = convert(&cache, &args, Some("sk-from-the-environment"));
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(server.rejected().is_empty(), "{:?}", server.rejected());

    let markdown = std::fs::read_to_string(out.join("docling__2305.03393v1-pg9.md")).unwrap();
    assert!(
        markdown.contains("# Optimized Table Tokenization"),
        "{markdown}"
    );
    assert!(
        markdown.contains("Read on a server, streamed back."),
        "{markdown}"
    );
    assert!(
        !markdown.contains("<|ref|>"),
        "tags become Markdown: {markdown}"
    );

    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].page, Some(0), "the very page rendered at 144 dpi");
    assert_eq!(seen[0].body["model"], MODEL);
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some("Bearer sk-from-the-environment")
    );

    // Read again: from the cache, the server not asked.
    let again = convert(
        &cache,
        &[&args[..], &["--overwrite"]].concat(),
        Some("sk-from-the-environment"),
    );
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("from the cache"),
        "{}",
        stderr(&again)
    );
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn a_remote_reading_needs_an_endpoint_and_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite3");
    let pdf = fixture(PAPER);
    let out = dir.path().join("out");
    let with = |more: &[&str]| -> Output {
        let mut args = vec![pdf.to_str().unwrap(), "-o", out.to_str().unwrap()];
        args.extend_from_slice(more);
        convert(&cache, &args, None)
    };

    let no_endpoint = with(&["--engine", "remote", "--model", MODEL]);
    assert_eq!(
        no_endpoint.status.code(),
        Some(2),
        "{}",
        stderr(&no_endpoint)
    );
    assert!(
        stderr(&no_endpoint).contains("--endpoint"),
        "{}",
        stderr(&no_endpoint)
    );

    let url = "http://127.0.0.1:9/v1";
    let no_model = with(&["--engine", "remote", "--endpoint", url]);
    assert_eq!(no_model.status.code(), Some(2), "{}", stderr(&no_model));
    assert!(
        stderr(&no_model).contains("--model"),
        "{}",
        stderr(&no_model)
    );

    let stray = with(&["--engine", "text", "--endpoint", url]);
    assert_eq!(stray.status.code(), Some(2), "{}", stderr(&stray));
    assert!(
        stderr(&stray).contains("--engine remote"),
        "{}",
        stderr(&stray)
    );
}

#[test]
fn plain_http_to_another_machine_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite3");
    let pdf = fixture(PAPER);
    let out = dir.path().join("out");
    let args = [
        pdf.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--engine",
        "remote",
        "--endpoint",
        "http://192.0.2.10:8000/v1",
        "--model",
        MODEL,
    ];
    let run = convert(&cache, &args, None);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    let message = stderr(&run);
    assert!(
        message.contains("unencrypted") && message.contains("--allow-http"),
        "{message}"
    );
    assert!(!out.exists(), "nothing written");
}

#[test]
fn pages_the_server_cannot_read_fail_with_its_reason_and_exit_6() {
    let server = FakeServer::start(Vec::new(), |_| {
        Reply::status(
            404,
            r#"{"object":"error","message":"The model `nope` does not exist."}"#,
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite3");
    let pdf = fixture(PAPER);
    let out = dir.path().join("out");
    let args = [
        pdf.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--engine",
        "remote",
        "--endpoint",
        &server.url,
        "--model",
        "nope",
    ];
    let run = convert(&cache, &args, None);
    assert_eq!(run.status.code(), Some(6), "{}", stderr(&run));
    let message = stderr(&run);
    assert!(message.contains("page 1 failed"), "{message}");
    assert!(
        message.contains("The model `nope` does not exist."),
        "{message}"
    );
    assert_eq!(
        server.seen()[0].authorization,
        None,
        "no key in the environment"
    );
}
