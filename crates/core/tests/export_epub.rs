//! EPUB export of a real reading: every page of xiongpu1_agent's Vastera manual, with the real
//! DeepSeek-OCR output recorded for it, built into an export as the app builds one. Each book
//! must pass epubcheck without an error or a warning, and must hold what the recordings hold:
//! the test finds headings, figures and lines of text in the raw recordings itself.
//!
//! Needs PDFium (DEEPREAD_PDFIUM) and epubcheck (Debian's `epubcheck`, which
//! scripts/install-system-deps.sh installs; DEEPREAD_SKIP_EPUBCHECK=1 skips that check).

mod common;

use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{manual_dir, raw_of_stdout_capture, read};
use deepread_core::export::{write_epub, DocumentExport, EpubChapters, PageExport};
use deepread_core::grounding::END_OF_SENTENCE;
use deepread_pdf::Document;

const TITLE: &str = "Vastera manual";
const PAGES: usize = 25;
const OPS_NS: &str = "http://www.idpf.org/2007/ops";

fn open_manual() -> Document {
    let document = Document::open(&manual_dir().join("source.pdf"), None).unwrap();
    assert_eq!(document.page_count(), PAGES);
    document
}

/// The raw model output recorded for page `index` (0-based).
fn recording(index: usize) -> String {
    let file = manual_dir().join(format!("page{:03}.stdout.md", index + 1));
    raw_of_stdout_capture(&read(&file))
}

/// A page as the reading pipeline reports it from its recording.
fn read_page(index: usize) -> PageExport {
    common::read_page(index, &recording(index))
}

// What the recordings hold, found in the raw text.

/// The recording's lines of content: grounding tags and the end-of-sentence token left out.
fn content_lines(raw: &str) -> Vec<String> {
    raw.replace(END_OF_SENTENCE, "")
        .lines()
        .filter(|line| !line.starts_with("<|ref|>"))
        .map(|line| line.trim().to_owned())
        .filter(|line| !line.is_empty())
        .collect()
}

/// `# Text` … `###### Text`: the level and the text.
fn heading(line: &str) -> Option<(u8, String)> {
    let hashes = line.bytes().take_while(|b| *b == b'#').count();
    let text = line[hashes..].strip_prefix(' ')?;
    (1..=6)
        .contains(&hashes)
        .then(|| (hashes as u8, text.trim().to_owned()))
}

fn headings(pages: &[usize], max_level: u8) -> Vec<String> {
    pages
        .iter()
        .flat_map(|&i| content_lines(&recording(i)))
        .filter_map(|line| heading(&line))
        .filter(|(level, _)| *level <= max_level)
        .map(|(_, text)| text)
        .collect()
}

/// The figure files the recordings' image blocks become: `images/{page}_{n}.png`.
fn figures(pages: &[usize]) -> BTreeSet<String> {
    let mut links = BTreeSet::new();
    for &page in pages {
        let count = recording(page).matches("<|ref|>image<|/ref|>").count();
        links.extend((0..count).map(|n| format!("images/{page}_{n}.png")));
    }
    links
}

