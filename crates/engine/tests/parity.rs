//! Stage-by-stage parity with the transformers oracle on the tiny fixtures (fixtures/make_fixtures.py):
//! every stage within 1e-4 relative in f32 on CPU, greedy tokens identical, both weight layouts, load errors.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use candle_core::{DType, Device, Tensor};
use deepread_engine::engine::{Engine, FinishReason, Flow, GenerateEvent, PageInput};
use deepread_engine::error::EngineError;
use deepread_engine::generate::{GenerateOptions, NoRepeatNgram};
use deepread_engine::model::Model;

#[path = "support/tiny_oracle.rs"]
mod tiny_oracle;
use tiny_oracle::{fixtures, ids, meta, page_image, page_input};

const TOL: f64 = 1e-4;

fn native() -> &'static Model {
    static M: OnceLock<Model> = OnceLock::new();
    M.get_or_init(|| {
        Model::load(&fixtures().join("tiny_native"), &Device::Cpu, DType::F32).unwrap()
    })
}

fn stages() -> &'static HashMap<String, Tensor> {
    static S: OnceLock<HashMap<String, Tensor>> = OnceLock::new();
    S.get_or_init(|| {
        candle_core::safetensors::load(
            fixtures().join("tiny_reference/stages.safetensors"),
            &Device::Cpu,
        )
        .unwrap()
    })
}

fn stage(name: &str) -> &'static Tensor {
    stages()
        .get(name)
        .unwrap_or_else(|| panic!("stage {name} missing from the fixtures"))
}

/// ‖ours − ref‖ / ‖ref‖ in f64.
fn rel_err(ours: &Tensor, reference: &Tensor) -> f64 {
    assert_eq!(ours.dims(), reference.dims(), "shape");
    let a = ours
        .to_dtype(DType::F64)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f64>()
        .unwrap();
    let b = reference
        .to_dtype(DType::F64)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f64>()
        .unwrap();
    let diff: f64 = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt();
    let norm: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    diff / norm
}

fn assert_close(name: &str, ours: &Tensor, reference: &Tensor) {
    let err = rel_err(ours, reference);
    eprintln!("{name}: relative error {err:e}");
    assert!(err < TOL, "{name}: relative error {err:e} > {TOL:e}");
}

#[test]
fn sam_tables_resized_like_pytorch() {
    let sam = &native().vision().sam;
    assert_close(
        "pos_embed 64→48 (bicubic AA)",
        &sam.pos_embed(48).unwrap().squeeze(0).unwrap(),
        stage("sam_pos_embed_48"),
    );
    let (rh, _) = sam.rel_pos_tables(1, 48).unwrap();
    assert_close(
        "global rel_pos_h 127→95 (linear)",
        rh,
        stage("sam_rel_pos_h_global_48"),
    );
}

#[test]
fn sam_features_match_oracle() {
    let m = native();
    let img = page_image(2, 1);
    let global = m.views_tensor(&img.global, 1, 1024).unwrap();
    assert_close(
        "SAM global view",
        &m.vision().sam.forward(&global).unwrap().squeeze(0).unwrap(),
        stage("sam_global"),
    );
    let tile0 = m.views_tensor(&img.tiles[..3 * 768 * 768], 1, 768).unwrap();
    assert_close(
        "SAM tile 0",
        &m.vision().sam.forward(&tile0).unwrap().squeeze(0).unwrap(),
        stage("sam_tile0"),
    );
}

#[test]
fn encoder_and_projector_match_oracle() {
    let m = native();
    let img = page_image(2, 1);
    let v = m.vision();
    let global = m.views_tensor(&img.global, 1, 1024).unwrap();
    let enc_global = v
        .encoder
        .forward(&v.sam.forward(&global).unwrap())
        .unwrap()
        .squeeze(0)
        .unwrap();
    assert_close(
        "encoder queries, global",
        &enc_global,
        stage("encoder_global"),
    );
    let tiles = m.views_tensor(&img.tiles, 2, 768).unwrap();
    let enc_tiles = v.encoder.forward(&v.sam.forward(&tiles).unwrap()).unwrap();
    assert_close("encoder queries, tiles", &enc_tiles, stage("encoder_tiles"));
    assert_close(
        "projector, global",
        &v.projector.forward(&enc_global).unwrap(),
        stage("projector_global"),
    );
    // Tiles first, then global, then the separator.
    assert_close(
        "image features",
        &m.image_features(&img).unwrap(),
        stage("image_features"),
    );
}

#[test]
fn merged_embeddings_and_prompt_logits_match_oracle() {
    let m = native();
    let page = page_input(0);
    let feats = m.image_features(page.image.as_ref().unwrap()).unwrap();
    let embeds = m.input_embeddings(&page.prompt_ids, Some(&feats)).unwrap();
    assert_close("merged input embeddings", &embeds, stage("input_embeds"));
    let logits = m.prompt_logits(&embeds).unwrap();
    let argmax: Vec<i64> = logits
        .argmax(1)
        .unwrap()
        .to_dtype(DType::I64)
        .unwrap()
        .to_vec1()
        .unwrap();
    let want: Vec<i64> = stage("logits_argmax").to_vec1().unwrap();
    assert_eq!(argmax, want, "prompt argmax at every position");
    let rows = stage("logits_rows_index").to_dtype(DType::U32).unwrap();
    assert_close(
        "prompt logits rows",
        &logits.index_select(&rows, 0).unwrap(),
        stage("logits_rows"),
    );
}

