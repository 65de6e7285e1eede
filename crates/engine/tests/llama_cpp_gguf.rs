//! llama.cpp's GGUF pair of DeepSeek-OCR-2 (a `deepseek2-ocr` text file and its `mmproj` vision file), written
//! here from the tiny official-layout checkpoint the way llama.cpp's converter writes the real one (its names,
//! per-expert tensors stacked, the view separator as (1, H)). The model reads from it what it reads from the
//! checkpoint, bit for bit in f32; quantized matrices read as their values dequantized; files that contradict
//! the config, or OCR 1's vision file, are refused by name. The tokenizer built from the GGUF metadata encodes
//! and decodes real DeepSeek-OCR output as the tokenizer.json it came from does.

mod preprocess_support;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use deepread_engine::config::ModelConfig;
use deepread_engine::model::Model;
use deepread_engine::prompt::{PromptPreset, Tokenizer};

#[path = "support/tiny_oracle.rs"]
mod tiny_oracle;
use tiny_oracle::fixtures;
#[path = "support/teacher_forced.rs"]
mod teacher_forced;
use teacher_forced::teacher_forced;

/// How the pair's matrices are stored.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Storage {
    /// Everything in f32, each layer's expert gate and up stacks apart (as the community's files have them).
    F32,
    /// Matrices whose rows are whole Q8_0 blocks in Q8_0, gate and up stacks merged (newer converters).
    Q8_0,
    /// The Q8_0 file's values, dequantized, in f32: what the Q8_0 file must read as.
    Q8_0Dequantized,
}

/// The tiny checkpoint's tensors, by official name.
fn official_tensors() -> HashMap<String, Tensor> {
    let dir = fixtures().join("tiny_official");
    let mut tensors = HashMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "safetensors") {
            tensors.extend(candle_core::safetensors::load(&path, &Device::Cpu).unwrap());
        }
    }
    tensors
}

/// The name llama.cpp's converter gives an official tensor, and whether it goes in the vision file; None for
/// a routed expert's own matrix, which goes into its layer's stack.
fn converted_name(official: &str) -> Option<(String, bool)> {
    const TEXT: &[(&str, &str)] = &[
        ("lm_head.weight", "output.weight"),
        ("model.embed_tokens.weight", "token_embd.weight"),
        ("model.norm.weight", "output_norm.weight"),
        (".input_layernorm.", ".attn_norm."),
        (".post_attention_layernorm.", ".ffn_norm."),
        (".self_attn.q_proj.", ".attn_q."),
        (".self_attn.k_proj.", ".attn_k."),
        (".self_attn.v_proj.", ".attn_v."),
        (".self_attn.o_proj.", ".attn_output."),
        (".mlp.gate.", ".ffn_gate_inp."),
        (".mlp.shared_experts.gate_proj.", ".ffn_gate_shexp."),
        (".mlp.shared_experts.up_proj.", ".ffn_up_shexp."),
        (".mlp.shared_experts.down_proj.", ".ffn_down_shexp."),
        (".mlp.gate_proj.", ".ffn_gate."),
        (".mlp.up_proj.", ".ffn_up."),
        (".mlp.down_proj.", ".ffn_down."),
        ("model.layers.", "blk."),
    ];
    const VISION: &[(&str, &str)] = &[
        ("model.sam_model.patch_embed.proj.", "v.sam.patch_embd."),
        ("model.sam_model.pos_embed", "v.sam.pos_embd.weight"),
        (".norm1.", ".pre_ln."),
        (".norm2.", ".post_ln."),
        (".attn.proj.", ".attn.out."),
        (".attn.rel_pos_h", ".attn.pos_h.weight"),
        (".attn.rel_pos_w", ".attn.pos_w.weight"),
        ("model.sam_model.blocks.", "v.sam.blk."),
        ("model.sam_model.", "v.sam."),
        ("model.qwen2_model.model.model.norm.", "v.post_ln."),
        (".input_layernorm.", ".ln1."),
        (".post_attention_layernorm.", ".ln2."),
        (".self_attn.q_proj.", ".attn_q."),
        (".self_attn.k_proj.", ".attn_k."),
        (".self_attn.v_proj.", ".attn_v."),
        (".self_attn.o_proj.", ".attn_out."),
        (".mlp.gate_proj.", ".ffn_gate."),
        (".mlp.up_proj.", ".ffn_up."),
        (".mlp.down_proj.", ".ffn_down."),
        ("model.qwen2_model.model.model.layers.", "v.blk."),
        ("model.qwen2_model.query_", "v.resample_query_"),
        ("model.projector.layers.", "mm.model.fc."),
        ("model.view_seperator", "v.view_seperator"),
    ];
    if official.contains(".mlp.experts.") {
        return None;
    }
    let vision = [
        "model.sam_model.",
        "model.qwen2_model.",
        "model.projector.",
        "model.view_seperator",
    ]
    .iter()
    .any(|p| official.starts_with(p));
    let rules = if vision { VISION } else { TEXT };
    let name = rules.iter().fold(official.to_string(), |name, (from, to)| {
        name.replace(from, to)
    });
    Some((name, vision))
}

