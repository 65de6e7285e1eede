//! The PDF's own text, with its positions: instant and exact for born-digital pages, nothing for
//! scans. Written in the model's grounding format so that everything downstream is shared.

use std::time::Instant;

use super::{each_page, Control, PageFeed, PageNeeds, PageSink, ReadStats, Recognizer};
use crate::text_layer::read_page;

/// Bump when the layout analysis changes what it writes, so cached readings are redone.
const LAYOUT_VERSION: u32 = 2;

pub struct TextLayerRecognizer {
    fingerprint: String,
}

impl TextLayerRecognizer {
    pub fn new() -> Self {
        TextLayerRecognizer {
            fingerprint: format!("text-layer/v{LAYOUT_VERSION}"),
        }
    }
}

impl Default for TextLayerRecognizer {
    fn default() -> Self {
        Self::new()
    }
}

impl Recognizer for TextLayerRecognizer {
    fn name(&self) -> &str {
        "text layer"
    }

    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    fn needs(&self) -> PageNeeds {
        PageNeeds {
            image: None,
            text_layer: true,
        }
    }

    fn may_loop(&self) -> bool {
        false
    }

    fn read(&self, pages: &mut dyn PageFeed, sink: &mut dyn PageSink) {
        for page in each_page(pages) {
            if sink.cancelled() {
                break;
            }
            sink.started(page.page);
            let start = Instant::now();
            let text = read_page(&page.text, page.size);
            // One delta per block, as a model writes them, so the page fills in block by block.
            for block in text.split_inclusive("\n\n") {
                if sink.delta(page.page, block, 0) == Control::StopPage {
                    break;
                }
            }
            let stats = ReadStats {
                decode_ms: start.elapsed().as_millis() as u64,
                ..ReadStats::default()
            };
            sink.finished(page.page, Ok(stats));
        }
    }
}
