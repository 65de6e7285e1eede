//! The EPUB container, assembled by epub-builder: the package document (metadata, manifest,
//! spine), the navigation document and an NCX for EPUB 2 readers, zipped with the uncompressed
//! `mimetype` first.

use epub_builder::{EpubBuilder, EpubContent, EpubVersion, ReferenceType, ZipLibrary};

use super::chapters::{chapter_document, Chapter};
use crate::export::ExportError;

/// Where epub-builder puts the stylesheet, beside the content documents.
const STYLESHEET: &str = "stylesheet.css";

/// Reading systems apply their own fonts and margins; this only keeps figures inside the page
/// and marks what is not the document's own text.
const STYLE: &str = "\
img { max-width: 100%; height: auto; }
.center { display: block; text-align: center; }
.page-note { font-style: italic; opacity: 0.75; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #999; padding: 0.2em 0.4em; vertical-align: top; }
pre { white-space: pre-wrap; }
";

/// The book's metadata; the text values are already free of characters XML forbids.
pub(super) struct BookInfo<'a> {
    pub title: &'a str,
    /// A BCP 47 language tag.
    pub language: &'a str,
    /// The same for every export of one document, so a reading system replaces the book on
    /// re-export rather than keeping both; `None` gets a random one.
    pub identifier: Option<uuid::Uuid>,
}

pub(super) struct Book {
    builder: EpubBuilder<ZipLibrary>,
    chapters: usize,
}

impl Book {
    pub fn new(info: &BookInfo<'_>) -> Result<Book, ExportError> {
        let mut builder =
            EpubBuilder::new(ZipLibrary::new().map_err(epub_error)?).map_err(epub_error)?;
        builder.epub_version(EpubVersion::V30);
        builder.set_title(info.title);
        builder.add_language(info.language);
        builder.set_generator("DeepRead");
        builder.set_toc_name("Contents");
        if let Some(identifier) = info.identifier {
            builder.set_uuid(identifier);
        }
        builder.stylesheet(STYLE.as_bytes()).map_err(epub_error)?;
        Ok(Book {
            builder,
            chapters: 0,
        })
    }

    /// Adds a PNG at `link`, the path the content documents use for it.
    pub fn add_figure(&mut self, link: &str, png: &[u8]) -> Result<(), ExportError> {
        self.builder
            .add_resource(link, png, "image/png")
            .map_err(epub_error)?;
        Ok(())
    }

    /// Adds the next chapter to the spine and the table of contents.
    pub fn add_chapter(&mut self, chapter: &Chapter) -> Result<(), ExportError> {
        self.chapters += 1;
        let href = format!("chapter-{:03}.xhtml", self.chapters);
        let xhtml = chapter_document(chapter, STYLESHEET);
        let mut content = EpubContent::new(href, xhtml.as_bytes())
            .title(chapter.title.as_str())
            .level(i32::from(chapter.level));
        if self.chapters == 1 {
            // Where reading starts: the navigation document's landmarks.
            content = content.reftype(ReferenceType::Text);
        }
        self.builder.add_content(content).map_err(epub_error)?;
        Ok(())
    }

    /// The finished EPUB file.
    pub fn finish(self) -> Result<Vec<u8>, ExportError> {
        let mut bytes = Vec::new();
        self.builder.generate(&mut bytes).map_err(epub_error)?;
        Ok(bytes)
    }
}

fn epub_error(source: epub_builder::Error) -> ExportError {
    ExportError::Epub {
        source: Box::new(source),
    }
}
