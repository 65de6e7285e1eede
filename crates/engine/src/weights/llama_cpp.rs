//! The community's GGUF files of DeepSeek-OCR-2, as llama.cpp writes them (its `convert_hf_to_gguf.py`, PR
//! ggml-org/llama.cpp#20975): a text file (`general.architecture = "deepseek2-ocr"`) and a vision file beside it
//! (`mmproj…`, `clip.projector_type = "deepseekocr2"`). Their tensors are the checkpoint's under llama.cpp's
//! names, in any ggml type candle reads (f32, f16, bf16, Q4_0 … Q8_0, the K-quants), unpermuted and untransposed;
//! the routed experts come stacked per layer, gate and up apart or merged. Each is dequantized when the model
//! asks for it, so the model runs as from the checkpoint in its own dtype (or in int8 from there).

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::{Device, Tensor};

use crate::config::ModelConfig;
use crate::error::{EngineError, Result};

/// What llama.cpp's text file of DeepSeek-OCR (1 and 2) declares as its architecture.
const TEXT_ARCHITECTURE: &str = "deepseek2-ocr";
/// The vision file's projector for DeepSeek-OCR-2 (OCR 1's is `deepseekocr`).
const OCR2_PROJECTOR: &str = "deepseekocr2";

/// Which of the two files holds a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Text,
    Vision,
}

/// Where an internal tensor is stored: one GGUF tensor, or a routed-expert gate/up stack that llama.cpp keeps as
/// two (`ffn_gate_exps`, `ffn_up_exps`) or, in newer files, one (`ffn_gate_up_exps`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stored {
    One(Part, String),
    GateUp {
        gate: String,
        up: String,
        merged: String,
    },
}

/// One GGUF file: its header, and the file to read tensors from.
struct GgufFile {
    path: PathBuf,
    content: Content,
    reader: RefCell<BufReader<File>>,
}

impl GgufFile {
    fn open(path: &Path) -> Result<Self> {
        let io = |source| EngineError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut reader = BufReader::new(File::open(path).map_err(io)?);
        let content = Content::read(&mut reader).map_err(|e| damaged(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            content,
            reader: RefCell::new(reader),
        })
    }

    fn string(&self, key: &str) -> Option<&str> {
        self.content
            .metadata
            .get(key)?
            .to_string()
            .ok()
            .map(String::as_str)
    }

    fn number(&self, key: &str) -> Option<u64> {
        self.content.metadata.get(key).and_then(|v| v.to_u64().ok())
    }

    fn has(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    fn shape(&self, name: &str) -> Option<Vec<usize>> {
        Some(self.content.tensor_infos.get(name)?.shape.dims().to_vec())
    }

    /// The tensor dequantized to f32 on the CPU.
    fn load(&self, name: &str) -> Result<Tensor> {
        let mut reader = self.reader.borrow_mut();
        let q = self
            .content
            .tensor(&mut *reader, name, &Device::Cpu)
            .map_err(|e| damaged(&self.path, e))?;
        Ok(q.dequantize(&Device::Cpu)?)
    }
}

/// A folder's llama.cpp pair: the text file and the vision file.
pub(super) struct LlamaCppPair {
    dir: PathBuf,
    text: GgufFile,
    vision: GgufFile,
}

impl LlamaCppPair {
    /// The pair in `dir`, if it holds GGUF files other than DeepRead's own int8 cache: None when it holds none.
    pub(super) fn find(dir: &Path) -> Result<Option<Self>> {
        let files = gguf_files(dir)?;
        if files.is_empty() {
            return Ok(None);
        }
        let mut text = None;
        let mut vision = None;
        for path in &files {
            let file = GgufFile::open(path)?;
            match file.string("general.architecture") {
                Some(TEXT_ARCHITECTURE) => text = Some(file),
                Some("clip") => vision = Some(file),
                _ => {}
            }
        }
        let text = text.ok_or_else(|| incomplete(dir, "`deepseek2-ocr` text file"))?;
        let vision = vision.ok_or_else(|| incomplete(dir, "`mmproj` vision file"))?;
        let projector = vision.string("clip.projector_type").unwrap_or("none");
        if projector != OCR2_PROJECTOR {
            return Err(EngineError::Gguf {
                dir: dir.to_path_buf(),
                reason: format!(
                    "{} is a vision file for projector `{projector}`, not DeepSeek-OCR-2's `{OCR2_PROJECTOR}` \
                     (DeepSeek-OCR 1's files share the text file's architecture but not its weights)",
                    vision.path.display()
                ),
            });
        }
        Ok(Some(Self {
            dir: dir.to_path_buf(),
            text,
            vision,
        }))
    }

    /// Every tensor of both files, by file and name (as `load` records them).
    pub(super) fn stored_names(&self) -> Vec<String> {
        [&self.text, &self.vision]
            .iter()
            .flat_map(|f| f.content.tensor_infos.keys().map(|name| qualified(f, name)))
            .collect()
    }

