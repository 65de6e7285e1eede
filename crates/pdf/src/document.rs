//! `Document`: one opened file, a PDF or a page image, behind one interface.

use std::path::{Path, PathBuf};

use image::RgbImage;

use crate::error::PdfError;
use crate::geometry::PageSize;
use crate::hash::content_hash;
use crate::image_doc::ImageDoc;
use crate::pdf_doc::PdfDoc;
use crate::render::RenderSize;
use crate::sniff::{sniff, Sniffed};
use crate::text::PageText;

/// What kind of file a document was opened from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum DocumentKind {
    Pdf,
    Image,
}

/// An opened document. Cheap to share between threads (`Send + Sync`); PDF work is serialized
/// process-wide because PDFium is not thread-safe.
pub struct Document {
    hash: String,
    /// Where it was opened from; `None` for a document opened from memory.
    path: Option<PathBuf>,
    source: Source,
}

enum Source {
    Pdf(PdfDoc),
    Image(ImageDoc),
}

impl Document {
    /// Opens a file, deciding from its content (not its name) whether it is a PDF or an image.
    /// `password` is used only for encrypted PDFs.
    pub fn open(path: &Path, password: Option<&str>) -> Result<Document, PdfError> {
        let bytes = std::fs::read(path).map_err(|source| PdfError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        tracing::debug!(path = %path.display(), bytes = bytes.len(), "opening document");
        let mut document = Document::from_bytes(bytes, password)?;
        document.path = Some(path.to_path_buf());
        Ok(document)
    }

    /// The content hash of the file at `path`, what [`Document::content_hash`] would say of it, without opening
    /// it: an encrypted PDF's identity before its password is known.
    pub fn hash_of_file(path: &Path) -> Result<String, PdfError> {
        let bytes = std::fs::read(path).map_err(|source| PdfError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(content_hash(&bytes))
    }

    /// Opens a document held in memory.
    pub fn from_bytes(bytes: Vec<u8>, password: Option<&str>) -> Result<Document, PdfError> {
        let hash = content_hash(&bytes);
        let source = match sniff(&bytes) {
            Sniffed::Pdf => Source::Pdf(PdfDoc::open(bytes, password)?),
            Sniffed::Image(format) => Source::Image(ImageDoc::decode(&bytes, format)?),
            Sniffed::Unknown => return Err(PdfError::NotADocument),
        };
        Ok(Document {
            hash,
            path: None,
            source,
        })
    }

    /// The file the document was opened from, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub fn kind(&self) -> DocumentKind {
        match self.source {
            Source::Pdf(_) => DocumentKind::Pdf,
            Source::Image(_) => DocumentKind::Image,
        }
    }

    /// At least 1: a document without pages does not open.
    pub fn page_count(&self) -> usize {
        match &self.source {
            Source::Pdf(pdf) => pdf.page_count(),
            Source::Image(_) => 1,
        }
    }

    /// Lowercase hex SHA-256 of the file's bytes.
    pub fn content_hash(&self) -> &str {
        &self.hash
    }

    /// The PDF's metadata title, if it has a non-blank one.
    pub fn title(&self) -> Option<String> {
        match &self.source {
            Source::Pdf(pdf) => pdf.title(),
            Source::Image(_) => None,
        }
    }

    /// The page's size as displayed (after /Rotate), in points.
    pub fn page_size(&self, index: usize) -> Result<PageSize, PdfError> {
        self.check_index(index)?;
        match &self.source {
            Source::Pdf(pdf) => pdf.page_size(index),
            Source::Image(img) => Ok(img.page_size()),
        }
    }

    /// The page as an RGB image on white, upright as displayed.
    pub fn render_page(&self, index: usize, size: RenderSize) -> Result<RgbImage, PdfError> {
        self.check_index(index)?;
        match &self.source {
            Source::Pdf(pdf) => pdf.render_page(index, size),
            Source::Image(img) => img.render(size),
        }
    }

    /// The page's own text as words, in reading order as PDFium gives it, and its ruling lines. Empty
    /// for images and for scanned pages without an OCR layer.
    pub fn text_layer(&self, index: usize) -> Result<PageText, PdfError> {
        self.check_index(index)?;
        match &self.source {
            Source::Pdf(pdf) => pdf.text_layer(index),
            Source::Image(_) => Ok(PageText::default()),
        }
    }

    fn check_index(&self, index: usize) -> Result<(), PdfError> {
        let count = self.page_count();
        if index < count {
            Ok(())
        } else {
            Err(PdfError::PageOutOfRange { index, count })
        }
    }
}

impl std::fmt::Debug for Document {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Document")
            .field("kind", &self.kind())
            .field("pages", &self.page_count())
            .field("hash", &self.hash)
            .finish()
    }
}
