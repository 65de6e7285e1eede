//! The ruling lines the text layer reports, held against the page as PDFium renders it: every rule lies on
//! drawn pixels (a stroke, or the edge of a shaded box), and every long straight line the render shows is
//! among the rules.

mod common;

use common::{fixture, init_pdfium};
use deepread_pdf::{Document, RenderSize, Rule};
use image::RgbImage;

/// Pixels per point at 288 dpi.
const SCALE: f32 = 4.0;
/// A line this long in the render (points) can only be a drawn rule, never text.
const LONG_LINE_PT: f32 = 80.0;

fn rules_and_render(relative: &str) -> (Vec<Rule>, RgbImage) {
    init_pdfium();
    let document = Document::open(&fixture(relative), None).unwrap();
    let rules = document.text_layer(0).unwrap().rules;
    let render = document
        .render_page(0, RenderSize::Dpi(72.0 * SCALE))
        .unwrap();
    (rules, render)
}

/// Not the white of the page: a stroke, or a shaded box whose edge the rule is.
const INKED: u8 = 235;

fn inked(image: &RgbImage, x: f32, y: f32) -> bool {
    let (px, py) = ((x * SCALE) as i64, (y * SCALE) as i64);
    // Anti-aliasing spreads a thin rule over neighbouring pixels: any of three across it will do.
    (-1..=1).any(|d| {
        let (x, y) = (
            px.clamp(0, image.width() as i64 - 1),
            (py + d).clamp(0, image.height() as i64 - 1),
        );
        image
            .get_pixel(x as u32, y as u32)
            .0
            .iter()
            .min()
            .is_some_and(|v| *v < INKED)
    })
}

fn inked_across(image: &RgbImage, x: f32, y: f32) -> bool {
    let (px, py) = ((x * SCALE) as i64, (y * SCALE) as i64);
    (-1..=1).any(|d| {
        let (x, y) = (
            (px + d).clamp(0, image.width() as i64 - 1),
            py.clamp(0, image.height() as i64 - 1),
        );
        image
            .get_pixel(x as u32, y as u32)
            .0
            .iter()
            .min()
            .is_some_and(|v| *v < INKED)
    })
}

fn assert_rules_are_drawn(rules: &[Rule], render: &RgbImage) {
    for rule in rules {
        let samples: Vec<f32> = (1..20)
            .map(|i| rule.from + rule.len() * i as f32 / 20.0)
            .collect();
        let drawn = samples
            .iter()
            .filter(|&&along| {
                if rule.horizontal {
                    inked(render, along, rule.at)
                } else {
                    inked_across(render, rule.at, along)
                }
            })
            .count();
        assert!(drawn >= 17, "{rule:?}: {drawn} of 19 samples drawn");
    }
}

/// The y (points) of every pixel row holding a dark run longer than `LONG_LINE_PT`.
fn long_horizontal_lines(render: &RgbImage) -> Vec<f32> {
    let min_run = (LONG_LINE_PT * SCALE) as u32;
    (0..render.height())
        .filter(|&y| {
            let mut run = 0;
            (0..render.width()).any(|x| {
                let is_dark = render
                    .get_pixel(x, y)
                    .0
                    .iter()
                    .min()
                    .is_some_and(|v| *v < 100);
                run = if is_dark { run + 1 } else { 0 };
                run >= min_run
            })
        })
        .map(|y| y as f32 / SCALE)
        .collect()
}

fn check(relative: &str, min_across: usize, min_down: usize) {
    let (rules, render) = rules_and_render(relative);
    let across = rules.iter().filter(|r| r.horizontal).count();
    let down = rules.len() - across;
    assert!(
        across >= min_across && down >= min_down,
        "{across} horizontal and {down} vertical rules: {rules:?}"
    );
    assert_rules_are_drawn(&rules, &render);
    for y in long_horizontal_lines(&render) {
        assert!(
            rules
                .iter()
                .any(|r| r.horizontal && (r.at - y).abs() <= 1.5 && r.len() >= LONG_LINE_PT),
            "a line drawn at y = {y} pt is not among the rules: {rules:?}"
        );
    }
}

#[test]
fn a_papers_ruled_table_has_its_rules_where_the_page_draws_them() {
    // The table of 2305.03393v1 page 9: six full rules, one under the spanning header, seven down.
    check(
        "pdfs/born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf",
        7,
        7,
    );
}

#[test]
fn a_quotations_grid_has_its_rules_where_the_page_draws_them() {
    check(
        "pdfs/forms_invoices/zerox__0017_japanese_quotation.pdf",
        20,
        10,
    );
}