/// A few lines of plain prose per page, in page order: no Markdown or HTML syntax, so they must
/// reach the book as they are. The first, the longest and the last of each page.
fn distinctive_lines(page: usize) -> Vec<String> {
    let plain: Vec<String> = content_lines(&recording(page))
        .into_iter()
        .filter(|line| {
            line.chars().count() >= 20
                && !line.contains([
                    '*', '_', '`', '[', ']', '<', '>', '|', '\\', '$', '#', '&', '~',
                ])
                && !line.starts_with(['-', '+', '!'])
                && !line.starts_with(|c: char| c.is_ascii_digit())
        })
        .map(|line| collapse(&line))
        .collect();
    let Some(longest) = plain.iter().max_by_key(|line| line.len()) else {
        return Vec::new();
    };
    let mut picked: Vec<&String> = vec![&plain[0], longest, &plain[plain.len() - 1]];
    picked.sort_by_key(|line| plain.iter().position(|l| l == *line));
    picked.dedup();
    picked.into_iter().cloned().collect()
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

// What the book holds, read back from the file.

struct Book {
    files: HashMap<String, Vec<u8>>,
    /// The package document's folder, which its hrefs are relative to.
    base: String,
    title: String,
    language: String,
    /// Manifest: href → media type.
    manifest: HashMap<String, String>,
    /// The spine's content documents, in reading order.
    spine: Vec<String>,
    /// The table of contents: (href, text, nesting depth).
    toc: Vec<(String, String, usize)>,
}

impl Book {
    fn open(path: &Path) -> Book {
        let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
        let first = archive.by_index(0).unwrap();
        assert_eq!(first.name(), "mimetype", "the mimetype comes first");
        assert_eq!(
            first.compression(),
            zip::CompressionMethod::Stored,
            "mimetype is stored"
        );
        drop(first);
        let mut files = HashMap::new();
        for i in 0..archive.len() {
            let mut entry = archive.by_index(i).unwrap();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            files.insert(entry.name().to_owned(), bytes);
        }
        assert_eq!(files["mimetype"], b"application/epub+zip");

        let container = String::from_utf8(files["META-INF/container.xml"].clone()).unwrap();
        let container = roxmltree::Document::parse(&container).unwrap();
        let opf_path = container
            .descendants()
            .find(|n| n.has_tag_name("rootfile"))
            .and_then(|n| n.attribute("full-path"))
            .unwrap()
            .to_owned();
        let base = opf_path
            .rfind('/')
            .map_or(String::new(), |i| opf_path[..=i].to_owned());
        let mut book = Book {
            files,
            base,
            title: String::new(),
            language: String::new(),
            manifest: HashMap::new(),
            spine: Vec::new(),
            toc: Vec::new(),
        };
        book.read_package(&opf_path);
        book
    }

    fn text(&self, href: &str) -> String {
        let name = format!("{}{href}", self.base);
        let bytes = self
            .files
            .get(&name)
            .unwrap_or_else(|| panic!("{name} missing"));
        String::from_utf8(bytes.clone()).unwrap()
    }

    fn read_package(&mut self, opf_path: &str) {
        let opf = String::from_utf8(self.files[opf_path].clone()).unwrap();
        let opf = roxmltree::Document::parse(&opf).unwrap();
        let dc = |name: &str| {
            opf.descendants()
                .find(|n| n.has_tag_name(("http://purl.org/dc/elements/1.1/", name)))
                .and_then(|n| n.text())
                .unwrap_or_default()
                .to_owned()
        };
        self.title = dc("title");
        self.language = dc("language");
        let mut ids = HashMap::new();
        let mut nav = None;
        for item in opf.descendants().filter(|n| n.has_tag_name("item")) {
            let href = item.attribute("href").unwrap().to_owned();
            let media_type = item.attribute("media-type").unwrap().to_owned();
            if item.attribute("properties") == Some("nav") {
                nav = Some(href.clone());
            }
            ids.insert(item.attribute("id").unwrap().to_owned(), href.clone());
            self.manifest.insert(href, media_type);
        }
        self.spine = opf
            .descendants()
            .filter(|n| n.has_tag_name("itemref"))
            .map(|n| ids[n.attribute("idref").unwrap()].clone())
            .collect();
        self.read_toc(&nav.expect("a navigation document"));
    }

    fn read_toc(&mut self, nav_href: &str) {
        let nav = self.text(nav_href);
        let nav = parse_xhtml(&nav);
        let toc = nav
            .descendants()
            .find(|n| n.has_tag_name("nav") && n.attribute((OPS_NS, "type")) == Some("toc"))
            .expect("a toc nav");
        self.toc = toc
            .descendants()
            .filter(|n| n.has_tag_name("a"))
            .map(|a| {
                let depth = a.ancestors().filter(|n| n.has_tag_name("ol")).count();
                (
                    a.attribute("href").unwrap().to_owned(),
                    element_text(a),
                    depth,
                )
            })
            .collect();
    }

    /// The spine's content documents, as text.
    fn chapters(&self) -> Vec<String> {
        self.spine
            .iter()
            .filter(|href| self.manifest[*href] == "application/xhtml+xml")
            .map(|href| self.text(href))
            .collect()
    }
}

fn parse_xhtml(text: &str) -> roxmltree::Document<'_> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(text, options).unwrap_or_else(|e| panic!("{e}"))
}

/// An element's text, whitespace collapsed.
fn element_text(node: roxmltree::Node<'_, '_>) -> String {
    let text: String = node
        .descendants()
        .filter(|n| n.is_text())
        .map(|n| n.text().unwrap_or_default())
        .collect();
    collapse(&text)
}

/// The chapter's body text, whitespace collapsed.
fn body_text(chapter: &str) -> String {
    let doc = parse_xhtml(chapter);
    let body = doc.descendants().find(|n| n.has_tag_name("body")).unwrap();
    element_text(body)
}

fn heading_texts(chapter: &str) -> Vec<String> {
    let doc = parse_xhtml(chapter);
    doc.descendants()
        .filter(|n| matches!(n.tag_name().name(), "h1" | "h2" | "h3" | "h4" | "h5" | "h6"))
        .map(element_text)
        .collect()
}

fn image_sources(chapter: &str) -> Vec<String> {
    let doc = parse_xhtml(chapter);
    doc.descendants()
        .filter(|n| n.has_tag_name("img"))
        .map(|n| n.attribute("src").unwrap().to_owned())
        .collect()
}

