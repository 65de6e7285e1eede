//! A MoE layer's routed experts in int8, each a matrix of its own, run on the experts its tokens chose.
//!
//! Not stacked for candle's indexed MoE kernel (`QTensor::indexed_moe_forward`): in candle 0.11.1 that kernel
//! steps from one expert to the next by `n·k/256` blocks whatever the block size, right for the 256-weight
//! k-quants but not for Q8_0's 32, so every expert but the first read another's rows (docs/benchmarks.md).

use std::sync::Arc;

use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{DType, Module, Tensor, D};

use super::Int8Weights;
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct Int8Experts {
    /// Each expert's (gate_up (2I, H), down (H, I)).
    experts: Vec<(Arc<QTensor>, Arc<QTensor>)>,
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
        let experts = (0..gate_up.dim(0)?)
            .map(|e| {
                Ok((
                    int8.matrix(&format!("{name}.{e}.gate_up"), &gate_up.get(e)?)?,
                    int8.matrix(&format!("{name}.{e}.down"), &down.get(e)?)?,
                ))
            })
            .collect::<Result<_>>()?;
        Ok(Some(Int8Experts { experts }))
    }

    /// Expert `e`'s SwiGLU on its tokens `xs` (n, H) → (n, H) f32; `intermediate` is I.
    pub fn expert(&self, e: usize, xs: &Tensor, intermediate: usize) -> Result<Tensor> {
        let (gate_up, down) = &self.experts[e];
        let gate_up = QMatMul::QTensor(gate_up.clone()).forward(&xs.to_dtype(DType::F32)?)?;
        let gate = gate_up.narrow(D::Minus1, 0, intermediate)?;
        let up = gate_up.narrow(D::Minus1, intermediate, intermediate)?;
        let act = (candle_nn::ops::silu(&gate)? * up)?;
        Ok(QMatMul::QTensor(down.clone()).forward(&act)?)
    }
}
