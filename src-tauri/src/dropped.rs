//! What a drop on the window or the command line names: files as they are (a file that is no document gets
//! its own message when it is opened), and for a folder the documents inside it, as a file manager lists
//! them: PDFs and page images by extension, sorted by name, sub-folders included, hidden ones skipped.

use std::path::{Path, PathBuf};

/// The extensions the Open dialog offers (ui/src/main.ts).
const DOCUMENT_EXTENSIONS: [&str; 7] = ["pdf", "png", "jpg", "jpeg", "tif", "tiff", "webp"];
/// How deep below a dropped folder documents are looked for: a dropped home folder must not walk the disk.
const MAX_DEPTH: usize = 4;
/// The most documents one drop opens.
const MAX_DOCUMENTS: usize = 500;

/// `paths` with every folder replaced by the documents inside it.
pub fn documents_in(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut documents = Vec::new();
    for path in paths {
        if path.is_dir() {
            collect(path, 0, &mut documents);
        } else {
            documents.push(path.clone());
        }
    }
    documents.truncate(MAX_DOCUMENTS);
    documents
}

fn collect(folder: &Path, depth: usize, documents: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        tracing::warn!(folder = %folder.display(), "could not list a dropped folder");
        return;
    };
    let mut entries: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| !is_hidden(path))
        .collect();
    entries.sort();
    for path in entries {
        if documents.len() >= MAX_DOCUMENTS {
            return;
        }
        if path.is_dir() {
            if depth < MAX_DEPTH {
                collect(&path, depth + 1, documents);
            }
        } else if is_document(&path) {
            documents.push(path);
        }
    }
}

fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name.to_string_lossy().starts_with('.'))
}

fn is_document(path: &Path) -> bool {
    path.extension().is_some_and(|extension| {
        let extension = extension.to_string_lossy().to_ascii_lowercase();
        DOCUMENT_EXTENSIONS.contains(&extension.as_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"").unwrap();
    }

    #[test]
    fn a_folder_gives_its_documents_sorted_with_its_sub_folders_and_files_pass_as_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("scans");
        for name in [
            "b.pdf",
            "a.PNG",
            "notes.txt",
            ".hidden.pdf",
            "inner/c.tiff",
            ".git/d.pdf",
        ] {
            touch(&root.join(name));
        }
        let loose = dir.path().join("readme.txt");
        touch(&loose);
        let found = documents_in(&[root.clone(), loose.clone()]);
        let expected = [
            root.join("a.PNG"),
            root.join("b.pdf"),
            root.join("inner/c.tiff"),
            loose,
        ];
        assert_eq!(found, expected);
    }

    #[test]
    fn folders_are_searched_to_a_bounded_depth_and_missing_paths_pass_on() {
        let dir = tempfile::tempdir().unwrap();
        let mut deep = dir.path().to_path_buf();
        for level in 0..=MAX_DEPTH + 1 {
            deep = deep.join(format!("level{level}"));
            touch(&deep.join("page.pdf"));
        }
        let found = documents_in(&[dir.path().to_path_buf()]);
        assert_eq!(found.len(), MAX_DEPTH, "{found:?}");
        assert!(
            documents_in(&[dir.path().join("missing")]).len() == 1,
            "a missing path is passed on"
        );
    }
}
