//! The model's grounding output, read incrementally.
//!
//! The model writes `<|ref|>LABEL<|/ref|><|det|>[[x1, y1, x2, y2], ...]<|/det|>\nCONTENT\n\n` again and
//! again. [`Parser`] turns the text, fed as it is generated, into [`Block`](crate::events::Block)s and
//! [`BlockEvent`]s, and accounts for every byte with [`Segment`]s.

mod boxes;
mod parser;
mod segment;
mod states;
mod tags;

pub use boxes::{parse_boxes, BoxListError};
pub use parser::{BlockEvent, Parser};
pub use segment::{Segment, SegmentKind};
pub use tags::{Tag, END_OF_SENTENCE};
