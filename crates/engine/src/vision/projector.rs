//! The linear projector from encoder width to LM width, applied token-wise to the query outputs (spec §1.4).

use candle_core::{Module, Tensor};
use candle_nn::Linear;

use crate::error::Result;
use crate::layers::linear;
use crate::weights::Weights;

#[derive(Debug, Clone)]
pub struct Projector {
    linear: Linear,
}

impl Projector {
    pub fn load(w: &Weights, in_dim: usize, out_dim: usize) -> Result<Self> {
        Ok(Self {
            linear: linear(w, "multi_modal_projector", in_dim, out_dim, true)?,
        })
    }

    /// (…, in_dim) → (…, out_dim).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.linear.forward(x)?)
    }
}
