//! `deepread bench`'s default: the same page in batches of fixed sizes, each page generating exactly
//! `--tokens` tokens.

use deepread_engine::config::TextConfig;
use deepread_engine::device::memory_used;
use deepread_engine::{
    Engine, Flow, GenerateEvent, GenerateOptions, NoRepeatNgram, PageInput, PageOutput,
};

use super::{BenchArgs, Setting};
use crate::failure::Failure;

pub(super) fn run(
    engine: &Engine,
    page: &PageInput,
    args: &BenchArgs,
    setting: &Setting,
) -> Result<(), Failure> {
    // A first pass at each batch size pays the one-off set-up (kernel modules, the cuBLAS handle, the capture of
    // that size's decode graph), which a reader pays once per process: keep it out of the figures.
    for &n in &args.pages {
        time_batch(engine, page, n, 2)?;
    }
    let rows = args
        .pages
        .iter()
        .map(|&n| time_batch(engine, page, n, args.tokens))
        .collect::<Result<Vec<_>, _>>()?;
    let text = engine.model().text();
    // Q8_0 holds 32 int8 weights and an f16 scale in 34 bytes.
    let bytes_per_weight = if text.is_int8() {
        34.0 / 32.0
    } else {
        setting.placement.dtype.size_in_bytes() as f64
    };
    let step_bytes = decode_bytes(text.config(), bytes_per_weight);
    print_report(args, setting, page.prompt_ids.len(), step_bytes, &rows);
    Ok(())
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
pub(super) fn decode_bytes(t: &TextConfig, bytes_per_weight: f64) -> f64 {
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
    params as f64 * bytes_per_weight
}

fn print_report(
    args: &BenchArgs,
    setting: &Setting,
    prompt_tokens: usize,
    step_bytes: f64,
    rows: &[Row],
) {
    let floor_ms = step_bytes / (args.bandwidth_gbs * 1e9) * 1e3;
    let (weights, path) = (&setting.weights, setting.path);
    let where_ = setting.placement.describe();
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