    /// Refuses a pair whose sizes are not `config`'s (another model's files beside a config.json, say).
    pub(super) fn check_config(&self, config: &ModelConfig) -> Result<()> {
        let (text, encoder, sam) = (&config.text, &config.encoder, &config.sam);
        let expected = [
            (&self.text, "deepseek2-ocr.block_count", text.num_layers),
            (
                &self.text,
                "deepseek2-ocr.embedding_length",
                text.hidden_size,
            ),
            (
                &self.text,
                "deepseek2-ocr.expert_count",
                text.n_routed_experts,
            ),
            (
                &self.text,
                "deepseek2-ocr.expert_used_count",
                text.num_experts_per_tok,
            ),
            (&self.vision, "clip.vision.block_count", encoder.num_layers),
            (
                &self.vision,
                "clip.vision.embedding_length",
                encoder.hidden_size,
            ),
            (&self.vision, "clip.vision.sam.block_count", sam.num_layers),
        ];
        for (file, key, want) in expected {
            match file.number(key) {
                Some(found) if found == want as u64 => {}
                found => {
                    return Err(EngineError::Gguf {
                        dir: self.dir.clone(),
                        reason: format!(
                            "{}: `{key}` is {}, this config has {want}",
                            file.path.display(),
                            found.map_or("absent".into(), |f| f.to_string())
                        ),
                    })
                }
            }
        }
        Ok(())
    }

    /// The tensor with this internal name, in f32 on the CPU, checked against `shape`; `used` gets the stored
    /// names read.
    pub(super) fn load(
        &self,
        internal: &str,
        shape: &[usize],
        used: &mut BTreeSet<String>,
    ) -> Result<Tensor> {
        let stored = stored(internal).ok_or_else(|| self.missing(internal))?;
        match stored {
            Stored::One(part, name) => {
                let file = self.file(part);
                let t = self.load_one(file, &name, shape)?;
                used.insert(qualified(file, &name));
                Ok(t)
            }
            Stored::GateUp { gate, up, merged } => {
                let file = &self.text;
                if file.has(&merged) {
                    used.insert(qualified(file, &merged));
                    return self.load_one(file, &merged, shape);
                }
                let [experts, rows, cols] = *shape else {
                    return Err(self.missing(internal));
                };
                let half = [experts, rows / 2, cols];
                let gate_t = self.load_one(file, &gate, &half)?;
                let up_t = self.load_one(file, &up, &half)?;
                used.extend([qualified(file, &gate), qualified(file, &up)]);
                // The internal stack holds each expert's gate rows, then its up rows.
                Ok(Tensor::cat(&[gate_t, up_t], 1)?)
            }
        }
    }

    fn file(&self, part: Part) -> &GgufFile {
        match part {
            Part::Text => &self.text,
            Part::Vision => &self.vision,
        }
    }

    /// A stored tensor whose shape is `shape`, up to dims of 1 (llama.cpp keeps the view separator as
    /// (1, H)).
    fn load_one(&self, file: &GgufFile, name: &str, shape: &[usize]) -> Result<Tensor> {
        let found = file.shape(name).ok_or_else(|| self.missing(name))?;
        let squeezed =
            |dims: &[usize]| dims.iter().copied().filter(|&d| d != 1).collect::<Vec<_>>();
        if squeezed(&found) != squeezed(shape) {
            return Err(EngineError::TensorShape {
                name: format!("{} in {}", name, file.path.display()),
                expected: shape.to_vec(),
                found,
            });
        }
        Ok(file.load(name)?.reshape(shape)?)
    }

    fn missing(&self, name: &str) -> EngineError {
        EngineError::MissingTensor {
            name: name.to_string(),
            dir: self.dir.clone(),
        }
    }
}

/// The GGUF files of `dir`, but for DeepRead's own int8 cache.
fn gguf_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|source| EngineError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
        .filter(|p| p.file_name().is_some_and(|n| n != crate::quant::INT8_CACHE))
        .collect();
    files.sort();
    Ok(files)
}

/// A tensor's name with its file's, for the unused-tensor report.
fn qualified(file: &GgufFile, name: &str) -> String {
    let file_name = file
        .path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    format!("{file_name}:{name}")
}

/// A folder whose GGUF files lack one of the pair.
fn incomplete(dir: &Path, what: &str) -> EngineError {
    EngineError::Gguf {
        dir: dir.to_path_buf(),
        reason: format!(
            "no {what} among its GGUF files; DeepRead reads llama.cpp's pair for DeepSeek-OCR-2, the \
             `deepseek2-ocr` text file and its `mmproj` vision file"
        ),
    }
}