/// Each layer's routed experts as llama.cpp stacks them: `blk.L.ffn_{gate,up,down}_exps.weight` (E, rows,
/// cols), or gate and up as one `ffn_gate_up_exps` (E, 2·rows, cols) when `merged`.
fn expert_stacks(official: &HashMap<String, Tensor>, merged: bool) -> BTreeMap<String, Tensor> {
    let mut by_stack: BTreeMap<(usize, String), BTreeMap<usize, Tensor>> = BTreeMap::new();
    for (name, t) in official {
        let Some(rest) = name.strip_prefix("model.layers.") else {
            continue;
        };
        let parts: Vec<&str> = rest.split('.').collect();
        if let [layer, "mlp", "experts", expert, proj, "weight"] = parts.as_slice() {
            let which = proj.trim_end_matches("_proj").to_string();
            let (layer, expert) = (layer.parse().unwrap(), expert.parse().unwrap());
            by_stack
                .entry((layer, which))
                .or_default()
                .insert(expert, t.clone());
        }
    }
    let mut stacks: BTreeMap<String, Tensor> = by_stack
        .into_iter()
        .map(|((layer, which), experts)| {
            let experts: Vec<Tensor> = experts.into_values().collect();
            (
                format!("blk.{layer}.ffn_{which}_exps.weight"),
                Tensor::stack(&experts, 0).unwrap(),
            )
        })
        .collect();
    if merged {
        let layers: Vec<String> = stacks
            .keys()
            .filter_map(|k| k.strip_suffix(".ffn_gate_exps.weight").map(str::to_string))
            .collect();
        for layer in layers {
            let gate = stacks
                .remove(&format!("{layer}.ffn_gate_exps.weight"))
                .unwrap();
            let up = stacks
                .remove(&format!("{layer}.ffn_up_exps.weight"))
                .unwrap();
            let both = Tensor::cat(&[gate, up], 1).unwrap();
            stacks.insert(format!("{layer}.ffn_gate_up_exps.weight"), both);
        }
    }
    stacks
}

/// A tensor as `storage` keeps it: norms, vectors and rows that are not whole Q8_0 blocks stay f32.
fn stored(name: &str, t: &Tensor, storage: Storage) -> QTensor {
    let f32 = || QTensor::quantize(t, GgmlDType::F32).unwrap();
    let blocks =
        t.rank() >= 2 && t.dims().last().unwrap().is_multiple_of(32) && !name.contains("norm");
    match storage {
        Storage::F32 => f32(),
        _ if !blocks => f32(),
        Storage::Q8_0 => QTensor::quantize(t, GgmlDType::Q8_0).unwrap(),
        Storage::Q8_0Dequantized => {
            let q = QTensor::quantize(t, GgmlDType::Q8_0).unwrap();
            QTensor::quantize(&q.dequantize(&Device::Cpu).unwrap(), GgmlDType::F32).unwrap()
        }
    }
}

/// A GGUF file's metadata.
type Metadata = Vec<(String, Value)>;

/// The pair's metadata: each file's architecture and the sizes the engine checks, from the tiny config.
fn metadata(config: &ModelConfig) -> (Metadata, Metadata) {
    let n = |v: usize| Value::U32(v as u32);
    let text = vec![
        (
            "general.architecture".into(),
            Value::String("deepseek2-ocr".into()),
        ),
        (
            "deepseek2-ocr.block_count".into(),
            n(config.text.num_layers),
        ),
        (
            "deepseek2-ocr.embedding_length".into(),
            n(config.text.hidden_size),
        ),
        (
            "deepseek2-ocr.expert_count".into(),
            n(config.text.n_routed_experts),
        ),
        (
            "deepseek2-ocr.expert_used_count".into(),
            n(config.text.num_experts_per_tok),
        ),
    ];
    let vision = vec![
        ("general.architecture".into(), Value::String("clip".into())),
        (
            "clip.projector_type".into(),
            Value::String("deepseekocr2".into()),
        ),
        (
            "clip.vision.block_count".into(),
            n(config.encoder.num_layers),
        ),
        (
            "clip.vision.embedding_length".into(),
            n(config.encoder.hidden_size),
        ),
        (
            "clip.vision.sam.block_count".into(),
            n(config.sam.num_layers),
        ),
    ];
    (text, vision)
}