// epubcheck.

/// Runs epubcheck on the book and requires no fatal error, no error and no warning.
fn epubcheck(book: &Path) {
    if std::env::var_os("DEEPREAD_SKIP_EPUBCHECK").is_some_and(|v| v == "1") {
        eprintln!("DEEPREAD_SKIP_EPUBCHECK=1: {} not checked", book.display());
        return;
    }
    let program = find_on_path("epubcheck").unwrap_or_else(|| {
        panic!(
            "epubcheck is not on PATH: install the Debian package `epubcheck` \
             (scripts/install-system-deps.sh does), or set DEEPREAD_SKIP_EPUBCHECK=1"
        )
    });
    // Debian's /usr/bin/epubcheck is the jar itself, run through binfmt_misc, which a container
    // may not have: run a jar with java.
    let mut command = if is_jar(&program) {
        let mut java = Command::new("java");
        java.arg("-jar").arg(&program);
        java
    } else {
        Command::new(&program)
    };
    let report_dir = tempfile::tempdir().unwrap();
    let report = report_dir.path().join("report.json");
    let output = command
        .arg(book)
        .arg("--json")
        .arg(&report)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "epubcheck failed:\n{log}");
    let report: serde_json::Value = serde_json::from_str(&read(&report)).unwrap();
    let checker = &report["checker"];
    for count in ["nFatal", "nError", "nWarning"] {
        assert_eq!(
            checker[count].as_u64(),
            Some(0),
            "epubcheck {count}: {:#}",
            report["messages"]
        );
    }
}

fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

fn is_jar(program: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(program)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == *b"PK\x03\x04")
}

// The checks.

fn export(
    document: &Document,
    pages: &[usize],
    chapters: EpubChapters,
) -> (tempfile::TempDir, PathBuf) {
    let out = tempfile::tempdir().unwrap();
    let export = DocumentExport {
        section: None,
        document,
        title: TITLE.into(),
        pages: pages.iter().map(|&i| read_page(i)).collect(),
    };
    let summary = write_epub(&export, out.path(), "manual", chapters).unwrap();
    let path = out.path().join("manual.epub");
    assert_eq!(summary.files, std::slice::from_ref(&path));
    assert_eq!(summary.figures, figures(pages).len());
    let written: Vec<_> = std::fs::read_dir(out.path()).unwrap().collect();
    assert_eq!(written.len(), 1, "the book is the only file written");
    (out, path)
}

/// Checks one exported book against the recordings of `pages`.
fn check_book(path: &Path, pages: &[usize], chapters: EpubChapters) -> Book {
    epubcheck(path);
    let book = Book::open(path);
    assert_eq!(book.title, TITLE);
    assert_eq!(book.language, "en", "the manual is in English");
    let documents = book.chapters();

    // The table of contents lists the chapters in reading order.
    let toc_hrefs: Vec<&str> = book.toc.iter().map(|(href, _, _)| href.as_str()).collect();
    let spine: Vec<&str> = book
        .spine
        .iter()
        .map(String::as_str)
        .filter(|href| book.manifest[*href] == "application/xhtml+xml")
        .collect();
    assert_eq!(toc_hrefs, spine);
    let toc_titles: Vec<&str> = book.toc.iter().map(|(_, text, _)| text.as_str()).collect();
    match chapters {
        EpubChapters::Document => assert_eq!(toc_titles, [TITLE]),
        EpubChapters::Heading(level) => {
            let expected = headings(pages, level);
            let opening = opening_text_expected(pages, level);
            let titles = if opening {
                &toc_titles[1..]
            } else {
                &toc_titles[..]
            };
            assert_eq!(
                titles, expected,
                "one entry per heading of level <= {level}"
            );
            if opening {
                assert_eq!(toc_titles[0], TITLE);
            }
        }
    }

    // Every heading, in order, across the chapters.
    let book_headings: Vec<String> = documents.iter().flat_map(|d| heading_texts(d)).collect();
    assert_eq!(book_headings, headings(pages, 6));

    // Every figure is in the book, declared as a PNG, and shown exactly once.
    let expected_figures = figures(pages);
    assert!(!expected_figures.is_empty());
    let shown: Vec<String> = documents.iter().flat_map(|d| image_sources(d)).collect();
    assert_eq!(
        shown.iter().cloned().collect::<BTreeSet<_>>(),
        expected_figures
    );
    assert_eq!(shown.len(), expected_figures.len());
    for link in &expected_figures {
        assert_eq!(
            book.manifest.get(link).map(String::as_str),
            Some("image/png"),
            "{link}"
        );
        let png = &book.files[&format!("{}{link}", book.base)];
        let (w, h) = image::load_from_memory(png).unwrap().to_rgb8().dimensions();
        assert!(w > 0 && h > 0, "{link}");
    }

    // No text lost, none out of order: each page's distinctive lines, one after another.
    let text = documents
        .iter()
        .map(|d| body_text(d))
        .collect::<Vec<_>>()
        .join(" ");
    let mut from = 0;
    let mut checked = 0;
    for &page in pages {
        for line in distinctive_lines(page) {
            let at = text[from..]
                .find(&line)
                .unwrap_or_else(|| panic!("page {}: {line:?} missing or out of order", page + 1));
            from += at + line.len();
            checked += 1;
        }
    }
    assert!(checked >= 2 * pages.len(), "only {checked} lines checked");
    book
}

