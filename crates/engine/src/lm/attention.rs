//! LM self-attention: plain multi-head attention (`use_mla: false` selects LlamaAttention), no biases,
//! rotate-half RoPE, a causal mask over the whole sequence, image tokens included (spec §1.5, §7.8).

use candle_core::{Module, Tensor};
use candle_nn::Linear;

use super::kv_cache::SequenceCache;
use crate::config::TextConfig;
use crate::error::Result;
use crate::layers::rope::Rotary;
use crate::layers::{linear, repeat_kv, softmax_f32};
use crate::weights::Weights;

#[derive(Debug, Clone)]
pub struct TextAttention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    num_heads: usize,
    num_kv_heads: usize,
    head_dim: usize,
    layer: usize,
}

impl TextAttention {
    pub fn load(w: &Weights, prefix: &str, layer: usize, cfg: &TextConfig) -> Result<Self> {
        let (h, hd) = (cfg.hidden_size, cfg.head_dim());
        Ok(Self {
            q_proj: linear(w, &format!("{prefix}.q_proj"), h, cfg.num_heads * hd, false)?,
            k_proj: linear(
                w,
                &format!("{prefix}.k_proj"),
                h,
                cfg.num_kv_heads * hd,
                false,
            )?,
            v_proj: linear(
                w,
                &format!("{prefix}.v_proj"),
                h,
                cfg.num_kv_heads * hd,
                false,
            )?,
            o_proj: linear(w, &format!("{prefix}.o_proj"), cfg.num_heads * hd, h, false)?,
            num_heads: cfg.num_heads,
            num_kv_heads: cfg.num_kv_heads,
            head_dim: hd,
            layer,
        })
    }

    /// `x`: (B, T, H), one row per sequence; `cos`/`sin`: (B, T, d/2) at each row's positions; `caches[b]` is
    /// row b's cache. The projections run batched; the attention itself runs per sequence over its own cache,
    /// since the sequences have different lengths.
    pub fn forward(
        &self,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        caches: &mut [&mut SequenceCache],
    ) -> Result<Tensor> {
        let (b, t, _) = x.dims3()?;
        let hd = self.head_dim;
        let heads = |proj: &Linear, n: usize| -> Result<Tensor> {
            Ok(proj
                .forward(x)?
                .reshape((b, t, n, hd))?
                .transpose(1, 2)?
                .contiguous()?)
        };
        let q = Rotary::apply(&heads(&self.q_proj, self.num_heads)?, cos, sin)?;
        let k = Rotary::apply(&heads(&self.k_proj, self.num_kv_heads)?, cos, sin)?;
        let v = heads(&self.v_proj, self.num_kv_heads)?;
        let n_rep = self.num_heads / self.num_kv_heads;
        let scale = (hd as f64).powf(-0.5);
        let mut outs = Vec::with_capacity(b);
        for (row, cache) in caches.iter_mut().enumerate() {
            let past = cache.layers[self.layer].len();
            let (ks, vs) =
                cache.layers[self.layer].append(&k.narrow(0, row, 1)?, &v.narrow(0, row, 1)?)?;
            let (ks, vs) = (repeat_kv(ks, n_rep)?, repeat_kv(vs, n_rep)?);
            let scores = (q.narrow(0, row, 1)?.matmul(&ks.t()?)? * scale)?;
            let scores = if t > 1 {
                scores.broadcast_add(&causal_mask(t, past, &scores)?)?
            } else {
                scores
            };
            outs.push(softmax_f32(&scores)?.matmul(&vs)?);
        }
        let out = Tensor::cat(&outs, 0)?
            .transpose(1, 2)?
            .reshape((b, t, self.num_heads * hd))?;
        Ok(self.o_proj.forward(&out)?)
    }
}

/// (T, past + T) additive mask: query i (at position past + i) sees keys 0..=past + i.
fn causal_mask(t: usize, past: usize, like: &Tensor) -> Result<Tensor> {
    let total = past + t;
    let mask: Vec<f32> = (0..t)
        .flat_map(|i| {
            (0..total).map(move |j| {
                if j <= past + i {
                    0.0
                } else {
                    f32::NEG_INFINITY
                }
            })
        })
        .collect();
    Ok(Tensor::from_vec(mask, (t, total), like.device())?.to_dtype(like.dtype())?)
}
