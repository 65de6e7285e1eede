//! A SwiGLU MLP's weights as the MoE kernels take them: dense in the activations' dtype, or int8 rows.

use candle_core::{DType, Tensor};

use super::buffers::address;
use crate::error::Result;
use crate::quant::Int8Matrix;

/// A SwiGLU MLP's weights: gate and up fused as (2I, H), gate rows first, and down (H, I).
#[derive(Clone, Copy)]
pub enum Mlp<'a> {
    /// In the activations' dtype; stacked along a leading expert dimension for routed experts.
    Dense {
        gate_up: &'a Tensor,
        down: &'a Tensor,
    },
    /// int8 rows: one MLP's matrices, or a layer's routed experts stacked as the dense ones are.
    Int8 {
        gate_up: &'a Int8Matrix,
        down: &'a Int8Matrix,
    },
}

impl Mlp<'_> {
    /// I: the rows of gate (and of up).
    pub(super) fn inter(&self) -> Result<usize> {
        Ok(match self {
            Mlp::Dense { gate_up, .. } => gate_up.dim(gate_up.rank() - 2)? / 2,
            Mlp::Int8 { gate_up, .. } => gate_up.dims()[gate_up.dims().len() - 2] / 2,
        })
    }

    /// The routed experts' count (a stack's leading dim).
    pub(super) fn experts(&self) -> Result<usize> {
        Ok(match self {
            Mlp::Dense { gate_up, .. } => gate_up.dim(0)?,
            Mlp::Int8 { gate_up, .. } => gate_up.dims()[0],
        })
    }

    /// The addresses the column kernels take for gate_up and down.
    pub(super) fn addresses(&self) -> Result<(u64, u64)> {
        Ok(match self {
            Mlp::Dense { gate_up, down } => (address(gate_up)?, address(down)?),
            Mlp::Int8 { gate_up, down } => (address(gate_up.rows())?, address(down.rows())?),
        })
    }

    pub(super) fn is_int8(&self) -> bool {
        matches!(self, Mlp::Int8 { .. })
    }

    /// gate_up and down in `dtype`: as they are, or int8 dequantized for one product.
    pub(super) fn dense(&self, dtype: DType) -> Result<(Tensor, Tensor)> {
        Ok(match self {
            Mlp::Dense { gate_up, down } => ((*gate_up).clone(), (*down).clone()),
            Mlp::Int8 { gate_up, down } => (gate_up.dequantize(dtype)?, down.dequantize(dtype)?),
        })
    }
}
