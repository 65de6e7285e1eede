//! A model of a given config with random weights, written as a checkpoint folder that the engine then loads as it
//! loads the downloaded model: for tests that need the real tokenizer and vocabulary without the 6.8 GB weights,
//! and for machines that make a full-size checkpoint where they run (`deepread synthesize`).
//!
//! The folder holds `config.json` (the config's text as given), the tokenizer files copied from a folder the caller
//! names, and `model.safetensors` with exactly the tensors the config asks for ([`Model::tensor_specs`]) and no
//! other, named as the checkpoints that come with such a config name them: DeepSeek's names (one tensor per
//! expert) for its official config, transformers' native ones (as `save_pretrained` writes them, under `model.`
//! but for `lm_head.weight`) for a native config. Values are seeded (the same seed writes the same bytes) and
//! scaled by the rule of [`Weights::random`](crate::weights::Weights::random).
//!
//! Memory: values are drawn and written [`CHUNK`] at a time, so writing holds a few MB whatever the model's size.
//! Listing the tensors builds the model from placeholders, which allocates only its stacked projections (the
//! concatenated q/k/v and gate/up matrices): the full model's write peaks at 0.75 GB resident (measured), the
//! tiny one's at 75 MB.

pub mod page;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use candle_core::DType;
use serde_json::{json, Map, Value};

use crate::config::{ConfigLayout, ModelConfig};
use crate::error::EngineError;
use crate::model::Model;
use crate::prompt::{PromptError, Tokenizer};
use crate::weights::{official_name, random_init, RandomInit, TensorSpec};

/// The tiny test model of `config/tiny_full_vocab.json`: the real vocabulary, special ids and vision geometry,
/// tiny widths elsewhere (about 17 M parameters, nearly all of them the embedding table and the LM head).
pub const TINY_FULL_VOCAB_CONFIG_JSON: &str = include_str!("../config/tiny_full_vocab.json");

/// Values drawn, converted and written at a time.
const CHUNK: usize = 1 << 20;

/// `tokenizer.json` is required; the others are copied when the source folder has them
/// (`tokenizer_config.json` names BOS and EOS for the engine's tokenizer loader).
const TOKENIZER_FILES: [&str; 3] = [
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
];

const WEIGHTS_FILE: &str = "model.safetensors";

