//! Every real fixture file opens and renders every page, or fails with the error its table row
//! names. Page counts and passwords come from the fixtures' index.json, or from poppler's pdfinfo
//! where the index has none; image sizes from ImageMagick's `identify`. The tests also re-check the
//! table against index.json and pdfinfo at run time, so a stale row fails loudly.

mod common;

use common::{
    files_under, fixture, index_entry, init_pdfium, pdfinfo_pages, poppler, sha256sum, within,
};
use deepread_pdf::{Document, DocumentKind, PdfError, RenderSize};

#[derive(Debug, Clone, Copy)]
enum Expect {
    /// A PDF with this many pages (and the password that opens it, if encrypted).
    Pdf {
        pages: usize,
        password: Option<&'static str>,
    },
    /// A page image of this size in pixels, upright.
    Image { width: u32, height: u32 },
    /// Cut inside a stream with no xref or trailer: index.json's parse_error, and pdfinfo says
    /// "Couldn't read page catalog".
    Corrupt,
}

use Expect::*;

const fn pdf(pages: usize) -> Expect {
    Pdf {
        pages,
        password: None,
    }
}

const TABLE: &[(&str, Expect)] = &[
    ("pdfs/born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf", pdf(1)),
    ("pdfs/born_digital_papers_math_tables/docling__code_and_formula.pdf", pdf(2)),
    ("pdfs/born_digital_papers_math_tables/olmocr__math_2503_04086.pdf", pdf(1)),
    ("pdfs/born_digital_papers_math_tables/olmocr__mathfuncs.pdf", pdf(1)),
    ("pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf", pdf(14)),
    ("pdfs/born_digital_papers_math_tables/zerox__0004_react_paper.pdf", pdf(3)),
    (
        "pdfs/encrypted/docling__2206.01062_pg3_password.pdf",
        Pdf {
            pages: 1,
            password: Some("1234"),
        },
    ),
    (
        "pdfs/encrypted/pypdf__crazyones-encrypted-256.pdf",
        Pdf {
            pages: 1,
            password: Some("password"),
        },
    ),
    ("pdfs/forms_invoices/pdfjs__160F-2019_french_tax_form.pdf", pdf(1)),
    ("pdfs/forms_invoices/pypdf__SF424_page2.pdf", pdf(1)),
    ("pdfs/forms_invoices/zerox__0016_product_label.pdf", pdf(1)),
    ("pdfs/forms_invoices/zerox__0017_japanese_quotation.pdf", pdf(1)),
    // XFA-only: the page opens and renders (blank is fine).
    ("pdfs/malformed/pdfium__simple_xfa.pdf", pdf(1)),
    ("pdfs/malformed/pdfjs__bug1020226_truncated.pdf", Corrupt),
    // Junk before %PDF and no startxref value: pdfinfo recovers it as 1 page of 400 x 50 pt.
    ("pdfs/malformed/pdfjs__issue6069_junk_before_header.pdf", pdf(1)),
    ("pdfs/multi_column_layout/docling__amt_handbook_sample.pdf", pdf(1)),
    ("pdfs/multi_column_layout/docling__redp5110_sampled.pdf", pdf(18)),
    ("pdfs/multi_column_layout/docling__table_mislabeled_as_picture.pdf", pdf(1)),
    ("pdfs/multi_column_layout/olmocr__multi_column_miss.pdf", pdf(1)),
    ("pdfs/non_english/cloudman6__chinese_medical_report.pdf", pdf(6)),
    ("pdfs/non_english/docling__normal_4pages_korean.pdf", pdf(4)),
    ("pdfs/non_english/docling__right_to_left_01_arabic.pdf", pdf(1)),
    ("pdfs/rotated/olmocr__edgar-rotated90.pdf", pdf(1)),
    ("pdfs/scanned_image_only/docling__nemotron_multipage.pdf", pdf(4)),
    ("pdfs/scanned_image_only/docling__ocr_test.pdf", pdf(1)),
    ("pdfs/scanned_image_only/olmocr__handwriting_bad_ocr.pdf", pdf(2)),
    ("pdfs/scanned_image_only/pypdf__Seige_of_Vicksburg_Sample_OCR.pdf", pdf(6)),
    ("pdfs/scanned_image_only/zerox__0002_scanned_signin_sheet.pdf", pdf(1)),
    ("pdfs/slides/zerox__0013_slides.pdf", pdf(3)),
    // Grounding inputs. Page counts from pdfinfo (index.json has none for these).
    ("grounding/with_source/docling_md_deepseek/2305.03393v1-pg9.pdf", pdf(1)),
    ("grounding/with_source/xiongpu1_agent/vastera_manual/source.pdf", pdf(25)),
    ("grounding/with_source/thukiy_R-G-/exercises/Uebungsblatt-CDS-Mathe1_Ana10_Loesungen_p001/input_page.pdf", pdf(1)),
    ("grounding/with_source/thukiy_R-G-/exercises/Uebungsblatt-CDS-Mathe1_Ana10_Loesungen_p003/input_page.pdf", pdf(1)),
    ("grounding/with_source/thukiy_R-G-/exercises/Uebungsblatt-CDS-Mathe1_Ana10_Loesungen_p005/input_page.pdf", pdf(1)),
    ("grounding/with_source/thukiy_R-G-/exercises/Uebungsblatt-CDS-Mathe1_Ana10_Loesungen_p008/input_page.pdf", pdf(1)),
    ("grounding/with_source/thukiy_R-G-/exercises/Uebungsblatt-CDS-Mathe1_Ana6_Loesungen_p001/input_page.pdf", pdf(1)),
    ("grounding/with_source/thukiy_R-G-/exercises/Uebungsblatt-CDS-Mathe1_Ana9_Loesungen_p006/input_page.pdf", pdf(1)),
    ("grounding/with_source/thukiy_R-G-/exercises/Uebungsblatt_CDS_Mathe1_LA4_Loesungen_p015/input_page.pdf", pdf(1)),
    ("grounding/with_source/thukiy_R-G-/exercises/Uebungsblatt_CDS_Mathe1_Sto_6_Loesungen_p001/input_page.pdf", pdf(1)),
    ("grounding/with_source/thukiy_R-G-/exercises/Uebungsblatt_CDS_Mathe2_Ana9_Loesungen_p010/input_page.pdf", pdf(1)),
    ("grounding/with_source/thukiy_R-G-/exercises/Uebungsblatt_CDS_Mathe3_Sto_5_Loesungen_p003/input_page.pdf", pdf(1)),
    // Page images; the 2-frame TIFF reads as its first frame.
    ("grounding/with_source/docling_md_deepseek/2206.01062.tif", Image { width: 612, height: 792 }),
    ("grounding/with_source/docling_md_deepseek/2305.03393v1-pg9.png", Image { width: 1275, height: 1650 }),
    ("grounding/with_source/halllo_taxi_receipt/input.jpg", Image { width: 2048, height: 1536 }),
    ("grounding/with_source/halllo_taxi_receipt/annotated.jpg", Image { width: 2048, height: 1536 }),
    ("grounding/with_source/xiongpu1_agent/vastera_manual/page009.result_with_boxes.jpg", Image { width: 1170, height: 1654 }),
    ("grounding/with_source/xiongpu1_agent/vastera_manual/page015.result_with_boxes.jpg", Image { width: 1170, height: 1654 }),
    ("grounding/with_source/xiongpu1_agent/images/Atlantic20/input.png", Image { width: 2500, height: 985 }),
    ("grounding/with_source/xiongpu1_agent/images/20260104165858_1006_20/input.png", Image { width: 882, height: 1172 }),
    ("grounding/with_source/xiongpu1_agent/images/85aecd60-1f6d-41fb-b7ad-/input.png", Image { width: 626, height: 626 }),
    ("grounding/with_source/thukiy_R-G-/theory/mathe_theorie-67/input.jpg", Image { width: 2183, height: 3086 }),
    ("grounding/with_source/thukiy_R-G-/theory/mathe_3_theorie-55/input.jpg", Image { width: 2182, height: 3086 }),
    ("grounding/with_source/thukiy_R-G-/theory/mathe_theorie-03/input.jpg", Image { width: 3520, height: 1980 }),
    ("grounding/with_source/thukiy_R-G-/theory/mathe_theorie-64/input.jpg", Image { width: 2183, height: 3086 }),
    ("grounding/with_source/thukiy_R-G-/theory/mathe_2_theorie-21/input.jpg", Image { width: 2183, height: 3086 }),
    ("grounding/with_source/thukiy_R-G-/theory/mathe_theorie-04/input.jpg", Image { width: 3520, height: 1980 }),
];

