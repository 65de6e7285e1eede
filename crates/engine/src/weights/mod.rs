//! Checkpoint tensors: memory-mapped safetensors (one file or sharded), in either name layout, or the community's
//! GGUF pair of llama.cpp ([`llama_cpp`]), mapped onto one internal layout.
//!
//! The internal names are the transformers-native ones without the leading `model.` (`vision_tower.…`,
//! `multi_modal_projector.…`, `language_model.…`, `view_separator`, `lm_head.weight`), with the routed experts of a
//! layer stacked as `mlp.experts.gate_up_proj` (E, 2·I, H) and `mlp.experts.down_proj` (E, H, I). An official
//! checkpoint (`model.sam_model.…`, per-expert tensors) is renamed and stacked at load (spec §2).
//!
//! Every tensor keeps the dtype it was stored in until it is fetched, then it is converted to the requested one.
//! Each fetched name is recorded, so that [`Weights::finish`] can refuse tensors the config did not ask for.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device, Tensor};

use crate::config::ModelConfig;
use crate::error::{EngineError, Result};

pub mod llama_cpp;

use llama_cpp::LlamaCppPair;

/// Which tensor names the checkpoint uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightLayout {
    /// `model.sam_model.*`, `model.qwen2_model.model.model.*`, per-expert `experts.E.*` (DeepSeek's checkpoint).
    Official,
    /// transformers' `DeepseekOcr2ForConditionalGeneration` names; `prefix` is `"model."` or `""`.
    Native { prefixed: bool },
    /// llama.cpp's GGUF pair: `blk.N.*` in the text file, `v.*` and `mm.*` in the `mmproj` file.
    LlamaCpp,
}

/// The tensors of one model: a checkpoint directory's, or seeded random ones.
pub struct Weights {
    /// Shared with the views [`Weights::on_device`] makes, so that [`Weights::finish`] sees every use.
    source: Rc<Source>,
    device: Device,
    dtype: DType,
    used: Rc<RefCell<BTreeSet<String>>>,
}

enum Source {
    Checkpoint(Checkpoint),
    LlamaCpp(Box<LlamaCppPair>),
    /// Random values of whatever shape is asked for (see [`Weights::random`]).
    Random,
    /// Stand-ins that hold no memory, each request recorded (see [`Weights::placeholders`]).
    Placeholders(RefCell<Vec<TensorSpec>>),
}

/// A tensor a model asks for: its internal name and shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    pub name: String,
    pub shape: Vec<usize>,
}

struct Checkpoint {
    dir: PathBuf,
    st: MmapedSafetensors,
    /// Stored name → shape, for shape checks and the unused-tensor report.
    shapes: HashMap<String, Vec<usize>>,
    layout: WeightLayout,
}

impl Weights {
    /// Map the safetensors of `dir`: `model.safetensors.index.json` with its shards, else `model.safetensors`,
    /// else the only `*.safetensors` file present; where there are none, llama.cpp's GGUF pair.
    pub fn open(dir: &Path, device: &Device, dtype: DType) -> Result<Self> {
        let files = match weight_files(dir) {
            Err(EngineError::NoWeights { dir }) => {
                let pair = LlamaCppPair::find(&dir)?.ok_or(EngineError::NoWeights { dir })?;
                return Ok(Self::from_source(
                    Source::LlamaCpp(Box::new(pair)),
                    device,
                    dtype,
                ));
            }
            found => found?,
        };
        // SAFETY: the files are mapped read-only; the model directory must not be modified while the model is
        // loaded, as for every memory-mapped checkpoint loader (candle, safetensors, transformers).
        let st = unsafe { MmapedSafetensors::multi(&files) }.map_err(unreadable_weights)?;
        let shapes: HashMap<String, Vec<usize>> = st
            .tensors()
            .into_iter()
            .map(|(name, view)| (name, view.shape().to_vec()))
            .collect();
        let layout = if shapes.contains_key("model.sam_model.pos_embed") {
            WeightLayout::Official
        } else if shapes.contains_key("model.vision_tower.sam_encoder.pos_embed") {
            WeightLayout::Native { prefixed: true }
        } else if shapes.contains_key("vision_tower.sam_encoder.pos_embed") {
            WeightLayout::Native { prefixed: false }
        } else {
            return Err(EngineError::UnknownLayout {
                dir: dir.to_path_buf(),
            });
        };
        tracing::debug!(
            ?layout,
            tensors = shapes.len(),
            files = files.len(),
            "opened checkpoint"
        );
        let checkpoint = Checkpoint {
            dir: dir.to_path_buf(),
            st,
            shapes,
            layout,
        };
        Ok(Self::from_source(
            Source::Checkpoint(checkpoint),
            device,
            dtype,
        ))
    }