fn damaged(path: &Path, error: candle_core::Error) -> EngineError {
    EngineError::DamagedWeights {
        path: path.to_path_buf(),
        reason: error.to_string(),
    }
}

/// llama.cpp's name of the tensor with this internal name (see the module comment of `weights`).
fn stored(internal: &str) -> Option<Stored> {
    let text = |name: String| Some(Stored::One(Part::Text, name));
    let vision = |name: String| Some(Stored::One(Part::Vision, name));
    if internal == "lm_head.weight" {
        return text("output.weight".into());
    }
    if internal == "view_separator" {
        return vision("v.view_seperator".into());
    }
    if let Some(rest) = internal.strip_prefix("language_model.") {
        return match rest {
            "embed_tokens.weight" => text("token_embd.weight".into()),
            "norm.weight" => text("output_norm.weight".into()),
            _ => text_layer(rest),
        };
    }
    if let Some(rest) = internal.strip_prefix("multi_modal_projector.") {
        return vision(format!("mm.model.fc.{rest}"));
    }
    let rest = internal.strip_prefix("vision_tower.")?;
    if let Some(rest) = rest.strip_prefix("sam_encoder.") {
        return sam_name(rest).map(|name| Stored::One(Part::Vision, name));
    }
    if let Some(rest) = rest.strip_prefix("vision_encoder.") {
        return encoder_name(rest).map(|name| Stored::One(Part::Vision, name));
    }
    let size = rest
        .strip_prefix("query_")?
        .strip_suffix("_resolution.weight")?;
    vision(format!("v.resample_query_{size}.weight"))
}

/// `layers.N.…` of the language model.
fn text_layer(rest: &str) -> Option<Stored> {
    let (layer, tail) = layer_and_tail(rest)?;
    if let Some(which) = tail.strip_prefix("mlp.experts.") {
        return Some(match which {
            "gate_up_proj" => Stored::GateUp {
                gate: format!("blk.{layer}.ffn_gate_exps.weight"),
                up: format!("blk.{layer}.ffn_up_exps.weight"),
                merged: format!("blk.{layer}.ffn_gate_up_exps.weight"),
            },
            "down_proj" => Stored::One(Part::Text, format!("blk.{layer}.ffn_down_exps.weight")),
            _ => return None,
        });
    }
    const RULES: &[(&str, &str)] = &[
        ("input_layernorm.weight", "attn_norm.weight"),
        ("post_attention_layernorm.weight", "ffn_norm.weight"),
        ("self_attn.q_proj.weight", "attn_q.weight"),
        ("self_attn.k_proj.weight", "attn_k.weight"),
        ("self_attn.v_proj.weight", "attn_v.weight"),
        ("self_attn.o_proj.weight", "attn_output.weight"),
        ("mlp.gate.weight", "ffn_gate_inp.weight"),
        ("mlp.gate_proj.weight", "ffn_gate.weight"),
        ("mlp.up_proj.weight", "ffn_up.weight"),
        ("mlp.down_proj.weight", "ffn_down.weight"),
        (
            "mlp.shared_experts.gate_proj.weight",
            "ffn_gate_shexp.weight",
        ),
        ("mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight"),
        (
            "mlp.shared_experts.down_proj.weight",
            "ffn_down_shexp.weight",
        ),
    ];
    let (_, name) = RULES.iter().find(|(ours, _)| *ours == tail)?;
    Some(Stored::One(Part::Text, format!("blk.{layer}.{name}")))
}

/// SAM's tensors (`sam_encoder.…`), under llama.cpp's `v.sam.…`.
fn sam_name(rest: &str) -> Option<String> {
    const STEM: &[(&str, &str)] = &[
        ("patch_embed.projection.weight", "v.sam.patch_embd.weight"),
        ("patch_embed.projection.bias", "v.sam.patch_embd.bias"),
        ("pos_embed", "v.sam.pos_embd.weight"),
        ("neck.conv1.weight", "v.sam.neck.0.weight"),
        ("neck.layer_norm1.weight", "v.sam.neck.1.weight"),
        ("neck.layer_norm1.bias", "v.sam.neck.1.bias"),
        ("neck.conv2.weight", "v.sam.neck.2.weight"),
        ("neck.layer_norm2.weight", "v.sam.neck.3.weight"),
        ("neck.layer_norm2.bias", "v.sam.neck.3.bias"),
        ("proj.conv1.weight", "v.sam.net_2.weight"),
        ("proj.conv2.weight", "v.sam.net_3.weight"),
    ];
    if let Some((_, name)) = STEM.iter().find(|(ours, _)| *ours == rest) {
        return Some(name.to_string());
    }
    const BLOCK: &[(&str, &str)] = &[
        ("layer_norm1.", "pre_ln."),
        ("layer_norm2.", "post_ln."),
        ("attn.qkv.", "attn.qkv."),
        ("attn.proj.", "attn.out."),
        ("mlp.lin1.", "mlp.lin1."),
        ("mlp.lin2.", "mlp.lin2."),
    ];
    let (layer, tail) = layer_and_tail(rest)?;
    if let Some(axis) = tail.strip_prefix("attn.rel_pos_") {
        return Some(format!("v.sam.blk.{layer}.attn.pos_{axis}.weight"));
    }
    let (ours, name) = BLOCK.iter().find(|(ours, _)| tail.starts_with(ours))?;
    Some(format!("v.sam.blk.{layer}.{name}{}", &tail[ours.len()..]))
}

