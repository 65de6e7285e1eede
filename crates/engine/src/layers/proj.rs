//! A projection `x · Wᵀ (+ b)` whose weights are as loaded, or int8 (opt-in, made by `crate::quant`).

use candle_core::{DType, Module, Tensor};
use candle_nn::Linear;

use crate::error::Result;
use crate::quant::{Int8Matrix, Int8Weights};

/// What a pass over a model's projections makes of each one, given its name.
pub type ProjectionPass<'a> = &'a mut dyn FnMut(&str, &Proj) -> Result<Proj>;

#[derive(Debug, Clone)]
pub enum Proj {
    /// In the model's dtype.
    Dense(Linear),
    /// int8 weights (a scale per block of 32, in our row layout), no bias.
    Int8(Int8Matrix),
}

impl Proj {
    /// The same projection with int8 weights named `name` in `int8`. One with a bias, or whose input width
    /// is not a whole number of Q8_0 blocks, stays as it is.
    pub fn to_int8(&self, int8: &mut Int8Weights, name: &str) -> Result<Proj> {
        match self {
            Proj::Dense(linear) if linear.bias().is_none() && int8.fits(linear.weight())? => {
                Ok(Proj::Int8(int8.matrix(name, linear.weight())?))
            }
            _ => Ok(self.clone()),
        }
    }

    /// The same projection with its int8 weights dequantized to `dtype`: what int8 rounding alone does to
    /// the model, without int8 kernels (a check's oracle).
    pub fn dequantized(&self, dtype: DType) -> Result<Proj> {
        Ok(match self {
            Proj::Int8(q) => Proj::Dense(Linear::new(q.dequantize(dtype)?, None)),
            dense => dense.clone(),
        })
    }
}

impl From<Linear> for Proj {
    fn from(linear: Linear) -> Self {
        Proj::Dense(linear)
    }
}

impl Module for Proj {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Proj::Dense(linear) => linear.forward(x),
            // Weight-only, as the fused decode kernels compute: the weights dequantized to the activations'
            // dtype for this product, the activations as they are. (candle's quantized matmul would quantize
            // the activations to 8 bits too; docs/benchmarks.md.)
            Proj::Int8(weights) => {
                let dense = weights
                    .dequantize(x.dtype())
                    .map_err(candle_core::Error::wrap)?;
                Linear::new(dense, None).forward(x)
            }
        }
    }
}
