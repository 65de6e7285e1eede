//! Exporting a real reading: real PDF pages rendered with PDFium, blocks from the real DeepSeek-OCR
//! output captured for those pages (xiongpu1_agent's Vastera manual, rendered by them at 200 dpi).
//!
//! Needs PDFium: set DEEPREAD_PDFIUM to libpdfium.so (or run `make deps`).

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{grounding_dir, manual_capture, manual_dir, raw_of_stdout_capture, read, read_page};
use deepread_core::export::{
    write_html, write_json, write_markdown, DocumentExport, EpubChapters, ExportChoice,
    ExportFormat, PageExport, PageStatus, FIGURE_DPI,
};
use deepread_core::{Block, PageStats};
use deepread_pdf::Document;
use serde_json::Value;

const SPLIT: &str = "\n\n<--- Page Split --->\n";

fn open_manual() -> Document {
    let path = manual_dir().join("source.pdf");
    assert!(path.is_file(), "missing fixture {}", path.display());
    Document::open(&path, None).unwrap()
}

fn image_blocks(page: &PageExport) -> Vec<&Block> {
    page.blocks.iter().filter(|b| b.label == "image").collect()
}

/// Targets of `![](…)` links, in order.
fn figure_links(markdown: &str) -> Vec<String> {
    markdown
        .split("![](")
        .skip(1)
        .map(|rest| rest[..rest.find(')').unwrap()].to_owned())
        .collect()
}

fn files_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Pages 9 and 15 of the manual (indices 8 and 14): a photo beside a spec sheet, and a grid of
/// photos with centred captions.
fn manual_pages() -> Vec<PageExport> {
    vec![
        read_page(8, &manual_capture(9)),
        read_page(14, &manual_capture(15)),
    ]
}

#[test]
fn markdown_export_writes_the_pages_and_exactly_the_linked_figures() {
    let document = open_manual();
    let pages = manual_pages();
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "Vastera manual".into(),
        pages: pages.clone(),
    };
    let summary = write_markdown(&export, out.path(), "manual").unwrap();

    let markdown = read(&out.path().join("manual.md"));
    // One section per page of the document, each followed by the reference's page marker.
    let sections: Vec<&str> = markdown.split(SPLIT).collect();
    assert_eq!(sections.len(), document.page_count() + 1);
    assert_eq!(sections.last(), Some(&""));
    for (index, section) in sections[..document.page_count()].iter().enumerate() {
        match pages.iter().find(|p| p.index == index) {
            Some(page) => assert_eq!(*section, page.markdown, "page {index}"),
            None => assert!(section.is_empty(), "page {index} was not read"),
        }
    }

    // Every figure the model marked is written once, and the Markdown links exactly those files.
    let marked: usize = [9, 15]
        .iter()
        .map(|n| manual_capture(*n).matches("<|ref|>image<|/ref|>").count())
        .sum();
    assert!(marked >= 5, "the fixture pages have figures");
    assert_eq!(summary.figures, marked);
    let links: BTreeSet<String> = figure_links(&markdown).into_iter().collect();
    let files: BTreeSet<String> = files_in(&out.path().join("images"))
        .into_iter()
        .map(|name| format!("images/{name}"))
        .collect();
    assert_eq!(links, files);
    assert_eq!(links.len(), marked);
    assert!(links.contains("images/8_0.png") && links.contains("images/14_0.png"));
}

#[test]
fn each_crop_is_its_box_at_the_render_resolution() {
    let document = open_manual();
    let pages = manual_pages();
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "Vastera manual".into(),
        pages: pages.clone(),
    };
    write_markdown(&export, out.path(), "manual").unwrap();

    for page in &pages {
        let size = document.page_size(page.index).unwrap();
        let scale = f64::from(FIGURE_DPI) / 72.0;
        let page_w = (f64::from(size.width_pt) * scale).round();
        let page_h = (f64::from(size.height_pt) * scale).round();
        for (n, block) in image_blocks(page).iter().enumerate() {
            assert_eq!(block.boxes.len(), 1);
            let b = block.boxes[0];
            let want_w = f64::from(b.x2 - b.x1) / 999.0 * page_w;
            let want_h = f64::from(b.y2 - b.y1) / 999.0 * page_h;
            let path = out.path().join(format!("images/{}_{n}.png", page.index));
            let (w, h) = image::image_dimensions(&path).unwrap();
            assert!(
                (f64::from(w) - want_w).abs() <= 1.0 && (f64::from(h) - want_h).abs() <= 1.0,
                "{}: {w}x{h}, box is {want_w:.1}x{want_h:.1}",
                path.display()
            );
        }
    }
}

