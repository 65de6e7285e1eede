//! A decoder layer's output in a decode step: rows, or a MoE layer's output not yet added to its residual. The
//! next layer's q/k/v projection adds the latter itself for one row (norm.cuh's MoeSum, the arithmetic of
//! moe_combine), which saves moe_combine its launch.

use candle_core::Tensor;

use super::launch::Kernels;
use crate::error::Result;

/// A MoE layer's output before the combine: the routed experts' `y` (B·top_k, H) and the shared experts'
/// `shared` (B, H), both f32, and the residual (B, H) they are added to.
pub struct MoeOut {
    pub y: Tensor,
    pub shared: Option<Tensor>,
    pub residual: Tensor,
    pub top_k: usize,
}

/// The hidden rows between two decoder layers.
pub enum Hidden {
    Rows(Tensor),
    Moe(MoeOut),
}

impl Hidden {
    /// The rows' count and width.
    pub fn dims(&self) -> Result<(usize, usize)> {
        Ok(self.rows_before().dims2()?)
    }

    /// The rows before a pending MoE output is added: the rows themselves, or the MoE layer's residual.
    pub fn rows_before(&self) -> &Tensor {
        match self {
            Hidden::Rows(x) => x,
            Hidden::Moe(moe) => &moe.residual,
        }
    }

    /// The pending MoE output, if any.
    pub fn moe(&self) -> Option<&MoeOut> {
        match self {
            Hidden::Rows(_) => None,
            Hidden::Moe(moe) => Some(moe),
        }
    }
}

impl Kernels {
    /// The rows of `hidden`, a pending MoE output added to its residual by moe_combine.
    pub fn hidden_rows(&self, hidden: Hidden) -> Result<Tensor> {
        match hidden {
            Hidden::Rows(x) => Ok(x),
            Hidden::Moe(moe) => {
                self.moe_combine(&moe.y, moe.shared.as_ref(), Some(&moe.residual), moe.top_k)
            }
        }
    }
}
