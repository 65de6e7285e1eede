//! A person's corrections of blocks, from the window: kept in the cache beside the model's text, laid over
//! every finished page a reading sends the window, and over the page a correction was just made to or
//! dropped from.

use deepread_core::corrections::{correct_page, Correction, Laid};
use deepread_core::events::Block;
use deepread_core::export::PageExport;
use deepread_core::pipeline::Cache;
use deepread_core::PageEvent;
use serde::Serialize;
use tauri::{AppHandle, Manager};

use crate::reading::Readings;

/// A page as the window shows it: the reading with the person's corrections laid over it.
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename = "corrected", rename_all = "camelCase")]
pub struct CorrectedPage {
    page: usize,
    markdown: String,
    blocks: Vec<Block>,
    /// The blocks that show a person's correction.
    corrected: Vec<u32>,
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
        let mut differing = Vec::new();
        for (correction, laid) in of_page.into_iter().zip(laid) {
            match laid {
                Laid::Applied { block } => corrected.push(block),
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

/// Keeps `markdown` as the person's text for block `block_id` of `page` as last read in this window, in place
/// of whatever correction showed on that block and of the differing one kept under `replacing` (the person kept
/// theirs over a new reading). The model's own text drops the correction instead.
#[tauri::command]
pub async fn correct_block(
    id: String,
    page: usize,
    block_id: u32,
    markdown: String,
    replacing: Option<u32>,
    app: AppHandle,
) -> Result<CorrectedPage, String> {
    off_the_window(app, move |readings| {
        let (cache, read) = read_page(readings, &id, page)?;
        keep_correction(cache, &id, read, block_id, markdown, replacing)
    })
    .await
}

/// Shows the reading's own text for block `block_id` of `page` again: drops the corrections laid over it, or,
/// when none is, the differing one kept under that block.
#[tauri::command]
pub async fn forget_correction(
    id: String,
    page: usize,
    block_id: u32,
    app: AppHandle,
) -> Result<CorrectedPage, String> {
    off_the_window(app, move |readings| {
        let (cache, read) = read_page(readings, &id, page)?;
        drop_correction(cache, &id, read, block_id)
    })
    .await
}

fn keep_correction(
    cache: &Cache,
    id: &str,
    read: PageExport,
    block_id: u32,
    markdown: String,
    replacing: Option<u32>,
) -> Result<CorrectedPage, String> {
    let page = read.index;
    let block = read
        .blocks
        .iter()
        .find(|b| b.id == block_id)
        .ok_or_else(|| format!("Page {} has no block {}.", page + 1, block_id + 1))?;
    let mut stale = laid_on(&read, &kept_corrections(cache, id)?, block_id);
    stale.extend(replacing);
    stale.retain(|&kept_under| kept_under != block_id);
    if markdown.trim() == block.markdown.trim() {
        stale.push(block_id);
    } else {
        let correction = Correction {
            page,
            block_id,
            boxes: block.boxes.clone(),
            original: block.markdown.clone(),
            markdown,
        };
        // Saved before the stale ones go: a process stopped in between loses nothing.
        cache
            .save_correction(id, &correction)
            .map_err(|e| format!("Your correction could not be kept in the cache: {e}"))?;
    }
    forget(cache, id, page, &stale)?;
    Ok(CorrectedPage::of(read, &kept_corrections(cache, id)?))
}

fn drop_correction(
    cache: &Cache,
    id: &str,
    read: PageExport,
    block_id: u32,
) -> Result<CorrectedPage, String> {
    let mut dropped = laid_on(&read, &kept_corrections(cache, id)?, block_id);
    if dropped.is_empty() {
        dropped.push(block_id);
    }
    forget(cache, id, read.index, &dropped)?;
    Ok(CorrectedPage::of(read, &kept_corrections(cache, id)?))
}

/// Runs `work` on a blocking thread: the cache's queries must not hold up the window.
async fn off_the_window<T: Send + 'static>(
    app: AppHandle,
    work: impl FnOnce(&Readings) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tauri::async_runtime::spawn_blocking(move || work(&app.state::<Readings>()))
        .await
        .map_err(|e| format!("The correction was not made: {e}"))?
}

fn read_page<'r>(
    readings: &'r Readings,
    id: &str,
    page: usize,
) -> Result<(&'r Cache, PageExport), String> {
    let cache = readings.cache().ok_or(
        "Corrections cannot be kept: the cache could not be opened (the status bar said why).",
    )?;
    let read = readings
        .finished_page(id, page)
        .ok_or_else(|| format!("Page {} has not been read yet.", page + 1))?;
    Ok((cache, read))
}

fn kept_corrections(cache: &Cache, id: &str) -> Result<Vec<Correction>, String> {
    cache
        .corrections(id)
        .map_err(|e| format!("The corrections could not be read from the cache: {e}"))
}

fn forget(cache: &Cache, id: &str, page: usize, blocks: &[u32]) -> Result<(), String> {
    for &block in blocks {
        cache
            .forget_correction(id, page, block)
            .map_err(|e| format!("The correction could not be dropped from the cache: {e}"))?;
    }
    Ok(())
}

/// The blocks the corrections laid over block `block` of `read` are kept under (a block renumbered by a
/// re-read keeps its correction under its old place).
fn laid_on(read: &PageExport, corrections: &[Correction], block: u32) -> Vec<u32> {
    let of_page = corrections.iter().filter(|c| c.page == read.index);
    let laid = correct_page(&mut read.clone(), corrections);
    of_page
        .zip(laid)
        .filter(|(_, laid)| *laid == Laid::Applied { block })
        .map(|(correction, _)| correction.block_id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepread_core::events::PageStats;
    use deepread_core::markdown::{markdown_from_raw, MarkdownOptions};
    use deepread_core::Parser;
    use deepread_store::{DocumentRecord, Store};

    const RAW: &str = "<|ref|>title<|/ref|><|det|>[[80, 40, 920, 90]]<|/det|>\n# Pump manual\n\n\
        <|ref|>text<|/ref|><|det|>[[80, 100, 920, 200]]<|/det|>\nThe pump delivers 12 l/mim.\n";

    fn done(page: usize, raw: &str) -> PageEvent {
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
        }
    }

    /// A real cache file with the document in it, and its runtime.
    fn cache() -> (tempfile::TempDir, tokio::runtime::Runtime, Cache) {
        let dir = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let store = runtime
            .block_on(Store::open(&dir.path().join("cache.sqlite3")))
            .unwrap();
        let cache = Cache::new(store, runtime.handle().clone());
        cache
            .remember_document(&DocumentRecord {
                hash: HASH.into(),
                path: dir.path().join("manual.pdf"),
                title: None,
                page_count: 5,
                first_opened_at_ms: 0,
                last_opened_at_ms: 0,
            })
            .unwrap();
        (dir, runtime, cache)
    }

    const HASH: &str = "5f1d";

    fn read(page: usize, raw: &str) -> PageExport {
        PageExport::from_event(&done(page, raw)).unwrap()
    }

    #[test]
    fn an_edit_is_kept_beside_the_reading_and_shows_until_dropped() {
        let (_dir, _runtime, cache) = cache();
        let shown =
            keep_correction(&cache, HASH, read(2, RAW), 1, "12 l/min.".into(), None).unwrap();
        assert_eq!(shown.corrected, vec![1]);
        assert_eq!(shown.blocks[1].markdown, "12 l/min.");
        let kept = cache.corrections(HASH).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(
            kept[0].original.trim(),
            "The pump delivers 12 l/mim.",
            "the model's text is kept"
        );

        // A second edit of the block replaces the first.
        let shown =
            keep_correction(&cache, HASH, read(2, RAW), 1, "12 L/min.".into(), None).unwrap();
        assert_eq!(shown.blocks[1].markdown, "12 L/min.");
        assert_eq!(cache.corrections(HASH).unwrap().len(), 1);

        let shown = drop_correction(&cache, HASH, read(2, RAW), 1).unwrap();
        assert!(shown.corrected.is_empty());
        assert_eq!(
            shown.blocks[1].markdown.trim(),
            "The pump delivers 12 l/mim."
        );
        assert!(cache.corrections(HASH).unwrap().is_empty());
    }

    #[test]
    fn saving_the_readings_own_text_drops_the_correction() {
        let (_dir, _runtime, cache) = cache();
        keep_correction(&cache, HASH, read(2, RAW), 1, "12 l/min.".into(), None).unwrap();
        let shown = keep_correction(
            &cache,
            HASH,
            read(2, RAW),
            1,
            "The pump delivers 12 l/mim.\n".into(),
            None,
        )
        .unwrap();
        assert!(shown.corrected.is_empty() && shown.differing.is_empty());
        assert!(cache.corrections(HASH).unwrap().is_empty());
    }

    #[test]
    fn keeping_an_edit_over_a_new_reading_moves_it_to_the_block_now_there() {
        let (_dir, _runtime, cache) = cache();
        keep_correction(&cache, HASH, read(0, RAW), 1, "12 l/min.".into(), None).unwrap();
        // Read again: a new block came first and the text changed, so block 2 is where block 1 was.
        let reread = RAW
            .replacen(
                "<|ref|>title",
                "<|ref|>text<|/ref|><|det|>[[80, 5, 920, 30]]<|/det|>\nDraft\n\n<|ref|>title",
                1,
            )
            .replace("12 l/mim.", "twelve litres a minute.");
        let shown = CorrectedPage::of(read(0, &reread), &cache.corrections(HASH).unwrap());
        assert_eq!(shown.differing.len(), 1);
        assert_eq!(shown.differing[0].block, Some(2));

        let shown = keep_correction(
            &cache,
            HASH,
            read(0, &reread),
            2,
            "12 l/min.".into(),
            Some(1),
        )
        .unwrap();
        assert_eq!(
            (shown.corrected.clone(), shown.differing.len()),
            (vec![2], 0)
        );
        let kept = cache.corrections(HASH).unwrap();
        assert_eq!(kept.len(), 1, "the old place is dropped: {kept:?}");
        assert_eq!(kept[0].block_id, 2);
        assert_eq!(
            kept[0].original.trim(),
            "The pump delivers twelve litres a minute."
        );
    }

    #[test]
    fn dropping_a_differing_edit_forgets_it_and_a_renumbered_one_is_dropped_from_its_block() {
        let (_dir, _runtime, cache) = cache();
        keep_correction(&cache, HASH, read(0, RAW), 1, "12 l/min.".into(), None).unwrap();
        let changed = RAW.replace("12 l/mim.", "twelve litres a minute.");
        let shown = drop_correction(&cache, HASH, read(0, &changed), 1).unwrap();
        assert!(shown.differing.is_empty() && shown.corrected.is_empty());
        assert!(cache.corrections(HASH).unwrap().is_empty());

        // Kept under block 1, shown on block 2 after a block came first: dropping block 2's drops it.
        keep_correction(&cache, HASH, read(0, RAW), 1, "12 l/min.".into(), None).unwrap();
        let moved = RAW.replacen(
            "<|ref|>title",
            "<|ref|>text<|/ref|><|det|>[[80, 5, 920, 30]]<|/det|>\nDraft\n\n<|ref|>title",
            1,
        );
        assert_eq!(
            CorrectedPage::of(read(0, &moved), &cache.corrections(HASH).unwrap()).corrected,
            vec![2]
        );
        let shown = drop_correction(&cache, HASH, read(0, &moved), 2).unwrap();
        assert!(shown.corrected.is_empty());
        assert!(cache.corrections(HASH).unwrap().is_empty());
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
