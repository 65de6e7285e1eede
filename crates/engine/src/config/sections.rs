//! The sections of `config.json`: SAM, the encoder and the language model, each read with its defaults, and the
//! vision stack the official checkpoint hard-codes.

use serde_json::{Map, Value};

use super::fields::{
    cfg_err, expect_bool, expect_str, expect_usize, first_id, get_bool, get_f64, get_u32,
    get_usize, get_usize_list, obj, opt_usize,
};
use super::{EncoderConfig, SamConfig, TextConfig};
use crate::error::{EngineError, Result};

/// SAM ViT-B as hard-coded by `build_sam_vit_b` (spec §1.2).
pub(super) fn official_sam() -> SamConfig {
    SamConfig {
        hidden_size: 768,
        num_layers: 12,
        num_heads: 12,
        mlp_dim: 3072,
        image_size: 1024,
        patch_size: 16,
        window_size: 14,
        global_attn_indexes: vec![2, 5, 8, 11],
        output_channels: 256,
        downsample_channels: [512, 896],
        layer_norm_eps: 1e-6,
        qkv_bias: true,
    }
}

/// The Qwen2-0.5B-shaped encoder as hard-coded by `build_qwen2_decoder_as_encoder` (spec §1.3).
pub(super) fn official_encoder() -> EncoderConfig {
    EncoderConfig {
        hidden_size: 896,
        intermediate_size: 4864,
        num_layers: 24,
        num_heads: 14,
        num_kv_heads: 2,
        rms_norm_eps: 1e-6,
        rope_theta: 1_000_000.0,
    }
}

pub(super) fn sam_config(o: &Map<String, Value>, at: &str) -> Result<SamConfig> {
    let f = |name: &str| format!("{at}.{name}");
    let hidden_size = get_usize(o, "hidden_size", &f("hidden_size"), Some(768))?;
    let mlp_ratio = get_f64(o, "mlp_ratio", &f("mlp_ratio"), Some(4.0))?;
    let mlp_dim = match o.get("mlp_dim") {
        Some(Value::Null) | None => (hidden_size as f64 * mlp_ratio) as usize,
        Some(_) => get_usize(o, "mlp_dim", &f("mlp_dim"), None)?,
    };
    let downsample = match o.get("downsample_channels") {
        Some(Value::Null) | None => vec![512, 896],
        Some(_) => get_usize_list(o, "downsample_channels", &f("downsample_channels"))?,
    };
    let downsample_channels: [usize; 2] = downsample.as_slice().try_into().map_err(|_| {
        cfg_err(
            &f("downsample_channels"),
            "expected exactly two channel counts",
        )
    })?;
    expect_str(o, "hidden_act", &f("hidden_act"), "gelu")?;
    expect_bool(o, "use_abs_pos", &f("use_abs_pos"), true)?;
    expect_bool(o, "use_rel_pos", &f("use_rel_pos"), true)?;
    expect_usize(o, "num_channels", &f("num_channels"), 3)?;
    Ok(SamConfig {
        hidden_size,
        num_layers: get_usize(o, "num_hidden_layers", &f("num_hidden_layers"), Some(12))?,
        num_heads: get_usize(
            o,
            "num_attention_heads",
            &f("num_attention_heads"),
            Some(12),
        )?,
        mlp_dim,
        image_size: get_usize(o, "image_size", &f("image_size"), Some(1024))?,
        patch_size: get_usize(o, "patch_size", &f("patch_size"), Some(16))?,
        window_size: get_usize(o, "window_size", &f("window_size"), Some(14))?,
        global_attn_indexes: match o.get("global_attn_indexes") {
            Some(Value::Null) | None => vec![2, 5, 8, 11],
            Some(_) => get_usize_list(o, "global_attn_indexes", &f("global_attn_indexes"))?,
        },
        output_channels: get_usize(o, "output_channels", &f("output_channels"), Some(256))?,
        downsample_channels,
        layer_norm_eps: get_f64(o, "layer_norm_eps", &f("layer_norm_eps"), Some(1e-6))?,
        qkv_bias: get_bool(o, "qkv_bias", &f("qkv_bias"), Some(true))?,
    })
}

