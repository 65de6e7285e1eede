//! A MoE layer's routed experts in int8. On CUDA they stay stacked, (E, N, K), for candle's indexed MoE kernel,
//! which reads only the experts each token chose; that kernel is CUDA's alone, so elsewhere each expert is a
//! matrix of its own.

use std::borrow::Cow;
use std::sync::Arc;

use candle_core::quantized::{QMatMul, QStorage, QTensor};
use candle_core::{DType, Device, Module, Tensor, D};

use super::{Int8Weights, INT8};
use crate::error::Result;

#[derive(Debug, Clone)]
pub enum Int8Experts {
    /// gate_up (E, 2I, H) and down (E, H, I), on a CUDA device.
    Stacked {
        gate_up: Arc<QTensor>,
        down: Arc<QTensor>,
    },
    /// Each expert's (gate_up (2I, H), down (H, I)).
    Each(Vec<(Arc<QTensor>, Arc<QTensor>)>),
}

impl Int8Experts {
    /// The int8 form of the stacked `gate_up` (E, 2I, H) and `down` (E, H, I), named `{name}.gate_up` and
    /// `{name}.down` in `int8`. None when a row does not split into whole blocks.
    pub fn new(
        int8: &mut Int8Weights,
        name: &str,
        gate_up: &Tensor,
        down: &Tensor,
    ) -> Result<Option<Self>> {
        if !(int8.fits(gate_up)? && int8.fits(down)?) {
            return Ok(None);
        }
        let gate_up = int8.matrix(&format!("{name}.gate_up"), gate_up)?;
        let down = int8.matrix(&format!("{name}.down"), down)?;
        if gate_up.device().is_cuda() {
            return Ok(Some(Int8Experts::Stacked { gate_up, down }));
        }
        let (gate_up, down) = (split_experts(&gate_up)?, split_experts(&down)?);
        Ok(Some(Int8Experts::Each(
            gate_up.into_iter().zip(down).collect(),
        )))
    }

    /// Expert `e`'s SwiGLU on its tokens `xs` (n, H) → (n, H) f32; `intermediate` is I. Only for
    /// [`Int8Experts::Each`]; stacked experts run all at once in [`Int8Experts::forward_chosen`].
    pub fn expert(&self, e: usize, xs: &Tensor, intermediate: usize) -> Result<Option<Tensor>> {
        let Int8Experts::Each(experts) = self else {
            return Ok(None);
        };
        let (gate_up, down) = &experts[e];
        let gate_up = QMatMul::QTensor(gate_up.clone()).forward(&xs.to_dtype(DType::F32)?)?;
        let act = swiglu(&gate_up, intermediate)?;
        Ok(Some(QMatMul::QTensor(down.clone()).forward(&act)?))
    }

    /// Σ_k `weights`[t, k] · expert(`ids`[t, k])(`x`[t]) for `x` (n, H), `ids` (n, k) u32 and `weights`
    /// (n, k) f32, all on the GPU: (n, H) in f32. None unless [`Int8Experts::Stacked`].
    pub fn forward_chosen(
        &self,
        x: &Tensor,
        ids: &Tensor,
        weights: &Tensor,
        intermediate: usize,
    ) -> Result<Option<Tensor>> {
        let Int8Experts::Stacked { gate_up, down } = self else {
            return Ok(None);
        };
        let x = x.to_dtype(DType::F32)?.unsqueeze(1)?.contiguous()?;
        let gate_up = gate_up.indexed_moe_forward(&x, ids)?;
        let act = swiglu(&gate_up, intermediate)?.contiguous()?;
        let y = down.indexed_moe_forward(&act, ids)?;
        Ok(Some(
            y.broadcast_mul(&weights.unsqueeze(D::Minus1)?)?.sum(1)?,
        ))
    }
}

/// silu(gate) · up, where the last dim holds [gate | up], each `intermediate` wide.
fn swiglu(gate_up: &Tensor, intermediate: usize) -> Result<Tensor> {
    let gate = gate_up.narrow(D::Minus1, 0, intermediate)?;
    let up = gate_up.narrow(D::Minus1, intermediate, intermediate)?;
    Ok((candle_nn::ops::silu(&gate)? * up)?)
}

/// A stacked (E, N, K) int8 tensor as E tensors (N, K) on the CPU: whole blocks, so a plain split of bytes.
fn split_experts(stacked: &QTensor) -> Result<Vec<Arc<QTensor>>> {
    let (experts, n, k) = stacked.shape().dims3()?;
    let data = stacked.data()?;
    let bytes = n * k / INT8.block_size() * INT8.type_size();
    (0..experts)
        .map(|e| {
            let part = Cow::Borrowed(&data[e * bytes..(e + 1) * bytes]);
            let storage = QStorage::from_data(part, &Device::Cpu, INT8)?;
            Ok(Arc::new(QTensor::new(storage, (n, k))?))
        })
        .collect()
}
