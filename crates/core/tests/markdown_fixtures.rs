//! Our page Markdown against the `result.mmd` files the reference wrote beside its raw outputs.
//!
//! The xiongpu1_agent captures come from the reference HF `infer(save_results=True)`: it strips the
//! output, links figures as `images/{n}.jpg`, deletes the other tag groups and does not collapse
//! blank lines. With the same figure template and no collapsing, our Markdown must equal the
//! published file byte for byte.

mod common;

use std::path::PathBuf;

use common::{grounding_dir, raw_of_stdout_capture, read};
use deepread_core::markdown::{markdown_from_raw, MarkdownOptions};

/// (raw capture, published result) for every capture that has one.
fn published_pairs() -> Vec<(PathBuf, PathBuf)> {
    let base = grounding_dir().join("with_source/xiongpu1_agent");
    let mut pairs = Vec::new();
    let manual = base.join("vastera_manual");
    for n in 1..=25 {
        pairs.push((
            manual.join(format!("page{n:03}.stdout.md")),
            manual.join(format!("page{n:03}.result.mmd")),
        ));
    }
    for dir in std::fs::read_dir(base.join("images")).unwrap() {
        let dir = dir.unwrap().path();
        pairs.push((dir.join("stdout.md"), dir.join("result.mmd")));
    }
    pairs.sort();
    assert_eq!(pairs.len(), 28);
    pairs
}

fn hf_infer_style() -> MarkdownOptions {
    MarkdownOptions {
        page: 0,
        figure_template: "images/{n}.jpg".to_owned(),
        collapse_blank_lines: false,
    }
}

#[test]
fn markdown_equals_the_published_result_of_every_capture() {
    for (capture, published) in published_pairs() {
        let raw = raw_of_stdout_capture(&read(&capture));
        let ours = markdown_from_raw(&raw, &hf_infer_style());
        assert_eq!(ours, read(&published), "{}", published.display());
    }
}

#[test]
fn pdf_style_markdown_is_the_published_result_with_blank_lines_collapsed() {
    // The PDF script differs from `infer` only in collapsing newline runs to two, and in naming
    // figures `images/{page}_{n}`.
    for (capture, published) in published_pairs() {
        let raw = raw_of_stdout_capture(&read(&capture));
        let options = MarkdownOptions {
            page: 4,
            figure_template: "images/{page}_{n}.jpg".to_owned(),
            collapse_blank_lines: true,
        };
        let ours = markdown_from_raw(&raw, &options);
        let mut expected = read(&published).replace("](images/", "](images/4_");
        while expected.contains("\n\n\n") {
            expected = expected.replace("\n\n\n", "\n\n");
        }
        assert_eq!(ours, expected, "{}", published.display());
    }
}

#[test]
fn figure_links_follow_the_template() {
    let capture =
        grounding_dir().join("with_source/xiongpu1_agent/vastera_manual/page001.stdout.md");
    let raw = raw_of_stdout_capture(&read(&capture));
    let ours = markdown_from_raw(&raw, &MarkdownOptions::for_page(12));
    assert!(ours.contains("![](images/12_0.png)\n"), "{ours}");
    assert!(!ours.contains("<|"), "{ours}");
}
