//! Full-size parity, the engine's half: loads the checkpoint that `fixtures/full_size_parity.py` wrote (random bf16
//! weights of the real config), runs the same 6-tile page and prompt through the engine, and compares with every
//! oracle variant the script saved. Run on the GPU machine right after the script (docs/parity.md):
//!
//! ```text
//! cargo build --release --features cuda -p deepread-engine --example full_size_parity
//! full_size_parity WORK_DIR [--cpu]
//! ```
//!
//! The engine runs in bf16 (the requirement) and then in f32 (the same weights, for the implementation's own error
//! without bf16 rounding). Exits non-zero when the engine's bf16 logits are further from the default oracle than
//! 1.1× the oracle's own bf16 spread (its two bf16 variants against each other), or when the prompt pass or the
//! fused decode steps agree on the top-1 token at fewer than 99% of the 256 teacher-forced positions. A fixed bar
//! would not do: bf16 rounding alone moves the oracle's logits by about 1.4e-2, so no bf16 engine could be held
//! closer to one variant than the variants are to each other.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use candle_core::{DType, Device, Tensor};
use deepread_engine::lm::{FusedDecoder, Sums};
use deepread_engine::model::{Model, PageImage};
use deepread_engine::preprocess::normalise;
use serde_json::Value;

#[path = "../tests/support/pixel_hash.rs"]
mod pixel_hash;
use pixel_hash::hash_pixels;

/// The requirement's thresholds, for the engine in bf16 against the oracle as transformers runs it by default:
/// logits within SPREAD_FACTOR × the relative error between PASS_VARIANT and SPREAD_VARIANT (the same bf16 model
/// in another attention implementation), top-1 on MIN_TOP1_SHARE of the teacher-forced positions.
const SPREAD_FACTOR: f64 = 1.1;
const MIN_TOP1_SHARE: f64 = 0.99;
const PASS_VARIANT: &str = "bf16";
const SPREAD_VARIANT: &str = "bf16_eager";

/// What the oracle script saved.
struct Reference {
    meta: Value,
    tensors: HashMap<String, Tensor>,
    prompt_ids: Vec<u32>,
    n_teacher: usize,
}

/// The engine's outputs for one dtype and path, on the CPU in f32.
struct EngineRun {
    dtype: DType,
    /// "reference" (stock ops) or "fused" (the GPU kernels: MoE in the prompt pass, and the decode steps).
    path: &'static str,
    /// Fused path: the token each teacher-forced decode step chose (no ban), one per teacher position.
    decode_picks: Option<Vec<u32>>,
    /// (n_teacher + 1, vocab): the last positions of the prompt logits.
    logits_tail: Tensor,
    /// Argmax at every prompt position, lowest index on ties (as `torch.argmax`).
    argmax: Vec<u32>,
    image_features: Tensor,
    load_s: f64,
    vision_s: f64,
    lm_s: f64,
}

