//! What a reading reports, page by page (and the rare word on the whole reading): one serde enum shared by the
//! desktop UI and the CLI.
//!
//! Serialised with a `type` tag and camelCase fields, as the TypeScript side expects, e.g.
//! `{"type":"blockOpened","page":0,"blockId":3,"label":"title","boxes":[...],"warning":null}`.

use serde::{Deserialize, Serialize};

use crate::sentinel::LoopReason;

/// The largest normalised coordinate: the model writes boxes in 0..=999 of the original image.
pub const COORD_MAX: u16 = 999;

/// A layout box in the model's normalised coordinates (0..=999 of the original image, x1 <= x2, y1 <= y2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BoxNorm {
    pub x1: u16,
    pub y1: u16,
    pub x2: u16,
    pub y2: u16,
}

impl BoxNorm {
    /// A box from coordinates as the model wrote them: clamped to 0..=999 and put in order,
    /// because real outputs contain negative values, values above 999 and x1 > x2.
    pub fn from_model(x1: i64, y1: i64, x2: i64, y2: i64) -> Self {
        let (x1, x2) = ordered(clamp_coord(x1), clamp_coord(x2));
        let (y1, y2) = ordered(clamp_coord(y1), clamp_coord(y2));
        BoxNorm { x1, y1, x2, y2 }
    }
}

fn clamp_coord(value: i64) -> u16 {
    // The clamp makes the narrowing lossless.
    value.clamp(0, i64::from(COORD_MAX)) as u16
}

fn ordered(a: u16, b: u16) -> (u16, u16) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// One layout block of a page: what the model labelled, where, and the Markdown it wrote for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Block {
    /// 0-based position of the block on its page.
    pub id: u32,
    /// The model's label (`text`, `title`, `image`, `table`, ...); `text` for text outside any tag.
    pub label: String,
    /// Empty when the model wrote no box or a payload that is not a box list.
    pub boxes: Vec<BoxNorm>,
    /// The block's content exactly as written, without the tags and the newlines that separate blocks.
    pub markdown: String,
    /// Why the block's tags were not well formed, if they were not.
    pub warning: Option<String>,
}

/// Figures for one page read by a recognizer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageStats {
    pub prompt_tokens: usize,
    pub generated_tokens: usize,
    pub vision_ms: u64,
    pub prefill_ms: u64,
    pub decode_ms: u64,
    pub tokens_per_s: f64,
    /// Which recognizer read the page (e.g. `deepseek-ocr-2`, `text-layer`).
    pub recognizer: String,
}

/// Everything that happens to a page during a reading, in order. Pages are 0-based.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum PageEvent {
    Queued {
        page: usize,
    },
    Started {
        page: usize,
    },
    /// Raw model text as generated, tags included; `tokens`: the generated tokens it took (0 when
    /// the recognizer has none), what the window's tokens/s counts.
    Delta {
        page: usize,
        text: String,
        tokens: usize,
    },
    /// A block's label and boxes are known (its `<|det|>` closed); its text follows.
    BlockOpened {
        page: usize,
        block_id: u32,
        label: String,
        boxes: Vec<BoxNorm>,
        warning: Option<String>,
    },
    /// Markdown to append to the block: blocks only grow, so the UI never rewrites one.
    BlockText {
        page: usize,
        block_id: u32,
        delta: String,
    },
    BlockClosed {
        page: usize,
        block_id: u32,
    },
    /// The page is complete: its final Markdown and blocks replace whatever was streamed.
    Done {
        page: usize,
        markdown: String,
        blocks: Vec<Block>,
        stats: PageStats,
    },
    Failed {
        page: usize,
        error: String,
    },
    /// The model was stopped in a loop: Markdown and blocks hold what came before the loop; `stats`
    /// count everything it generated, the loop included.
    Looped {
        page: usize,
        markdown: String,
        blocks: Vec<Block>,
        reason: LoopReason,
        stats: PageStats,
    },
    FromCache {
        page: usize,
    },
    /// Not about one page: GPU memory ran short, and from now on this reading reads at most
    /// `pages_at_once` pages together (slower, nothing lost). Said once a reading.
    FewerPagesAtOnce {
        pages_at_once: usize,
    },
}

impl PageEvent {
    /// The page the event is about; `None` for what is about the whole reading.
    pub fn page(&self) -> Option<usize> {
        Some(match self {
            PageEvent::Queued { page }
            | PageEvent::Started { page }
            | PageEvent::Delta { page, .. }
            | PageEvent::BlockOpened { page, .. }
            | PageEvent::BlockText { page, .. }
            | PageEvent::BlockClosed { page, .. }
            | PageEvent::Done { page, .. }
            | PageEvent::Failed { page, .. }
            | PageEvent::Looped { page, .. }
            | PageEvent::FromCache { page } => *page,
            PageEvent::FewerPagesAtOnce { .. } => return None,
        })
    }
}
