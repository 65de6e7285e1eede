//! Model dimensions, read from a checkpoint's `config.json` in either of its two shapes.
//!
//! * official (`model_type: "deepseek_vl_v2"`): the LM fields sit at the top level (DeepseekV2Config defaults for
//!   absent ones) and the vision stack is hard-coded in the reference code (spec §1.2–1.4). A config of ours may add
//!   `deepread_overrides: {image_token_id, vision_config: {sam_config, encoder_config}}` in the native field names,
//!   which the tiny test fixtures use to shrink the vision stack; the real checkpoint never has it.
//! * transformers-native (`model_type: "deepseek_ocr2"`): `vision_config.sam_config`,
//!   `vision_config.encoder_config`, `text_config`, `image_token_id`, with the defaults of transformers'
//!   `configuration_deepseek_ocr2.py` for absent fields.

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{EngineError, Result};

mod fields;
mod sections;
use fields::{cfg_err, get_u32, obj};
use sections::{
    encoder_config, native_text_config, official_encoder, official_sam, official_text_config,
    sam_config,
};

/// DeepSeek-OCR-2's own `config.json` (HuggingFace deepseek-ai/DeepSeek-OCR-2), as shipped with the weights.
pub const DEEPSEEK_OCR2_CONFIG_JSON: &str = include_str!("config/deepseek_ocr2_config.json");

/// SAM ViT image encoder with its neck and the two stride-2 downsampling convs.
#[derive(Debug, Clone, PartialEq)]
pub struct SamConfig {
    pub hidden_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub mlp_dim: usize,
    /// The image size `pos_embed` and the global rel-pos tables were trained for.
    pub image_size: usize,
    pub patch_size: usize,
    pub window_size: usize,
    pub global_attn_indexes: Vec<usize>,
    pub output_channels: usize,
    /// Channels of the two stride-2 convs; the second is the encoder width.
    pub downsample_channels: [usize; 2],
    pub layer_norm_eps: f64,
    pub qkv_bias: bool,
}

impl SamConfig {
    /// Patches per side at the trained image size (64 for 1024/16).
    pub fn grid(&self) -> usize {
        self.image_size / self.patch_size
    }
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_heads
    }
    pub fn is_global(&self, layer: usize) -> bool {
        self.global_attn_indexes.contains(&layer)
    }
}

/// The Qwen2-shaped "DeepEncoder V2" that turns SAM features into query tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct EncoderConfig {
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
}

impl EncoderConfig {
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_heads
    }
}

/// The DeepSeek-V2-shaped MoE decoder (plain MHA, no MLA).
#[derive(Debug, Clone, PartialEq)]
pub struct TextConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub moe_intermediate_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub n_routed_experts: usize,
    pub n_shared_experts: usize,
    pub num_experts_per_tok: usize,
    pub routed_scaling_factor: f64,
    pub norm_topk_prob: bool,
    /// `true` for layers whose MLP is the routed MoE, `false` for dense SwiGLU layers.
    pub sparse_layers: Vec<bool>,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub max_position_embeddings: usize,
    pub bos_token_id: u32,
    pub eos_token_id: u32,
}

impl TextConfig {
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_heads
    }
}

/// Which `config.json` shape the model came with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigLayout {
    Official,
    Native,
}

/// Every dimension the engine needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub layout: ConfigLayout,
    pub sam: SamConfig,
    pub encoder: EncoderConfig,
    pub text: TextConfig,
    pub image_token_id: u32,
}

