//! Our renders against poppler's `pdftoppm` on the same pages: same size, and close in pixels.

mod common;

use std::path::Path;

use common::{fixture, init_pdfium, poppler};
use deepread_pdf::{Document, RenderSize};
use image::RgbImage;

/// Mean absolute difference per channel (0..255 levels, over 4x4-pixel block averages) that two
/// correct renders of one page may differ by. PDFium (AGG) and poppler (Splash) anti-alias and hint
/// glyphs differently; block averaging removes most of that, and the matching pages below measured
/// 1.2 to 4.6. The same page upside down measures about 35 (see
/// `a_wrong_rotation_is_far_beyond_the_threshold`), so 8 separates the two with room on both sides.
const MAX_MEAN_DIFF: f64 = 8.0;

fn poppler_render(path: &Path, page: usize, dpi: u32, password: Option<&str>) -> RgbImage {
    let out = tempfile::tempdir().unwrap();
    let prefix = out.path().join("page");
    let page = (page + 1).to_string();
    let dpi = dpi.to_string();
    let mut args = vec!["-r", &dpi, "-png", "-f", &page, "-l", &page, "-singlefile"];
    if let Some(pw) = password {
        args.extend(["-upw", pw]);
    }
    let path_str = path.to_str().unwrap();
    let prefix_str = prefix.to_str().unwrap();
    args.extend([path_str, prefix_str]);
    poppler("pdftoppm", &args);
    image::open(prefix.with_extension("png")).unwrap().to_rgb8()
}

/// Over the area both images cover (they may differ by one pixel in a side).
fn mean_abs_diff(a: &RgbImage, b: &RgbImage) -> f64 {
    let width = a.width().min(b.width());
    let height = a.height().min(b.height());
    let mut total: u64 = 0;
    for y in 0..height {
        for x in 0..width {
            let (pa, pb) = (a.get_pixel(x, y), b.get_pixel(x, y));
            for c in 0..3 {
                total += u64::from(pa[c].abs_diff(pb[c]));
            }
        }
    }
    total as f64 / (f64::from(width) * f64::from(height) * 3.0)
}

/// Each channel averaged over 4x4 blocks: glyph anti-aliasing differences average out, layout
/// (what is drawn where) stays.
fn blocks(img: &RgbImage) -> RgbImage {
    const B: u32 = 4;
    let (w, h) = (img.width() / B, img.height() / B);
    RgbImage::from_fn(w, h, |bx, by| {
        let mut sum = [0u32; 3];
        for y in by * B..(by + 1) * B {
            for x in bx * B..(bx + 1) * B {
                let p = img.get_pixel(x, y);
                for c in 0..3 {
                    sum[c] += u32::from(p[c]);
                }
            }
        }
        image::Rgb(sum.map(|s| (s / (B * B)) as u8))
    })
}

/// Renders `page` with both and checks size and pixels; returns the measured difference.
fn compare(relative: &str, page: usize, dpi: u32, password: Option<&str>) -> f64 {
    init_pdfium();
    let path = fixture(relative);
    let doc = Document::open(&path, password).unwrap();
    let ours = doc.render_page(page, RenderSize::Dpi(dpi as f32)).unwrap();
    let theirs = poppler_render(&path, page, dpi, password);
    assert!(
        ours.width().abs_diff(theirs.width()) <= 1 && ours.height().abs_diff(theirs.height()) <= 1,
        "{relative} p{page} @{dpi}: ours {}x{}, pdftoppm {}x{}",
        ours.width(),
        ours.height(),
        theirs.width(),
        theirs.height()
    );
    let raw = mean_abs_diff(&ours, &theirs);
    let diff = mean_abs_diff(&blocks(&ours), &blocks(&theirs));
    eprintln!("{relative} p{page} @{dpi} dpi: mean |diff| = {diff:.2} (raw {raw:.2})");
    assert!(
        diff < MAX_MEAN_DIFF,
        "{relative} p{page} @{dpi}: mean difference {diff:.2} levels"
    );
    diff
}

#[test]
fn born_digital_paper_page_matches_at_72_dpi() {
    compare(
        "pdfs/born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf",
        0,
        72,
        None,
    );
}

#[test]
fn born_digital_paper_page_matches_at_144_dpi() {
    compare(
        "pdfs/born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf",
        0,
        144,
        None,
    );
}

#[test]
fn scanned_page_matches() {
    compare("pdfs/scanned_image_only/docling__ocr_test.pdf", 0, 72, None);
}

#[test]
fn rotated_page_matches() {
    compare("pdfs/rotated/olmocr__edgar-rotated90.pdf", 0, 72, None);
}

#[test]
fn scanned_pages_with_each_rotate_value_match() {
    // Pages 1-4 carry /Rotate 0, 180, 90, 270.
    for page in 0..4 {
        compare(
            "pdfs/scanned_image_only/docling__nemotron_multipage.pdf",
            page,
            72,
            None,
        );
    }
}

#[test]
fn slide_matches() {
    compare("pdfs/slides/zerox__0013_slides.pdf", 0, 72, None);
}

#[test]
fn form_fields_are_drawn_like_a_viewer() {
    // An AcroForm with highlighted text fields and check boxes, drawn by both.
    compare(
        "pdfs/forms_invoices/pdfjs__160F-2019_french_tax_form.pdf",
        0,
        72,
        None,
    );
}

#[test]
fn encrypted_page_matches_with_its_password() {
    compare(
        "pdfs/encrypted/docling__2206.01062_pg3_password.pdf",
        0,
        72,
        Some("1234"),
    );
}

#[test]
fn a_wrong_rotation_is_far_beyond_the_threshold() {
    // The negative control: the same page rendered upside down must not pass as a match.
    init_pdfium();
    let path = fixture("pdfs/rotated/olmocr__edgar-rotated90.pdf");
    let doc = Document::open(&path, None).unwrap();
    let ours = doc.render_page(0, RenderSize::Dpi(72.0)).unwrap();
    let theirs = poppler_render(&path, 0, 72, None);
    let upside_down = image::imageops::rotate180(&ours);
    let diff = mean_abs_diff(&blocks(&upside_down), &blocks(&theirs));
    eprintln!("upside-down control: {diff:.2}");
    assert!(
        diff > 2.0 * MAX_MEAN_DIFF,
        "an upside-down render differs by only {diff:.2} levels: the threshold cannot tell"
    );
}