#[test]
fn a_crop_shows_the_page_under_its_box() {
    let document = open_manual();
    let page = read_page(8, &manual_capture(9));
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "Vastera manual".into(),
        pages: vec![page.clone()],
    };
    write_markdown(&export, out.path(), "manual").unwrap();

    // The same regions cut independently from a render at the export's resolution. (Looked at:
    // 8_0 is the spa photo under the model's first box, 8_1 the pump bay, as in the reference's
    // page009.result_with_boxes.jpg.)
    let render = document
        .render_page(8, deepread_pdf::RenderSize::Dpi(FIGURE_DPI))
        .unwrap();
    let px = |v: u16, side: u32| (f64::from(v) / 999.0 * f64::from(side)) as u32;
    let blocks = image_blocks(&page);
    assert_eq!(blocks.len(), 2);
    for (n, block) in blocks.iter().enumerate() {
        let b = block.boxes[0];
        let (x, y) = (px(b.x1, render.width()), px(b.y1, render.height()));
        let crop = image::open(out.path().join(format!("images/8_{n}.png")))
            .unwrap()
            .to_rgb8();
        let differing = crop
            .enumerate_pixels()
            .filter(|(cx, cy, pixel)| render.get_pixel(x + cx, y + cy) != *pixel)
            .count();
        assert_eq!(differing, 0, "figure {n}");
        // A photo has thousands of colours; blank paper or a rule has a handful.
        let colours: BTreeSet<[u8; 3]> = crop.pixels().map(|p| p.0).collect();
        assert!(
            colours.len() > 1000,
            "figure {n} has {} colours",
            colours.len()
        );
    }
}

#[test]
fn json_sidecar_has_every_block_in_both_coordinate_systems() {
    let document = open_manual();
    let mut pages = manual_pages();
    pages[0].stats = Some(PageStats {
        prompt_tokens: 1121,
        generated_tokens: 640,
        vision_ms: 1,
        prefill_ms: 2,
        decode_ms: 3,
        tokens_per_s: 4.0,
        recognizer: "DeepSeek-OCR-2".into(),
    });
    pages.push(PageExport {
        index: 2,
        status: PageStatus::Failed {
            error: "GPU out of memory".into(),
        },
        blocks: Vec::new(),
        markdown: String::new(),
        stats: None,
    });
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "Vastera \"manual\"".into(),
        pages: pages.clone(),
    };
    write_json(&export, out.path(), "manual").unwrap();
    let json: Value = serde_json::from_str(&read(&out.path().join("manual.json"))).unwrap();

    assert_eq!(json["format"], "deepread-export");
    assert_eq!(json["version"], 1);
    assert_eq!(json["document"]["title"], "Vastera \"manual\"");
    assert_eq!(json["document"]["sha256"], document.content_hash());
    assert_eq!(json["document"]["page_count"], document.page_count());
    let json_pages = json["pages"].as_array().unwrap();
    assert_eq!(json_pages.len(), document.page_count());
    assert_eq!(json_pages[0]["status"], "not_read");
    assert_eq!(json_pages[2]["status"], "failed");
    assert_eq!(json_pages[2]["reason"], "GPU out of memory");
    assert_eq!(
        json_pages[8]["read_by"],
        serde_json::json!({"recognizer": "DeepSeek-OCR-2", "prompt_tokens": 1121, "generated_tokens": 640})
    );
    assert_eq!(json_pages[0]["read_by"], Value::Null, "an unread page");
    assert_eq!(json_pages[2]["read_by"], Value::Null, "a failed page");

    for page in &pages[..2] {
        let size = document.page_size(page.index).unwrap();
        let json_page = &json_pages[page.index];
        assert_eq!(json_page["status"], "read");
        let json_blocks = json_page["blocks"].as_array().unwrap();
        assert_eq!(json_blocks.len(), page.blocks.len());
        let mut figures = 0;
        for (block, json_block) in page.blocks.iter().zip(json_blocks) {
            assert_eq!(json_block["page"], page.index);
            assert_eq!(json_block["block_id"], block.id);
            assert_eq!(json_block["label"], block.label.as_str());
            assert_eq!(json_block["markdown"], block.markdown.as_str());
            assert_eq!(json_block["warning"], Value::Null);
            for (b, (norm, pt)) in block.boxes.iter().zip(
                json_block["boxes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .zip(json_block["boxes_pt"].as_array().unwrap()),
            ) {
                assert_eq!(norm["x1"], b.x1);
                assert_eq!(norm["y2"], b.y2);
                let close = |field: &str, v: u16, side: f32| {
                    let want = f64::from(v) / 999.0 * f64::from(side);
                    let got = pt[field].as_f64().unwrap();
                    assert!((got - want).abs() < 1e-9, "{field}: {got} vs {want}");
                };
                close("x1", b.x1, size.width_pt);
                close("y1", b.y1, size.height_pt);
                close("x2", b.x2, size.width_pt);
                close("y2", b.y2, size.height_pt);
            }
            if block.label == "image" {
                assert_eq!(
                    json_block["figure"],
                    format!("images/{}_{figures}.png", page.index)
                );
                figures += 1;
            } else {
                assert_eq!(json_block["figure"], Value::Null);
            }
        }
        assert!(figures > 0);
    }
}