/// Renders are small: this checks that every page renders, not how well (render_vs_poppler does).
const CHECK_DPI: f32 = 36.0;

/// Generous: the slowest file (25 pages) takes well under a second in a debug build.
const PER_FILE_SECONDS: u64 = 120;

#[test]
fn the_table_covers_every_fixture_file() {
    let mut on_disk = files_under("pdfs", &|name| name.ends_with(".pdf"));
    on_disk.extend(files_under("grounding", &|name| {
        [".pdf", ".jpg", ".png", ".tif"]
            .iter()
            .any(|ext| name.ends_with(ext))
    }));
    on_disk.sort();
    let mut in_table: Vec<String> = TABLE.iter().map(|(f, _)| f.to_string()).collect();
    in_table.sort();
    assert_eq!(on_disk, in_table);
}

#[test]
fn the_table_agrees_with_index_json() {
    for (file, expect) in TABLE {
        let Some(entry) = index_entry(file) else {
            continue; // derived or unlisted grounding files: checked against pdfinfo instead
        };
        match expect {
            Pdf { pages, password } => {
                if let Some(listed) = entry["pages"].as_u64() {
                    assert_eq!(listed as usize, *pages, "{file}: pages");
                }
                assert_eq!(entry["password"].as_str(), *password, "{file}: password");
            }
            Corrupt => assert!(entry["parse_error"].is_string(), "{file}"),
            Image { .. } => {}
        }
    }
}

