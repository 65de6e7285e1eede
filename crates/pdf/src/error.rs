//! The one error type of the document layer, with messages a user can act on.

use std::path::PathBuf;

use pdfium_render::prelude::{PdfiumError, PdfiumInternalError};

/// Everything that can go wrong while opening, rendering or reading a document.
#[derive(Debug, thiserror::Error)]
pub enum PdfError {
    #[error(
        "the PDFium library was not found; looked in:\n{}\nRun `make deps` to install it, \
         or set DEEPREAD_PDFIUM to the path of libpdfium (or the folder that holds it)",
        format_searched(.searched)
    )]
    PdfiumNotFound { searched: Vec<SearchedPlace> },

    #[error("this document is protected by a password; enter the password to open it")]
    PasswordRequired,

    #[error("the password is not correct for this document")]
    WrongPassword,

    #[error(
        "the file is damaged and cannot be read ({reason}); try re-downloading or re-exporting it"
    )]
    Corrupt { reason: String },

    #[error("this file is neither a PDF nor a supported image (PNG, JPEG, TIFF, WebP)")]
    NotADocument,

    #[error("the document has no pages")]
    NoPages,

    #[error(
        "page {} would render at {width}x{height} pixels, more than the allowed {} px per side \
         or {} megapixels; choose a smaller size",
        .page + 1,
        crate::render::MAX_SIDE_PX,
        crate::render::MAX_PIXELS / 1_000_000
    )]
    PageTooLarge {
        page: usize,
        width: u64,
        height: u64,
    },

    #[error("page index {index} is out of range: the document has {count} page(s)")]
    PageOutOfRange { index: usize, count: usize },

    #[error("cannot read {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("page {} could not be rendered: {reason}", .page + 1)]
    Render { page: usize, reason: String },
}

/// One place where PDFium was looked for, and why it was not used.
#[derive(Debug, Clone)]
pub struct SearchedPlace {
    /// Where we looked, in words (a path, or "the system library search path").
    pub place: String,
    /// Why it did not work (missing file, failed to load, ...).
    pub outcome: String,
}

fn format_searched(places: &[SearchedPlace]) -> String {
    places
        .iter()
        .map(|p| format!("  - {}: {}", p.place, p.outcome))
        .collect::<Vec<_>>()
        .join("\n")
}

impl PdfError {
    /// Maps an error from opening a document with PDFium. `password_given` tells a missing password
    /// from a wrong one: PDFium reports both as the same PasswordError.
    pub(crate) fn from_open(error: PdfiumError, password_given: bool) -> Self {
        match error {
            PdfiumError::PdfiumLibraryInternalError(PdfiumInternalError::PasswordError) => {
                if password_given {
                    PdfError::WrongPassword
                } else {
                    PdfError::PasswordRequired
                }
            }
            PdfiumError::PdfiumLibraryInternalError(PdfiumInternalError::FormatError) => {
                PdfError::Corrupt {
                    reason: "PDFium could not parse its structure".into(),
                }
            }
            PdfiumError::PdfiumLibraryInternalError(PdfiumInternalError::SecurityError) => {
                PdfError::Corrupt {
                    reason: "unsupported security handler".into(),
                }
            }
            other => PdfError::Corrupt {
                reason: format!("PDFium failed to open it: {other:?}"),
            },
        }
    }

    /// Maps an error from working on one page (loading, rendering, reading text).
    pub(crate) fn from_page(page: usize, error: PdfiumError) -> Self {
        PdfError::Render {
            page,
            reason: format!("{error:?}"),
        }
    }
}
