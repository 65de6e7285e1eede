//! Where each document's export goes and under which name, and the refusal to overwrite what is there
//! unless asked: all decided before anything is read, so a clash costs no reading.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use deepread_core::export::ExportChoice;

use crate::failure::Failure;

/// The extensions a folder's documents are taken by (the content decides how each is opened).
const DOCUMENT_EXTENSIONS: &[&str] = &["pdf", "png", "jpg", "jpeg", "tif", "tiff", "webp"];

/// The placeholder of a name pattern: the document's file name without its extension.
const NAME: &str = "{name}";
/// The placeholder that writes each page as its own files: the page's number from 1, padded to the width of
/// the document's last so that the files sort in page order.
const PAGE: &str = "{page}";

/// Where one document's files go: `folder/stem.md`, `folder/stem.docx`, …; a stem with `{page}` in it is
/// one set of files per page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputPlan {
    pub folder: PathBuf,
    pub stem: String,
}

impl OutputPlan {
    /// The stems the document is written under, each with the page it holds: one stem for the whole document,
    /// or with `{page}`, one per page of `pages` (0-based) of a document of `page_count` pages.
    pub fn stems(&self, pages: &[usize], page_count: usize) -> Vec<(String, Option<usize>)> {
        if !self.stem.contains(PAGE) {
            return vec![(self.stem.clone(), None)];
        }
        let width = page_count.max(1).to_string().len();
        pages
            .iter()
            .map(|&page| {
                let number = format!("{:0width$}", page + 1);
                (self.stem.replace(PAGE, &number), Some(page))
            })
            .collect()
    }
}

/// The documents named, each folder among them opened to the documents directly in it, by name.
pub fn expand_inputs(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, Failure> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let found = documents_in(input)?;
            if found.is_empty() {
                return Err(Failure::Usage(format!(
                    "{} holds no PDF or page image ({})",
                    input.display(),
                    DOCUMENT_EXTENSIONS.join(", ")
                )));
            }
            files.extend(found);
        } else {
            files.push(input.clone());
        }
    }
    Ok(files)
}

fn documents_in(folder: &Path) -> Result<Vec<PathBuf>, Failure> {
    let entries = std::fs::read_dir(folder)
        .map_err(|e| Failure::document(folder, format!("cannot list the folder: {e}")))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_file() && is_document_name(path))
        .collect();
    files.sort();
    Ok(files)
}

fn is_document_name(path: &Path) -> bool {
    let hidden = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'));
    let known = path.extension().is_some_and(|ext| {
        let ext = ext.to_string_lossy().to_ascii_lowercase();
        DOCUMENT_EXTENSIONS.contains(&ext.as_str())
    });
    known && !hidden
}

/// Each document's folder and stem. The stem is `pattern` with `{name}` replaced by the file's name; one
/// document writes into `out`, several into a folder each, named by their stem, since each has its
/// `images/`.
pub fn plan_outputs(
    out: &Path,
    files: &[PathBuf],
    pattern: &str,
) -> Result<Vec<OutputPlan>, Failure> {
    check_pattern(pattern)?;
    let plans: Vec<OutputPlan> = files
        .iter()
        .map(|file| {
            let stem = pattern.replace(NAME, &file_stem(file));
            let folder = match files.len() {
                1 => out.to_path_buf(),
                _ => out.join(&stem),
            };
            OutputPlan { folder, stem }
        })
        .collect();
    refuse_shared_outputs(files, &plans)?;
    Ok(plans)
}

/// The file's name without its extension ("document" for a path without one).
pub fn file_stem(path: &Path) -> String {
    path.file_stem().map_or_else(
        || "document".to_owned(),
        |s| s.to_string_lossy().into_owned(),
    )
}

fn check_pattern(pattern: &str) -> Result<(), Failure> {
    let rest = pattern.replace(NAME, "").replace(PAGE, "");
    if rest.contains(['{', '}']) {
        return Err(Failure::Usage(format!(
            "--name \"{pattern}\": the placeholders are {NAME} and {PAGE}"
        )));
    }
    if rest.contains(['/', '\\']) || pattern.trim().is_empty() {
        return Err(Failure::Usage(format!(
            "--name \"{pattern}\": a file name, without folders"
        )));
    }
    Ok(())
}

