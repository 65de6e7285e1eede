//! A MoE layer's routed experts in int8: each expert quantized as a matrix of its own (so named in the
//! cache), held as one stack in our row layout that the fused kernels index by expert.
//!
//! Not candle's indexed MoE kernel (`QTensor::indexed_moe_forward`): in candle 0.11.1 it steps from one expert
//! to the next by `n·k/256` blocks whatever the block size, right for the 256-weight k-quants but not for
//! Q8_0's 32, so every expert but the first read another's rows (docs/benchmarks.md).

use candle_core::{DType, Tensor, D};

use super::{Int8Matrix, Int8Weights};
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct Int8Experts {
    /// gate_up (E, 2I, H): each expert's gate rows, then its up rows.
    pub gate_up: Int8Matrix,
    /// down (E, H, I).
    pub down: Int8Matrix,
}

impl Int8Experts {
    /// The int8 form of the stacked `gate_up` (E, 2I, H) and `down` (E, H, I), expert e's named
    /// `{name}.{e}.gate_up` and `{name}.{e}.down` in `int8`. None when a row does not split into whole blocks.
    pub fn new(
        int8: &mut Int8Weights,
        name: &str,
        gate_up: &Tensor,
        down: &Tensor,
    ) -> Result<Option<Self>> {
        if !(int8.fits(gate_up)? && int8.fits(down)?) {
            return Ok(None);
        }
        Ok(Some(Int8Experts {
            gate_up: int8.stack(gate_up, |e| format!("{name}.{e}.gate_up"))?,
            down: int8.stack(down, |e| format!("{name}.{e}.down"))?,
        }))
    }

    /// Expert `e`'s SwiGLU on its tokens `xs` (n, H) → (n, H), weight-only (as [`crate::layers::proj::Proj`]);
    /// `intermediate` is I.
    pub fn expert(&self, e: usize, xs: &Tensor, intermediate: usize) -> Result<Tensor> {
        let gate_up = xs.matmul(&self.gate_up.get(e)?.dequantize(xs.dtype())?.t()?)?;
        let gate = gate_up.narrow(D::Minus1, 0, intermediate)?;
        let up = gate_up.narrow(D::Minus1, intermediate, intermediate)?;
        let act = (candle_nn::ops::silu(&gate)? * up)?;
        Ok(act.matmul(&self.down.get(e)?.dequantize(xs.dtype())?.t()?)?)
    }

    /// Every expert dequantized to `dtype`, stacked as loaded: gate_up (E, 2I, H) and down (E, H, I).
    pub fn dequantized(&self, dtype: DType) -> Result<(Tensor, Tensor)> {
        Ok((
            self.gate_up.dequantize(dtype)?,
            self.down.dequantize(dtype)?,
        ))
    }
}