    /// Seeded random weights for a model of any config, drawn on `device` as each tensor is asked for, by
    /// full_size_parity.py's rule: norm weights 1 + 0.1·N, other vectors 0.1·N, matrices N/√fan-in (the last
    /// dim for the stacked experts and the position tables). For benchmarks: the speed of the real
    /// architecture without its 6.8 GB checkpoint. `seed` seeds a GPU's generator; candle's CPU generator takes
    /// no seed, so CPU values differ from run to run (speeds do not depend on them).
    pub fn random(device: &Device, dtype: DType, seed: u64) -> Result<Self> {
        if !device.is_cpu() {
            device.set_seed(seed)?;
        }
        Ok(Self::from_source(Source::Random, device, dtype))
    }

    /// Zero-valued stand-ins on the CPU that take no memory (one value broadcast to the shape asked for),
    /// recording every tensor asked for: building a model from them lists the tensors its config needs
    /// ([`Weights::requested`]) without holding its weights.
    pub fn placeholders(dtype: DType) -> Self {
        Self::from_source(
            Source::Placeholders(RefCell::new(Vec::new())),
            &Device::Cpu,
            dtype,
        )
    }

    /// The tensors asked for so far, in the order first asked, each once; empty unless
    /// [`Weights::placeholders`].
    pub fn requested(&self) -> Vec<TensorSpec> {
        match self.source.as_ref() {
            Source::Placeholders(specs) => specs.borrow().clone(),
            _ => Vec::new(),
        }
    }

    fn from_source(source: Source, device: &Device, dtype: DType) -> Self {
        Self {
            source: Rc::new(source),
            device: device.clone(),
            dtype,
            used: Rc::new(RefCell::new(BTreeSet::new())),
        }
    }

    /// The same tensors, placed on `device` (another stream of the same GPU, for the vision tower).
    pub fn on_device(&self, device: &Device) -> Self {
        Self {
            source: Rc::clone(&self.source),
            device: device.clone(),
            dtype: self.dtype,
            used: Rc::clone(&self.used),
        }
    }

    /// Refuses weights whose sizes are not `config`'s where the files say (llama.cpp's GGUF metadata); a
    /// safetensors checkpoint's shapes are checked as each tensor is read.
    pub fn check_config(&self, config: &ModelConfig) -> Result<()> {
        match self.source.as_ref() {
            Source::LlamaCpp(pair) => pair.check_config(config),
            _ => Ok(()),
        }
    }

    /// Whether the tensors come from llama.cpp's GGUF pair (whose folder has no config.json).
    pub fn is_llama_cpp(&self) -> bool {
        matches!(self.source.as_ref(), Source::LlamaCpp(_))
    }

