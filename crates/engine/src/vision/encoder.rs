//! "DeepEncoder V2": a Qwen2-shaped transformer run over `[N image tokens ‖ N learned queries]` under the
//! causal-flow mask; only the query outputs are kept (spec §1.3, §7.5–7.6).

use std::sync::OnceLock;

use candle_core::{DType, Device, Module, Tensor};

use super::dense::{After, Dense};
use crate::config::EncoderConfig;
use crate::error::{EngineError, Result};
use crate::layers::mlp::SwiGlu;
use crate::layers::norm::RmsNorm;
use crate::layers::rope::{split_heads, Rotary};
use crate::layers::{repeat_kv, softmax_f32};
use crate::weights::Weights;

const PREFIX: &str = "vision_tower.vision_encoder";
/// Queries of a 768² tile's view and of the 1024² global view.
const QUERIES_768: usize = 144;
const QUERIES_1024: usize = 256;

#[derive(Debug, Clone)]
struct EncoderLayer {
    input_norm: RmsNorm,
    /// q, k and v stacked, with their biases.
    qkv_proj: Dense,
    o_proj: Dense,
    post_norm: RmsNorm,
    mlp: SwiGlu,
}

impl EncoderLayer {
    fn load(w: &Weights, i: usize, cfg: &EncoderConfig) -> Result<Self> {
        let p = format!("{PREFIX}.layers.{i}");
        let (h, hd) = (cfg.hidden_size, cfg.head_dim());
        Ok(Self {
            input_norm: RmsNorm::load(w, &format!("{p}.input_layernorm"), h, cfg.rms_norm_eps)?,
            qkv_proj: Dense::stacked(
                w,
                &[
                    (&format!("{p}.self_attn.q_proj"), cfg.num_heads * hd),
                    (&format!("{p}.self_attn.k_proj"), cfg.num_kv_heads * hd),
                    (&format!("{p}.self_attn.v_proj"), cfg.num_kv_heads * hd),
                ],
                h,
                true,
            )?,
            o_proj: Dense::load(
                w,
                &format!("{p}.self_attn.o_proj"),
                cfg.num_heads * hd,
                h,
                false,
            )?,
            post_norm: RmsNorm::load(
                w,
                &format!("{p}.post_attention_layernorm"),
                h,
                cfg.rms_norm_eps,
            )?,
            mlp: SwiGlu::load(w, &format!("{p}.mlp"), h, cfg.intermediate_size)?,
        })
    }

    fn forward(&self, x: &Tensor, cfg: &EncoderConfig, view: &ViewQueries) -> Result<Tensor> {
        let (b, t, _) = x.dims3()?;
        let hd = cfg.head_dim();
        let qkv = self
            .qkv_proj
            .forward(&self.input_norm.forward(x)?, After::Nothing)?;
        let heads = (cfg.num_heads, cfg.num_kv_heads, hd);
        let (q, k, v) = split_heads(&qkv, heads, &view.cos, &view.sin)?;
        let scale = (hd as f64).powf(-0.5);
        let attn = match fused_attention(&q, &k, &v, scale, t / 2)? {
            Some(attn) => attn,
            None => {
                let n_rep = cfg.num_heads / cfg.num_kv_heads;
                let (k, v) = (repeat_kv(k, n_rep)?, repeat_kv(v.contiguous()?, n_rep)?);
                let scores = (q.matmul(&k.t()?)? * scale)?.broadcast_add(view.mask(x)?)?;
                softmax_f32(&scores)?.matmul(&v)?.transpose(1, 2)?
            }
        };
        let attn = attn.reshape((b, t, cfg.num_heads * hd))?;
        let x = self.o_proj.forward(&attn, After::Residual(x))?;
        let mlp = self.mlp.forward(&self.post_norm.forward(&x)?)?;
        Ok((x + mlp)?)
    }
}

/// What a view of n image tokens brings besides its features: the learned queries for n, RoPE over the 2n
/// positions (built at load: an upload mid-pass would wait for the GPU), and the causal-flow mask, built on
/// first use, which flash attention never needs.
#[derive(Debug, Clone)]
struct ViewQueries {
    queries: Tensor,
    cos: Tensor,
    sin: Tensor,
    mask: OnceLock<Tensor>,
}

impl ViewQueries {
    fn load(w: &Weights, name: &str, n: usize, cfg: &EncoderConfig) -> Result<Self> {
        let queries = w.get(name, &[n, cfg.hidden_size])?;
        let rotary = Rotary::new(cfg.rope_theta, cfg.head_dim(), w.device(), w.dtype());
        // RoPE positions are plain 0..2N−1 over the concatenation, although image attention is bidirectional.
        // Every view shares them: 2-D cos/sin broadcast over the batch.
        let (cos, sin) = rotary.cos_sin(&[(0..2 * n).collect()])?;
        Ok(Self {
            queries,
            cos: cos.squeeze(0)?,
            sin: sin.squeeze(0)?,
            mask: OnceLock::new(),
        })
    }