pub(super) fn encoder_config(o: &Map<String, Value>, at: &str) -> Result<EncoderConfig> {
    let f = |name: &str| format!("{at}.{name}");
    let num_heads = get_usize(
        o,
        "num_attention_heads",
        &f("num_attention_heads"),
        Some(32),
    )?;
    expect_str(o, "hidden_act", &f("hidden_act"), "silu")?;
    expect_bool(o, "use_sliding_window", &f("use_sliding_window"), false)?;
    Ok(EncoderConfig {
        hidden_size: get_usize(o, "hidden_size", &f("hidden_size"), Some(4096))?,
        intermediate_size: get_usize(o, "intermediate_size", &f("intermediate_size"), Some(22016))?,
        num_layers: get_usize(o, "num_hidden_layers", &f("num_hidden_layers"), Some(32))?,
        num_heads,
        num_kv_heads: opt_usize(o, "num_key_value_heads", &f("num_key_value_heads"))?
            .unwrap_or(num_heads),
        rms_norm_eps: get_f64(o, "rms_norm_eps", &f("rms_norm_eps"), Some(1e-6))?,
        rope_theta: rope_theta(o, at, 10000.0)?,
    })
}

pub(super) fn native_text_config(o: &Map<String, Value>) -> Result<TextConfig> {
    let at = "text_config";
    let f = |name: &str| format!("{at}.{name}");
    let num_layers = get_usize(o, "num_hidden_layers", &f("num_hidden_layers"), Some(32))?;
    let sparse_layers = match o.get("mlp_layer_types") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v.as_str() {
                Some("dense") => Ok(false),
                Some("sparse") => Ok(true),
                _ => Err(cfg_err(
                    &f("mlp_layer_types"),
                    &format!("expected \"dense\" or \"sparse\", found {v}"),
                )),
            })
            .collect::<Result<Vec<_>>>()?,
        Some(Value::Null) | None => {
            let dense = get_usize(
                o,
                "first_k_dense_replace",
                &f("first_k_dense_replace"),
                Some(1),
            )?;
            (0..num_layers).map(|i| i >= dense).collect()
        }
        Some(other) => {
            return Err(cfg_err(
                &f("mlp_layer_types"),
                &format!("expected a list, found {other}"),
            ))
        }
    };
    text_config(o, at, num_layers, sparse_layers, (1, 2))
}

pub(super) fn official_text_config(o: &Map<String, Value>) -> Result<TextConfig> {
    let at = "<top level>";
    if get_bool(o, "use_mla", "use_mla", Some(false))? {
        return Err(EngineError::UnsupportedConfig {
            field: "use_mla".into(),
            value: "true".into(),
            hint:
                "DeepSeek-OCR-2 uses plain multi-head attention; MLA checkpoints are not supported"
                    .into(),
        });
    }
    let num_layers = get_usize(o, "num_hidden_layers", "num_hidden_layers", Some(30))?;
    let dense = get_usize(o, "first_k_dense_replace", "first_k_dense_replace", Some(0))?;
    let freq = get_usize(o, "moe_layer_freq", "moe_layer_freq", Some(1))?.max(1);
    let has_experts = opt_usize(o, "n_routed_experts", "n_routed_experts")?.is_some();
    let sparse_layers = (0..num_layers)
        .map(|i| has_experts && i >= dense && i % freq == 0)
        .collect();
    expect_str(o, "scoring_func", "scoring_func", "softmax")?;
    if let Some(Value::Object(_)) = o.get("rope_scaling") {
        return Err(EngineError::UnsupportedConfig {
            field: "rope_scaling".into(),
            value: "an object".into(),
            hint: "only the default RoPE of DeepSeek-OCR-2 is implemented".into(),
        });
    }
    text_config(o, at, num_layers, sparse_layers, (100000, 100001))
}