#[derive(Debug, thiserror::Error)]
pub enum SynthesisError {
    #[error("the config: {0}")]
    Config(#[source] EngineError),
    #[error("the model of the config could not be built: {0}")]
    Model(#[source] EngineError),
    #[error("no tokenizer.json in {0}")]
    NoTokenizer(PathBuf),
    #[error("the tokenizer in {dir}: {source}")]
    Tokenizer {
        dir: PathBuf,
        #[source]
        source: PromptError,
    },
    #[error("the tokenizer in {dir} does not fit the config: {reason}")]
    TokenizerMismatch { dir: PathBuf, reason: String },
    #[error("weights are written as f32, bf16 or f16, not {0:?}")]
    Dtype(DType),
    #[error("two tensors would be stored as `{0}`")]
    DuplicateName(String),
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// How the weights are drawn and stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthesisOptions {
    /// The stored dtype: f32, bf16 (as DeepSeek ships its weights) or f16.
    pub dtype: DType,
    pub seed: u64,
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenWeights {
    pub tensors: usize,
    pub parameters: u64,
    /// The size of `model.safetensors`, header included.
    pub file_bytes: u64,
}

/// One tensor as the file stores it, and how its values are drawn.
#[derive(Debug, Clone, PartialEq)]
struct StoredTensor {
    name: String,
    shape: Vec<usize>,
    init: RandomInit,
}

impl StoredTensor {
    fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

/// Writes a checkpoint folder at `out` (created if needed): `config_json` as `config.json`, the tokenizer files of
/// `tokenizer_dir`, and random weights for every tensor the config asks for. The tokenizer must agree with the
/// config on BOS, EOS and `<image>`, and all its ids must lie inside the config's vocabulary.
pub fn write_random_checkpoint(
    config_json: &str,
    tokenizer_dir: &Path,
    out: &Path,
    options: SynthesisOptions,
) -> Result<WrittenWeights, SynthesisError> {
    let value: Value = serde_json::from_str(config_json).map_err(|source| {
        SynthesisError::Config(EngineError::ConfigJson {
            path: PathBuf::from("config.json"),
            source,
        })
    })?;
    let config = ModelConfig::from_json(&value).map_err(SynthesisError::Config)?;
    check_tokenizer(tokenizer_dir, &config)?;
    create_dir(out)?;
    write_file(&out.join("config.json"), config_json.as_bytes())?;
    copy_tokenizer(tokenizer_dir, out)?;
    write_random_weights(&config, &out.join(WEIGHTS_FILE), options)
}

/// Writes `path` (a `.safetensors` file) with random weights for every tensor of `config`, named in the config's
/// layout. The file appears under its name only once complete.
pub fn write_random_weights(
    config: &ModelConfig,
    path: &Path,
    options: SynthesisOptions,
) -> Result<WrittenWeights, SynthesisError> {
    let type_name = safetensors_dtype(options.dtype)?;
    let specs = Model::tensor_specs(config).map_err(SynthesisError::Model)?;
    let tensors = stored_tensors(config.layout, specs);
    let header = header(&tensors, type_name, options)?;
    let partial = path.with_extension("safetensors.partial");
    let io = |source| SynthesisError::Io {
        path: partial.clone(),
        source,
    };
    let mut file = BufWriter::with_capacity(8 << 20, File::create(&partial).map_err(io)?);
    file.write_all(&(header.len() as u64).to_le_bytes())
        .map_err(io)?;
    file.write_all(&header).map_err(io)?;
    let mut values = Vec::with_capacity(CHUNK);
    let mut bytes = Vec::with_capacity(CHUNK * 4);
    for tensor in &tensors {
        let mut rng = NormalStream::new(options.seed, &tensor.name);
        let mut left = tensor.numel();
        while left > 0 {
            let n = left.min(CHUNK);
            values.clear();
            values.extend((0..n).map(|_| rng.next(tensor.init)));
            encode(&values, options.dtype, &mut bytes);
            file.write_all(&bytes).map_err(io)?;
            left -= n;
        }
    }
    let file = file.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    let file_bytes = file.metadata().map_err(io)?.len();
    drop(file);
    std::fs::rename(&partial, path).map_err(|source| SynthesisError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let parameters = tensors.iter().map(|t| t.numel() as u64).sum();
    tracing::info!(path = %path.display(), tensors = tensors.len(), parameters, file_bytes, "wrote random weights");
    Ok(WrittenWeights {
        tensors: tensors.len(),
        parameters,
        file_bytes,
    })
}

/// The tokenizer must produce the ids the config's model expects.
fn check_tokenizer(dir: &Path, config: &ModelConfig) -> Result<(), SynthesisError> {
    if !dir.join("tokenizer.json").is_file() {
        return Err(SynthesisError::NoTokenizer(dir.to_path_buf()));
    }
    let tokenizer = Tokenizer::from_model_dir(dir).map_err(|source| SynthesisError::Tokenizer {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mismatch = |reason: String| SynthesisError::TokenizerMismatch {
        dir: dir.to_path_buf(),
        reason,
    };
    let special = tokenizer.special();
    for (what, tokenizer_id, config_id) in [
        ("BOS", special.bos, config.text.bos_token_id),
        ("EOS", special.eos, config.text.eos_token_id),
        ("<image>", special.image, config.image_token_id),
    ] {
        if tokenizer_id != config_id {
            return Err(mismatch(format!(
                "its {what} is id {tokenizer_id}, the config's is {config_id}"
            )));
        }
    }
    let vocab = config.text.vocab_size;
    match tokenizer.max_id() {
        Some(max) if max as usize >= vocab => Err(mismatch(format!(
            "it has id {max}, outside the config's vocabulary of {vocab}"
        ))),
        _ => Ok(()),
    }
}

/// Copies the tokenizer's files as new, writable files (a source folder of read-only fixtures must not make the
/// checkpoint read-only: writing it again would fail).
fn copy_tokenizer(from: &Path, to: &Path) -> Result<(), SynthesisError> {
    for name in TOKENIZER_FILES {
        let source = from.join(name);
        if !source.is_file() {
            continue;
        }
        let bytes = std::fs::read(&source).map_err(|e| SynthesisError::Io {
            path: source.clone(),
            source: e,
        })?;
        let target = to.join(name);
        match std::fs::remove_file(&target) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(SynthesisError::Io {
                    path: target,
                    source: e,
                })
            }
            _ => {}
        }
        write_file(&target, &bytes)?;
    }
    Ok(())
}

/// The internal tensors as the checkpoint of this config layout stores them.
fn stored_tensors(layout: ConfigLayout, specs: Vec<TensorSpec>) -> Vec<StoredTensor> {
    specs
        .into_iter()
        .flat_map(|spec| {
            let init = random_init(&spec.name, &spec.shape);
            match layout {
                ConfigLayout::Native => vec![StoredTensor {
                    name: native_name(&spec.name),
                    shape: spec.shape,
                    init,
                }],
                ConfigLayout::Official => official_tensors(spec, init),
            }
        })
        .collect()
}

/// transformers' `save_pretrained` name of an internal tensor: the model's own under `model.`, the head apart.
fn native_name(internal: &str) -> String {
    if internal == "lm_head.weight" {
        internal.to_owned()
    } else {
        format!("model.{internal}")
    }
}

/// DeepSeek's checkpoint renames every tensor and stores each routed expert's projections apart: the stacked
/// `gate_up_proj` (E, 2·I, H) is E `gate_proj` and E `up_proj` of (I, H), `down_proj` (E, H, I) is E of (H, I).
/// Each part keeps the stacked tensor's scale, which the rule gives it anyway (1/√fan-in).
fn official_tensors(spec: TensorSpec, init: RandomInit) -> Vec<StoredTensor> {
    let split = [("gate_up_proj", true), ("down_proj", false)]
        .into_iter()
        .find_map(|(suffix, gate_up)| {
            let base = spec.name.strip_suffix(suffix)?;
            base.ends_with("mlp.experts.").then_some((base, gate_up))
        });
    let (Some((base, gate_up)), &[experts, rows, cols]) = (split, spec.shape.as_slice()) else {
        return vec![StoredTensor {
            name: official_name(&spec.name),
            shape: spec.shape,
            init,
        }];
    };
    let prefix = official_name(base);
    let parts: &[(&str, usize)] = if gate_up {
        &[("gate_proj", rows / 2), ("up_proj", rows / 2)]
    } else {
        &[("down_proj", rows)]
    };
    (0..experts)
        .flat_map(|e| {
            let prefix = &prefix;
            parts.iter().map(move |&(part, rows)| StoredTensor {
                name: format!("{prefix}{e}.{part}.weight"),
                shape: vec![rows, cols],
                init,
            })
        })
        .collect()
}

/// The safetensors header: every tensor's dtype, shape and byte range, in file order; padded with spaces to a
/// multiple of 8 bytes so the data stays aligned when mapped.
fn header(
    tensors: &[StoredTensor],
    type_name: &str,
    options: SynthesisOptions,
) -> Result<Vec<u8>, SynthesisError> {
    let element = options.dtype.size_in_bytes() as u64;
    let mut map = Map::new();
    map.insert(
        "__metadata__".into(),
        json!({"format": "pt", "deepread": format!("random weights, seed {}", options.seed)}),
    );
    let mut offset = 0u64;
    for t in tensors {
        let end = offset + t.numel() as u64 * element;
        let entry = json!({"dtype": type_name, "shape": t.shape, "data_offsets": [offset, end]});
        if map.insert(t.name.clone(), entry).is_some() {
            return Err(SynthesisError::DuplicateName(t.name.clone()));
        }
        offset = end;
    }
    let mut bytes = serde_json::to_vec(&Value::Object(map)).expect("a JSON map serialises");
    bytes.resize(bytes.len().next_multiple_of(8), b' ');
    Ok(bytes)
}

fn safetensors_dtype(dtype: DType) -> Result<&'static str, SynthesisError> {
    match dtype {
        DType::F32 => Ok("F32"),
        DType::BF16 => Ok("BF16"),
        DType::F16 => Ok("F16"),
        other => Err(SynthesisError::Dtype(other)),
    }
}

/// `values` in `dtype`, little-endian, into `out` (cleared first).
fn encode(values: &[f32], dtype: DType, out: &mut Vec<u8>) {
    out.clear();
    match dtype {
        DType::BF16 => out.extend(
            values
                .iter()
                .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes()),
        ),
        DType::F16 => out.extend(
            values
                .iter()
                .flat_map(|&v| half::f16::from_f32(v).to_le_bytes()),
        ),
        _ => out.extend(values.iter().flat_map(|&v| v.to_le_bytes())),
    }
}

/// Standard normal values from a generator of the tensor's own, seeded by the checkpoint's seed and the tensor's
/// stored name: a tensor's values do not depend on which other tensors the file holds or in what order.
/// SplitMix64 for the bits, Box–Muller for the normal pairs.
struct NormalStream {
    state: u64,
    spare: Option<f64>,
}

impl NormalStream {
    fn new(seed: u64, name: &str) -> Self {
        // FNV-1a of the name, mixed with the seed.
        let name_hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        });
        Self {
            state: seed ^ name_hash.rotate_left(17),
            spare: None,
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: 53 random bits, never 0 (Box–Muller takes its logarithm).
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    fn standard_normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let radius = (-2.0 * self.unit().ln()).sqrt();
        let (sin, cos) = (std::f64::consts::TAU * self.unit()).sin_cos();
        self.spare = Some(radius * sin);
        radius * cos
    }

    fn next(&mut self, init: RandomInit) -> f32 {
        (init.mean + init.std * self.standard_normal()) as f32
    }
}

fn create_dir(dir: &Path) -> Result<(), SynthesisError> {
    std::fs::create_dir_all(dir).map_err(|source| SynthesisError::Io {
        path: dir.to_path_buf(),
        source,
    })
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), SynthesisError> {
    std::fs::write(path, bytes).map_err(|source| SynthesisError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(values: &[f32]) -> (f64, f64) {
        let n = values.len() as f64;
        let mean = values.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = values
            .iter()
            .map(|&x| (x as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        (mean, var.sqrt())
    }

    #[test]
    fn normal_stream_has_the_scale_of_its_rule_and_depends_on_seed_and_name() {
        let init = RandomInit {
            mean: 1.0,
            std: 0.1,
        };
        let draw = |seed, name| {
            let mut rng = NormalStream::new(seed, name);
            (0..100_000).map(|_| rng.next(init)).collect::<Vec<f32>>()
        };
        let values = draw(7, "language_model.norm.weight");
        let (mean, std) = moments(&values);
        assert!((mean - 1.0).abs() < 0.002, "mean {mean}");
        assert!((std / 0.1 - 1.0).abs() < 0.02, "std {std}");
        assert_eq!(values, draw(7, "language_model.norm.weight"));
        assert_ne!(values, draw(8, "language_model.norm.weight"));
        assert_ne!(
            values,
            draw(7, "language_model.layers.0.input_layernorm.weight")
        );
    }

    #[test]
    fn official_experts_are_split_per_expert_under_deepseek_names() {
        let spec = TensorSpec {
            name: "language_model.layers.1.mlp.experts.gate_up_proj".into(),
            shape: vec![2, 6, 4],
        };
        let init = random_init(&spec.name, &spec.shape);
        let names: Vec<(String, Vec<usize>)> = official_tensors(spec, init)
            .into_iter()
            .map(|t| (t.name, t.shape))
            .collect();
        // The names of DeepSeek's model.safetensors.index.json for layer 1's routed experts.
        assert_eq!(
            names,
            [
                ("model.layers.1.mlp.experts.0.gate_proj.weight", [3, 4]),
                ("model.layers.1.mlp.experts.0.up_proj.weight", [3, 4]),
                ("model.layers.1.mlp.experts.1.gate_proj.weight", [3, 4]),
                ("model.layers.1.mlp.experts.1.up_proj.weight", [3, 4]),
            ]
            .map(|(n, s)| (n.to_string(), s.to_vec()))
        );
        let down = TensorSpec {
            name: "language_model.layers.1.mlp.experts.down_proj".into(),
            shape: vec![2, 4, 3],
        };
        let init = random_init(&down.name, &down.shape);
        let parts = official_tensors(down, init);
        assert_eq!(
            parts[1].name,
            "model.layers.1.mlp.experts.1.down_proj.weight"
        );
        assert_eq!(parts[1].shape, [4, 3]);
        assert!((parts[1].init.std - 1.0 / 3f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn bf16_and_f16_are_written_little_endian() {
        let mut out = Vec::new();
        encode(&[1.0, -2.0], DType::BF16, &mut out);
        assert_eq!(out, [0x80, 0x3f, 0x00, 0xc0]);
        encode(&[1.0], DType::F16, &mut out);
        assert_eq!(out, [0x00, 0x3c]);
        encode(&[1.0], DType::F32, &mut out);
        assert_eq!(out, [0x00, 0x00, 0x80, 0x3f]);
    }
}
