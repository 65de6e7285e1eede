//! A MoE layer's routed experts in int8, each a matrix of its own, run on the experts its tokens chose.
//!
//! Not stacked for candle's indexed MoE kernel (`QTensor::indexed_moe_forward`): in candle 0.11.1 that kernel
//! steps from one expert to the next by `n·k/256` blocks whatever the block size, right for the 256-weight
//! k-quants but not for Q8_0's 32, so every expert but the first read another's rows (docs/benchmarks.md).

use std::sync::Arc;

use candle_core::quantized::QTensor;
use candle_core::{DType, Device, Tensor, D};

use super::Int8Weights;
use crate::error::Result;
use crate::layers::proj::dequantize;

#[derive(Debug, Clone)]
pub struct Int8Experts {
    /// Each expert's (gate_up (2I, H), down (H, I)).
    experts: Vec<(Arc<QTensor>, Arc<QTensor>)>,
    /// On a GPU, the experts' gate_up and down matrices by device address, in expert order: what the fused
    /// decode kernels look an expert up in.
    tables: Option<(Tensor, Tensor)>,
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
        let experts: Vec<_> = (0..gate_up.dim(0)?)
            .map(|e| {
                Ok((
                    int8.matrix(&format!("{name}.{e}.gate_up"), &gate_up.get(e)?)?,
                    int8.matrix(&format!("{name}.{e}.down"), &down.get(e)?)?,
                ))
            })
            .collect::<Result<_>>()?;
        let tables = match gate_up.device() {
            device @ Device::Cuda(_) => Some((
                address_table(experts.iter().map(|(gate_up, _)| gate_up), device)?,
                address_table(experts.iter().map(|(_, down)| down), device)?,
            )),
            _ => None,
        };
        Ok(Some(Int8Experts { experts, tables }))
    }

    /// How many experts.
    pub fn count(&self) -> usize {
        self.experts.len()
    }

    /// The first expert's (gate_up, down): the shapes every expert has.
    pub fn first(&self) -> Option<(&QTensor, &QTensor)> {
        self.experts.first().map(|(g, d)| (g.as_ref(), d.as_ref()))
    }

    /// On a GPU, the experts' gate_up and down matrices by device address (i64), in expert order.
    pub fn tables(&self) -> Option<(&Tensor, &Tensor)> {
        self.tables.as_ref().map(|(g, d)| (g, d))
    }

    /// Expert `e`'s SwiGLU on its tokens `xs` (n, H) → (n, H), weight-only (as [`crate::layers::proj::Proj`]);
    /// `intermediate` is I.
    pub fn expert(&self, e: usize, xs: &Tensor, intermediate: usize) -> Result<Tensor> {
        let (gate_up, down) = &self.experts[e];
        let gate_up = xs.matmul(&dequantize(gate_up, xs.dtype())?.t()?)?;
        let gate = gate_up.narrow(D::Minus1, 0, intermediate)?;
        let up = gate_up.narrow(D::Minus1, intermediate, intermediate)?;
        let act = (candle_nn::ops::silu(&gate)? * up)?;
        Ok(act.matmul(&dequantize(down, xs.dtype())?.t()?)?)
    }

    /// Every expert dequantized to `dtype` and stacked: gate_up (E, 2I, H) and down (E, H, I).
    pub fn dequantized(&self, dtype: DType) -> Result<(Tensor, Tensor)> {
        let stack = |pick: fn(&(Arc<QTensor>, Arc<QTensor>)) -> &QTensor| {
            let each = self
                .experts
                .iter()
                .map(|pair| dequantize(pick(pair), dtype))
                .collect::<candle_core::Result<Vec<_>>>()?;
            Ok::<_, crate::error::EngineError>(Tensor::stack(&each, 0)?)
        };
        Ok((stack(|(g, _)| g)?, stack(|(_, d)| d)?))
    }
}

/// The device addresses of `matrices`, as a tensor on `device`.
fn address_table<'a>(
    matrices: impl Iterator<Item = &'a Arc<QTensor>>,
    device: &Device,
) -> Result<Tensor> {
    let addresses = matrices
        .map(|q| Ok(q.device_ptr()? as i64))
        .collect::<Result<Vec<i64>>>()?;
    Ok(Tensor::new(addresses, device)?)
}
