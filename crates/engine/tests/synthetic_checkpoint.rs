//! Random checkpoints written by `synthetic`: the folder loads through the same code as a download, holds exactly
//! the tensors that checkpoints made by others hold for the same config, and the tiny model with the real
//! vocabulary reads a real page whose generated ids the real tokenizer turns into text.

mod preprocess_support;

use std::collections::BTreeMap;
use std::path::Path;

use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device};
use deepread_engine::config::ModelConfig;
use deepread_engine::generate::{GenerateOptions, NoRepeatNgram};
use deepread_engine::model::Model;
use deepread_engine::prompt::PromptPreset;
use deepread_engine::synthetic::{
    write_random_checkpoint, write_random_weights, SynthesisError, SynthesisOptions,
    TINY_FULL_VOCAB_CONFIG_JSON,
};
use deepread_engine::weights::WeightLayout;
use deepread_engine::{Flow, Ocr, TextEvent};
use preprocess_support::{fixtures_dir, load_rgb};
use serde_json::Value;

const BF16_SEED_1: SynthesisOptions = SynthesisOptions {
    dtype: DType::BF16,
    seed: 1,
};

fn engine_fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Name → shape of every tensor in the safetensors files given.
fn stored_shapes(files: &[std::path::PathBuf]) -> BTreeMap<String, Vec<usize>> {
    // SAFETY: test files nobody modifies while they are mapped.
    let st = unsafe { MmapedSafetensors::multi(files) }.unwrap();
    st.tensors()
        .into_iter()
        .map(|(name, view)| (name, view.shape().to_vec()))
        .collect()
}

fn safetensors_in(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    files.sort();
    files
}

/// A checkpoint folder of `fixture`'s config with random weights, beside the fixture's own checkpoint.
fn synthesize_like(fixture: &str, out: &Path) -> Model {
    let source = engine_fixture(fixture);
    std::fs::create_dir_all(out).unwrap();
    std::fs::copy(source.join("config.json"), out.join("config.json")).unwrap();
    let config = ModelConfig::from_dir(&source).unwrap();
    write_random_weights(&config, &out.join("model.safetensors"), BF16_SEED_1).unwrap();
    Model::load(out, &Device::Cpu, DType::F32).unwrap()
}

#[test]
fn a_native_config_gets_the_tensors_transformers_wrote_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = synthesize_like("tiny_native", dir.path());
    assert_eq!(
        Model::weight_layout(dir.path()).unwrap(),
        WeightLayout::Native { prefixed: true }
    );
    // tiny_native/model.safetensors was saved by transformers' DeepseekOcr2ForConditionalGeneration.
    let theirs = stored_shapes(&safetensors_in(&engine_fixture("tiny_native")));
    let ours = stored_shapes(&safetensors_in(dir.path()));
    assert_eq!(ours, theirs);
    assert_eq!(model.config().text.vocab_size, 512);
}

#[test]
fn an_official_config_gets_deepseeks_names_one_tensor_per_expert() {
    let dir = tempfile::tempdir().unwrap();
    synthesize_like("tiny_official", dir.path());
    assert_eq!(
        Model::weight_layout(dir.path()).unwrap(),
        WeightLayout::Official
    );
    // tiny_official holds the same random model saved under the official checkpoint's names, in two shards.
    let theirs = stored_shapes(&safetensors_in(&engine_fixture("tiny_official")));
    let ours = stored_shapes(&safetensors_in(dir.path()));
    assert_eq!(ours, theirs);
    assert!(ours.contains_key("model.layers.1.mlp.experts.7.up_proj.weight"));
}

