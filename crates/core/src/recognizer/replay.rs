//! Recorded model output played back as if generated: real DeepSeek-OCR pages streamed through the
//! same event path at a steady pace, so the reader can be exercised without a GPU.
//!
//! The folder holds one file per page, `page001.md`, `page002.md`, … (1-based), each the raw model
//! text of that page, tags included.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{each_page, Control, PageFeed, PageNeeds, PageSink, ReadStats, Recognizer};

/// Characters per delta: about one token of model output.
const CHARS_PER_DELTA: usize = 4;

pub struct ReplayRecognizer {
    dir: PathBuf,
    pause: Duration,
    fingerprint: String,
}

impl ReplayRecognizer {
    /// Plays the pages in `dir`, one delta every `pause`.
    pub fn new(dir: &Path, pause: Duration) -> Self {
        ReplayRecognizer {
            dir: dir.to_path_buf(),
            pause,
            fingerprint: format!("replay/{}", dir.display()),
        }
    }

    fn page_text(&self, page: usize) -> Result<String, String> {
        let path = self.dir.join(format!("page{:03}.md", page + 1));
        std::fs::read_to_string(&path)
            .map_err(|e| format!("no recorded output {}: {e}", path.display()))
    }
}

impl Recognizer for ReplayRecognizer {
    fn name(&self) -> &str {
        "recorded output"
    }

    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    fn needs(&self) -> PageNeeds {
        PageNeeds {
            image: None,
            text_layer: false,
        }
    }

    fn read(&self, pages: &mut dyn PageFeed, sink: &mut dyn PageSink) {
        for page in each_page(pages) {
            if sink.cancelled() {
                break;
            }
            sink.started(page.page);
            let start = Instant::now();
            let outcome = self.page_text(page.page).map(|text| {
                let chars: Vec<char> = text.chars().collect();
                let mut tokens = 0;
                for piece in chars.chunks(CHARS_PER_DELTA) {
                    tokens += 1;
                    let delta: String = piece.iter().collect();
                    if sink.delta(page.page, &delta, 1) == Control::StopPage {
                        break;
                    }
                    std::thread::sleep(self.pause);
                }
                ReadStats {
                    generated_tokens: tokens,
                    decode_ms: start.elapsed().as_millis() as u64,
                    ..ReadStats::default()
                }
            });
            sink.finished(page.page, outcome);
        }
    }
}
