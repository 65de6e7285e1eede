//! The files a finished reading produces: a Markdown document with its cropped figures, a JSON
//! sidecar, a standalone HTML page, a Word document, an EPUB book, and its tables as CSV files and
//! one Excel workbook ([`ExportChoice`] picks them). The CLI (`deepread convert --to`) and the
//! app's Export dialog both go through here.
//!
//! One document per output folder: figures go to `OUT/images/{page}_{n}.png` (the links
//! [`crate::markdown::MarkdownOptions::for_page`] writes), so two documents exported into the same
//! folder would share, and overwrite, that folder's figures.
//!
//! Every file is written to a temporary file beside its final name and renamed into place, so an
//! export that is killed half-way never leaves a truncated file under a final name.

mod atomic;
mod docx;
mod epub;
mod error;
mod figures;
mod finished_pages;
mod formats;
mod html;
mod json;
mod language;
mod markdown_file;
mod math;
mod sanitize;
mod tables;
mod tables_csv;
mod xlsx;

use std::path::{Path, PathBuf};

use deepread_pdf::Document;

use crate::events::{Block, PageEvent, PageStats};

pub use docx::write_docx;
pub use epub::{write_epub, EpubChapters};
pub use error::ExportError;
pub use figures::{crop_figure, figure_render_size, write_figures, FIGURES_DIR, FIGURE_DPI};
pub use finished_pages::FinishedPages;
pub use formats::{ExportChoice, ExportFormat};
pub use html::{markdown_to_safe_html, write_html};
pub use json::{write_json, JSON_FORMAT, JSON_VERSION};
pub use markdown_file::{document_markdown, write_markdown, PAGE_SPLIT};
pub(crate) use math::escape_html;
pub use tables::{document_tables, page_tables, Cell, Table};
pub use tables_csv::write_csv;
pub use xlsx::write_xlsx;

/// A finished (or partly finished) reading of one document, ready to be written out.
#[derive(Debug)]
pub struct DocumentExport<'a> {
    /// The document the pages were read from: figures are cropped from its pages.
    pub document: &'a Document,
    /// Shown as the HTML title and recorded in the JSON sidecar.
    pub title: String,
    /// The pages read, in any order, at most one per page index. Pages of the document that are
    /// missing here are exported as unread (an empty Markdown section), so section `i` of the
    /// Markdown is always page `i`.
    pub pages: Vec<PageExport>,
    /// `Some(i)`: the export is page `i` alone (its files one page of a file per page); `None`: the whole
    /// document.
    pub section: Option<usize>,
}

/// One page of a reading, as the reading reported it when the page ended.
#[derive(Debug, Clone, PartialEq)]
pub struct PageExport {
    /// 0-based page index in the document.
    pub index: usize,
    pub status: PageStatus,
    /// The page's blocks in reading order, as in [`PageEvent::Done`].
    pub blocks: Vec<Block>,
    /// The page's final Markdown, made with [`crate::markdown::MarkdownOptions::for_page`], so its
    /// figure links are `images/{page}_{n}.png`.
    pub markdown: String,
    /// Who read the page and what it took, for pages that were read (done or looped).
    pub stats: Option<PageStats>,
}

/// How the reading of a page ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageStatus {
    /// Read to the end.
    Read,
    /// Stopped in a repetition loop: the blocks and Markdown are what came before the loop.
    Looped { reason: String },
    /// The page could not be read; it has no blocks.
    Failed { error: String },
    /// Not read (yet): the reading was stopped or has not reached it.
    NotRead,
}