#[test]
fn the_same_seed_writes_the_same_bytes_and_another_seed_others() {
    let config = ModelConfig::from_dir(&engine_fixture("tiny_native")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, seed: u64| {
        let path = dir.path().join(name);
        let options = SynthesisOptions {
            dtype: DType::F32,
            seed,
        };
        let written = write_random_weights(&config, &path, options).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(written.file_bytes, bytes.len() as u64);
        bytes
    };
    let first = write("a.safetensors", 5);
    assert_eq!(first, write("b.safetensors", 5));
    assert_ne!(first, write("c.safetensors", 6));
    assert!(
        !dir.path().join("a.safetensors.partial").exists(),
        "the partial file is renamed into place"
    );
}

#[test]
fn a_tokenizer_that_does_not_fit_the_config_is_refused() {
    let tokenizer = fixtures_dir().join("tokenizer");
    // The real vocabulary cut short just after <image>: the OCR tags above it would have no embedding.
    let mut short: Value = serde_json::from_str(TINY_FULL_VOCAB_CONFIG_JSON).unwrap();
    short["text_config"]["vocab_size"] = 128_816.into();
    let tiny_native = std::fs::read_to_string(engine_fixture("tiny_native/config.json")).unwrap();
    for (config, words) in [
        (
            short.to_string(),
            "outside the config's vocabulary of 128816",
        ),
        (tiny_native, "its <image> is id 128815, the config's is 500"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let error =
            write_random_checkpoint(&config, &tokenizer, out.path(), BF16_SEED_1).unwrap_err();
        assert!(
            matches!(error, SynthesisError::TokenizerMismatch { .. }),
            "{error}"
        );
        assert!(error.to_string().contains(words), "{error}");
        assert!(
            !out.path().join("model.safetensors").exists(),
            "nothing is written for a tokenizer that does not fit"
        );
    }
}

#[test]
fn the_tiny_config_has_the_real_vocabulary_and_special_ids() {
    let tiny: Value = serde_json::from_str(TINY_FULL_VOCAB_CONFIG_JSON).unwrap();
    let config = ModelConfig::from_json(&tiny).unwrap();
    // The HuggingFace repository's config.json and tokenizer files, as copied into the shared fixtures.
    let tokenizer_dir = fixtures_dir().join("tokenizer");
    let real = json(&tokenizer_dir.join("config.deepseek-ocr-2.json"));
    assert_eq!(
        config.text.vocab_size as u64,
        real["vocab_size"].as_u64().unwrap()
    );
    assert_eq!(
        config.text.bos_token_id as u64,
        real["bos_token_id"].as_u64().unwrap()
    );
    assert_eq!(
        config.text.eos_token_id as u64,
        real["eos_token_id"].as_u64().unwrap()
    );
    let tokenizer = deepread_engine::prompt::Tokenizer::from_model_dir(&tokenizer_dir).unwrap();
    assert_eq!(
        Some(config.image_token_id),
        tokenizer.token_to_id("<image>")
    );
    let pad = json(&tokenizer_dir.join("tokenizer_config.json"))["pad_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        tiny["text_config"]["pad_token_id"].as_u64(),
        tokenizer.token_to_id(&pad).map(u64::from)
    );
    // The real vision geometry: 1024 px global views of 16 px patches.
    assert_eq!((config.sam.image_size, config.sam.patch_size), (1024, 16));
}

#[test]
fn the_tiny_checkpoint_loads_like_a_download_and_its_ids_decode_to_text() {
    let dir = tempfile::tempdir().unwrap();
    let tokenizer_dir = fixtures_dir().join("tokenizer");
    let written = write_random_checkpoint(
        TINY_FULL_VOCAB_CONFIG_JSON,
        &tokenizer_dir,
        dir.path(),
        BF16_SEED_1,
    )
    .unwrap();
    assert!(
        written.file_bytes < 40_000_000,
        "{} bytes",
        written.file_bytes
    );

    let ocr = Ocr::load(dir.path(), &Device::Cpu, DType::F32).unwrap();
    let vocab = ocr.engine().model().config().text.vocab_size;
    assert_eq!(vocab, 129_280);
    // Values follow the random-weights rule: the LM head's (V, 64) rows have standard deviation 1/√64.
    // SAFETY: a test file nobody modifies while it is mapped.
    let st = unsafe { MmapedSafetensors::new(dir.path().join("model.safetensors")) }.unwrap();
    let head = st.load("lm_head.weight", &Device::Cpu).unwrap();
    let values: Vec<f32> = head
        .to_dtype(DType::F32)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap();
    let std =
        (values.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / values.len() as f64).sqrt();
    assert!((std / 0.125 - 1.0).abs() < 0.01, "lm_head std {std}");

    let page =
        load_rgb(&fixtures_dir().join("grounding/with_source/halllo_taxi_receipt/input.jpg"));
    let input = ocr.prepare(&page, PromptPreset::Layout.text()).unwrap();
    // fixtures/tokenizer README: BOS, the <image> run, then the layout prompt's own ids.
    assert_eq!(input.prompt_ids[0], 0);
    let tail = &input.prompt_ids[input.prompt_ids.len() - 9..];
    assert_eq!(tail, [201, 128820, 21842, 270, 4940, 304, 2121, 7919, 16]);

    let options = GenerateOptions {
        max_new_tokens: 24,
        eos_token_id: None,
        no_repeat_ngram: NoRepeatNgram::official_image(),
    };
    let mut streamed = String::new();
    let mut streamed_tokens = 0;
    let outputs = ocr
        .read(std::slice::from_ref(&input), &options, |event| {
            if let TextEvent::Text { text, tokens, .. } = event {
                streamed.push_str(&text);
                streamed_tokens += tokens;
            }
            Flow::Continue
        })
        .unwrap();
    let tokens = &outputs[0].tokens;
    assert!(!tokens.is_empty());
    assert!(tokens.iter().all(|&t| (t as usize) < vocab));
    assert_eq!(streamed_tokens, tokens.len(), "every id is counted once");
    let decoded = ocr.tokenizer().decode(tokens).unwrap();
    assert!(!decoded.is_empty());
    assert_eq!(streamed, decoded, "the stream is the decode of all ids");
}