    /// The checkpoint's name layout; random weights answer with the internal one.
    pub fn layout(&self) -> WeightLayout {
        match self.source.as_ref() {
            Source::Checkpoint(c) => c.layout,
            Source::LlamaCpp(_) => WeightLayout::LlamaCpp,
            Source::Random | Source::Placeholders(_) => WeightLayout::Native { prefixed: false },
        }
    }
    pub fn device(&self) -> &Device {
        &self.device
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The tensor with this internal name, checked against `shape`, in the model dtype on the model device.
    pub fn get(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        self.get_as(name, shape, self.dtype)
    }

    /// Like [`Weights::get`] but in f32 on the CPU: for tensors that are resampled at load in f32, as the
    /// reference does, before being cast.
    pub fn get_f32_cpu(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let c = match self.source.as_ref() {
            Source::Checkpoint(c) => c,
            Source::LlamaCpp(pair) => return pair.load(name, shape, &mut self.used.borrow_mut()),
            Source::Random => return random_tensor(name, shape, &Device::Cpu),
            Source::Placeholders(specs) => return placeholder(specs, name, shape, DType::F32),
        };
        self.load_stored(c, &c.stored_name(name), shape)?
            .to_dtype(DType::F32)
            .map_err(Into::into)
    }

    /// The tensor converted to `dtype` (e.g. f32 for the router, which the reference runs in f32).
    pub fn get_as(&self, name: &str, shape: &[usize], dtype: DType) -> Result<Tensor> {
        let c = match self.source.as_ref() {
            Source::Checkpoint(c) => c,
            Source::LlamaCpp(pair) => {
                let t = pair.load(name, shape, &mut self.used.borrow_mut())?;
                return Ok(t.to_dtype(dtype)?.to_device(&self.device)?);
            }
            Source::Random => return Ok(random_tensor(name, shape, &self.device)?.to_dtype(dtype)?),
            Source::Placeholders(specs) => return placeholder(specs, name, shape, dtype),
        };
        if let Some(stacked) = self.stacked_experts(c, name, shape)? {
            return Ok(stacked.to_dtype(dtype)?.to_device(&self.device)?);
        }
        let t = self.load_stored(c, &c.stored_name(name), shape)?;
        Ok(t.to_dtype(dtype)?.to_device(&self.device)?)
    }

    /// After the model took every tensor it needs: any tensor left over means the config and the checkpoint do
    /// not describe the same model.
    pub fn finish(&self) -> Result<()> {
        let stored: Vec<String> = match self.source.as_ref() {
            Source::Checkpoint(c) => c.shapes.keys().cloned().collect(),
            Source::LlamaCpp(pair) => pair.stored_names(),
            Source::Random | Source::Placeholders(_) => return Ok(()),
        };
        let used = self.used.borrow();
        let mut extra: Vec<String> = stored.into_iter().filter(|k| !used.contains(k)).collect();
        if extra.is_empty() {
            return Ok(());
        }
        extra.sort();
        Err(EngineError::UnexpectedTensors {
            count: extra.len(),
            first: extra[0].clone(),
            names: extra,
        })
    }

    fn load_stored(&self, c: &Checkpoint, stored: &str, shape: &[usize]) -> Result<Tensor> {
        let found = c
            .shapes
            .get(stored)
            .ok_or_else(|| EngineError::MissingTensor {
                name: stored.to_string(),
                dir: c.dir.clone(),
            })?;
        if found.as_slice() != shape {
            return Err(EngineError::TensorShape {
                name: stored.to_string(),
                expected: shape.to_vec(),
                found: found.clone(),
            });
        }
        // The safetensors view is converted from its stored dtype (bf16, f16, f32, …) into a CPU tensor; floats
        // only, integer tensors have no place in this model.
        let t = c.st.load(stored, &Device::Cpu)?;
        if !t.dtype().is_float() {
            return Err(EngineError::TensorDtype {
                name: stored.to_string(),
                dtype: format!("{:?}", t.dtype()),
            });
        }
        self.used.borrow_mut().insert(stored.to_string());
        Ok(t)
    }

    /// The official checkpoint stores each routed expert separately: stack them into the internal layout.
    fn stacked_experts(
        &self,
        c: &Checkpoint,
        name: &str,
        shape: &[usize],
    ) -> Result<Option<Tensor>> {
        if c.layout != WeightLayout::Official {
            return Ok(None);
        }
        let (base, which) = if let Some(base) = name.strip_suffix("gate_up_proj") {
            (base, true)
        } else if let Some(base) = name.strip_suffix("down_proj") {
            (base, false)
        } else {
            return Ok(None);
        };
        if !base.ends_with("mlp.experts.") {
            return Ok(None);
        }
        let [n_experts, rows, cols] = *shape else {
            return Ok(None);
        };
        let prefix = official_name(base);
        let mut experts = Vec::with_capacity(n_experts);
        for e in 0..n_experts {
            let t = if which {
                let half = rows / 2;
                let gate =
                    self.load_stored(c, &format!("{prefix}{e}.gate_proj.weight"), &[half, cols])?;
                let up =
                    self.load_stored(c, &format!("{prefix}{e}.up_proj.weight"), &[half, cols])?;
                // The native stacking concatenates gate then up along the output rows.
                Tensor::cat(&[gate.to_dtype(self.dtype)?, up.to_dtype(self.dtype)?], 0)?
            } else {
                self.load_stored(c, &format!("{prefix}{e}.down_proj.weight"), &[rows, cols])?
                    .to_dtype(self.dtype)?
            };
            experts.push(t);
        }
        Ok(Some(Tensor::stack(&experts, 0)?))
    }
}

impl Checkpoint {
    /// Internal name → stored name in this checkpoint's layout.
    fn stored_name(&self, internal: &str) -> String {
        match self.layout {
            WeightLayout::Native { prefixed: true } if internal != "lm_head.weight" => {
                format!("model.{internal}")
            }
            // (A safetensors checkpoint is never in llama.cpp's layout.)
            WeightLayout::Native { .. } | WeightLayout::LlamaCpp => internal.to_string(),
            WeightLayout::Official => official_name(internal),
        }
    }
}

/// A random tensor of `shape` on `device` in f32, scaled by the rule of [`Weights::random`].
fn random_tensor(name: &str, shape: &[usize], device: &Device) -> Result<Tensor> {
    let values = Tensor::randn(0f32, 1f32, shape, device)?;
    let RandomInit { mean, std } = random_init(name, shape);
    Ok(values.affine(std, mean)?)
}

/// How a random tensor's values are drawn: `mean + std · N(0, 1)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RandomInit {
    pub mean: f64,
    pub std: f64,
}

