//! The documents open in this window, by content hash, and the page images rendered for them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use deepread_core::BoxNorm;
use deepread_pdf::{Document, PdfError};
use image::RgbImage;

/// Encoded page images kept in memory; a page is re-rendered only when it falls out.
const IMAGE_CACHE_ENTRIES: usize = 64;

pub struct Library {
    launch_paths: Vec<PathBuf>,
    documents: Mutex<HashMap<String, Arc<Document>>>,
    images: Mutex<ImageCache>,
    /// The page last rendered for its figures, decoded, by document, page and width.
    figure_page: Mutex<Option<(ImageKey, Arc<RgbImage>)>>,
}

/// One rendered page image, as the page protocol serves it: the whole page, or the figure under
/// `crop`'s boxes.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ImageKey {
    pub document: String,
    pub page: usize,
    pub width: u32,
    pub crop: Vec<BoxNorm>,
}

impl Library {
    pub fn new(launch_paths: Vec<PathBuf>) -> Self {
        Self {
            launch_paths,
            documents: Mutex::new(HashMap::new()),
            images: Mutex::new(ImageCache::default()),
            figure_page: Mutex::new(None),
        }
    }

    pub fn launch_paths(&self) -> &[PathBuf] {
        &self.launch_paths
    }

    /// Opens (or finds already open) the document at `path`; keyed by content, so the same file
    /// under two names is one document. The file is opened again even when its document is open,
    /// so an encrypted one needs its `password` every time; the library keeps none.
    pub fn open(&self, path: &Path, password: Option<&str>) -> Result<Arc<Document>, PdfError> {
        let document = Arc::new(Document::open(path, password)?);
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

    /// The page `key` names (its crop aside), rendered once for all the figures cropped from it: a
    /// page's figures are asked for together. Renders wait on each other here, which costs nothing,
    /// since PDFium renders one page at a time anyway.
    pub fn page_for_figures(
        &self,
        key: &ImageKey,
        render: impl FnOnce() -> Result<RgbImage, String>,
    ) -> Result<Arc<RgbImage>, String> {
        let page_key = ImageKey {
            crop: Vec::new(),
            ..key.clone()
        };
        let mut last = self
            .figure_page
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((_, page)) = last.as_ref().filter(|(k, _)| *k == page_key) {
            return Ok(Arc::clone(page));
        }
        let page = Arc::new(render()?);
        *last = Some((page_key, Arc::clone(&page)));
        Ok(page)
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

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    fn figure_key(page: usize, x1: u16) -> ImageKey {
        ImageKey {
            document: "doc".to_owned(),
            page,
            width: 1000,
            crop: vec![BoxNorm {
                x1,
                y1: 0,
                x2: 999,
                y2: 999,
            }],
        }
    }

    #[test]
    fn the_figures_of_a_page_are_cropped_from_one_render() {
        let library = Library::new(Vec::new());
        let renders = Cell::new(0);
        let render = || {
            renders.set(renders.get() + 1);
            Ok(RgbImage::new(10, 14))
        };
        for key in [figure_key(2, 0), figure_key(2, 500), figure_key(3, 0)] {
            library.page_for_figures(&key, render).unwrap();
        }
        assert_eq!(renders.get(), 2, "page 3 once, page 4 once");
        let error = library.page_for_figures(&figure_key(4, 0), || Err("damaged".to_owned()));
        assert_eq!(error.unwrap_err(), "damaged");
    }
}