#[test]
fn every_pdf_has_pdfinfos_page_count_and_sizes_after_rotation() {
    init_pdfium();
    for (file, expect) in TABLE {
        let Pdf { pages, password } = *expect else {
            continue;
        };
        let path = fixture(file);
        let reference = pdfinfo_pages(&path, password);
        assert_eq!(reference.len(), pages, "{file}: table vs pdfinfo");
        let doc = Document::open(&path, password).unwrap();
        assert_eq!(doc.page_count(), pages, "{file}");
        for (index, (w, h, rot)) in reference.into_iter().enumerate() {
            let (w, h) = if rot % 180 == 90 { (h, w) } else { (w, h) };
            let size = doc.page_size(index).unwrap();
            assert!(
                (size.width_pt - w).abs() < 0.5 && (size.height_pt - h).abs() < 0.5,
                "{file} page {index}: ours {size:?}, pdfinfo {w} x {h} rot {rot}"
            );
        }
    }
}

#[test]
fn every_pdf_renders_every_page_and_reads_its_text_layer() {
    init_pdfium();
    for (file, expect) in TABLE {
        let Pdf { pages, password } = *expect else {
            continue;
        };
        let path = fixture(file);
        let name = file.to_string();
        within(PER_FILE_SECONDS, file, move || {
            let doc = Document::open(&path, password).unwrap();
            assert_eq!(doc.kind(), DocumentKind::Pdf);
            for index in 0..pages {
                let size = doc.page_size(index).unwrap();
                let img = doc.render_page(index, RenderSize::Dpi(CHECK_DPI)).unwrap();
                let scale = CHECK_DPI / 72.0;
                assert!(
                    (img.width() as f32 - size.width_pt * scale).abs() <= 1.0
                        && (img.height() as f32 - size.height_pt * scale).abs() <= 1.0,
                    "{name} page {index}: {}x{} for {size:?}",
                    img.width(),
                    img.height()
                );
                doc.text_layer(index).unwrap();
            }
        });
    }
}

