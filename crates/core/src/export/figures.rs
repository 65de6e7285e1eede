//! Figures: each `image` block's box cropped from its page, rendered at full resolution, and saved
//! as `images/{page}_{n}.png`, the name the page's Markdown links to.

use std::collections::HashSet;
use std::io::Cursor;
use std::path::Path;

use deepread_pdf::{
    Document, DocumentKind, PageSize, PdfError, RenderSize, MAX_PIXELS, MAX_SIDE_PX,
};
use image::{ImageFormat, RgbImage};

use super::atomic::{ensure_dir, remove_stale, write_atomically};
use super::{pages_in_order, DocumentExport, ExportError, ExportSummary, PageExport};
use crate::events::{Block, BoxNorm, COORD_MAX};

/// The resolution PDF pages are rendered at for cropping: print resolution, so a figure is as
/// sharp in the export as on paper. A letter page is 2550x3300 px (25 MB of RGB), rendered once
/// per page that has figures.
pub const FIGURE_DPI: f32 = 300.0;

/// The folder, inside the output folder, that holds the figures.
pub const FIGURES_DIR: &str = "images";

/// The label of the blocks that become figures (as in `crate::markdown`).
const IMAGE_LABEL: &str = "image";

/// The parser's warning for a `<|det|>` that never closed. Such a block keeps its boxes but gets
/// no figure link in the Markdown (the link replaces the closing tag), so it gets no figure file.
const UNCLOSED_DET_WARNING: &str = "unclosed <|det|>";

/// Keeps renders safely inside the document layer's limits despite its rounding to whole pixels.
const LIMIT_MARGIN: f64 = 0.999;

/// One figure of a page: the `n`-th linked image block.
#[derive(Debug, Clone, Copy)]
pub(super) struct Figure<'b> {
    pub page: usize,
    pub n: usize,
    pub block: &'b Block,
}

impl Figure<'_> {
    /// The figure's path relative to the output folder, as the Markdown links it.
    pub fn link(&self) -> String {
        figure_link(self.page, self.n)
    }
}

pub(super) fn figure_link(page: usize, n: usize) -> String {
    format!("{FIGURES_DIR}/{page}_{n}.png")
}

/// The page's figures, numbered as `crate::markdown::page_markdown` numbers its links: image
/// blocks with readable boxes and a closed `<|det|>`, in block order.
pub(super) fn page_figures(page: &PageExport) -> Vec<Figure<'_>> {
    page.blocks
        .iter()
        .filter(|block| is_linked_figure(block))
        .enumerate()
        .map(|(n, block)| Figure {
            page: page.index,
            n,
            block,
        })
        .collect()
}

fn is_linked_figure(block: &Block) -> bool {
    let det_closed = !block
        .warning
        .as_deref()
        .is_some_and(|w| w.contains(UNCLOSED_DET_WARNING));
    block.label == IMAGE_LABEL && !block.boxes.is_empty() && det_closed
}

/// The size a page is rendered at to crop its figures: a page image at its own pixels, a PDF page
/// at [`FIGURE_DPI`], or less where a huge page would exceed the document layer's render limits.
pub fn figure_render_size(document: &Document, page: usize) -> Result<RenderSize, PdfError> {
    if document.kind() == DocumentKind::Image {
        // An image page is one point per pixel: 72 dpi is the image itself, unscaled.
        return Ok(RenderSize::Dpi(72.0));
    }
    let size = document.page_size(page)?;
    let dpi = f64::from(FIGURE_DPI).min(largest_dpi_within_limits(size));
    Ok(RenderSize::Dpi(dpi as f32))
}

/// The highest resolution at which `size` stays within `MAX_SIDE_PX` per side and `MAX_PIXELS`.
fn largest_dpi_within_limits(size: PageSize) -> f64 {
    let width_in = f64::from(size.width_pt) / 72.0;
    let height_in = f64::from(size.height_pt) / 72.0;
    let by_side = MAX_SIDE_PX as f64 / width_in.max(height_in);
    let by_area = (MAX_PIXELS as f64 / (width_in * height_in)).sqrt();
    by_side.min(by_area) * LIMIT_MARGIN
}