#[test]
fn official_layout_loads_and_agrees_with_native() {
    let official_dir = fixtures().join("tiny_official");
    assert!(
        official_dir.join("model.safetensors.index.json").is_file(),
        "official fixture is sharded"
    );
    let official = Model::load(&official_dir, &Device::Cpu, DType::F32).unwrap();
    assert_eq!(
        official.config().layout,
        deepread_engine::config::ConfigLayout::Official
    );
    assert_eq!(official.config().sam, native().config().sam);
    assert_eq!(official.config().text, native().config().text);
    let page = page_input(1);
    let feats = official
        .image_features(page.image.as_ref().unwrap())
        .unwrap();
    let ours = official
        .prompt_logits(
            &official
                .input_embeddings(&page.prompt_ids, Some(&feats))
                .unwrap(),
        )
        .unwrap();
    let feats_n = native()
        .image_features(page.image.as_ref().unwrap())
        .unwrap();
    let theirs = native()
        .prompt_logits(
            &native()
                .input_embeddings(&page.prompt_ids, Some(&feats_n))
                .unwrap(),
        )
        .unwrap();
    let err = rel_err(&ours, &theirs);
    assert!(err < 1e-6, "official vs native layout: {err:e}");
}

fn run(pages: &[usize], ngram: NoRepeatNgram) -> (Vec<Vec<u32>>, Vec<GenerateEvent>) {
    let engine = Engine::new(native().clone()).expect("engine");
    let inputs: Vec<PageInput> = pages.iter().map(|&p| page_input(p)).collect();
    let opts = GenerateOptions {
        max_new_tokens: meta()["max_new_tokens"].as_u64().unwrap() as usize,
        eos_token_id: None,
        no_repeat_ngram: ngram,
    };
    let mut events = Vec::new();
    let out = engine
        .generate(&inputs, &opts, |e| {
            events.push(e);
            Flow::Continue
        })
        .unwrap();
    (out.into_iter().map(|o| o.tokens).collect(), events)
}

