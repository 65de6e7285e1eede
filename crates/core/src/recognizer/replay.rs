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
    pages_at_once: Option<usize>,
}

impl ReplayRecognizer {
    /// Plays the pages in `dir`, one delta every `pause` on average.
    pub fn new(dir: &Path, pause: Duration) -> Self {
        ReplayRecognizer {
            dir: dir.to_path_buf(),
            pause,
            fingerprint: format!("replay/{}", dir.display()),
            pages_at_once: None,
        }
    }

    /// Each reading says GPU memory is short, as the engine would: for demos and desktop tests of the notice.
    pub fn short_of_memory(self, pages_at_once: usize) -> Self {
        ReplayRecognizer {
            pages_at_once: Some(pages_at_once),
            ..self
        }
    }

    /// Waits until the page's next token is due. Tokens are due at fixed times from the page's start, not a
    /// pause after each other, so the pace holds however long each sleep overshoots; after a stall (a
    /// loaded machine) the overdue tokens follow at once.
    fn wait_for_token(&self, page_start: Instant, sent: usize) {
        let due = page_start
            + self
                .pause
                .saturating_mul(u32::try_from(sent).unwrap_or(u32::MAX));
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
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
        if let Some(pages_at_once) = self.pages_at_once {
            sink.fewer_pages_at_once(pages_at_once);
        }
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
                    self.wait_for_token(start, tokens);
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

#[cfg(test)]
mod tests {
    use deepread_pdf::PageSize;

    use super::*;
    use crate::recognizer::{Fed, PageInput};
    use deepread_pdf::PageText;

    /// The pages of a reading, all prepared at once.
    struct Pages(std::ops::Range<usize>);

    impl PageFeed for Pages {
        fn pull(&mut self, _wait: bool) -> Fed {
            match self.0.next() {
                Some(page) => Fed::Page(PageInput {
                    page,
                    size: PageSize {
                        width_pt: 612.0,
                        height_pt: 792.0,
                    },
                    image: None,
                    text: PageText::default(),
                    model_input: None,
                }),
                None => Fed::End,
            }
        }
    }

    #[derive(Debug, PartialEq)]
    enum Said {
        Started(usize),
        Finished(usize, Result<String, String>),
        FewerPagesAtOnce(usize),
    }

    /// What a reading told its sink, with each page's text put back together.
    #[derive(Default)]
    struct Heard {
        said: Vec<Said>,
        text: std::collections::HashMap<usize, String>,
    }

    impl PageSink for Heard {
        fn started(&mut self, page: usize) {
            self.said.push(Said::Started(page));
        }
        fn delta(&mut self, page: usize, text: &str, _tokens: usize) -> Control {
            self.text.entry(page).or_default().push_str(text);
            Control::Continue
        }
        fn finished(&mut self, page: usize, outcome: Result<ReadStats, String>) {
            let text = self.text.remove(&page).unwrap_or_default();
            self.said.push(Said::Finished(page, outcome.map(|_| text)));
        }
        fn fewer_pages_at_once(&mut self, pages: usize) {
            self.said.push(Said::FewerPagesAtOnce(pages));
        }
        fn cancelled(&self) -> bool {
            false
        }
    }

    fn recorded(pages: usize) -> (tempfile::TempDir, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let texts: Vec<String> = (1..=pages)
            .map(|page| {
                format!("<|ref|>title<|/ref|><|det|>[[10, 10, 990, 90]]<|/det|>\n# Page {page}\n")
            })
            .collect();
        for (i, text) in texts.iter().enumerate() {
            std::fs::write(dir.path().join(format!("page{:03}.md", i + 1)), text).unwrap();
        }
        (dir, texts)
    }

    fn reading(replay: &ReplayRecognizer, pages: usize) -> Vec<Said> {
        let mut heard = Heard::default();
        replay.read(&mut Pages(0..pages), &mut heard);
        heard.said
    }

    /// Every page started and finished with its whole recorded text, in order.
    fn every_page(texts: &[String]) -> Vec<Said> {
        texts
            .iter()
            .enumerate()
            .flat_map(|(page, text)| [Said::Started(page), Said::Finished(page, Ok(text.clone()))])
            .collect()
    }

    #[test]
    fn a_replay_short_of_memory_says_so_once_a_reading_before_its_pages_and_reads_them_all() {
        let (dir, texts) = recorded(4);
        let replay = ReplayRecognizer::new(dir.path(), Duration::ZERO).short_of_memory(3);
        for _ in 0..2 {
            let said = reading(&replay, texts.len());
            assert_eq!(said.first(), Some(&Said::FewerPagesAtOnce(3)), "{said:?}");
            assert_eq!(
                said[1..],
                every_page(&texts),
                "nothing lost, nothing said twice"
            );
        }
    }

    /// Hears a reading, stalling once at its first delta as a busy window or a loaded machine would.
    struct Stalling {
        heard: Heard,
        stall: Option<Duration>,
    }

    impl PageSink for Stalling {
        fn started(&mut self, page: usize) {
            self.heard.started(page);
        }
        fn delta(&mut self, page: usize, text: &str, tokens: usize) -> Control {
            if let Some(stall) = self.stall.take() {
                std::thread::sleep(stall);
            }
            self.heard.delta(page, text, tokens)
        }
        fn finished(&mut self, page: usize, outcome: Result<ReadStats, String>) {
            self.heard.finished(page, outcome);
        }
        fn fewer_pages_at_once(&mut self, pages: usize) {
            self.heard.fewer_pages_at_once(pages);
        }
        fn cancelled(&self) -> bool {
            false
        }
    }

    #[test]
    fn a_replay_keeps_its_pace_through_a_stall_and_never_runs_ahead_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let text = "word".repeat(50);
        std::fs::write(dir.path().join("page001.md"), &text).unwrap();
        let pause = Duration::from_millis(4);
        let replay = ReplayRecognizer::new(dir.path(), pause);
        let mut sink = Stalling {
            heard: Heard::default(),
            stall: Some(Duration::from_millis(150)),
        };
        let start = Instant::now();
        replay.read(&mut Pages(0..1), &mut sink);
        let took = start.elapsed();
        assert_eq!(sink.heard.said, every_page(&[text]));
        // 50 tokens are due over 200 ms: the stall's tokens follow at once instead of pushing every later
        // one back by 150 ms (350 ms and more when each waited a pause after the last).
        assert!(took >= pause * 50, "ran ahead of its pace: {took:?}");
        assert!(
            took < Duration::from_millis(300),
            "the stall delayed the rest: {took:?}"
        );
    }

    #[test]
    fn a_replay_with_memory_enough_never_says_it_is_short() {
        let (dir, texts) = recorded(4);
        let replay = ReplayRecognizer::new(dir.path(), Duration::ZERO);
        assert_eq!(reading(&replay, texts.len()), every_page(&texts));
    }
}
