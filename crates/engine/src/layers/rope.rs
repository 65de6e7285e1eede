//! Default rotary position embedding, rotate-half (NeoX) layout over the full head dim.

use candle_core::{DType, Device, Tensor};

use crate::error::Result;

/// The inverse frequencies of one attention stack; cos/sin are built per call for the positions asked for.
#[derive(Debug, Clone)]
pub struct Rotary {
    inv_freq: Vec<f32>,
    device: Device,
    dtype: DType,
}

impl Rotary {
    /// `inv_freq[i] = 1 / theta^(2i/d)`, evaluated in f32 as transformers does.
    pub fn new(theta: f64, head_dim: usize, device: &Device, dtype: DType) -> Self {
        let base = theta as f32;
        let inv_freq = (0..head_dim)
            .step_by(2)
            .map(|i| 1.0 / base.powf(i as f32 / head_dim as f32))
            .collect();
        Self {
            inv_freq,
            device: device.clone(),
            dtype,
        }
    }

    /// cos and sin of `positions[row][t]` in f32, each (rows, T, d/2) row-major.
    pub fn angles(&self, positions: &[Vec<usize>]) -> (Vec<f32>, Vec<f32>) {
        let n = positions.iter().map(Vec::len).sum::<usize>() * self.inv_freq.len();
        let mut cos = Vec::with_capacity(n);
        let mut sin = Vec::with_capacity(n);
        for &p in positions.iter().flatten() {
            for &f in &self.inv_freq {
                let angle = p as f32 * f;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        (cos, sin)
    }

    /// cos and sin of shape (rows, T, d/2) for `positions[row][t]`: built in f32, cast to the activation dtype.
    pub fn cos_sin(&self, positions: &[Vec<usize>]) -> Result<(Tensor, Tensor)> {
        let rows = positions.len();
        let t = positions.first().map_or(0, Vec::len);
        let half = self.inv_freq.len();
        let (cos, sin) = self.angles(positions);
        let cos = Tensor::from_vec(cos, (rows, t, half), &self.device)?.to_dtype(self.dtype)?;
        let sin = Tensor::from_vec(sin, (rows, t, half), &self.device)?.to_dtype(self.dtype)?;
        Ok((cos, sin))
    }

    /// Rotate `x` (B, heads, T, d) with cos/sin from [`Rotary::cos_sin`] (B rows).
    pub fn apply(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        Ok(candle_nn::rotary_emb::rope(&x.contiguous()?, cos, sin)?)
    }
}

/// A fused projection's (B, T, width) rows, heads `[q | k | v]` of (heads, kv heads, head dim) → q and k
/// rotated, and v, each (B, heads, T, hd). On the GPU q and k are rotated straight out of the projection and v
/// stays a strided view of it (flash attention reads strides; other consumers make it contiguous), so no
/// head is copied out first. `cos`/`sin` as [`Rotary::apply`] takes them.
pub fn split_heads(
    qkv: &Tensor,
    (nh, nkv, hd): (usize, usize, usize),
    cos: &Tensor,
    sin: &Tensor,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (b, t, _) = qkv.dims3()?;
    let as_heads = qkv.reshape((b, t, nh + 2 * nkv, hd))?;
    let heads = |first: usize, n: usize| as_heads.narrow(2, first, n)?.transpose(1, 2);
    let v = heads(nh + nkv, nkv)?;
    let fused = (
        fused_rope(qkv, 0, nh, hd, cos, sin)?,
        fused_rope(qkv, nh * hd, nkv, hd, cos, sin)?,
    );
    Ok(match fused {
        (Some(q), Some(k)) => (q, k, v),
        _ => (
            Rotary::apply(&heads(0, nh)?, cos, sin)?,
            Rotary::apply(&heads(nh, nkv)?, cos, sin)?,
            v,
        ),
    })
}

#[cfg(feature = "cuda")]
fn fused_rope(
    qkv: &Tensor,
    first: usize,
    heads: usize,
    head_dim: usize,
    cos: &Tensor,
    sin: &Tensor,
) -> Result<Option<Tensor>> {
    crate::kernels::rope_heads(qkv, first, heads, head_dim, cos, sin)
}

#[cfg(not(feature = "cuda"))]
fn fused_rope(
    _qkv: &Tensor,
    _first: usize,
    _heads: usize,
    _head_dim: usize,
    _cos: &Tensor,
    _sin: &Tensor,
) -> Result<Option<Tensor>> {
    Ok(None)
}
