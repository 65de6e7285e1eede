//! `nn.Linear` for the vision encoders, with what follows it (bias, GELU, residual add, SAM's window merge)
//! done in one pass on the GPU: candle's broadcast bias add alone cost SAM ten times its matmuls.

use candle_core::Tensor;

use super::windows::window_merge;
use crate::error::Result;
use crate::weights::Weights;

/// What a linear layer's output goes through after the bias.
#[derive(Clone, Copy)]
pub enum After<'a> {
    Nothing,
    /// The exact (erf) GELU, `nn.GELU()`'s default.
    Gelu,
    /// `residual + y`.
    Residual(&'a Tensor),
    /// y's rows are `size`×`size` windows of the residual's (B, h, w, C) grid: merged back into it, padding
    /// dropped, and added to it.
    WindowedResidual {
        residual: &'a Tensor,
        size: usize,
    },
}

/// A linear layer `x·Wᵀ + b` over the last dim.
#[derive(Debug, Clone)]
pub struct Dense {
    /// (out, in).
    weight: Tensor,
    bias: Option<Tensor>,
}

impl Dense {
    /// `{prefix}.weight` (out, in) and, with `bias`, `{prefix}.bias`.
    pub fn load(
        w: &Weights,
        prefix: &str,
        in_dim: usize,
        out_dim: usize,
        bias: bool,
    ) -> Result<Self> {
        Self::stacked(w, &[(prefix, out_dim)], in_dim, bias)
    }

    /// Several linear layers over the same input stacked into one (Σ out_i, in), so they run as one matmul;
    /// `parts` lists each one's prefix and output size, in row order.
    pub fn stacked(
        w: &Weights,
        parts: &[(&str, usize)],
        in_dim: usize,
        bias: bool,
    ) -> Result<Self> {
        let weights = parts
            .iter()
            .map(|(prefix, out)| w.get(&format!("{prefix}.weight"), &[*out, in_dim]))
            .collect::<Result<Vec<_>>>()?;
        let bias = if bias {
            let biases = parts
                .iter()
                .map(|(prefix, out)| w.get(&format!("{prefix}.bias"), &[*out]))
                .collect::<Result<Vec<_>>>()?;
            Some(Tensor::cat(&biases, 0)?)
        } else {
            None
        };
        Ok(Self {
            weight: Tensor::cat(&weights, 0)?,
            bias,
        })
    }

    /// From an (out, in) weight and an optional (out) bias.
    pub fn new(weight: Tensor, bias: Option<Tensor>) -> Self {
        Self { weight, bias }
    }

    /// (…, in) → (…, out) through `after`; with a residual, the residual's shape.
    pub fn forward(&self, x: &Tensor, after: After<'_>) -> Result<Tensor> {
        let (out_dim, in_dim) = self.weight.dims2()?;
        let rows = x.elem_count() / in_dim;
        let y = x.reshape((rows, in_dim))?.matmul(&self.weight.t()?)?;
        let mut dims = x.dims().to_vec();
        if let Some(last) = dims.last_mut() {
            *last = out_dim;
        }
        if let Some(out) = self.fused_epilogue(&y, after)? {
            let shape = match after {
                After::Residual(r) | After::WindowedResidual { residual: r, .. } => {
                    r.dims().to_vec()
                }
                _ => dims,
            };
            return Ok(out.reshape(shape)?);
        }
        let y = match &self.bias {
            Some(b) => y.broadcast_add(b)?,
            None => y,
        };
        Ok(match after {
            After::Nothing => y.reshape(dims)?,
            After::Gelu => y.gelu_erf()?.reshape(dims)?,
            After::Residual(r) => (r + y.reshape(r.shape())?)?,
            After::WindowedResidual { residual, size } => {
                let windows = y.reshape(((), size, size, out_dim))?;
                (residual + window_merge(&windows, residual.dims4()?)?)?
            }
        })
    }

    #[cfg(feature = "cuda")]
    fn fused_epilogue(&self, y: &Tensor, after: After<'_>) -> Result<Option<Tensor>> {
        use crate::kernels::{linear_epilogue, Epilogue, WindowGrid};
        let then = match after {
            After::Nothing => Epilogue::default(),
            After::Gelu => Epilogue {
                gelu: true,
                ..Epilogue::default()
            },
            After::Residual(residual) => Epilogue {
                residual: Some(residual),
                ..Epilogue::default()
            },
            After::WindowedResidual { residual, size } => {
                let (_, h, w, _) = residual.dims4()?;
                Epilogue {
                    residual: Some(residual),
                    windows: Some(WindowGrid { h, w, size }),
                    ..Epilogue::default()
                }
            }
        };
        if self.bias.is_none() && matches!(after, After::Nothing) {
            return Ok(Some(y.clone()));
        }
        linear_epilogue(
            y,
            &Epilogue {
                bias: self.bias.as_ref(),
                ..then
            },
        )
    }

    #[cfg(not(feature = "cuda"))]
    fn fused_epilogue(&self, _y: &Tensor, _after: After<'_>) -> Result<Option<Tensor>> {
        Ok(None)
    }
}