/// The rule of [`Weights::random`] for the tensor with this internal name and shape.
pub(crate) fn random_init(name: &str, shape: &[usize]) -> RandomInit {
    let centred = |std: f64| RandomInit { mean: 0.0, std };
    match shape {
        [_] if name.contains("norm") => RandomInit {
            mean: 1.0,
            std: 0.1,
        },
        [_] => centred(0.1),
        [.., last]
            if shape.len() == 3 || name.contains("pos_embed") || name.contains("rel_pos") =>
        {
            centred(1.0 / (*last as f64).sqrt())
        }
        [_, rest @ ..] => centred(1.0 / (rest.iter().product::<usize>() as f64).sqrt()),
        [] => centred(1.0),
    }
}

/// A zero tensor of `shape` that holds one value (a stride-0 broadcast), with the request recorded.
fn placeholder(
    specs: &RefCell<Vec<TensorSpec>>,
    name: &str,
    shape: &[usize],
    dtype: DType,
) -> Result<Tensor> {
    let mut specs = specs.borrow_mut();
    match specs.iter().find(|s| s.name == name) {
        Some(seen) if seen.shape != shape => {
            return Err(EngineError::TensorShape {
                name: name.to_string(),
                expected: shape.to_vec(),
                found: seen.shape.clone(),
            })
        }
        Some(_) => {}
        None => specs.push(TensorSpec {
            name: name.to_string(),
            shape: shape.to_vec(),
        }),
    }
    Ok(Tensor::zeros((), dtype, &Device::Cpu)?.broadcast_as(shape)?)
}

/// Internal (native, unprefixed) name → official checkpoint name (spec §2, the inverse of transformers'
/// `conversion_mapping.py["deepseek_ocr2"]`).
pub(crate) fn official_name(internal: &str) -> String {
    const RULES: &[(&str, &str)] = &[
        (
            "vision_tower.sam_encoder.patch_embed.projection.",
            "model.sam_model.patch_embed.proj.",
        ),
        (
            "vision_tower.sam_encoder.pos_embed",
            "model.sam_model.pos_embed",
        ),
        (
            "vision_tower.sam_encoder.neck.conv1.",
            "model.sam_model.neck.0.",
        ),
        (
            "vision_tower.sam_encoder.neck.layer_norm1.",
            "model.sam_model.neck.1.",
        ),
        (
            "vision_tower.sam_encoder.neck.conv2.",
            "model.sam_model.neck.2.",
        ),
        (
            "vision_tower.sam_encoder.neck.layer_norm2.",
            "model.sam_model.neck.3.",
        ),
        (
            "vision_tower.sam_encoder.proj.conv1.",
            "model.sam_model.net_2.",
        ),
        (
            "vision_tower.sam_encoder.proj.conv2.",
            "model.sam_model.net_3.",
        ),
        (
            "vision_tower.sam_encoder.layers.",
            "model.sam_model.blocks.",
        ),
        (
            "vision_tower.vision_encoder.",
            "model.qwen2_model.model.model.",
        ),
        (
            "vision_tower.query_768_resolution.",
            "model.qwen2_model.query_768.",
        ),
        (
            "vision_tower.query_1024_resolution.",
            "model.qwen2_model.query_1024.",
        ),
        ("multi_modal_projector.", "model.projector.layers."),
        ("view_separator", "model.view_seperator"),
        ("language_model.", "model."),
    ];
    for (native, official) in RULES {
        if let Some(rest) = internal.strip_prefix(native) {
            let name = format!("{official}{rest}");
            if official.starts_with("model.sam_model.blocks.") {
                return name
                    .replace(".layer_norm1.", ".norm1.")
                    .replace(".layer_norm2.", ".norm2.");
            }
            return name;
        }
    }
    internal.to_string()
}