#[test]
fn batched_greedy_with_full_history_ban_matches_oracle() {
    let n = meta()["hf_ngram"].as_u64().unwrap() as usize;
    let (tokens, events) = run(&[0, 1], NoRepeatNgram::FullHistory { n });
    for (page, got) in tokens.iter().enumerate() {
        assert_eq!(
            got,
            &ids(&meta()["pages"][page]["hf_ngram_tokens"]),
            "page {page}, HF no_repeat_ngram_size={n}"
        );
        assert_ne!(
            got,
            &ids(&meta()["pages"][page]["plain"]),
            "the ban must change page {page}"
        );
        // The callback saw the same tokens in order, then one Finished event.
        let streamed: Vec<u32> = events
            .iter()
            .filter_map(|e| match e {
                GenerateEvent::Token { page: p, token_id } if *p == page => Some(*token_id),
                _ => None,
            })
            .collect();
        assert_eq!(&streamed, got);
        let finished: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                GenerateEvent::Finished { page: p, stats } if *p == page => Some(stats.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(finished.len(), 1);
        assert_eq!(finished[0].generated_tokens, got.len());
        assert_eq!(
            finished[0].prompt_tokens,
            ids(&meta()["pages"][page]["prompt_ids"]).len()
        );
        let expected = if got.last() == Some(&1) {
            FinishReason::Eos
        } else {
            FinishReason::MaxNewTokens
        };
        assert_eq!(finished[0].finish, expected);
    }
}

#[test]
fn batched_greedy_with_windowed_ban_matches_oracle() {
    let n = meta()["vllm_ngram"].as_u64().unwrap() as usize;
    let window = meta()["vllm_window"].as_u64().unwrap() as usize;
    let whitelist = ids(&meta()["vllm_whitelist"]);
    let (tokens, _) = run(
        &[0, 1],
        NoRepeatNgram::Windowed {
            n,
            window,
            whitelist,
        },
    );
    for (page, got) in tokens.iter().enumerate() {
        assert_eq!(
            got,
            &ids(&meta()["pages"][page]["vllm_ngram_tokens"]),
            "page {page}, vLLM ban"
        );
    }
    // Without the whitelist page 0 comes out differently, as in the oracle.
    let (tokens, _) = run(
        &[0],
        NoRepeatNgram::Windowed {
            n,
            window,
            whitelist: vec![],
        },
    );
    assert_eq!(
        tokens[0],
        ids(&meta()["pages"][0]["vllm_no_whitelist_tokens"])
    );
}

#[test]
fn plain_greedy_matches_oracle_single_page() {
    let (tokens, _) = run(&[1], NoRepeatNgram::Off);
    assert_eq!(tokens[0], ids(&meta()["pages"][1]["plain"]));
}

// ---- load errors: a corrupted copy of the native fixture in a temp dir ----

fn corrupted_copy(edit: impl FnOnce(&mut HashMap<String, Tensor>)) -> tempfile::TempDir {
    let src = fixtures().join("tiny_native");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(src.join("config.json"), dir.path().join("config.json")).unwrap();
    let mut tensors =
        candle_core::safetensors::load(src.join("model.safetensors"), &Device::Cpu).unwrap();
    edit(&mut tensors);
    candle_core::safetensors::save(&tensors, dir.path().join("model.safetensors")).unwrap();
    dir
}

fn load_err(dir: &Path) -> EngineError {
    Model::load(dir, &Device::Cpu, DType::F32).expect_err("the corrupted checkpoint must not load")
}

#[test]
fn missing_tensor_is_named() {
    let name = "model.language_model.layers.2.mlp.experts.down_proj";
    let dir = corrupted_copy(|t| {
        t.remove(name).unwrap();
    });
    match load_err(dir.path()) {
        EngineError::MissingTensor { name: n, .. } => assert_eq!(n, name),
        other => panic!("expected MissingTensor, got {other}"),
    }
}

#[test]
fn misshapen_tensor_is_named() {
    let name = "model.vision_tower.sam_encoder.layers.1.attn.rel_pos_w";
    let dir = corrupted_copy(|t| {
        let bad = t[name].narrow(0, 0, 100).unwrap();
        t.insert(name.to_string(), bad);
    });
    let err = load_err(dir.path());
    assert!(err.to_string().contains(name), "{err}");
    match err {
        EngineError::TensorShape {
            expected, found, ..
        } => {
            assert_eq!(expected, vec![127, 16]);
            assert_eq!(found, vec![100, 16]);
        }
        other => panic!("expected TensorShape, got {other}"),
    }
}

#[test]
fn extra_tensor_is_named() {
    let dir = corrupted_copy(|t| {
        t.insert(
            "model.image_newline".to_string(),
            Tensor::zeros(64, DType::F32, &Device::Cpu).unwrap(),
        );
    });
    match load_err(dir.path()) {
        EngineError::UnexpectedTensors { first, count, .. } => {
            assert_eq!((first.as_str(), count), ("model.image_newline", 1));
        }
        other => panic!("expected UnexpectedTensors, got {other}"),
    }
}

#[test]
fn bf16_checkpoint_is_converted_on_load() {
    // Stored bf16, loaded as f32: the dtype comes from the file, not from an assumption.
    let dir = corrupted_copy(|t| {
        for v in t.values_mut() {
            *v = v.to_dtype(DType::BF16).unwrap();
        }
    });
    let m = Model::load(dir.path(), &Device::Cpu, DType::F32).unwrap();
    let page = page_input(1);
    let embeds = m.input_embeddings(&page.prompt_ids, None).err();
    assert!(
        embeds.is_some(),
        "image placeholders without image features must be refused"
    );
    let feats = m.image_features(page.image.as_ref().unwrap()).unwrap();
    let ours = m
        .prompt_logits(&m.input_embeddings(&page.prompt_ids, Some(&feats)).unwrap())
        .unwrap();
    let feats_n = native()
        .image_features(page.image.as_ref().unwrap())
        .unwrap();
    let full = native()
        .prompt_logits(
            &native()
                .input_embeddings(&page.prompt_ids, Some(&feats_n))
                .unwrap(),
        )
        .unwrap();
    let err = rel_err(&ours, &full);
    assert!(err > 0.0 && err < 0.1, "bf16-rounded weights: {err:e}");
}

#[test]
fn bf16_on_cpu_stays_close_to_the_oracle() {
    // Same f32 checkpoint computed in bf16: loose agreement, as the GPU bf16 target (1e-2 relative on logits is
    // for the real model; the tiny random one is noisier, so this only guards against a broken bf16 path).
    let m = Model::load(&fixtures().join("tiny_native"), &Device::Cpu, DType::BF16).unwrap();
    let page = page_input(0);
    let feats = m.image_features(page.image.as_ref().unwrap()).unwrap();
    assert_eq!(feats.dtype(), DType::BF16);
    let embeds = m.input_embeddings(&page.prompt_ids, Some(&feats)).unwrap();
    let err = rel_err(&embeds, stage("input_embeds"));
    assert!(err < 5e-2, "bf16 merged embeddings: {err:e}");
    let logits = m.prompt_logits(&embeds).unwrap();
    let argmax: Vec<i64> = logits
        .argmax(1)
        .unwrap()
        .to_dtype(DType::I64)
        .unwrap()
        .to_vec1()
        .unwrap();
    let want: Vec<i64> = stage("logits_argmax").to_vec1().unwrap();
    let same = argmax.iter().zip(&want).filter(|(a, b)| a == b).count();
    assert!(
        same * 10 >= want.len() * 9,
        "bf16 top-1 agreement {same}/{}",
        want.len()
    );
}