#[test]
fn re_export_replaces_files_and_drops_figures_that_are_gone() {
    let document = open_manual();
    let out = tempfile::tempdir().unwrap();
    let first = DocumentExport {
        section: None,
        document: &document,
        title: "Vastera manual".into(),
        pages: manual_pages(),
    };
    write_markdown(&first, out.path(), "manual").unwrap();
    write_json(&first, out.path(), "manual").unwrap();
    assert!(out.path().join("images/14_0.png").is_file());
    // A file of the user's own in the figures folder must survive.
    std::fs::write(out.path().join("images/notes.txt"), "mine").unwrap();

    let second = DocumentExport {
        section: None,
        document: &document,
        title: "Vastera manual".into(),
        pages: vec![read_page(8, &manual_capture(9))],
    };
    write_markdown(&second, out.path(), "manual").unwrap();
    write_json(&second, out.path(), "manual").unwrap();

    let markdown = read(&out.path().join("manual.md"));
    let mut expected: BTreeSet<String> = figure_links(&markdown)
        .into_iter()
        .map(|link| link.trim_start_matches("images/").to_owned())
        .collect();
    expected.insert("notes.txt".into());
    assert_eq!(files_in(&out.path().join("images")), expected);
    assert!(!markdown.contains("images/14_"));
    let json: Value = serde_json::from_str(&read(&out.path().join("manual.json"))).unwrap();
    assert_eq!(json["pages"][14]["status"], "not_read");
    // Nothing but the exports themselves: no temporary files left behind.
    assert_eq!(
        files_in(out.path()),
        BTreeSet::from(["images".into(), "manual.json".into(), "manual.md".into()])
    );
}

#[test]
fn html_export_is_standalone_and_keeps_tables_and_math() {
    let source = grounding_dir().join("with_source/docling_md_deepseek");
    let document = Document::open(&source.join("2305.03393v1-pg9.pdf"), None).unwrap();
    assert_eq!(document.page_count(), 1);
    let raw = read(&source.join("deepseek_example.output.md"));
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "Optimized Table Tokenization <for> Table Structure Recognition".into(),
        pages: vec![read_page(0, &raw)],
    };
    write_html(&export, out.path(), "paper").unwrap();
    let html = read(&out.path().join("paper.html"));

    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<title>Optimized Table Tokenization &lt;for&gt; Table"));
    assert!(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"));
    assert!(html.contains("<th rowspan=\"2\"># enc-layers</th>"));
    assert!(html.contains("<th colspan=\"3\">TEDs</th>"));
    assert_eq!(html.matches("<td").count(), raw.matches("<td").count());
    assert!(html.contains("OTSL yields a \\(2x\\) speed up"));
    assert!(html.contains("<h3>5.1 Hyper Parameter Optimization</h3>"));
}