/// Two documents that would write the same files (two `report.pdf` from different folders, or a pattern
/// without `{name}`) are refused before either is read.
fn refuse_shared_outputs(files: &[PathBuf], plans: &[OutputPlan]) -> Result<(), Failure> {
    let mut seen: HashMap<(&Path, &str), &Path> = HashMap::new();
    for (file, plan) in files.iter().zip(plans) {
        if let Some(first) = seen.insert((&plan.folder, &plan.stem), file) {
            return Err(Failure::Usage(format!(
                "{} and {} would both be written as {}; give --name a pattern with {NAME}, or convert them apart",
                first.display(),
                file.display(),
                plan.folder.join(&plan.stem).display()
            )));
        }
    }
    Ok(())
}

/// Refuses, naming them, outputs that are there already, unless `overwrite`: each `(folder, stem)` written.
pub fn refuse_overwrite(
    outputs: &[(PathBuf, String)],
    choice: &ExportChoice,
    overwrite: bool,
) -> Result<(), Failure> {
    if overwrite {
        return Ok(());
    }
    let mut existing = Vec::new();
    for (folder, stem) in outputs {
        let found = choice
            .existing_outputs(folder, stem)
            .map_err(|e| Failure::Output(e.to_string()))?;
        existing.extend(found);
    }
    // Every page's files share one `images/`.
    existing.sort();
    existing.dedup();
    match existing.as_slice() {
        [] => Ok(()),
        [first, rest @ ..] => Err(Failure::Usage(format!(
            "{}{} already there; nothing was read. Add --overwrite to replace, or choose another -o",
            first.display(),
            match rest.len() {
                0 => " is".to_owned(),
                n => format!(" and {n} other output(s) are"),
            }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(names: &[&str]) -> Vec<PathBuf> {
        names.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn one_document_writes_into_the_folder_several_into_a_folder_each() {
        let out = Path::new("/out");
        let one = plan_outputs(out, &paths(&["/in/a.pdf"]), "{name}").unwrap();
        assert_eq!(one[0].folder, out);
        assert_eq!(one[0].stem, "a");
        let two = plan_outputs(out, &paths(&["/in/a.pdf", "/in/b.png"]), "{name}-ocr").unwrap();
        assert_eq!(two[1].folder, out.join("b-ocr"));
        assert_eq!(two[1].stem, "b-ocr");
    }

    #[test]
    fn documents_that_would_share_their_files_are_refused() {
        let out = Path::new("/out");
        let same_name = plan_outputs(out, &paths(&["/x/report.pdf", "/y/report.pdf"]), "{name}");
        assert!(matches!(same_name, Err(Failure::Usage(m)) if m.contains("/y/report.pdf")));
        let no_name = plan_outputs(out, &paths(&["/x/a.pdf", "/x/b.pdf"]), "book");
        assert!(no_name.is_err());
        assert!(plan_outputs(out, &paths(&["/x/a.pdf"]), "book").is_ok());
        assert!(plan_outputs(out, &paths(&["/x/a.pdf"]), "{date}-{name}").is_err());
    }

    #[test]
    fn a_page_in_the_pattern_writes_each_page_under_its_own_name_in_page_order() {
        let out = Path::new("/out");
        let plan = &plan_outputs(out, &paths(&["/x/report.pdf"]), "{name}-p{page}").unwrap()[0];
        assert_eq!(
            plan.stems(&[0, 8, 119], 120),
            vec![
                ("report-p001".to_owned(), Some(0)),
                ("report-p009".to_owned(), Some(8)),
                ("report-p120".to_owned(), Some(119)),
            ]
        );
        let whole = &plan_outputs(out, &paths(&["/x/report.pdf"]), "{name}").unwrap()[0];
        assert_eq!(whole.stems(&[0, 1], 2), vec![("report".to_owned(), None)]);
    }

    #[test]
    fn a_folder_gives_its_documents_by_name_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.PDF", "a.png", ".hidden.pdf", "notes.txt", "c.jpeg"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub.pdf")).unwrap();
        let found = expand_inputs(&[dir.path().to_path_buf()]).unwrap();
        let names: Vec<String> = found.iter().map(|p| file_stem(p)).collect();
        assert_eq!(names, ["a", "b", "c"]);
        let empty = tempfile::tempdir().unwrap();
        assert!(expand_inputs(&[empty.path().to_path_buf()]).is_err());
    }
}
