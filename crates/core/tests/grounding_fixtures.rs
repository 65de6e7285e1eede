//! The grounding parser on every real output in the fixtures.

mod common;

use common::{all_captures, char_chunks, grounding_dir, random_chunks, read, Capture, Rng};
use deepread_core::grounding::{BlockEvent, Parser, SegmentKind, Tag};
use deepread_core::{Block, BoxNorm};

fn parse_whole(raw: &str) -> Parser {
    let mut parser = Parser::new();
    parser.push(raw);
    parser.finish();
    parser
}

/// Parses piece by piece and rebuilds the blocks from the events alone.
fn parse_streamed(pieces: &[&str]) -> (Parser, Vec<Block>) {
    let mut parser = Parser::new();
    let mut events = Vec::new();
    for piece in pieces {
        events.extend(parser.push(piece));
    }
    events.extend(parser.finish());
    (parser, blocks_from_events(&events))
}

fn blocks_from_events(events: &[BlockEvent]) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut closed = Vec::new();
    for event in events {
        match event {
            BlockEvent::Opened {
                block_id,
                label,
                boxes,
                warning,
            } => {
                assert_eq!(*block_id as usize, blocks.len(), "blocks open in order");
                blocks.push(Block {
                    id: *block_id,
                    label: label.clone(),
                    boxes: boxes.clone(),
                    markdown: String::new(),
                    warning: warning.clone(),
                });
            }
            BlockEvent::Text { block_id, delta } => {
                assert!(!closed.contains(block_id), "text after close");
                blocks[*block_id as usize].markdown.push_str(delta);
            }
            BlockEvent::Closed { block_id } => closed.push(*block_id),
        }
    }
    assert_eq!(closed.len(), blocks.len(), "every block closes once");
    blocks
}

const TAG_STRINGS: [(&str, Tag); 5] = [
    ("<|ref|>", Tag::Ref),
    ("<|/ref|>", Tag::RefEnd),
    ("<|det|>", Tag::Det),
    ("<|/det|>", Tag::DetEnd),
    ("<｜end▁of▁sentence｜>", Tag::EndOfSentence),
];

fn assert_every_byte_accounted_for(capture: &Capture, parser: &Parser) {
    let raw = &capture.raw;
    let mut at = 0;
    let mut rebuilt = String::new();
    for segment in parser.segments() {
        assert_eq!(segment.range.start, at, "{}: gap or overlap", capture.name);
        rebuilt.push_str(&raw[segment.range.clone()]);
        at = segment.range.end;
    }
    assert_eq!(at, raw.len(), "{}: segments stop early", capture.name);
    assert_eq!(&rebuilt, raw, "{}", capture.name);

    // Every tag in the text was read as a tag, and nothing else was.
    for (text, tag) in TAG_STRINGS {
        let in_text = raw.matches(text).count();
        let parsed = parser
            .segments()
            .iter()
            .filter(|s| s.kind == SegmentKind::Tag(tag))
            .count();
        assert_eq!(parsed, in_text, "{}: {text}", capture.name);
    }

    // A block's Markdown is exactly its content segments.
    for block in parser.blocks() {
        let content: String = parser
            .segments()
            .iter()
            .filter(|s| s.kind == SegmentKind::Content && s.block == Some(block.id))
            .map(|s| &raw[s.range.clone()])
            .collect();
        assert_eq!(
            content, block.markdown,
            "{} block {}",
            capture.name, block.id
        );
        for (text, _) in TAG_STRINGS {
            assert!(
                !block.markdown.contains(text),
                "{} block {} holds {text}",
                capture.name,
                block.id
            );
        }
    }

    // Separators are newlines, except whitespace before the first block.
    for segment in parser.segments() {
        if segment.kind == SegmentKind::Separator {
            let text = &raw[segment.range.clone()];
            let before_blocks = segment.block.is_none();
            assert!(
                text.chars()
                    .all(|c| c == '\n' || (before_blocks && c.is_whitespace())),
                "{}: separator {text:?}",
                capture.name
            );
        }
    }
}

#[test]
fn every_byte_of_every_capture_is_a_tag_a_label_boxes_a_separator_or_content() {
    for capture in all_captures() {
        let parser = parse_whole(&capture.raw);
        assert_every_byte_accounted_for(&capture, &parser);
    }
}