/// The LM fields common to both shapes; `default_ids` are the (bos, eos) defaults of the respective config class.
fn text_config(
    o: &Map<String, Value>,
    at: &str,
    num_layers: usize,
    sparse_layers: Vec<bool>,
    default_ids: (u32, u32),
) -> Result<TextConfig> {
    let f = |name: &str| {
        if at.starts_with('<') {
            name.to_string()
        } else {
            format!("{at}.{name}")
        }
    };
    let num_heads = get_usize(
        o,
        "num_attention_heads",
        &f("num_attention_heads"),
        Some(32),
    )?;
    let topk_method = o
        .get("topk_method")
        .and_then(Value::as_str)
        .unwrap_or("greedy");
    if topk_method != "greedy" {
        return Err(EngineError::UnsupportedConfig {
            field: f("topk_method"),
            value: format!("{topk_method:?}"),
            hint: "DeepSeek-OCR-2 routes with plain top-k (\"greedy\")".into(),
        });
    }
    expect_str(o, "hidden_act", &f("hidden_act"), "silu")?;
    expect_bool(o, "attention_bias", &f("attention_bias"), false)?;
    expect_bool(o, "mlp_bias", &f("mlp_bias"), false)?;
    if get_bool(
        o,
        "tie_word_embeddings",
        &f("tie_word_embeddings"),
        Some(false),
    )? {
        return Err(EngineError::UnsupportedConfig {
            field: f("tie_word_embeddings"),
            value: "true".into(),
            hint: "DeepSeek-OCR-2 has a separate lm_head".into(),
        });
    }
    Ok(TextConfig {
        vocab_size: get_usize(o, "vocab_size", &f("vocab_size"), Some(102400))?,
        hidden_size: get_usize(o, "hidden_size", &f("hidden_size"), Some(4096))?,
        intermediate_size: get_usize(o, "intermediate_size", &f("intermediate_size"), Some(11008))?,
        moe_intermediate_size: get_usize(
            o,
            "moe_intermediate_size",
            &f("moe_intermediate_size"),
            Some(1407),
        )?,
        num_layers,
        num_heads,
        num_kv_heads: opt_usize(o, "num_key_value_heads", &f("num_key_value_heads"))?
            .unwrap_or(num_heads),
        n_routed_experts: opt_usize(o, "n_routed_experts", &f("n_routed_experts"))?.unwrap_or(64),
        n_shared_experts: opt_usize(o, "n_shared_experts", &f("n_shared_experts"))?.unwrap_or(0),
        num_experts_per_tok: opt_usize(o, "num_experts_per_tok", &f("num_experts_per_tok"))?
            .unwrap_or(1),
        routed_scaling_factor: get_f64(
            o,
            "routed_scaling_factor",
            &f("routed_scaling_factor"),
            Some(1.0),
        )?,
        norm_topk_prob: get_bool(o, "norm_topk_prob", &f("norm_topk_prob"), Some(false))?,
        sparse_layers,
        rms_norm_eps: get_f64(o, "rms_norm_eps", &f("rms_norm_eps"), Some(1e-6))?,
        rope_theta: rope_theta(o, at, 10000.0)?,
        max_position_embeddings: get_usize(
            o,
            "max_position_embeddings",
            &f("max_position_embeddings"),
            Some(2048),
        )?,
        bos_token_id: get_u32(o, "bos_token_id", &f("bos_token_id"), Some(default_ids.0))?,
        eos_token_id: first_id(o, "eos_token_id", &f("eos_token_id"), default_ids.1)?,
    })
}

/// `rope_parameters: {rope_type, rope_theta}` (transformers 5) or a legacy top-level `rope_theta`.
fn rope_theta(o: &Map<String, Value>, at: &str, default: f64) -> Result<f64> {
    if let Some(params) = obj(o, "rope_parameters")? {
        let field = format!("{at}.rope_parameters");
        let kind = params
            .get("rope_type")
            .and_then(Value::as_str)
            .unwrap_or("default");
        if kind != "default" {
            return Err(EngineError::UnsupportedConfig {
                field: format!("{field}.rope_type"),
                value: format!("{kind:?}"),
                hint: "only the default RoPE of DeepSeek-OCR-2 is implemented".into(),
            });
        }
        return get_f64(
            params,
            "rope_theta",
            &format!("{field}.rope_theta"),
            Some(default),
        );
    }
    get_f64(o, "rope_theta", &format!("{at}.rope_theta"), Some(default))
}
