//! Page images: EXIF orientation, sniffing by content, sizes.

mod common;

use common::{fixture, init_pdfium};
use deepread_pdf::{Document, DocumentKind, RenderSize};
use image::RgbImage;

const PHOTO: &str = "grounding/with_source/halllo_taxi_receipt/input.jpg";

/// The photo's EXIF orientation entry as it is in the file (big-endian TIFF): tag 0x0112, type
/// SHORT, count 1, value 1 (upright).
const ORIENTATION_ENTRY: [u8; 10] = [0x01, 0x12, 0x00, 0x03, 0, 0, 0, 1, 0x00, 0x01];

/// The photo with its orientation tag set to `value` (TIFF/EXIF 2.3, tag 274).
fn photo_with_orientation(value: u8) -> Vec<u8> {
    let mut bytes = std::fs::read(fixture(PHOTO)).unwrap();
    let at = bytes
        .windows(ORIENTATION_ENTRY.len())
        .position(|w| w == ORIENTATION_ENTRY)
        .expect("the photo's EXIF orientation entry");
    bytes[at + 9] = value;
    bytes
}

fn upright(bytes: Vec<u8>) -> RgbImage {
    init_pdfium();
    let doc = Document::from_bytes(bytes, None).unwrap();
    doc.render_page(0, RenderSize::Dpi(72.0)).unwrap()
}

#[test]
fn exif_orientation_6_is_shown_turned_clockwise() {
    let stored = upright(photo_with_orientation(1));
    let shown = upright(photo_with_orientation(6));
    // EXIF 6: the stored 0th row is the visual right side, so the display is the stored image
    // turned 90 degrees clockwise: shown(x, y) = stored(y, H - 1 - x).
    assert_eq!(
        shown.dimensions(),
        (stored.height(), stored.width()),
        "width and height swap"
    );
    let h = stored.height();
    for (x, y) in [(0, 0), (10, 700), (1535, 2047), (800, 1000)] {
        assert_eq!(
            shown.get_pixel(x, y),
            stored.get_pixel(y, h - 1 - x),
            "at {x},{y}"
        );
    }
}

#[test]
fn exif_orientation_3_is_shown_upside_down() {
    let stored = upright(photo_with_orientation(1));
    let shown = upright(photo_with_orientation(3));
    let (w, h) = stored.dimensions();
    assert_eq!(shown.dimensions(), (w, h));
    for (x, y) in [(0, 0), (10, 700), (2047, 1535), (800, 1000)] {
        assert_eq!(
            shown.get_pixel(x, y),
            stored.get_pixel(w - 1 - x, h - 1 - y)
        );
    }
}

#[test]
fn page_size_of_a_rotated_photo_is_its_upright_size() {
    init_pdfium();
    let doc = Document::from_bytes(photo_with_orientation(6), None).unwrap();
    let size = doc.page_size(0).unwrap();
    assert_eq!((size.width_pt, size.height_pt), (1536.0, 2048.0));
}

#[test]
fn content_decides_the_kind_not_the_name() {
    init_pdfium();
    let dir = tempfile::tempdir().unwrap();
    let disguised = dir.path().join("scan.pdf");
    std::fs::copy(fixture(PHOTO), &disguised).unwrap();
    assert_eq!(
        Document::open(&disguised, None).unwrap().kind(),
        DocumentKind::Image
    );
    let paper = dir.path().join("paper.png");
    std::fs::copy(fixture("pdfs/slides/zerox__0013_slides.pdf"), &paper).unwrap();
    assert_eq!(
        Document::open(&paper, None).unwrap().kind(),
        DocumentKind::Pdf
    );
}

#[test]
fn fit_keeps_the_aspect_ratio_inside_the_box() {
    init_pdfium();
    let doc = Document::open(&fixture(PHOTO), None).unwrap();
    // 2048 x 1536 into 1000 x 1000: width-bound, 1000 x 750.
    let img = doc
        .render_page(
            0,
            RenderSize::Fit {
                max_width: 1000,
                max_height: 1000,
            },
        )
        .unwrap();
    assert_eq!(img.dimensions(), (1000, 750));
}

#[test]
fn a_reader_sees_a_photo_at_its_own_pixels_and_a_pdf_page_at_the_resolution_asked() {
    init_pdfium();
    let reader = RenderSize::Native { pdf_dpi: 144.0 };
    let photo = Document::open(&fixture(PHOTO), None).unwrap();
    let seen = photo.render_page(0, reader).unwrap();
    // The JPEG's own 2048 x 1536, not twice that: an image has no page size to scale by a resolution.
    assert_eq!(seen.dimensions(), (2048, 1536));
    assert_eq!(seen, photo.render_page(0, RenderSize::Dpi(72.0)).unwrap());

    let slides = Document::open(&fixture("pdfs/slides/zerox__0013_slides.pdf"), None).unwrap();
    assert_eq!(
        slides.render_page(0, reader).unwrap(),
        slides.render_page(0, RenderSize::Dpi(144.0)).unwrap()
    );
}