#[test]
fn how_the_text_is_cut_into_deltas_changes_nothing() {
    let mut rng = Rng::new(0x5eed);
    for capture in all_captures() {
        let whole = parse_whole(&capture.raw);
        let mut cuts = vec![char_chunks(&capture.raw)];
        for max in [3, 17, 200] {
            cuts.push(random_chunks(&capture.raw, &mut rng, max));
        }
        for pieces in cuts {
            let (streamed, from_events) = parse_streamed(&pieces);
            assert_eq!(streamed.blocks(), whole.blocks(), "{}", capture.name);
            assert_eq!(streamed.segments(), whole.segments(), "{}", capture.name);
            assert_eq!(from_events, whole.blocks(), "{}: events", capture.name);
        }
    }
}

#[test]
fn clean_captures_give_one_block_per_tag_group_each_with_one_box() {
    let clean: Vec<Capture> = all_captures()
        .into_iter()
        .filter(|c| c.name.starts_with("with_source/xiongpu1_agent/"))
        .collect();
    assert_eq!(clean.len(), 28);
    for capture in clean {
        let parser = parse_whole(&capture.raw);
        let groups = capture.raw.matches("<|ref|>").count();
        assert_eq!(parser.blocks().len(), groups, "{}", capture.name);
        for block in parser.blocks() {
            assert_eq!(block.boxes.len(), 1, "{} {block:?}", capture.name);
            assert_eq!(block.warning, None, "{} {block:?}", capture.name);
        }
        assert!(parser.saw_end_of_sentence(), "{}", capture.name);
    }
}

fn capture_named(suffix: &str) -> Capture {
    all_captures()
        .into_iter()
        .find(|c| c.name.ends_with(suffix))
        .unwrap_or_else(|| panic!("no capture {suffix}"))
}

fn block_after<'a>(parser: &'a Parser, raw_snippet: &str) -> &'a Block {
    let raw = parser.raw();
    let at = raw.find(raw_snippet).expect("snippet in capture");
    let id = (0..parser.blocks().len() as u32)
        .rev()
        .find(|id| parser.block_start(*id).is_some_and(|s| s <= at))
        .expect("a block starts before the snippet");
    &parser.blocks()[id as usize]
}

fn b(x1: u16, y1: u16, x2: u16, y2: u16) -> BoxNorm {
    BoxNorm { x1, y1, x2, y2 }
}

#[test]
fn out_of_range_and_swapped_coordinates_are_clamped_and_ordered() {
    // Boxes as written in the captures (pairs.json notes them), clamped to 0..=999 and ordered.
    let cases = [
        (
            "exercises/Uebungsblatt-CDS-Mathe1_Ana6_Loesungen_p001/output.md",
            "[[147, -463, 919, 504]]",
            b(147, 0, 919, 504),
        ),
        (
            "exercises/Uebungsblatt-CDS-Mathe1_Ana9_Loesungen_p006/output.md",
            "[[1200, 281, 465, 302]]",
            b(465, 281, 999, 302),
        ),
        (
            "exercises/Uebungsblatt_CDS_Mathe1_LA4_Loesungen_p015/output.md",
            "[[120, 0, 380, 1970]]",
            b(120, 0, 380, 999),
        ),
        (
            "theory/mathe_theorie-67/output.md",
            "[[110, -1, 444, 43]]",
            b(110, 0, 444, 43),
        ),
    ];
    for (file, payload, expected) in cases {
        let capture = capture_named(file);
        let parser = parse_whole(&capture.raw);
        let block = block_after(&parser, payload);
        assert_eq!(block.boxes, vec![expected], "{file}");
        assert_eq!(block.warning, None, "{file}");
    }
}

#[test]
fn malformed_box_lists_give_a_block_without_boxes_and_keep_the_text() {
    // (capture, raw text of the det payload, text that must survive as Markdown of that block)
    let cases = [
        (
            "theory/mathe_theorie-03/output.md",
            "[[44, raw 666, 501, 707]]",
            "→ 3 Aussagen, die miteinander verknüpft sind",
        ),
        (
            "theory/mathe_theorie-67/output.md",
            "[[110, \\frac{1}{1+x^2}}",
            "\\frac{1}{1+x^2}} \\, dx = \\frac{1}{2} \\ln",
        ),
        (
            "exercises/Uebungsblatt-CDS-Mathe1_Ana10_Loesungen_p008/output.md",
            "<|det|>[0.5]\\(",
            "\\(\\frac{f'(x)}{x}\\) = \\(\\cosh'(2 - x)",
        ),
        (
            "exercises/Uebungsblatt_CDS_Mathe1_LA4_Loesungen_p015/output.md",
            "[[120, 0, 380, <br/>",
            "<br/> 0</td><td>0</td>",
        ),
        (
            "exercises/Uebungsblatt_CDS_Mathe2_Ana9_Loesungen_p010/output.md",
            "<|det|>\\[ \\underline{\\nabla} V",
            "\\[ \\underline{\\nabla} V = \\begin{bmatrix}",
        ),
    ];
    for (file, payload, kept) in cases {
        let capture = capture_named(file);
        let parser = parse_whole(&capture.raw);
        let block = block_after(&parser, payload);
        assert!(block.boxes.is_empty(), "{file}: {block:?}");
        assert!(block.warning.is_some(), "{file}: {block:?}");
        assert!(block.markdown.contains(kept), "{file}: {block:?}");
    }
}