/// Writes every figure of the reading to `OUT/images/`, and removes figure files of the pages it covers that
/// a previous export left there and this one no longer has, so the folder matches the Markdown exactly. An
/// export of one page (a file per page) leaves the other pages' figures in place.
pub fn write_figures(
    export: &DocumentExport<'_>,
    out_dir: &Path,
) -> Result<ExportSummary, ExportError> {
    let dir = out_dir.join(FIGURES_DIR);
    ensure_dir(&dir)?;
    let mut summary = ExportSummary::default();
    let mut written = HashSet::new();
    let pages = pages_in_order(export)?;
    for page in pages.iter().filter_map(|(_, page)| *page) {
        let figures = page_figures(page);
        if figures.is_empty() {
            continue;
        }
        let image = render_for_figures(export.document, page.index)?;
        for figure in figures {
            let path = out_dir.join(figure.link());
            let crop = crop_figure(&image, &figure.block.boxes);
            write_atomically(&path, &encode_png(&crop, &path)?)?;
            tracing::debug!(path = %path.display(), width = crop.width(), height = crop.height(), "wrote figure");
            written.insert(format!("{}_{}.png", figure.page, figure.n));
            summary.files.push(path);
            summary.figures += 1;
        }
    }
    let covered: HashSet<usize> = pages.iter().map(|(index, _)| *index).collect();
    remove_stale(&dir, &written, |name| {
        figure_page(name).is_some_and(|page| covered.contains(&page))
    });
    Ok(summary)
}

pub(super) fn render_for_figures(
    document: &Document,
    page: usize,
) -> Result<RgbImage, ExportError> {
    let render = |source| ExportError::Render { page, source };
    let size = figure_render_size(document, page).map_err(render)?;
    document.render_page(page, size).map_err(render)
}

/// The part of the page under the block's boxes (their union when a block has several: one
/// block has one link, so one file). Never empty, so every link has an image to show.
pub fn crop_figure(page: &RgbImage, boxes: &[BoxNorm]) -> RgbImage {
    let union = boxes.iter().fold(None, |acc: Option<BoxNorm>, b| {
        Some(match acc {
            None => *b,
            Some(a) => BoxNorm {
                x1: a.x1.min(b.x1),
                y1: a.y1.min(b.y1),
                x2: a.x2.max(b.x2),
                y2: a.y2.max(b.y2),
            },
        })
    });
    let full = BoxNorm {
        x1: 0,
        y1: 0,
        x2: COORD_MAX,
        y2: COORD_MAX,
    };
    let b = union.unwrap_or(full);
    let (x, width) = pixel_span(b.x1, b.x2, page.width());
    let (y, height) = pixel_span(b.y1, b.y2, page.height());
    image::imageops::crop_imm(page, x, y, width, height).to_image()
}

/// Start and length in pixels of the normalised span `lo..hi` on a side of `side` pixels, mapped
/// as the reference does (`int(v / 999 * side)`, truncating), widened to at least one pixel.
fn pixel_span(lo: u16, hi: u16, side: u32) -> (u32, u32) {
    let to_px = |v: u16| (f64::from(v) / f64::from(COORD_MAX) * f64::from(side)) as u32;
    let start = to_px(lo).min(side.saturating_sub(1));
    let end = to_px(hi).clamp(start + 1, side.max(start + 1));
    (start, end - start)
}

