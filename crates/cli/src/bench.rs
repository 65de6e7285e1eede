//! `deepread bench`: the engine's speed on synthetic pages — vision + prefill, the decode step at each batch
//! size, tokens/s, the share of the memory-bandwidth floor, GPU memory. docs/benchmarks.md records the figures.
//! Inputs follow shared/gpu/hf_reference.py (a global view, `crops` tiles, the layout prompt) so the two compare;
//! no tokenizer is needed. Without `--model` the weights are random, drawn for DeepSeek-OCR-2's own config: the
//! speed of the real architecture with no checkpoint on disk.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use clap::Args;
use deepread_engine::config::{ModelConfig, TextConfig};
use deepread_engine::device::{memory_used, Placement};
use deepread_engine::vision::TILE_SIZE;
use deepread_engine::{
    DecodePath, Engine, Flow, GenerateEvent, GenerateOptions, Model, NoRepeatNgram, PageImage,
    PageInput, PageOutput,
};

use crate::failure::Failure;

/// "<|grounding|>Convert the document to markdown." after the image run (shared/fixtures/tokenizer).
const LAYOUT_PROMPT_IDS: [u32; 9] = [201, 128820, 21842, 270, 4940, 304, 2121, 7919, 16];
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
    #[arg(long)]
    reference_path: bool,
    /// Device memory bandwidth for the floor, GB/s; 3000 is the H100's as measured in shared/gpu/README.md.
    #[arg(long, default_value_t = 3000.0)]
    bandwidth_gbs: f64,
}

/// One batch size's figures.
struct Row {
    pages: usize,
    vision_ms: f64,
    prefill_ms: f64,
    decode_step_ms: f64,
    tokens_per_s: f64,
    memory_bytes: Option<usize>,
}

pub fn run(args: BenchArgs) -> Result<(), Failure> {
    if args.tokens < 2 || args.pages.is_empty() || args.pages.contains(&0) {
        return Err(Failure::Usage(
            "--tokens must be at least 2 (one decode step) and --pages a list of sizes ≥ 1".into(),
        ));
    }
    let placement = deepread_engine::device::place();
    let (device, dtype) = (placement.device.clone(), placement.dtype);
    let path = if args.reference_path {
        DecodePath::Reference
    } else {
        DecodePath::Fused
    };
    let (model, weights) = load_model(args.model.as_deref(), &device, dtype)?;
    let engine = Engine::new(model)
        .and_then(|e| e.with_decode_path(path))
        .map_err(Failure::model)?;
    let config = engine.model().config();
    let page = synthetic_page(config, args.crops);
    // A first pass at each batch size pays the one-off set-up (kernel modules, the cuBLAS handle, the capture of
    // that size's decode graph), which a reader pays once per process: keep it out of the figures.
    for &n in &args.pages {
        time_batch(&engine, &page, n, 2)?;
    }
    let rows = args
        .pages
        .iter()
        .map(|&n| time_batch(&engine, &page, n, args.tokens))
        .collect::<Result<Vec<_>, _>>()?;
    let step_bytes = decode_bytes(&config.text, dtype);
    print_report(
        &args,
        &weights,
        (&placement, engine.decode_path()),
        page.prompt_ids.len(),
        step_bytes,
        &rows,
    );
    Ok(())
}

/// The model of `dir`, or random weights of DeepSeek-OCR-2's config; and how the report names them.
fn load_model(
    dir: Option<&Path>,
    device: &Device,
    dtype: DType,
) -> Result<(Model, String), Failure> {
    let Some(dir) = dir else {
        let model = Model::random(ModelConfig::deepseek_ocr2(), device, dtype, RANDOM_SEED)
            .map_err(Failure::model)?;
        return Ok((model, "random weights of DeepSeek-OCR-2's config".into()));
    };
    if !dir.join("config.json").is_file() {
        return Err(Failure::Model(format!(
            "no model in {} (config.json missing)",
            dir.display()
        )));
    }
    let model = Model::load(dir, device, dtype).map_err(Failure::model)?;
    Ok((model, dir.display().to_string()))
}

/// A page like hf_reference.py's: BOS, the `<image>` run, the layout prompt; fixed pixels.
fn synthetic_page(config: &ModelConfig, crops: usize) -> PageInput {
    let base = config.sam.image_size;
    let image = PageImage {
        global: pixels(3 * base * base),
        tiles: pixels(crops * 3 * TILE_SIZE * TILE_SIZE),
        num_tiles: crops,
        base_size: base,
        tile_size: TILE_SIZE,
    };
    let text = &config.text;
    let mut prompt_ids = vec![text.bos_token_id];
    prompt_ids.resize(1 + image.image_tokens(config), config.image_token_id);
    // Folded into the vocabulary so that tiny test models, with a few hundred ids, take the same prompt.
    prompt_ids.extend(
        LAYOUT_PROMPT_IDS
            .iter()
            .map(|&id| id % text.vocab_size as u32)
            .filter(|&id| id != config.image_token_id),
    );
    PageInput {
        prompt_ids,
        image: Some(image),
    }
}

