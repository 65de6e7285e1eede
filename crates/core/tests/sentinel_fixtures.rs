//! The loop sentinel on every real output in the fixtures.

mod common;

use common::{all_captures, random_chunks, Capture, Rng};
use deepread_core::markdown::MarkdownOptions;
use deepread_core::{LoopReason, PageOutcome, PageReader, Parser, SentinelConfig, Verdict};

/// The captures in which the model looped until it was cut off, found by reading them: each ends
/// in the middle of a repetition, with no end token, and re-encoding its text with the DeepSeek
/// tokenizer (fixtures/tokenizer) gives 8185, 8138 and 8192 tokens: the 8192-token cap.
struct Looped {
    file: &'static str,
    /// The text where the loop begins (its first occurrence in the file is the loop's start).
    loop_begins: &'static str,
    /// The repeated unit as it first appears.
    first_unit: &'static str,
    /// The unit as it repeats at the very end of the file.
    tail_unit: &'static str,
    why: &'static str,
}

const LOOPED: [Looped; 3] = [
    Looped {
        file: "exercises/Uebungsblatt-CDS-Mathe1_Ana10_Loesungen_p005/output.md",
        loop_begins: "\\qquad \\qquad \\qquad",
        first_unit: "\\qquad ",
        tail_unit: "\\q \\q",
        why: "after `&= 1` in equation (32), `\\qquad`/`\\quad`/`\\q` for 16 kB, cut mid-word",
    },
    Looped {
        file: "exercises/Uebungsblatt_CDS_Mathe2_Ana9_Loesungen_p010/output.md",
        loop_begins: "underline[underline[",
        first_unit: "underline[",
        tail_unit: "overline[",
        why: "the last equation's box list becomes `underline[`/`overline[` for 33 kB, cut at `overline[`",
    },
    Looped {
        file: "theory/mathe_2_theorie-21/output.md",
        loop_begins: "\\frac{1}{4}",
        first_unit: "\\frac{1}{4} \\int \\vec{r} \\quad \\vec{r} = ",
        tail_unit: "\\int \\vec{r}",
        why: "one equation counts `\\frac{1}{n} \\int \\vec{r}` up to n = 785 and stops mid-command",
    },
];

fn looped_capture(looped: &Looped) -> Capture {
    all_captures()
        .into_iter()
        .find(|c| c.name.ends_with(looped.file))
        .unwrap()
}

fn is_looped(capture: &Capture) -> bool {
    LOOPED.iter().any(|l| capture.name.ends_with(l.file))
}

/// Streams a capture in pieces of 1 to 8 characters, about a token each, until the sentinel
/// fires; returns the outcome and how many bytes had been fed by then.
fn read_streamed(capture: &Capture, config: SentinelConfig, seed: u64) -> (PageOutcome, usize) {
    let mut reader = PageReader::new(config);
    let mut fed = 0;
    for piece in random_chunks(&capture.raw, &mut Rng::new(seed), 8) {
        fed += piece.len();
        if let Verdict::Looped { .. } = reader.push(piece, 1).verdict {
            break;
        }
    }
    (reader.finish(&MarkdownOptions::for_page(0)), fed)
}

#[test]
fn the_looped_captures_really_end_in_a_repetition() {
    // The facts behind the list, checked on the files themselves.
    for looped in &LOOPED {
        let raw = looped_capture(looped).raw;
        assert!(raw.contains(looped.loop_begins), "{}", looped.file);
        let tail = &raw[raw.len() - 2000..];
        let repeats = tail.matches(looped.tail_unit).count();
        assert!(repeats >= 40, "{}: {}", looped.file, looped.why);
        assert!(!raw.contains("end▁of▁sentence"), "{}", looped.file);
    }
}

#[test]
fn every_capture_that_loops_is_stopped_soon_after_the_loop_begins() {
    let config = SentinelConfig::default();
    let window = config.window;
    for looped in &LOOPED {
        let capture = looped_capture(looped);
        let file = looped.file;
        let loop_start = capture.raw.find(looped.loop_begins).unwrap();
        for seed in [1, 2, 3] {
            let (outcome, fed) = read_streamed(&capture, config.clone(), seed);
            let PageOutcome::Looped {
                reason, kept_bytes, ..
            } = &outcome
            else {
                panic!("{file} ({}) not stopped", looped.why);
            };
            assert!(
                matches!(reason, LoopReason::RepeatedText { .. }),
                "{file}: {reason}"
            );
            // Stopped within three windows of text after the loop began, far before its end.
            assert!(fed <= loop_start + 3 * window, "{file}: fed {fed}");
            assert!(fed < capture.raw.len() / 3, "{file}: fed {fed}");
            // Kept: what came before the loop (minus at most the looping block's tags), and
            // at most one instance of the repeated unit.
            assert!(*kept_bytes + 64 >= loop_start, "{file}: kept {kept_bytes}");
            assert!(
                *kept_bytes <= loop_start + looped.first_unit.len(),
                "{file}: kept {kept_bytes}"
            );
        }
    }
}

