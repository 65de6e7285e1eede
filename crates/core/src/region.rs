//! Reading one region of a page again: the part of the page under a rectangle the person drew (its image,
//! or the words of the text layer under it) is read by any recognizer as a page of its own.

use deepread_pdf::{Document, PageSize, PageText, Rect, Rule, Word};

use crate::events::{Block, BoxNorm, COORD_MAX};
use crate::export::crop_figure;
use crate::pipeline::prepare_page;
use crate::reading::{PageOutcome, PageReader};
use crate::recognizer::{Control, Fed, PageFeed, PageInput, PageSink, ReadStats, Recognizer};
use crate::sentinel::{SentinelConfig, Verdict};

/// A region narrower or lower than this, in normalised units (about 1 % of the page), is a slip of the
/// pointer, not something to read.
const MIN_SIDE: u16 = 8;

/// What the recognizer read in the region.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionReading {
    /// The Markdown of every block read, in order, without figure links.
    pub markdown: String,
    /// The first block's label ("text", "table", …): what the region is, if kept as one block.
    pub label: String,
    /// Whether the recognizer looped and was stopped (the Markdown is what came before).
    pub looped: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RegionError {
    #[error("the region is too small to read: draw it at least {MIN_SIDE} thousandths of the page wide and high")]
    TooSmall,
    #[error("page {page} could not be prepared: {detail}")]
    Page { page: usize, detail: String },
    #[error("the region could not be read: {0}")]
    Read(String),
    #[error("nothing was read in the region")]
    Nothing,
}

/// Reads `region` of page `page` (0-based) with `recognizer`.
pub fn read_region(
    document: &Document,
    page: usize,
    region: BoxNorm,
    recognizer: &dyn Recognizer,
) -> Result<RegionReading, RegionError> {
    if region.x2.saturating_sub(region.x1) < MIN_SIDE
        || region.y2.saturating_sub(region.y1) < MIN_SIDE
    {
        return Err(RegionError::TooSmall);
    }
    let unprepared = |(page, detail)| RegionError::Page {
        page: page + 1,
        detail,
    };
    let whole = prepare_page(document, page, recognizer.needs()).map_err(unprepared)?;
    let mut input = crop(whole, region);
    recognizer
        .prepare(&mut input)
        .map_err(|detail| unprepared((page, detail)))?;
    let sentinel = if recognizer.may_loop() {
        SentinelConfig::default()
    } else {
        SentinelConfig::never()
    };
    let mut sink = RegionSink {
        reader: Some(PageReader::new(sentinel)),
        outcome: None,
    };
    recognizer.read(&mut OnePage(Some(input)), &mut sink);
    sink.into_reading()
}

/// The page cut down to `region`: its image cropped, the words whose middle is inside kept, moved to the
/// region's own origin, and the region's size as the page's.
fn crop(page: PageInput, region: BoxNorm) -> PageInput {
    let size = page.size;
    let area = Rect {
        left: f32::from(region.x1) / f32::from(COORD_MAX) * size.width_pt,
        top: f32::from(region.y1) / f32::from(COORD_MAX) * size.height_pt,
        right: f32::from(region.x2) / f32::from(COORD_MAX) * size.width_pt,
        bottom: f32::from(region.y2) / f32::from(COORD_MAX) * size.height_pt,
    };
    PageInput {
        page: page.page,
        size: PageSize {
            width_pt: area.right - area.left,
            height_pt: area.bottom - area.top,
        },
        // Cropped as a figure is: the reference's mapping of a box onto an image.
        image: page.image.map(|image| crop_figure(&image, &[region])),
        text: PageText {
            words: words_inside(page.text.words, &area),
            rules: rules_inside(page.text.rules, &area),
        },
        model_input: None,
    }
}

