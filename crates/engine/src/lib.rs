//! DeepSeek-OCR-2 in candle: weights, vision, language model, preprocessing, prompt and generation.
//! Every dimension comes from the model's config.json, so the real model and tiny test models run
//! through the same code.

pub mod config;
pub mod device;
pub mod engine;
pub mod error;
pub mod generate;
#[cfg(feature = "cuda")]
pub mod kernels;
pub mod layers;
pub mod lm;
pub mod model;
pub mod ocr;
pub mod preprocess;
pub mod prompt;
pub mod quant;
pub mod scheduler;
pub mod synthetic;
pub mod vision;
pub mod weights;

#[cfg(feature = "cuda")]
pub use device::engine_gpu;
pub use device::{default_device, Placement};
pub use engine::{
    DecodePath, Engine, FinishReason, Flow, GenerateEvent, PageInput, PageOutput, PageStats,
};
pub use error::EngineError;
pub use generate::{GenerateOptions, NoRepeatNgram};
pub use model::{Model, PageImage};
pub use ocr::{Ocr, TextEvent};
pub use scheduler::{Admission, PageSource, Pull, Schedule, ScheduleReport};