/// A weights file that cannot be mapped or whose header does not parse, named, in words.
fn unreadable_weights(error: candle_core::Error) -> EngineError {
    let candle_core::Error::WithPath { inner, path } = error else {
        return error.into();
    };
    match *inner {
        candle_core::Error::Io(source) => EngineError::Io { path, source },
        inner => EngineError::DamagedWeights {
            path,
            reason: inner.to_string(),
        },
    }
}

/// The safetensors files of a model directory, shards in index order.
fn weight_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let index = dir.join("model.safetensors.index.json");
    if index.is_file() {
        let text = std::fs::read_to_string(&index).map_err(|source| EngineError::Io {
            path: index.clone(),
            source,
        })?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| EngineError::BadIndex {
                path: index.clone(),
                reason: e.to_string(),
            })?;
        let map = value
            .get("weight_map")
            .and_then(|m| m.as_object())
            .ok_or_else(|| EngineError::BadIndex {
                path: index.clone(),
                reason: "no `weight_map` object".into(),
            })?;
        let mut files = BTreeSet::new();
        for (tensor, file) in map {
            let file = file.as_str().ok_or_else(|| EngineError::BadIndex {
                path: index.clone(),
                reason: format!("the file of `{tensor}` is not a string"),
            })?;
            files.insert(file.to_string());
        }
        let paths: Vec<PathBuf> = files.into_iter().map(|f| dir.join(f)).collect();
        if let Some(missing) = paths.iter().find(|p| !p.is_file()) {
            return Err(EngineError::BadIndex {
                path: index,
                reason: format!("shard {} does not exist", missing.display()),
            });
        }
        return Ok(paths);
    }
    let single = dir.join("model.safetensors");
    if single.is_file() {
        return Ok(vec![single]);
    }
    let entries = std::fs::read_dir(dir).map_err(|source| EngineError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    match found.as_slice() {
        [one] => Ok(vec![one.clone()]),
        _ => Err(EngineError::NoWeights {
            dir: dir.to_path_buf(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::official_name;

    #[test]
    fn official_names_follow_the_checkpoint_index() {
        assert_eq!(
            official_name("vision_tower.sam_encoder.layers.3.layer_norm1.weight"),
            "model.sam_model.blocks.3.norm1.weight"
        );
        assert_eq!(
            official_name("vision_tower.sam_encoder.layers.3.attn.rel_pos_h"),
            "model.sam_model.blocks.3.attn.rel_pos_h"
        );
        assert_eq!(
            official_name("vision_tower.vision_encoder.layers.0.self_attn.q_proj.bias"),
            "model.qwen2_model.model.model.layers.0.self_attn.q_proj.bias"
        );
        assert_eq!(
            official_name("vision_tower.query_1024_resolution.weight"),
            "model.qwen2_model.query_1024.weight"
        );
        assert_eq!(
            official_name("multi_modal_projector.weight"),
            "model.projector.layers.weight"
        );
        assert_eq!(official_name("view_separator"), "model.view_seperator");
        assert_eq!(
            official_name("language_model.layers.1.mlp.gate.weight"),
            "model.layers.1.mlp.gate.weight"
        );
        assert_eq!(official_name("lm_head.weight"), "lm_head.weight");
    }
}
