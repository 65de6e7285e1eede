//! placeholder
pub mod config;
pub mod engine;
pub mod error;
pub mod generate;
pub mod layers;
pub mod lm;
pub mod model;
pub mod preprocess;
pub mod prompt;
pub mod vision;
pub mod weights;

pub use engine::{Engine, FinishReason, GenerateEvent, PageInput, PageOutput, PageStats};
pub use error::EngineError;
pub use generate::{GenerateOptions, NoRepeatNgram};
pub use model::{Model, PageImage};