fn write_gguf(path: &Path, metadata: &Metadata, tensors: &[(String, QTensor)]) {
    let metadata: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensors: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, t)| (k.as_str(), t)).collect();
    let mut file = std::fs::File::create(path).unwrap();
    gguf_file::write(&mut file, &metadata, &tensors).unwrap();
}

/// A folder holding the tiny checkpoint as llama.cpp's pair, with its config.json (the tiny sizes are not
/// DeepSeek-OCR-2's); `edit` may change the metadata first.
fn write_pair(
    name: &str,
    storage: Storage,
    edit: impl FnOnce(&mut Metadata, &mut Metadata),
) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("deepread-llama-cpp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let checkpoint = fixtures().join("tiny_official");
    std::fs::copy(checkpoint.join("config.json"), dir.join("config.json")).unwrap();
    let config = ModelConfig::from_dir(&checkpoint).unwrap();

    let official = official_tensors();
    let (mut text, mut vision) = (Vec::new(), Vec::new());
    for (name, t) in &official {
        let Some((converted, in_vision)) = converted_name(name) else {
            continue;
        };
        // llama.cpp keeps the view separator as a (1, H) matrix.
        let t = if converted == "v.view_seperator" {
            t.unsqueeze(0).unwrap()
        } else {
            t.clone()
        };
        let q = stored(&converted, &t, storage);
        if in_vision {
            vision.push((converted, q))
        } else {
            text.push((converted, q))
        }
    }
    for (stack, t) in expert_stacks(&official, storage != Storage::F32) {
        text.push((stack.clone(), stored(&stack, &t, storage)));
    }
    let (mut text_meta, mut vision_meta) = metadata(&config);
    edit(&mut text_meta, &mut vision_meta);
    write_gguf(&dir.join("DeepSeek-OCR-2-tiny.gguf"), &text_meta, &text);
    write_gguf(
        &dir.join("mmproj-DeepSeek-OCR-2-tiny.gguf"),
        &vision_meta,
        &vision,
    );
    dir
}

fn logits(dir: &Path) -> Vec<Vec<f32>> {
    let model = Model::load(dir, &Device::Cpu, DType::F32).unwrap();
    teacher_forced(&model).to_vec2::<f32>().unwrap()
}

