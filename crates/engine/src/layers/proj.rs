//! A projection `x · Wᵀ (+ b)` whose weights are as loaded, or int8 (opt-in, made by `crate::quant`).

use std::sync::Arc;

use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{DType, Module, Tensor};
use candle_nn::Linear;

use crate::error::{EngineError, Result};
use crate::quant::Int8Weights;

#[derive(Debug, Clone)]
pub enum Proj {
    /// In the model's dtype: every path reads these, the fused decode kernels included.
    Dense(Linear),
    /// int8 weights (candle's Q8_0: blocks of 32 with an f16 scale), no bias; stock candle ops only.
    Int8(Arc<QTensor>),
}

impl Proj {
    /// The weights in the model's dtype, which the fused kernels read; an error for int8 weights.
    pub fn dense(&self) -> Result<&Linear> {
        match self {
            Proj::Dense(linear) => Ok(linear),
            Proj::Int8(_) => Err(int8_not_fused()),
        }
    }

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
            // f32 activations, which every one of candle's quantized paths takes (its CUDA fast paths also take
            // bf16, its fallbacks and the CPU's do not); they are quantized to 8 bits inside.
            Proj::Int8(weights) => QMatMul::QTensor(weights.clone())
                .forward(&x.to_dtype(DType::F32)?.contiguous()?)?
                .to_dtype(x.dtype()),
        }
    }
}

/// The fused kernels read weights in the model's dtype only.
pub(crate) fn int8_not_fused() -> EngineError {
    EngineError::Input(
        "int8 weights run on the stock candle ops, not the fused decode kernels".into(),
    )
}
