//! The Hugging Face cache layout, as huggingface_hub writes it, so Python tools and DeepRead share
//! downloads:
//!
//! ```text
//! <hub cache>/models--deepseek-ai--DeepSeek-OCR-2/
//!   blobs/<etag>                 each file's bytes, named by its hash
//!   blobs/<etag>.incomplete      a download in progress (resumable)
//!   snapshots/<commit>/<file>    relative symlinks to ../../blobs/<etag>
//!   refs/<branch>                the commit a branch name stood for when downloaded
//! ```

use std::io;
use std::path::{Component, Path, PathBuf};

/// The folder name of a model repository in the cache: `models--owner--name`.
pub fn repo_folder(repo: &str) -> String {
    format!("models--{}", repo.replace('/', "--"))
}

/// `<hub cache>/models--owner--name/snapshots/<commit>`: where a revision's files appear.
pub fn snapshot_dir(hub_cache: &Path, repo: &str, commit: &str) -> PathBuf {
    RepoCache::new(hub_cache, repo).snapshot(commit)
}

/// One repository's folder in the hub cache.
#[derive(Debug, Clone)]
pub(crate) struct RepoCache {
    root: PathBuf,
}

impl RepoCache {
    pub fn new(hub_cache: &Path, repo: &str) -> Self {
        RepoCache {
            root: hub_cache.join(repo_folder(repo)),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn blobs(&self) -> PathBuf {
        self.root.join("blobs")
    }

    pub fn blob(&self, etag: &str) -> PathBuf {
        self.blobs().join(etag)
    }

    /// The name huggingface_hub gives a partial download, so either tool can resume the other's.
    pub fn incomplete(&self, etag: &str) -> PathBuf {
        self.blobs().join(format!("{etag}.incomplete"))
    }

    pub fn snapshot(&self, commit: &str) -> PathBuf {
        self.root.join("snapshots").join(commit)
    }

    /// The commit a branch (or tag) name was last resolved to, if it was.
    pub fn read_ref(&self, name: &str) -> Option<String> {
        let commit = std::fs::read_to_string(self.root.join("refs").join(name)).ok()?;
        let commit = commit.trim();
        is_commit(commit).then(|| commit.to_owned())
    }

    /// Records what a branch name stands for (no trailing newline, as huggingface_hub writes it).
    pub fn write_ref(&self, name: &str, commit: &str) -> io::Result<()> {
        let path = self.root.join("refs").join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, commit)
    }

    /// Puts `file` into the commit's snapshot as a relative link to its blob, replacing what was there.
    pub fn link(&self, commit: &str, file: &str, etag: &str) -> io::Result<PathBuf> {
        let link = self.snapshot(commit).join(file);
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if link.symlink_metadata().is_ok() {
            std::fs::remove_file(&link)?;
        }
        // One `..` per folder between the link and the repository folder: snapshots, commit, subfolders.
        let depth = Path::new(file).components().count() + 1;
        let target: PathBuf = std::iter::repeat_n(Path::new(".."), depth)
            .collect::<PathBuf>()
            .join("blobs")
            .join(etag);
        link_file(&self.blob(etag), &target, &link)?;
        Ok(link)
    }
}

#[cfg(unix)]
fn link_file(_blob: &Path, target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// Windows without developer mode cannot make symlinks; huggingface_hub then keeps a copy instead.
#[cfg(not(unix))]
fn link_file(blob: &Path, target: &Path, link: &Path) -> io::Result<()> {
    #[cfg(windows)]
    if std::os::windows::fs::symlink_file(target, link).is_ok() {
        return Ok(());
    }
    let _ = target;
    std::fs::copy(blob, link).map(|_| ())
}

/// A full git commit id: 40 lowercase hex digits.
pub(crate) fn is_commit(text: &str) -> bool {
    text.len() == 40 && is_lower_hex(text)
}

pub(crate) fn is_lower_hex(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A path from the hub that stays inside the folder it is joined to (no `..`, no root).
pub(crate) fn is_safe_relative(path: &str) -> bool {
    !path.is_empty()
        && Path::new(path)
            .components()
            .all(|part| matches!(part, Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_huggingface_hub() {
        let cache = RepoCache::new(Path::new("/hub"), "deepseek-ai/DeepSeek-OCR-2");
        assert_eq!(
            cache.root(),
            Path::new("/hub/models--deepseek-ai--DeepSeek-OCR-2")
        );
        assert_eq!(
            cache.incomplete("ab"),
            Path::new("/hub/models--deepseek-ai--DeepSeek-OCR-2/blobs/ab.incomplete")
        );
    }

    #[test]
    fn links_are_relative_at_any_depth() {
        let dir = tempfile::tempdir().unwrap();
        let cache = RepoCache::new(dir.path(), "o/r");
        std::fs::create_dir_all(cache.blobs()).unwrap();
        std::fs::write(cache.blob("e1"), b"one").unwrap();
        std::fs::write(cache.blob("e2"), b"two").unwrap();
        let top = cache.link("c", "a.json", "e1").unwrap();
        let deep = cache.link("c", "sub/b.json", "e2").unwrap();
        assert_eq!(std::fs::read(top).unwrap(), b"one");
        assert_eq!(std::fs::read(&deep).unwrap(), b"two");
        #[cfg(unix)]
        assert_eq!(
            std::fs::read_link(deep).unwrap(),
            Path::new("../../../blobs/e2")
        );
    }

    #[test]
    fn unsafe_names_are_refused() {
        assert!(is_safe_relative("config.json"));
        assert!(is_safe_relative("sub/config.json"));
        assert!(!is_safe_relative("../config.json"));
        assert!(!is_safe_relative("/etc/passwd"));
        assert!(!is_safe_relative(""));
    }
}
