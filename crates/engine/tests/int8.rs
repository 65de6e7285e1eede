//! int8 weights on the tiny fixture model (f32 activations): the logits stay within what 8-bit rounding can move
//! them, greedy decoding on them agrees with their own teacher-forced logits, the GGUF cache gives back exactly
//! what was quantized (rebuilding itself when cut short or made from other weights), and on the GPU the fused
//! kernels that read the int8 rows give the tokens of the same weights dequantized.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use deepread_engine::engine::{DecodePath, Engine, Flow};
use deepread_engine::generate::{GenerateOptions, NoRepeatNgram};
use deepread_engine::model::Model;
use deepread_engine::quant::{Int8Weights, WeightFormat, INT8_CACHE};

#[path = "support/tiny_oracle.rs"]
mod tiny_oracle;
use tiny_oracle::{fixtures, page_input};
#[path = "support/teacher_forced.rs"]
mod teacher_forced;
use teacher_forced::teacher_forced;

fn dense() -> Model {
    Model::load(&fixtures().join("tiny_native"), &Device::Cpu, DType::F32).unwrap()
}

fn rows(t: &Tensor) -> Vec<Vec<f32>> {
    t.to_vec2::<f32>().unwrap()
}

fn argmax(row: &[f32]) -> usize {
    (0..row.len())
        .max_by(|&a, &b| row[a].total_cmp(&row[b]).then(b.cmp(&a)))
        .unwrap()
}

/// The gap between a row's two largest values.
fn margin(row: &[f32]) -> f32 {
    let top = argmax(row);
    let second = (0..row.len())
        .filter(|&i| i != top)
        .map(|i| row[i])
        .fold(f32::NEG_INFINITY, f32::max);
    row[top] - second
}

/// ‖a − b‖ / ‖b‖ over all logits, and the positions whose top-1 differ.
fn compare(got: &[Vec<f32>], want: &[Vec<f32>]) -> (f64, usize) {
    let (mut err2, mut ref2) = (0f64, 0f64);
    for (g, w) in got.iter().zip(want) {
        for (a, b) in g.iter().zip(w) {
            err2 += ((a - b) as f64).powi(2);
            ref2 += (*b as f64).powi(2);
        }
    }
    let flips = got
        .iter()
        .zip(want)
        .filter(|(g, w)| argmax(g) != argmax(w))
        .count();
    ((err2 / ref2).sqrt(), flips)
}

/// The int8 model on `device` against the f32 model on the CPU, with the bf16 model's own distance as the bar.
fn check_int8_against_bf16_rounding(device: &Device) {
    let f32_logits = rows(&teacher_forced(&dense()));
    let int8 = Model::load(&fixtures().join("tiny_native"), device, DType::F32)
        .and_then(|m| m.into_int8(None, "tiny"))
        .unwrap();
    assert!(int8.text().is_int8());
    let (int8_err, int8_flips) = compare(&rows(&teacher_forced(&int8)), &f32_logits);
    // The yardstick: the same model in bf16, whose weights and activations are rounded to 8 significant bits,
    // as Q8_0 rounds each weight to 1/127 of its block's largest (the activations stay f32 here). A wrong
    // block layout, a swapped expert or a lost scale moves the logits by far more than this.
    let bf16 = Model::load(&fixtures().join("tiny_native"), &Device::Cpu, DType::BF16).unwrap();
    let (bf16_err, bf16_flips) = compare(&rows(&teacher_forced(&bf16)), &f32_logits);
    eprintln!(
        "against f32 over {} positions: int8 {int8_err:.4} relative, {int8_flips} top-1 changed; \
         bf16 {bf16_err:.4}, {bf16_flips}",
        f32_logits.len()
    );
    assert!(
        int8_err > 0.0,
        "int8 logits equal the f32 ones: nothing was quantized"
    );
    assert!(
        int8_err <= 2.0 * bf16_err,
        "int8 logits off by {int8_err:.4}, bf16 by {bf16_err:.4}"
    );
    assert!(
        int8_flips <= 2 * bf16_flips.max(1),
        "int8 changed {int8_flips} top-1, bf16 {bf16_flips}"
    );
}

#[test]
fn int8_logits_stay_within_twice_what_bf16_rounding_moves_them() {
    check_int8_against_bf16_rounding(&Device::Cpu);
}

/// The same on the GPU: the prompt pass dequantizes each matrix on the device (`dequantize_int8`), the decode
/// steps read the int8 rows in the fused kernels.
#[cfg(feature = "cuda")]
#[test]
fn int8_on_the_gpu_stays_within_twice_what_bf16_rounding_moves_them() {
    check_int8_against_bf16_rounding(&deepread_engine::engine_gpu(0).expect("a CUDA device"));
}