fn words_inside(words: Vec<Word>, area: &Rect) -> Vec<Word> {
    words
        .into_iter()
        .filter(|word| {
            let (x, y) = (
                (word.bbox.left + word.bbox.right) / 2.0,
                (word.bbox.top + word.bbox.bottom) / 2.0,
            );
            (area.left..=area.right).contains(&x) && (area.top..=area.bottom).contains(&y)
        })
        .map(|mut word| {
            word.bbox = Rect {
                left: word.bbox.left - area.left,
                top: word.bbox.top - area.top,
                right: word.bbox.right - area.left,
                bottom: word.bbox.bottom - area.top,
            };
            word
        })
        .collect()
}

/// The rules crossing the region, clipped to it and moved to its origin.
fn rules_inside(rules: Vec<Rule>, area: &Rect) -> Vec<Rule> {
    rules
        .into_iter()
        .filter_map(|rule| {
            let (across, along, shift_across, shift_along) = if rule.horizontal {
                (
                    (area.top, area.bottom),
                    (area.left, area.right),
                    area.top,
                    area.left,
                )
            } else {
                (
                    (area.left, area.right),
                    (area.top, area.bottom),
                    area.left,
                    area.top,
                )
            };
            let inside = (across.0..=across.1).contains(&rule.at);
            let (from, to) = (rule.from.max(along.0), rule.to.min(along.1));
            (inside && from < to).then_some(Rule {
                horizontal: rule.horizontal,
                at: rule.at - shift_across,
                from: from - shift_along,
                to: to - shift_along,
            })
        })
        .collect()
}

/// The one page a region is.
struct OnePage(Option<PageInput>);

impl PageFeed for OnePage {
    fn pull(&mut self, _wait: bool) -> Fed {
        self.0.take().map_or(Fed::End, Fed::Page)
    }
}

/// Collects the region's output through the parser and the loop sentinel, as a page's.
struct RegionSink {
    reader: Option<PageReader>,
    outcome: Option<Result<PageOutcome, String>>,
}

impl PageSink for RegionSink {
    fn started(&mut self, _page: usize) {}

    fn delta(&mut self, _page: usize, text: &str, tokens: usize) -> Control {
        match self.reader.as_mut().map(|r| r.push(text, tokens).verdict) {
            Some(Verdict::Continue) => Control::Continue,
            _ => Control::StopPage,
        }
    }

    fn finished(&mut self, _page: usize, outcome: Result<ReadStats, String>) {
        let Some(reader) = self.reader.take() else {
            return;
        };
        // Figure links name files of an export; a region's Markdown has none to name.
        let options = crate::markdown::MarkdownOptions::for_page(0);
        self.outcome = Some(outcome.map(|_| reader.finish(&options)));
    }

    fn fewer_pages_at_once(&mut self, _pages: usize) {}

    fn cancelled(&self) -> bool {
        false
    }
}

impl RegionSink {
    fn into_reading(self) -> Result<RegionReading, RegionError> {
        let outcome = self
            .outcome
            .ok_or_else(|| RegionError::Read("the recognizer did not read it".into()))?
            .map_err(RegionError::Read)?;
        let (blocks, page_markdown, looped) = match outcome {
            PageOutcome::Complete {
                blocks, markdown, ..
            } => (blocks, markdown, false),
            PageOutcome::Looped {
                blocks, markdown, ..
            } => (blocks, markdown, true),
        };
        // Output without grounding (the plain modes) has no blocks, only its Markdown.
        let markdown = match region_markdown(&blocks) {
            text if text.is_empty() => page_markdown.trim().to_owned(),
            text => text,
        };
        if markdown.is_empty() {
            return Err(RegionError::Nothing);
        }
        let label = blocks
            .first()
            .map_or("text", |b| b.label.as_str())
            .to_owned();
        Ok(RegionReading {
            markdown,
            label,
            looped,
        })
    }
}

/// The blocks' text, each trimmed, a blank line between them.
fn region_markdown(blocks: &[Block]) -> String {
    blocks
        .iter()
        .map(|b| b.markdown.trim())
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}