#[test]
fn an_f32_pair_reads_as_its_checkpoint() {
    let dir = write_pair("f32", Storage::F32, |_, _| {});
    let want = logits(&fixtures().join("tiny_official"));
    assert!(!want.is_empty());
    assert!(
        logits(&dir) == want,
        "the pair's logits differ from the checkpoint's"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_quantized_pair_reads_as_its_values_dequantized() {
    let q8 = write_pair("q8", Storage::Q8_0, |_, _| {});
    let dequantized = write_pair("q8-values", Storage::Q8_0Dequantized, |_, _| {});
    let got = logits(&q8);
    assert!(
        got == logits(&dequantized),
        "Q8_0 matrices read otherwise than their values"
    );
    assert!(
        got != logits(&fixtures().join("tiny_official")),
        "the Q8_0 pair reads exactly as f32: nothing was quantized"
    );
    for dir in [q8, dequantized] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn files_that_contradict_the_config_are_ocr1_or_alone_are_refused_by_name() {
    let more_layers = write_pair("layers", Storage::F32, |text, _| {
        text.retain(|(k, _)| k != "deepseek2-ocr.block_count");
        text.push(("deepseek2-ocr.block_count".into(), Value::U32(99)));
    });
    let error = Model::load(&more_layers, &Device::Cpu, DType::F32)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("block_count") && error.contains("99"),
        "{error}"
    );

    let ocr1 = write_pair("ocr1", Storage::F32, |_, vision| {
        vision.retain(|(k, _)| k != "clip.projector_type");
        vision.push((
            "clip.projector_type".into(),
            Value::String("deepseekocr".into()),
        ));
    });
    let error = Model::load(&ocr1, &Device::Cpu, DType::F32)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("`deepseekocr`") && error.contains("mmproj"),
        "{error}"
    );

    let text_alone = write_pair("text-alone", Storage::F32, |_, _| {});
    std::fs::remove_file(text_alone.join("mmproj-DeepSeek-OCR-2-tiny.gguf")).unwrap();
    let error = Model::load(&text_alone, &Device::Cpu, DType::F32)
        .unwrap_err()
        .to_string();
    assert!(error.contains("no `mmproj` vision file"), "{error}");
    for dir in [more_layers, ocr1, text_alone] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// llama.cpp's token types: normal, control (special added tokens), user-defined (other added tokens),
/// unused (the padding up to the model's vocabulary).
const NORMAL: i32 = 1;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;
const UNUSED: i32 = 5;

/// `tokenizer.ggml.*` as llama.cpp's converter writes them from a tokenizer.json, padded to `vocab_size`.
fn tokenizer_metadata(tokenizer_json: &Path, vocab_size: usize) -> Metadata {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tokenizer_json).unwrap()).unwrap();
    let mut tokens = vec![None; vocab_size];
    for (token, id) in json["model"]["vocab"].as_object().unwrap() {
        tokens[id.as_u64().unwrap() as usize] = Some((token.clone(), NORMAL));
    }
    for added in json["added_tokens"].as_array().unwrap() {
        let kind = if added["special"].as_bool().unwrap() {
            CONTROL
        } else {
            USER_DEFINED
        };
        let content = added["content"].as_str().unwrap().to_string();
        tokens[added["id"].as_u64().unwrap() as usize] = Some((content, kind));
    }
    let (names, kinds): (Vec<Value>, Vec<Value>) = tokens
        .into_iter()
        .enumerate()
        .map(|(id, t)| {
            let (name, kind) = t.unwrap_or((format!("[PAD{id}]"), UNUSED));
            (Value::String(name), Value::I32(kind))
        })
        .unzip();
    let merges = json["model"]["merges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| Value::String(m.as_str().unwrap().to_string()))
        .collect();
    vec![
        ("tokenizer.ggml.model".into(), Value::String("gpt2".into())),
        (
            "tokenizer.ggml.pre".into(),
            Value::String("deepseek-v3".into()),
        ),
        ("tokenizer.ggml.tokens".into(), Value::Array(names)),
        ("tokenizer.ggml.token_type".into(), Value::Array(kinds)),
        ("tokenizer.ggml.merges".into(), Value::Array(merges)),
    ]
}

/// Every real DeepSeek-OCR output in the fixtures with its page (`grounding/with_source`).
fn real_outputs() -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![preprocess_support::fixtures_dir().join("grounding/with_source")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "md" || x == "txt") {
                found.push(std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    found
}

#[test]
fn the_gguf_tokenizer_reads_real_output_as_tokenizer_json_does() {
    let source = preprocess_support::fixtures_dir().join("tokenizer/tokenizer.json");
    let dir = std::env::temp_dir().join(format!("deepread-llama-cpp-vocab-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut text_meta = vec![(
        "general.architecture".to_string(),
        Value::String("deepseek2-ocr".into()),
    )];
    text_meta.extend(tokenizer_metadata(&source, 129_280));
    let vision_meta = vec![
        (
            "general.architecture".to_string(),
            Value::String("clip".into()),
        ),
        (
            "clip.projector_type".to_string(),
            Value::String("deepseekocr2".into()),
        ),
    ];
    write_gguf(&dir.join("text.gguf"), &text_meta, &[]);
    write_gguf(&dir.join("mmproj.gguf"), &vision_meta, &[]);

    let from_gguf = Tokenizer::from_model_dir(&dir).unwrap();
    let from_json = Tokenizer::from_file(&source).unwrap();
    assert_eq!(from_gguf.special(), from_json.special());
    let mut texts = real_outputs();
    assert!(
        texts.len() >= 20,
        "the fixtures' real outputs: {}",
        texts.len()
    );
    texts.extend([
        PromptPreset::Layout.text().to_string(),
        PromptPreset::Plain.text().to_string(),
    ]);
    for text in &texts {
        let ids = from_json.encode(text).unwrap();
        let start: String = text.chars().take(60).collect();
        assert_eq!(from_gguf.encode(text).unwrap(), ids, "encoding {start:?}…");
        assert_eq!(
            from_gguf.decode(&ids).unwrap(),
            from_json.decode(&ids).unwrap()
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}
