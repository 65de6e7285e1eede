//! The documents open in this window, by content hash, and the page images rendered for them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use deepread_pdf::{Document, PdfError};

/// Encoded page images kept in memory; a page is re-rendered only when it falls out.
const IMAGE_CACHE_ENTRIES: usize = 64;

pub struct Library {
    launch_paths: Vec<PathBuf>,
    documents: Mutex<HashMap<String, Arc<Document>>>,
    images: Mutex<ImageCache>,
}

/// One rendered page image, as the page protocol serves it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ImageKey {
    pub document: String,
    pub page: usize,
    pub width: u32,
}

impl Library {
    pub fn new(launch_paths: Vec<PathBuf>) -> Self {
        Self {
            launch_paths,
            documents: Mutex::new(HashMap::new()),
            images: Mutex::new(ImageCache::default()),
        }
    }

    pub fn launch_paths(&self) -> &[PathBuf] {
        &self.launch_paths
    }

    /// Opens (or finds already open) the document at `path`; keyed by content, so the same file
    /// under two names is one document.
    pub fn open(&self, path: &Path) -> Result<Arc<Document>, PdfError> {
        let document = Arc::new(Document::open(path, None)?);
        let mut documents = self
            .documents
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let entry = documents
            .entry(document.content_hash().to_owned())
            .or_insert(document);
        Ok(Arc::clone(entry))
    }

    pub fn document(&self, hash: &str) -> Option<Arc<Document>> {
        let documents = self
            .documents
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        documents.get(hash).cloned()
    }

    pub fn cached_image(&self, key: &ImageKey) -> Option<Arc<Vec<u8>>> {
        let images = self.images.lock().unwrap_or_else(PoisonError::into_inner);
        images.get(key)
    }

    pub fn cache_image(&self, key: ImageKey, bytes: Arc<Vec<u8>>) {
        let mut images = self.images.lock().unwrap_or_else(PoisonError::into_inner);
        images.insert(key, bytes);
    }
}

/// A small least-recently-inserted cache: page images are cheap to redo, memory is not.
#[derive(Default)]
struct ImageCache {
    entries: HashMap<ImageKey, Arc<Vec<u8>>>,
    order: std::collections::VecDeque<ImageKey>,
}

impl ImageCache {
    fn get(&self, key: &ImageKey) -> Option<Arc<Vec<u8>>> {
        self.entries.get(key).cloned()
    }

    fn insert(&mut self, key: ImageKey, bytes: Arc<Vec<u8>>) {
        if self.entries.insert(key.clone(), bytes).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > IMAGE_CACHE_ENTRIES {
            if let Some(oldest) = self.order.pop_front() {
                self.entries.remove(&oldest);
            }
        }
    }
}
