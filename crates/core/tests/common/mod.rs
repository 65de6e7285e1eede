//! The real DeepSeek-OCR outputs in the shared fixtures, as raw model text.
//!
//! Each capture format is unwrapped as its producer wrote it:
//! - `pageNNN.stdout.md`, `stdout.md` (xiongpu1_agent): stdout of the reference HF `infer`: a header
//!   (`=====`, `BASE: ...`, `PATCHES: ...`, `=====`), the streamed text, whose end-of-sentence token
//!   the reference `NoEOSTextStreamer` printed as `\n`, then a `=====...` footer with statistics;
//! - `output.md`, `*.output.md`: the raw text as is;
//! - `*_det.md` (delinquentq): the vLLM PDF script's raw pages, each followed by
//!   `\n\n<--- Page Split --->\n`, end-of-sentence already removed;
//! - cloudman6 `*.json`: the `raw_text` field; thukiy `output.json`: a copy of `output.md` (checked).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use deepread_core::grounding::END_OF_SENTENCE;

pub fn fixtures_dir() -> PathBuf {
    let dir = match std::env::var_os("DEEPREAD_FIXTURES") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"),
    };
    assert!(
        dir.join("grounding").is_dir(),
        "fixtures not found at {} (set DEEPREAD_FIXTURES)",
        dir.display()
    );
    dir
}

pub fn grounding_dir() -> PathBuf {
    fixtures_dir().join("grounding")
}

/// One page of real model output.
#[derive(Debug, Clone)]
pub struct Capture {
    /// Path relative to `grounding/`, with `#page` for multi-page files.
    pub name: String,
    pub raw: String,
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Every real output in the fixtures, one capture per page, in a stable order.
pub fn all_captures() -> Vec<Capture> {
    let root = grounding_dir();
    let mut files = Vec::new();
    files_under(&root, &mut files);
    files.sort();
    let mut captures = Vec::new();
    for path in files {
        let name = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains("groundtruth/") {
            continue;
        }
        if file.ends_with("stdout.md") {
            captures.push(Capture {
                raw: raw_of_stdout_capture(&read(&path)),
                name,
            });
        } else if file == "output.md" || file.ends_with(".output.md") {
            captures.push(Capture {
                raw: read(&path),
                name,
            });
        } else if file.ends_with("_det.md") {
            captures.extend(pages_of_vllm_det(&name, &read(&path)));
        } else if name.starts_with("output_only/cloudman6_webui/") && file.ends_with(".json") {
            captures.push(Capture {
                raw: json_field(&path, "raw_text"),
                name,
            });
        }
    }
    assert!(
        captures.len() >= 60,
        "only {} captures found",
        captures.len()
    );
    captures
}

pub fn json_field(path: &Path, field: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(&read(path)).unwrap();
    value[field]
        .as_str()
        .unwrap_or_else(|| panic!("{}: no string field {field}", path.display()))
        .to_owned()
}

const STDOUT_FOOTER: &str = "==================================================\nimage size";

/// The model's text from a reference `infer` stdout capture, end-of-sentence restored.
pub fn raw_of_stdout_capture(capture: &str) -> String {
    let mut rules = capture.match_indices("=====================\n");
    let (header_end, rule) = rules.nth(1).expect("capture header");
    let body_start = header_end + rule.len();
    let footer = capture[body_start..]
        .find(STDOUT_FOOTER)
        .map(|i| body_start + i)
        .expect("capture footer");
    let body = &capture[body_start..footer];
    // The streamer printed the end-of-sentence token as "\n"; every page here ended normally.
    let text = body
        .strip_suffix('\n')
        .expect("capture ends with the printed end-of-sentence");
    format!("{text}{END_OF_SENTENCE}")
}

const VLLM_PAGE_SPLIT: &str = "\n\n<--- Page Split --->\n";

fn pages_of_vllm_det(name: &str, text: &str) -> Vec<Capture> {
    let pages: Vec<&str> = text.split(VLLM_PAGE_SPLIT).collect();
    let (last, pages) = pages.split_last().unwrap();
    assert!(last.is_empty(), "{name}: text after the last page split");
    pages
        .iter()
        .enumerate()
        .map(|(i, raw)| Capture {
            name: format!("{name}#{i}"),
            raw: (*raw).to_owned(),
        })
        .collect()
}

/// Small deterministic random numbers (xorshift64*) for chunking text.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n.max(1)
    }
}

/// Cuts text into pieces of 1..=max_chars characters, never inside a character.
pub fn random_chunks<'a>(text: &'a str, rng: &mut Rng, max_chars: usize) -> Vec<&'a str> {
    let mut chunks = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let want = 1 + rng.below(max_chars);
        let end = rest.char_indices().nth(want).map_or(rest.len(), |(i, _)| i);
        chunks.push(&rest[..end]);
        rest = &rest[end..];
    }
    chunks
}

/// Cuts text into single characters.
pub fn char_chunks(text: &str) -> Vec<&str> {
    text.char_indices()
        .map(|(i, c)| &text[i..i + c.len_utf8()])
        .collect()
}

/// xiongpu1_agent's Vastera manual: its source PDF and a recorded reading of each of its 25 pages.
pub fn manual_dir() -> PathBuf {
    grounding_dir().join("with_source/xiongpu1_agent/vastera_manual")
}

/// The raw model output recorded for the manual's page `number` (1-based, as the files are named).
pub fn manual_capture(number: usize) -> String {
    raw_of_stdout_capture(&read(
        &manual_dir().join(format!("page{number:03}.stdout.md")),
    ))
}

/// A page as the reading pipeline reports it from the raw output `raw`: parsed blocks and the
/// page's final Markdown.
pub fn read_page(index: usize, raw: &str) -> deepread_core::export::PageExport {
    let mut parser = deepread_core::Parser::new();
    parser.push(raw);
    parser.finish();
    deepread_core::export::PageExport {
        index,
        status: deepread_core::export::PageStatus::Read,
        blocks: parser.blocks().to_vec(),
        markdown: deepread_core::markdown::markdown_from_raw(
            raw,
            &deepread_core::markdown::MarkdownOptions::for_page(index),
        ),
        stats: None,
    }
}