pub(super) fn encode_png(image: &RgbImage, path: &Path) -> Result<Vec<u8>, ExportError> {
    let mut bytes = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)
        .map_err(|source| ExportError::EncodeFigure {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(bytes)
}

/// `{digits}_{digits}.png`.
/// The page of a figure file named as the export names them (`{page}_{n}.png`); `None` for any other file.
fn figure_page(name: &str) -> Option<usize> {
    let (page, n) = name.strip_suffix(".png")?.split_once('_')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(page) && digits(n)).then(|| page.parse().ok())?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::{markdown_from_raw, MarkdownOptions};
    use crate::Parser;

    #[test]
    fn spans_truncate_like_the_reference() {
        // int(100/999*1000) = 100, int(500/999*1000) = 500 (500.5 truncated).
        assert_eq!(pixel_span(100, 500, 1000), (100, 400));
        // int(999/999*W) = W: a full-width box is the whole side.
        assert_eq!(pixel_span(0, 999, 2550), (0, 2550));
        // int(1/999*300) = 0, int(2/999*300) = 0: a sub-pixel box still gets one pixel.
        assert_eq!(pixel_span(1, 2, 300), (0, 1));
        assert_eq!(pixel_span(999, 999, 300), (299, 1));
    }

    #[test]
    fn several_boxes_crop_their_union() {
        // int(10/999*1000) = 10, int(60/999*1000) = 60, int(5/999*1000) = 5, int(40/999*1000) = 40.
        let page = RgbImage::new(1000, 1000);
        let boxes = [
            BoxNorm::from_model(10, 20, 30, 40),
            BoxNorm::from_model(50, 5, 60, 25),
        ];
        assert_eq!(crop_figure(&page, &boxes).dimensions(), (50, 35));
    }

    #[test]
    fn huge_pages_are_rendered_below_the_limits_and_normal_ones_at_full_dpi() {
        // The largest page PDF allows, 200 x 200 inches, cannot be rendered at 300 dpi.
        let huge = PageSize {
            width_pt: 14_400.0,
            height_pt: 14_400.0,
        };
        assert!(RenderSize::Dpi(FIGURE_DPI).pixels_for(0, huge).is_err());
        let dpi = largest_dpi_within_limits(huge) as f32;
        assert!(dpi > 60.0 && dpi < FIGURE_DPI, "{dpi}");
        assert!(RenderSize::Dpi(dpi).pixels_for(0, huge).is_ok());
        let a4 = PageSize {
            width_pt: 595.0,
            height_pt: 842.0,
        };
        assert!(largest_dpi_within_limits(a4) > f64::from(FIGURE_DPI));
    }

    #[test]
    fn figure_file_names_are_recognised_exactly_with_their_page() {
        assert_eq!(figure_page("0_0.png"), Some(0));
        assert_eq!(figure_page("12_3.png"), Some(12));
        assert_eq!(figure_page("cover.png"), None);
        assert_eq!(figure_page("1_2.jpg"), None);
        assert_eq!(figure_page("_2.png"), None);
        assert_eq!(figure_page("1_2_3.png"), None);
    }

    #[test]
    fn figures_are_numbered_as_the_markdown_links_them() {
        // The second image's box list is unreadable and the last one's <|det|> never closes:
        // neither gets a link, so neither may take a number.
        let raw = "<|ref|>image<|/ref|><|det|>[[0, 0, 9, 9]]<|/det|>\n\n\
                   <|ref|>image<|/ref|><|det|>[[0, raw 0, 9, 9]]<|/det|>\n\n\
                   <|ref|>text<|/ref|><|det|>[[1, 1, 9, 9]]<|/det|>\nBody\n\n\
                   <|ref|>image<|/ref|><|det|>[[1, 1, 9, 9]]<|/det|>\n\n\
                   <|ref|>image<|/ref|><|det|>[[2, 2, 8, 8]]";
        let mut parser = Parser::new();
        parser.push(raw);
        parser.finish();
        let page = PageExport {
            index: 4,
            status: super::super::PageStatus::Read,
            blocks: parser.blocks().to_vec(),
            markdown: markdown_from_raw(raw, &MarkdownOptions::for_page(4)),
            stats: None,
        };
        let links: Vec<String> = page_figures(&page).iter().map(Figure::link).collect();
        assert_eq!(links, ["images/4_0.png", "images/4_1.png"]);
        assert_eq!(page.markdown.matches("](images/4_").count(), 2);
        for link in &links {
            assert!(page.markdown.contains(&format!("]({link})")), "{link}");
        }
    }
}
