//! The window's commands on corrections: keep a person's text for a block, drop it, add a block of a region
//! read again. Each answers with the page as it now shows.

use deepread_core::corrections::{correct_page, Correction, Laid, ADDED_FROM};
use deepread_core::events::BoxNorm;
use deepread_core::export::PageExport;
use deepread_core::pipeline::Cache;
use tauri::{AppHandle, Manager};

use super::CorrectedPage;
use crate::reading::Readings;

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
    if block_id >= ADDED_FROM {
        return rewrite_added(cache, id, read, block_id, markdown);
    }
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
            label: None,
        };
        // Saved before the stale ones go: a process stopped in between loses nothing.
        save(cache, id, &correction)?;
    }
    forget(cache, id, page, &stale)?;
    Ok(CorrectedPage::of(read, &kept_corrections(cache, id)?))
}

/// A block the person added, given new text; no text removes it.
fn rewrite_added(
    cache: &Cache,
    id: &str,
    read: PageExport,
    block_id: u32,
    markdown: String,
) -> Result<CorrectedPage, String> {
    let page = read.index;
    let kept = kept_corrections(cache, id)?;
    let added = kept
        .iter()
        .find(|c| c.page == page && c.block_id == block_id)
        .ok_or_else(|| format!("Page {} has no block you added there any more.", page + 1))?;
    if markdown.trim().is_empty() {
        forget(cache, id, page, &[block_id])?;
    } else {
        let rewritten = Correction {
            markdown,
            ..added.clone()
        };
        save(cache, id, &rewritten)?;
    }
    Ok(CorrectedPage::of(read, &kept_corrections(cache, id)?))
}

/// Keeps `markdown`, labelled `label`, as a block of its own over `region` of the page, after the blocks the
/// person added before.
fn add_region_block(
    cache: &Cache,
    id: &str,
    read: PageExport,
    region: BoxNorm,
    label: String,
    markdown: String,
) -> Result<CorrectedPage, String> {
    if markdown.trim().is_empty() {
        return Err("There is no text to add: the block would be empty.".to_owned());
    }
    let kept = kept_corrections(cache, id)?;
    let next = kept
        .iter()
        .filter(|c| c.page == read.index && c.is_added())
        .map(|c| c.block_id + 1)
        .max()
        .unwrap_or(ADDED_FROM);
    let added = Correction {
        page: read.index,
        block_id: next,
        boxes: vec![region],
        original: String::new(),
        markdown,
        label: Some(label),
    };
    save(cache, id, &added)?;
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

/// Keeps `markdown` as a block of its own over `region` of `page`: what a region read again found, kept by the
/// person.
#[tauri::command]
pub async fn add_block(
    id: String,
    page: usize,
    region: BoxNorm,
    label: String,
    markdown: String,
    app: AppHandle,
) -> Result<CorrectedPage, String> {
    off_the_window(app, move |readings| {
        let (cache, read) = read_page(readings, &id, page)?;
        add_region_block(cache, &id, read, region, label, markdown)
    })
    .await
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

fn save(cache: &Cache, id: &str, correction: &Correction) -> Result<(), String> {
    cache
        .save_correction(id, correction)
        .map_err(|e| format!("Your correction could not be kept in the cache: {e}"))
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
    use crate::corrections::tests::{done, RAW};
    use deepread_store::{DocumentRecord, Store};

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
    fn a_region_kept_as_a_block_is_added_edited_and_removed() {
        let (_dir, _runtime, cache) = cache();
        let region = BoxNorm {
            x1: 80,
            y1: 300,
            x2: 920,
            y2: 400,
        };
        let shown = add_region_block(
            &cache,
            HASH,
            read(2, RAW),
            region,
            "table".into(),
            "| a |".into(),
        )
        .unwrap();
        assert_eq!(shown.added, vec![ADDED_FROM]);
        assert!(shown.corrected.is_empty());
        let block = shown.blocks.iter().find(|b| b.id == ADDED_FROM).unwrap();
        assert_eq!(
            (block.label.as_str(), block.boxes.clone()),
            ("table", vec![region])
        );
        assert!(shown.markdown.ends_with("| a |\n"), "{}", shown.markdown);

        let second = add_region_block(
            &cache,
            HASH,
            read(2, RAW),
            region,
            "text".into(),
            "More.".into(),
        )
        .unwrap();
        assert_eq!(second.added, vec![ADDED_FROM, ADDED_FROM + 1]);

        let edited =
            keep_correction(&cache, HASH, read(2, RAW), ADDED_FROM, "| b |".into(), None).unwrap();
        let block = edited.blocks.iter().find(|b| b.id == ADDED_FROM).unwrap();
        assert_eq!(
            (block.markdown.as_str(), block.label.as_str()),
            ("| b |", "table")
        );

        let removed = drop_correction(&cache, HASH, read(2, RAW), ADDED_FROM).unwrap();
        assert_eq!(removed.added, vec![ADDED_FROM + 1]);
        let emptied = keep_correction(
            &cache,
            HASH,
            read(2, RAW),
            ADDED_FROM + 1,
            "  ".into(),
            None,
        )
        .unwrap();
        assert!(emptied.added.is_empty() && cache.corrections(HASH).unwrap().is_empty());
        assert!(
            add_region_block(
                &cache,
                HASH,
                read(2, RAW),
                region,
                "text".into(),
                "\n".into()
            )
            .is_err(),
            "nothing to add"
        );
    }
}