#[test]
fn html_chosen_alone_still_writes_the_figures_it_links() {
    let document = open_manual();
    let pages = manual_pages();
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "Vastera manual".into(),
        pages,
    };
    let choice = ExportChoice {
        formats: [ExportFormat::Html].into(),
        epub_chapters: EpubChapters::Document,
    };
    let summary = choice.write(&export, out.path(), "manual").unwrap();
    assert!(
        !out.path().join("manual.md").exists(),
        "only what was chosen"
    );
    let html = read(&out.path().join("manual.html"));
    let linked: BTreeSet<String> = html
        .split("src=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect();
    let files: BTreeSet<String> = files_in(&out.path().join("images"))
        .into_iter()
        .map(|name| format!("images/{name}"))
        .collect();
    assert!(linked.len() >= 5, "{linked:?}");
    assert_eq!(linked, files);
    assert_eq!(summary.figures, files.len());
    assert_eq!(
        choice.existing_outputs(out.path(), "manual").unwrap(),
        [out.path().join("manual.html"), out.path().join("images")]
    );
}

#[test]
fn pages_outside_the_document_are_refused() {
    let document = open_manual();
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "Vastera manual".into(),
        pages: vec![read_page(40, &manual_capture(9))],
    };
    let error = write_markdown(&export, out.path(), "manual").unwrap_err();
    assert!(error.to_string().contains("page 41"), "{error}");
    assert!(!out.path().join("manual.md").exists());
    let bad_stem = DocumentExport {
        section: None,
        pages: Vec::new(),
        ..export
    };
    assert!(write_json(&bad_stem, out.path(), "../escape").is_err());
}

#[test]
fn a_page_image_is_cropped_at_its_own_pixels() {
    let dir = grounding_dir().join("with_source/xiongpu1_agent/images/20260104165858_1006_20");
    let document = Document::open(&dir.join("input.png"), None).unwrap();
    let page = read_page(0, &raw_of_stdout_capture(&read(&dir.join("stdout.md"))));
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document: &document,
        title: "photo".into(),
        pages: vec![page.clone()],
    };
    let summary = write_markdown(&export, out.path(), "photo").unwrap();
    assert_eq!(summary.figures, 1);

    // The reference crops the original image: int(v / 999 * side) on its own pixel size.
    let original = image::open(dir.join("input.png")).unwrap().to_rgb8();
    let b = image_blocks(&page)[0].boxes[0];
    let px = |v: u16, side: u32| (f64::from(v) / 999.0 * f64::from(side)) as u32;
    let (x1, y1) = (px(b.x1, original.width()), px(b.y1, original.height()));
    let (x2, y2) = (px(b.x2, original.width()), px(b.y2, original.height()));
    let want = image::imageops::crop_imm(&original, x1, y1, x2 - x1, y2 - y1).to_image();
    let crop = image::open(out.path().join("images/0_0.png"))
        .unwrap()
        .to_rgb8();
    assert_eq!(crop.dimensions(), want.dimensions());
    assert!(crop == want, "the crop differs from the original's pixels");
}

#[test]
fn an_export_of_one_page_writes_that_page_alone_and_leaves_the_others_figures() {
    let document = open_manual();
    let out = tempfile::tempdir().unwrap();
    let page_of = |section: usize| DocumentExport {
        section: Some(section),
        document: &document,
        title: "Vastera manual".into(),
        pages: manual_pages(),
    };
    write_markdown(&page_of(14), out.path(), "manual-p15").unwrap();
    write_json(&page_of(14), out.path(), "manual-p15").unwrap();
    let page_15_figures = files_in(&out.path().join("images"));
    assert!(page_15_figures.contains("14_0.png"), "{page_15_figures:?}");
    write_markdown(&page_of(8), out.path(), "manual-p09").unwrap();

    let markdown = read(&out.path().join("manual-p09.md"));
    assert_eq!(
        markdown.matches("<--- Page Split --->").count(),
        1,
        "one page"
    );
    assert_eq!(
        markdown,
        format!(
            "{}{}",
            manual_pages()[0].markdown,
            "\n\n<--- Page Split --->\n"
        )
    );
    // Page 15's figures stay beside page 9's.
    let figures = files_in(&out.path().join("images"));
    assert!(page_15_figures.is_subset(&figures), "{figures:?}");

    let json: Value = serde_json::from_str(&read(&out.path().join("manual-p15.json"))).unwrap();
    let pages = json["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 1);
    assert_eq!(pages[0]["page"], 14);
}
