//! What can go wrong while exporting, in words a user can act on.

use std::path::PathBuf;

use deepread_pdf::PdfError;

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(
        "the reading has a page {} but the document has only {count} page(s); \
         was it read from a different file?",
        .index + 1
    )]
    PageOutOfRange { index: usize, count: usize },

    #[error("the reading lists page {} twice; read the document again before exporting", .index + 1)]
    DuplicatePage { index: usize },

    #[error("\"{stem}\" cannot be used as a file name; choose a name without slashes")]
    InvalidStem { stem: String },

    #[error("page {} could not be rendered to crop its figures: {source}", .page + 1)]
    Render {
        page: usize,
        #[source]
        source: PdfError,
    },

    #[error("cannot read the size of page {}: {source}", .page + 1)]
    PageSize {
        page: usize,
        #[source]
        source: PdfError,
    },

    #[error(
        "cannot create the folder {}: {source}; choose a folder you can write to",
        .path.display()
    )]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "cannot write {}: {source}; check that the folder is writable and the disk is not full",
        .path.display()
    )]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot encode the figure {} as PNG: {source}", .path.display())]
    EncodeFigure {
        path: PathBuf,
        #[source]
        source: image::ImageError,
    },

    #[error("cannot serialise the JSON sidecar: {source}")]
    Json {
        #[source]
        source: serde_json::Error,
    },

    #[error("cannot assemble the Word document: {source}")]
    Docx {
        #[source]
        source: docx_rs::DocxError,
    },

    #[error("cannot build the Excel workbook of the tables: {source}")]
    Workbook {
        #[source]
        source: rust_xlsxwriter::XlsxError,
    },

    #[error("cannot assemble the EPUB book: {source}")]
    Epub {
        #[source]
        source: Box<epub_builder::Error>,
    },
}
