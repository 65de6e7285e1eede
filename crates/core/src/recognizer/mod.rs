//! What reads a page: the model, the PDF's own text layer, or a remote server. The pipeline drives
//! every recognizer the same way and turns what it writes into the same events.

mod deepseek;
pub mod remote;
mod replay;
mod text_layer;

use deepread_pdf::{PageSize, PageText, RenderSize};
use image::RgbImage;

/// How the local model's weights are held (`DeepSeekOcr2::load_as`).
pub use deepread_engine::quant::WeightFormat;
pub use deepseek::{
    base_only_input, engine_placement, locate_model, DeepSeekOcr2, ModelError, ReadingMode,
    Resolution, MODEL_RENDER, RENDER_DPI,
};
pub use remote::{RemoteError, RemoteRecognizer, RemoteSettings};
pub use replay::ReplayRecognizer;
pub use text_layer::TextLayerRecognizer;

/// What a recognizer needs of each page; the pipeline prepares only that.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageNeeds {
    /// The page rendered at this size.
    pub image: Option<RenderSize>,
    /// The page's words with their boxes, and its ruling lines.
    pub text_layer: bool,
}

/// One page, prepared for a recognizer.
pub struct PageInput {
    pub page: usize,
    pub size: PageSize,
    pub image: Option<RgbImage>,
    pub text: PageText,
    /// The page as the model takes it, made by [`Recognizer::prepare`] on a preparing thread.
    pub model_input: Option<deepread_engine::PageInput>,
}

/// Prepared pages, as a recognizer pulls them.
pub trait PageFeed {
    /// The next page. With `wait` false, answers at once ([`Fed::NotReady`] when none is prepared yet), so
    /// that a recognizer with pages in flight is not held up; with `wait` true, blocks until one is.
    fn pull(&mut self, wait: bool) -> Fed;
}

pub enum Fed {
    Page(PageInput),
    NotReady,
    End,
}

/// Every page of `feed`, waiting for each: for recognizers that read one page at a time.
pub fn each_page(feed: &mut dyn PageFeed) -> impl Iterator<Item = PageInput> + '_ {
    std::iter::from_fn(move || match feed.pull(true) {
        Fed::Page(page) => Some(page),
        Fed::NotReady | Fed::End => None,
    })
}

/// Whether the recognizer should keep writing a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Continue,
    /// Stop this page now (it loops, or the user stopped it) and go on with the others.
    StopPage,
}

/// Figures a recognizer reports for a page it finished.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadStats {
    pub prompt_tokens: usize,
    pub generated_tokens: usize,
    pub vision_ms: u64,
    pub prefill_ms: u64,
    pub decode_ms: u64,
}

/// Where a recognizer reports: it calls `started`, then `delta` as text arrives, then `finished`,
/// for every page it takes, in any interleaving across pages.
pub trait PageSink {
    fn started(&mut self, page: usize);
    /// `tokens`: how many generated tokens the text took (0 when the recognizer has none).
    fn delta(&mut self, page: usize, text: &str, tokens: usize) -> Control;
    fn finished(&mut self, page: usize, outcome: Result<ReadStats, String>);
    /// GPU memory ran short: at most `pages` are read together from now on.
    fn fewer_pages_at_once(&mut self, pages: usize);
    /// The whole reading was stopped: take no new pages, end the ones in flight.
    fn cancelled(&self) -> bool;
}

pub trait Recognizer: Send + Sync {
    /// Shown to people: "DeepSeek-OCR-2", "text layer".
    fn name(&self) -> &str;
    /// Names everything that changes the output (model files, prompt, resolution, decoding), so the
    /// cache keeps results of different settings apart.
    fn fingerprint(&self) -> &str;
    fn needs(&self) -> PageNeeds;
    /// Whether its output can run away in a loop (a generative model can; a copy of the text layer
    /// cannot, and repeats what the document repeats).
    fn may_loop(&self) -> bool {
        true
    }
    /// CPU work on a page before it is read, run on the preparing threads ahead of [`Self::read`] (the
    /// model's resizing, tiling and normalising); the error is the page's failure.
    fn prepare(&self, _page: &mut PageInput) -> Result<(), String> {
        Ok(())
    }
    /// Reads pages as `pages` yields them, reporting into `sink`. Pages may be read together
    /// (several in flight); a recognizer pulls the next page when it has room for it.
    fn read(&self, pages: &mut dyn PageFeed, sink: &mut dyn PageSink);
}
