//! `deepread synthesize --config tiny|full|FILE --tokenizer DIR --out DIR`: a DeepSeek-OCR-2 checkpoint folder with
//! random weights, which `--model DIR` then loads like the downloaded model. For tests in other languages (the
//! desktop suite) and for GPU machines, which make one where they run instead of fetching 6.8 GB.
//!
//! Measured on 2 cores: `tiny` writes 34 MB in about 1 s; `full` writes 6.78 GB in about 100 s with a peak of
//! 0.75 GB resident (the weights are streamed to disk; see `deepread_engine::synthetic`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::DType;
use clap::{Args, ValueEnum};
use deepread_engine::config::DEEPSEEK_OCR2_CONFIG_JSON;
use deepread_engine::synthetic::{
    write_random_checkpoint, SynthesisError, SynthesisOptions, TINY_FULL_VOCAB_CONFIG_JSON,
};

use crate::failure::Failure;

#[derive(Args)]
pub struct SynthesizeArgs {
    /// `tiny` (the real vocabulary and vision geometry, tiny widths: 34 MB in bf16), `full` (DeepSeek-OCR-2's own
    /// config: 3.39 B parameters, 6.8 GB in bf16), or the path of a config.json.
    #[arg(long)]
    config: String,
    /// Folder with the tokenizer.json (and tokenizer_config.json) to copy into the checkpoint.
    #[arg(long)]
    tokenizer: PathBuf,
    /// Folder to write (created if missing; its config.json, tokenizer files and model.safetensors are replaced).
    #[arg(short, long)]
    out: PathBuf,
    /// Seed of the random weights: the same seed writes the same file.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Stored dtype of the weights.
    #[arg(long, value_enum, default_value_t = StoredDtype::Bf16)]
    dtype: StoredDtype,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum StoredDtype {
    Bf16,
    F16,
    F32,
}

impl From<StoredDtype> for DType {
    fn from(dtype: StoredDtype) -> Self {
        match dtype {
            StoredDtype::Bf16 => DType::BF16,
            StoredDtype::F16 => DType::F16,
            StoredDtype::F32 => DType::F32,
        }
    }
}

pub fn run(args: SynthesizeArgs) -> Result<(), Failure> {
    let config = config_text(&args.config)?;
    let options = SynthesisOptions {
        dtype: args.dtype.into(),
        seed: args.seed,
    };
    let started = Instant::now();
    let written =
        write_random_checkpoint(&config, &args.tokenizer, &args.out, options).map_err(failure)?;
    println!(
        "{}: {} tensors, {} parameters, {:.1} MB of {:?} weights (seed {}) in {:.1} s",
        args.out.display(),
        written.tensors,
        written.parameters,
        written.file_bytes as f64 / 1e6,
        options.dtype,
        options.seed,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The config's text: one of the two bundled, or a file.
fn config_text(config: &str) -> Result<String, Failure> {
    match config {
        "tiny" => Ok(TINY_FULL_VOCAB_CONFIG_JSON.to_owned()),
        "full" => Ok(DEEPSEEK_OCR2_CONFIG_JSON.to_owned()),
        path => std::fs::read_to_string(Path::new(path)).map_err(|e| {
            Failure::Usage(format!(
                "--config is `tiny`, `full` or a config.json; cannot read {path}: {e}"
            ))
        }),
    }
}

/// A config or tokenizer the caller named is a usage error; a folder that cannot be written is an output one.
fn failure(error: SynthesisError) -> Failure {
    match error {
        SynthesisError::Io { .. } => Failure::Output(error.to_string()),
        SynthesisError::Model(_) => Failure::Unexpected(error.into()),
        _ => Failure::Usage(error.to_string()),
    }
}
