//! The Export dialog's command: writes the formats the person chose for the pages read so far into a
//! folder they pick, and asks before replacing files already there.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use deepread_core::corrections::correct_pages;
use deepread_core::export::{EpubChapters, ExportChoice, ExportFormat};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Manager, State};
use tauri_plugin_dialog::DialogExt;

use crate::library::Library;
use crate::reading::Readings;

/// What the dialog asks for.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportRequest {
    formats: Vec<ExportFormat>,
    epub_chapters: EpubChapters,
    /// Replace outputs already in the folder; without it, an export that would replace any writes nothing.
    #[serde(default)]
    overwrite: bool,
    /// The folder of an earlier answer (Replace), so that the person is not asked for it twice.
    #[serde(default)]
    folder: Option<PathBuf>,
}

impl ExportRequest {
    fn choice(&self) -> Result<ExportChoice, String> {
        if self.formats.is_empty() {
            return Err("Choose at least one format to export.".to_owned());
        }
        Ok(ExportChoice {
            formats: self.formats.iter().copied().collect(),
            epub_chapters: self.epub_chapters,
        })
    }
}

/// How an export ended; `outcome` tells the dialog which.
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum ExportOutcome {
    /// The person closed the folder dialog: nothing was written.
    Cancelled,
    /// Outputs are in the folder already and replacing them was not asked for: nothing was written.
    AlreadyThere(AlreadyThere),
    Written(Exported),
}

#[derive(Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AlreadyThere {
    folder: String,
    /// Relative to the folder; folders end in `/`.
    files: Vec<String>,
}

/// What an export wrote, for the status bar.
#[derive(Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Exported {
    folder: String,
    files: usize,
    figures: usize,
    pages_read: usize,
    /// The formats chosen that had nothing to write: the workbook and the CSV of a reading without tables.
    unwritten: Vec<ExportFormat>,
}

/// The folders the person picked for an export since the app started: the only ones a request may
/// name, so that the webview cannot write where nobody chose to.
#[derive(Default)]
pub struct ChosenFolders(Mutex<HashSet<PathBuf>>);

impl ChosenFolders {
    fn remember(&self, folder: &Path) {
        let mut folders = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        folders.insert(folder.to_path_buf());
    }

    fn check(&self, folder: PathBuf) -> Result<PathBuf, String> {
        let folders = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if folders.contains(&folder) {
            Ok(folder)
        } else {
            Err(format!(
                "{} was not picked for an export in this window: export again and pick it.",
                folder.display()
            ))
        }
    }
}

/// Writes the pages of document `id` read so far, in the formats asked for, to a folder the person
/// chooses (or the folder of an earlier answer). `DEEPREAD_EXPORT_DIR` names the folder instead of
/// asking: scripted use, and the desktop tests, which cannot drive a native dialog.
#[tauri::command]
pub async fn export_document(
    id: String,
    request: ExportRequest,
    app: AppHandle,
    library: State<'_, Library>,
    readings: State<'_, Readings>,
) -> Result<ExportOutcome, String> {
    let choice = request.choice()?;
    let document = library.document(&id).ok_or_else(|| {
        "This document is not open any more: open it again to export it.".to_owned()
    })?;
    let pages = readings.finished(&id);
    if pages.is_empty() {
        return Err("Nothing has been read yet: export once a page is read.".to_owned());
    }
    // The dialog waits for the person and the export renders pages: neither may hold up the window.
    tauri::async_runtime::spawn_blocking(move || {
        let chosen = app.state::<ChosenFolders>();
        let folder = match request.folder {
            Some(folder) => chosen.check(folder)?,
            None => match pick_folder(&app) {
                Some(folder) => folder,
                None => return Ok(ExportOutcome::Cancelled),
            },
        };
        chosen.remember(&folder);
        let stem = document
            .path()
            .map_or_else(|| "document".to_owned(), file_stem);
        if !request.overwrite {
            let files = already_there(&choice, &folder, &stem)?;
            if !files.is_empty() {
                let folder = folder.display().to_string();
                return Ok(ExportOutcome::AlreadyThere(AlreadyThere { folder, files }));
            }
        }
        let title = document.title().unwrap_or_else(|| stem.clone());
        let mut export = pages.export(&document, title);
        let readings = app.state::<Readings>();
        let corrections = readings.corrections(document.content_hash())?;
        correct_pages(&mut export.pages, &corrections);
        let summary = choice
            .write(&export, &folder, &stem)
            .map_err(|e| format!("Export failed: {e}"))?;
        Ok(ExportOutcome::Written(Exported {
            unwritten: choice.unwritten(&folder, &stem, &summary.files),
            folder: folder.display().to_string(),
            files: summary.files.len(),
            figures: summary.figures,
            pages_read: pages.len(),
        }))
    })
    .await
    .map_err(|e| format!("Export failed: {e}"))?
}

fn pick_folder(app: &AppHandle) -> Option<PathBuf> {
    if let Some(folder) = std::env::var_os("DEEPREAD_EXPORT_DIR") {
        return Some(PathBuf::from(folder));
    }
    app.dialog()
        .file()
        .set_title("Export to a folder")
        .blocking_pick_folder()?
        .into_path()
        .ok()
}

