//! The commands the webview may invoke. Each returns plain data or a message a person can read.

use std::path::{Path, PathBuf};

use deepread_pdf::{PageSize, PdfError};
use serde::Serialize;
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, State};

use crate::corrections::WindowEvent;
use crate::engine_settings::{self, ConnectionReport, EngineSettings, SettingsView};
use crate::library::Library;
use crate::model_download::{DownloadEvent, ModelDownload};
use crate::pdf_passwords::{self, PasswordUse};
use crate::reading::{EngineStatus, ReadRequest, ReadingStarted, Readings, RecentDocument};

/// What the front end needs to lay a document out before any page is rendered.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentInfo {
    id: String,
    path: String,
    title: String,
    pages: Vec<PageSize>,
    /// How its password was used, and a word on it (why it could not be remembered).
    password: PasswordUse,
    password_notice: Option<String>,
}

/// Why a document did not open: the window asks for a password on `PasswordRequired` and
/// `WrongPassword`, and shows the message of any other failure.
#[derive(Debug, Serialize)]
pub struct OpenError {
    kind: OpenErrorKind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum OpenErrorKind {
    PasswordRequired,
    WrongPassword,
    Other,
}

impl From<PdfError> for OpenError {
    fn from(error: PdfError) -> Self {
        let kind = match error {
            PdfError::PasswordRequired => OpenErrorKind::PasswordRequired,
            PdfError::WrongPassword => OpenErrorKind::WrongPassword,
            _ => OpenErrorKind::Other,
        };
        Self {
            kind,
            message: error.to_string(),
        }
    }
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

/// The documents that dropped or launched `paths` name: files as they are, folders by their documents.
#[tauri::command]
pub async fn documents_in(paths: Vec<String>) -> Vec<String> {
    let paths: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
    crate::dropped::documents_in(&paths)
        .iter()
        .map(|p| p.display().to_string())
        .collect()
}

/// Opens a PDF or image, an encrypted PDF with its `password` (kept in the system keyring if `remember`, else
/// nowhere: not in the cache, the recent documents or the log) or with the one remembered for it. Off the
/// window's thread: a large PDF takes a moment to parse, and the keyring may ask to be unlocked.
#[tauri::command]
pub async fn open_document(
    path: String,
    password: Option<String>,
    remember: Option<bool>,
    app: AppHandle,
) -> Result<DocumentInfo, OpenError> {
    let path = PathBuf::from(path);
    tauri::async_runtime::spawn_blocking(move || {
        let library = app.state::<Library>();
        let remember = remember.unwrap_or(false);
        let opened = pdf_passwords::open(&library, &path, password.as_deref(), remember)?;
        let document = opened.document;
        let pages = (0..document.page_count())
            .map(|i| document.page_size(i))
            .collect::<Result<Vec<_>, _>>()?;
        let title = document.title().unwrap_or_else(|| file_name(&path));
        Ok(DocumentInfo {
            id: document.content_hash().to_owned(),
            path: path.display().to_string(),
            title,
            pages,
            password: opened.password,
            password_notice: opened.notice,
        })
    })
    .await
    .map_err(|e| OpenError {
        kind: OpenErrorKind::Other,
        message: format!("the document could not be opened: {e}"),
    })?
}

/// Drops the password remembered for document `id`: it is asked for the next time.
#[tauri::command]
pub async fn forget_pdf_password(id: String) -> Result<(), String> {
    tauri::async_runtime::spawn_blocking(move || pdf_passwords::forget(&id))
        .await
        .map_err(|e| format!("The password could not be forgotten: {e}"))?
}

/// Reads an open document, or the pages `request` names, with its mode; events stream to
/// `events`. Pages read before with the same mode come from the cache unless the request says not.
/// Asynchronous so that loading the model, the first time, does not hold up the window.
#[tauri::command]
pub async fn read_document(
    id: String,
    request: Option<ReadRequest>,
    events: Channel<WindowEvent>,
    library: State<'_, Library>,
    readings: State<'_, Readings>,
) -> Result<ReadingStarted, String> {
    let document = library
        .document(&id)
        .ok_or_else(|| "this document is not open".to_owned())?;
    let request = request.unwrap_or_default();
    check_pages(&request.pages, document.page_count())?;
    Ok(readings.start(document, request, events))
}

/// Who reads and on what device, for the top bar. Loads the model the first time, off the
/// window's thread.
#[tauri::command]
pub async fn engine_status(app: AppHandle) -> Result<EngineStatus, String> {
    tauri::async_runtime::spawn_blocking(move || app.state::<Readings>().engine_status())
        .await
        .map_err(|e| format!("the engine status is unknown: {e}"))
}

/// Downloads DeepSeek-OCR-2 into the Hugging Face cache; progress and the outcome arrive through `events`.
/// Once the model is on disk, the next engine status finds and loads it.
#[tauri::command]
pub fn download_model(
    events: Channel<DownloadEvent>,
    app: AppHandle,
    download: State<'_, ModelDownload>,
) -> Result<(), String> {
    download.start(events, move || app.state::<Readings>().forget_model())
}

/// Stops the model download; what was fetched is kept, and the next download resumes it.
#[tauri::command]
pub fn cancel_model_download(download: State<'_, ModelDownload>) {
    download.cancel();
}

/// The engine settings, and whether an API key is kept for their server. The keyring may wait for the
/// person to unlock it, so this runs on a blocking thread, as do the two commands below.
#[tauri::command]
pub async fn engine_settings(app: AppHandle) -> Result<SettingsView, String> {
    tauri::async_runtime::spawn_blocking(move || app.state::<Readings>().engine_settings().view())
        .await
        .map_err(|e| format!("The engine settings could not be read: {e}"))
}

/// Saves the engine settings for the next reading, and keeps (`apiKey` a key), forgets (`""`) or leaves
/// (`null`) their server's API key in the system keyring.
#[tauri::command]
pub async fn save_engine_settings(
    settings: EngineSettings,
    api_key: Option<String>,
    app: AppHandle,
) -> Result<SettingsView, String> {
    tauri::async_runtime::spawn_blocking(move || {
        app.state::<Readings>()
            .engine_settings()
            .save(settings, api_key)
    })
    .await
    .map_err(|e| format!("The engine settings could not be saved: {e}"))?
}

/// Asks the server of `settings` which models it serves, with `apiKey` (`null`: the key kept for that
/// server). A server that fails is a report with `ok: false`, not an error.
#[tauri::command]
pub async fn test_connection(
    settings: EngineSettings,
    api_key: Option<String>,
) -> Result<ConnectionReport, String> {
    tauri::async_runtime::spawn_blocking(move || {
        engine_settings::test_connection(&settings, api_key)
    })
    .await
    .map_err(|e| format!("The connection test did not finish: {e}"))
}

/// Documents read before, newest first, for the library pane. The query blocks on the cache's own
/// runtime, which a worker of the async runtime may not do, and the window's thread should not wait
/// on a disk: so it runs on a blocking thread.
#[tauri::command]
pub async fn recent_documents(app: AppHandle) -> Result<Vec<RecentDocument>, String> {
    tauri::async_runtime::spawn_blocking(move || {
        app.state::<Readings>().recent_documents(RECENT_DOCUMENTS)
    })
    .await
    .map_err(|e| format!("The recent documents could not be read: {e}"))?
}

/// How many recent documents the library pane lists.
const RECENT_DOCUMENTS: u32 = 12;

/// Pages a request may name: those of the document, 0-based.
fn check_pages(pages: &[usize], page_count: usize) -> Result<(), String> {
    match pages.iter().find(|&&page| page >= page_count) {
        Some(page) => Err(format!(
            "There is no page {} in this document: it has {page_count}.",
            page + 1
        )),
        None => Ok(()),
    }
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

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_error_says_whether_a_password_would_open_the_document() {
        let json = |error: PdfError| serde_json::to_value(OpenError::from(error)).unwrap();
        assert_eq!(
            json(PdfError::PasswordRequired),
            serde_json::json!({
                "kind": "passwordRequired",
                "message": "this document is protected by a password; enter the password to open it",
            })
        );
        assert_eq!(
            json(PdfError::WrongPassword)["kind"],
            serde_json::json!("wrongPassword")
        );
        assert_eq!(
            json(PdfError::NoPages),
            serde_json::json!({ "kind": "other", "message": "the document has no pages" })
        );
    }

    #[test]
    fn a_request_for_a_page_past_the_end_names_it_and_the_page_count() {
        assert_eq!(check_pages(&[0, 2], 3), Ok(()));
        assert_eq!(check_pages(&[], 0), Ok(()));
        assert_eq!(
            check_pages(&[1, 3], 3),
            Err("There is no page 4 in this document: it has 3.".to_owned())
        );
    }
}