impl PageExport {
    /// The export of a page whose reading has ended, from the event that ended it; `None` for
    /// events that do not end a page.
    pub fn from_event(event: &PageEvent) -> Option<PageExport> {
        let (index, status, blocks, markdown, stats) = match event {
            PageEvent::Done {
                page,
                markdown,
                blocks,
                stats,
            } => (
                *page,
                PageStatus::Read,
                blocks.clone(),
                markdown.clone(),
                Some(stats.clone()),
            ),
            PageEvent::Looped {
                page,
                markdown,
                blocks,
                reason,
                stats,
            } => (
                *page,
                PageStatus::Looped {
                    reason: reason.to_string(),
                },
                blocks.clone(),
                markdown.clone(),
                Some(stats.clone()),
            ),
            PageEvent::Failed { page, error } => (
                *page,
                PageStatus::Failed {
                    error: error.clone(),
                },
                Vec::new(),
                String::new(),
                None,
            ),
            _ => return None,
        };
        Some(PageExport {
            index,
            status,
            blocks,
            markdown,
            stats,
        })
    }
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExportSummary {
    /// Every file written, figures included.
    pub files: Vec<PathBuf>,
    /// How many figure images were written.
    pub figures: usize,
}

/// One entry per page of the document, in page order: the page's export, or `None` when it was
/// not read.
fn pages_in_order<'e>(
    export: &'e DocumentExport<'_>,
) -> Result<Vec<(usize, Option<&'e PageExport>)>, ExportError> {
    let count = export.document.page_count();
    let mut pages: Vec<Option<&PageExport>> = vec![None; count];
    for page in &export.pages {
        let slot = pages
            .get_mut(page.index)
            .ok_or(ExportError::PageOutOfRange {
                index: page.index,
                count,
            })?;
        if slot.is_some() {
            return Err(ExportError::DuplicatePage { index: page.index });
        }
        *slot = Some(page);
    }
    match export.section {
        None => Ok(pages.into_iter().enumerate().collect()),
        Some(index) if index < count => Ok(vec![(index, pages[index])]),
        Some(index) => Err(ExportError::PageOutOfRange { index, count }),
    }
}

/// `OUT/<stem>.<extension>`, refusing stems that are not a plain file name.
fn output_file(out_dir: &Path, stem: &str, extension: &str) -> Result<PathBuf, ExportError> {
    let plain =
        !stem.is_empty() && stem != "." && stem != ".." && !stem.contains(['/', '\\', '\0']);
    if !plain {
        return Err(ExportError::InvalidStem {
            stem: stem.to_owned(),
        });
    }
    Ok(out_dir.join(format!("{stem}.{extension}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::PageStats;

    #[test]
    fn pages_are_taken_from_the_events_that_end_them() {
        let blocks = vec![Block {
            id: 0,
            label: "text".into(),
            boxes: Vec::new(),
            markdown: "Hello".into(),
            warning: None,
        }];
        let done = PageEvent::Done {
            page: 3,
            markdown: "Hello".into(),
            blocks: blocks.clone(),
            stats: PageStats {
                prompt_tokens: 1,
                generated_tokens: 1,
                vision_ms: 0,
                prefill_ms: 0,
                decode_ms: 0,
                tokens_per_s: 0.0,
                recognizer: "text-layer".into(),
            },
        };
        let page = PageExport::from_event(&done).unwrap();
        assert_eq!((page.index, &page.status), (3, &PageStatus::Read));
        assert_eq!((page.blocks, page.markdown.as_str()), (blocks, "Hello"));
        assert_eq!(
            page.stats.map(|s| (s.recognizer, s.generated_tokens)),
            Some(("text-layer".to_owned(), 1)),
            "a read page keeps who read it"
        );

        let failed = PageEvent::Failed {
            page: 1,
            error: "out of memory".into(),
        };
        let page = PageExport::from_event(&failed).unwrap();
        assert_eq!(
            page.status,
            PageStatus::Failed {
                error: "out of memory".into()
            }
        );
        assert_eq!(page.stats, None, "a failed page was not read");
        assert!(PageExport::from_event(&PageEvent::Started { page: 0 }).is_none());
    }

    #[test]
    fn stems_must_be_plain_file_names() {
        let out = Path::new("/tmp/out");
        assert_eq!(
            output_file(out, "report", "md").unwrap(),
            Path::new("/tmp/out/report.md")
        );
        for stem in ["", ".", "..", "a/b", "a\\b"] {
            assert!(output_file(out, stem, "md").is_err(), "{stem:?}");
        }
    }
}
