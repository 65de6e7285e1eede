//! The linear projector from encoder width to LM width, applied token-wise to the query outputs (spec §1.4).

use candle_core::Tensor;

use super::dense::{After, Dense};
use crate::error::Result;
use crate::weights::Weights;

#[derive(Debug, Clone)]
pub struct Projector {
    linear: Dense,
}

impl Projector {
    pub fn load(w: &Weights, in_dim: usize, out_dim: usize) -> Result<Self> {
        Ok(Self {
            linear: Dense::load(w, "multi_modal_projector", in_dim, out_dim, true)?,
        })
    }

    /// (…, in_dim) → (…, out_dim).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.linear.forward(x, After::Nothing)
    }
}
