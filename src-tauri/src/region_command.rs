//! The page view's region re-read: a rectangle the person drew on a page, read again with the mode chosen in
//! the top bar (by the model, a server, or the text layer, whichever reads now).

use deepread_core::corrections::most_overlapping;
use deepread_core::events::BoxNorm;
use deepread_core::recognizer::{ReadingMode, Resolution};
use deepread_core::region::read_region as read_part;
use serde::Serialize;
use tauri::{AppHandle, Manager, State};

use crate::library::Library;
use crate::reading::Readings;

/// What was read in the region, for the person to add as a block or to replace a block with.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RegionRead {
    page: usize,
    region: BoxNorm,
    markdown: String,
    /// What the region is ("text", "table", …): the label of the block it becomes.
    label: String,
    /// The block of the page, as read, that the region overlaps most: the one it would replace.
    overlaps: Option<u32>,
    /// Who read it.
    recognizer: String,
    /// The recognizer looped and was stopped: the Markdown is what came before.
    looped: bool,
}

/// Reads `region` of `page` of document `id` with `mode` and `resolution`. Off the window's thread: the model
/// takes seconds, and waits for the pages it is reading.
#[tauri::command]
pub async fn read_region(
    id: String,
    page: usize,
    region: BoxNorm,
    mode: ReadingMode,
    resolution: Resolution,
    app: AppHandle,
    library: State<'_, Library>,
) -> Result<RegionRead, String> {
    let document = library
        .document(&id)
        .ok_or("This document is not open any more: open it again to read a region.")?;
    if page >= document.page_count() {
        return Err(format!("The document has no page {}.", page + 1));
    }
    tauri::async_runtime::spawn_blocking(move || {
        let readings = app.state::<Readings>();
        let (recognizer, _) = readings.recognizer(mode, resolution);
        let read = read_part(&document, page, region, recognizer.as_ref())
            .map_err(|e| format!("Not read: {e}."))?;
        let overlaps = readings
            .finished_page(&id, page)
            .and_then(|shown| most_overlapping(&shown.blocks, &[region]).map(|b| b.id));
        Ok(RegionRead {
            page,
            region,
            markdown: read.markdown,
            label: read.label,
            overlaps,
            recognizer: recognizer.name().to_owned(),
            looped: read.looped,
        })
    })
    .await
    .map_err(|e| format!("The region was not read: {e}"))?
}