impl ModelConfig {
    /// Read `dir/config.json`.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path).map_err(|source| EngineError::Io {
            path: path.clone(),
            source,
        })?;
        let value: Value =
            serde_json::from_str(&text).map_err(|source| EngineError::ConfigJson {
                path: path.clone(),
                source,
            })?;
        Self::from_json(&value)
    }

    /// DeepSeek-OCR-2's own config: `config.json` of the HuggingFace repository deepseek-ai/DeepSeek-OCR-2, as
    /// copied into shared/fixtures/tokenizer/config.deepseek-ocr-2.json.
    pub fn deepseek_ocr2() -> Self {
        let value: Value =
            serde_json::from_str(DEEPSEEK_OCR2_CONFIG_JSON).expect("the bundled config is JSON");
        Self::from_json(&value).expect("the bundled config is DeepSeek-OCR-2's")
    }

    pub fn from_json(value: &Value) -> Result<Self> {
        let root = value
            .as_object()
            .ok_or_else(|| cfg_err("<root>", "expected a JSON object"))?;
        let model_type = root.get("model_type").and_then(Value::as_str).unwrap_or("");
        let config = match model_type {
            "deepseek_ocr2" => Self::native(root)?,
            "deepseek_vl_v2" => Self::official(root)?,
            other => {
                return Err(EngineError::UnsupportedConfig {
                    field: "model_type".into(),
                    value: format!("{other:?}"),
                    hint: "expected \"deepseek_vl_v2\" (official DeepSeek-OCR-2) or \"deepseek_ocr2\" (transformers)"
                        .into(),
                })
            }
        };
        config.validate()?;
        Ok(config)
    }

    fn native(root: &Map<String, Value>) -> Result<Self> {
        let empty = Map::new();
        let vision = obj(root, "vision_config")?.unwrap_or(&empty);
        let sam = sam_config(
            obj(vision, "sam_config")?.unwrap_or(&empty),
            "vision_config.sam_config",
        )?;
        let encoder = encoder_config(
            obj(vision, "encoder_config")?.unwrap_or(&empty),
            "vision_config.encoder_config",
        )?;
        let text = native_text_config(obj(root, "text_config")?.unwrap_or(&empty))?;
        let image_token_id = get_u32(root, "image_token_id", "image_token_id", Some(128815))?;
        Ok(Self {
            layout: ConfigLayout::Native,
            sam,
            encoder,
            text,
            image_token_id,
        })
    }

    fn official(root: &Map<String, Value>) -> Result<Self> {
        let empty = Map::new();
        let overrides = obj(root, "deepread_overrides")?.unwrap_or(&empty);
        let vision = obj(overrides, "vision_config")?.unwrap_or(&empty);
        let sam = match obj(vision, "sam_config")? {
            Some(o) => sam_config(o, "deepread_overrides.vision_config.sam_config")?,
            None => official_sam(),
        };
        let encoder = match obj(vision, "encoder_config")? {
            Some(o) => encoder_config(o, "deepread_overrides.vision_config.encoder_config")?,
            None => official_encoder(),
        };
        let text = official_text_config(root)?;
        let image_token_id = get_u32(
            overrides,
            "image_token_id",
            "deepread_overrides.image_token_id",
            Some(128815),
        )?;
        Ok(Self {
            layout: ConfigLayout::Official,
            sam,
            encoder,
            text,
            image_token_id,
        })
    }

    fn validate(&self) -> Result<()> {
        let (s, e, t) = (&self.sam, &self.encoder, &self.text);
        let check = |ok: bool, field: &str, reason: String| {
            if ok {
                Ok(())
            } else {
                Err(cfg_err(field, &reason))
            }
        };
        check(
            s.num_heads > 0 && s.hidden_size % s.num_heads == 0,
            "sam_config.num_attention_heads",
            format!(
                "hidden_size {} is not a multiple of {} heads",
                s.hidden_size, s.num_heads
            ),
        )?;
        check(
            s.patch_size > 0 && s.image_size % s.patch_size == 0,
            "sam_config.patch_size",
            format!(
                "image_size {} is not a multiple of patch_size {}",
                s.image_size, s.patch_size
            ),
        )?;
        check(
            s.window_size > 0,
            "sam_config.window_size",
            "must be positive".into(),
        )?;
        check(
            s.downsample_channels[1] == e.hidden_size,
            "sam_config.downsample_channels",
            format!(
                "last channel count {} must equal the encoder hidden_size {}",
                s.downsample_channels[1], e.hidden_size
            ),
        )?;
        check(
            e.num_heads > 0
                && e.hidden_size % e.num_heads == 0
                && e.num_kv_heads > 0
                && e.num_heads % e.num_kv_heads == 0,
            "encoder_config.num_attention_heads",
            format!(
                "{} heads / {} kv heads do not divide hidden_size {}",
                e.num_heads, e.num_kv_heads, e.hidden_size
            ),
        )?;
        check(
            t.num_heads > 0
                && t.hidden_size % t.num_heads == 0
                && t.num_kv_heads > 0
                && t.num_heads % t.num_kv_heads == 0,
            "text_config.num_attention_heads",
            format!(
                "{} heads / {} kv heads do not divide hidden_size {}",
                t.num_heads, t.num_kv_heads, t.hidden_size
            ),
        )?;
        check(
            t.sparse_layers.len() == t.num_layers,
            "text_config.mlp_layer_types",
            format!(
                "{} entries for {} layers",
                t.sparse_layers.len(),
                t.num_layers
            ),
        )?;
        let any_sparse = t.sparse_layers.iter().any(|&s| s);
        check(
            !any_sparse
                || (t.num_experts_per_tok >= 1 && t.num_experts_per_tok <= t.n_routed_experts),
            "num_experts_per_tok",
            format!(
                "{} experts per token of {} routed experts",
                t.num_experts_per_tok, t.n_routed_experts
            ),
        )?;
        check(
            (self.image_token_id as usize) < t.vocab_size,
            "image_token_id",
            format!(
                "{} is outside the vocabulary of {}",
                self.image_token_id, t.vocab_size
            ),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped official config (spec §1.1), LM fields at the top level, no rope/eps fields.
    fn shipped_official() -> Value {
        serde_json::json!({
            "model_type": "deepseek_vl_v2",
            "projector_config": {"input_dim": 896, "n_embed": 1280, "projector_type": "linear"},
            "vision_config": {"image_size": 1024, "mlp_ratio": 3.7362},
            "bos_token_id": 0, "eos_token_id": 1, "first_k_dense_replace": 1, "hidden_size": 1280,
            "intermediate_size": 6848, "kv_lora_rank": null, "lm_head": true, "max_position_embeddings": 8192,
            "moe_intermediate_size": 896, "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 2,
            "num_attention_heads": 10, "num_experts_per_tok": 6, "num_hidden_layers": 12,
            "num_key_value_heads": 10, "q_lora_rank": null, "qk_nope_head_dim": 0, "qk_rope_head_dim": 0,
            "rm_head": false, "topk_group": 1, "topk_method": "greedy", "use_mla": false, "v_head_dim": 0,
            "vocab_size": 129280
        })
    }

    #[test]
    fn bundled_config_is_the_shipped_one() {
        let shipped = ModelConfig::from_json(&shipped_official()).unwrap();
        assert_eq!(ModelConfig::deepseek_ocr2(), shipped);
    }

    #[test]
    fn official_config_uses_spec_dimensions() {
        let c = ModelConfig::from_json(&shipped_official()).unwrap();
        assert_eq!(c.layout, ConfigLayout::Official);
        assert_eq!(c.image_token_id, 128815);
        assert_eq!(
            (c.sam.hidden_size, c.sam.num_layers, c.sam.mlp_dim),
            (768, 12, 3072)
        );
        assert_eq!(c.sam.downsample_channels, [512, 896]);
        assert_eq!(
            (
                c.encoder.hidden_size,
                c.encoder.num_kv_heads,
                c.encoder.rope_theta
            ),
            (896, 2, 1e6)
        );
        assert_eq!(c.text.head_dim(), 128);
        assert_eq!(c.text.rope_theta, 10000.0);
        assert_eq!(c.text.sparse_layers.iter().filter(|&&s| s).count(), 11);
        assert!(!c.text.sparse_layers[0]);
        assert_eq!((c.text.bos_token_id, c.text.eos_token_id), (0, 1));
    }

    #[test]
    fn native_config_reads_nested_sections_with_class_defaults() {
        // The shape of gpu/hf_reference.py's full-size config; SAM takes every class default.
        let v = serde_json::json!({
            "model_type": "deepseek_ocr2", "image_token_id": 128815,
            "vision_config": {"sam_config": {}, "encoder_config": {
                "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                "num_attention_heads": 14, "num_key_value_heads": 2, "rms_norm_eps": 1e-6,
                "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}},
            "text_config": {"vocab_size": 129280, "hidden_size": 1280, "intermediate_size": 6848,
                "num_hidden_layers": 12, "num_attention_heads": 10, "num_key_value_heads": 10,
                "moe_intermediate_size": 896, "n_routed_experts": 64, "num_experts_per_tok": 6,
                "n_shared_experts": 2, "mlp_layer_types": ["dense", "sparse", "sparse", "sparse", "sparse",
                "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse"],
                "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
                "max_position_embeddings": 8192, "bos_token_id": 0, "eos_token_id": 1}
        });
        let native = ModelConfig::from_json(&v).unwrap();
        let official = ModelConfig::from_json(&shipped_official()).unwrap();
        assert_eq!(native.layout, ConfigLayout::Native);
        assert_eq!(native.sam, official.sam);
        assert_eq!(native.encoder, official.encoder);
        assert_eq!(native.text, official.text);
        assert_eq!(native.image_token_id, official.image_token_id);
    }

    #[test]
    fn mla_checkpoints_are_refused_by_name() {
        let mut v = shipped_official();
        v["use_mla"] = Value::Bool(true);
        let err = ModelConfig::from_json(&v).unwrap_err().to_string();
        assert!(err.contains("use_mla"), "{err}");
    }
}
