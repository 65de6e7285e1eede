//! The commands the webview may invoke. Each returns plain data or a message a person can read.

use std::path::PathBuf;

use deepread_core::PageEvent;
use deepread_pdf::PageSize;
use serde::Serialize;
use tauri::ipc::Channel;
use tauri::State;

use crate::library::Library;
use crate::reading::{ReadingStarted, Readings};

/// What the front end needs to lay a document out before any page is rendered.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentInfo {
    id: String,
    path: String,
    title: String,
    pages: Vec<PageSize>,
}

/// Files named on the command line, opened once the window is ready.
#[tauri::command]
pub fn launch_paths(library: State<'_, Library>) -> Vec<String> {
    library
        .launch_paths()
        .iter()
        .map(|p| p.display().to_string())
        .collect()
}

/// Opens a PDF or image. Runs off the main thread: a large PDF can take a moment to parse.
#[tauri::command]
pub async fn open_document(
    path: String,
    library: State<'_, Library>,
) -> Result<DocumentInfo, String> {
    let path = PathBuf::from(path);
    let document = library.open(&path).map_err(|e| e.to_string())?;
    let pages = (0..document.page_count())
        .map(|i| document.page_size(i))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let title = document.title().unwrap_or_else(|| file_name(&path));
    Ok(DocumentInfo {
        id: document.content_hash().to_owned(),
        path: path.display().to_string(),
        title,
        pages,
    })
}

/// Reads an open document; its events stream to `events`. Pages read before come from the cache.
/// Asynchronous so that loading the model, the first time, does not hold up the window.
#[tauri::command]
pub async fn read_document(
    id: String,
    events: Channel<PageEvent>,
    library: State<'_, Library>,
    readings: State<'_, Readings>,
) -> Result<ReadingStarted, String> {
    let document = library
        .document(&id)
        .ok_or_else(|| "this document is not open".to_owned())?;
    Ok(readings.start(document, events))
}

#[tauri::command]
pub fn stop_reading(id: String, readings: State<'_, Readings>) {
    readings.stop(&id);
}

/// A block's Markdown as HTML that is safe to show: model output is untrusted text.
#[tauri::command]
pub fn render_markdown(markdown: String) -> String {
    deepread_core::export::markdown_to_safe_html(&markdown)
}

/// What the person should know since start-up (a cache that was set aside, say).
#[tauri::command]
pub fn notices(readings: State<'_, Readings>) -> Vec<String> {
    readings.notices().to_vec()
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}
