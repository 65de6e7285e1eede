//! Building blocks shared by the vision encoder and the language model.

pub mod mlp;
pub mod norm;
pub mod proj;
pub mod rope;

use candle_core::Tensor;
use candle_nn::Linear;

use crate::error::Result;
use crate::weights::Weights;

/// A `nn.Linear(in_dim, out_dim)` stored as `{prefix}.weight` (out, in) and optionally `{prefix}.bias`.
pub fn linear(
    w: &Weights,
    prefix: &str,
    in_dim: usize,
    out_dim: usize,
    bias: bool,
) -> Result<Linear> {
    let weight = w.get(&format!("{prefix}.weight"), &[out_dim, in_dim])?;
    let bias = if bias {
        Some(w.get(&format!("{prefix}.bias"), &[out_dim])?)
    } else {
        None
    };
    Ok(Linear::new(weight, bias))
}

/// Several bias-free `nn.Linear(in_dim, out_i)` stacked into one projection (Σ out_i, in_dim), so that
/// they run as one matmul; `parts` lists each one's prefix and output size, in row order.
pub fn stacked_linear(w: &Weights, parts: &[(&str, usize)], in_dim: usize) -> Result<Linear> {
    let weights = parts
        .iter()
        .map(|(prefix, out_dim)| w.get(&format!("{prefix}.weight"), &[*out_dim, in_dim]))
        .collect::<Result<Vec<_>>>()?;
    Ok(Linear::new(Tensor::cat(&weights, 0)?, None))
}

/// `softmax` over the last dim computed in f32 and cast back, as the reference does for every attention.
pub fn softmax_f32(x: &Tensor) -> Result<Tensor> {
    let dtype = x.dtype();
    Ok(candle_nn::ops::softmax_last_dim(&x.to_dtype(candle_core::DType::F32)?)?.to_dtype(dtype)?)
}

/// Repeat each key/value head `n_rep` times along dim 1 (grouped-query attention).
pub fn repeat_kv(x: Tensor, n_rep: usize) -> Result<Tensor> {
    if n_rep == 1 {
        return Ok(x);
    }
    let (b, kv_heads, t, d) = x.dims4()?;
    Ok(x.unsqueeze(2)?
        .expand((b, kv_heads, n_rep, t, d))?
        .reshape((b, kv_heads * n_rep, t, d))?)
}