#[test]
fn a_stopped_page_keeps_its_blocks_before_the_loop() {
    let looped = &LOOPED[1];
    let capture = looped_capture(looped);
    let (outcome, _) = read_streamed(&capture, SentinelConfig::default(), 9);
    let PageOutcome::Looped {
        markdown, blocks, ..
    } = outcome
    else {
        panic!("not stopped");
    };
    // The text just before the loop is there, the loop is not.
    assert!(
        markdown.contains("f) \n\nGradient und Hesse-Matrix ergeben sich zu"),
        "{markdown}"
    );
    assert!(!markdown.contains("underline[underline"), "{markdown}");
    // Every block before the looping one is intact; of the looping one (which began inside its
    // box list) at most one instance of the unit is left.
    let loop_start = capture.raw.find(looped.loop_begins).unwrap();
    let looping_block = capture.raw[..loop_start].rfind("<|ref|>").unwrap();
    let mut before = Parser::new();
    before.push(&capture.raw[..looping_block]);
    before.finish();
    let intact = before.blocks().len();
    assert_eq!(&blocks[..intact], before.blocks());
    assert!(blocks.len() <= intact + 1);
    for rest in &blocks[intact..] {
        assert!(rest.markdown.len() <= looped.first_unit.len(), "{rest:?}");
    }
}

#[test]
fn no_capture_that_ends_cleanly_is_stopped() {
    let clean: Vec<Capture> = all_captures()
        .into_iter()
        .filter(|c| !is_looped(c))
        .collect();
    // 25 manual pages + 3 images (xiongpu1), 13 thukiy, 3 docling, 1 receipt, 6 report pages,
    // 6 cloudman6: everything but the three above.
    assert_eq!(clean.len(), 57);
    for capture in &clean {
        let (outcome, _) = read_streamed(capture, SentinelConfig::default(), 5);
        match outcome {
            PageOutcome::Complete { .. } => {}
            PageOutcome::Looped { reason, .. } => panic!("{}: {reason}", capture.name),
        }
    }
}

#[test]
fn the_clean_manual_pages_all_reached_their_end_token() {
    let manual: Vec<Capture> = all_captures()
        .into_iter()
        .filter(|c| c.name.contains("vastera_manual/"))
        .collect();
    assert_eq!(manual.len(), 25);
    for capture in &manual {
        let (outcome, _) = read_streamed(capture, SentinelConfig::default(), 11);
        let PageOutcome::Complete {
            saw_end_of_sentence,
            ..
        } = outcome
        else {
            panic!("{} stopped", capture.name);
        };
        assert!(saw_end_of_sentence, "{}", capture.name);
    }
}

/// A real block of the manual, written again and again with a box or a text that stays the same.
fn repeated_block(times: usize, same_box: bool) -> (String, usize) {
    let capture = all_captures()
        .into_iter()
        .find(|c| c.name.ends_with("vastera_manual/page005.stdout.md"))
        .unwrap();
    let second = capture.raw[1..].find("<|ref|>").unwrap() + 1;
    let first_block = &capture.raw[..second];
    let mut raw = first_block.to_owned();
    let loop_start = raw.len();
    for i in 0..times {
        let block = if same_box {
            first_block.replace("\n\n", &format!(" ({i})\n\n"))
        } else {
            first_block.replacen("[[", &format!("[[{i}"), 1)
        };
        raw.push_str(&block);
    }
    (raw, loop_start)
}

fn stop_reason(raw: &str) -> (LoopReason, usize, usize) {
    let mut reader = PageReader::new(SentinelConfig::default());
    for piece in common::char_chunks(raw) {
        reader.push(piece, 1);
    }
    match reader.finish(&MarkdownOptions::for_page(0)) {
        PageOutcome::Looped {
            reason,
            kept_bytes,
            blocks,
            ..
        } => (reason, kept_bytes, blocks.len()),
        PageOutcome::Complete { .. } => panic!("not stopped"),
    }
}

#[test]
fn the_same_box_again_and_again_is_a_loop() {
    let (raw, second_instance) = repeated_block(6, true);
    let (reason, kept, blocks) = stop_reason(&raw);
    assert!(
        matches!(reason, LoopReason::RepeatedBox { count: 4, .. }),
        "{reason}"
    );
    assert_eq!(kept, second_instance);
    assert_eq!(blocks, 1);
}

#[test]
fn the_same_text_block_after_block_is_a_loop() {
    let (raw, second_instance) = repeated_block(6, false);
    let (reason, kept, blocks) = stop_reason(&raw);
    assert_eq!(reason, LoopReason::RepeatedBlockText { count: 4 });
    assert_eq!(kept, second_instance);
    assert_eq!(blocks, 1);
}

#[test]
fn a_page_that_spends_its_budget_without_ending_is_stopped_whole() {
    let capture = all_captures()
        .into_iter()
        .find(|c| c.name.ends_with("vastera_manual/page007.stdout.md"))
        .unwrap();
    let config = SentinelConfig {
        token_budget: Some(300),
        ..SentinelConfig::default()
    };
    let (outcome, fed) = read_streamed(&capture, config, 3);
    let PageOutcome::Looped {
        reason, kept_bytes, ..
    } = outcome
    else {
        panic!("not stopped");
    };
    assert_eq!(
        reason,
        LoopReason::BudgetSpent {
            tokens: 284,
            budget: 300
        }
    );
    assert_eq!(kept_bytes, fed);
}