/// A fixed pattern in the normalised range [-1, 1]; the speed does not depend on the values.
fn pixels(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (i * 7919 % 255) as f32 / 127.5 - 1.0)
        .collect()
}

/// Generates `tokens` for `pages` copies of the page in one call; GPU memory is read when each page finishes,
/// while every cache is still held.
fn time_batch(
    engine: &Engine,
    page: &PageInput,
    pages: usize,
    tokens: usize,
) -> Result<Row, Failure> {
    let inputs = vec![page.clone(); pages];
    let options = GenerateOptions {
        max_new_tokens: tokens,
        // An id no model has: every page generates exactly `tokens`.
        eos_token_id: Some(u32::MAX),
        no_repeat_ngram: NoRepeatNgram::Off,
    };
    let device = engine.model().device();
    let mut memory_bytes = None;
    let outputs = engine
        .generate(&inputs, &options, |event| {
            if let GenerateEvent::Finished { .. } = event {
                memory_bytes = memory_bytes.max(memory_used(device).map(|b| b as usize));
            }
            Flow::Continue
        })
        .map_err(Failure::model)?;
    Ok(row_of(pages, &outputs, memory_bytes))
}

fn row_of(pages: usize, outputs: &[PageOutput], memory_bytes: Option<usize>) -> Row {
    let stats = &outputs[0].stats;
    // The first token comes from the prefill; every page takes part in every decode step.
    let steps = stats.generated_tokens.saturating_sub(1).max(1) as f64;
    let decode_ms = outputs
        .iter()
        .map(|o| o.stats.decode_ms)
        .fold(0.0, f64::max);
    let mean = |f: fn(&PageOutput) -> f64| outputs.iter().map(f).sum::<f64>() / pages as f64;
    Row {
        pages,
        vision_ms: mean(|o| o.stats.vision_ms),
        prefill_ms: mean(|o| o.stats.prefill_ms),
        decode_step_ms: decode_ms / steps,
        tokens_per_s: pages as f64 * steps / (decode_ms / 1e3),
        memory_bytes,
    }
}

/// Weight bytes one batch-1 decode step must read: attention, the dense MLPs, the shared and top-k routed experts
/// and the router of each MoE layer, the norms, one embedding row and the lm_head.
fn decode_bytes(t: &TextConfig, dtype: DType) -> f64 {
    let h = t.hidden_size;
    let kv = t.num_kv_heads * t.head_dim();
    let attention = 2 * h * h + 2 * h * kv;
    let dense_mlp = 3 * h * t.intermediate_size;
    let moe_mlp = (t.num_experts_per_tok + t.n_shared_experts) * 3 * h * t.moe_intermediate_size
        + t.n_routed_experts * h;
    let sparse = t.sparse_layers.iter().filter(|&&s| s).count();
    let layers =
        t.num_layers * (attention + 2 * h) + sparse * moe_mlp + (t.num_layers - sparse) * dense_mlp;
    let params = layers + h + h + t.vocab_size * h;
    (params * dtype.size_in_bytes()) as f64
}

fn print_report(
    args: &BenchArgs,
    weights: &str,
    (placement, path): (&Placement, DecodePath),
    prompt_tokens: usize,
    step_bytes: f64,
    rows: &[Row],
) {
    let floor_ms = step_bytes / (args.bandwidth_gbs * 1e9) * 1e3;
    let where_ = placement.describe();
    println!(
        "deepread bench: {weights}, {where_}, {path:?} decode path; {} tiles + global view, {prompt_tokens} prompt tokens, {} tokens per page",
        args.crops,
        args.tokens
    );
    println!(
        "bandwidth floor: {:.3} GB of weights per batch-1 decode step / {} GB/s = {floor_ms:.3} ms (--bandwidth-gbs; default 3000 = the H100 as measured in shared/gpu/README.md)",
        step_bytes / 1e9,
        args.bandwidth_gbs
    );
    println!(
        "pages  vision+prefill ms/page  (vision  prefill)  decode ms/step  tokens/s  GPU memory GB"
    );
    for r in rows {
        let memory = r
            .memory_bytes
            .map_or("n/a".to_string(), |b| format!("{:.2}", b as f64 / 1e9));
        println!(
            "{:>5}  {:>22.1}  ({:>6.1}  {:>7.1})  {:>14.3}  {:>8.1}  {:>13}",
            r.pages,
            r.vision_ms + r.prefill_ms,
            r.vision_ms,
            r.prefill_ms,
            r.decode_step_ms,
            r.tokens_per_s,
            memory
        );
    }
    if let Some(r) = rows.iter().find(|r| r.pages == 1) {
        println!(
            "batch 1 decode step: {:.1}% of the bandwidth floor ({:.1}× slower)",
            100.0 * floor_ms / r.decode_step_ms,
            r.decode_step_ms / floor_ms
        );
    }
}