#[test]
fn an_output_cut_inside_a_tag_group_ends_with_a_warned_block() {
    // This capture ends with "<|ref|>equation": the label never closed.
    let capture = capture_named("exercises/Uebungsblatt-CDS-Mathe1_Ana6_Loesungen_p001/output.md");
    assert!(capture.raw.ends_with("<|ref|>equation"));
    let parser = parse_whole(&capture.raw);
    let last = parser.blocks().last().unwrap();
    assert_eq!(last.label, "equation");
    assert!(last.boxes.is_empty());
    assert_eq!(last.markdown, "");
    assert!(last.warning.is_some());

    // Its truncated det "[[147," followed by the next block.
    let truncated = block_after(&parser, "<|det|>[[147,\n");
    assert!(truncated.boxes.is_empty());
    assert!(truncated.warning.is_some());
}

#[test]
fn text_before_the_first_tag_is_an_unlabelled_block() {
    let capture = capture_named("docling_md_deepseek/deepseek_example.output.md");
    assert!(capture.raw.starts_with("order to compute the TED score."));
    let parser = parse_whole(&capture.raw);
    let first = &parser.blocks()[0];
    assert_eq!(first.label, "text");
    assert!(first.boxes.is_empty());
    assert_eq!(first.warning, None);
    let expected = &capture.raw[..capture.raw.find("<|ref|>").unwrap()];
    assert_eq!(first.markdown, expected.trim_end_matches('\n'));
}

#[test]
fn a_block_with_no_content_is_kept_empty() {
    // cloudman6 sample.json: "<|/det|>\n<|ref|>table_caption..." — a table block with nothing in it.
    let capture = capture_named("cloudman6_webui/sample.json");
    let parser = parse_whole(&capture.raw);
    assert_eq!(parser.blocks()[0].label, "table");
    assert_eq!(parser.blocks()[0].markdown, "");
    assert_eq!(parser.blocks()[1].label, "table_caption");
}

#[test]
fn thukiy_json_outputs_are_copies_of_the_markdown_files() {
    // Only output.md is parsed as a capture; the JSON beside it must hold the same text.
    let theory = grounding_dir().join("with_source/thukiy_R-G-/theory");
    let mut seen = 0;
    for entry in std::fs::read_dir(&theory).unwrap() {
        let dir = entry.unwrap().path();
        let json = dir.join("output.json");
        if json.is_file() {
            assert_eq!(
                common::json_field(&json, "markdown"),
                read(&dir.join("output.md"))
            );
            seen += 1;
        }
    }
    assert_eq!(seen, 6);
}

#[test]
fn plain_text_output_is_one_unlabelled_block() {
    let raw = "  Free OCR output\nwith <b>html</b> and < signs\n\n\n";
    let parser = parse_whole(raw);
    assert_eq!(parser.blocks().len(), 1);
    assert_eq!(parser.blocks()[0].label, "text");
    assert_eq!(
        parser.blocks()[0].markdown,
        "Free OCR output\nwith <b>html</b> and < signs"
    );
}

#[test]
fn a_tag_cut_between_deltas_never_leaks_into_block_text() {
    let raw = "<|ref|>title<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|>\n# T\n\n<|ref|>text<|/ref|><|det|>[[5, 6, 7, 8]]<|/det|>\nx<｜end▁of▁sentence｜>";
    let mut parser = Parser::new();
    let cut = raw.find("<|ref|>text").unwrap() + 3;
    let events = parser.push(&raw[..cut]);
    let texts: String = events
        .iter()
        .filter_map(|e| match e {
            BlockEvent::Text { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    // Neither the half tag nor the newlines that may end the block are reported yet.
    assert_eq!(texts, "# T");
    parser.push(&raw[cut..]);
    parser.finish();
    assert_eq!(parser.blocks()[0].markdown, "# T");
    assert_eq!(parser.blocks()[1].markdown, "x");
    assert!(parser.saw_end_of_sentence());
}