#[test]
fn every_image_opens_upright_at_one_point_per_pixel() {
    init_pdfium();
    for (file, expect) in TABLE {
        let Image { width, height } = *expect else {
            continue;
        };
        let path = fixture(file);
        let name = file.to_string();
        within(PER_FILE_SECONDS, file, move || {
            let doc = Document::open(&path, None).unwrap();
            assert_eq!(doc.kind(), DocumentKind::Image, "{name}");
            assert_eq!(doc.page_count(), 1);
            let size = doc.page_size(0).unwrap();
            assert_eq!(
                (size.width_pt, size.height_pt),
                (width as f32, height as f32),
                "{name}"
            );
            let img = doc.render_page(0, RenderSize::Dpi(72.0)).unwrap();
            assert_eq!(img.dimensions(), (width, height), "{name}");
            let small = doc.render_page(0, RenderSize::Width(300)).unwrap();
            assert_eq!(small.width(), 300);
            assert!(doc.text_layer(0).unwrap().words.is_empty());
            assert_eq!(doc.title(), None);
        });
    }
}

#[test]
fn files_that_must_fail_fail_with_their_typed_error() {
    init_pdfium();
    for (file, expect) in TABLE {
        if !matches!(expect, Corrupt) {
            continue;
        }
        let path = fixture(file);
        let result = within(PER_FILE_SECONDS, file, move || Document::open(&path, None));
        assert!(
            matches!(result, Err(PdfError::Corrupt { .. })),
            "{file}: {result:?}"
        );
    }
}

#[test]
fn encrypted_files_need_their_password() {
    init_pdfium();
    for (file, expect) in TABLE {
        let Pdf {
            password: Some(password),
            ..
        } = *expect
        else {
            continue;
        };
        let path = fixture(file);
        let without = Document::open(&path, None);
        assert!(
            matches!(without, Err(PdfError::PasswordRequired)),
            "{file}: {without:?}"
        );
        let wrong = Document::open(&path, Some("not-the-password"));
        assert!(
            matches!(wrong, Err(PdfError::WrongPassword)),
            "{file}: {wrong:?}"
        );
        let right = Document::open(&path, Some(password)).unwrap();
        right.render_page(0, RenderSize::Dpi(CHECK_DPI)).unwrap();
        // Known before the password: what a remembered password is found by.
        assert_eq!(
            Document::hash_of_file(&path).unwrap(),
            right.content_hash(),
            "{file}"
        );
    }
}

#[test]
fn content_hash_is_sha256sum_and_matches_the_index() {
    init_pdfium();
    for (file, expect) in TABLE {
        if matches!(expect, Corrupt) {
            continue;
        }
        let password = match expect {
            Pdf { password, .. } => *password,
            _ => None,
        };
        let path = fixture(file);
        let doc = Document::open(&path, password).unwrap();
        assert_eq!(doc.content_hash(), sha256sum(&path), "{file}");
        if let Some(entry) = index_entry(file) {
            assert_eq!(Some(doc.content_hash()), entry["sha256"].as_str(), "{file}");
        }
    }
}

#[test]
fn titles_are_what_pdfinfo_reports() {
    init_pdfium();
    for (file, expect) in TABLE {
        let Pdf { password, .. } = *expect else {
            continue;
        };
        let path = fixture(file);
        let mut args = vec![];
        if let Some(pw) = password {
            args.extend(["-upw", pw]);
        }
        args.push(path.to_str().unwrap());
        let info = poppler("pdfinfo", &args);
        let expected = info
            .lines()
            .find_map(|l| l.strip_prefix("Title:"))
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        let doc = Document::open(&path, password).unwrap();
        assert_eq!(doc.title(), expected, "{file}");
    }
}
