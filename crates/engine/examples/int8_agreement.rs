//! int8 against bf16 on random weights of DeepSeek-OCR-2's full config (#15): a synthetic page of 6 tiles, then
//! real output text teacher-forced after its prompt, and the logits at those positions compared between the
//! model as drawn and the same model with its language model in int8.
//!
//! `int8_agreement TOKENIZER.json TEXT... [--positions N]`: TEXT files are real DeepSeek-OCR outputs (e.g.
//! shared/fixtures/grounding/with_source/docling_md_deepseek/*.md), tokenized and joined until N positions
//! (default 256). Prints the relative error of the logits, the top-1 agreement and the widest flip.
//! Needs a CUDA device (the random model is 6.7 GB in bf16).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use candle_core::Tensor;
use deepread_engine::config::ModelConfig;
use deepread_engine::prompt::Tokenizer;
use deepread_engine::quant::{teacher_forced_logits, Agreement};
use deepread_engine::synthetic::page::layout_page;
use deepread_engine::Model;

const SEED: u64 = 2026;

fn main() -> Result<()> {
    let (tokenizer, texts, positions) = args()?;
    let placement = deepread_engine::device::place();
    ensure!(
        placement.device.is_cuda(),
        "needs a CUDA device, found {}",
        placement.describe()
    );
    let tokenizer = Tokenizer::from_file(&tokenizer)?;
    let mut teacher = Vec::new();
    for text in &texts {
        let text = std::fs::read_to_string(text).with_context(|| text.display().to_string())?;
        teacher.extend(tokenizer.encode(&text)?);
    }
    ensure!(
        teacher.len() >= positions,
        "the texts give {} tokens, fewer than {positions}",
        teacher.len()
    );
    teacher.truncate(positions);

    let config = ModelConfig::deepseek_ocr2();
    let model = Model::random(config.clone(), &placement.device, placement.dtype, SEED)?;
    let page = layout_page(&config, 6, 0);
    let image = page
        .image
        .as_ref()
        .context("the synthetic page has an image")?;
    let features = model.image_features(image)?;
    let compared = |model: &Model| -> Result<Tensor> {
        Ok(teacher_forced_logits(
            model,
            &page,
            Some(&features),
            &teacher,
        )?)
    };
    let dense = compared(&model)?;
    let started = Instant::now();
    let model = model.into_int8(None, "random")?;
    let quantize_s = started.elapsed().as_secs_f64();
    let int8 = compared(&model)?;
    let a = Agreement::of(&dense, &int8)?;
    println!(
        "int8_agreement: random weights (seed {SEED}) of DeepSeek-OCR-2's config, {}, 6 tiles, {} prompt + {positions} teacher-forced tokens from {} text(s); quantized in {quantize_s:.1} s",
        placement.describe(),
        page.prompt_ids.len(),
        texts.len()
    );
    println!(
        "int8 vs {:?}: logits {:.4e} relative (L2), top-1 {}/{} ({:.1} %), widest flip {:.4} (dense logits of the two choices)",
        placement.dtype,
        a.rel_l2,
        a.top1,
        a.positions,
        a.top1_share() * 100.0,
        a.widest_flip
    );
    Ok(())
}

fn args() -> Result<(PathBuf, Vec<PathBuf>, usize)> {
    let mut args = std::env::args().skip(1);
    let mut positions = 256;
    let mut paths = Vec::new();
    while let Some(arg) = args.next() {
        if arg == "--positions" {
            positions = args.next().context("--positions N")?.parse()?;
        } else {
            paths.push(PathBuf::from(arg));
        }
    }
    ensure!(
        paths.len() >= 2,
        "usage: int8_agreement TOKENIZER.json TEXT... [--positions N]"
    );
    let tokenizer = paths.remove(0);
    Ok((tokenizer, paths, positions))
}