/// The Qwen2 encoder's tensors (`vision_encoder.…`), under llama.cpp's `v.blk.…` and `v.post_ln`.
fn encoder_name(rest: &str) -> Option<String> {
    if rest == "norm.weight" {
        return Some("v.post_ln.weight".into());
    }
    const BLOCK: &[(&str, &str)] = &[
        ("input_layernorm.", "ln1."),
        ("post_attention_layernorm.", "ln2."),
        ("self_attn.q_proj.", "attn_q."),
        ("self_attn.k_proj.", "attn_k."),
        ("self_attn.v_proj.", "attn_v."),
        ("self_attn.o_proj.", "attn_out."),
        ("mlp.gate_proj.", "ffn_gate."),
        ("mlp.up_proj.", "ffn_up."),
        ("mlp.down_proj.", "ffn_down."),
    ];
    let (layer, tail) = layer_and_tail(rest)?;
    let (ours, name) = BLOCK.iter().find(|(ours, _)| tail.starts_with(ours))?;
    Some(format!("v.blk.{layer}.{name}{}", &tail[ours.len()..]))
}

/// `layers.N.tail` → (N, tail).
fn layer_and_tail(rest: &str) -> Option<(usize, &str)> {
    let rest = rest.strip_prefix("layers.")?;
    let (layer, tail) = rest.split_once('.')?;
    Some((layer.parse().ok()?, tail))
}

/// The GGUF metadata a tokenizer is built from (see `prompt::gguf`): the text file's `tokenizer.ggml.*`.
pub fn tokenizer_metadata(dir: &Path) -> Result<Option<HashMap<String, Value>>> {
    let Some(pair) = LlamaCppPair::find(dir)? else {
        return Ok(None);
    };
    let metadata = pair.text.content.metadata;
    Ok(Some(
        metadata
            .into_iter()
            .filter(|(k, _)| k.starts_with("tokenizer.ggml."))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::{stored, Part, Stored};

    fn one(part: Part, name: &str) -> Option<Stored> {
        Some(Stored::One(part, name.into()))
    }

    #[test]
    fn internal_names_map_to_llama_cpp_names() {
        let cases = [
            ("lm_head.weight", one(Part::Text, "output.weight")),
            (
                "language_model.layers.3.self_attn.o_proj.weight",
                one(Part::Text, "blk.3.attn_output.weight"),
            ),
            (
                "language_model.layers.5.mlp.shared_experts.down_proj.weight",
                one(Part::Text, "blk.5.ffn_down_shexp.weight"),
            ),
            (
                "language_model.layers.2.mlp.experts.down_proj",
                one(Part::Text, "blk.2.ffn_down_exps.weight"),
            ),
            (
                "vision_tower.sam_encoder.layers.11.attn.rel_pos_h",
                one(Part::Vision, "v.sam.blk.11.attn.pos_h.weight"),
            ),
            (
                "vision_tower.sam_encoder.layers.0.attn.proj.bias",
                one(Part::Vision, "v.sam.blk.0.attn.out.bias"),
            ),
            (
                "vision_tower.sam_encoder.proj.conv2.weight",
                one(Part::Vision, "v.sam.net_3.weight"),
            ),
            (
                "vision_tower.vision_encoder.layers.23.self_attn.k_proj.bias",
                one(Part::Vision, "v.blk.23.attn_k.bias"),
            ),
            (
                "vision_tower.query_768_resolution.weight",
                one(Part::Vision, "v.resample_query_768.weight"),
            ),
            (
                "multi_modal_projector.bias",
                one(Part::Vision, "mm.model.fc.bias"),
            ),
            ("view_separator", one(Part::Vision, "v.view_seperator")),
            ("language_model.layers.1.mlp.nonsense", None),
        ];
        for (internal, want) in cases {
            assert_eq!(stored(internal), want, "{internal}");
        }
        assert_eq!(
            stored("language_model.layers.4.mlp.experts.gate_up_proj"),
            Some(Stored::GateUp {
                gate: "blk.4.ffn_gate_exps.weight".into(),
                up: "blk.4.ffn_up_exps.weight".into(),
                merged: "blk.4.ffn_gate_up_exps.weight".into(),
            })
        );
    }
}
