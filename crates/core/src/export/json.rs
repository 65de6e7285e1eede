//! `OUT/<stem>.json`: the reading as data, for tools that want the layout and not only the text.
//!
//! A file format, so its field names are snake_case and stable; `format` and `version` say what
//! the file is. Shape (one entry in `pages` per page of the document, unread pages included):
//!
//! ```json
//! {
//!   "format": "deepread-export", "version": 1,
//!   "document": { "title": "…", "sha256": "…", "kind": "pdf", "page_count": 25 },
//!   "pages": [{
//!     "page": 0, "status": "read", "reason": null, "width_pt": 612.0, "height_pt": 792.0,
//!     "read_by": { "recognizer": "DeepSeek-OCR-2", "prompt_tokens": 1131, "generated_tokens": 842 },
//!     "blocks": [{
//!       "page": 0, "block_id": 3, "label": "image",
//!       "boxes":    [{ "x1": 360, "y1": 170, "x2": 636, "y2": 585 }],
//!       "boxes_pt": [{ "x1": 220.5, "y1": 134.8, "x2": 389.6, "y2": 463.9 }],
//!       "figure": "images/0_0.png", "markdown": "", "warning": null
//!     }]
//!   }]
//! }
//! ```
//!
//! Pages and blocks are 0-based. `boxes` are the model's coordinates, 0..=999 of the page;
//! `boxes_pt` the same boxes in PDF points, origin at the page's top-left corner as displayed, y
//! down (`x_pt = x / 999 * width_pt`); for a page image a point is a pixel. `status` is `read`,
//! `looped`, `failed` or `not_read`; `reason` says why a page looped or failed. `read_by` names
//! the recognizer that read a read or looped page and the tokens of its prompt and of what it
//! generated (0 for a recognizer that generates none); `null` for failed and unread pages. `figure`
//! is the path of the block's cropped image, relative to the JSON file, for `image` blocks.

use std::collections::HashMap;
use std::path::Path;

use deepread_pdf::{DocumentKind, PageSize};
use serde::Serialize;

use super::atomic::{ensure_dir, write_atomically};
use super::figures::page_figures;
use super::{
    output_file, pages_in_order, DocumentExport, ExportError, ExportSummary, PageExport, PageStatus,
};
use crate::events::{BoxNorm, COORD_MAX};

/// The value of the file's `format` field.
pub const JSON_FORMAT: &str = "deepread-export";
/// The value of the file's `version` field; raised when a field changes meaning or goes away.
pub const JSON_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
struct ExportFile<'e> {
    format: &'static str,
    version: u32,
    document: DocumentInfo<'e>,
    pages: Vec<PageJson<'e>>,
}

#[derive(Debug, Serialize)]
struct DocumentInfo<'e> {
    title: &'e str,
    sha256: &'e str,
    kind: &'static str,
    page_count: usize,
}

#[derive(Debug, Serialize)]
struct PageJson<'e> {
    page: usize,
    status: &'static str,
    reason: Option<&'e str>,
    width_pt: f32,
    height_pt: f32,
    read_by: Option<ReadByJson<'e>>,
    blocks: Vec<BlockJson<'e>>,
}

#[derive(Debug, Serialize)]
struct ReadByJson<'e> {
    recognizer: &'e str,
    prompt_tokens: usize,
    generated_tokens: usize,
}

#[derive(Debug, Serialize)]
struct BlockJson<'e> {
    page: usize,
    block_id: u32,
    label: &'e str,
    boxes: Vec<BoxJson<u16>>,
    boxes_pt: Vec<BoxJson<f64>>,
    figure: Option<String>,
    markdown: &'e str,
    warning: Option<&'e str>,
}

#[derive(Debug, Serialize)]
struct BoxJson<T> {
    x1: T,
    y1: T,
    x2: T,
    y2: T,
}

/// Writes `OUT/<stem>.json`, creating `OUT` if needed.
pub fn write_json(
    export: &DocumentExport<'_>,
    out_dir: &Path,
    stem: &str,
) -> Result<ExportSummary, ExportError> {
    let path = output_file(out_dir, stem, "json")?;
    let file = export_file(export)?;
    let mut bytes =
        serde_json::to_vec_pretty(&file).map_err(|source| ExportError::Json { source })?;
    bytes.push(b'\n');
    ensure_dir(out_dir)?;
    write_atomically(&path, &bytes)?;
    tracing::info!(path = %path.display(), "wrote JSON export");
    Ok(ExportSummary {
        files: vec![path],
        figures: 0,
    })
}

fn export_file<'e>(export: &'e DocumentExport<'_>) -> Result<ExportFile<'e>, ExportError> {
    let document = export.document;
    let mut pages = Vec::with_capacity(document.page_count());
    for (index, page) in pages_in_order(export)? {
        let size = document
            .page_size(index)
            .map_err(|source| ExportError::PageSize {
                page: index,
                source,
            })?;
        pages.push(page_json(index, page, size));
    }
    Ok(ExportFile {
        format: JSON_FORMAT,
        version: JSON_VERSION,
        document: DocumentInfo {
            title: &export.title,
            sha256: document.content_hash(),
            kind: match document.kind() {
                DocumentKind::Pdf => "pdf",
                DocumentKind::Image => "image",
            },
            page_count: document.page_count(),
        },
        pages,
    })
}

fn page_json<'e>(index: usize, page: Option<&'e PageExport>, size: PageSize) -> PageJson<'e> {
    let (status, reason) = match page.map(|p| &p.status) {
        Some(PageStatus::Read) => ("read", None),
        Some(PageStatus::Looped { reason }) => ("looped", Some(reason.as_str())),
        Some(PageStatus::Failed { error }) => ("failed", Some(error.as_str())),
        Some(PageStatus::NotRead) | None => ("not_read", None),
    };
    PageJson {
        page: index,
        status,
        reason,
        width_pt: size.width_pt,
        height_pt: size.height_pt,
        read_by: page.and_then(|p| p.stats.as_ref()).map(|s| ReadByJson {
            recognizer: &s.recognizer,
            prompt_tokens: s.prompt_tokens,
            generated_tokens: s.generated_tokens,
        }),
        blocks: page.map(|p| blocks_json(p, size)).unwrap_or_default(),
    }
}

fn blocks_json(page: &PageExport, size: PageSize) -> Vec<BlockJson<'_>> {
    let figures: HashMap<u32, String> = page_figures(page)
        .iter()
        .map(|figure| (figure.block.id, figure.link()))
        .collect();
    page.blocks
        .iter()
        .map(|block| BlockJson {
            page: page.index,
            block_id: block.id,
            label: &block.label,
            boxes: block.boxes.iter().map(|b| norm_box(*b)).collect(),
            boxes_pt: block.boxes.iter().map(|b| points_box(*b, size)).collect(),
            figure: figures.get(&block.id).cloned(),
            markdown: &block.markdown,
            warning: block.warning.as_deref(),
        })
        .collect()
}

fn norm_box(b: BoxNorm) -> BoxJson<u16> {
    BoxJson {
        x1: b.x1,
        y1: b.y1,
        x2: b.x2,
        y2: b.y2,
    }
}

/// The box in points: the same mapping as the figure crops, without truncating to pixels.
fn points_box(b: BoxNorm, size: PageSize) -> BoxJson<f64> {
    let along = |v: u16, side_pt: f32| f64::from(v) / f64::from(COORD_MAX) * f64::from(side_pt);
    BoxJson {
        x1: along(b.x1, size.width_pt),
        y1: along(b.y1, size.height_pt),
        x2: along(b.x2, size.width_pt),
        y2: along(b.y2, size.height_pt),
    }
}
