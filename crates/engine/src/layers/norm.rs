//! Normalisations in the reference's precision order.

use candle_core::{DType, Module, Tensor, D};

use crate::error::Result;
use crate::weights::Weights;

/// Qwen2 / DeepSeek RMSNorm: normalise in f32, cast back to the activation dtype, *then* scale by the weight
/// (the order matters in bf16: candle's fused kernel would scale before the cast).
#[derive(Debug, Clone)]
pub struct RmsNorm {
    weight: Tensor,
    eps: f64,
}

impl RmsNorm {
    pub fn load(w: &Weights, name: &str, dim: usize, eps: f64) -> Result<Self> {
        Ok(Self {
            weight: w.get(&format!("{name}.weight"), &[dim])?,
            eps,
        })
    }

    pub fn weight(&self) -> &Tensor {
        &self.weight
    }

    pub fn eps(&self) -> f64 {
        self.eps
    }
}

impl Module for RmsNorm {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        #[cfg(feature = "cuda")]
        if let Some(normed) =
            crate::kernels::rms_norm(x, &self.weight, self.eps).map_err(to_candle)?
        {
            return Ok(normed);
        }
        let dtype = x.dtype();
        let xf = x.to_dtype(DType::F32)?;
        let variance = xf.sqr()?.mean_keepdim(D::Minus1)?;
        let normed = xf.broadcast_mul(&(variance + self.eps)?.sqrt()?.recip()?)?;
        normed.to_dtype(dtype)?.broadcast_mul(&self.weight)
    }
}

#[cfg(feature = "cuda")]
fn to_candle(e: crate::error::EngineError) -> candle_core::Error {
    candle_core::Error::Msg(e.to_string())
}

/// `nn.LayerNorm(dim, eps)` over the last dim, with weight and bias: a kernel a warp a row on the GPU in bf16,
/// candle's op elsewhere.
#[derive(Debug, Clone)]
pub struct LayerNorm {
    inner: candle_nn::LayerNorm,
}

impl LayerNorm {
    pub fn load(w: &Weights, name: &str, dim: usize, eps: f64) -> Result<Self> {
        let weight = w.get(&format!("{name}.weight"), &[dim])?;
        let bias = w.get(&format!("{name}.bias"), &[dim])?;
        Ok(Self {
            inner: candle_nn::LayerNorm::new(weight, bias, eps),
        })
    }
}

impl Module for LayerNorm {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        #[cfg(feature = "cuda")]
        if let Some(bias) = self.inner.bias() {
            let (weight, eps) = (self.inner.weight(), self.inner.eps());
            if let Some(normed) =
                crate::kernels::layer_norm(x, weight, bias, eps).map_err(to_candle)?
            {
                return Ok(normed);
            }
        }
        self.inner.forward(x)
    }
}