/// The outputs of `choice` already in `folder`, named relative to it, folders ending in `/`.
fn already_there(choice: &ExportChoice, folder: &Path, stem: &str) -> Result<Vec<String>, String> {
    let existing = choice
        .existing_outputs(folder, stem)
        .map_err(|e| format!("Export failed: {e}"))?;
    Ok(existing
        .iter()
        .map(|path| {
            let name = path.strip_prefix(folder).unwrap_or(path).display();
            if path.is_dir() {
                format!("{name}/")
            } else {
                name.to_string()
            }
        })
        .collect())
}

fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "document".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: serde_json::Value) -> ExportRequest {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn the_dialogs_request_reads_as_the_choice_it_names() {
        let asked = request(serde_json::json!({
            "formats": ["docx", "md", "epub"],
            "epubChapters": { "heading": 2 },
            "overwrite": true,
            "folder": "/tmp/out",
        }));
        let choice = asked.choice().unwrap();
        assert_eq!(
            choice.formats.into_iter().collect::<Vec<_>>(),
            [ExportFormat::Md, ExportFormat::Docx, ExportFormat::Epub]
        );
        assert_eq!(choice.epub_chapters, EpubChapters::Heading(2));
        assert!(asked.overwrite);
        assert_eq!(asked.folder, Some(PathBuf::from("/tmp/out")));

        let first = request(serde_json::json!({ "formats": ["json"], "epubChapters": "document" }));
        assert!(!first.overwrite, "replacing is asked for, never assumed");
        assert_eq!(first.folder, None);
        assert_eq!(
            first.choice().unwrap().epub_chapters,
            EpubChapters::Document
        );
    }

    #[test]
    fn a_request_without_formats_is_refused_in_words() {
        let none = request(serde_json::json!({ "formats": [], "epubChapters": "document" }));
        assert_eq!(
            none.choice().unwrap_err(),
            "Choose at least one format to export."
        );
        let unknown = serde_json::from_value::<ExportRequest>(
            serde_json::json!({ "formats": ["pdf"], "epubChapters": "document" }),
        );
        assert!(unknown.is_err());
    }

    #[test]
    fn the_outputs_already_there_are_named_relative_to_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let choice = request(serde_json::json!({
            "formats": ["md", "docx", "csv"],
            "epubChapters": "document",
        }))
        .choice()
        .unwrap();
        assert!(already_there(&choice, dir.path(), "manual")
            .unwrap()
            .is_empty());
        std::fs::write(dir.path().join("manual.docx"), b"").unwrap();
        std::fs::write(dir.path().join("manual.epub"), b"").unwrap();
        std::fs::create_dir(dir.path().join("images")).unwrap();
        let mut names = already_there(&choice, dir.path(), "manual").unwrap();
        names.sort();
        assert_eq!(names, ["images/", "manual.docx"], "the EPUB was not chosen");
    }

    #[test]
    fn formats_that_wrote_nothing_are_told_apart() {
        let choice = request(serde_json::json!({
            "formats": ["md", "docx", "xlsx", "csv"],
            "epubChapters": "document",
        }))
        .choice()
        .unwrap();
        let out = Path::new("/out");
        let written = [
            out.join("manual.md"),
            out.join("images/0_0.png"),
            out.join("manual.docx"),
            out.join("manual.tables/page2-table1.csv"),
        ];
        assert_eq!(
            choice.unwritten(out, "manual", &written),
            [ExportFormat::Xlsx]
        );
        assert_eq!(
            choice.unwritten(out, "manual", &[]),
            [
                ExportFormat::Md,
                ExportFormat::Docx,
                ExportFormat::Xlsx,
                ExportFormat::Csv
            ]
        );
    }

    #[test]
    fn only_a_folder_picked_before_may_be_named() {
        let chosen = ChosenFolders::default();
        let folder = PathBuf::from("/home/someone/exports");
        let refused = chosen.check(folder.clone()).unwrap_err();
        assert!(refused.contains("/home/someone/exports"), "{refused}");
        chosen.remember(&folder);
        assert_eq!(chosen.check(folder.clone()), Ok(folder));
    }

    #[test]
    fn the_outcome_tells_the_dialog_which_it_is() {
        let json = |outcome: ExportOutcome| serde_json::to_value(outcome).unwrap();
        assert_eq!(
            json(ExportOutcome::Cancelled),
            serde_json::json!({ "outcome": "cancelled" })
        );
        assert_eq!(
            json(ExportOutcome::AlreadyThere(AlreadyThere {
                folder: "/out".into(),
                files: vec!["a.md".into()],
            })),
            serde_json::json!({ "outcome": "alreadyThere", "folder": "/out", "files": ["a.md"] })
        );
        assert_eq!(
            json(ExportOutcome::Written(Exported {
                folder: "/out".into(),
                files: 3,
                figures: 1,
                pages_read: 2,
                unwritten: vec![ExportFormat::Xlsx],
            })),
            serde_json::json!({
                "outcome": "written", "folder": "/out", "files": 3, "figures": 1, "pagesRead": 2,
                "unwritten": ["xlsx"],
            })
        );
    }
}
