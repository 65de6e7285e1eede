//! DeepRead's document layer: opens PDFs (through PDFium) and page images, renders pages, and reads
//! a PDF's own text layer (with its filled-in form fields and ruling lines). It knows nothing of models.
//!
//! PDFium is a shared library found at run time; see [`bind_pdfium`] for where it is looked for.

mod document;
mod error;
mod form;
mod geometry;
mod hash;
mod image_doc;
mod pdf_doc;
mod pdfium;
mod render;
mod rules;
mod sniff;
mod text;

pub use document::{Document, DocumentKind};
pub use error::{PdfError, SearchedPlace};
pub use geometry::{PageSize, Rect};
pub use pdfium::{bind_pdfium, PDFIUM_ENV};
pub use render::{RenderSize, MAX_PIXELS, MAX_SIDE_PX};
pub use rules::Rule;
pub use text::{PageText, Word};

/// Documents are handed between the UI thread, render workers and the reading pipeline.
const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Document>();
};
