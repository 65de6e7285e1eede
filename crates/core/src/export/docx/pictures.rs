//! A page's figures as Word pictures: the same crops `write_figures` saves as
//! `images/{page}_{n}.png`, embedded in the document at their size on the page, shrunk to fit the
//! text area.

use std::collections::HashMap;
use std::path::Path;

use deepread_pdf::Document;
use docx_rs::{Pic, Run};

use super::{TEXT_HEIGHT_TWIPS, TEXT_WIDTH_TWIPS};
use crate::export::figures::{crop_figure, encode_png, page_figures, render_for_figures};
use crate::export::{ExportError, PageExport};

const EMU_PER_POINT: f64 = 12_700.0;
const EMU_PER_TWIP: f64 = 635.0;

/// The figures of one page, by the link its Markdown gives them (`images/{page}_{n}.png`).
#[derive(Debug, Default)]
pub(super) struct Pictures {
    by_link: HashMap<String, Picture>,
}

#[derive(Debug)]
struct Picture {
    png: Vec<u8>,
    width_px: u32,
    height_px: u32,
    /// Size in the document, in EMU.
    width_emu: u32,
    height_emu: u32,
}

impl Pictures {
    /// Crops every figure of `page` from one render of it, as `write_figures` does.
    pub fn of_page(document: &Document, page: &PageExport) -> Result<Pictures, ExportError> {
        let figures = page_figures(page);
        if figures.is_empty() {
            return Ok(Pictures::default());
        }
        let render = render_for_figures(document, page.index)?;
        let page_width_pt = document
            .page_size(page.index)
            .map_err(|source| ExportError::PageSize {
                page: page.index,
                source,
            })?
            .width_pt;
        // Points of the page per pixel of the render: a crop keeps its size on the page.
        let points_per_px = f64::from(page_width_pt) / f64::from(render.width().max(1));
        let mut by_link = HashMap::with_capacity(figures.len());
        for figure in figures {
            let link = figure.link();
            let crop = crop_figure(&render, &figure.block.boxes);
            let png = encode_png(&crop, Path::new(&link))?;
            let (width_emu, height_emu) = fitted_size(crop.dimensions(), points_per_px);
            let picture = Picture {
                png,
                width_px: crop.width(),
                height_px: crop.height(),
                width_emu,
                height_emu,
            };
            by_link.insert(link, picture);
        }
        Ok(Pictures { by_link })
    }

    /// A run holding the figure that `link` points to, or `None` for a link to no figure of the
    /// page. Each figure is handed out once: its PNG moves into the document.
    pub fn take_run(&mut self, link: &str) -> Option<Run> {
        let picture = self.by_link.remove(link)?;
        let pic = Pic::new_with_dimensions(picture.png, picture.width_px, picture.height_px)
            .size(picture.width_emu, picture.height_emu);
        Some(Run::new().add_image(pic))
    }
}

/// What docx-rs writes for every picture: the same drawing id, which Word may report as
/// unreadable content once a document has several pictures.
const FIXED_DRAWING_ID: &str = r#"<wp:docPr id="1" name="Figure" />"#;

/// `document_xml` with each picture's drawing id made unique (1, 2, 3, … in document order).
/// Text cannot forge the pattern: docx-rs escapes `<` in text.
pub(super) fn number_drawings(document_xml: Vec<u8>) -> Vec<u8> {
    let xml = match String::from_utf8(document_xml) {
        Ok(xml) => xml,
        // docx-rs writes UTF-8; anything else is passed on as it is.
        Err(error) => return error.into_bytes(),
    };
    let mut pieces = xml.split(FIXED_DRAWING_ID);
    let mut numbered = String::with_capacity(xml.len());
    numbered.push_str(pieces.next().unwrap_or_default());
    for (n, piece) in pieces.enumerate() {
        let id = n + 1;
        numbered.push_str(&format!(r#"<wp:docPr id="{id}" name="Figure {id}" />"#));
        numbered.push_str(piece);
    }
    numbered.into_bytes()
}

/// The size in EMU of a `(width, height)` pixel crop shown at `points_per_px`, scaled down with
/// its aspect ratio kept to fit the text area of a document page.
fn fitted_size((width_px, height_px): (u32, u32), points_per_px: f64) -> (u32, u32) {
    let width = f64::from(width_px) * points_per_px * EMU_PER_POINT;
    let height = f64::from(height_px) * points_per_px * EMU_PER_POINT;
    let max_width = f64::from(TEXT_WIDTH_TWIPS) * EMU_PER_TWIP;
    let max_height = f64::from(TEXT_HEIGHT_TWIPS) * EMU_PER_TWIP;
    let scale = (max_width / width).min(max_height / height).min(1.0);
    // At least one EMU a side, so a sliver of a figure stays a (tiny) picture.
    let emu = |v: f64| (v * scale).round().max(1.0) as u32;
    (emu(width), emu(height))
}

#[cfg(test)]
mod tests {
    use super::*;

    const POINTS_AT_300_DPI: f64 = 72.0 / 300.0;

    #[test]
    fn every_picture_gets_its_own_drawing_id() {
        let pic = |png: u8| Run::new().add_image(Pic::new_with_dimensions(vec![png], 1, 1));
        let docx = docx_rs::Docx::new()
            .add_paragraph(docx_rs::Paragraph::new().add_run(pic(1)))
            .add_paragraph(docx_rs::Paragraph::new().add_run(pic(2)));
        let xml = String::from_utf8(number_drawings(docx.build().document)).unwrap();
        let ids: Vec<&str> = xml
            .split("<wp:docPr id=\"")
            .skip(1)
            .map(|rest| &rest[..rest.find('"').unwrap()])
            .collect();
        assert_eq!(ids, ["1", "2"]);
    }

    #[test]
    fn a_small_figure_keeps_its_size_on_the_page() {
        // 300 x 150 px at 300 dpi is 1 x 0.5 inch: 914400 x 457200 EMU.
        assert_eq!(
            fitted_size((300, 150), POINTS_AT_300_DPI),
            (914_400, 457_200)
        );
    }

    #[test]
    fn a_wide_figure_is_shrunk_to_the_text_width_keeping_its_shape() {
        let (width, height) = fitted_size((6000, 1500), POINTS_AT_300_DPI);
        assert_eq!(f64::from(width), f64::from(TEXT_WIDTH_TWIPS) * EMU_PER_TWIP);
        assert!((f64::from(width) / f64::from(height) - 4.0).abs() < 1e-3);
    }

    #[test]
    fn a_tall_figure_is_shrunk_to_the_text_height() {
        let (width, height) = fitted_size((1000, 9000), POINTS_AT_300_DPI);
        assert!(f64::from(height) <= f64::from(TEXT_HEIGHT_TWIPS) * EMU_PER_TWIP + 1.0);
        assert!((f64::from(height) / f64::from(width) - 9.0).abs() < 1e-2);
    }
}
