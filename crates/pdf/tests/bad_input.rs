//! Bad input fails with a typed error, never a panic or a hang.

mod common;

use std::io::Write;

use common::{fixture, init_pdfium, within};
use deepread_pdf::{Document, PdfError, RenderSize};

const PAPER: &str = "pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf";
const PHOTO: &str = "grounding/with_source/halllo_taxi_receipt/input.jpg";
const SCAN_PNG: &str = "grounding/with_source/docling_md_deepseek/2305.03393v1-pg9.png";

/// Deterministic noise (a 64-bit LCG, Knuth's MMIX constants), so a failure reproduces.
fn noise(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x5eed;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 56) as u8
        })
        .collect()
}

fn open_bytes(bytes: Vec<u8>) -> Result<Document, PdfError> {
    init_pdfium();
    within(60, "bad bytes", move || Document::from_bytes(bytes, None))
}

#[test]
fn an_empty_file_is_not_a_document() {
    init_pdfium();
    let file = tempfile::NamedTempFile::new().unwrap();
    let result = Document::open(file.path(), None);
    assert!(matches!(result, Err(PdfError::NotADocument)), "{result:?}");
}

#[test]
fn random_bytes_are_not_a_document() {
    let result = open_bytes(noise(64 * 1024));
    assert!(matches!(result, Err(PdfError::NotADocument)), "{result:?}");
}

#[test]
fn random_bytes_behind_a_pdf_header_are_corrupt() {
    let mut bytes = b"%PDF-1.7\n".to_vec();
    bytes.extend(noise(64 * 1024));
    let result = open_bytes(bytes);
    assert!(
        matches!(result, Err(PdfError::Corrupt { .. })),
        "{result:?}"
    );
}

#[test]
fn a_truncated_copy_of_a_real_pdf_is_corrupt() {
    init_pdfium();
    let full = std::fs::read(fixture(PAPER)).unwrap();
    // Cut in its first tenth: past the header, before any page tree or cross-reference data.
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(&full[..full.len() / 10]).unwrap();
    let path = file.path().to_path_buf();
    let result = within(60, "truncated pdf", move || Document::open(&path, None));
    assert!(
        matches!(result, Err(PdfError::Corrupt { .. })),
        "{result:?}"
    );
}

#[test]
fn a_truncated_png_is_corrupt() {
    // (A truncated JPEG decodes, grey below the cut, as in browsers; PNG's checksummed chunks
    // make truncation detectable.)
    let full = std::fs::read(fixture(SCAN_PNG)).unwrap();
    let result = open_bytes(full[..full.len() / 3].to_vec());
    assert!(
        matches!(result, Err(PdfError::Corrupt { .. })),
        "{result:?}"
    );
}

#[test]
fn a_missing_file_is_an_io_error_naming_the_path() {
    let missing = std::path::Path::new("/nonexistent/deepread/file.pdf");
    match Document::open(missing, None) {
        Err(error @ PdfError::Io { .. }) => {
            assert!(error.to_string().contains("/nonexistent/deepread/file.pdf"));
        }
        other => panic!("expected Io, got {other:?}"),
    }
}

#[test]
fn pages_out_of_range_are_refused() {
    init_pdfium();
    for (file, count) in [(PAPER, 14), (PHOTO, 1)] {
        let doc = Document::open(&fixture(file), None).unwrap();
        let out_of_range = |r: Result<(), PdfError>| matches!(r, Err(PdfError::PageOutOfRange { index, count: c }) if index == count && c == count);
        assert!(out_of_range(doc.page_size(count).map(|_| ())), "{file}");
        assert!(out_of_range(
            doc.render_page(count, RenderSize::Dpi(72.0)).map(|_| ())
        ));
        assert!(out_of_range(doc.text_layer(count).map(|_| ())));
    }
}

#[test]
fn a_render_too_large_is_refused_before_allocating() {
    init_pdfium();
    let doc = Document::open(&fixture(PAPER), None).unwrap();
    // US Letter at 2400 dpi is 20400 x 26400 px: over 16384 px a side.
    match doc.render_page(0, RenderSize::Dpi(2400.0)) {
        Err(PdfError::PageTooLarge {
            page: 0,
            width: 20400,
            height: 26400,
        }) => {}
        other => panic!(
            "expected PageTooLarge, got {:?}",
            other.map(|i| i.dimensions())
        ),
    }
}

#[test]
fn pdf_errors_read_as_advice() {
    let required = PdfError::PasswordRequired.to_string();
    assert!(required.contains("password"), "{required}");
    let too_large = PdfError::PageTooLarge {
        page: 0,
        width: 20400,
        height: 26400,
    }
    .to_string();
    assert!(too_large.contains("page 1") && too_large.contains("20400x26400"));
}
