//! Continuous batching against reading alone, at full size: every page of a mixed run must get the tokens it gets
//! when read alone, whatever joins or leaves beside it. Random bf16 weights of DeepSeek-OCR-2's config (drawn on
//! the device, no checkpoint), `PAGES` pages with pixels of their own and lengths of their own, the product's
//! n-gram ban; each page read alone (one slot), then all of them with continuous batching (slots sized from free
//! memory). A page whose tokens differ is checked where they part: the two tokens' logits, teacher-forced on
//! the page alone, must be a near-tie. Run on the GPU machine (docs/benchmarks.md):
//!
//! ```text
//! cargo build --release --features cuda -p deepread-engine --example continuous_parity
//! continuous_parity [PAGES] [--fastest] [--int8]
//! ```
//!
//! By default pages decode on the batch-invariant path (the default for bf16), whose kernels sum every output
//! the same way whatever the batch size; `--fastest` on the kernels summed however is fastest for each batch
//! size. `--int8` quantizes the language model's weights to int8 first, as `--weights int8` does.
//!
//! Exits non-zero when fewer than 99 % of the pages are identical, or when a difference is not a near-tie.

use std::time::Instant;

use anyhow::{ensure, Context, Result};
use candle_core::{DType, IndexOp};
use deepread_engine::config::ModelConfig;
use deepread_engine::synthetic;
use deepread_engine::{
    DecodePath, Engine, Flow, GenerateEvent, GenerateOptions, Model, PageInput, Schedule,
};

const MIN_IDENTICAL_SHARE: f64 = 0.99;
/// Two logits this close, relative to the largest, are a tie in bf16 (8 bits of mantissa: 0.4 % a rounding).
const NEAR_TIE: f32 = 0.01;
const SEED: u64 = 2026;
const CROPS: usize = 6;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fastest = args.iter().any(|a| a == "--fastest");
    let int8 = args.iter().any(|a| a == "--int8");
    let pages: usize = match args.iter().find(|a| !a.starts_with("--")) {
        Some(n) => n.parse().context("PAGES is a number")?,
        None => 64,
    };
    let path = if fastest {
        DecodePath::Fused
    } else {
        DecodePath::FusedBatchInvariant
    };
    let placement = deepread_engine::device::place();
    ensure!(
        placement.device.is_cuda(),
        "a full-size run needs the GPU: {}",
        placement.describe()
    );
    let mut model = Model::random(
        ModelConfig::deepseek_ocr2(),
        &placement.device,
        DType::BF16,
        SEED,
    )?;
    if int8 {
        model = model.into_int8(None, "random")?;
    }
    let engine = Engine::new(model)?.with_decode_path(path)?;
    println!(
        "{:?} decode path, {} weights",
        engine.decode_path(),
        if int8 { "int8" } else { "bf16" }
    );
    let lengths = mixed_lengths(pages);
    let t = Instant::now();
    let mut alone = Vec::with_capacity(pages);
    for (i, &length) in lengths.iter().enumerate() {
        let schedule = Schedule::for_engine(&engine).with_slots(1);
        alone.push(read(&engine, &schedule, &[i], &[length])?.remove(0));
    }
    let alone_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let indices: Vec<usize> = (0..pages).collect();
    let schedule = Schedule::for_engine(&engine);
    let together = read(&engine, &schedule, &indices, &lengths)?;
    println!(
        "{pages} pages of {} to {} tokens ({} in all); alone {alone_s:.1} s, continuous ({} slots) {:.1} s",
        lengths.iter().min().unwrap_or(&0),
        lengths.iter().max().unwrap_or(&0),
        lengths.iter().sum::<usize>(),
        schedule.slots,
        t.elapsed().as_secs_f64()
    );
    let mut identical = 0;
    let mut not_ties = 0;
    for (i, (a, b)) in alone.iter().zip(&together).enumerate() {
        let Some(at) = a.iter().zip(b).position(|(x, y)| x != y) else {
            ensure!(
                a.len() == b.len(),
                "page {i}: {} against {} tokens",
                a.len(),
                b.len()
            );
            identical += 1;
            continue;
        };
        let (gap, top) = logit_gap(&engine, i, &a[..at], a[at], b[at])?;
        let tie = gap <= NEAR_TIE * top.abs();
        not_ties += usize::from(!tie);
        println!(
            "page {i}: parts at token {at} ({} alone, {} beside others): logits differ by {gap:.4} at a top logit of {top:.3}: {}",
            a[at],
            b[at],
            if tie { "a near-tie" } else { "NOT a near-tie" }
        );
    }
    let share = identical as f64 / pages as f64;
    println!(
        "identical: {identical} of {pages} pages ({:.1} %); differences that are not near-ties: {not_ties}",
        100.0 * share
    );
    ensure!(
        share >= MIN_IDENTICAL_SHARE && not_ties == 0,
        "continuous batching changed tokens"
    );
    Ok(())
}

/// Lengths from 20 to 600 tokens, seeded (xorshift: the run must be the same everywhere).
fn mixed_lengths(pages: usize) -> Vec<usize> {
    let mut state = SEED;
    (0..pages)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            20 + (state % 581) as usize
        })
        .collect()
}

/// Page `index`: the bench's page with pixels of its own.
fn page(config: &ModelConfig, index: usize) -> PageInput {
    synthetic::page::layout_page(config, CROPS, index)
}

/// Reads pages `indices` under `schedule`, page `k` stopped after `lengths[k]` tokens; their tokens.
fn read(
    engine: &Engine,
    schedule: &Schedule,
    indices: &[usize],
    lengths: &[usize],
) -> Result<Vec<Vec<u32>>> {
    let config = engine.model().config().clone();
    let options = GenerateOptions {
        eos_token_id: Some(u32::MAX),
        ..GenerateOptions::default()
    };
    let mut tokens = vec![Vec::new(); indices.len()];
    let mut failed = None;
    let mut source = indices.iter().map(|&i| page(&config, i));
    engine.read_pages(&mut source, schedule, &options, &mut |event| {
        match event {
            GenerateEvent::Token { page, token_id } => {
                tokens[page].push(token_id);
                if tokens[page].len() >= lengths[page] {
                    return Flow::StopPage;
                }
            }
            GenerateEvent::Failed { page, error } => failed = Some(format!("page {page}: {error}")),
            GenerateEvent::Finished { .. } | GenerateEvent::FewerSlots { .. } => {}
        }
        Flow::Continue
    })?;
    if let Some(error) = failed {
        anyhow::bail!(error);
    }
    Ok(tokens)
}

/// Teacher-forced on page `index` alone after `before`: the gap between the logits of `a` and `b`, and the
/// largest logit.
fn logit_gap(engine: &Engine, index: usize, before: &[u32], a: u32, b: u32) -> Result<(f32, f32)> {
    let model = engine.model();
    let input = page(model.config(), index);
    let image = input.image.as_ref().context("the page has an image")?;
    let features = model.image_features(image)?;
    let mut ids = input.prompt_ids.clone();
    ids.extend_from_slice(before);
    let embeds = model.input_embeddings(&ids, Some(&features))?;
    let (hidden, _) = model.prefill(&embeds, ids.len())?;
    let last = hidden.i(ids.len() - 1..)?;
    let logits: Vec<f32> = model
        .text()
        .logits(&last)?
        .squeeze(0)?
        .to_dtype(DType::F32)?
        .to_vec1()?;
    let top = logits.iter().copied().fold(f32::MIN, f32::max);
    Ok(((logits[a as usize] - logits[b as usize]).abs(), top))
}
