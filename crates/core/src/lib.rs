//! DeepRead's reading pipeline: the events a reading reports, the incremental grounding parser, a
//! page's final Markdown, the loop sentinel, and the text-layer reader.

pub mod corrections;
pub mod events;
pub mod export;
pub mod grounding;
pub mod markdown;
pub mod pipeline;
pub mod reading;
pub mod recognizer;
pub mod region;
pub mod sentinel;
pub mod text_layer;

pub use events::{Block, BoxNorm, PageEvent, PageStats};
pub use grounding::{BlockEvent, Parser};
pub use markdown::{markdown_from_raw, page_markdown, MarkdownOptions};
pub use reading::{PageOutcome, PageReader, Step};
pub use sentinel::{LoopReason, LoopSentinel, SentinelConfig, Verdict};