/// Whether the book has something before its first heading of level <= `level`: a note for an
/// unread first page, or a first line of the recordings that is not such a heading.
fn opening_text_expected(pages: &[usize], level: u8) -> bool {
    if pages.first() != Some(&0) {
        return true;
    }
    let first_line = pages
        .iter()
        .flat_map(|&page| content_lines(&recording(page)))
        .next();
    match first_line.as_deref().and_then(heading) {
        Some((first_level, _)) => first_level > level,
        None => first_line.is_some(),
    }
}

fn all_pages() -> Vec<usize> {
    (0..PAGES).collect()
}

#[test]
fn one_chapter_for_the_whole_document() {
    let document = open_manual();
    let (_out, path) = export(&document, &all_pages(), EpubChapters::Document);
    let book = check_book(&path, &all_pages(), EpubChapters::Document);
    let chapters = book.chapters();
    assert_eq!(chapters.len(), 1);
    // Where each page of the document begins, for reading systems that show print pages.
    let doc = parse_xhtml(&chapters[0]);
    let breaks: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute((OPS_NS, "type")) == Some("pagebreak"))
        .map(|n| n.attribute("title").unwrap())
        .collect();
    let numbers: Vec<String> = (1..=PAGES).map(|n| n.to_string()).collect();
    assert_eq!(breaks, numbers);
}

#[test]
fn a_chapter_at_each_top_level_heading() {
    let document = open_manual();
    let pages = all_pages();
    let (_out, path) = export(&document, &pages, EpubChapters::Heading(1));
    let book = check_book(&path, &pages, EpubChapters::Heading(1));
    let h1 = headings(&pages, 1);
    assert!(h1.len() >= 10, "the manual has top-level headings");
    assert_eq!(
        book.chapters().len(),
        h1.len(),
        "page 1 opens with a heading"
    );
    // Each chapter opens with its own heading (after the page's start marker).
    for (chapter, title) in book.chapters().iter().zip(&h1) {
        assert_eq!(heading_texts(chapter).first(), Some(title));
    }
}

#[test]
fn second_level_headings_nest_under_the_first() {
    let document = open_manual();
    let pages = all_pages();
    let (_out, path) = export(&document, &pages, EpubChapters::Heading(2));
    let book = check_book(&path, &pages, EpubChapters::Heading(2));
    // The depth each entry must have: 2 under an earlier top-level heading, else 1.
    let mut seen_h1 = false;
    let mut depths = Vec::new();
    for line in pages.iter().flat_map(|&i| content_lines(&recording(i))) {
        match heading(&line) {
            Some((1, _)) => {
                seen_h1 = true;
                depths.push(1);
            }
            Some((2, _)) => depths.push(if seen_h1 { 2 } else { 1 }),
            _ => {}
        }
    }
    let toc_depths: Vec<usize> = book.toc.iter().map(|(_, _, depth)| *depth).collect();
    assert_eq!(toc_depths, depths);
}

#[test]
fn text_before_the_first_heading_is_kept_in_a_chapter_named_after_the_document() {
    // Pages 2 to 25: page 1 was not read, and the first top-level heading is pages later.
    let document = open_manual();
    let pages: Vec<usize> = (1..PAGES).collect();
    assert!(opening_text_expected(&pages, 1));
    let (_out, path) = export(&document, &pages, EpubChapters::Heading(1));
    let book = check_book(&path, &pages, EpubChapters::Heading(1));
    let opening = body_text(&book.chapters()[0]);
    assert!(
        opening.contains("Page 1: This page was not read."),
        "{opening}"
    );
    // Every page before the first top-level heading is in the opening chapter.
    let first_h1_page = pages
        .iter()
        .copied()
        .find(|&p| {
            content_lines(&recording(p))
                .iter()
                .any(|l| matches!(heading(l), Some((1, _))))
        })
        .unwrap();
    assert!(first_h1_page > 2);
    for page in 1..first_h1_page {
        for line in distinctive_lines(page) {
            assert!(opening.contains(&line), "page {}: {line:?}", page + 1);
        }
    }
}
