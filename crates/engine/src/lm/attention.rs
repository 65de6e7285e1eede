//! LM self-attention: plain multi-head attention (`use_mla: false` selects LlamaAttention), no biases,
//! rotate-half RoPE, a causal mask over the whole sequence, image tokens included (spec §1.5, §7.8).

use std::cell::OnceCell;

use candle_core::{DType, Device, Module, Tensor};

use super::kv_cache::SequenceCache;
use crate::config::TextConfig;
use crate::error::{EngineError, Result};
use crate::layers::proj::{Proj, ProjectionPass};
use crate::layers::rope::split_heads;
use crate::layers::{linear, repeat_kv, softmax_f32, stacked_linear};
use crate::weights::Weights;

/// q, k and v are stacked into one projection at load: rows [q heads | k heads | v heads].
#[derive(Debug, Clone)]
pub struct TextAttention {
    qkv_proj: Proj,
    o_proj: Proj,
    num_heads: usize,
    num_kv_heads: usize,
    head_dim: usize,
    layer: usize,
}

impl TextAttention {
    pub fn load(w: &Weights, prefix: &str, layer: usize, cfg: &TextConfig) -> Result<Self> {
        let (h, hd) = (cfg.hidden_size, cfg.head_dim());
        let (q, kv) = (cfg.num_heads * hd, cfg.num_kv_heads * hd);
        Ok(Self {
            qkv_proj: stacked_linear(
                w,
                &[
                    (&format!("{prefix}.q_proj"), q),
                    (&format!("{prefix}.k_proj"), kv),
                    (&format!("{prefix}.v_proj"), kv),
                ],
                h,
            )?
            .into(),
            o_proj: linear(w, &format!("{prefix}.o_proj"), cfg.num_heads * hd, h, false)?.into(),
            num_heads: cfg.num_heads,
            num_kv_heads: cfg.num_kv_heads,
            head_dim: hd,
            layer,
        })
    }

    pub fn qkv_proj(&self) -> &Proj {
        &self.qkv_proj
    }

    pub fn o_proj(&self) -> &Proj {
        &self.o_proj
    }

    /// Each projection replaced by what `pass` makes of it, named `{name}.qkv` and `{name}.o`.
    pub fn map_projections(&mut self, name: &str, pass: ProjectionPass<'_>) -> Result<()> {
        self.qkv_proj = pass(&format!("{name}.qkv"), &self.qkv_proj)?;
        self.o_proj = pass(&format!("{name}.o"), &self.o_proj)?;
        Ok(())
    }

    /// (heads, kv heads, head dim).
    pub fn heads(&self) -> (usize, usize, usize) {
        (self.num_heads, self.num_kv_heads, self.head_dim)
    }

    /// `x`: (B, T, H), one row per sequence; `cos`/`sin`: (B, T, d/2) at each row's positions; `caches[b]` is
    /// row b's cache and `masks` the rows' causal masks. The projections run
    /// batched; the attention itself runs per sequence over its own cache, since the sequences have
    /// different lengths.
    pub fn forward(
        &self,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        caches: &mut [&mut SequenceCache],
        masks: &CausalMasks,
    ) -> Result<Tensor> {
        let (b, t, _) = x.dims3()?;
        let hd = self.head_dim;
        let qkv = self.qkv_proj.forward(x)?;
        let (q, k, v) = split_heads(&qkv, self.heads(), cos, sin)?;
        let n_rep = self.num_heads / self.num_kv_heads;
        let scale = (hd as f64).powf(-0.5);
        let mut outs = Vec::with_capacity(b);
        for (row, cache) in caches.iter_mut().enumerate() {
            let (ks, vs) =
                cache.layers[self.layer].append(&k.narrow(0, row, 1)?, &v.narrow(0, row, 1)?)?;
            let q = q.narrow(0, row, 1)?;
            // A prompt (T > 1) through flash attention where it runs; a single step is not worth a launch.
            let fused = match t > 1 {
                true => prompt_attention(&q, &ks, &vs, scale)?,
                false => None,
            };
            let out = match fused {
                Some(out) => out,
                None => {
                    let (ks, vs) = (repeat_kv(ks, n_rep)?, repeat_kv(vs, n_rep)?);
                    let scores = (q.matmul(&ks.t()?)? * scale)?;
                    let scores = match masks.get(row)? {
                        Some(mask) => scores.broadcast_add(mask)?,
                        None => scores,
                    };
                    softmax_f32(&scores)?.matmul(&vs)?.transpose(1, 2)?
                }
            };
            outs.push(out);
        }
        let out = Tensor::cat(&outs, 0)?.reshape((b, t, self.num_heads * hd))?;
        Ok(self.o_proj.forward(&out)?)
    }
}

/// Causal flow attention of one sequence's prompt `q` (1, heads, T, hd) over its cache `ks`/`vs`
/// (1, kv_heads, past + T, hd): (1, T, heads, hd), or None where flash attention does not run.
#[cfg(feature = "cuda")]
fn prompt_attention(q: &Tensor, ks: &Tensor, vs: &Tensor, scale: f64) -> Result<Option<Tensor>> {
    use crate::kernels::{flash_attention, Visibility};
    flash_attention(q, ks, vs, None, scale, Visibility::Causal)
}

#[cfg(not(feature = "cuda"))]
fn prompt_attention(
    _q: &Tensor,
    _ks: &Tensor,
    _vs: &Tensor,
    _scale: f64,
) -> Result<Option<Tensor>> {
    Ok(None)
}

/// The causal masks of one forward pass, a row's built on first use and shared by every layer after. Flash
/// attention needs none, and a prompt's (T × (past + T) values built on the host, then uploaded, which waits for
/// the GPU) cost milliseconds.
pub struct CausalMasks {
    t: usize,
    pasts: Vec<usize>,
    device: Device,
    dtype: DType,
    built: Vec<OnceCell<Tensor>>,
}

impl CausalMasks {
    /// Masks for `t` new positions of rows whose caches hold `pasts[b]` positions before them.
    pub fn new(t: usize, pasts: Vec<usize>, device: &Device, dtype: DType) -> Self {
        let built = pasts.iter().map(|_| OnceCell::new()).collect();
        Self {
            t,
            pasts,
            device: device.clone(),
            dtype,
            built,
        }
    }

    /// Row `row`'s mask ([`causal_mask`]), None for a single position (it sees every key).
    pub fn get(&self, row: usize) -> Result<Option<&Tensor>> {
        if self.t == 1 {
            return Ok(None);
        }
        let (Some(cell), Some(&past)) = (self.built.get(row), self.pasts.get(row)) else {
            return Err(EngineError::Input(format!("no causal mask for row {row}")));
        };
        if let Some(mask) = cell.get() {
            return Ok(Some(mask));
        }
        let mask = causal_mask(self.t, past, &self.device, self.dtype)?;
        Ok(Some(cell.get_or_init(|| mask)))
    }
}

/// (T, past + T) additive mask: query i (at position past + i) sees keys 0..=past + i.
pub fn causal_mask(t: usize, past: usize, device: &Device, dtype: DType) -> Result<Tensor> {
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
    Ok(Tensor::from_vec(mask, (t, total), device)?.to_dtype(dtype)?)
}
