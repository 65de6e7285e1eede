//! A PDF opened with PDFium. Every method takes the process-wide PDFium lock for its whole sequence of
//! calls, so the document can be shared between threads.

use std::mem::ManuallyDrop;

use image::RgbImage;
use pdfium_render::prelude::{
    PdfDocument, PdfDocumentMetadataTagType, PdfPage, PdfPageRenderRotation,
};

use crate::error::PdfError;
use crate::form::read_field_values;
use crate::geometry::{DisplayTransform, PageSize};
use crate::pdfium::{pdfium, pdfium_lock};
use crate::render::{render_pdf_page, RenderSize};
use crate::rules::read_rules;
use crate::text::{read_words, PageText, Word};

pub(crate) struct PdfDoc {
    /// Dropped by hand in `Drop`, under the PDFium lock: closing a document is a PDFium call too.
    doc: ManuallyDrop<PdfDocument<'static>>,
    page_count: usize,
}

impl PdfDoc {
    pub(crate) fn open(bytes: Vec<u8>, password: Option<&str>) -> Result<Self, PdfError> {
        let pdfium = pdfium()?;
        let _lock = pdfium_lock();
        let doc = pdfium
            .load_pdf_from_byte_vec(bytes, password)
            .map_err(|e| PdfError::from_open(e, password.is_some()))?;
        let page_count = usize::try_from(doc.pages().len()).unwrap_or(0);
        if page_count == 0 {
            // Closing is a PDFium call: drop while the lock is still held.
            drop(doc);
            return Err(PdfError::NoPages);
        }
        tracing::debug!(pages = page_count, "opened PDF");
        Ok(PdfDoc {
            doc: ManuallyDrop::new(doc),
            page_count,
        })
    }

    pub(crate) fn page_count(&self) -> usize {
        self.page_count
    }

    pub(crate) fn title(&self) -> Option<String> {
        let _lock = pdfium_lock();
        let tag = self.doc.metadata().get(PdfDocumentMetadataTagType::Title)?;
        let title = tag.value().trim();
        (!title.is_empty()).then(|| title.to_string())
    }

    /// As displayed: PDFium swaps width and height for pages with /Rotate 90 or 270.
    pub(crate) fn page_size(&self, index: usize) -> Result<PageSize, PdfError> {
        let _lock = pdfium_lock();
        let size = self
            .doc
            .pages()
            .page_size(pdfium_index(index)?)
            .map_err(|e| PdfError::from_page(index, e))?;
        Ok(PageSize {
            width_pt: size.width().value,
            height_pt: size.height().value,
        })
    }

    pub(crate) fn render_page(&self, index: usize, size: RenderSize) -> Result<RgbImage, PdfError> {
        let page_size = self.page_size(index)?;
        let (width, height) = size.pixels_for(index, page_size)?;
        let _lock = pdfium_lock();
        let page = self.load_page(index)?;
        tracing::debug!(page = index, width, height, "rendering PDF page");
        render_pdf_page(&page, index, width, height)
    }

    pub(crate) fn text_layer(&self, index: usize) -> Result<PageText, PdfError> {
        let _lock = pdfium_lock();
        let page = self.load_page(index)?;
        let transform = display_transform(&page, index)?;
        let text = page.text().map_err(|e| PdfError::from_page(index, e))?;
        let mut words = read_words(&text, &transform);
        let body_pt = median_font_size(&words);
        words.extend(read_field_values(&page, &transform, body_pt));
        let rules = read_rules(&page, &transform);
        Ok(PageText { words, rules })
    }

    fn load_page(&self, index: usize) -> Result<PdfPage<'_>, PdfError> {
        self.doc
            .pages()
            .get(pdfium_index(index)?)
            .map_err(|e| PdfError::from_page(index, e))
    }
}

impl Drop for PdfDoc {
    fn drop(&mut self) {
        let _lock = pdfium_lock();
        // SAFETY: `doc` is never used again; this is the only place it is dropped.
        unsafe { ManuallyDrop::drop(&mut self.doc) };
    }
}

/// The font size most of the page's words have, or 10 pt for a page without text.
fn median_font_size(words: &[Word]) -> f32 {
    let mut sizes: Vec<f32> = words.iter().map(|w| w.font_size).collect();
    sizes.sort_by(f32::total_cmp);
    sizes.get(sizes.len() / 2).copied().unwrap_or(10.0)
}

/// PDFium indexes pages with a C int; our callers have already checked the range.
fn pdfium_index(index: usize) -> Result<i32, PdfError> {
    i32::try_from(index).map_err(|_| PdfError::PageOutOfRange {
        index,
        count: i32::MAX as usize,
    })
}

/// The visible box (CropBox clipped to MediaBox, which PDFium calls the bounding box) and /Rotate.
pub(crate) fn display_transform(
    page: &PdfPage,
    index: usize,
) -> Result<DisplayTransform, PdfError> {
    let bounds = page
        .boundaries()
        .bounding()
        .map_err(|e| PdfError::from_page(index, e))?
        .bounds;
    let quarter_turns = match page.rotation() {
        Ok(PdfPageRenderRotation::None) => 0,
        Ok(PdfPageRenderRotation::Degrees90) => 1,
        Ok(PdfPageRenderRotation::Degrees180) => 2,
        Ok(PdfPageRenderRotation::Degrees270) => 3,
        Err(error) => {
            tracing::warn!(page = index, ?error, "unreadable /Rotate, assuming 0");
            0
        }
    };
    Ok(DisplayTransform::new(
        (
            bounds.left().value,
            bounds.bottom().value,
            bounds.right().value,
            bounds.top().value,
        ),
        quarter_turns,
    ))
}