/// One engine run against one oracle variant.
struct Agreement {
    rel_logits: f64,
    rel_features: f64,
    /// Teacher-forced positions where our top-1 token is the oracle's top-1 (strictly, same index).
    top1_strict: usize,
    /// Same, counting our token as top-1 when the oracle's logit for it equals the oracle's maximum (bf16 ties).
    top1: usize,
    /// Every prompt position, image placeholders included (strict).
    top1_all: usize,
    /// (position in the tail, ours, theirs, oracle's margin of its top-1 over ours).
    misses: Vec<(usize, u32, u32, f32)>,
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(work) = args.iter().find(|a| !a.starts_with("--")) else {
        bail!("usage: full_size_parity WORK_DIR [--cpu]   (WORK_DIR as written by full_size_parity.py)");
    };
    let work = PathBuf::from(work);
    let device = if args.iter().any(|a| a == "--cpu") {
        Device::Cpu
    } else {
        cuda_device()?
    };
    let reference = Reference::load(&work)?;
    let image = page_image(&reference.meta)?;
    let variants = variant_names(&reference.meta)?;
    let max_rel_logits = SPREAD_FACTOR * oracle_bf16_spread(&reference)?;
    println!("oracle: {}", reference.meta["versions"]);
    println!(
        "prompt: {} tokens ({} teacher-forced), {} tiles, compared: last {} positions",
        reference.prompt_ids.len(),
        reference.n_teacher,
        image.num_tiles,
        reference.n_teacher + 1
    );
    let mut table = Vec::new();
    let mut verdict = None;
    let paths: &[bool] = if device.is_cuda() {
        &[false, true]
    } else {
        &[false]
    };
    for dtype in [DType::BF16, DType::F32] {
        for &fused in paths {
            let run = match run_engine(
                &work.join("model"),
                &device,
                (dtype, fused),
                &reference,
                &image,
            ) {
                Ok(run) => run,
                Err(e) => {
                    println!("engine {dtype:?} fused={fused}: FAILED: {e:#}");
                    if dtype == DType::BF16 {
                        verdict = Some(false);
                    }
                    continue;
                }
            };
            println!(
                "engine {:?} {}: load {:.1} s, vision {:.3} s, LM prompt pass {:.3} s",
                run.dtype, run.path, run.load_s, run.vision_s, run.lm_s
            );
            if let Some(picks) = &run.decode_picks {
                for variant in &variants {
                    let (strict, ties) = decode_agreement(picks, &reference, variant)?;
                    println!(
                    "  fused decode steps, {:?} vs {variant}: top-1 {ties}/{n} (ties counted), {strict}/{n} strict",
                    run.dtype,
                    n = reference.n_teacher
                );
                    if dtype == DType::BF16 && variant == PASS_VARIANT {
                        let enough = share_met(ties, reference.n_teacher);
                        verdict = Some(verdict.unwrap_or(true) && enough);
                    }
                }
            }
            for variant in &variants {
                let a = compare(&run, &reference, variant)?;
                print_misses(&run, variant, &a);
                if dtype == DType::BF16 && variant == PASS_VARIANT {
                    let pass =
                        a.rel_logits <= max_rel_logits && share_met(a.top1, reference.n_teacher);
                    verdict = Some(verdict.unwrap_or(true) && pass);
                }
                table.push((format!("{:?} {}", run.dtype, run.path), variant.clone(), a));
            }
        }
    }
    print_oracle_spread(&reference, &variants)?;
    print_table(&table, reference.n_teacher, reference.prompt_ids.len());
    match verdict {
        Some(true) => {
            println!("PASS: engine bf16 vs oracle {PASS_VARIANT}: logits within {max_rel_logits:.3e} relative ({SPREAD_FACTOR}× the oracle's {PASS_VARIANT} vs {SPREAD_VARIANT}), top-1 on ≥ {:.0}% of teacher-forced positions and decode steps", MIN_TOP1_SHARE * 100.0);
            Ok(())
        }
        Some(false) => bail!("FAIL: engine bf16 vs oracle {PASS_VARIANT} out of tolerance (logits bar {max_rel_logits:.3e}, top-1 {:.0}%)", MIN_TOP1_SHARE * 100.0),
        None => bail!("the oracle has no variant {PASS_VARIANT:?}"),
    }
}

impl Reference {
    fn load(work: &Path) -> Result<Self> {
        let meta_path = work.join("reference.json");
        let meta: Value = serde_json::from_str(
            &std::fs::read_to_string(&meta_path)
                .with_context(|| format!("reading {}", meta_path.display()))?,
        )?;
        let tensors =
            candle_core::safetensors::load(work.join("reference.safetensors"), &Device::Cpu)?;
        let prompt_ids = meta["prompt_ids"]
            .as_array()
            .context("prompt_ids")?
            .iter()
            .map(|v| v.as_u64().map(|n| n as u32).context("a prompt id"))
            .collect::<Result<Vec<_>>>()?;
        let n_teacher = meta["n_teacher"].as_u64().context("n_teacher")? as usize;
        Ok(Self {
            meta,
            tensors,
            prompt_ids,
            n_teacher,
        })
    }

    fn tensor(&self, variant: &str, what: &str) -> Result<&Tensor> {
        let name = format!("{variant}.{what}");
        self.tensors
            .get(&name)
            .with_context(|| format!("{name} missing from reference.safetensors"))
    }
}

/// Oracle variants in the order the script ran them.
fn variant_names(meta: &Value) -> Result<Vec<String>> {
    Ok(meta["variants"]
        .as_object()
        .context("variants")?
        .keys()
        .cloned()
        .collect())
}

/// The script's pixels (`hash_pixels`, then (u8/255 − 0.5)/0.5): global view with the seed, tiles with seed + 1;
/// their sums are checked against the script's, so a drift in the hash cannot pass unnoticed.
fn page_image(meta: &Value) -> Result<PageImage> {
    let seed = meta["pixel_seed"].as_u64().context("pixel_seed")? as u32;
    let n_tiles = meta["n_tiles"].as_u64().context("n_tiles")? as usize;
    let image = PageImage {
        global: hash_pixels(seed, 1, 1024),
        tiles: hash_pixels(seed + 1, n_tiles, 768),
        num_tiles: n_tiles,
        base_size: 1024,
        tile_size: 768,
    };
    for (name, pixels) in [("global_view", &image.global), ("tiles", &image.tiles)] {
        let want = meta["pixel_sums"][name].as_f64().context("pixel_sums")?;
        let got: f64 = pixels.iter().map(|&p| f64::from(normalise(p))).sum();
        ensure!(
            (got - want).abs() < 1e-6 * want.abs().max(1.0),
            "pixel sum of {name}: {got} here, {want} in the oracle"
        );
    }
    Ok(image)
}

