//! `OUT/<stem>.md`: the whole document's Markdown, as the reference PDF script writes it, with its
//! figures in `OUT/images/`.

use std::path::Path;

use super::atomic::{ensure_dir, write_atomically};
use super::figures::{page_figures, write_figures};
use super::{output_file, pages_in_order, DocumentExport, ExportError, ExportSummary, PageExport};

/// Written after every page, the last included, exactly as the reference PDF script does
/// (`content + '\n' + '\n<--- Page Split --->' + '\n'`): splitting the file on it gives the pages,
/// page `i` in section `i`, then an empty tail.
pub const PAGE_SPLIT: &str = "\n\n<--- Page Split --->\n";

/// The document's Markdown: every page of the document in order, each followed by
/// [`PAGE_SPLIT`]; a page that was not read is an empty section.
pub fn document_markdown(export: &DocumentExport<'_>) -> Result<String, ExportError> {
    let pages = pages_in_order(export)?;
    let mut out = String::new();
    for (_, page) in pages {
        if let Some(page) = page {
            warn_on_missing_figure_links(page);
            out.push_str(&page.markdown);
        }
        out.push_str(PAGE_SPLIT);
    }
    Ok(out)
}

/// Writes `OUT/<stem>.md` and the figures it links, creating `OUT` if needed. The figures are
/// written first, so a Markdown file on disk never links a figure that is not there yet.
pub fn write_markdown(
    export: &DocumentExport<'_>,
    out_dir: &Path,
    stem: &str,
) -> Result<ExportSummary, ExportError> {
    let path = output_file(out_dir, stem, "md")?;
    let markdown = document_markdown(export)?;
    ensure_dir(out_dir)?;
    let mut summary = write_figures(export, out_dir)?;
    write_atomically(&path, markdown.as_bytes())?;
    tracing::info!(path = %path.display(), figures = summary.figures, "wrote Markdown export");
    summary.files.push(path);
    Ok(summary)
}

/// A page whose Markdown was made with another figure template would link files we do not write;
/// say so rather than export broken links silently.
fn warn_on_missing_figure_links(page: &PageExport) {
    for figure in page_figures(page) {
        let link = format!("]({})", figure.link());
        if !page.markdown.contains(&link) {
            tracing::warn!(
                page = page.index,
                figure = %figure.link(),
                "the page's Markdown does not link this figure; was it made with MarkdownOptions::for_page?"
            );
        }
    }
}