/// The default decode kernels on int8 weights (rows dequantized on chip) give the tokens of the same kernels
/// on those weights dequantized beforehand: f32 on the GPU, one page alone and four together. The products are
/// the same floats; a lane sums 16 int8 weights where it sums 8 dense ones, so the sums differ in f32 rounding.
#[cfg(feature = "cuda")]
#[test]
fn fused_int8_decoding_gives_the_tokens_of_its_weights_dequantized() {
    let device = deepread_engine::engine_gpu(0).expect("a CUDA device");
    let int8 = Model::load(&fixtures().join("tiny_native"), &device, DType::F32)
        .and_then(|m| m.into_int8(None, "tiny"))
        .unwrap();
    let dequantized = int8.clone().into_dequantized().unwrap();
    let engines = [int8, dequantized].map(|m| {
        let engine = Engine::new(m).unwrap();
        assert_eq!(
            engine.decode_path(),
            DecodePath::FusedBatchInvariant,
            "int8 weights, like dense ones, decode on the batch-invariant fused kernels by default"
        );
        engine
    });
    let opts = GenerateOptions {
        max_new_tokens: 24,
        eos_token_id: None,
        no_repeat_ngram: NoRepeatNgram::Off,
    };
    for pages in [
        vec![page_input(0)],
        (0..4).map(|i| page_input(i % 2)).collect(),
    ] {
        let [int8, dequantized] = engines.each_ref().map(|engine| {
            let out = engine.generate(&pages, &opts, |_| Flow::Continue).unwrap();
            out.into_iter().map(|o| o.tokens).collect::<Vec<_>>()
        });
        assert_eq!(int8, dequantized, "{} page(s)", pages.len());
    }
}

#[test]
fn int8_greedy_decoding_agrees_with_its_own_teacher_forced_logits() {
    let engine = Engine::new(dense().into_int8(None, "tiny").unwrap()).unwrap();
    assert_eq!(engine.decode_path(), DecodePath::Reference);
    let page = page_input(0);
    let opts = GenerateOptions {
        max_new_tokens: 24,
        eos_token_id: None,
        no_repeat_ngram: NoRepeatNgram::Off,
    };
    let out = engine
        .generate(std::slice::from_ref(&page), &opts, |_| Flow::Continue)
        .unwrap();
    let generated = &out[0].tokens;
    assert_eq!(generated.len(), 24);
    let model = engine.model();
    let mut tokens = page.prompt_ids.clone();
    tokens.extend(&generated[..generated.len() - 1]);
    let feats = model.image_features(page.image.as_ref().unwrap()).unwrap();
    let logits = rows(
        &model
            .prompt_logits(&model.input_embeddings(&tokens, Some(&feats)).unwrap())
            .unwrap(),
    );
    let first = page.prompt_ids.len() - 1;
    for (i, &token) in generated.iter().enumerate() {
        let row = &logits[first + i];
        // The cached decode sums in another order than the whole-prompt pass: only a near-tie may differ.
        if margin(row) > 1e-3 {
            assert_eq!(token as usize, argmax(row), "generated token {i}");
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn the_int8_cache_gives_back_what_was_quantized_and_rebuilds_when_cut() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join("tiny_native"), dir.path());
    let cache = dir.path().join(INT8_CACHE);
    let load = || Model::load_as(dir.path(), &Device::Cpu, DType::F32, WeightFormat::Int8).unwrap();
    let first = teacher_forced(&load());
    let written = std::fs::metadata(&cache).expect("the first load writes the cache");
    let again = teacher_forced(&load());
    assert_eq!(
        rows(&first),
        rows(&again),
        "the cache must give back the same weights"
    );
    assert_eq!(
        std::fs::metadata(&cache).unwrap().modified().unwrap(),
        written.modified().unwrap(),
        "a whole cache of the same checkpoint is read, not rewritten"
    );

    // A cache cut short (a killed write, a full disk) is quantized again and rewritten whole.
    let whole = std::fs::read(&cache).unwrap();
    std::fs::write(&cache, &whole[..whole.len() / 2]).unwrap();
    let weight = Tensor::randn(0f32, 1.0, (8, 64), &Device::Cpu).unwrap();
    let mut int8 = Int8Weights::open(Some(&cache), "another checkpoint", &Device::Cpu);
    int8.matrix("lm.0.attn.qkv", &weight).unwrap();
    assert_eq!(int8.quantized(), 1, "a cache of other weights is not read");
    let after_cut = teacher_forced(&load());
    assert_eq!(
        rows(&first),
        rows(&after_cut),
        "a cut cache must not change the weights"
    );
    assert_eq!(
        std::fs::read(&cache).unwrap(),
        whole,
        "the cut cache is rewritten whole"
    );
}
