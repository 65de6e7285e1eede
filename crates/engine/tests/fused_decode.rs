//! The fused decode kernels against the transformers oracle's recorded greedy tokens on the tiny fixture model,
//! on the GPU in f32, against the reference path on the same device, and against themselves at other batch
//! sizes. Needs `--features cuda` and a GPU (the device machine); without the feature this file is empty.
#![cfg(feature = "cuda")]

use candle_core::DType;
use deepread_engine::engine::{DecodePath, Engine, Flow, PageInput};
use deepread_engine::generate::{GenerateOptions, NoRepeatNgram};
use deepread_engine::model::Model;

#[path = "support/tiny_oracle.rs"]
mod tiny_oracle;
use tiny_oracle::{fixtures, ids, meta, page_input};
#[path = "support/many_pages.rs"]
mod many_pages;

fn engine(path: DecodePath) -> Engine {
    engine_in(path, DType::F32)
}

fn engine_in(path: DecodePath, dtype: DType) -> Engine {
    let device = deepread_engine::engine_gpu(0).expect("a CUDA device");
    let model = Model::load(&fixtures().join("tiny_native"), &device, dtype).unwrap();
    let engine = Engine::new(model).unwrap().with_decode_path(path).unwrap();
    assert_eq!(
        engine.decode_path(),
        path,
        "the tiny model must take the path asked for"
    );
    engine
}

fn generate(engine: &Engine, pages: &[usize], ngram: NoRepeatNgram) -> Vec<Vec<u32>> {
    let inputs: Vec<PageInput> = pages.iter().map(|&p| page_input(p)).collect();
    let opts = GenerateOptions {
        max_new_tokens: meta()["max_new_tokens"].as_u64().unwrap() as usize,
        eos_token_id: None,
        no_repeat_ngram: ngram,
    };
    generate_inputs(engine, &inputs, &opts)
}

/// The pages decoded together, one row each in every step.
fn generate_inputs(engine: &Engine, inputs: &[PageInput], opts: &GenerateOptions) -> Vec<Vec<u32>> {
    engine
        .generate(inputs, opts, |_| Flow::Continue)
        .unwrap()
        .into_iter()
        .map(|o| o.tokens)
        .collect()
}

fn windowed() -> NoRepeatNgram {
    NoRepeatNgram::Windowed {
        n: meta()["vllm_ngram"].as_u64().unwrap() as usize,
        window: meta()["vllm_window"].as_u64().unwrap() as usize,
        whitelist: ids(&meta()["vllm_whitelist"]),
    }
}

#[test]
fn fused_path_reproduces_the_oracle_tokens() {
    let fused = engine(DecodePath::Fused);
    let n = meta()["hf_ngram"].as_u64().unwrap() as usize;
    let cases = [
        (NoRepeatNgram::FullHistory { n }, "hf_ngram_tokens"),
        (windowed(), "vllm_ngram_tokens"),
        (NoRepeatNgram::Off, "plain"),
    ];
    for (ngram, key) in cases {
        // Two pages in one batch: rows of different lengths share every step.
        let got = generate(&fused, &[0, 1], ngram);
        for (page, tokens) in got.iter().enumerate() {
            assert_eq!(
                tokens,
                &ids(&meta()["pages"][page][key]),
                "page {page}, {key}"
            );
        }
    }
}

#[test]
fn fused_and_reference_paths_agree_on_the_gpu() {
    let fused = generate(&engine(DecodePath::Fused), &[0, 1], windowed());
    let reference = generate(&engine(DecodePath::Reference), &[0, 1], windowed());
    assert_eq!(fused, reference);
}

/// On the batch-invariant path a page's tokens do not depend on the rows that decode beside it. 96 pages read
/// together (96 rows a step: past every batch size at which a kernel of the step changes its launch, up to the
/// experts read by expert rather than by slot) get, token for token, what each gets read alone (one row a
/// step). In f32 and in bf16, whose coarse rounding turns any change in the order of a sum into a different
/// token somewhere.
#[test]
fn a_page_gets_the_same_tokens_whatever_rows_decode_beside_it() {
    for dtype in [DType::F32, DType::BF16] {
        let engine = engine_in(DecodePath::FusedBatchInvariant, dtype);
        let inputs = many_pages::pages(&engine, 96);
        let opts = GenerateOptions {
            max_new_tokens: 40,
            eos_token_id: None,
            no_repeat_ngram: NoRepeatNgram::Off,
        };
        let together = generate_inputs(&engine, &inputs, &opts);
        let mut differ = Vec::new();
        for (page, input) in inputs.iter().enumerate() {
            let alone = generate_inputs(&engine, std::slice::from_ref(input), &opts).remove(0);
            assert_eq!(alone.len(), opts.max_new_tokens);
            if together[page] != alone {
                differ.push(page);
            }
        }
        assert!(
            differ.is_empty(),
            "{dtype:?}: pages {differ:?} of 96 differ"
        );
    }
}