/// Load in `dtype`, then vision, merge and one LM pass over the whole prompt, timed with device syncs; on the
/// fused path also the teacher-forced positions again, one fused decode step each.
fn run_engine(
    model_dir: &Path,
    device: &Device,
    (dtype, fused): (DType, bool),
    reference: &Reference,
    image: &PageImage,
) -> Result<EngineRun> {
    let t = Instant::now();
    let model = Model::load(model_dir, device, dtype)?;
    // The decode steps the product takes: batch-invariant, as `Engine::new` builds them for bf16 and f32.
    let decoder = if fused {
        Some(
            FusedDecoder::new(model.text(), device, dtype, Sums::BatchInvariant)?
                .context("no fused decoder for this device and dtype")?,
        )
    } else {
        None
    };
    device.synchronize()?;
    let load_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let features = model.image_features(image)?;
    device.synchronize()?;
    let vision_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let embeds = model.input_embeddings(&reference.prompt_ids, Some(&features))?;
    let len = embeds.dim(0)?;
    let (hidden, _) = model.prefill_with(&embeds, len, decoder.as_ref())?;
    let logits = model.text().logits(&hidden)?;
    device.synchronize()?;
    let lm_s = t.elapsed().as_secs_f64();
    let decode_picks = decoder
        .map(|d| teacher_forced_picks(&model, &d, reference, &embeds))
        .transpose()?;
    let tail = reference.n_teacher + 1;
    Ok(EngineRun {
        dtype,
        path: if fused { "fused" } else { "reference" },
        decode_picks,
        logits_tail: logits
            .narrow(0, len - tail, tail)?
            .to_device(&Device::Cpu)?,
        argmax: rows_argmax(&logits.to_device(&Device::Cpu)?)?,
        image_features: features.to_dtype(DType::F32)?.to_device(&Device::Cpu)?,
        load_s,
        vision_s,
        lm_s,
    })
}

/// Prefill the prompt proper, then feed the teacher-forced ids one fused decode step at a time: the token each
/// step chooses is the top-1 at that position.
fn teacher_forced_picks(
    model: &Model,
    decoder: &FusedDecoder,
    reference: &Reference,
    embeds: &Tensor,
) -> Result<Vec<u32>> {
    let len = embeds.dim(0)?;
    let proper = len - reference.n_teacher;
    let (_, mut cache) = model.prefill_with(&embeds.narrow(0, 0, proper)?, len, Some(decoder))?;
    let mut picks = Vec::with_capacity(reference.n_teacher);
    for &token in &reference.prompt_ids[proper..] {
        let chosen = decoder
            .step(model.text(), &[token], &mut [&mut cache], &[Vec::new()])?
            .context("the fused step declined an empty ban list")?;
        picks.push(chosen[0].context("no token chosen")?);
    }
    Ok(picks)
}

/// The fused decode steps' tokens against the oracle's top-1 at the teacher-forced positions: (strict, with
/// the oracle's exact ties counted).
fn decode_agreement(picks: &[u32], reference: &Reference, variant: &str) -> Result<(usize, usize)> {
    let theirs = reference
        .tensor(variant, "logits")?
        .to_dtype(DType::F32)?
        .to_vec2::<f32>()?;
    let (mut strict, mut ties) = (0, 0);
    // Row 0 of the oracle's tail is the end of the prompt proper; step j chose the token after teacher id j.
    for (&pick, row) in picks.iter().zip(theirs.iter().skip(1)) {
        let best = first_max(row);
        strict += usize::from(pick as usize == best);
        ties += usize::from(row[pick as usize] == row[best]);
    }
    Ok((strict, ties))
}

/// The GPU with the engine's own stream (CUDA graphs need one), or an error naming what is missing.
#[cfg(feature = "cuda")]
fn cuda_device() -> Result<Device> {
    deepread_engine::engine_gpu(0).context("no CUDA device")
}

#[cfg(not(feature = "cuda"))]
fn cuda_device() -> Result<Device> {
    bail!("built without CUDA: build with --features cuda, or pass --cpu")
}

/// Index of the first maximum of each row of a (rows, n) f32 tensor.
fn rows_argmax(t: &Tensor) -> Result<Vec<u32>> {
    Ok(t.to_dtype(DType::F32)?
        .to_vec2::<f32>()?
        .iter()
        .map(|row| first_max(row) as u32)
        .collect())
}

fn first_max(row: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in row.iter().enumerate() {
        if v > row[best] {
            best = i;
        }
    }
    best
}

