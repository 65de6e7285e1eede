//! Model Markdown as safe HTML: for each block the desktop UI streams, and `OUT/<stem>.html`, a
//! standalone page (inline CSS, no scripts, nothing fetched) with every page of the document.
//!
//! Math stays LaTeX text (`\( … \)`, `\[ … \]`, `$$ … $$`), for KaTeX in the app; the saved page
//! shows it as written, since it loads no script.

use std::path::Path;

use pulldown_cmark::{html::push_html, Options, Parser};

use super::atomic::{ensure_dir, write_atomically};
use super::language::document_language;
use super::math::{escape_html, protect_math};
use super::sanitize::sanitize;
use super::{
    output_file, pages_in_order, DocumentExport, ExportError, ExportSummary, PageExport, PageStatus,
};

/// Markdown (one block or one page) rendered with tables and strikethrough, its math kept
/// verbatim, then reduced to the allow-list of `sanitize.rs`. Safe to insert into a page as is.
pub fn markdown_to_safe_html(markdown: &str) -> String {
    let protected = protect_math(markdown);
    let html = render_markdown(&protected.text);
    sanitize(&protected.restore(&html))
}

fn render_markdown(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    push_html(&mut html, Parser::new_ext(markdown, options));
    html
}

/// Writes `OUT/<stem>.html`, creating `OUT` if needed. Its figures are the files
/// [`super::write_markdown`] (or [`super::write_figures`]) writes to `OUT/images/`.
pub fn write_html(
    export: &DocumentExport<'_>,
    out_dir: &Path,
    stem: &str,
) -> Result<ExportSummary, ExportError> {
    let path = output_file(out_dir, stem, "html")?;
    let html = document_html(export)?;
    ensure_dir(out_dir)?;
    write_atomically(&path, html.as_bytes())?;
    tracing::info!(path = %path.display(), "wrote HTML export");
    Ok(ExportSummary {
        files: vec![path],
        figures: 0,
    })
}

/// Scripts are also refused by the page's own policy, in case anything ever slipped through the
/// sanitizer; images may only come from files beside it.
const CONTENT_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' file:";

const STYLE: &str = "
:root { color-scheme: light dark; --rule: #c8c8c8; --muted: #6b6b6b; }
@media (prefers-color-scheme: dark) { :root { --rule: #4a4a4a; --muted: #a0a0a0; } }
body { font: 16px/1.55 system-ui, -apple-system, 'Segoe UI', sans-serif; max-width: 52rem;
       margin: 2rem auto; padding: 0 1.25rem; }
.page { border-top: 1px solid var(--rule); padding-top: 1rem; margin-top: 2rem; }
.page-number { color: var(--muted); font-size: 0.8rem; text-transform: uppercase; }
.page-note { color: var(--muted); font-style: italic; }
img { max-width: 100%; height: auto; }
center { display: block; text-align: center; }
table { border-collapse: collapse; margin: 1rem 0; display: block; overflow-x: auto; }
th, td { border: 1px solid var(--rule); padding: 0.3rem 0.55rem; vertical-align: top; }
pre { overflow-x: auto; padding: 0.75rem; border: 1px solid var(--rule); }
";

fn document_html(export: &DocumentExport<'_>) -> Result<String, ExportError> {
    let title = escape_html(&export.title);
    let language = document_language(export);
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"{language}\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_POLICY}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1 class=\"document-title\">{title}</h1>\n"
    );
    for (index, page) in pages_in_order(export)? {
        out.push_str(&page_section(index, page));
    }
    out.push_str("</body>\n</html>\n");
    Ok(out)
}

fn page_section(index: usize, page: Option<&PageExport>) -> String {
    let number = index + 1;
    let mut section = format!(
        "<section class=\"page\" id=\"page-{number}\">\n<div class=\"page-number\">Page {number}</div>\n"
    );
    if let Some(note) = page_note(page.map(|p| &p.status)) {
        section.push_str(&format!(
            "<p class=\"page-note\">{}</p>\n",
            escape_html(&note)
        ));
    }
    if let Some(page) = page {
        section.push_str(&markdown_to_safe_html(&page.markdown));
    }
    section.push_str("</section>\n");
    section
}

/// What a reader should know about a page that was not read to its end.
pub(super) fn page_note(status: Option<&PageStatus>) -> Option<String> {
    match status {
        Some(PageStatus::Read) => None,
        Some(PageStatus::Looped { reason }) => Some(format!(
            "Reading stopped because the model repeated itself ({reason}); the page may be incomplete."
        )),
        Some(PageStatus::Failed { error }) => Some(format!("This page could not be read: {error}")),
        Some(PageStatus::NotRead) | None => Some("This page was not read.".to_owned()),
    }
}
