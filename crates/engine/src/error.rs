//! Errors of the model half of the engine: loading a checkpoint, running it, generating.

use std::path::PathBuf;

/// Everything that can go wrong between a model directory and generated tokens.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{path} is not valid JSON for a DeepSeek-OCR-2 config: {source}")]
    ConfigJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },

    #[error("config field `{field}`: {reason}")]
    Config { field: String, reason: String },

    #[error("unsupported config: `{field}` = {value} ({hint})")]
    UnsupportedConfig {
        field: String,
        value: String,
        hint: String,
    },

    #[error(
        "no weights in {dir}: expected model.safetensors, model.safetensors.index.json or llama.cpp's GGUF pair"
    )]
    NoWeights { dir: PathBuf },

    #[error("the weights file {path} is damaged: {reason} (an interrupted download or copy? fetch it again)")]
    DamagedWeights { path: PathBuf, reason: String },

    #[error("weights index {path}: {reason}")]
    BadIndex { path: PathBuf, reason: String },

    #[error(
        "cannot tell the checkpoint layout of {dir}: neither `model.sam_model.pos_embed` (official) nor \
         `[model.]vision_tower.sam_encoder.pos_embed` (transformers-native) is present"
    )]
    UnknownLayout { dir: PathBuf },

    #[error("the GGUF files in {dir} cannot be read as DeepSeek-OCR-2: {reason}")]
    Gguf { dir: PathBuf, reason: String },

    #[error("tensor `{name}` is missing from the checkpoint in {dir}")]
    MissingTensor { name: String, dir: PathBuf },

    #[error("tensor `{name}` has shape {found:?}, expected {expected:?} for this config")]
    TensorShape {
        name: String,
        expected: Vec<usize>,
        found: Vec<usize>,
    },

    #[error("tensor `{name}` has dtype {dtype}, which cannot be converted to a float type")]
    TensorDtype { name: String, dtype: String },

    #[error("{count} tensor(s) in the checkpoint are not used by this config, e.g. `{first}` (wrong config.json?)")]
    UnexpectedTensors {
        count: usize,
        first: String,
        names: Vec<String>,
    },

    #[error("input: {0}")]
    Input(String),

    #[error("CUDA: {0}")]
    Cuda(String),

    #[error("tensor operation failed: {0}")]
    Candle(#[from] candle_core::Error),
}

pub type Result<T> = std::result::Result<T, EngineError>;
