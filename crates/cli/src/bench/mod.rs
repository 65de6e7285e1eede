//! `deepread bench`: the engine's speed on synthetic pages. By default the same page in batches of fixed sizes
//! (vision + prefill, the decode step at each batch size, tokens/s, the share of the memory-bandwidth floor, GPU
//! memory); with `--document`, a whole document whose pages end at lengths of their own, read as the product
//! reads it; with `--prepare FILE`, the CPU side: how fast pages are rendered and preprocessed for the model.
//! docs/benchmarks.md records the figures. Inputs follow shared/gpu/hf_reference.py (a global view,
//! `crops` tiles, the layout prompt) so the two compare; no tokenizer is needed. Without `--model` the weights
//! are random, drawn for DeepSeek-OCR-2's own config: the speed of the real architecture with no checkpoint on
//! disk.

mod batch;
mod document;
mod mix;
mod prepare;

use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use clap::Args;
use deepread_engine::config::ModelConfig;
use deepread_engine::device::Placement;
use deepread_engine::quant::WeightFormat;
use deepread_engine::synthetic;
use deepread_engine::{DecodePath, Engine, Model};

use crate::failure::Failure;

/// Seed of the random weights.
const RANDOM_SEED: u64 = 2026;

#[derive(Args)]
pub struct BenchArgs {
    /// Model folder: config.json + safetensors (default: random weights of DeepSeek-OCR-2's config).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Batch sizes to time: pages generating together.
    #[arg(long, value_delimiter = ',', default_value = "1,8,16")]
    pages: Vec<usize>,
    /// Tokens generated per page (no page stops early).
    #[arg(long, default_value_t = 256)]
    tokens: usize,
    /// Tiles per page beside the global view.
    #[arg(long, default_value_t = 6)]
    crops: usize,
    /// Decode on stock candle ops, one at a time (the unoptimised path), instead of the fused kernels.
    #[arg(long, conflicts_with = "fastest")]
    reference_path: bool,
    /// Decode on the fused kernels summed however is fastest for each batch size, instead of the default's
    /// one order whatever the batch size (so a page's tokens may then depend on the pages beside it).
    #[arg(long)]
    fastest: bool,
    /// The language model's weights: bf16 (as loaded) or int8 (quantized at load, dequantized inside the fused
    /// kernels; a model folder's int8 weights are cached beside it).
    #[arg(long, default_value = "bf16")]
    weights: WeightFormat,
    /// Device memory bandwidth for the floor, GB/s; 3000 is the H100's as measured in shared/gpu/README.md.
    #[arg(long, default_value_t = 3000.0)]
    bandwidth_gbs: f64,
    /// Read a whole synthetic document instead, grouped as before and with continuous batching.
    #[arg(long)]
    document: bool,
    #[command(flatten)]
    doc: document::DocumentArgs,
    #[command(flatten)]
    prep: prepare::PrepareArgs,
}

/// What a report says about where it ran.
struct Setting {
    weights: String,
    placement: Placement,
    path: DecodePath,
}

pub fn run(args: BenchArgs) -> Result<(), Failure> {
    if let Some(pdf) = args.prep.file() {
        return prepare::run(&args.prep, pdf);
    }
    if args.document {
        args.doc.check()?;
    } else if args.tokens < 2 || args.pages.is_empty() || args.pages.contains(&0) {
        return Err(Failure::Usage(
            "--tokens must be at least 2 (one decode step) and --pages a list of sizes ≥ 1".into(),
        ));
    }
    let placement = deepread_engine::device::place();
    let (device, dtype) = (placement.device.clone(), placement.dtype);
    let path = if args.reference_path {
        DecodePath::Reference
    } else if args.fastest {
        DecodePath::Fused
    } else {
        DecodePath::FusedBatchInvariant
    };
    let (model, weights) = load_model(args.model.as_deref(), &device, dtype, args.weights)?;
    let engine = Engine::new(model)
        .and_then(|e| e.with_decode_path(path))
        .map_err(Failure::model)?;
    let page = synthetic::page::layout_page(engine.model().config(), args.crops, 0);
    let setting = Setting {
        weights,
        placement,
        path: engine.decode_path(),
    };
    if args.document {
        document::run(&engine, &page, &args, &setting)
    } else {
        batch::run(&engine, &page, &args, &setting)
    }
}

/// The model of `dir`, or random weights of DeepSeek-OCR-2's config, its LM's weights in `format`; and how the
/// report names them.
fn load_model(
    dir: Option<&Path>,
    device: &Device,
    dtype: DType,
    format: WeightFormat,
) -> Result<(Model, String), Failure> {
    let named = |what: String| match format {
        WeightFormat::Dense => what,
        WeightFormat::Int8 => format!("{what}, int8 language model"),
    };
    let Some(dir) = dir else {
        let model = Model::random(ModelConfig::deepseek_ocr2(), device, dtype, RANDOM_SEED)
            .and_then(|m| match format {
                WeightFormat::Dense => Ok(m),
                WeightFormat::Int8 => m.into_int8(None, "random"),
            })
            .map_err(Failure::model)?;
        return Ok((
            model,
            named("random weights of DeepSeek-OCR-2's config".into()),
        ));
    };
    if !dir.join("config.json").is_file() {
        return Err(Failure::Model(format!(
            "no model in {} (config.json missing)",
            dir.display()
        )));
    }
    let model = Model::load_as(dir, device, dtype, format).map_err(Failure::model)?;
    Ok((model, named(dir.display().to_string())))
}
