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
