//! The pages of one document as readings end them, kept so that the app can export at any moment:
//! a page read again replaces its earlier reading, and pages not finished yet export as unread.

use std::collections::BTreeMap;

use deepread_pdf::Document;

use super::{DocumentExport, PageExport};
use crate::events::PageEvent;

#[derive(Debug, Default, Clone)]
pub struct FinishedPages {
    pages: BTreeMap<usize, PageExport>,
}

impl FinishedPages {
    /// Keeps the page an event ends; other events change nothing.
    pub fn observe(&mut self, event: &PageEvent) {
        if let Some(page) = PageExport::from_event(event) {
            self.pages.insert(page.index, page);
        }
    }

    /// Page `index` as it last finished, if it has.
    pub fn page(&self, index: usize) -> Option<&PageExport> {
        self.pages.get(&index)
    }

    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// The export of these pages of `document`.
    pub fn export<'d>(&self, document: &'d Document, title: String) -> DocumentExport<'d> {
        DocumentExport {
            section: None,
            document,
            title,
            pages: self.pages.values().cloned().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::PageStatus;

    fn failed(page: usize, error: &str) -> PageEvent {
        PageEvent::Failed {
            page,
            error: error.into(),
        }
    }

    #[test]
    fn a_page_read_again_replaces_its_earlier_reading() {
        let mut pages = FinishedPages::default();
        pages.observe(&PageEvent::Started { page: 0 });
        assert!(
            pages.is_empty(),
            "a page that has only started is not finished"
        );
        pages.observe(&failed(2, "first"));
        pages.observe(&failed(0, "other page"));
        pages.observe(&failed(2, "second"));
        assert_eq!(pages.len(), 2);
        let kept: Vec<_> = pages
            .pages
            .values()
            .map(|p| (p.index, p.status.clone()))
            .collect();
        assert_eq!(
            kept,
            vec![
                (
                    0,
                    PageStatus::Failed {
                        error: "other page".into()
                    }
                ),
                (
                    2,
                    PageStatus::Failed {
                        error: "second".into()
                    }
                ),
            ]
        );
    }
}
