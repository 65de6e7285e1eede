//! A person's corrections of blocks, from the window: kept in the cache beside the model's text, laid over
//! every finished page a reading sends the window, and over the page a correction was just made to or
//! dropped from.

pub mod commands;

use deepread_core::corrections::{correct_page, Correction, Laid};
use deepread_core::events::Block;
use deepread_core::export::PageExport;
use deepread_core::PageEvent;
use serde::Serialize;

/// A page as the window shows it: the reading with the person's corrections laid over it.
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename = "corrected", rename_all = "camelCase")]
pub struct CorrectedPage {
    page: usize,
    markdown: String,
    blocks: Vec<Block>,
    /// The blocks that show a person's correction.
    corrected: Vec<u32>,
    /// The blocks the person added (their ids are from `ADDED_FROM` up).
    added: Vec<u32>,
    /// Corrections the reading no longer matches, for the person to keep or drop.
    differing: Vec<DifferingCorrection>,
}

#[derive(Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DifferingCorrection {
    /// The block the correction is kept under.
    corrected_block: u32,
    /// The person's Markdown.
    mine: String,
    /// The block now where the corrected one was, and its text.
    block: Option<u32>,
    now: String,
}

/// What a reading sends the window: its events, and after a finished page with corrections, that page corrected.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum WindowEvent {
    Page(PageEvent),
    Corrected(CorrectedPage),
}

impl CorrectedPage {
    /// `page` as read, with the corrections of it laid over.
    pub fn of(mut page: PageExport, corrections: &[Correction]) -> Self {
        let of_page: Vec<&Correction> = corrections
            .iter()
            .filter(|c| c.page == page.index)
            .collect();
        let laid = correct_page(&mut page, corrections);
        let mut corrected = Vec::new();
        let mut added = Vec::new();
        let mut differing = Vec::new();
        for (correction, laid) in of_page.into_iter().zip(laid) {
            match laid {
                Laid::Applied { block } => corrected.push(block),
                Laid::Added { block } => added.push(block),
                Laid::Differs { block, now } => differing.push(DifferingCorrection {
                    corrected_block: correction.block_id,
                    mine: correction.markdown.clone(),
                    block,
                    now,
                }),
            }
        }
        CorrectedPage {
            page: page.index,
            markdown: page.markdown,
            blocks: page.blocks,
            corrected,
            added,
            differing,
        }
    }
}

/// The events the window gets for `event`: the event itself, and after a page that finished with blocks and
/// has corrections, the page corrected.
pub fn for_window(event: PageEvent, corrections: &[Correction]) -> Vec<WindowEvent> {
    let corrected = match &event {
        PageEvent::Done { page, .. } | PageEvent::Looped { page, .. }
            if corrections.iter().any(|c| c.page == *page) =>
        {
            PageExport::from_event(&event).map(|read| CorrectedPage::of(read, corrections))
        }
        _ => None,
    };
    let mut events = vec![WindowEvent::Page(event)];
    events.extend(corrected.map(WindowEvent::Corrected));
    events
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use deepread_core::events::PageStats;
    use deepread_core::markdown::{markdown_from_raw, MarkdownOptions};
    use deepread_core::Parser;

    pub(crate) const RAW: &str =
        "<|ref|>title<|/ref|><|det|>[[80, 40, 920, 90]]<|/det|>\n# Pump manual\n\n\
        <|ref|>text<|/ref|><|det|>[[80, 100, 920, 200]]<|/det|>\nThe pump delivers 12 l/mim.\n";

    pub(crate) fn done(page: usize, raw: &str) -> PageEvent {
        let mut parser = Parser::new();
        parser.push(raw);
        parser.finish();
        PageEvent::Done {
            page,
            markdown: markdown_from_raw(raw, &MarkdownOptions::for_page(page)),
            blocks: parser.blocks().to_vec(),
            stats: PageStats {
                prompt_tokens: 0,
                generated_tokens: 0,
                vision_ms: 0,
                prefill_ms: 0,
                decode_ms: 0,
                tokens_per_s: 0.0,
                recognizer: "test".into(),
            },
        }
    }

    fn correction(page: usize, original: &str, markdown: &str) -> Correction {
        let PageEvent::Done { blocks, .. } = done(page, RAW) else {
            unreachable!()
        };
        Correction {
            page,
            block_id: 1,
            boxes: blocks[1].boxes.clone(),
            original: original.into(),
            markdown: markdown.into(),
            label: None,
        }
    }

    #[test]
    fn a_finished_page_with_a_correction_is_followed_by_the_page_corrected() {
        let fix = correction(
            3,
            "The pump delivers 12 l/mim.",
            "The pump delivers 12 l/min.",
        );
        let events = for_window(done(3, RAW), &[fix]);
        let json = serde_json::to_value(&events).unwrap();
        assert_eq!(json[0]["type"], "done", "the reading's own event first");
        assert_eq!(
            json[0]["blocks"][1]["markdown"].as_str().unwrap().trim(),
            "The pump delivers 12 l/mim."
        );
        let corrected = &json[1];
        assert_eq!(corrected["type"], "corrected");
        assert_eq!(corrected["page"], 3);
        assert_eq!(corrected["corrected"], serde_json::json!([1]));
        assert_eq!(corrected["differing"], serde_json::json!([]));
        assert_eq!(
            corrected["blocks"][1]["markdown"],
            "The pump delivers 12 l/min."
        );
        let markdown = corrected["markdown"].as_str().unwrap();
        assert!(
            markdown.contains("12 l/min.") && !markdown.contains("l/mim."),
            "{markdown}"
        );
    }

    #[test]
    fn pages_without_corrections_and_other_events_pass_alone() {
        let fix = correction(3, "The pump delivers 12 l/mim.", "12 l/min.");
        assert_eq!(
            for_window(done(4, RAW), std::slice::from_ref(&fix)).len(),
            1
        );
        assert_eq!(for_window(PageEvent::Started { page: 3 }, &[fix]).len(), 1);
    }

    #[test]
    fn a_reading_that_wrote_something_else_asks_with_both_texts() {
        let fix = correction(0, "The pump delivers 12 l/mim.", "12 l/min.");
        let reread = RAW.replace("12 l/mim.", "twelve litres a minute.");
        let events = for_window(done(0, &reread), &[fix]);
        let json = serde_json::to_value(&events[1]).unwrap();
        assert_eq!(json["corrected"], serde_json::json!([]));
        assert_eq!(
            json["differing"],
            serde_json::json!([{
                "correctedBlock": 1,
                "mine": "12 l/min.",
                "block": 1,
                "now": "The pump delivers twelve litres a minute."
            }])
        );
        assert_eq!(
            json["blocks"][1]["markdown"].as_str().unwrap().trim(),
            "The pump delivers twelve litres a minute.",
            "the new reading shows until the person chooses"
        );
    }
}