    /// The (2N, 2N) mask in `x`'s dtype and device.
    fn mask(&self, x: &Tensor) -> Result<&Tensor> {
        if let Some(mask) = self.mask.get() {
            return Ok(mask);
        }
        let mask = causal_flow_mask(self.queries.dim(0)?, x.device(), x.dtype())?;
        Ok(self.mask.get_or_init(|| mask))
    }
}

/// The encoder with its two learned query sets.
#[derive(Debug, Clone)]
pub struct VisionEncoder {
    cfg: EncoderConfig,
    layers: Vec<EncoderLayer>,
    norm: RmsNorm,
    /// 12×12 queries for 768² tiles, 16×16 for the 1024² global view.
    views_768: ViewQueries,
    views_1024: ViewQueries,
}

impl VisionEncoder {
    pub fn load(w: &Weights, cfg: &EncoderConfig) -> Result<Self> {
        let h = cfg.hidden_size;
        Ok(Self {
            layers: (0..cfg.num_layers)
                .map(|i| EncoderLayer::load(w, i, cfg))
                .collect::<Result<_>>()?,
            norm: RmsNorm::load(w, &format!("{PREFIX}.norm"), h, cfg.rms_norm_eps)?,
            views_768: ViewQueries::load(
                w,
                "vision_tower.query_768_resolution.weight",
                QUERIES_768,
                cfg,
            )?,
            views_1024: ViewQueries::load(
                w,
                "vision_tower.query_1024_resolution.weight",
                QUERIES_1024,
                cfg,
            )?,
            cfg: cfg.clone(),
        })
    }

    /// SAM features (B, D, h, w) → query outputs (B, N, D), N = h·w, after the final RMSNorm.
    pub fn forward(&self, features: &Tensor) -> Result<Tensor> {
        let (b, d, h, w) = features.dims4()?;
        let n = h * w;
        // As transformers does: up to 144 image tokens use the 768² table, more use the 1024² one.
        let view = match n {
            QUERIES_768 => &self.views_768,
            QUERIES_1024 => &self.views_1024,
            _ => {
                return Err(EngineError::Input(format!(
                    "a view gave {n} vision tokens; DeepSeek-OCR-2 has learned queries only for 144 (768² tile) \
                     and 256 (1024² global view)"
                )))
            }
        };
        // Image tokens in raster order (row-major over h then w), then the queries.
        let tokens = features.flatten_from(2)?.transpose(1, 2)?;
        let queries = view.queries.unsqueeze(0)?.expand((b, n, d))?;
        let mut x = Tensor::cat(&[&tokens, &queries], 1)?.contiguous()?;
        for layer in &self.layers {
            x = layer.forward(&x, &self.cfg, view)?;
        }
        let x = self.norm.forward(&x)?;
        Ok(x.narrow(1, n, n)?.contiguous()?)
    }
}

/// The causal-flow attention through flash attention (the first `image_tokens` keys visible to all, the
/// rest causal): (B, T, heads, hd), or None where it does not run.
#[cfg(feature = "cuda")]
fn fused_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    scale: f64,
    image_tokens: usize,
) -> Result<Option<Tensor>> {
    use crate::kernels::{flash_attention, Visibility};
    let visibility = Visibility::PrefixThenCausal(image_tokens);
    flash_attention(q, k, v, None, scale, visibility)
}

#[cfg(not(feature = "cuda"))]
fn fused_attention(
    _q: &Tensor,
    _k: &Tensor,
    _v: &Tensor,
    _scale: f64,
    _image_tokens: usize,
) -> Result<Option<Tensor>> {
    Ok(None)
}

/// Additive (2N, 2N) mask: image tokens see all image tokens and no query; query j sees all image tokens and
/// queries 0..=j (spec §7.5). Not the LM's causal mask.
pub fn causal_flow_mask(n: usize, device: &Device, dtype: DType) -> Result<Tensor> {
    let t = 2 * n;
    let mut m = vec![0f32; t * t];
    for i in 0..t {
        for j in 0..t {
            let allowed = j < n || (i >= n && j <= i);
            if !allowed {
                m[i * t + j] = f32::NEG_INFINITY;
            }
        }
    }
    Ok(Tensor::from_vec(m, (t, t), device)?.to_dtype(dtype)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tokens_do_not_see_queries_and_queries_are_causal() {
        let m = causal_flow_mask(3, &Device::Cpu, DType::F32)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        let open = |i: usize, j: usize| m[i][j] == 0.0;
        assert!(open(0, 2) && open(2, 0), "image tokens are bidirectional");
        assert!(!open(0, 3) && !open(2, 5), "image tokens never see queries");
        assert!(open(3, 0) && open(5, 2), "queries see every image token");
        assert!(
            open(4, 3) && open(4, 4) && !open(4, 5),
            "queries are causal among themselves"
        );
    }
}