fn compare(run: &EngineRun, reference: &Reference, variant: &str) -> Result<Agreement> {
    let theirs_tail = reference.tensor(variant, "logits")?;
    let rel_logits = rel_err(&run.logits_tail, theirs_tail)?;
    let rel_features = rel_err(
        &run.image_features,
        reference.tensor(variant, "image_features")?,
    )?;
    let ours = run.logits_tail.to_vec2::<f32>()?;
    let theirs = theirs_tail.to_dtype(DType::F32)?.to_vec2::<f32>()?;
    // The teacher-forced positions are the last n_teacher rows; row 0 is the end of the prompt proper.
    let (mut top1_strict, mut top1, mut misses) = (0, 0, Vec::new());
    for (pos, (o, r)) in ours.iter().zip(&theirs).enumerate().skip(1) {
        let (mine, best) = (first_max(o), first_max(r));
        if mine == best {
            top1_strict += 1;
        }
        if r[mine] == r[best] {
            top1 += 1;
        } else {
            misses.push((pos, mine as u32, best as u32, r[best] - r[mine]));
        }
    }
    let argmax_theirs: Vec<u32> = reference
        .tensor(variant, "argmax")?
        .to_vec1::<i64>()?
        .into_iter()
        .map(|x| x as u32)
        .collect();
    ensure!(
        argmax_theirs.len() == run.argmax.len(),
        "prompt lengths differ"
    );
    let top1_all = run
        .argmax
        .iter()
        .zip(&argmax_theirs)
        .filter(|(a, b)| a == b)
        .count();
    Ok(Agreement {
        rel_logits,
        rel_features,
        top1_strict,
        top1,
        top1_all,
        misses,
    })
}

/// ‖a − b‖ / ‖b‖ in f64.
fn rel_err(a: &Tensor, b: &Tensor) -> Result<f64> {
    ensure!(
        a.dims() == b.dims(),
        "shapes {:?} and {:?}",
        a.dims(),
        b.dims()
    );
    let a = a.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    let b = b.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    let diff: f64 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
    let norm: f64 = b.iter().map(|y| y * y).sum();
    Ok((diff / norm).sqrt())
}

fn share_met(agreeing: usize, n_teacher: usize) -> bool {
    agreeing as f64 >= MIN_TOP1_SHARE * n_teacher as f64
}

/// The oracle's logits in PASS_VARIANT against SPREAD_VARIANT: how far bf16 rounding alone moves them.
fn oracle_bf16_spread(reference: &Reference) -> Result<f64> {
    rel_err(
        reference.tensor(PASS_VARIANT, "logits")?,
        reference.tensor(SPREAD_VARIANT, "logits")?,
    )
    .context("the logits bar is the oracle's own bf16 spread: run full_size_parity.py with both bf16 variants")
}

/// Where the top-1 differs: how close the oracle's own top two were (a small margin is a near-tie, not a bug).
fn print_misses(run: &EngineRun, variant: &str, a: &Agreement) {
    for (pos, ours, theirs, margin) in a.misses.iter().take(10) {
        println!(
            "  {:?} vs {variant}: teacher-forced position {pos}: ours {ours}, oracle {theirs} (oracle margin {margin:.4})",
            run.dtype
        );
    }
}

/// The oracle variants against each other: the spread that bf16 rounding alone produces.
fn print_oracle_spread(reference: &Reference, variants: &[String]) -> Result<()> {
    for (i, a) in variants.iter().enumerate() {
        for b in &variants[i + 1..] {
            let rel = rel_err(
                reference.tensor(a, "logits")?,
                reference.tensor(b, "logits")?,
            )?;
            let ta = reference.tensor(a, "argmax")?.to_vec1::<i64>()?;
            let tb = reference.tensor(b, "argmax")?.to_vec1::<i64>()?;
            let n = reference.n_teacher;
            let same_teacher = ta[ta.len() - n..]
                .iter()
                .zip(&tb[tb.len() - n..])
                .filter(|(x, y)| x == y)
                .count();
            println!(
                "oracle {a} vs oracle {b}: logits rel {rel:.3e}, top-1 (strict) {same_teacher}/{n}"
            );
        }
    }
    Ok(())
}

fn print_table(rows: &[(String, String, Agreement)], n_teacher: usize, prompt_len: usize) {
    println!();
    println!("| engine | oracle | logits rel. error (last {}) | image features rel. error | top-1, teacher-forced (ties counted) | top-1 strict | top-1, all {prompt_len} positions |", n_teacher + 1);
    println!("|---|---|---|---|---|---|---|");
    for (engine, variant, a) in rows {
        println!(
            "| {engine} | {variant} | {:.3e} | {:.3e} | {}/{n_teacher} ({:.2}%) | {}/{n_teacher} | {}/{prompt_len} |",
            a.rel_logits,
            a.rel_features,
            a.top1,
            100.0 * a.top1 as f64 / n_teacher as f64,
            a.top1_strict,
            a.top1_all
        );
    }
}
